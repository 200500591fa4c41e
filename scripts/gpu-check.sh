#!/usr/bin/env bash
# GPU runs from a machine without Go, in two steps.
#
# 1. Here (any machine with Go; no CUDA needed):
#      scripts/gpu-check.sh build [DIR]     # default DIR=.gpu (git-ignored)
#    builds every test binary and vbbench with CGO_ENABLED=0 into DIR, packs them into DIR/bins.tar.xz where xz is
#    found, and copies this script beside them.
# 2. On the GPU machine (NVIDIA driver and the CUDA 12/13 libraries; no Go):
#      [STEPS=REGEX] DIR/gpu-check.sh run [OUTDIR]   # default OUTDIR=DIR/results
#    unpacks the binaries and runs the CUDA conformance suite with GEOVB_REQUIRE_GPU=1 (a missing GPU fails instead
#    of skipping), the binding-layer tests, the CUDA benchmarks, every method and model test on cuda, and vbbench on
#    cpu and cuda side by side, and writes logs, JSON and a summary into OUTDIR. Every step is time-bounded (the
#    timeouts sum to 58 minutes): STEPS picks the steps whose names match, to fit a lease.
# Paper 004's batched runs alone, in about 72 MB of binaries packed into a 19 MB bins.tar.xz (unpacked by the run,
# with tar or python3) and at most 16 minutes (the steps' timeouts; about 6 minutes on an H200):
#      scripts/gpu-check.sh build-rcg [DIR]  # backend/cuda, models/mog, models/nfa, algos/rcg,
#                                            # internal/repro/rcgexp, vbbench, rcg-nssm, rcg-fig6, rcg-fig8
#      DIR/gpu-check.sh rcg [OUTDIR]         # the CUDA conformance suite, the batch tests of the three packages on
#                                            # cuda, BenchmarkMoGBatch30 (RCG, VB-EM) and BenchmarkNFABatch8 on cuda,
#                                            # vbbench's algo.rcg, algo.rcg.batch (N = 1e3 … 1e6, and 30 runs),
#                                            # algo.nssm and algo.nssm.batch on cpu and cuda, 200
#                                            # iterations of Fig. 10's 5 runs as one batch, the whole Fig. 6 grid and
#                                            # Fig. 8's N = 100 … 10000 as batches; each step time-bounded
# The check of one short device lease, in at most 9 minutes (QUICK_SECONDS, default 525 s of steps) from about
# 6 MB of packed binaries (2026-12-07):
#      scripts/gpu-check.sh build-quick [DIR]  # backend/cuda, backend/cuda/internal/cu, algos/lrvga, algos/cholng,
#                                              # vbbench (default DIR=.gpu/quick)
#      DIR/gpu-check.sh quick [OUTDIR]         # most important first: the conformance suite and the binding tests
#                                              # with GEOVB_REQUIRE_GPU=1; vbbench on cuda at the design's sizes
#                                              # (EM step, Woodbury solve, capacitance and the QR retraction of one
#                                              # 1e6 × 100 at d = 1e6, p = 100; K = 100 sampling; QR of 1e5 × (64×8);
#                                              # sphere flow 1e7 × 3 and 1e4 × 5000; SPD and Kronecker at medium),
#                                              # each with its floors measured in the same run; then the tests of
#                                              # algos/lrvga and algos/cholng on cuda with what time is left, half
#                                              # each. Every step's bound is cut to the time left, so the call ends
#                                              # in time; a step killed at its bound dumps its goroutines (SIGQUIT).
#                                              # OUTDIR/summary.txt is the part to paste: device, steps, the
#                                              # vbbench rows with their % of floor, the test results.
set -euo pipefail

# step runs one check: name, then the command; output to $out/name.log, a line in the summary. With STEPS set (an
# extended regular expression), only the steps whose names match it run, so that a run fits a short device lease.
step() {
	local name=$1 r
	shift
	if [ -n "${STEPS:-}" ] && ! [[ $name =~ $STEPS ]]; then
		return 0
	fi
	if "$@" >"$out/$name.log" 2>&1; then r=ok; else r="FAILED ($?)"; status=1; fi
	printf '%-28s %s\n' "$name" "$r" | tee -a "$out/summary.txt"
}

# qstep is step under the quick run's deadline: name, the step's own bound in seconds, then the command, run under
# timeout with the smaller of that bound and the time left (SIGQUIT at the bound, so that a Go binary prints where
# it was; SIGKILL 5 s later). A step with under 10 s left is reported as skipped.
qstep() {
	local name=$1 want=$2 left
	shift 2
	left=$((deadline - SECONDS - 5))
	if [ "$left" -lt "$want" ]; then want=$left; fi
	if [ "$want" -lt 10 ]; then
		printf '%-28s %s\n' "$name" "skipped (no time left)" | tee -a "$out/summary.txt"
		return 0
	fi
	step "$name" timeout -k 5 -s QUIT "$want" "$@"
}

# quick_summary appends the lines a reader pastes: the floors and rows of each vbbench table, the end of each test.
quick_summary() {
	{
		echo
		echo "device: $(tail -n +2 "$out/device.csv" 2>/dev/null | head -n 1)"
		for f in "$out"/vb-*.log; do
			[ -e "$f" ] || continue
			echo "== $(basename "$f" .log)"
			grep -E '^ *floors:|^(qr|spd|kron|lowrank|sphere)\.' "$f" || tail -n 3 "$f"
		done
		for f in "$out"/cuda-*.log "$out"/cu-*.log; do
			[ -e "$f" ] || continue
			echo "== $(basename "$f" .log)"
			grep -E '^(--- FAIL|FAIL|ok|PASS)|^panic|SIGQUIT|^    --- FAIL' "$f" | tail -n 15 || true
		done
	} >>"$out/summary.txt"
}

# start makes the output folder, records the device and empties the summary.
start() {
	mkdir -p "$out"
	export GEOVB_REQUIRE_GPU=1 GEOVB_REQUIRE_NVRTC=1
	nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv >"$out/device.csv" 2>&1 || true
	status=0
	: >"$out/summary.txt"
}

# pack replaces the binaries in folder $1 by bins.tar.xz where xz is found (a quarter to a fifth of the bytes: the
# device tool carries 64 MiB at most).
pack() {
	command -v xz >/dev/null || return 0
	(
		cd "$1"
		shopt -s nullglob
		files=(./*.test ./rcg-*)
		if [ -e ./vbbench ]; then files+=(./vbbench); fi
		if [ ${#files[@]} -eq 0 ]; then exit 0; fi
		rm -f bins.tar.xz
		tar -cf - "${files[@]}" | xz -6 -T0 >bins.tar.xz
		rm -f "${files[@]}"
	)
}

# unpack restores the binaries of bins.tar.xz beside this script, with tar or, where tar lacks xz, python3.
unpack() {
	if [ -e "$here/bins.tar.xz" ]; then
		tar -xJf "$here/bins.tar.xz" -C "$here" 2>/dev/null ||
			python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$here/bins.tar.xz" "$here"
	fi
}

cmd=${1:-}
case "$cmd" in
build)
	cd "$(dirname "$0")/.."
	out=${2:-.gpu}
	scripts/build-gpu-tests.sh "$out" >/dev/null
	pack "$out"
	cp scripts/gpu-check.sh scripts/torch-qr-baseline.py "$out/"
	echo "built into $out: $(du -sh "$out" | cut -f1); on the GPU machine run: $out/gpu-check.sh run"
	;;
build-rcg)
	cd "$(dirname "$0")/.."
	out=${2:-.gpu-rcg}
	scripts/build-gpu-tests.sh "$out" ./backend/cuda ./backend/cuda/internal/cu ./models/mog ./models/nfa ./algos/rcg \
		./internal/repro/rcgexp >/dev/null
	for ex in rcg-nssm rcg-fig6 rcg-fig8; do
		CGO_ENABLED=0 go build -ldflags="-s -w" -o "$out/$ex" "./examples/$ex"
	done
	pack "$out"
	cp scripts/gpu-check.sh "$out/"
	echo "built into $out: $(du -sh "$out" | cut -f1); on the GPU machine run: $out/gpu-check.sh rcg"
	;;
build-quick)
	cd "$(dirname "$0")/.."
	out=${2:-.gpu/quick}
	scripts/build-gpu-tests.sh "$out" ./backend/cuda ./backend/cuda/internal/cu ./algos/lrvga ./algos/cholng >/dev/null
	pack "$out"
	cp scripts/gpu-check.sh "$out/"
	echo "built into $out: $(du -sh "$out" | cut -f1); on the GPU machine run: $out/gpu-check.sh quick"
	;;
quick)
	here=$(cd "$(dirname "$0")" && pwd)
	out=${2:-$here/results}
	deadline=$((SECONDS + ${QUICK_SECONDS:-525}))
	unpack
	start
	# Correctness on the device: every test of backend/cuda but the emulated ones (which need no GPU), then the
	# binding layer.
	qstep cuda-conformance 150 "$here/backend_cuda.test" -test.v -test.count=1 -test.skip '^TestEmu'
	qstep cu-binding 40 "$here/backend_cuda_internal_cu.test" -test.v -test.count=1
	# The design's target sizes on cuda, each run measuring its floors (copy bandwidth, GEMM rate) first.
	qstep vb-lowrank-qr-1e6x100 60 "$here/vbbench" -backend cuda -sizes large \
		-ops lowrank.em_step,lowrank.solve,lowrank.capacitance,qr.tall -json "$out/vb-lowrank.json"
	qstep vb-sample-k100 40 "$here/vbbench" -backend cuda -ops lowrank.sample -d 1000000 -p 100 -k 100 \
		-json "$out/vb-sample.json"
	qstep vb-qr-1e5x64x8 40 "$here/vbbench" -backend cuda -ops qr.batch -batch 100000 -n 64 -p 8 \
		-json "$out/vb-qr.json"
	qstep vb-sphere-1e7x3 30 "$here/vbbench" -backend cuda -ops sphere.flow -batch 1 -m 10000000 -n 3 \
		-json "$out/vb-sphere1.json"
	qstep vb-sphere-1e4x5000 30 "$here/vbbench" -backend cuda -ops sphere.flow -batch 1 -m 10000 -n 5000 \
		-json "$out/vb-sphere2.json"
	qstep vb-spd-kron-medium 60 "$here/vbbench" -backend cuda -ops spd,kron -sizes medium -json "$out/vb-spd.json"
	# The two methods whose tests had not ended on a GPU: half the time left each.
	half=$(((deadline - SECONDS) / 2))
	qstep cuda-algos_lrvga "$half" env GEOVB_BACKEND=cuda "$here/algos_lrvga.test" -test.v -test.short -test.count=1
	qstep cuda-algos_cholng 600 env GEOVB_BACKEND=cuda "$here/algos_cholng.test" -test.v -test.short -test.count=1
	quick_summary
	cat "$out/summary.txt"
	exit $status
	;;
rcg)
	here=$(cd "$(dirname "$0")" && pwd)
	out=${2:-$here/results}
	unpack
	start
	step cuda-conformance timeout 100 "$here/backend_cuda.test" -test.v -test.count=1 \
		-test.run '^(TestConformance|TestKernelsCompile|TestVersions)$'
	# The hand-over to the device thread, waited for and queued, on the GPU machine's CPU.
	step cu-thread timeout 30 "$here/backend_cuda_internal_cu.test" -test.v -test.run Thread -test.bench Thread \
		-test.benchtime 100000x -test.count 3
	# The backend's floors: one small call (queued launches), copy bandwidth, GEMM rate.
	step cuda-floors timeout 60 "$here/backend_cuda.test" -test.run '^$' -test.bench 'Conformance/floors' \
		-test.benchtime 1000x
	for pkg in models_mog models_nfa algos_rcg internal_repro_rcgexp; do
		step "cuda-$pkg-batch" timeout 60 env GEOVB_BACKEND=cuda "$here/$pkg.test" -test.v -test.short \
			-test.count=1 -test.run Batch
	done
	step cuda-bench-batch timeout 180 env GEOVB_BACKEND=cuda "$here/internal_repro_rcgexp.test" -test.run '^$' \
		-test.bench 'MoGBatch30|NFABatch8' -test.benchtime 1x
	step vb-nssm-batch timeout 80 "$here/vbbench" -backend cpu,cuda -algos nssm,nssm.batch -sizes small,medium \
		-json "$out/vb-nssm.json"
	# Paper 004's mixture throughput: one host run and one run on the GPU (a batch of one) at N = 1e3 … 1e6, and 30
	# runs of N = 1000 as one batch.
	step vb-rcg timeout 150 "$here/vbbench" -backend cpu,cuda -algos rcg,rcg.batch -sizes quick,small,medium,large \
		-json "$out/vb-rcg.json"
	step vb-rcg-batch30 timeout 60 "$here/vbbench" -backend cpu,cuda -algos rcg.batch -batch 30 -n 1000 -k 8 \
		-json "$out/vb-rcg30.json"
	# Fig. 10's size as one batch of its 5 initialisations, 200 RCG iterations: the seconds per round that a run
	# to convergence (20901 to more than 116000 iterations in the host runs, docs/rcg.md) across sessions
	# (-checkpoint) would take.
	step fig10-batch-200 timeout 80 "$here/rcg-nssm" -batched -backend cuda -n 1000 -d 7 -hidden 30 -eps 1e-6 \
		-seeds 5 -methods RCG -rcgiter 200 -runs -svg "$out/fig10-batch.svg"
	# The mixture experiments as batches: Fig. 6's 13 R values × 30 runs as one batch per method, Fig. 8's grid.
	step fig6-whole timeout 60 "$here/rcg-fig6" -batched -whole -backend cuda -methods RCG,VBEM -svg "$out/fig6.svg"
	step fig8-batched timeout 60 "$here/rcg-fig8" -batched -backend cuda -svg "$out/fig8.svg"
	grep -h -E '^(---|ok|FAIL|Benchmark)|loop/batched|host-loop|r_values|loglog' "$out"/*.log | tail -n 60
	cat "$out/summary.txt"
	exit $status
	;;
run)
	here=$(cd "$(dirname "$0")" && pwd)
	out=${2:-$here/results}
	unpack
	start
	# Each step is time-bounded; the bounds sum to 58 minutes, more than a 15-minute device lease: pick
	# with STEPS (e.g. STEPS='conformance|cuda-algos' for the correctness checks, STEPS='^vb' for the figures).
	step cu-binding timeout 60 "$here/backend_cuda_internal_cu.test" -test.v -test.count=1 -test.bench Thread \
		-test.benchtime 100000x
	step cuda-conformance timeout 150 "$here/backend_cuda.test" -test.v -test.count=1
	step cuda-bench timeout 240 "$here/backend_cuda.test" -test.run '^$' -test.bench Conformance -test.benchtime 10x
	# Every method and model test on the GPU (internal/testbackend opens $GEOVB_BACKEND), short mode.
	for bin in "$here"/algos_*.test "$here"/models_*.test "$here"/manifold.test; do
		[ -e "$bin" ] || continue
		name=$(basename "$bin" .test)
		step "cuda-$name" timeout 120 env GEOVB_BACKEND=cuda "$bin" -test.short -test.count=1
	done
	if python3 -c 'import torch' 2>/dev/null; then
		step torch-qr timeout 60 python3 "$here/torch-qr-baseline.py" 100000 64 8
	fi
	step vbbench timeout 300 "$here/vbbench" -backend cpu,cuda -sizes small,medium -json "$out/vbbench.json"
	# The issue's GPU targets, at their exact sizes.
	step vb-lowrank-large timeout 120 "$here/vbbench" -backend cuda -ops lowrank -sizes large -json "$out/vb-lowrank.json"
	step vb-qr-64x8 timeout 60 "$here/vbbench" -backend cuda -ops qr.batch -batch 100000 -n 64 -p 8 -json "$out/vb-qr.json"
	step vb-sphere-1e7x3 timeout 60 "$here/vbbench" -backend cuda -ops sphere.flow -batch 1 -m 10000000 -n 3 \
		-json "$out/vb-sphere1.json"
	step vb-sphere-1e4x5000 timeout 60 "$here/vbbench" -backend cuda -ops sphere.flow -batch 1 -m 10000 -n 5000 \
		-json "$out/vb-sphere2.json"
	# Paper 004's batched runs: the NSSM's repetitions as one batch against the host model's iteration.
	step vb-nssm-batch timeout 80 "$here/vbbench" -backend cpu,cuda -algos nssm,nssm.batch -sizes small,medium \
		-json "$out/vb-nssm.json"
	step vb-nssm-batch30 timeout 80 "$here/vbbench" -backend cuda -algos nssm.batch -sizes large -json "$out/vb-nssm30.json"
	tail -n 5 "$out"/*.log | tail -n 60
	cat "$out/summary.txt"
	exit $status
	;;
*)
	sed -n '2,38p' "$0" >&2
	exit 2
	;;
esac
