package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	rcgplot "github.com/geovb/geovb/examples/internal/rcgplot"
	"github.com/geovb/geovb/examples/internal/svgplot"
	"github.com/geovb/geovb/models/mog"
)

// batchLine is the JSON line of one (N, method) in -batched mode: every seed as one batch.
type batchLine struct {
	Method   string  `json:"method"`
	Backend  string  `json:"backend"`
	N        int     `json:"n"`
	WallTime float64 `json:"batch_wall_s"`
	CPUTime  float64 `json:"batch_cpu_s"`
	rcgplot.BatchStats
}

// slopeLine is a closing JSON line of -batched mode, one per method.
type slopeLine struct {
	Method    string  `json:"method"`
	Backend   string  `json:"backend"`
	WallSlope float64 `json:"loglog_slope_batch_wall"`
	IterSlope float64 `json:"loglog_slope_median_iters"`
}

// runBatched runs methods (rcgexp.RunMoGBatch) on the mixture of rcgplot.Sweep (R, K, ε = epsN·N, the same data and
// initialisations) for each N of ns, all seeds as one mog.Batch per method on the backend called beName. It writes
// a line per (N, method) and, for more than one N, per method the log–log slopes of the batch's wall time and of the
// median iterations against N, and draws the batch wall times against N into svg.
func runBatched(w io.Writer, beName string, methods []string, ns []int, R float64, K, seeds int, epsN float64, svg string) error {
	be, err := rcgplot.OpenBackend(beName, os.Stderr)
	if err != nil {
		return err
	}
	defer be.Close()
	name := be.Info().Name
	enc := json.NewEncoder(w)
	curves := make([]svgplot.Curve, len(methods))
	iters := make([][]float64, len(methods))
	for j, meth := range methods {
		curves[j] = svgplot.Curve{Name: fmt.Sprintf("%s (batch of %d)", meth, seeds), Color: rcgplot.Colors[meth]}
	}
	for _, N := range ns {
		m, err := mog.New(mog.Synthetic(R, N, 0.03, 2024), N, 2, K, mog.DefaultPrior(2), mog.Options{})
		if err != nil {
			return fmt.Errorf("N = %d: %w", N, err)
		}
		ms, xs := make([]*mog.Model, seeds), make([][]float64, seeds)
		for i := range seeds {
			ms[i] = m
			if xs[i], err = mog.Init(m, uint64(i)); err != nil {
				return err
			}
		}
		for j, meth := range methods {
			res, wall, cpu, err := rcgplot.RunBatch(be, meth, ms, xs, epsN*float64(N))
			if err != nil {
				return fmt.Errorf("N = %d, %s: %w", N, meth, err)
			}
			l := batchLine{Method: meth, Backend: name, N: N, WallTime: wall, CPUTime: cpu, BatchStats: rcgplot.StatsOf(res)}
			if err := enc.Encode(l); err != nil {
				return err
			}
			c := &curves[j]
			c.X, c.Y = append(c.X, float64(N)), append(c.Y, wall)
			iters[j] = append(iters[j], l.MedianIters)
		}
	}
	for j, meth := range methods {
		c := curves[j]
		if len(ns) < 2 {
			break // one N: no slope
		}
		if err := enc.Encode(slopeLine{Method: meth, Backend: name, WallSlope: slope(c.X, c.Y),
			IterSlope: slope(c.X, iters[j])}); err != nil {
			return err
		}
	}
	p := svgplot.Chart{Title: "MoG: batched wall time of all seeds vs N", XLabel: "N", YLabel: "wall time (s)",
		LogX: true, LogY: true, Curves: curves}
	return p.WriteFile(svg)
}
