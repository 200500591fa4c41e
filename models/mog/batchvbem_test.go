package mog

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/internal/numtest"
	"github.com/geovb/geovb/internal/testbackend"
)

// TestVBEMBatchMatchesHost checks VBEMBatch against VBEM on the host (the reference: per-run host code, one run at a
// time) on the two batches of TestBatchMatchesHost (one data set at six points, Z broadcast; four data sets with
// one printed-W model), from initial, random and guarded points:
//   - 6 iterations with tol = 0: F after every iteration within 1e-10 relative, and the final responsibilities,
//     means and EM parameters within 1e-8 (max-norm, relative; the E-step's normalisation differs from the host's
//     only by round-off and the −700 floor, below exp(−700));
//   - to convergence (|ΔF| < 1e-9·N over 2 iterations): the same stop reason, iteration counts within 1 (the
//     |ΔF| < tol test compares F values equal to round-off) and final F within 1e-9 relative; the runs stop at
//     different iterations, so retiring and the slot swaps are exercised.
func TestVBEMBatchMatchesHost(t *testing.T) {
	be := testbackend.Open(t)
	one := testModel(t, 300, 5, 0.3, Options{}, 3)
	cases := map[string][]*Model{
		"shared": {one, one, one, one, one, one},
		"distinct": {testModel(t, 300, 5, 0.1, Options{}, 4), testModel(t, 300, 5, 0.2, Options{}, 5),
			testModel(t, 300, 5, 0.3, Options{PrintedW: true}, 6), testModel(t, 300, 5, 0.4, Options{}, 7)},
	}
	for name, ms := range cases {
		bt, err := NewBatch(be, ms)
		if err != nil {
			t.Fatal(err)
		}
		xs := batchPoints(t, ms)
		for _, c := range []struct {
			tol     float64
			maxIter int
		}{{0, 6}, {1e-9 * 300, 0}} {
			fs := make([][]float64, len(ms))
			got, err := VBEMBatch(bt, xs, VBEMSettings{Tol: c.tol}, run.Control{MaxIter: c.maxIter}, func(i int, F float64) {
				fs[i] = append(fs[i], F)
			})
			if err != nil {
				t.Fatal(err)
			}
			iters := map[int]bool{}
			var worstF, worstX float64
			for i, m := range ms {
				var hf []float64
				want, err := VBEM(m, xs[i], VBEMSettings{Tol: c.tol}, run.Control{MaxIter: c.maxIter,
					Recorder: run.Func(func(r run.Record) { hf = append(hf, r.Extra["F"]) })})
				if err != nil {
					t.Fatal(err)
				}
				g := got[i]
				what := fmt.Sprintf("%s run %d (tol %g)", name, i, c.tol)
				iters[g.Iters] = true
				if len(fs[i]) != g.Iters {
					t.Errorf("%s: %d records for %d iterations", what, len(fs[i]), g.Iters)
				}
				for it := range min(len(hf), len(fs[i])) {
					e := math.Abs(fs[i][it]-hf[it]) / math.Abs(hf[it])
					worstF = math.Max(worstF, e)
					if !(e <= 1e-10) {
						t.Errorf("%s: iteration %d: F %.12g, host %.12g", what, it, fs[i][it], hf[it])
						break
					}
				}
				if ef := math.Abs(g.F-want.F) / math.Abs(want.F); g.Reason != want.Reason || !(ef <= 1e-9) ||
					g.Iters < want.Iters-1 || g.Iters > want.Iters+1 {
					t.Errorf("%s: %v after %d iterations, F %.12g; host %v after %d, F %.12g", what, g.Reason, g.Iters,
						g.F, want.Reason, want.Iters, want.F)
				}
				if c.maxIter == 0 {
					continue
				}
				var r, hr []float64
				for j := range g.LogR {
					r, hr = append(r, math.Exp(g.LogR[j])), append(hr, math.Exp(want.LogR[j]))
				}
				for _, d := range []struct {
					what   string
					a, ref []float64
				}{{"r", r, hr}, {"means", g.Mu, want.Mu}, {"α", g.Post.Alpha, want.Post.Alpha},
					{"ν", g.Post.Nu, want.Post.Nu}, {"W", g.Post.W, want.Post.W}} {
					e := numtest.MaxRel(d.a, d.ref, 0)
					worstX = math.Max(worstX, e)
					if !(e <= 1e-8) {
						t.Errorf("%s: %s differ from the host's by %.2g (relative)", what, d.what, e)
					}
				}
			}
			t.Logf("%s, tol %g: iteration counts %v; worst relative error of F per iteration %.2g, of the final "+
				"state %.2g", name, c.tol, iters, worstF, worstX)
			if c.maxIter == 0 && len(iters) < 2 {
				t.Errorf("%s: every run stopped after the same number of iterations; the test wants them to differ", name)
			}
		}
		bt.Close()
	}
}

// TestVBEMBatchBadInput checks the errors before iterating (starting points of the wrong count, length or with a
// NaN, a negative tolerance or cap, a recorder in the control: run.ErrConfig, but ErrBadInput for the NaN) and a cancelled context: every run stops Cancelled after its first iteration,
// and the context's error comes back.
func TestVBEMBatchBadInput(t *testing.T) {
	be := testbackend.Open(t)
	m := testModel(t, 100, 3, 0.3, Options{}, 1)
	bt, err := NewBatch(be, []*Model{m, m})
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	x0, err := Init(m, 0)
	if err != nil {
		t.Fatal(err)
	}
	nan := append([]float64(nil), x0...)
	nan[5] = math.NaN()
	ctx := context.Background()
	for what, c := range map[string]struct {
		xs       [][]float64
		tol      float64
		pat, cap int
		rec      run.Recorder
		want     error
	}{
		"one point for two runs": {[][]float64{x0}, 1e-6, 0, 0, nil, run.ErrConfig},
		"short point":            {[][]float64{x0, x0[1:]}, 1e-6, 0, 0, nil, run.ErrConfig},
		"NaN":                    {[][]float64{x0, nan}, 1e-6, 0, 0, nil, ErrBadInput},
		"negative tolerance":     {[][]float64{x0, x0}, -1, 0, 0, nil, run.ErrConfig},
		"NaN tolerance":          {[][]float64{x0, x0}, math.NaN(), 0, 0, nil, run.ErrConfig},
		"negative patience":      {[][]float64{x0, x0}, 1e-6, -1, 0, nil, run.ErrConfig},
		"negative cap":           {[][]float64{x0, x0}, 1e-6, 0, -3, nil, run.ErrConfig},
		"recorder":               {[][]float64{x0, x0}, 1e-6, 0, 0, run.Func(func(run.Record) {}), run.ErrConfig},
	} {
		_, err := VBEMBatch(bt, c.xs, VBEMSettings{Tol: c.tol, Patience: c.pat},
			run.Control{Ctx: ctx, MaxIter: c.cap, Recorder: c.rec}, nil)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", what, err, c.want)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	res, err := VBEMBatch(bt, [][]float64{x0, x0}, VBEMSettings{}, run.Control{Ctx: cctx}, nil)
	if !errors.Is(err, context.Canceled) || len(res) != 2 {
		t.Fatalf("cancelled: %d results, error %v", len(res), err)
	}
	for i, r := range res {
		if r.Reason != run.Cancelled || r.Iters != 1 || !errors.Is(r.Err, context.Canceled) {
			t.Errorf("run %d: %v after %d iterations, error %v", i, r.Reason, r.Iters, r.Err)
		}
	}
}
