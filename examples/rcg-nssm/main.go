// Command rcg-nssm runs the nonlinear state-space model comparison of paper 004 Fig. 9 on the synthetic substitute
// NSSM-SYN (Lorenz states through a random MLP): RCG, CG, RG and the heuristic Old of Valpola &
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
// one initialisation; -progress prints each run's F and iteration every minute of its time on stderr, and with
// -checkpoint DIR the same command started again resumes each run, or with -batched each method's batch, from its
// last 100 iterations). With -seed0 and -target, the seeds of one size can run in several processes (one core each)
// timed to one target fixed in advance, and their per-run lines (-runs) pooled with -pool (rcg-nssm -pool part1.jsonl part2.jsonl), which
// prints the lines of one sweep over all their runs (without ranksum_p_rcg_followed_faster where the processes'
// budgets differ: gehan_p_rcg_followed_faster is the test there); RCG's runs capped at -rcgiter end at the same F in
// every process. With -batched each method's initialisations run as one batch on a backend (nfa.Batch, e.g. -backend
// cuda): the times are then the batch's wall clock at each run's iterations, and the others are capped at -cap ×
// RCG's median iterations.
package main

import (
	"flag"
	"log"

	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/examples/internal/nfacompare"
)

func main() {
	cpu.UseForGonum() // the models' gonum calls and the backend's LAPACK on the CPU backend's kernels
	cli := nfacompare.NewCLI(flag.CommandLine, nfacompare.Defaults{Dynamic: true, Seeds: 8, Methods: "RCG,CG,RG,Old",
		Grid: "200,300,400,500", SVG: "rcg-nssm.svg", DelayNote: "0: 100, negative: none"})
	flag.Parse()
	if err := cli.Run(flag.Args()); err != nil {
		log.Fatal(err)
	}
}
