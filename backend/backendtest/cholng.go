package backendtest

import (
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// Conformance of the Cholesky-factor natural-gradient kernels (paper 003 Lemma 1 / Theorem 2):
// CholNGTri dst = α·Λ·dbar(lower(x yᵀ)) and LowerOuter dst = α·lower(x yᵀ), against dense float64 references.

func init() {
	register("cholng", testCholNG)
	registerBench("cholng", benchCholNG)
}

// refCholNGTri is the dense reference: H = x yᵀ, keep the lower triangle, halve its diagonal, multiply by the lower
// triangle of Λ on the left, scale by α.
func refCholNGTri(l *mat.Dense, x, y []float64, alpha float64, half bool) *mat.Dense {
	d := len(x)
	h := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j <= i; j++ {
			v := alpha * x[i] * y[j]
			if i == j && half {
				v /= 2
			}
			h.Set(i, j, v)
		}
	}
	if l == nil {
		return h
	}
	lo := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j <= i; j++ {
			lo.Set(i, j, l.At(i, j))
		}
	}
	var out mat.Dense
	out.Mul(lo, h)
	return &out
}

func cholngVecs(r interface{ NormFloat64() float64 }, n, d int) ([]*mat.Dense, [][]float64) {
	ms := make([]*mat.Dense, n)
	vs := make([][]float64, n)
	for i := range ms {
		vs[i] = make([]float64, d)
		for k := range vs[i] {
			vs[i][k] = r.NormFloat64()
		}
		ms[i] = mat.NewDense(d, 1, append([]float64(nil), vs[i]...))
	}
	return ms, vs
}

func testCholNG(t *testing.T, b backend.Backend) {
	// Relative Frobenius error ≤ 1e-13 against the dense product (d ≤ 200, entries O(1): the scan and the product
	// sum the same O(d) terms in different orders); every kernel against the reference op to the same tolerance.
	const tol = 1e-13
	for _, c := range []struct {
		batch, bl, bx, by, d int
		alpha                float64
	}{
		{1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 5, -1}, {3, 3, 3, 3, 7, 0.5}, {4, 1, 4, 4, 6, 1}, {2, 2, 1, 2, 9, -2},
		{500, 500, 500, 500, 3, 1}, {1, 1, 1, 1, 200, -1},
	} {
		name := fmt.Sprintf("match/%dx%d/l=%d/x=%d/y=%d/alpha=%g", c.batch, c.d, c.bl, c.bx, c.by, c.alpha)
		t.Run(name, func(t *testing.T) {
			r := geoRNG(uint64(c.d*1000 + c.batch))
			ls := make([]*mat.Dense, c.bl)
			for i := range ls {
				ls[i] = normalDense(r, c.d, c.d, 1) // full: the kernels must not read the strict upper triangle
				for k := 0; k < c.d; k++ {
					if r.Float64() < 0.3 {
						ls[i].Set(k, k, -ls[i].At(k, k)) // mixed-sign diagonal (Lemma 1 needs only an invertible Λ)
					}
				}
			}
			xm, xv := cholngVecs(r, c.bx, c.d)
			ym, yv := cholngVecs(r, c.by, c.d)
			ld, xd, yd := geoUp(t, b, ls), geoUp(t, b, xm), geoUp(t, b, ym)
			defer b.Free(ld)
			defer b.Free(xd)
			defer b.Free(yd)
			dst, err := b.Alloc(tensor.Shape{Batch: c.batch, Rows: c.d, Cols: c.d})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Free(dst)
			geoSentinel(t, b, dst, math.NaN()) // the strict upper triangle must be written (to 0)
			if err := backend.CholNGTri(b, dst, ld, xd, yd, c.alpha); err != nil {
				t.Fatal(err)
			}
			got := geoDown(t, b, dst)
			worst := 0.0
			for i := range got {
				want := refCholNGTri(ls[min(i, c.bl-1)], xv[min(i, c.bx-1)], yv[min(i, c.by-1)], c.alpha, true)
				worst = max(worst, geoRelErr(got[i], want))
			}
			if worst > tol {
				t.Fatalf("CholNGTri: rel err %.3g > %g", worst, tol)
			}
			if err := backend.LowerOuter(b, dst, xd, yd, c.alpha); err != nil {
				t.Fatal(err)
			}
			got = geoDown(t, b, dst)
			for i := range got {
				want := refCholNGTri(nil, xv[min(i, c.bx-1)], yv[min(i, c.by-1)], c.alpha, false)
				if e := geoRelErr(got[i], want); e > tol {
					t.Fatalf("LowerOuter batch %d: rel err %.3g", i, e)
				}
			}
			// Every kernel against the reference op.
			ref, _ := b.Alloc(dst.Shape())
			defer b.Free(ref)
			if err := backend.CholNGTriOp.Reference()(b, ref, ld, xd, yd, c.alpha); err != nil {
				t.Fatal(err)
			}
			refH := geoDown(t, b, ref)
			for _, k := range backend.CholNGTriOp.Kernels(b, ld.Shape()) {
				geoSentinel(t, b, dst, math.NaN())
				if err := k.Fn(b, dst, ld, xd, yd, c.alpha); err != nil {
					t.Fatal(err)
				}
				for i, g := range geoDown(t, b, dst) {
					if e := geoRelErr(g, refH[i]); e > tol {
						t.Fatalf("kernel %s batch %d: rel err %.3g vs reference", k.Name, i, e)
					}
				}
			}
			if err := backend.LowerOuterOp.Reference()(b, ref, xd, yd, c.alpha); err != nil {
				t.Fatal(err)
			}
			refH = geoDown(t, b, ref)
			for _, k := range backend.LowerOuterOp.Kernels(b, dst.Shape()) {
				geoSentinel(t, b, dst, math.NaN())
				if err := k.Fn(b, dst, xd, yd, c.alpha); err != nil {
					t.Fatal(err)
				}
				for i, g := range geoDown(t, b, dst) {
					if e := geoRelErr(g, refH[i]); e > tol {
						t.Fatalf("kernel %s batch %d: rel err %.3g vs reference", k.Name, i, e)
					}
				}
			}
		})
	}

	t.Run("errors", func(t *testing.T) {
		l := upload(t, b, tensor.NewHost(2, 4, 4))
		x := upload(t, b, tensor.NewHost(2, 4, 1))
		dst := upload(t, b, tensor.NewHost(2, 4, 4))
		defer b.Free(l)
		defer b.Free(x)
		defer b.Free(dst)
		geoSentinel(t, b, dst, 7)
		bad3 := upload(t, b, tensor.NewHost(3, 4, 1))
		short := upload(t, b, tensor.NewHost(2, 3, 1))
		rect := upload(t, b, tensor.NewHost(2, 4, 3))
		defer b.Free(bad3)
		defer b.Free(short)
		defer b.Free(rect)
		wantErr(t, "nil l", backend.CholNGTri(b, dst, nil, x, x, 1), backend.ErrShape, "l", -1)
		wantErr(t, "x batch", backend.CholNGTri(b, dst, l, bad3, x, 1), backend.ErrShape, "x", -1)
		wantErr(t, "y length", backend.CholNGTri(b, dst, l, x, short, 1), backend.ErrShape, "y", -1)
		wantErr(t, "dst not square", backend.CholNGTri(b, rect, l, x, x, 1), backend.ErrShape, "dst", -1)
		wantErr(t, "l order", backend.CholNGTri(b, dst, rect, x, x, 1), backend.ErrShape, "l", -1)
		wantErr(t, "alpha", backend.CholNGTri(b, dst, l, x, x, math.NaN()), backend.ErrDomain, "alpha", -1)
		wantErr(t, "outer x", backend.LowerOuter(b, dst, short, x, 1), backend.ErrShape, "x", -1)
		geoUntouched(t, b, dst, 7)
	})
}

// Benchmarks of CholNGTri at d = 50, 200, 1000 (one item; the dense 1b/2b per-iteration kernel) and a batch of
// small blocks. Nominal work: d² multiply-adds; bytes: Λ's lower triangle read, dst written.
func benchCholNG(b *testing.B, be backend.Backend) {
	for _, c := range []struct{ batch, d int }{{1, 50}, {1, 200}, {1, 1000}, {1000, 4}} {
		r := geoRNG(uint64(c.d))
		ls := make([]*mat.Dense, c.batch)
		for i := range ls {
			ls[i] = normalDense(r, c.d, c.d, 1)
		}
		xm, _ := cholngVecs(r, c.batch, c.d)
		ld, xd := geoUp(b, be, ls), geoUp(b, be, xm)
		dst, err := be.Alloc(ld.Shape())
		if err != nil {
			b.Fatal(err)
		}
		bytes := 8 * float64(c.batch) * float64(c.d*c.d)
		b.Run(fmt.Sprintf("tri/%dx%d", c.batch, c.d), func(b *testing.B) {
			sec := secondsPerCall(b, be, func() error { return backend.CholNGTri(be, dst, ld, xd, xd, 1) })
			b.ReportMetric(bytes/sec/1e9, "GB/s")
		})
		be.Free(ld)
		be.Free(xd)
		be.Free(dst)
	}
}
