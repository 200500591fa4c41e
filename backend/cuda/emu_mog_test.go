package cuda

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/models/mog"
	"github.com/geovb/geovb/tensor"
)

// TestEmulatedMoGBatch runs the batched mixture of paper 004 (mog.Batch: strided views into the runs' x, batched
// GEMMs with the data broadcast or per run, row reductions, the log-domain step) through the CUDA backend on the
// emulated device, against the same batch on the CPU backend (itself checked against the host model in models/mog),
// on three runs of one data set (Z broadcast) and on three data sets:
//   - one Value, Grad and Step at the initial points (checkEvaluations): within 1e-12 (measured ≤ 3.2e-15);
//   - up to 30 iterations of RCG (rcg.MinimizeBatch, √n restarts) and of VB-EM (mog.VBEMBatch): the same iterations
//     and stop reasons, F within 1e-10 relative (measured ≤ 6.5e-14); for VB-EM also the responsibilities and
//     means within 1e-12 (measured ≤ 1.1e-14). RCG's final points are not compared: its line searches compare F
//     values equal to round-off, and the two paths end up to 1.1e-6 apart (relative, in the means) at the same F.
//
// This is the GPU check of the batched runs short of a GPU: it covers the backend's Go side and the kernels'
// algorithms, not the CUDA C.
func TestEmulatedMoGBatch(t *testing.T) {
	cb, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	eb := newEmuBackend(t)
	model := func(R float64, seed uint64) *mog.Model {
		m, err := mog.New(mog.Synthetic(R, 90, 0.03, seed), 90, 2, 3, mog.DefaultPrior(2), mog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	one := model(0.3, 1)
	for name, ms := range map[string][]*mog.Model{
		"shared":   {one, one, one},
		"distinct": {model(0.2, 2), model(0.3, 3), model(0.4, 4)},
	} {
		xs := make([][]float64, len(ms))
		for i, m := range ms {
			if xs[i], err = mog.Init(m, uint64(10+i)); err != nil {
				t.Fatal(err)
			}
		}
		type result struct {
			F     float64
			X     []float64
			Iters int
			Why   run.StopReason
		}
		fit := func(be backend.Backend, method string) []result {
			bt, err := mog.NewBatch(be, ms)
			if err != nil {
				t.Fatal(err)
			}
			defer bt.Close()
			var out []result
			if method == "VBEM" {
				rs, err := mog.VBEMBatch(bt, xs, mog.VBEMSettings{Tol: 1e-9}, run.Control{MaxIter: 30}, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rs {
					out = append(out, result{r.F, append(append([]float64(nil), r.LogR...), r.Mu...), r.Iters, r.Reason})
				}
				return out
			}
			rs, err := rcg.MinimizeBatch(context.Background(), bt, xs, rcg.Settings{Tol: 1e-9, RestartEvery: rcg.SqrtN,
				Control: run.Control{MaxIter: 30}})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				out = append(out, result{r.F, r.X, r.Iters, r.Reason})
			}
			return out
		}
		checkEvaluations(t, name, cb, eb, ms, xs)
		for _, method := range []string{"RCG", "VBEM"} {
			want, got := fit(cb, method), fit(eb, method)
			var worstF, worstR, worstM float64
			for i := range want {
				w, g := want[i], got[i]
				what := fmt.Sprintf("%s %s run %d", name, method, i)
				// Responsibilities r = exp(log r) (in [0, 1]) and means (relative to their largest magnitude).
				nk := len(w.X) - 3*2
				var dr, dm, scale float64
				for j := range nk {
					dr = math.Max(dr, math.Abs(math.Exp(g.X[j])-math.Exp(w.X[j])))
				}
				for j := nk; j < len(w.X); j++ {
					dm, scale = math.Max(dm, math.Abs(g.X[j]-w.X[j])), math.Max(scale, math.Abs(w.X[j]))
				}
				dm /= scale
				worstF, worstR, worstM = math.Max(worstF, math.Abs(g.F-w.F)/math.Abs(w.F)), math.Max(worstR, dr),
					math.Max(worstM, dm)
				// RCG's final points are compared only by F: its line searches compare F values that differ by
				// round-off, so a path can take a slightly different step and end elsewhere in the flat bottom.
				if g.Iters != w.Iters || g.Why != w.Why || !(math.Abs(g.F-w.F) <= 1e-10*math.Abs(w.F)) ||
					method == "VBEM" && (!(dr <= 1e-12) || !(dm <= 1e-12)) {
					t.Errorf("%s: emulated GPU %v after %d iterations, F %.15g; CPU %v after %d, F %.15g; "+
						"responsibilities differ by %.3g, means by %.3g (relative)", what, g.Why, g.Iters, g.F, w.Why,
						w.Iters, w.F, dr, dm)
				}
			}
			t.Logf("%s %s: iterations %d, %d, %d; worst difference of F %.2g (relative), of r %.2g, of the means "+
				"%.2g (relative)", name, method, got[0].Iters, got[1].Iters, got[2].Iters, worstF, worstR, worstM)
		}
	}
}

// checkEvaluations compares one Value, Grad and Step of the batch of ms at xs on the emulated device (eb) with the
// CPU backend (cb): F, the gradient, the natural gradient and the stepped point (x − ½g̃ by the log-domain step)
// within 1e-12, relative to each one's max-norm.
func checkEvaluations(t *testing.T, name string, cb, eb backend.Backend, ms []*mog.Model, xs [][]float64) {
	t.Helper()
	eval := func(be backend.Backend) (f []float64, out []*tensor.Tensor) {
		bt, err := mog.NewBatch(be, ms)
		if err != nil {
			t.Fatal(err)
		}
		defer bt.Close()
		shape := tensor.Shape{Batch: len(xs), Rows: 1, Cols: bt.Dim()}
		h, err := tensor.FromRows(xs, bt.Dim())
		if err != nil {
			t.Fatal(err)
		}
		var ts [5]*tensor.Tensor // x, g, g̃, the stepped point, the direction −g̃
		for i := range ts {
			if ts[i], err = be.Alloc(shape); err != nil {
				t.Fatal(err)
			}
			defer be.Free(ts[i])
		}
		alpha := make([]float64, len(xs))
		for i := range alpha {
			alpha[i] = 0.5
		}
		f = make([]float64, len(xs))
		if err := be.Upload(ts[0], h); err != nil {
			t.Fatal(err)
		}
		if err := bt.Grad(f, ts[1], ts[2], ts[0]); err != nil {
			t.Fatal(err)
		}
		if err := be.Axpby(ts[4], -1, ts[2], 0, nil); err != nil {
			t.Fatal(err)
		}
		if err := bt.Step(ts[3], ts[0], ts[4], alpha); err != nil {
			t.Fatal(err)
		}
		fv := make([]float64, len(xs))
		if err := bt.Value(fv, ts[3]); err != nil {
			t.Fatal(err)
		}
		for _, t2 := range ts[1:4] {
			o := tensor.NewHost(len(xs), 1, bt.Dim())
			if err := be.Download(o, t2); err != nil {
				t.Fatal(err)
			}
			out = append(out, o)
		}
		return append(f, fv...), out
	}
	wf, wout := eval(cb)
	gf, gout := eval(eb)
	worst := 0.0
	for i := range wf {
		worst = math.Max(worst, math.Abs(gf[i]-wf[i])/math.Abs(wf[i]))
	}
	for k, w := range wout {
		wd, gd := w.Storage().Host(), gout[k].Storage().Host()
		var d, scale float64
		for j := range wd {
			d, scale = math.Max(d, math.Abs(gd[j]-wd[j])), math.Max(scale, math.Abs(wd[j]))
		}
		worst = math.Max(worst, d/scale)
	}
	t.Logf("%s: Value, Grad, Step: worst relative difference %.2g", name, worst)
	if !(worst <= 1e-12) {
		t.Errorf("%s: one evaluation on the emulated device differs from the CPU backend's by %.3g (relative)", name,
			worst)
	}
}
