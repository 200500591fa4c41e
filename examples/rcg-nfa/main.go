// Command rcg-nfa runs the nonlinear factor analysis comparison of paper 004 Fig. 11 on the synthetic substitute
// NFA-SYN (notes §6.8, §6.10): RCG, CG and RG (-methods: also GD, Old) over a grid of data sizes, printing one JSON
// line per (size, method) with the median time-to-target (target: RCG's median final F + ε) and final F, and an SVG
// of median time-to-target against size. Non-RCG runs are capped at -cap × RCG's median run time. The moments are
// Gauss–Hermite, the hybrid of Honkela & Valpola (2005) that the paper cites for NFA; -gh=false takes Taylor's.
// A line with "pair": "CG-RG" compares CG and RG at the worse of their own targets (§6.8 finds CG faster).
// With -seed0 and -target, the seeds of one size can run in several processes timed to one target fixed in advance
// and their per-run lines (-runs) pooled with -pool (rcg-nfa -pool part1.jsonl part2.jsonl), which prints the lines
// of one sweep over all their runs.
// With -batched each method's initialisations run as one batch on a backend (nfa.Batch, e.g. -backend cuda): the
// times are then the batch's wall clock at each run's iterations, and the others are capped at -cap × RCG's median
// iterations.
package main

import (
	"flag"
	"log"
	"os"
	"time"

	"github.com/geovb/geovb/examples/internal/nfacompare"
)

func main() {
	seeds := flag.Int("seeds", 10, "initialisations per size")
	methods := flag.String("methods", "RCG,CG,RG", "methods, RCG first (also GD, Old)")
	grid := flag.String("n", "300,400,500,600,700,800,900,1000", "data sizes")
	rcgCap := flag.Duration("rcgcap", 10*time.Minute, "CPU-time cap of RCG runs")
	rcgIter := flag.Int("rcgiter", 0,
		"iteration cap of RCG runs (0: none); unlike -rcgcap, it gives a target the same on every machine")
	capF := flag.Float64("cap", 10, "cap of non-RCG runs, × RCG's median run time")
	gh := flag.Bool("gh", true, "Gauss–Hermite moments (false: Taylor, under which RCG stalls from T ≈ 300; docs/rcg.md)")
	svg := flag.String("svg", "rcg-nfa.svg", "SVG output")
	d := flag.Int("d", 5, "state dimension")
	h := flag.Int("hidden", 20, "hidden units of each MLP")
	eps := flag.Float64("eps", 0, "convergence threshold on |ΔF| over 5 iterations (0: 1e-5·T/80)")
	follow := flag.Bool("follow", false,
		"rerun RCG's runs that missed the target within -rcgcap, with the others' budget (-cap), for a third p-value")
	ard := flag.Bool("ard", false, "ARD priors on the weight-matrix columns (notes §4.2.2)")
	hier := flag.Bool("hier", false, "hierarchical priors of the biases and log-stds (notes §4.2.2)")
	delay := flag.Int("hyperdelay", 0, "iterations before the -ard and -hier priors adapt (0 or negative: none)")
	runs := flag.Bool("runs", false,
		"also print a JSON line per run (seed, final F, iterations, stop reason, time, time-to-target)")
	batched := flag.Bool("batched", false, "run each method's initialisations as one batch on -backend (RCG, RG, CG, "+
		"GD; Gauss–Hermite, no -follow): times are the batch's wall clock, -cap counts RCG's iterations")
	bename := flag.String("backend", "", "backend for -batched (default $GEOVB_BACKEND, else auto)")
	seed0 := flag.Int("seed0", 0, "first initialisation's seed: seeds -seed0 … -seed0+seeds−1")
	pool := nfacompare.PoolFlag(flag.CommandLine)
	tick := nfacompare.ProgressFlag(flag.CommandLine)
	var target *float64
	nfacompare.TargetFlag(flag.CommandLine, &target)
	flag.Parse()
	if err := nfacompare.Run(*pool, flag.Args(), nfacompare.Options{Dynamic: false, Grid: *grid, Methods: *methods, Seeds: *seeds,
		FirstSeed: *seed0, Target: target,
		RCGCap: *rcgCap, RCGMaxIter: *rcgIter, Cap: *capF, GH: *gh, D: *d, H: *h, Eps: *eps, Follow: *follow,
		ARD: *ard, Hierarchical: *hier, HyperDelay: *delay, Runs: *runs, SVG: *svg, Batched: *batched,
		Backend: *bename, Log: os.Stderr, TickEvery: *tick}); err != nil {
		log.Fatal(err)
	}
}
