#!/usr/bin/env bash
# Runs geovb's tests on any machine with Go (modules are fetched on first use). With -long it also runs the paper
# reproductions and other long tests (test names containing Repro), as CI does.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -count=1 ./...
if [ "${1:-}" = "-long" ]; then
	go test -count=1 -run 'Repro' -timeout 60m ./...
fi
