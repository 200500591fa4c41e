// Command rcg-nssm runs the nonlinear state-space model comparison of paper 004 Fig. 9 on the synthetic substitute
// NSSM-SYN (Lorenz states through a random MLP, notes §6.6, §6.10): RCG, CG, RG and the heuristic Old of Valpola &
// Karhunen 2002 (-methods) over a grid of data sizes, printing one JSON line per (size, method) with the median
// time-to-target (target: RCG's median final F + ε) and final F, and an SVG of median time-to-target against size.
// Non-RCG runs are capped at -cap × RCG's median run time. The line of each method other than RCG also carries the
// §6.6 significance test of RCG's times-to-target against that method's: the exact one-sided rank-sum p-values
// ranksum_p_rcg_faster (missed runs at their budget) and ranksum_p_rcg_faster_worst (RCG's missed runs ranked last;
// see rankSums in examples/internal/nfacompare); with -follow, RCG's missed runs run again with the others' budget
// and ranksum_p_rcg_followed_faster tests those times, which leave only the others' misses at their budget;
// gehan_p_rcg_faster and gehan_p_rcg_followed_faster are Gehan's form of the test, which counts a pair of runs
// only where the data fix which reached the target first and so needs no common budget;
// ranksum_p_final_f is the two-sided test of the final F values (§6.6 found no significant difference). Lines
// with a "pair" field compare two comparators at the worse of their own targets: Old against CG and RG (§6.6 finds
// Old faster) and CG against RG. Fig. 10's larger model is
//
//	rcg-nssm -n 1000 -d 7 -hidden 30 -eps 1e-6 -seeds 5
//
// (about 0.08 s of CPU time per RCG iteration on one core of the 2-core test machine, 48 minutes to convergence for
// one initialisation; -progress prints each run's F and iteration every minute of its time on stderr). With -seed0
// and -target, the seeds of one size can run in several processes (one core each) timed to one target fixed in
// advance, and their per-run lines (-runs) pooled with -pool (rcg-nssm -pool part1.jsonl part2.jsonl), which
// prints the lines of one sweep over all their runs (without ranksum_p_rcg_followed_faster where the processes'
// budgets differ: gehan_p_rcg_followed_faster is the test there); RCG's runs capped at -rcgiter end at the same F in
// every process. With -batched each method's initialisations run as one batch on a backend (nfa.Batch, e.g. -backend
// cuda): the times are then the batch's wall clock at each run's iterations, and the others are capped at -cap ×
// RCG's median iterations.
package main

import (
	"flag"
	"log"
	"os"
	"time"

	"github.com/geovb/geovb/examples/internal/nfacompare"
)

func main() {
	seeds := flag.Int("seeds", 8, "initialisations per size")
	methods := flag.String("methods", "RCG,CG,RG,Old", "methods, RCG first (also GD, Old)")
	grid := flag.String("n", "200,300,400,500", "data sizes")
	rcgCap := flag.Duration("rcgcap", 10*time.Minute, "CPU-time cap of RCG runs")
	rcgIter := flag.Int("rcgiter", 0,
		"iteration cap of RCG runs (0: none); unlike -rcgcap, it gives a target the same on every machine")
	capF := flag.Float64("cap", 10, "cap of non-RCG runs, × RCG's median run time")
	gh := flag.Bool("gh", true, "Gauss–Hermite moments (false: Taylor, under which RCG stalls; docs/rcg.md)")
	svg := flag.String("svg", "rcg-nssm.svg", "SVG output")
	d := flag.Int("d", 5, "state dimension")
	h := flag.Int("hidden", 20, "hidden units of each MLP")
	eps := flag.Float64("eps", 0, "convergence threshold on |ΔF| over 5 iterations (0: 1e-5·T/80)")
	follow := flag.Bool("follow", false,
		"rerun RCG's runs that missed the target within -rcgcap, with the others' budget (-cap), for a third p-value")
	ard := flag.Bool("ard", false, "ARD priors on the weight-matrix columns (notes §4.2.2)")
	hier := flag.Bool("hier", false, "hierarchical priors of the biases and log-stds (notes §4.2.2)")
	delay := flag.Int("hyperdelay", 0, "iterations before the -ard and -hier priors adapt (0: 100, negative: none)")
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
	if err := nfacompare.Run(*pool, flag.Args(), nfacompare.Options{Dynamic: true, Grid: *grid, Methods: *methods, Seeds: *seeds,
		FirstSeed: *seed0, Target: target,
		RCGCap: *rcgCap, RCGMaxIter: *rcgIter, Cap: *capF, GH: *gh, D: *d, H: *h, Eps: *eps, Follow: *follow,
		ARD: *ard, Hierarchical: *hier, HyperDelay: *delay, Runs: *runs, SVG: *svg,
		Batched: *batched, Backend: *bename, Log: os.Stderr, TickEvery: *tick}); err != nil {
		log.Fatal(err)
	}
}
