package main

import (
	"math"
	"testing"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/backend"
	rcgplot "github.com/geovb/geovb/examples/internal/rcgplot"
	"github.com/geovb/geovb/models/mog"
)

// TestWholeGridBatch checks -whole: RCG, and VB-EM, on two R values × three seeds as one batch of six runs ends each
// run where the batch of its own R value ends it — the same iteration count and stop reason, and final F within
// 1e-10 relative (the runs do not interact; only the backend calls are shared).
func TestWholeGridBatch(t *testing.T) {
	be, err := backend.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	const N, seeds = 200, 3
	points, err := gridPoints([]float64{0.2, 0.3}, N, 8, seeds)
	if err != nil {
		t.Fatal(err)
	}
	tol := 1e-9 * N
	for _, meth := range []string{"RCG", "VBEM"} {
		var all []*mog.Model
		var xs [][]float64
		var perR []rcg.Result
		for _, gp := range points {
			ms := []*mog.Model{gp.m, gp.m, gp.m}
			res, _, _, err := rcgplot.RunBatch(be, meth, ms, gp.xs, tol)
			if err != nil {
				t.Fatal(err)
			}
			perR = append(perR, res...)
			all, xs = append(all, ms...), append(xs, gp.xs...)
		}
		whole, _, _, err := rcgplot.RunBatch(be, meth, all, xs, tol)
		if err != nil {
			t.Fatal(err)
		}
		if len(whole) != len(perR) {
			t.Fatalf("%d results, want %d", len(whole), len(perR))
		}
		for i, w := range whole {
			p := perR[i]
			if w.Iters != p.Iters || w.Reason != p.Reason || !(math.Abs(w.F-p.F) <= 1e-10*math.Abs(p.F)) {
				t.Errorf("%s run %d: whole grid %d iterations, %v, F %.12g; its own R's batch %d, %v, F %.12g", meth,
					i, w.Iters, w.Reason, w.F, p.Iters, p.Reason, p.F)
			}
		}
	}
}
