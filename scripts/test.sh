#!/usr/bin/env bash
# Runs geovb's tests on any machine with Go (modules are fetched on first use). With -long it also runs the paper
# reproductions and other long tests (test names containing Repro), as CI does.
#
# The backends' own tests hand the CPU backend plain host memory on purpose. Every other package's tests run with
# the CPU backend strict (GEOVB_CPU_STRICT=1, see backend/cpu): operands must be backend tensors and the backend's
# memory is not readable element by element, as on a GPU, so a method or model that forgets an upload or a
# download fails here and not first on a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
backends='/backend/(cpu|cuda)$'
go test -count=1 $(go list ./... | grep -E "$backends")
GEOVB_CPU_STRICT=1 go test -count=1 $(go list ./... | grep -vE "$backends")
if [ "${1:-}" = "-long" ]; then
	GEOVB_CPU_STRICT=1 go test -count=1 -run 'Repro' -timeout 60m $(go list ./... | grep -vE "$backends")
fi
