package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
	rcgplot "github.com/geovb/geovb/examples/internal/rcgplot"
	"github.com/geovb/geovb/internal/repro/rcgexp"
	"github.com/geovb/geovb/models/mog"
)

// batchLine is the JSON line of one method in -batched mode. A batch has no per-run times, so runs are compared in
// evaluations (F and gradient, per run; device-independent).
type batchLine struct {
	Method        string  `json:"method"`
	Backend       string  `json:"backend"`
	Runs          int     `json:"runs"`
	Target        float64 `json:"target_f"`
	Reached       int     `json:"reached"`
	MedianEvalsTT float64 `json:"median_evals_to_target"` // runs that missed the target count with all their evaluations
	LowerBound    bool    `json:"lower_bound"`            // the median run missed the target
	MedianFinalF  float64 `json:"median_final_f"`
	MedianIters   float64 `json:"median_iters"`
	MaxIter       int     `json:"max_iter"` // the iteration cap of each run
	WallTime      float64 `json:"batch_wall_s"`
	CPUTime       float64 `json:"batch_cpu_s"`
}

// batchRun is the per-iteration record of one run of a batch.
type batchRun struct {
	F     []float64
	Evals []int
	res   rcg.Result
}

// evalsTo returns the evaluations at which the run first reached F ≤ target, or all its evaluations and false.
func (r *batchRun) evalsTo(target float64) (int, bool) {
	for i, f := range r.F {
		if f <= target {
			return r.Evals[i], true
		}
	}
	if len(r.Evals) == 0 {
		return 0, false
	}
	return r.Evals[len(r.Evals)-1], false
}

// runBatched runs every method of methods (RCG first) with all initialisations of m as one mog.Batch on the
// backend called beName, with rcgexp.RunMoG's settings (rcgexp.RunMoGBatch). RCG's runs set the target (their median
// final F + tol) and the iteration cap of CG and GD (capF × RCG's median iterations; the host sweep caps them in
// time). It writes one JSON line per method to w.
func runBatched(w io.Writer, beName string, m *mog.Model, seeds int, methods []string, tol, capF float64) error {
	if len(methods) == 0 || methods[0] != "RCG" {
		return fmt.Errorf("-batched: methods %v: RCG must come first", methods)
	}
	for _, name := range methods {
		if !slices.Contains(rcgexp.MoGMethods, name) {
			return fmt.Errorf("-batched runs %v, not %q", rcgexp.MoGMethods, name)
		}
	}
	be, err := rcgplot.OpenBackend(beName, os.Stderr)
	if err != nil {
		return err
	}
	defer be.Close()
	info := be.Info()
	xs := make([][]float64, seeds)
	ms := make([]*mog.Model, seeds)
	for i := range seeds {
		ms[i] = m
		if xs[i], err = mog.Init(m, uint64(i)); err != nil {
			return err
		}
	}
	enc := json.NewEncoder(w)
	target, maxIter := math.NaN(), 10000
	for _, name := range methods {
		limit := 10000
		if name == "CG" || name == "GD" {
			limit = maxIter
		}
		bt, err := mog.NewBatch(be, ms)
		if err != nil {
			return err
		}
		runs := make([]batchRun, seeds)
		rec := func(i int, F float64, evals int) {
			runs[i].F = append(runs[i].F, F)
			runs[i].Evals = append(runs[i].Evals, evals)
		}
		c0, t0 := run.CPUTime(), time.Now()
		res, err := rcgexp.RunMoGBatch(context.Background(), bt, xs, name, tol, limit, rec)
		l := batchLine{Method: name, Backend: info.Name, Runs: seeds, MaxIter: limit,
			WallTime: time.Since(t0).Seconds(), CPUTime: (run.CPUTime() - c0).Seconds()}
		bt.Close()
		if err != nil {
			return err
		}
		var fin, it []float64
		for i, r := range res {
			runs[i].res = r
			fin, it = append(fin, r.F), append(it, float64(r.Iters))
		}
		if name == "RCG" {
			target = rcgexp.Median(fin) + tol
			maxIter = max(1, int(capF*rcgexp.Median(it)))
		}
		var ev []float64
		for i := range runs {
			e, ok := runs[i].evalsTo(target)
			ev = append(ev, float64(e))
			if ok {
				l.Reached++
			}
		}
		l.Target, l.MedianFinalF, l.MedianIters, l.MedianEvalsTT = target, rcgexp.Median(fin), rcgexp.Median(it), rcgexp.Median(ev)
		l.LowerBound = 2*l.Reached <= seeds
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return nil
}
