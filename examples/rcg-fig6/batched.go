package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/all"
	rcgplot "github.com/geovb/geovb/examples/internal/rcgplot"
	"github.com/geovb/geovb/examples/internal/svgplot"
	"github.com/geovb/geovb/models/mog"
)

// batchLine is the JSON line of one (R, method) in -batched mode.
type batchLine struct {
	Method       string  `json:"method"`
	Backend      string  `json:"backend"`
	R            float64 `json:"r"`
	N            int     `json:"n"`
	Runs         int     `json:"runs"`
	Converged    int     `json:"converged"`
	WallTime     float64 `json:"batch_wall_s"`
	CPUTime      float64 `json:"batch_cpu_s"`
	MedianFinalF float64 `json:"median_final_f"`
	MedianIters  float64 `json:"median_iters"`
	MaxIters     int     `json:"max_iters"`
}

// runBatched runs RCG and RG with all seeds of each R as one mog.Batch on the named backend (the data set and the
// initialisations are those of rcgplot.Sweep, so the runs are the host sweep's).
func runBatched(name, grid string, N, K, seeds int, epsN float64, svg string) error {
	be, err := backend.Open(name)
	if err != nil {
		return err
	}
	defer be.Close()
	info := be.Info()
	fmt.Fprintf(os.Stderr, "backend %s (%s, %s)\n", info.Name, info.Library, info.Device)
	methods := map[string]rcg.Method{"RCG": rcg.RCG, "RG": rcg.RG}
	order := []string{"RCG", "RG"}
	series := map[string]*svgplot.Curve{}
	for _, m := range order {
		series[m] = &svgplot.Curve{Name: m + " (batch of " + strconv.Itoa(seeds) + ")", Color: rcgplot.Colors[m]}
	}
	enc := json.NewEncoder(os.Stdout)
	for _, f := range strings.Split(grid, ",") {
		R, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return err
		}
		m, err := mog.New(mog.Synthetic(R, N, 0.03, 2024), N, 2, K, mog.DefaultPrior(2), mog.Options{})
		if err != nil {
			return err
		}
		ms, xs := make([]*mog.Model, seeds), make([][]float64, seeds)
		for i := range seeds {
			ms[i] = m
			if xs[i], err = mog.Init(m, uint64(i)); err != nil {
				return err
			}
		}
		for _, meth := range order {
			bt, err := mog.NewBatch(be, ms)
			if err != nil {
				return err
			}
			c0, t0 := run.CPUTime(), time.Now()
			res, err := rcg.MinimizeBatch(bt, xs, rcg.Settings{Method: methods[meth], Tol: epsN * float64(N),
				RestartEvery: rcg.SqrtN}, rcg.BatchControl{})
			wall, cpu := time.Since(t0).Seconds(), (run.CPUTime() - c0).Seconds()
			bt.Close()
			if err != nil {
				return err
			}
			l := batchLine{Method: meth, Backend: info.Name, R: R, N: N, Runs: seeds, WallTime: wall, CPUTime: cpu}
			var fin, it []float64
			for _, r := range res {
				fin, it = append(fin, r.F), append(it, float64(r.Iters))
				l.MaxIters = max(l.MaxIters, r.Iters)
				if r.Reason == run.Converged {
					l.Converged++
				}
			}
			l.MedianFinalF, l.MedianIters = rcg.Median(fin), rcg.Median(it)
			if err := enc.Encode(l); err != nil {
				return err
			}
			series[meth].X = append(series[meth].X, R)
			series[meth].Y = append(series[meth].Y, wall)
		}
	}
	p := svgplot.Chart{Title: "MoG: batched wall time of all seeds vs R", XLabel: "R", YLabel: "wall time (s)", LogY: true}
	for _, m := range order {
		p.Curves = append(p.Curves, *series[m])
	}
	return p.WriteFile(svg)
}
