package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/geovb/geovb/algos/rcg"
	rcgplot "github.com/geovb/geovb/examples/internal/rcgplot"
	"github.com/geovb/geovb/examples/internal/svgplot"
	"github.com/geovb/geovb/models/mog"
)

// batchLine is the JSON line of one N in -batched mode: RCG with every seed as one batch.
type batchLine struct {
	Method   string  `json:"method"`
	Backend  string  `json:"backend"`
	N        int     `json:"n"`
	WallTime float64 `json:"batch_wall_s"`
	CPUTime  float64 `json:"batch_cpu_s"`
	rcgplot.BatchStats
}

// slopeLine is the closing JSON line of -batched mode.
type slopeLine struct {
	Method    string  `json:"method"`
	Backend   string  `json:"backend"`
	WallSlope float64 `json:"loglog_slope_batch_wall"`
	IterSlope float64 `json:"loglog_slope_median_iters"`
}

// runBatched runs RCG on the mixture of rcgplot.Sweep (R, K, ε = epsN·N, the same data and initialisations) for
// each N of ns, all seeds as one mog.Batch on the backend called beName (VB-EM is not batched). It writes a line
// per N and the log–log slopes of the batch's wall time and of the median iterations against N, and draws the
// batch wall time against N into svg.
func runBatched(w io.Writer, beName string, ns []int, R float64, K, seeds int, epsN float64, svg string) error {
	be, err := rcgplot.OpenBackend(beName, os.Stderr)
	if err != nil {
		return err
	}
	defer be.Close()
	name := be.Info().Name
	enc := json.NewEncoder(w)
	curve := svgplot.Curve{Name: fmt.Sprintf("RCG (batch of %d)", seeds), Color: rcgplot.Colors["RCG"]}
	var iters []float64
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
		res, wall, cpu, err := rcgplot.RunBatch(be, rcg.RCG, ms, xs, epsN*float64(N))
		if err != nil {
			return fmt.Errorf("N = %d: %w", N, err)
		}
		l := batchLine{Method: "RCG", Backend: name, N: N, WallTime: wall, CPUTime: cpu, BatchStats: rcgplot.StatsOf(res)}
		if err := enc.Encode(l); err != nil {
			return err
		}
		curve.X, curve.Y = append(curve.X, float64(N)), append(curve.Y, wall)
		iters = append(iters, l.MedianIters)
	}
	if err := enc.Encode(slopeLine{Method: "RCG", Backend: name, WallSlope: slope(curve.X, curve.Y),
		IterSlope: slope(curve.X, iters)}); err != nil {
		return err
	}
	p := svgplot.Chart{Title: "MoG: batched wall time of all seeds vs N", XLabel: "N", YLabel: "wall time (s)",
		LogX: true, LogY: true, Curves: []svgplot.Curve{curve}}
	return p.WriteFile(svg)
}
