package backendtest

import (
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// Conformance of the SPD retraction R_Σ(ξ) = Σ + ξ + ½ξΣ⁻¹ξ and the transport Γ_{S₁→S₂}(ξ) = EξEᵀ,
// E = (S₂S₁⁻¹)^{1/2} (paper 000 section 5.1).

func init() {
	register("spd", testSPD)
	registerBench("spd", benchSPD)
}

// refRetract is the independent reference: Σ + ξ + ½ ξ (Σ⁻¹ξ) with a gonum Cholesky solve, symmetrised.
func refRetract(t testing.TB, sigma, xi *mat.Dense) *mat.Dense {
	d, _ := sigma.Dims()
	var ch mat.Cholesky
	if !ch.Factorize(mat.NewSymDense(d, append([]float64(nil), sigma.RawMatrix().Data...))) {
		t.Fatal("reference: Σ not SPD")
	}
	var sx, q mat.Dense
	if err := ch.SolveTo(&sx, xi); err != nil {
		t.Fatal(err)
	}
	q.Mul(xi, &sx)
	q.Scale(0.5, &q)
	q.Add(&q, sigma)
	q.Add(&q, xi)
	return symPart(&q)
}

func symPart(a mat.Matrix) *mat.Dense {
	var s mat.Dense
	s.Add(a, a.T())
	s.Scale(0.5, &s)
	return &s
}

// symFn returns V f(Λ) Vᵀ for a symmetric matrix.
func symFn(t testing.TB, a *mat.Dense, f func(float64) float64) *mat.Dense {
	d, _ := a.Dims()
	var es mat.EigenSym
	if !es.Factorize(mat.NewSymDense(d, append([]float64(nil), symPart(a).RawMatrix().Data...)), true) {
		t.Fatal("reference: eigen-decomposition failed")
	}
	var v mat.Dense
	es.VectorsTo(&v)
	lam := es.Values(nil)
	out := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			var s float64
			for k := 0; k < d; k++ {
				s += v.At(i, k) * f(lam[k]) * v.At(j, k)
			}
			out.Set(i, j, s)
		}
	}
	return out
}

// refTransport is the independent reference through symmetric square roots (no Cholesky):
// E = S₁^{1/2} (S₁^{-1/2} S₂ S₁^{-1/2})^{1/2} S₁^{-1/2}, which satisfies E² = S₂S₁⁻¹ and has positive eigenvalues.
func refTransport(t testing.TB, s1, s2, xi *mat.Dense) (gamma, e *mat.Dense) {
	h := symFn(t, s1, math.Sqrt)
	hi := symFn(t, s1, func(x float64) float64 { return 1 / math.Sqrt(x) })
	var n mat.Dense
	n.Mul(hi, s2)
	n.Mul(&n, hi)
	nh := symFn(t, &n, math.Sqrt)
	e = new(mat.Dense)
	e.Mul(h, nh)
	e.Mul(e, hi)
	gamma = new(mat.Dense)
	gamma.Mul(e, xi)
	gamma.Mul(gamma, e.T())
	return symPart(gamma), e
}

// whitenedMin returns λ_min(L⁻¹ R L⁻ᵀ) with Σ = L Lᵀ.
func whitenedMin(t testing.TB, sigma, r *mat.Dense) float64 {
	d, _ := sigma.Dims()
	var ch mat.Cholesky
	if !ch.Factorize(mat.NewSymDense(d, append([]float64(nil), sigma.RawMatrix().Data...))) {
		t.Fatal("Σ not SPD")
	}
	var l mat.TriDense
	ch.LTo(&l)
	lt := blas64.Triangular{Uplo: blas.Lower, Diag: blas.NonUnit, N: d, Stride: l.RawTriangular().Stride, Data: l.RawTriangular().Data}
	m := mat.DenseCopyOf(r)
	blas64.Trsm(blas.Left, blas.NoTrans, 1, lt, m.RawMatrix())
	blas64.Trsm(blas.Right, blas.Trans, 1, lt, m.RawMatrix())
	var es mat.EigenSym
	if !es.Factorize(mat.NewSymDense(d, append([]float64(nil), symPart(m).RawMatrix().Data...)), false) {
		t.Fatal("eigen-decomposition failed")
	}
	return es.Values(nil)[0]
}

func exactlySymmetric(a *mat.Dense) bool {
	d, _ := a.Dims()
	for i := 0; i < d; i++ {
		for j := 0; j < i; j++ {
			if a.At(i, j) != a.At(j, i) {
				return false
			}
		}
	}
	return true
}

type spdCase struct {
	batch, d int
	cond     float64
	seed     uint64
}

func (c spdCase) String() string { return fmt.Sprintf("%dx%dx%d/cond=%g", c.batch, c.d, c.d, c.cond) }

func runSPDRetract(t *testing.T, b backend.Backend, f backend.SPDRetractFunc, sigma, xi *tensor.Tensor) []*mat.Dense {
	t.Helper()
	dst, err := b.Alloc(tensor.Shape{Batch: max(sigma.Batch(), xi.Batch()), Rows: sigma.Rows(), Cols: sigma.Cols()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free(dst)
	if err := f(b, dst, sigma, xi); err != nil {
		t.Fatalf("spd retraction: %v", err)
	}
	return geoDown(t, b, dst)
}

func runSPDTransport(t *testing.T, b backend.Backend, f backend.SPDTransportFunc, s1, s2, xi *tensor.Tensor) []*mat.Dense {
	t.Helper()
	dst, err := b.Alloc(tensor.Shape{Batch: max(s1.Batch(), s2.Batch(), xi.Batch()), Rows: xi.Rows(), Cols: xi.Cols()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free(dst)
	if err := f(b, dst, s1, s2, xi); err != nil {
		t.Fatalf("spd transport: %v", err)
	}
	return geoDown(t, b, dst)
}

func testSPD(t *testing.T, b backend.Backend) {
	retract := func(b backend.Backend, dst, s, x *tensor.Tensor) error { return backend.SPDRetract(b, dst, s, x) }
	transport := func(b backend.Backend, dst, s1, s2, x *tensor.Tensor) error {
		return backend.SPDTransport(b, dst, s1, s2, x)
	}

	// Retraction against the independent reference, relative Frobenius error ≤ 1e-13·cond(Σ) (the Σ⁻¹ξ solve
	// loses κ digits), and every registered kernel against the reference op to the same tolerance.
	// Orders 32, 33 and 62, 63 straddle the block-size and shared-memory limits of GPU kernels.
	for _, c := range []spdCase{{1, 1, 1, 1}, {3, 2, 10, 2}, {5, 5, 1e3, 3}, {2, 17, 1e4, 4}, {10000, 3, 100, 5}, {1, 60, 1e3, 6},
		{2, 32, 100, 19}, {3, 33, 100, 20}, {1, 62, 100, 21}, {1, 63, 100, 22}} {
		t.Run("retract/match/"+c.String(), func(t *testing.T) {
			r := geoRNG(c.seed)
			sig, xi := make([]*mat.Dense, c.batch), make([]*mat.Dense, c.batch)
			for i := range sig {
				sig[i] = geoSPD(r, c.d, c.cond, 1+r.Float64())
				xi[i] = geoSym(r, c.d, mat.Norm(sig[i], 2)*(0.1+r.Float64()))
			}
			sd, xd := geoUp(t, b, sig), geoUp(t, b, xi)
			defer b.Free(sd)
			defer b.Free(xd)
			tol := 1e-13 * c.cond
			got := runSPDRetract(t, b, retract, sd, xd)
			var worst float64
			for i := range got {
				worst = max(worst, geoRelErr(got[i], refRetract(t, sig[i], xi[i])))
				if !exactlySymmetric(got[i]) {
					t.Fatalf("batch %d: output not exactly symmetric", i)
				}
			}
			t.Logf("rel err %.2e (tol %.1e)", worst, tol)
			if worst > tol {
				t.Fatalf("relative error %.3g > %.3g", worst, tol)
			}
			ref := runSPDRetract(t, b, backend.SPDRetractOp.Reference(), sd, xd)
			for _, k := range backend.SPDRetractOp.Kernels(b, sd.Shape()) {
				kout := runSPDRetract(t, b, k.Fn, sd, xd)
				for i := range kout {
					if e := geoRelErr(kout[i], ref[i]); e > tol || !exactlySymmetric(kout[i]) {
						t.Fatalf("kernel %s batch %d: rel err %.3g vs reference op (tol %.3g), or not symmetric", k.Name, i, e, tol)
					}
				}
			}
		})
	}

	// R_Σ(ξ) ⪰ ½Σ for every symmetric ξ (1 + x + x²/2 ≥ ½ on the eigenvalues of Σ^{-1/2}ξΣ^{-1/2}): Cholesky of the
	// output succeeds and λ_min(L⁻¹RL⁻ᵀ) ≥ 0.5 − tol, with ‖ξ‖ from 1e-4 to 1e4 ‖Σ‖, random ξ and the extreme
	// ξ = −Σ (R = ½Σ exactly), for cond(Σ) up to 1e6 with tol = 1e-10. For cond(Σ) = 1e8 the whitening L⁻¹RL⁻ᵀ in the
	// test itself loses about cond·ε ≈ 1e-8, so there tol = 1e-6.
	for _, cond := range []float64{1, 1e3, 1e6, 1e8} {
		t.Run(fmt.Sprintf("retract/half-sigma/cond=%g", cond), func(t *testing.T) {
			tol := 1e-10
			if cond > 1e6 {
				tol = 1e-6
			}
			r := geoRNG(uint64(100 + math.Log10(cond)))
			var sig, xi []*mat.Dense
			for _, d := range []int{2, 7, 20} {
				for _, scale := range []float64{1e-4, 1, 1e2, 1e4} {
					s := geoSPD(r, d, cond, 1)
					sig = append(sig, s)
					xi = append(xi, geoSym(r, d, scale*mat.Norm(s, 2)))
				}
				s := geoSPD(r, d, cond, 1)
				var neg mat.Dense
				neg.Scale(-1, s)
				sig, xi = append(sig, s), append(xi, &neg)
			}
			// One batched call per dimension.
			lo := math.Inf(1)
			for start := 0; start < len(sig); start += 5 {
				sd, xd := geoUp(t, b, sig[start:start+5]), geoUp(t, b, xi[start:start+5])
				got := runSPDRetract(t, b, retract, sd, xd)
				b.Free(sd)
				b.Free(xd)
				for i, g := range got {
					if !exactlySymmetric(g) {
						t.Fatalf("output not exactly symmetric")
					}
					d, _ := g.Dims()
					var ch mat.Cholesky
					if !ch.Factorize(mat.NewSymDense(d, g.RawMatrix().Data)) {
						t.Fatalf("Cholesky of R_Σ(ξ) failed (d = %d, ‖ξ‖/‖Σ‖ = %.3g)", d, mat.Norm(xi[start+i], 2)/mat.Norm(sig[start+i], 2))
					}
					lo = min(lo, whitenedMin(t, sig[start+i], g))
				}
			}
			t.Logf("min λ(L⁻¹RL⁻ᵀ) = %.12f (want ≥ 0.5 − %g)", lo, tol)
			if lo < 0.5-tol {
				t.Fatalf("min whitened eigenvalue %.12f < 0.5 − %g", lo, tol)
			}
		})
	}

	t.Run("retract/zero", func(t *testing.T) {
		// R_Σ(0) = Σ (A3): Σ is exactly symmetric and Σ + 0 + 0 is exact, so the tolerance is 0.
		r := geoRNG(7)
		sig := []*mat.Dense{geoSPD(r, 6, 1e4, 3), geoSPD(r, 6, 10, 0.5)}
		sd, xd := geoUp(t, b, sig), geoUp(t, b, []*mat.Dense{mat.NewDense(6, 6, nil), mat.NewDense(6, 6, nil)})
		defer b.Free(sd)
		defer b.Free(xd)
		for i, g := range runSPDRetract(t, b, retract, sd, xd) {
			if e := geoMaxAbs(g, sig[i]); e != 0 {
				t.Fatalf("R_Σ(0) − Σ = %.3g", e)
			}
		}
	})

	t.Run("retract/second-order", func(t *testing.T) {
		// ‖R_Σ(tξ) − Exp_Σ(tξ)‖ = O(t³): ratio ∈ [7.5, 8.5] when t halves (R_Σ is second-order accurate), with
		// Exp_Σ(ξ) = Σ^{1/2} expm(Σ^{-1/2} ξ Σ^{-1/2}) Σ^{1/2} computed here by eigen-decompositions.
		r := geoRNG(8)
		sig, xi := geoSPD(r, 5, 10, 1), geoSym(r, 5, 1)
		h := symFn(t, sig, math.Sqrt)
		hi := symFn(t, sig, func(x float64) float64 { return 1 / math.Sqrt(x) })
		sd := geoUp(t, b, []*mat.Dense{sig})
		defer b.Free(sd)
		errAt := func(tt float64) float64 {
			var x, w mat.Dense
			x.Scale(tt, xi)
			w.Mul(hi, &x)
			w.Mul(&w, hi)
			ex := symFn(t, &w, math.Exp)
			ex.Mul(h, ex)
			ex.Mul(ex, h)
			xd := geoUp(t, b, []*mat.Dense{&x})
			defer b.Free(xd)
			g := runSPDRetract(t, b, retract, sd, xd)[0]
			var d mat.Dense
			d.Sub(g, ex)
			return mat.Norm(&d, 2)
		}
		for _, tt := range []float64{0.1, 0.02} {
			ratio := errAt(tt) / errAt(tt/2)
			t.Logf("t = %g: ratio %.4f", tt, ratio)
			if !(ratio >= 7.5 && ratio <= 8.5) {
				t.Fatalf("t = %g: ratio %.4f, want about 8", tt, ratio)
			}
		}
	})

	// Transport against the independent symmetric-square-root reference, relative error ≤ 1e-12·cond(S)/10
	// (cond ≤ 1e3), and kernels against the reference op. Orders 32, 33 and 51, 52 straddle GPU kernels' limits.
	for _, c := range []spdCase{{1, 1, 1, 11}, {4, 3, 10, 12}, {3, 8, 1e3, 13}, {10000, 3, 10, 14}, {1, 40, 100, 15},
		{2, 32, 100, 23}, {2, 33, 100, 24}, {1, 51, 100, 25}, {1, 52, 100, 26}} {
		t.Run("transport/match/"+c.String(), func(t *testing.T) {
			r := geoRNG(c.seed)
			s1, s2, xi := make([]*mat.Dense, c.batch), make([]*mat.Dense, c.batch), make([]*mat.Dense, c.batch)
			for i := range s1 {
				s1[i], s2[i] = geoSPD(r, c.d, c.cond, 1+r.Float64()), geoSPD(r, c.d, c.cond, 1+r.Float64())
				xi[i] = geoSym(r, c.d, 1)
			}
			d1, d2, dx := geoUp(t, b, s1), geoUp(t, b, s2), geoUp(t, b, xi)
			defer b.Free(d1)
			defer b.Free(d2)
			defer b.Free(dx)
			tol := 1e-13 * max(c.cond, 10)
			got := runSPDTransport(t, b, transport, d1, d2, dx)
			var worst float64
			for i := range got {
				g, _ := refTransport(t, s1[i], s2[i], xi[i])
				worst = max(worst, geoRelErr(got[i], g))
				if !exactlySymmetric(got[i]) {
					t.Fatalf("batch %d: output not exactly symmetric", i)
				}
			}
			t.Logf("rel err %.2e (tol %.1e)", worst, tol)
			if worst > tol {
				t.Fatalf("relative error %.3g > %.3g", worst, tol)
			}
			ref := runSPDTransport(t, b, backend.SPDTransportOp.Reference(), d1, d2, dx)
			for _, k := range backend.SPDTransportOp.Kernels(b, dx.Shape()) {
				kout := runSPDTransport(t, b, k.Fn, d1, d2, dx)
				for i := range kout {
					if e := geoRelErr(kout[i], ref[i]); e > tol || !exactlySymmetric(kout[i]) {
						t.Fatalf("kernel %s batch %d: rel err %.3g vs reference op (tol %.3g), or not symmetric", k.Name, i, e, tol)
					}
				}
			}
		})
	}

	t.Run("transport/identities", func(t *testing.T) {
		r := geoRNG(16)
		const d = 6
		// E² = S₂S₁⁻¹ (A4), checked on the reference E (relative 1e-12, cond ≤ 1e4) and, for the operation, through
		// Γ_{S₁→S₂}(S₁) = E S₁ Eᵀ = S₂ (the point transported along its own geodesic), to 1e-11 relative: the
		// operation whitens by L₁ (cond 1e4 costs about cond·ε).
		s1, s2 := geoSPD(r, d, 1e4, 1), geoSPD(r, d, 1e4, 2)
		_, e := refTransport(t, s1, s2, s1)
		var e2, want mat.Dense
		e2.Mul(e, e)
		var ch mat.Cholesky
		ch.Factorize(mat.NewSymDense(d, append([]float64(nil), s1.RawMatrix().Data...)))
		var inv mat.SymDense
		if err := ch.InverseTo(&inv); err != nil {
			t.Fatal(err)
		}
		want.Mul(s2, &inv)
		if er := geoRelErr(&e2, &want); er > 1e-12 {
			t.Fatalf("reference E² vs S₂S₁⁻¹: %.3g", er)
		}
		d1, d2 := geoUp(t, b, []*mat.Dense{s1}), geoUp(t, b, []*mat.Dense{s2})
		defer b.Free(d1)
		defer b.Free(d2)
		g := runSPDTransport(t, b, transport, d1, d2, d1)[0]
		er := geoRelErr(g, s2)
		t.Logf("Γ(S₁) vs S₂: %.2e", er)
		if er > 1e-11 {
			t.Fatalf("Γ_{S₁→S₂}(S₁) vs S₂: relative error %.3g > 1e-11", er)
		}

		// Γ_{S→S} = id to 1e-13 (A4), cond(S) = 100.
		s := geoSPD(r, d, 100, 1)
		xi := geoSym(r, d, 1)
		ds, dx := geoUp(t, b, []*mat.Dense{s}), geoUp(t, b, []*mat.Dense{xi})
		defer b.Free(ds)
		defer b.Free(dx)
		g = runSPDTransport(t, b, transport, ds, ds, dx)[0]
		er = geoRelErr(g, xi)
		t.Logf("Γ_{S→S}(ξ) vs ξ: %.2e", er)
		if er > 1e-13 {
			t.Fatalf("Γ_{S→S}(ξ) vs ξ: relative error %.3g > 1e-13", er)
		}

		// Isometry of the affine-invariant metric (A4): tr(S₂⁻¹Γa S₂⁻¹Γb) = tr(S₁⁻¹a S₁⁻¹b) to 1e-10 relative.
		s1, s2 = geoSPD(r, d, 1e3, 1), geoSPD(r, d, 1e3, 3)
		a, bb := geoSym(r, d, 1), geoSym(r, d, 1)
		d1b, d2b, da := geoUp(t, b, []*mat.Dense{s1}), geoUp(t, b, []*mat.Dense{s2}), geoUp(t, b, []*mat.Dense{a, bb})
		defer b.Free(d1b)
		defer b.Free(d2b)
		defer b.Free(da)
		ga := runSPDTransport(t, b, transport, d1b, d2b, da)
		metric := func(s, x, y *mat.Dense) float64 {
			var c mat.Cholesky
			c.Factorize(mat.NewSymDense(d, append([]float64(nil), s.RawMatrix().Data...)))
			var sx, sy, p mat.Dense
			if err := c.SolveTo(&sx, x); err != nil {
				t.Fatal(err)
			}
			if err := c.SolveTo(&sy, y); err != nil {
				t.Fatal(err)
			}
			p.Mul(&sx, &sy)
			return mat.Trace(&p)
		}
		before, after := metric(s1, a, bb), metric(s2, ga[0], ga[1])
		nb, na := metric(s1, a, a), metric(s2, ga[0], ga[0])
		er = math.Abs(after-before) / math.Sqrt(metric(s1, a, a)*metric(s1, bb, bb))
		t.Logf("isometry: <a,b> %.12g → %.12g (rel %.2e); <a,a> %.12g → %.12g", before, after, er, nb, na)
		if er > 1e-10 || math.Abs(na-nb) > 1e-10*nb {
			t.Fatalf("isometry: <a,b> %.15g → %.15g, <a,a> %.15g → %.15g", before, after, nb, na)
		}
	})

	t.Run("broadcast-and-alias", func(t *testing.T) {
		r := geoRNG(17)
		const d, n = 4, 5
		s1, s2 := geoSPD(r, d, 50, 1), geoSPD(r, d, 50, 2)
		xi := make([]*mat.Dense, n)
		for i := range xi {
			xi[i] = geoSym(r, d, 1)
		}
		d1, d2 := geoUp(t, b, []*mat.Dense{s1}), geoUp(t, b, []*mat.Dense{s2})
		defer b.Free(d1)
		defer b.Free(d2)
		dx := geoUp(t, b, xi)
		// Broadcast Σ (batch 1) over ξ (batch 5), writing into ξ itself.
		if err := backend.SPDRetract(b, dx, d1, dx); err != nil {
			t.Fatal(err)
		}
		for i, g := range geoDown(t, b, dx) {
			if e := geoRelErr(g, refRetract(t, s1, xi[i])); e > 1e-12 {
				t.Fatalf("retract broadcast/alias batch %d: %.3g", i, e)
			}
		}
		b.Free(dx)
		dx = geoUp(t, b, xi)
		defer b.Free(dx)
		if err := backend.SPDTransport(b, dx, d1, d2, dx); err != nil {
			t.Fatal(err)
		}
		for i, g := range geoDown(t, b, dx) {
			want, _ := refTransport(t, s1, s2, xi[i])
			if e := geoRelErr(g, want); e > 1e-12 {
				t.Fatalf("transport broadcast/alias batch %d: %.3g", i, e)
			}
		}
		// ξ broadcast from matrix 0 of dst: every item reads it, and item 0 overwrites it.
		sg3 := []*mat.Dense{s1, s2, s1}
		dsg, dd := geoUp(t, b, sg3), geoUp(t, b, xi[:3])
		defer b.Free(dsg)
		defer b.Free(dd)
		if err := backend.SPDRetract(b, dd, dsg, dd.Item(0)); err != nil {
			t.Fatal(err)
		}
		for i, g := range geoDown(t, b, dd) {
			if e := geoRelErr(g, refRetract(t, sg3[i], xi[0])); e > 1e-12 {
				t.Fatalf("retract xi=dst[0] broadcast, batch %d: %.3g", i, e)
			}
		}
		// dst aliasing Σ.
		sig := []*mat.Dense{s1, s2}
		ds, dxi := geoUp(t, b, sig), geoUp(t, b, xi[:2])
		defer b.Free(ds)
		defer b.Free(dxi)
		if err := backend.SPDRetract(b, ds, ds, dxi); err != nil {
			t.Fatal(err)
		}
		for i, g := range geoDown(t, b, ds) {
			if e := geoRelErr(g, refRetract(t, sig[i], xi[i])); e > 1e-12 {
				t.Fatalf("retract dst=sigma batch %d: %.3g", i, e)
			}
		}
	})

	t.Run("errors", func(t *testing.T) {
		r := geoRNG(18)
		good := []*mat.Dense{geoSPD(r, 3, 10, 1), geoSPD(r, 3, 10, 1)}
		bad := mat.DenseCopyOf(good[1])
		bad.Set(2, 2, -5) // indefinite
		x := []*mat.Dense{geoSym(r, 3, 1), geoSym(r, 3, 1)}
		sg, sb, dx := geoUp(t, b, good), geoUp(t, b, []*mat.Dense{good[0], bad}), geoUp(t, b, x)
		defer b.Free(sg)
		defer b.Free(sb)
		defer b.Free(dx)
		dst := upload(t, b, tensor.NewHost(2, 3, 3))
		defer b.Free(dst)
		geoSentinel(t, b, dst, 7)
		wantErr(t, "retract non-SPD sigma", backend.SPDRetract(b, dst, sb, dx), backend.ErrNotPositiveDefinite, "sigma", 1)
		wantErr(t, "transport non-SPD s1", backend.SPDTransport(b, dst, sb, sg, dx), backend.ErrNotPositiveDefinite, "s1", 1)
		wantErr(t, "retract non-SPD broadcast sigma", backend.SPDRetract(b, dst, sb.Item(1), dx), backend.ErrNotPositiveDefinite, "sigma", 0)
		wantErr(t, "transport non-SPD s2", backend.SPDTransport(b, dst, sg, sb, dx), backend.ErrNotPositiveDefinite, "s2", 1)
		for _, sh := range []struct {
			name string
			s    tensor.Shape
			op   string
		}{
			{"dst batch", tensor.Shape{Batch: 3, Rows: 3, Cols: 3}, "sigma"},
			{"dst not square", tensor.Shape{Batch: 2, Rows: 3, Cols: 2}, "dst"},
			{"dst order", tensor.Shape{Batch: 2, Rows: 4, Cols: 4}, "sigma"},
		} {
			d := upload(t, b, tensor.NewHost(sh.s.Batch, sh.s.Rows, sh.s.Cols))
			geoSentinel(t, b, d, 7)
			wantErr(t, "retract "+sh.name, backend.SPDRetract(b, d, sg, dx), backend.ErrShape, sh.op, -1)
			want := sh.op
			if want == "sigma" {
				want = "s1"
			}
			wantErr(t, "transport "+sh.name, backend.SPDTransport(b, d, sg, sg, dx), backend.ErrShape, want, -1)
			geoUntouched(t, b, d, 7)
			b.Free(d)
		}
		x4 := upload(t, b, tensor.NewHost(2, 4, 4))
		defer b.Free(x4)
		wantErr(t, "retract xi shape", backend.SPDRetract(b, dst, sg, x4), backend.ErrShape, "xi", -1)
		wantErr(t, "transport xi shape", backend.SPDTransport(b, dst, sg, sg, x4), backend.ErrShape, "xi", -1)
		wantErr(t, "retract nil", backend.SPDRetract(b, dst, nil, dx), backend.ErrShape, "sigma", -1)
		geoUntouched(t, b, dst, 7)
	})
}

// Benchmarks: batched retraction and transport at d = 10, 50, 200. Nominal flop counts per matrix: retraction
// d³/3 (Cholesky) + d³ (Trsm) + d³ (Syrk, counted in full) = 7d³/3; transport d³/3 (Cholesky) + 4d³ (four Trsm)
// + 9d³ (symmetric eigen-decomposition with vectors) + d³ (Syrk) + 4d³ (two Gemm) + 2d³ (two Trmm) ≈ 20d³.
// Bytes: the operands read and the result written (8d² each: 3 for the retraction, 4 for the transport).
func benchSPD(b *testing.B, be backend.Backend) {
	for _, c := range []struct {
		class    string
		batch, d int
	}{{"small", 10000, 10}, {"medium", 200, 50}, {"large", 4, 200}} {
		r := geoRNG(uint64(c.d))
		sig, xi, s2 := make([]*mat.Dense, c.batch), make([]*mat.Dense, c.batch), make([]*mat.Dense, c.batch)
		for i := range sig {
			if i < 8 {
				sig[i], s2[i], xi[i] = geoSPD(r, c.d, 100, 1), geoSPD(r, c.d, 100, 2), geoSym(r, c.d, 1)
			} else {
				sig[i], s2[i], xi[i] = sig[i%8], s2[i%8], xi[i%8]
			}
		}
		sd, s2d, xd := geoUp(b, be, sig), geoUp(b, be, s2), geoUp(b, be, xi)
		dst, err := be.Alloc(sd.Shape())
		if err != nil {
			b.Fatal(err)
		}
		d3 := float64(c.batch) * math.Pow(float64(c.d), 3)
		mb := 8 * float64(c.batch*c.d*c.d)
		for _, op := range []struct {
			name         string
			flops, bytes float64
			run          func() error
		}{
			{"retract", 7 * d3 / 3, 3 * mb, func() error { return backend.SPDRetract(be, dst, sd, xd) }},
			{"transport", 20 * d3, 4 * mb, func() error { return backend.SPDTransport(be, dst, sd, s2d, xd) }},
		} {
			b.Run(fmt.Sprintf("%s/%s/%dx%dx%d", op.name, c.class, c.batch, c.d, c.d), func(b *testing.B) {
				sec := secondsPerCall(b, be, op.run)
				b.ReportMetric(op.flops/sec/1e9, "GFLOP/s")
				b.ReportMetric(op.bytes/sec/1e9, "GB/s")
			})
		}
		be.Free(sd)
		be.Free(s2d)
		be.Free(xd)
		be.Free(dst)
	}
}
