// Command rcg-fig6 reproduces the overlap sweep of paper 004 Fig. 6: N = 1000, K = 8, ε = 1e-12·N;
// RCG, RG and VB-EM (-methods) over a grid of R. It prints one JSON line per (R, method) with the median run time and
// time-to-target, and writes median run time against R as an SVG.
//
// With -batched, each method runs all seeds of an R value as one batched computation on a backend (mog.Batch;
// rcgexp.RunMoGBatch: MinimizeBatch for RCG and RG, mog.VBEMBatch for VB-EM; -backend, default $GEOVB_BACKEND or
// auto): one JSON line per (R, method) with the batch's wall and process CPU time and the per-run medians of final
// F and iterations (a batch has no per-run times), and the batch wall time against R as the SVG. With -batched
// -whole, the whole grid (every seed of every R) is one batch per method: the per-R lines then carry the runs'
// medians only, and a line per method the batch's times.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"os"
	"time"

	"github.com/geovb/geovb/backend/cpu"
	rcgplot "github.com/geovb/geovb/examples/internal/rcgplot"
	"github.com/geovb/geovb/examples/internal/svgplot"
)

func main() {
	cpu.UseForGonum() // the models' gonum calls and the backend's LAPACK on the CPU backend's kernels
	seeds := flag.Int("seeds", 30, "initialisations per R")
	n := flag.Int("n", 1000, "data points")
	k := flag.Int("k", 8, "components")
	grid := flag.String("r", "0.1,0.125,0.15,0.175,0.2,0.225,0.25,0.275,0.3,0.325,0.35,0.375,0.4", "R grid")
	eps := flag.Float64("eps", 1e-12, "ε/N")
	limit := flag.Duration("limit", 60*time.Second, "CPU-time cap per run")
	svg := flag.String("svg", "rcg-fig6.svg", "SVG output")
	batched := flag.Bool("batched", false, "run the seeds of each R as one batched computation per method on -backend")
	bename := flag.String("backend", "", "backend for -batched (default $GEOVB_BACKEND, else auto)")
	whole := flag.Bool("whole", false, "with -batched: every seed of every R as one batch per method")
	mlist := flag.String("methods", "RCG,RG,VBEM", "methods (of RCG, RG, CG, GD, VBEM)")
	flag.Parse()
	if *whole && !*batched {
		log.Fatal("-whole needs -batched")
	}
	methods, err := rcgplot.ParseMethods(*mlist)
	if err != nil {
		log.Fatal(err)
	}
	rs, err := rcgplot.ParseSpacings(*grid)
	if err != nil {
		log.Fatal(err)
	}
	for _, err := range []error{rcgplot.CheckSeeds(*seeds), rcgplot.CheckNonNegative("eps", *eps),
		rcgplot.CheckLimit(*limit)} {
		if err != nil {
			log.Fatal(err)
		}
	}
	if *batched {
		if err := runBatched(*bename, rs, methods, *n, *k, *seeds, *eps, *svg, *whole); err != nil {
			log.Fatal(err)
		}
		return
	}
	series := map[string]*svgplot.Curve{}
	for _, m := range methods {
		series[m] = &svgplot.Curve{Name: m, Color: rcgplot.Colors[m]}
	}
	enc := json.NewEncoder(os.Stdout)
	for _, R := range rs {
		sums, err := rcgplot.Sweep(R, *n, *k, *seeds, *eps, methods, *limit)
		if err != nil {
			log.Fatal(err)
		}
		for _, s := range sums {
			if err := enc.Encode(s); err != nil {
				log.Fatal(err)
			}
			series[s.Method].X = append(series[s.Method].X, R)
			series[s.Method].Y = append(series[s.Method].Y, s.MedianTime)
		}
	}
	p := svgplot.Chart{Title: "MoG: median time to convergence vs R", XLabel: "R", YLabel: "CPU time (s)", LogY: true}
	for _, m := range methods {
		p.Curves = append(p.Curves, *series[m])
	}
	if err := p.WriteFile(*svg); err != nil {
		log.Fatal(err)
	}
}
