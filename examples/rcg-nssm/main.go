// Command rcg-nssm runs the nonlinear state-space model comparison of paper 004 Fig. 9 on the synthetic substitute
// NSSM-SYN (Lorenz states through a random MLP, notes §6.6, §6.10): RCG, CG, RG and the heuristic Old of Valpola &
// Karhunen 2002 (-methods) over a grid of data sizes, printing one JSON line per (size, method) with the median
// time-to-target (target: RCG's median final F + ε) and final F, and an SVG of median time-to-target against size.
// Non-RCG runs are capped at -cap × RCG's median run time.
package main

import (
	"flag"
	"log"
	"time"

	"github.com/geovb/geovb/examples/internal/nfacompare"
)

func main() {
	seeds := flag.Int("seeds", 8, "initialisations per size")
	methods := flag.String("methods", "RCG,CG,RG,Old", "methods, RCG first (also GD, Old)")
	grid := flag.String("n", "200,300,400,500", "data sizes")
	rcgCap := flag.Duration("rcgcap", 10*time.Minute, "CPU-time cap of RCG runs")
	capF := flag.Float64("cap", 10, "cap of non-RCG runs, × RCG's median run time")
	gh := flag.Bool("gh", true, "Gauss–Hermite moments (false: Taylor, under which RCG stalls; docs/rcg.md)")
	svg := flag.String("svg", "rcg-nssm.svg", "SVG output")
	flag.Parse()
	if err := nfacompare.Main(true, *grid, *methods, *seeds, *rcgCap, *capF, *gh, *svg); err != nil {
		log.Fatal(err)
	}
}
