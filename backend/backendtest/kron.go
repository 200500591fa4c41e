package backendtest

import (
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// Conformance of the damped K-FAC solve vec(X) = ((A + γI) ⊗ (B + γI))⁻¹ vec(G), column-major vec (paper 000
// eqs. (5.7)–(5.8), with damping γ for rank-deficient factors).

func init() {
	register("kron", testKron)
	registerBench("kron", benchKron)
}

// refKron is the independent reference: the dense mn×mn Kronecker product (A+γI) ⊗ (B+γI) and an LU solve of
// vec(G) stacked column by column.
func refKron(t testing.TB, a, bm, g *mat.Dense, damping float64) *mat.Dense {
	m, n := g.Dims()
	ad, bd := mat.DenseCopyOf(a), mat.DenseCopyOf(bm)
	for i := 0; i < n; i++ {
		ad.Set(i, i, ad.At(i, i)+damping)
	}
	for i := 0; i < m; i++ {
		bd.Set(i, i, bd.At(i, i)+damping)
	}
	var k mat.Dense
	k.Kronecker(ad, bd) // block (i, j) is a_ij·B: the matrix of X ↦ B X Aᵀ on column-major vec(X)
	vec := mat.NewVecDense(m*n, nil)
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			vec.SetVec(j*m+i, g.At(i, j))
		}
	}
	var x mat.VecDense
	if err := x.SolveVec(&k, vec); err != nil {
		t.Fatalf("reference solve: %v", err)
	}
	out := mat.NewDense(m, n, nil)
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			out.Set(i, j, x.AtVec(j*m+i))
		}
	}
	return out
}

func runKron(t *testing.T, b backend.Backend, f backend.KronSolveFunc, a, bm, g *tensor.Tensor, damping float64) []*mat.Dense {
	t.Helper()
	dst, err := b.Alloc(g.Shape())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free(dst)
	if err := f(b, dst, a, bm, g, damping); err != nil {
		t.Fatalf("kron solve: %v", err)
	}
	return geoDown(t, b, dst)
}

func testKron(t *testing.T, b backend.Backend) {
	kron := func(b backend.Backend, dst, a, bm, g *tensor.Tensor, damping float64) error {
		return backend.KronSolve(b, dst, a, bm, g, damping)
	}
	// Relative Frobenius error ≤ 1e-12 against the dense solve, for factors with cond ≤ 10 (so the mn×mn system
	// has cond ≤ 100); every kernel against the reference op to the same tolerance.
	const tol = 1e-12
	for _, c := range []struct {
		batch, ba, bb, m, n int
		damping             float64
	}{
		{1, 1, 1, 1, 1, 0}, {1, 1, 1, 3, 3, 0}, {2, 2, 2, 4, 2, 0.1}, {3, 1, 3, 2, 5, 0}, {3, 3, 1, 6, 4, 0.01},
		{4, 1, 1, 10, 7, 0}, {10000, 10000, 1, 2, 3, 0.05}, {1, 1, 1, 30, 20, 1e-3},
		// Orders 32 and 33 (warp and block-size steps of GPU kernels), and one row against 40 columns.
		{1, 1, 1, 32, 33, 1e-3}, {2, 1, 2, 1, 40, 0},
	} {
		name := fmt.Sprintf("match/%dx%dx%d/a-batch=%d/b-batch=%d/damping=%g", c.batch, c.m, c.n, c.ba, c.bb, c.damping)
		t.Run(name, func(t *testing.T) {
			r := geoRNG(uint64(c.m*100 + c.n + c.batch))
			as, bs, gs := make([]*mat.Dense, c.ba), make([]*mat.Dense, c.bb), make([]*mat.Dense, c.batch)
			for i := range as {
				as[i] = geoSPD(r, c.n, 10, 0.5+r.Float64())
			}
			for i := range bs {
				bs[i] = geoSPD(r, c.m, 10, 0.5+r.Float64())
			}
			for i := range gs {
				gs[i] = normalDense(r, c.m, c.n, 1)
			}
			ad, bd, gd := geoUp(t, b, as), geoUp(t, b, bs), geoUp(t, b, gs)
			defer b.Free(ad)
			defer b.Free(bd)
			defer b.Free(gd)
			got := runKron(t, b, kron, ad, bd, gd, c.damping)
			var worst float64
			for i := range got {
				want := refKron(t, as[min(i, c.ba-1)], bs[min(i, c.bb-1)], gs[i], c.damping)
				worst = max(worst, geoRelErr(got[i], want))
			}
			t.Logf("rel err %.2e", worst)
			if worst > tol {
				t.Fatalf("relative error %.3g > %g", worst, tol)
			}
			ref := runKron(t, b, backend.KronSolveOp.Reference(), ad, bd, gd, c.damping)
			for _, k := range backend.KronSolveOp.Kernels(b, gd.Shape()) {
				kout := runKron(t, b, k.Fn, ad, bd, gd, c.damping)
				for i := range kout {
					if e := geoRelErr(kout[i], ref[i]); e > tol {
						t.Fatalf("kernel %s batch %d: rel err %.3g vs reference op", k.Name, i, e)
					}
				}
			}
		})
	}

	t.Run("singular-damped", func(t *testing.T) {
		// Rank-deficient Fisher factors (S < d samples give factors of rank ≤ S): the damped solve succeeds and matches
		// the dense reference; undamped, it is an error naming the factor.
		r := geoRNG(40)
		const m, n = 5, 6
		za, zb := normalDense(r, n, 2, 1), normalDense(r, m, 3, 1)
		var a, bm mat.Dense
		a.Mul(za, za.T())
		bm.Mul(zb, zb.T())
		g := normalDense(r, m, n, 1)
		ad, bd, gd := geoUp(t, b, []*mat.Dense{&a}), geoUp(t, b, []*mat.Dense{&bm}), geoUp(t, b, []*mat.Dense{g})
		defer b.Free(ad)
		defer b.Free(bd)
		defer b.Free(gd)
		got := runKron(t, b, kron, ad, bd, gd, 0.5)[0]
		if e := geoRelErr(got, refKron(t, &a, &bm, g, 0.5)); e > tol {
			t.Fatalf("damped singular factors: rel err %.3g", e)
		}
		dst := upload(t, b, tensor.NewHost(1, m, n))
		defer b.Free(dst)
		geoSentinel(t, b, dst, 7)
		// Make B safely SPD so that only A fails, then the other way round.
		good := geoUp(t, b, []*mat.Dense{geoSPD(r, m, 2, 1)})
		defer b.Free(good)
		wantErr(t, "singular a", backend.KronSolve(b, dst, ad, good, gd, 0), backend.ErrNotPositiveDefinite, "a", 0)
		goodA := geoUp(t, b, []*mat.Dense{geoSPD(r, n, 2, 1)})
		defer b.Free(goodA)
		wantErr(t, "singular b", backend.KronSolve(b, dst, goodA, bd, gd, 0), backend.ErrNotPositiveDefinite, "b", 0)
		geoUntouched(t, b, dst, 7)
	})

	t.Run("alias", func(t *testing.T) {
		r := geoRNG(41)
		const m, n = 4, 3
		a, bm := geoSPD(r, n, 5, 1), geoSPD(r, m, 5, 1)
		gs := []*mat.Dense{normalDense(r, m, n, 1), normalDense(r, m, n, 1)}
		ad, bd, gd := geoUp(t, b, []*mat.Dense{a}), geoUp(t, b, []*mat.Dense{bm}), geoUp(t, b, gs)
		defer b.Free(ad)
		defer b.Free(bd)
		defer b.Free(gd)
		if err := backend.KronSolve(b, gd, ad, bd, gd, 0.1); err != nil {
			t.Fatal(err)
		}
		for i, g := range geoDown(t, b, gd) {
			if e := geoRelErr(g, refKron(t, a, bm, gs[i], 0.1)); e > tol {
				t.Fatalf("dst = g, batch %d: rel err %.3g", i, e)
			}
		}
	})

	t.Run("errors", func(t *testing.T) {
		a, bm, g := upload(t, b, tensor.NewHost(2, 3, 3)), upload(t, b, tensor.NewHost(2, 4, 4)), upload(t, b, tensor.NewHost(2, 4, 3))
		defer b.Free(a)
		defer b.Free(bm)
		defer b.Free(g)
		if err := b.AddDiag(a, 1); err != nil {
			t.Fatal(err)
		}
		if err := b.AddDiag(bm, 1); err != nil {
			t.Fatal(err)
		}
		dst := upload(t, b, tensor.NewHost(2, 4, 3))
		defer b.Free(dst)
		geoSentinel(t, b, dst, 7)
		for _, damping := range []float64{-1e-3, math.NaN(), math.Inf(1)} {
			wantErr(t, fmt.Sprintf("damping %g", damping), backend.KronSolve(b, dst, a, bm, g, damping), backend.ErrDomain, "damping", -1)
		}
		for _, c := range []struct {
			name    string
			a, b, g tensor.Shape
			operand string
		}{
			{"a order", tensor.Shape{Batch: 2, Rows: 4, Cols: 4}, tensor.Shape{Batch: 2, Rows: 4, Cols: 4}, tensor.Shape{Batch: 2, Rows: 4, Cols: 3}, "a"},
			{"b order", tensor.Shape{Batch: 2, Rows: 3, Cols: 3}, tensor.Shape{Batch: 2, Rows: 3, Cols: 3}, tensor.Shape{Batch: 2, Rows: 4, Cols: 3}, "b"},
			{"a batch", tensor.Shape{Batch: 3, Rows: 3, Cols: 3}, tensor.Shape{Batch: 2, Rows: 4, Cols: 4}, tensor.Shape{Batch: 2, Rows: 4, Cols: 3}, "a"},
			{"a not square", tensor.Shape{Batch: 2, Rows: 3, Cols: 2}, tensor.Shape{Batch: 2, Rows: 4, Cols: 4}, tensor.Shape{Batch: 2, Rows: 4, Cols: 3}, "a"},
			{"g vs dst", tensor.Shape{Batch: 2, Rows: 3, Cols: 3}, tensor.Shape{Batch: 2, Rows: 4, Cols: 4}, tensor.Shape{Batch: 1, Rows: 4, Cols: 3}, "dst"},
		} {
			ta := upload(t, b, tensor.NewHost(c.a.Batch, c.a.Rows, c.a.Cols))
			tb := upload(t, b, tensor.NewHost(c.b.Batch, c.b.Rows, c.b.Cols))
			tg := upload(t, b, tensor.NewHost(c.g.Batch, c.g.Rows, c.g.Cols))
			wantErr(t, c.name, backend.KronSolve(b, dst, ta, tb, tg, 0.1), backend.ErrShape, c.operand, -1)
			b.Free(ta)
			b.Free(tb)
			b.Free(tg)
		}
		wantErr(t, "nil g", backend.KronSolve(b, dst, a, bm, nil, 0.1), backend.ErrShape, "g", -1)
		geoUntouched(t, b, dst, 7)
	})
}

// Benchmarks at m = n = 10 (batched), 100 and 300. Nominal flops per item: two Cholesky factorisations
// (m³ + n³)/3, the left solve 2m²n and the right solve 2mn². Bytes: A, B and G read, dst written.
func benchKron(b *testing.B, be backend.Backend) {
	for _, c := range []struct {
		class       string
		batch, m, n int
	}{{"small", 1000, 10, 10}, {"medium", 1, 100, 100}, {"large", 1, 300, 300}} {
		r := geoRNG(uint64(c.m))
		a, bm := geoSPD(r, c.n, 100, 1), geoSPD(r, c.m, 100, 1)
		gs := make([]*mat.Dense, c.batch)
		for i := range gs {
			gs[i] = normalDense(r, c.m, c.n, 1)
		}
		as, bs := make([]*mat.Dense, c.batch), make([]*mat.Dense, c.batch)
		for i := range as {
			as[i], bs[i] = a, bm
		}
		ad, bd, gd := geoUp(b, be, as), geoUp(b, be, bs), geoUp(b, be, gs)
		dst, err := be.Alloc(gd.Shape())
		if err != nil {
			b.Fatal(err)
		}
		m, n := float64(c.m), float64(c.n)
		flops := float64(c.batch) * ((m*m*m+n*n*n)/3 + 2*m*m*n + 2*m*n*n)
		bytes := 8 * float64(c.batch) * (m*m + n*n + 2*m*n)
		b.Run(fmt.Sprintf("solve/%s/%dx%dx%d", c.class, c.batch, c.m, c.n), func(b *testing.B) {
			sec := secondsPerCall(b, be, func() error { return backend.KronSolve(be, dst, ad, bd, gd, 1e-3) })
			b.ReportMetric(flops/sec/1e9, "GFLOP/s")
			b.ReportMetric(bytes/sec/1e9, "GB/s")
		})
		be.Free(ad)
		be.Free(bd)
		be.Free(gd)
		be.Free(dst)
	}
}
