// Command rcg-fig5 reproduces the method comparison of paper 004 Fig. 5 (§6.2) on the synthetic
// mixture: N = 500 points of five 2-D Gaussians with R = 0.3, K = 5, ε = 1e-7·N, several initialisations. It
// prints one JSON line per method (median time and evaluations to reach RCG's median final F, median final F) and
// writes F(t) of every run as an SVG. Each method's end is logged on stderr as it comes.
//
// With -batched, each method of -methods runs all initialisations as one batched computation on a backend (mog.Batch,
// rcgexp.RunMoGBatch; -backend, default $GEOVB_BACKEND or auto). A batch has no per-run times, so each line gives the
// median evaluations to RCG's median final F + ε, with the batch's wall and CPU time; CG's and GD's runs are capped at
// -cap × RCG's median iterations. No SVG is written.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"time"

	"github.com/geovb/geovb/backend/cpu"
	rcgplot "github.com/geovb/geovb/examples/internal/rcgplot"
	"github.com/geovb/geovb/examples/internal/svgplot"
	"github.com/geovb/geovb/internal/repro/rcgexp"
	"github.com/geovb/geovb/models/mog"
)

func main() {
	cpu.UseForGonum() // the models' gonum calls and the backend's LAPACK on the CPU backend's kernels
	seeds := flag.Int("seeds", 30, "initialisations")
	n := flag.Int("n", 500, "data points")
	R := flag.Float64("r", 0.3, "component spacing R")
	k := flag.Int("k", 5, "components")
	methods := flag.String("methods", "RCG,RG,CG,GD,VBEM", "methods")
	gdCap := flag.Float64("cap", 20, "time cap of GD and CG as a multiple of RCG's median run time")
	svg := flag.String("svg", "rcg-fig5.svg", "SVG output")
	batched := flag.Bool("batched", false, "run each method's initialisations as one batch on -backend (RCG, RG, CG, GD)")
	bename := flag.String("backend", "", "backend for -batched (default $GEOVB_BACKEND, else auto)")
	flag.Parse()
	meths, err := rcgplot.ParseMethods(*methods)
	if err != nil {
		log.Fatal(err)
	}
	if meths[0] != "RCG" {
		log.Fatalf("-methods %q: RCG must come first (its runs set the target and the caps)", *methods)
	}
	for _, err := range []error{rcgplot.CheckSeeds(*seeds), rcgplot.CheckSpacing(*R),
		rcgplot.CheckNonNegative("cap", *gdCap)} {
		if err != nil {
			log.Fatal(err)
		}
	}
	m, err := mog.New(mog.Synthetic(*R, *n, 0.03, 2024), *n, 2, *k, mog.DefaultPrior(2), mog.Options{})
	if err != nil {
		log.Fatal(err)
	}
	tol := 1e-7 * float64(*n)
	if *batched {
		if err := runBatched(os.Stdout, *bename, m, *seeds, meths, tol, *gdCap); err != nil {
			log.Fatal(err)
		}
		return
	}
	runs := map[string][]*rcgexp.Trace{}
	var order []string
	var rcgTimes []float64
	for _, meth := range meths {
		order = append(order, meth)
		for seed := range *seeds {
			x0, err := mog.Init(m, uint64(seed))
			if err != nil {
				log.Fatal(err)
			}
			limit := time.Duration(0)
			if (meth == "GD" || meth == "CG") && len(rcgTimes) > 0 {
				limit = time.Duration(*gdCap * rcgexp.Median(rcgTimes) * float64(time.Second))
			}
			tr, err := rcgexp.RunMoG(m, x0, meth, tol, limit)
			if err != nil {
				log.Fatal(err)
			}
			tr.Seed = seed
			runs[meth] = append(runs[meth], tr)
			if meth == "RCG" {
				rcgTimes = append(rcgTimes, tr.Time)
			}
		}
		var t []float64
		for _, tr := range runs[meth] {
			t = append(t, tr.Time)
		}
		log.Printf("%s: %d runs, median %.3g s of CPU time", meth, len(t), rcgexp.Median(t)) // progress, on stderr
	}
	target := math.NaN()
	if rs := runs["RCG"]; len(rs) > 0 {
		var f []float64
		for _, tr := range rs {
			f = append(f, tr.Final)
		}
		target = rcgexp.Median(f) + tol
	}
	p := svgplot.Chart{Title: fmt.Sprintf("MoG N=%d R=%g K=%d: F vs time (%d seeds)", *n, *R, *k, *seeds),
		XLabel: "CPU time (s)", YLabel: "F − F_target + 1", LogX: true, LogY: true}
	enc := json.NewEncoder(os.Stdout)
	for _, meth := range order {
		s := rcgplot.Summarise(meth, runs[meth], target)
		if err := enc.Encode(s); err != nil {
			log.Fatal(err)
		}
		for _, tr := range runs[meth] {
			y := make([]float64, len(tr.F))
			for i, f := range tr.F {
				y[i] = f - target + 1
			}
			p.Curves = append(p.Curves, svgplot.Curve{Name: meth, Color: rcgplot.Colors[meth], X: tr.T, Y: y, Thin: true})
		}
	}
	if err := p.WriteFile(*svg); err != nil {
		log.Fatal(err)
	}
}
