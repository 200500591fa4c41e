package cuda

import (
	"fmt"
	"math"
	"testing"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/models/mog"
)

// TestEmulatedMoGBatch runs the batched mixture of paper 004 (mog.Batch: strided views into the runs' x, batched
// GEMMs with the data broadcast or per run, row reductions, the log-domain step) through the CUDA backend on the
// emulated device, against the same batch on the CPU backend (itself checked against the host model in models/mog):
// up to 30 iterations of RCG (rcg.MinimizeBatch, √n restarts) and of VB-EM (mog.VBEMBatch), on three runs of one
// data set (Z broadcast) and on three data sets. Per run: the same iterations and stop reason, F within 1e-10
// relative and the final point within 1e-6 (max-norm, relative: as in rcg's TestMinimizeBatchMatchesHost, the
// optimum is flat in some directions of log r, where round-off moves the point more than F). Measured: F ≤ 6.5e-14,
// x ≤ 1.3e-7. This is the GPU check of the batched runs short of a GPU: it covers the backend's Go side and the
// kernels' algorithms, not the CUDA C.
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
			rs, err := rcg.MinimizeBatch(bt, xs, rcg.Settings{Tol: 1e-9, RestartEvery: rcg.SqrtN},
				rcg.BatchControl{MaxIter: 30})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				out = append(out, result{r.F, r.X, r.Iters, r.Reason})
			}
			return out
		}
		for _, method := range []string{"RCG", "VBEM"} {
			want, got := fit(cb, method), fit(eb, method)
			var worstF, worstX float64
			for i := range want {
				w, g := want[i], got[i]
				what := fmt.Sprintf("%s %s run %d", name, method, i)
				var dx, scale float64
				for j := range w.X {
					dx, scale = math.Max(dx, math.Abs(g.X[j]-w.X[j])), math.Max(scale, math.Abs(w.X[j]))
				}
				worstF, worstX = math.Max(worstF, math.Abs(g.F-w.F)/math.Abs(w.F)), math.Max(worstX, dx/scale)
				if g.Iters != w.Iters || g.Why != w.Why || !(math.Abs(g.F-w.F) <= 1e-10*math.Abs(w.F)) ||
					!(dx <= 1e-6*scale) {
					t.Errorf("%s: emulated GPU %v after %d iterations, F %.15g; CPU %v after %d, F %.15g; final "+
						"points differ by %.3g (max-norm %.3g)", what, g.Why, g.Iters, g.F, w.Why, w.Iters, w.F, dx, scale)
				}
			}
			t.Logf("%s %s: iterations %d, %d, %d; worst relative difference of F %.2g, of x %.2g", name, method,
				got[0].Iters, got[1].Iters, got[2].Iters, worstF, worstX)
		}
	}
}
