package main

import (
	"encoding/json"
	"os"
	"strconv"

	"github.com/geovb/geovb/backend"
	rcgplot "github.com/geovb/geovb/examples/internal/rcgplot"
	"github.com/geovb/geovb/examples/internal/svgplot"
	"github.com/geovb/geovb/models/mog"
)

// batchLine is the JSON line of one (R, method) in -batched mode.
type batchLine struct {
	Method   string  `json:"method"`
	Backend  string  `json:"backend"`
	R        float64 `json:"r"`
	N        int     `json:"n"`
	WallTime float64 `json:"batch_wall_s,omitempty"` // none with -whole
	CPUTime  float64 `json:"batch_cpu_s,omitempty"`
	rcgplot.BatchStats
}

// gridPoint is one R value of the grid with its model and the seeds' initialisations.
type gridPoint struct {
	R  float64
	m  *mog.Model
	xs [][]float64
}

// gridPoints builds the data set and the initialisations of rcgplot.Sweep for each R of grid, so that the batched
// runs are the host sweep's.
func gridPoints(grid []float64, N, K, seeds int) ([]gridPoint, error) {
	var out []gridPoint
	for _, R := range grid {
		m, err := mog.New(mog.Synthetic(R, N, 0.03, 2024), N, 2, K, mog.DefaultPrior(2), mog.Options{})
		if err != nil {
			return nil, err
		}
		gp := gridPoint{R: R, m: m, xs: make([][]float64, seeds)}
		for i := range seeds {
			if gp.xs[i], err = mog.Init(m, uint64(i)); err != nil {
				return nil, err
			}
		}
		out = append(out, gp)
	}
	return out, nil
}

// runBatched runs methods (rcgexp.RunMoGBatch) on the named backend: with whole, every seed of every R of grid as one
// mog.Batch per method (the runs' data sets differ, their N, K and D agree), else one batch per R.
func runBatched(name string, grid []float64, methods []string, N, K, seeds int, epsN float64, svg string, whole bool) error {
	be, err := rcgplot.OpenBackend(name, os.Stderr)
	if err != nil {
		return err
	}
	defer be.Close()
	info := be.Info()
	points, err := gridPoints(grid, N, K, seeds)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	tol := epsN * float64(N)
	if whole {
		return runWhole(be, info.Name, methods, points, N, tol, enc)
	}
	series := map[string]*svgplot.Curve{}
	for _, meth := range methods {
		series[meth] = &svgplot.Curve{Name: meth + " (batch of " + strconv.Itoa(seeds) + ")",
			Color: rcgplot.Colors[meth]}
	}
	for _, gp := range points {
		ms := make([]*mog.Model, seeds)
		for i := range ms {
			ms[i] = gp.m
		}
		for _, meth := range methods {
			res, wall, cpu, err := rcgplot.RunBatch(be, meth, ms, gp.xs, tol)
			if err != nil {
				return err
			}
			l := batchLine{Method: meth, Backend: info.Name, R: gp.R, N: N, WallTime: wall, CPUTime: cpu,
				BatchStats: rcgplot.StatsOf(res)}
			if err := enc.Encode(l); err != nil {
				return err
			}
			series[meth].X = append(series[meth].X, gp.R)
			series[meth].Y = append(series[meth].Y, wall)
		}
	}
	p := svgplot.Chart{Title: "MoG: batched wall time of all seeds vs R", XLabel: "R", YLabel: "wall time (s)", LogY: true}
	for _, meth := range methods {
		p.Curves = append(p.Curves, *series[meth])
	}
	return p.WriteFile(svg)
}

// wholeLine is the JSON line of one method's batch over the whole grid.
type wholeLine struct {
	Method   string  `json:"method"`
	Backend  string  `json:"backend"`
	Grid     int     `json:"r_values"`
	Runs     int     `json:"runs"`
	WallTime float64 `json:"batch_wall_s"`
	CPUTime  float64 `json:"batch_cpu_s"`
}

// runWhole runs each method on every (R, seed) of points as one batch and prints a line per (R, method) with the
// runs' medians, then the batch's times in a line of its own (the per-R lines carry no time: their runs shared
// every backend call with the other R values').
func runWhole(be backend.Backend, beName string, methods []string, points []gridPoint, N int, tol float64,
	enc *json.Encoder) error {
	var ms []*mog.Model
	var xs [][]float64
	for _, gp := range points {
		for _, x := range gp.xs {
			ms, xs = append(ms, gp.m), append(xs, x)
		}
	}
	for _, meth := range methods {
		res, wall, cpu, err := rcgplot.RunBatch(be, meth, ms, xs, tol)
		if err != nil {
			return err
		}
		for i, gp := range points {
			k := len(gp.xs)
			l := batchLine{Method: meth, Backend: beName, R: gp.R, N: N,
				BatchStats: rcgplot.StatsOf(res[i*k : (i+1)*k])}
			if err := enc.Encode(l); err != nil {
				return err
			}
		}
		if err := enc.Encode(wholeLine{Method: meth, Backend: beName, Grid: len(points), Runs: len(ms),
			WallTime: wall, CPUTime: cpu}); err != nil {
			return err
		}
	}
	return nil
}
