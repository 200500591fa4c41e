#!/usr/bin/env bash
# Builds the test binaries and vbbench as static executables (CGO_ENABLED=0) into the folder given (default .gpu/),
# for a GPU machine that has the NVIDIA driver and CUDA libraries but no Go toolchain. Run them there with
#   GEOVB_REQUIRE_GPU=1 .gpu/<package>.test -test.v
# Symbols and DWARF are left out (-s -w): the binaries travel; stack traces keep their function names.
# Packages after the folder (./algos/rcg ...) build only theirs; without, every package with tests.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.gpu}
shift || true
mkdir -p "$out"
pkgs=${*:-./...}
# shellcheck disable=SC2086 # pkgs is a list of package patterns
for pkg in $(go list -f '{{if .TestGoFiles}}{{.ImportPath}}{{end}}' $pkgs); do
	name=$(echo "${pkg#github.com/geovb/geovb/}" | tr / _)
	CGO_ENABLED=0 go test -c -ldflags="-s -w" -o "$out/$name.test" "$pkg"
done
if [ -d cmd/vbbench ] && ls cmd/vbbench/*.go >/dev/null 2>&1; then
	CGO_ENABLED=0 go build -ldflags="-s -w" -o "$out/vbbench" ./cmd/vbbench
fi
ls "$out"
