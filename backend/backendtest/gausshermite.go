package backendtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// Conformance of the Gauss–Hermite tanh moments and their reverse pass (gh.tanh, gh.tanh_back) against the sums
// written out per element in float64.

func init() {
	register("gausshermite", testGaussHermite)
	registerBench("gausshermite", benchGaussHermite)
}

// ghAlloc allocates a tensor freed when the test ends.
func ghAlloc(t *testing.T, b backend.Backend, s tensor.Shape) *tensor.Tensor {
	d := mustAlloc(t, b, s)
	t.Cleanup(func() { b.Free(d) })
	return d
}

// ghRuleHost returns Q nodes spread over [−3, 3] and positive weights: the operations take any rule.
func ghRuleHost(r *rand.Rand, q int) *tensor.Tensor {
	zw := tensor.NewHost(1, 2, q)
	for i := range q {
		zw.Set(0, 0, i, -3+6*float64(i)/float64(max(q-1, 1)))
		zw.Set(0, 1, i, 0.05+r.Float64())
	}
	return zw
}

// testGaussHermite checks every implementation of both operations on batches of 1–3 items of R × H blocks (odd
// sizes, a padded y whose rows are not contiguous), Q = 1, 3 and 10, against the per-element sums: node values,
// m1, m2, gy and gsum to 1e-13 relative to their size (tanh differs between libraries in the last bits). Then the
// shape errors.
func testGaussHermite(t *testing.T, b backend.Backend) {
	r := rand.New(rand.NewPCG(5, 21))
	for _, c := range []struct{ batch, rows, cols, q int }{{1, 1, 1, 1}, {2, 7, 5, 3}, {3, 33, 20, 10}, {1, 300, 30, 10}} {
		s := tensor.Shape{Batch: c.batch, Rows: c.rows, Cols: c.cols}
		hy, hsd, hgk, hgm := randHost(r, c.batch, c.rows, c.cols), randHost(r, c.batch, c.rows, c.cols),
			randHost(r, c.batch, c.rows, c.cols), randHost(r, c.batch, c.rows, c.cols)
		for i, v := range hy.Storage().Host() {
			hy.Storage().Host()[i] = 3 * v // pre-activations of a few units, some saturating
		}
		for i, v := range hsd.Storage().Host() {
			hsd.Storage().Host()[i] = math.Abs(v)
		}
		hzw := ghRuleHost(r, c.q)
		// The sums per element, in float64.
		wu, wm1, wm2 := tensor.NewHost(c.batch, c.q*c.rows, c.cols), tensor.NewHost(c.batch, c.rows, c.cols),
			tensor.NewHost(c.batch, c.rows, c.cols)
		wgy, wgs := tensor.NewHost(c.batch, c.rows, c.cols), tensor.NewHost(c.batch, c.rows, c.cols)
		for bb := range c.batch {
			for i := range c.rows {
				for j := range c.cols {
					var m1, m2, gy, gs float64
					for q := range c.q {
						z, w := hzw.At(0, 0, q), hzw.At(0, 1, q)
						u := math.Tanh(hy.At(bb, i, j) + z*hsd.At(bb, i, j))
						wu.Set(bb, q*c.rows+i, j, u)
						m1 += w * u
						m2 += w * u * u
						d := (1 - u*u) * (hgk.At(bb, i, j)*u + hgm.At(bb, i, j))
						gy += w * d
						gs += w * z * d
					}
					wm1.Set(bb, i, j, m1)
					wm2.Set(bb, i, j, m2)
					wgy.Set(bb, i, j, gy)
					wgs.Set(bb, i, j, gs)
				}
			}
		}
		zw := upload(t, b, hzw)
		for _, im := range implsOf(backend.GHTanhOp, b, s) {
			what := fmt.Sprintf("gh.tanh %s %v Q=%d", im.name, s, c.q)
			y := chainPadded(t, b, hy)
			sd, u := upload(t, b, hsd), ghAlloc(t, b, tensor.Shape{Batch: c.batch, Rows: c.q * c.rows, Cols: c.cols})
			m1, m2 := ghAlloc(t, b, s), ghAlloc(t, b, s)
			if err := im.fn(b, m1, m2, u, y, sd, zw); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			near(t, what+" u", download(t, b, u), wu, 1e-13, 1)
			near(t, what+" m1", download(t, b, m1), wm1, 1e-13, 1+maxAbs(wm1))
			near(t, what+" m2", download(t, b, m2), wm2, 1e-13, 1+maxAbs(wm2))
		}
		u := upload(t, b, wu)
		gk, gm := upload(t, b, hgk), upload(t, b, hgm)
		for _, im := range implsOf(backend.GHTanhBackOp, b, s) {
			what := fmt.Sprintf("gh.tanh_back %s %v Q=%d", im.name, s, c.q)
			gy, gs := ghAlloc(t, b, s), ghAlloc(t, b, s)
			if err := im.fn(b, gy, gs, u, gk, gm, zw); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			near(t, what+" gy", download(t, b, gy), wgy, 1e-13, 1+maxAbs(wgy))
			near(t, what+" gsum", download(t, b, gs), wgs, 1e-13, 1+maxAbs(wgs))
		}
	}
	s := tensor.Shape{Batch: 2, Rows: 3, Cols: 4}
	x, zw := ghAlloc(t, b, s), upload(t, b, ghRuleHost(r, 3))
	u := ghAlloc(t, b, tensor.Shape{Batch: 2, Rows: 9, Cols: 4})
	short := ghAlloc(t, b, tensor.Shape{Batch: 2, Rows: 6, Cols: 4})
	wantErr(t, "gh.tanh short u", backend.GHTanh(b, x, x, short, x, x, zw), backend.ErrShape, "u", -1)
	wantErr(t, "gh.tanh zw 1×3×3", backend.GHTanh(b, x, x, u, x, x, ghAlloc(t, b, tensor.Shape{Batch: 1, Rows: 3, Cols: 3})),
		backend.ErrShape, "zw", -1)
	wantErr(t, "gh.tanh sd", backend.GHTanh(b, x, x, u, x, short, zw), backend.ErrShape, "sd", -1)
	wantErr(t, "gh.tanh_back nil gm", backend.GHTanhBack(b, x, x, u, x, nil, zw), backend.ErrShape, "gm", -1)
	wantErr(t, "gh.tanh_back short u", backend.GHTanhBack(b, x, x, short, x, x, zw), backend.ErrShape, "u", -1)
}

// benchGaussHermite times both operations (the implementation Select picks, then the reference) on the batched
// NSSM's layer: 8 runs × 1000 steps × 20 hidden units, Q = 10. The rate is GB/s of the least traffic any
// implementation needs — forward: y and sd read, the Q node values and m1, m2 written; reverse: the node values, gk
// and gm read, gy and gsum written: 8(Q + 4) bytes per element each — to be read against the copy floor of
// benchFloors in the same run.
func benchGaussHermite(b *testing.B, be backend.Backend) {
	const Q = 10
	s := tensor.Shape{Batch: 8, Rows: 1000, Cols: 20}
	r := rand.New(rand.NewPCG(3, 4))
	y, sd := upload(b, be, randHost(r, s.Batch, s.Rows, s.Cols)), upload(b, be, randHost(r, s.Batch, s.Rows, s.Cols))
	gk, gm := upload(b, be, randHost(r, s.Batch, s.Rows, s.Cols)), upload(b, be, randHost(r, s.Batch, s.Rows, s.Cols))
	if err := be.Map(sd, backend.Abs, 1, sd); err != nil {
		b.Fatal(err)
	}
	zw := upload(b, be, ghRuleHost(r, Q))
	u := mustAlloc(b, be, tensor.Shape{Batch: s.Batch, Rows: Q * s.Rows, Cols: s.Cols})
	o1, o2 := mustAlloc(b, be, s), mustAlloc(b, be, s)
	defer func() {
		for _, t := range []*tensor.Tensor{y, sd, gk, gm, zw, u, o1, o2} {
			be.Free(t)
		}
	}()
	bytes := 8 * float64(Q+4) * float64(s.Len())
	timed := func(b *testing.B, f func() error) {
		b.ReportMetric(bytes/secondsPerCall(b, be, f)/1e9, "GB/s")
	}
	fwd, _ := backend.GHTanhOp.Select(be, s)
	back, _ := backend.GHTanhBackOp.Select(be, s)
	name := fmt.Sprintf("%dx%dx%d-Q%d", s.Batch, s.Rows, s.Cols, Q)
	b.Run("tanh/"+name, func(b *testing.B) { timed(b, func() error { return fwd(be, o1, o2, u, y, sd, zw) }) })
	b.Run("tanh-reference/"+name, func(b *testing.B) {
		timed(b, func() error { return backend.GHTanhOp.Reference()(be, o1, o2, u, y, sd, zw) })
	})
	b.Run("tanh_back/"+name, func(b *testing.B) { timed(b, func() error { return back(be, o1, o2, u, gk, gm, zw) }) })
	b.Run("tanh_back-reference/"+name, func(b *testing.B) {
		timed(b, func() error { return backend.GHTanhBackOp.Reference()(be, o1, o2, u, gk, gm, zw) })
	})
}
