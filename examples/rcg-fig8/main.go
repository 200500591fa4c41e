// Command rcg-fig8 reproduces the scaling in N of paper 004 Fig. 8: K = 8, R = 0.3 (the paper does
// not state R here), ε = 1e-8·N; RCG and VB-EM (-methods). It prints one JSON line per (N, method) and, for a grid
// of more than one N, the log–log slopes of median run time against N, and writes the curves as an SVG.
//
// With -batched, each method runs all seeds of an N as one batched computation on a backend (mog.Batch,
// rcgexp.RunMoGBatch; -backend, default $GEOVB_BACKEND or auto): one JSON line per (N, method) with the batch's wall
// and process CPU time and the per-run medians of final F and iterations, then (for more than one N) per method the
// log–log slopes of the batch wall time and of the median iterations against N; the SVG shows the batch wall times
// against N.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/geovb/geovb/backend/cpu"
	rcgplot "github.com/geovb/geovb/examples/internal/rcgplot"
	"github.com/geovb/geovb/examples/internal/svgplot"
)

func main() {
	cpu.UseForGonum() // the models' gonum calls and the backend's LAPACK on the CPU backend's kernels
	seeds := flag.Int("seeds", 30, "initialisations per N")
	k := flag.Int("k", 8, "components")
	R := flag.Float64("r", 0.3, "component spacing")
	grid := flag.String("n", "100,200,500,1000,2000,5000,10000", "N grid")
	eps := flag.Float64("eps", 1e-8, "ε/N")
	limit := flag.Duration("limit", 120*time.Second, "CPU-time cap per run")
	svg := flag.String("svg", "rcg-fig8.svg", "SVG output")
	batched := flag.Bool("batched", false, "run the seeds of each N as one batched computation per method on -backend")
	bename := flag.String("backend", "", "backend for -batched (default $GEOVB_BACKEND, else auto)")
	mlist := flag.String("methods", "RCG,VBEM", "methods (of RCG, RG, CG, GD, VBEM)")
	flag.Parse()
	ns, err := parseGrid(*grid)
	if err != nil {
		log.Fatal(err)
	}
	methods, err := rcgplot.ParseMethods(*mlist)
	if err != nil {
		log.Fatal(err)
	}
	for _, err := range []error{rcgplot.CheckSeeds(*seeds), rcgplot.CheckSpacing(*R),
		rcgplot.CheckNonNegative("eps", *eps), rcgplot.CheckLimit(*limit)} {
		if err != nil {
			log.Fatal(err)
		}
	}
	if *batched {
		if err := runBatched(os.Stdout, *bename, methods, ns, *R, *k, *seeds, *eps, *svg); err != nil {
			log.Fatal(err)
		}
		return
	}
	series := map[string]*svgplot.Curve{}
	for _, m := range methods {
		series[m] = &svgplot.Curve{Name: m, Color: rcgplot.Colors[m]}
	}
	enc := json.NewEncoder(os.Stdout)
	for _, N := range ns {
		sums, err := rcgplot.Sweep(*R, N, *k, *seeds, *eps, methods, *limit)
		if err != nil {
			log.Fatal(err)
		}
		for _, s := range sums {
			if err := enc.Encode(s); err != nil {
				log.Fatal(err)
			}
			series[s.Method].X = append(series[s.Method].X, float64(N))
			series[s.Method].Y = append(series[s.Method].Y, s.MedianTime)
		}
	}
	p := svgplot.Chart{Title: "MoG: median time to convergence vs N", XLabel: "N", YLabel: "CPU time (s)", LogX: true, LogY: true}
	for _, m := range methods {
		s := series[m]
		p.Curves = append(p.Curves, *s)
		if len(ns) > 1 {
			fmt.Printf("{\"method\":%q,\"loglog_slope\":%.4f}\n", m, slope(s.X, s.Y))
		}
	}
	if err := p.WriteFile(*svg); err != nil {
		log.Fatal(err)
	}
}

// parseGrid reads the comma-separated N grid; every N must be a positive integer, named once (a repeated N would
// leave the log–log slopes undefined).
func parseGrid(grid string) ([]int, error) {
	var ns []int
	for _, f := range strings.Split(grid, ",") {
		N, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || N < 1 {
			return nil, fmt.Errorf("-n: %q is not a positive integer", f)
		}
		if slices.Contains(ns, N) {
			return nil, fmt.Errorf("-n: %d appears twice", N)
		}
		ns = append(ns, N)
	}
	return ns, nil
}

// slope is the least-squares slope of log y against log x.
func slope(x, y []float64) float64 {
	var sx, sy, sxx, sxy, n float64
	for i := range x {
		lx, ly := math.Log(x[i]), math.Log(y[i])
		sx, sy, sxx, sxy, n = sx+lx, sy+ly, sxx+lx*lx, sxy+lx*ly, n+1
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}
