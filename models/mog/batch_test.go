package mog

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geovb/geovb/internal/numtest"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// batchPoints returns one x per model: the §6.2 initialisation, random responsibilities and means (randomPoint),
// and a random point with some log-responsibilities below −745 (the φ guard of the host model).
func batchPoints(t *testing.T, ms []*Model) [][]float64 {
	t.Helper()
	xs := make([][]float64, len(ms))
	for i, m := range ms {
		switch i % 3 {
		case 0:
			x, err := Init(m, uint64(i))
			if err != nil {
				t.Fatal(err)
			}
			xs[i] = x
		default:
			logr, mu := randomPoint(m, uint64(10+i))
			if i%3 == 2 {
				for n := 0; n < m.N; n += 7 {
					logr[n*m.K+n%m.K] = -800 - float64(n)
				}
			}
			xs[i] = append(logr, mu...)
		}
	}
	return xs
}

// TestBatchMatchesHost checks the batched collapsed F, gradient and natural gradient of every run against the host
// Collapsed objective of the same model at the same point (independent code: the host loops over n and k with the
// centred scatter, the batch uses the GEMM moment expansion), relative tolerance 1e-10 (F: |ΔF|/|F|; gradients:
// max-norm of the difference over the max-norm of the host vector). Two batches: one data set with several points
// (Z broadcast) and four data sets (R = 0.1…0.4, different seeds and one with the printed-W option), each at
// initial, random and guarded (log r < −745) points. The log-domain step (86) is checked the same way, with a step
// large enough in one run to trigger the −700 floor.
func TestBatchMatchesHost(t *testing.T) {
	be := testbackend.Open(t)
	one := testModel(t, 300, 5, 0.3, Options{}, 3)
	cases := map[string][]*Model{
		"shared":   {one, one, one, one, one, one},
		"distinct": {testModel(t, 300, 5, 0.1, Options{}, 4), testModel(t, 300, 5, 0.2, Options{}, 5), testModel(t, 300, 5, 0.3, Options{PrintedW: true}, 6), testModel(t, 300, 5, 0.4, Options{}, 7)},
	}
	for name, ms := range cases {
		bt, err := NewBatch(be, ms)
		if err != nil {
			t.Fatal(err)
		}
		if want := name == "shared"; bt.shared != want {
			t.Fatalf("%s: shared = %v", name, bt.shared)
		}
		xs := batchPoints(t, ms)
		B, dim := len(ms), bt.Dim()
		x := testbackend.UploadRows(t, bt.be, xs, bt.Dim())
		g, _ := be.Alloc(x.Shape())
		gt, _ := be.Alloc(x.Shape())
		f, fv := make([]float64, B), make([]float64, B)
		if err := bt.Grad(f, g, gt, x); err != nil {
			t.Fatal(err)
		}
		if err := bt.Value(fv, x); err != nil {
			t.Fatal(err)
		}
		gs, gts := testbackend.DownloadRows(t, bt.be, g), testbackend.DownloadRows(t, bt.be, gt)
		var worstF, worstG, worstN float64
		for i, m := range ms {
			c := NewCollapsed(m)
			hg, hn := make([]float64, dim), make([]float64, dim)
			hf := c.Grad(hg, xs[i])
			c.NatGrad(hn, hg, xs[i])
			hv := c.Value(xs[i])
			ef := math.Max(math.Abs(f[i]-hf)/math.Abs(hf), math.Abs(fv[i]-hv)/math.Abs(hv))
			eg, en := numtest.MaxRel(gs[i], hg, 0), numtest.MaxRel(gts[i], hn, 0)
			if !(ef <= 1e-10 && eg <= 1e-10 && en <= 1e-10) {
				t.Errorf("%s run %d: F %v vs host %v (rel %.2g), gradient rel %.2g, natural gradient rel %.2g", name,
					i, f[i], hf, ef, eg, en)
			}
			worstF, worstG, worstN = math.Max(worstF, ef), math.Max(worstG, eg), math.Max(worstN, en)
		}
		t.Logf("%s (B = %d): worst relative error F %.2g, gradient %.2g, natural gradient %.2g", name, B, worstF,
			worstG, worstN)

		// The step (86) against Collapsed.Step, with per-run α; run 1 takes α = 400 along a direction with entries
		// ±3, so that log r spreads by more than 700 and the floor applies.
		src := rand.New(rng.NewSource(99, 1))
		ph := make([][]float64, B)
		alpha := make([]float64, B)
		for i := range ph {
			ph[i] = make([]float64, dim)
			for j := range ph[i] {
				ph[i][j] = src.NormFloat64()
			}
			alpha[i] = 0.1 * float64(i+1)
		}
		for j := 0; j < bt.N*bt.K; j++ {
			ph[1][j] = 3 * float64(j%3-1)
		}
		alpha[1] = 400
		p := testbackend.UploadRows(t, bt.be, ph, bt.Dim())
		if err := bt.Step(x, x, p, alpha); err != nil {
			t.Fatal(err)
		}
		got := testbackend.DownloadRows(t, bt.be, x)
		var worstS float64
		floored := false
		for i, m := range ms {
			want := make([]float64, dim)
			NewCollapsed(m).Step(want, xs[i], ph[i], alpha[i])
			e := numtest.MaxRel(got[i], want, 0)
			if !(e <= 1e-12) {
				t.Errorf("%s run %d: step rel. error %.2g", name, i, e)
			}
			worstS = math.Max(worstS, e)
			for j := 0; j < bt.N*bt.K; j += bt.K {
				mx := math.Inf(-1)
				for k := range bt.K {
					mx = math.Max(mx, xs[i][j+k]+alpha[i]*ph[i][j+k])
				}
				for k := range bt.K {
					floored = floored || xs[i][j+k]+alpha[i]*ph[i][j+k] < mx-700
				}
			}
		}
		if !floored {
			t.Errorf("%s: the step never reached the −700 floor", name)
		}
		t.Logf("%s: worst relative error of the step %.2g", name, worstS)
		for _, v := range []*tensor.Tensor{x, g, gt, p} {
			be.Free(v)
		}
		bt.Close()
	}
}
