#!/usr/bin/env bash
# Runs the shared hot-op benchmarks of the CPU backend (backend/backendtest, through backend/cpu) in the pure-Go
# build and, when OpenBLAS and LAPACKE are installed, the netlib build; prints benchstat-style lines into the folder
# given (default bench-out/). Pass -short to skip the d = 1e6 sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench-out}
shift || true
mkdir -p "$out"
go test -c -o "$out/cpu-go.test" ./backend/cpu
builds=(go)
if dpkg -s libopenblas-dev liblapacke-dev >/dev/null 2>&1; then
	go test -c -tags netlib -o "$out/cpu-openblas.test" ./backend/cpu
	builds+=(openblas)
fi
for b in "${builds[@]}"; do
	for family in floors stiefel spd kron lowrank sphere; do
		"$out/cpu-$b.test" -test.run '^$' -test.bench "Conformance/$family/" -test.benchtime 3x "$@" 2>&1 |
			grep -E '^(Benchmark|goos|goarch|cpu)' >>"$out/$b.txt" || true
	done
	echo "wrote $out/$b.txt"
done
