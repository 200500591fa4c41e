// Command rcg-nfa runs the nonlinear factor analysis comparison of paper 004 Fig. 11 on the synthetic substitute
// NFA-SYN (the synthetic substitute for Fig. 11's speech data): RCG, CG and RG (-methods: also GD, Old) over a grid of data sizes, printing one JSON
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

	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/examples/internal/nfacompare"
)

func main() {
	cpu.UseForGonum() // the models' gonum calls and the backend's LAPACK on the CPU backend's kernels
	cli := nfacompare.NewCLI(flag.CommandLine, nfacompare.Defaults{Dynamic: false, Seeds: 10, Methods: "RCG,CG,RG",
		Grid: "300,400,500,600,700,800,900,1000", SVG: "rcg-nfa.svg", TaylorNote: " from T ≈ 300",
		DelayNote: "0 or negative: none"})
	flag.Parse()
	if err := cli.Run(flag.Args()); err != nil {
		log.Fatal(err)
	}
}
