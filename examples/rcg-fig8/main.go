// Command rcg-fig8 reproduces the scaling in N of paper 004 Fig. 8 (notes §6.5): K = 8, R = 0.3 (the paper does
// not state R here), ε = 1e-8·N; RCG and VB-EM. It prints one JSON line per (N, method) and the log–log slopes of
// median run time against N, and writes the curves as an SVG.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	rcgplot "github.com/geovb/geovb/examples/internal/rcgplot"
	"github.com/geovb/geovb/examples/internal/svgplot"
)

func main() {
	seeds := flag.Int("seeds", 30, "initialisations per N")
	k := flag.Int("k", 8, "components")
	R := flag.Float64("r", 0.3, "component spacing")
	grid := flag.String("n", "100,200,500,1000,2000,5000,10000", "N grid")
	eps := flag.Float64("eps", 1e-8, "ε/N")
	limit := flag.Duration("limit", 120*time.Second, "CPU-time cap per run")
	svg := flag.String("svg", "rcg-fig8.svg", "SVG output")
	flag.Parse()
	methods := []string{"RCG", "VBEM"}
	series := map[string]*svgplot.Curve{}
	for _, m := range methods {
		series[m] = &svgplot.Curve{Name: m, Color: rcgplot.Colors[m]}
	}
	enc := json.NewEncoder(os.Stdout)
	for _, f := range strings.Split(*grid, ",") {
		N, err := strconv.Atoi(f)
		if err != nil {
			log.Fatal(err)
		}
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
		fmt.Printf("{\"method\":%q,\"loglog_slope\":%.4f}\n", m, slope(s.X, s.Y))
	}
	if err := p.WriteFile(*svg); err != nil {
		log.Fatal(err)
	}
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
