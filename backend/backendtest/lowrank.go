package backendtest

import (
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// Conformance of the low-rank-plus-diagonal algebra (backend/lowrank.go, paper 002: Woodbury,
// log-det and trace, Prop. 1, Algorithm 1 against the fixed point (20)–(21), memory). Every check runs for the
// reference implementation and for every kernel the backend registers, against independent dense float64 references
// built here with gonum mat at small d.

func init() {
	register("lowrank", testLowRank)
	registerBench("lowrank", benchLowRank)
}

func testLowRank(t *testing.T, b backend.Backend) {
	t.Run("woodbury", func(t *testing.T) { lrTestWoodbury(t, b) })
	t.Run("sample", func(t *testing.T) { lrTestSample(t, b) })
	t.Run("em", func(t *testing.T) { lrTestEM(t, b) })
	t.Run("kernels-vs-reference", func(t *testing.T) { lrTestKernelsLarge(t, b) })
	t.Run("kernels-wide", func(t *testing.T) { lrTestKernelsWide(t, b) })
	t.Run("memory", func(t *testing.T) { lrTestMemory(t, b) })
	t.Run("errors", func(t *testing.T) { lrTestErrors(t, b) })
}

// lrSizes are the small shapes of the dense comparisons: p = 5, the rank-one case and p = d.
var lrSizes = []struct{ d, p int }{{40, 5}, {40, 1}, {40, 40}}

// lrCapacityL returns chol(M) computed with the reference capacitance.
func lrCapacityL(t testing.TB, b backend.Backend, w, psi *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	p := w.Cols()
	l, err := b.Alloc(tensor.Shape{Batch: 1, Rows: p, Cols: p})
	if err != nil {
		t.Fatal(err)
	}
	if err := backend.CapacitanceOp.Reference()(b, l, w, psi); err != nil {
		t.Fatal(err)
	}
	return l
}

// T1 (Woodbury vs dense solve), Apply, capacitance factor, T2 (log-determinant and trace).
func lrTestWoodbury(t *testing.T, b backend.Backend) {
	for si, sz := range lrSizes {
		d, p := sz.d, sz.p
		r := lrRNG(uint64(100 + si))
		wm := normalDense(r, d, p, 1/math.Sqrt(float64(p)))
		psi := lrPsi(r, d, 0.5, 2)
		lam := lrLambda(wm, psi)
		chl := lrChol(t, lam)
		w, ps := lrUp(t, b, wm), lrUpVec(t, b, psi)
		// Strided copies of the operands: W with row stride p+3, ψ as column 1 of a d×2 tensor.
		ws := lrUpStrided(t, b, wm, 3, 0)
		pss := lrUpStrided(t, b, mat.NewDense(d, 1, append([]float64(nil), psi...)), 1, 1)
		shape := w.Shape()

		// Capacitance: L Lᵀ = M = I + WᵀΨ⁻¹W, against the dense Cholesky factor (unique with diag > 0).
		mref, _ := lrCap(wm, psi)
		var cm mat.Cholesky
		cm.Factorize(mat.NewSymDense(p, lrSymData(mref)))
		var lref mat.TriDense
		cm.LTo(&lref)
		for _, im := range implsOf(backend.CapacitanceOp, b, shape) {
			for _, strided := range []bool{false, true} {
				l, err := b.Alloc(tensor.Shape{Batch: 1, Rows: p, Cols: p})
				if err != nil {
					t.Fatal(err)
				}
				wi, pi := w, ps
				if strided {
					wi, pi = ws, pss
				}
				if err := im.fn(b, l, wi, pi); err != nil {
					t.Fatalf("%s: %v", im.name, err)
				}
				if e := lrRel(lrDown(t, b, l), &lref); e > 1e-12 {
					t.Errorf("d=%d p=%d %s (strided %v): chol(M) rel err %.2e > 1e-12", d, p, im.name, strided, e)
				}
				b.Free(l)
			}
		}

		l := lrCapacityL(t, b, w, ps)
		for _, k := range []int{1, 3} {
			gm := normalDense(r, d, k, 1)
			var want mat.Dense
			if err := chl.SolveTo(&want, gm); err != nil {
				t.Fatal(err)
			}
			scale := math.Max(1, mat.Max(lrAbs(&want)))
			for _, im := range implsOf(backend.SolveOp, b, shape) {
				// T1: separate destination, strided operands, and dst = g.
				g := lrUp(t, b, gm)
				dst, _ := b.Alloc(g.Shape())
				if err := im.fn(b, dst, w, ps, l, g); err != nil {
					t.Fatalf("%s: %v", im.name, err)
				}
				e := lrRel(lrDown(t, b, dst), &want) * mat.Max(lrAbs(&want)) / scale
				t.Logf("T1 d=%d p=%d k=%d %s: max abs err %.2e", d, p, k, im.name, e)
				if e > 1e-10 {
					t.Errorf("T1 d=%d p=%d k=%d %s: Woodbury vs dense solve max abs err %.2e > 1e-10", d, p, k, im.name, e)
				}
				lrSame(t, b, im.name+" g", g, gm)
				if err := im.fn(b, dst, ws, pss, l, g); err != nil {
					t.Fatalf("%s strided: %v", im.name, err)
				}
				if e := lrRel(lrDown(t, b, dst), &want) * mat.Max(lrAbs(&want)) / scale; e > 1e-10 {
					t.Errorf("T1 strided d=%d p=%d k=%d %s: err %.2e > 1e-10", d, p, k, im.name, e)
				}
				if err := im.fn(b, g, w, ps, l, g); err != nil {
					t.Fatalf("%s aliased: %v", im.name, err)
				}
				if e := lrRel(lrDown(t, b, g), &want) * mat.Max(lrAbs(&want)) / scale; e > 1e-10 {
					t.Errorf("T1 dst = g d=%d p=%d k=%d %s: err %.2e > 1e-10", d, p, k, im.name, e)
				}
				lrFree(b, g, dst)
			}
		}

		// The public type: Solve, Apply, LogDet (T2), Trace (T2).
		lr, err := backend.NewLowRank(b, w, ps)
		if err != nil {
			t.Fatal(err)
		}
		gm := normalDense(r, d, 2, 1)
		g := lrUp(t, b, gm)
		var want mat.Dense
		want.Mul(lam, gm)
		if err := lr.Apply(g, g); err != nil {
			t.Fatal(err)
		}
		if e := lrRel(lrDown(t, b, g), &want); e > 1e-13 {
			t.Errorf("d=%d p=%d: Apply (dst = g) rel err %.2e > 1e-13", d, p, e)
		}
		if err := lr.Solve(g, g); err != nil { // Λ⁻¹ Λ g = g
			t.Fatal(err)
		}
		if e := lrRel(lrDown(t, b, g), gm); e > 1e-10 {
			t.Errorf("d=%d p=%d: Solve(Apply(g)) rel err %.2e > 1e-10", d, p, e)
		}
		ld, err := lr.LogDet()
		if err != nil {
			t.Fatal(err)
		}
		ldRef := chl.LogDet()
		if e := math.Abs(ld-ldRef) / math.Abs(ldRef); e > 1e-12 {
			t.Errorf("T2 d=%d p=%d: logdet %.15g vs dense %.15g, rel err %.2e > 1e-12", d, p, ld, ldRef, e)
		} else {
			t.Logf("T2 d=%d p=%d: logdet rel err %.2e", d, p, e)
		}
		tr, err := lr.Trace()
		if err != nil {
			t.Fatal(err)
		}
		var inv mat.SymDense
		if err := chl.InverseTo(&inv); err != nil {
			t.Fatal(err)
		}
		trRef := mat.Trace(&inv)
		if e := math.Abs(tr-trRef) / trRef; e > 1e-12 {
			t.Errorf("T2 d=%d p=%d: Tr Λ⁻¹ %.15g vs dense %.15g, rel err %.2e > 1e-12", d, p, tr, trRef, e)
		} else {
			t.Logf("T2 d=%d p=%d: trace rel err %.2e", d, p, e)
		}
		lr.Close()
		lrFree(b, w, ps, l, g)
	}
}

// lrAbs returns |a| element-wise.
func lrAbs(a mat.Matrix) *mat.Dense {
	r, c := a.Dims()
	m := mat.NewDense(r, c, nil)
	m.Apply(func(_, _ int, v float64) float64 { return math.Abs(v) }, a)
	return m
}

// T3: Prop. 1 (corrected: x + L(ε − Wᵀx), not the printed L(ε − LWᵀx)) — the dense covariance identity, the exact
// stream of draws, and Monte Carlo.
func lrTestSample(t *testing.T, b backend.Backend) {
	for si, sz := range lrSizes {
		d, p := sz.d, sz.p
		r := lrRNG(uint64(200 + si))
		wm := normalDense(r, d, p, 1/math.Sqrt(float64(p)))
		psi := lrPsi(r, d, 0.5, 2)
		lam := lrLambda(wm, psi)
		pcov := lrInv(t, lam)
		m, _ := lrCap(wm, psi)
		minv := lrInv(t, m)
		// L = Ψ⁻¹ W M⁻¹ and A = I − L Wᵀ (dense, test side).
		var lm, a mat.Dense
		lm.Mul(wm, minv)
		for i := 0; i < d; i++ {
			for j := 0; j < p; j++ {
				lm.Set(i, j, lm.At(i, j)/psi[i])
			}
		}
		a.Mul(&lm, wm.T())
		a.Scale(-1, &a)
		for i := 0; i < d; i++ {
			a.Set(i, i, a.At(i, i)+1)
		}
		// T3 identity: (I − LWᵀ) Ψ⁻¹ (I − LWᵀ)ᵀ + L Lᵀ = (W Wᵀ + Ψ)⁻¹.
		var api, cov, llt mat.Dense
		api.Apply(func(_, j int, v float64) float64 { return v / psi[j] }, &a)
		cov.Mul(&api, a.T())
		llt.Mul(&lm, lm.T())
		cov.Add(&cov, &llt)
		e := lrRel(&cov, pcov)
		t.Logf("T3 d=%d p=%d: covariance identity rel err %.2e", d, p, e)
		if e > 1e-12 {
			t.Errorf("T3 d=%d p=%d: Prop. 1 covariance identity rel err %.2e > 1e-12", d, p, e)
		}

		// Exact stream: θ_j = μ + (I − LWᵀ) Ψ^{-1/2} z_j + L ε_j with z = draws [off, off+dK) and ε the next pK
		// draws, both row-major, computed here from package rng alone. K odd and an odd offset test the layout.
		w, ps := lrUp(t, b, wm), lrUpVec(t, b, psi)
		l := lrCapacityL(t, b, w, ps)
		mu := lrPsi(r, d, -1, 1)
		mut := lrUpVec(t, b, mu)
		const k = 3
		c := rng.Counter{Seed: 7, Stream: 3, Offset: 11}
		zs := make([]float64, d*k)
		c.FillNormal(zs)
		es := make([]float64, p*k)
		c.Advance(d * k).FillNormal(es)
		z := mat.NewDense(d, k, zs)
		for i := 0; i < d; i++ {
			for j := 0; j < k; j++ {
				z.Set(i, j, z.At(i, j)/math.Sqrt(psi[i]))
			}
		}
		var want, le mat.Dense
		want.Mul(&a, z)
		le.Mul(&lm, mat.NewDense(p, k, es))
		want.Add(&want, &le)
		for i := 0; i < d; i++ {
			for j := 0; j < k; j++ {
				want.Set(i, j, want.At(i, j)+mu[i])
			}
		}
		for _, im := range implsOf(backend.SampleOp, b, w.Shape()) {
			dst, _ := b.Alloc(tensor.Shape{Batch: 1, Rows: d, Cols: k})
			if err := im.fn(b, dst, w, ps, l, mut, c); err != nil {
				t.Fatalf("%s: %v", im.name, err)
			}
			e := lrRel(lrDown(t, b, dst), &want)
			t.Logf("T3 stream d=%d p=%d %s: rel err %.2e", d, p, im.name, e)
			if e > 1e-12 {
				t.Errorf("T3 d=%d p=%d %s: samples differ from the dense Prop. 1 map of the same draws, rel err %.2e > 1e-12", d, p, im.name, e)
			}
			b.Free(dst)
		}
		lrFree(b, w, ps, l, mut)
	}

	// Monte Carlo: n = 2e5 draws at d = 12, p = 3; every entry of the sample mean and covariance within 5 standard
	// errors of μ and P = Λ⁻¹ (s.e. √(P_ii/n) and √((P_ii P_jj + P_ij²)/n) for Gaussian draws).
	const d, p, n = 12, 3, 200000
	r := lrRNG(300)
	wm := normalDense(r, d, p, 1)
	psi := lrPsi(r, d, 0.3, 3)
	pcov := lrInv(t, lrLambda(wm, psi))
	mu := lrPsi(r, d, -2, 2)
	w, ps, mut := lrUp(t, b, wm), lrUpVec(t, b, psi), lrUpVec(t, b, mu)
	l := lrCapacityL(t, b, w, ps)
	defer lrFree(b, w, ps, mut, l)
	for _, im := range implsOf(backend.SampleOp, b, w.Shape()) {
		dst, _ := b.Alloc(tensor.Shape{Batch: 1, Rows: d, Cols: n})
		if err := im.fn(b, dst, w, ps, l, mut, rng.Counter{Seed: 2024, Stream: 1}); err != nil {
			t.Fatalf("%s: %v", im.name, err)
		}
		x := lrDown(t, b, dst)
		b.Free(dst)
		mean := make([]float64, d)
		for i := 0; i < d; i++ {
			mean[i] = mat.Sum(x.Slice(i, i+1, 0, n)) / n
		}
		worst := 0.0
		for i := 0; i < d; i++ {
			se := math.Sqrt(pcov.At(i, i) / n)
			worst = math.Max(worst, math.Abs(mean[i]-mu[i])/se)
		}
		for i := 0; i < d; i++ {
			ri := x.RawRowView(i)
			for j := 0; j <= i; j++ {
				rj := x.RawRowView(j)
				var s float64
				for q := 0; q < n; q++ {
					s += (ri[q] - mean[i]) * (rj[q] - mean[j])
				}
				s /= n - 1
				pij := pcov.At(i, j)
				se := math.Sqrt((pcov.At(i, i)*pcov.At(j, j) + pij*pij) / n)
				worst = math.Max(worst, math.Abs(s-pij)/se)
			}
		}
		t.Logf("T3 Monte Carlo %s: largest deviation %.2f standard errors (n = %d)", im.name, worst, n)
		if worst > 5 {
			t.Errorf("T3 Monte Carlo %s: a mean or covariance entry is %.2f standard errors off (> 5)", im.name, worst)
		}
	}
}

// T4–T9: the recursive EM (Algorithm 1) against the dense fixed point (20)–(21).
func lrTestEM(t *testing.T, b backend.Backend) {
	const alpha, beta, kc = 0.7, 1.3, 3
	for si, sz := range lrSizes {
		d, p := sz.d, sz.p
		r := lrRNG(uint64(400 + si))
		wm := normalDense(r, d, p, 1/math.Sqrt(float64(p)))
		psi := lrPsi(r, d, 0.5, 2)
		xm := normalDense(r, d, kc, 1)
		s := lrTarget(wm, psi, xm, alpha, beta)
		w1, psi1 := lrDenseEMPaper(t, s, wm, psi)  // one iteration, paper form
		w2, psi2 := lrDenseEMPaper(t, s, w1, psi1) // second iteration, same S

		// T5: SPD (M+B) form vs paper (A) form, dense on both sides.
		ws, pss := lrDenseEMSPD(t, s, wm, psi)
		e5w, e5p := lrRel(ws, w1), lrRelVec(pss, psi1)
		t.Logf("T5 d=%d p=%d: SPD vs A form: W %.2e, ψ %.2e", d, p, e5w, e5p)
		if e5w > 1e-12 || e5p > 1e-12 {
			t.Errorf("T5 d=%d p=%d: SPD form vs paper form rel err W %.2e ψ %.2e > 1e-12", d, p, e5w, e5p)
		}

		// T6 reference: ψ_new = diag((S⁻¹ + C M⁻¹ Cᵀ)⁻¹).
		m, c := lrCap(wm, psi)
		var cm1, cmc mat.Dense
		cm1.Mul(c, lrInv(t, m))
		cmc.Mul(&cm1, c.T())
		cmc.Add(&cmc, lrInv(t, s))
		t6 := lrInv(t, &cmc)
		psi6 := make([]float64, d)
		for i := range psi6 {
			psi6[i] = t6.At(i, i)
		}

		for _, im := range implsOf(backend.EMStepOp, b, tensor.Shape{Batch: 1, Rows: d, Cols: p}) {
			for _, strided := range []bool{false, true} {
				var w, ps *tensor.Tensor
				if strided {
					w = lrUpStrided(t, b, wm, 2, 1)
					ps = lrUpStrided(t, b, mat.NewDense(d, 1, append([]float64(nil), psi...)), 2, 0)
				} else {
					w, ps = lrUp(t, b, wm), lrUpVec(t, b, psi)
				}
				x := lrUp(t, b, xm)
				tag := fmt.Sprintf("d=%d p=%d %s strided=%v", d, p, im.name, strided)
				clamped := lrRunEM(t, b, im.fn, w, ps, x, alpha, beta, 0, 2, func(it int) {
					gw, gp := lrDown(t, b, w), lrDownVec(t, b, ps)
					if it == 0 {
						ew, ep := lrRel(gw, w1), lrRelVec(gp, psi1)
						e6 := lrRelVec(gp, psi6)
						t.Logf("T4 %s: W %.2e ψ %.2e; T6 %.2e", tag, ew, ep, e6)
						if ew > 1e-10 || ep > 1e-10 {
							t.Errorf("T4 %s: one inner iteration vs dense (20)–(21): W %.2e ψ %.2e > 1e-10", tag, ew, ep)
						}
						if e6 > 1e-10 {
							t.Errorf("T6 %s: ψ_new vs diag((S⁻¹ + CM⁻¹Cᵀ)⁻¹) rel err %.2e > 1e-10", tag, e6)
						}
						for i, v := range gp {
							if !(v > 0) {
								t.Errorf("T6 %s: ψ_new[%d] = %g not > 0", tag, i, v)
								break
							}
						}
						return
					}
					ew, ep := lrRel(gw, w2), lrRelVec(gp, psi2)
					t.Logf("T4 second iteration %s: W %.2e ψ %.2e", tag, ew, ep)
					if ew > 1e-10 || ep > 1e-10 {
						t.Errorf("T4 %s: second inner iteration vs dense: W %.2e ψ %.2e > 1e-10", tag, ew, ep)
					}
				})
				if clamped != 0 {
					t.Errorf("%s: %d ψ clamps on well-conditioned data", tag, clamped)
				}
				if !strided {
					lrFree(b, w, ps)
				}
				b.Free(x)
			}
		}

		// The public RecursiveEM (selected implementation), Inner = 2.
		w, ps, x := lrUp(t, b, wm), lrUpVec(t, b, psi), lrUp(t, b, xm)
		st, err := backend.RecursiveEM(b, w, ps, x, alpha, beta, backend.EMOptions{Inner: 2})
		if err != nil {
			t.Fatal(err)
		}
		if ew, ep := lrRel(lrDown(t, b, w), w2), lrRelVec(lrDownVec(t, b, ps), psi2); ew > 1e-10 || ep > 1e-10 || st.Clamped != 0 {
			t.Errorf("RecursiveEM d=%d p=%d Inner=2: W %.2e ψ %.2e (tol 1e-10), %d clamps", d, p, ew, ep, st.Clamped)
		}
		lrFree(b, w, ps, x)
	}

	// T7: KL(N(0,S) ‖ N(0, WWᵀ+Ψ)) is non-increasing over 30 inner iterations (and does decrease).
	{
		const d, p = 40, 5
		r := lrRNG(500)
		wm := normalDense(r, d, p, 1/math.Sqrt(float64(p)))
		psi := lrPsi(r, d, 0.5, 2)
		xm := normalDense(r, d, kc, 1)
		s := lrTarget(wm, psi, xm, alpha, beta)
		kl0 := lrKL(t, s, lrLambda(wm, psi))
		for _, im := range implsOf(backend.EMStepOp, b, tensor.Shape{Batch: 1, Rows: d, Cols: p}) {
			w, ps, x := lrUp(t, b, wm), lrUpVec(t, b, psi), lrUp(t, b, xm)
			prev := kl0
			bad := 0
			lrRunEM(t, b, im.fn, w, ps, x, alpha, beta, 0, 30, func(it int) {
				kl := lrKL(t, s, lrLambda(lrDown(t, b, w), lrDownVec(t, b, ps)))
				if kl-prev > 1e-12*math.Abs(prev) {
					bad++
					t.Errorf("T7 %s: KL rose at iteration %d: %.15g → %.15g", im.name, it, prev, kl)
				}
				prev = kl
			})
			t.Logf("T7 %s: KL %.6g → %.6g over 30 iterations", im.name, kl0, prev)
			if !(prev < 0.9*kl0) {
				t.Errorf("T7 %s: KL did not decrease (%.6g → %.6g)", im.name, kl0, prev)
			}
			lrFree(b, w, ps, x)
		}
	}

	// T8: W = 0 is a fixed point; ψ becomes diag S = α ψ + β rowsq(X).
	{
		const d, p = 40, 5
		r := lrRNG(600)
		psi := lrPsi(r, d, 0.5, 2)
		xm := normalDense(r, d, kc, 1)
		zero := mat.NewDense(d, p, nil)
		want := make([]float64, d)
		for i := range want {
			want[i] = alpha * psi[i]
			for j := 0; j < kc; j++ {
				want[i] += beta * xm.At(i, j) * xm.At(i, j)
			}
		}
		for _, im := range implsOf(backend.EMStepOp, b, tensor.Shape{Batch: 1, Rows: d, Cols: p}) {
			w, ps, x := lrUp(t, b, zero), lrUpVec(t, b, psi), lrUp(t, b, xm)
			lrRunEM(t, b, im.fn, w, ps, x, alpha, beta, 0, 3, nil)
			if !mat.Equal(lrDown(t, b, w), zero) {
				t.Errorf("T8 %s: W = 0 did not stay 0", im.name)
			}
			if e := lrRelVec(lrDownVec(t, b, ps), want); e > 1e-14 {
				t.Errorf("T8 %s: ψ after steps from W = 0: rel err %.2e vs α ψ + β rowsq(X) (> 1e-14)", im.name, e)
			}
			lrFree(b, w, ps, x)
		}
	}

	// T9: p = d, one FA fit from a warm start: KL(S ‖ FA) ≤ 1e-10 after 1000 inner iterations.
	{
		const d = 10
		r := lrRNG(700)
		wm := normalDense(r, d, d, 1/math.Sqrt(d))
		psi := lrPsi(r, d, 0.5, 2)
		xm := normalDense(r, d, 2, 1)
		s := lrTarget(wm, psi, xm, alpha, beta)
		for _, im := range implsOf(backend.EMStepOp, b, tensor.Shape{Batch: 1, Rows: d, Cols: d}) {
			w, ps, x := lrUp(t, b, wm), lrUpVec(t, b, psi), lrUp(t, b, xm)
			lrRunEM(t, b, im.fn, w, ps, x, alpha, beta, 0, 1000, nil)
			kl := lrKL(t, s, lrLambda(lrDown(t, b, w), lrDownVec(t, b, ps)))
			t.Logf("T9 %s: KL after 1000 iterations %.2e", im.name, kl)
			if !(kl <= 1e-10) {
				t.Errorf("T9 %s: KL(S ‖ FA) = %.2e after 1000 iterations (> 1e-10)", im.name, kl)
			}
			lrFree(b, w, ps, x)
		}
	}

	// Clamping: with a floor above every diag S entry, every ψ is raised to it and counted.
	{
		const d, p = 40, 5
		r := lrRNG(800)
		wm := normalDense(r, d, p, 1/math.Sqrt(float64(p)))
		psi := lrPsi(r, d, 0.5, 2)
		xm := normalDense(r, d, 1, 1)
		for _, im := range implsOf(backend.EMStepOp, b, tensor.Shape{Batch: 1, Rows: d, Cols: p}) {
			w, ps, x := lrUp(t, b, wm), lrUpVec(t, b, psi), lrUp(t, b, xm)
			n := lrRunEM(t, b, im.fn, w, ps, x, 1, 1, 1e6, 1, nil)
			got := lrDownVec(t, b, ps)
			if n != d || got[0] != 1e6 || got[d-1] != 1e6 {
				t.Errorf("%s: floor 1e6: %d clamps (want %d), ψ[0] = %g", im.name, n, d, got[0])
			}
			lrFree(b, w, ps, x)
		}
	}
}

// Kernels vs the reference at d = 100000, p = 20 (tight relative tolerances).
func lrTestKernelsLarge(t *testing.T, b backend.Backend) {
	for _, p := range []int{20, 10} { // p = 10: the CPU backend's skinny paths (p ≤ 16)
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) { lrKernelsLarge(t, b, p) })
	}
}

func lrKernelsLarge(t *testing.T, b backend.Backend, p int) {
	const d, kc = 100000, 2
	shape := tensor.Shape{Batch: 1, Rows: d, Cols: p}
	if len(backend.CapacitanceOp.Kernels(b, shape))+len(backend.SolveOp.Kernels(b, shape))+
		len(backend.SampleOp.Kernels(b, shape))+len(backend.EMStepOp.Kernels(b, shape)) == 0 {
		t.Skip("no low-rank kernels registered for " + b.Name())
	}
	r := lrRNG(900)
	wm := normalDense(r, d, p, 0.3)
	psi := lrPsi(r, d, 0.2, 2)
	xm := normalDense(r, d, kc, 1)
	w, ps, x := lrUp(t, b, wm), lrUpVec(t, b, psi), lrUp(t, b, xm)
	defer lrFree(b, w, ps, x)

	// Capacitance.
	lref := lrCapacityL(t, b, w, ps)
	defer b.Free(lref)
	lrefM := lrDown(t, b, lref)
	for _, k := range backend.CapacitanceOp.Kernels(b, shape) {
		l, _ := b.Alloc(lref.Shape())
		if err := k.Fn(b, l, w, ps); err != nil {
			t.Fatal(err)
		}
		e := lrRel(lrDown(t, b, l), lrefM)
		t.Logf("capacitance %s vs reference: rel %.2e", k.Name, e)
		if e > 1e-12 {
			t.Errorf("capacitance %s vs reference: rel err %.2e > 1e-12", k.Name, e)
		}
		b.Free(l)
	}

	// Solve, k = 1 and 4.
	for _, k := range []int{1, 4} {
		g := lrUp(t, b, normalDense(r, d, k, 1))
		ref, _ := b.Alloc(g.Shape())
		if err := backend.SolveOp.Reference()(b, ref, w, ps, lref, g); err != nil {
			t.Fatal(err)
		}
		refM := lrDown(t, b, ref)
		for _, kn := range backend.SolveOp.Kernels(b, shape) {
			dst, _ := b.Alloc(g.Shape())
			if err := kn.Fn(b, dst, w, ps, lref, g); err != nil {
				t.Fatal(err)
			}
			e := lrRel(lrDown(t, b, dst), refM)
			t.Logf("solve k=%d %s vs reference: rel %.2e", k, kn.Name, e)
			if e > 1e-12 {
				t.Errorf("solve k=%d %s vs reference: rel err %.2e > 1e-12", k, kn.Name, e)
			}
			b.Free(dst)
		}
		lrFree(b, g, ref)
	}

	// Sample, K = 10 with μ.
	{
		const k = 10
		mu := lrUpVec(t, b, lrPsi(r, d, -1, 1))
		c := rng.Counter{Seed: 5, Stream: 9, Offset: 3}
		ref, _ := b.Alloc(tensor.Shape{Batch: 1, Rows: d, Cols: k})
		if err := backend.SampleOp.Reference()(b, ref, w, ps, lref, mu, c); err != nil {
			t.Fatal(err)
		}
		refM := lrDown(t, b, ref)
		for _, kn := range backend.SampleOp.Kernels(b, shape) {
			dst, _ := b.Alloc(ref.Shape())
			if err := kn.Fn(b, dst, w, ps, lref, mu, c); err != nil {
				t.Fatal(err)
			}
			e := lrRel(lrDown(t, b, dst), refM)
			t.Logf("sample K=%d %s vs reference: rel %.2e", k, kn.Name, e)
			if e > 1e-12 {
				t.Errorf("sample K=%d %s vs reference: rel err %.2e > 1e-12", k, kn.Name, e)
			}
			b.Free(dst)
		}
		lrFree(b, mu, ref)
	}

	// EM: three inner iterations (the first-iteration shortcut and the general iteration), α = 0.9, β = 1, with
	// K_c = 2 and K_c = 1 (a strided column view of X).
	for _, xv := range []*tensor.Tensor{x, x.Slice(0, d, 0, 1)} {
		wr, pr := lrUp(t, b, wm), lrUpVec(t, b, psi)
		var refW [3]*mat.Dense
		var refP [3][]float64
		lrRunEM(t, b, backend.EMStepOp.Reference(), wr, pr, xv, 0.9, 1, 0, 3, func(it int) {
			refW[it], refP[it] = lrDown(t, b, wr), lrDownVec(t, b, pr)
		})
		lrFree(b, wr, pr)
		for _, kn := range backend.EMStepOp.Kernels(b, shape) {
			wk, pk := lrUp(t, b, wm), lrUpVec(t, b, psi)
			lrRunEM(t, b, kn.Fn, wk, pk, xv, 0.9, 1, 0, 3, func(it int) {
				ew, ep := lrRel(lrDown(t, b, wk), refW[it]), lrRelVec(lrDownVec(t, b, pk), refP[it])
				t.Logf("em K_c=%d iteration %d %s vs reference: W %.2e ψ %.2e", xv.Cols(), it, kn.Name, ew, ep)
				if ew > 1e-11 || ep > 1e-11 {
					t.Errorf("em K_c=%d iteration %d %s vs reference: W %.2e ψ %.2e > 1e-11", xv.Cols(), it, kn.Name, ew, ep)
				}
			})
			lrFree(b, wk, pk)
		}
	}
}

// lrTestKernelsWide compares the kernels with the reference when the right-hand side is much wider than W
// (K_c, k ≫ p, as for the GGN factors of the nonlinear L-RVGA), the case where scratch sized by K used to grow.
func lrTestKernelsWide(t *testing.T, b backend.Backend) {
	const d, p, kw = 4000, 6, 3000
	shape := tensor.Shape{Batch: 1, Rows: d, Cols: p}
	if len(backend.SolveOp.Kernels(b, shape))+len(backend.EMStepOp.Kernels(b, shape)) == 0 {
		t.Skip("no low-rank kernels registered for " + b.Name())
	}
	r := lrRNG(901)
	wm := normalDense(r, d, p, 0.3)
	psi := lrPsi(r, d, 0.2, 2)
	xm := normalDense(r, d, kw, 1/math.Sqrt(kw))
	w, ps, x := lrUp(t, b, wm), lrUpVec(t, b, psi), lrUp(t, b, xm)
	defer lrFree(b, w, ps, x)
	lref := lrCapacityL(t, b, w, ps)
	defer b.Free(lref)
	ref, _ := b.Alloc(x.Shape())
	defer b.Free(ref)
	if err := backend.SolveOp.Reference()(b, ref, w, ps, lref, x); err != nil {
		t.Fatal(err)
	}
	refM := lrDown(t, b, ref)
	for _, kn := range backend.SolveOp.Kernels(b, shape) {
		dst, _ := b.Alloc(x.Shape())
		if err := kn.Fn(b, dst, w, ps, lref, x); err != nil {
			t.Fatal(err)
		}
		if e := lrRel(lrDown(t, b, dst), refM); e > 1e-12 {
			t.Errorf("solve k=%d %s vs reference: rel err %.2e > 1e-12", kw, kn.Name, e)
		}
		b.Free(dst)
	}
	wr, pr := lrUp(t, b, wm), lrUpVec(t, b, psi)
	var refW [2]*mat.Dense
	var refP [2][]float64
	lrRunEM(t, b, backend.EMStepOp.Reference(), wr, pr, x, 1, 1, 0, 2, func(it int) {
		refW[it], refP[it] = lrDown(t, b, wr), lrDownVec(t, b, pr)
	})
	lrFree(b, wr, pr)
	for _, kn := range backend.EMStepOp.Kernels(b, shape) {
		wk, pk := lrUp(t, b, wm), lrUpVec(t, b, psi)
		lrRunEM(t, b, kn.Fn, wk, pk, x, 1, 1, 0, 2, func(it int) {
			ew, ep := lrRel(lrDown(t, b, wk), refW[it]), lrRelVec(lrDownVec(t, b, pk), refP[it])
			if ew > 1e-11 || ep > 1e-11 {
				t.Errorf("em K_c=%d iteration %d %s vs reference: W %.2e ψ %.2e > 1e-11", kw, it, kn.Name, ew, ep)
			}
		})
		lrFree(b, wk, pk)
	}
}

// T14-style memory checks at d = 200000, p = 50: the reference path through an allocation tracker (peak extra
// ≤ 3 d×p buffers plus O(d) vectors, no allocation of d²/100 elements or more, nothing left allocated), and the
// kernels' host heap (an upper bound on their scratch for host backends) and MemInUse.
func lrTestMemory(t *testing.T, b backend.Backend) {
	const d, p, k = 200000, 50, 10
	const dp = int64(d * p * 8)
	slack := int64(12*d*8 + 1<<20) // d-vectors and p×p / p×K / d×K-sized small things
	bigAlloc := int64(d) * int64(d) / 100 * 8
	r := lrRNG(1000)
	wm := normalDense(r, d, p, 0.2)
	psi := lrPsi(r, d, 0.5, 2)
	xm := normalDense(r, d, 1, 1)
	w, ps, x := lrUp(t, b, wm), lrUpVec(t, b, psi), lrUp(t, b, xm)
	g := lrUp(t, b, normalDense(r, d, 1, 1))
	dst, _ := b.Alloc(tensor.Shape{Batch: 1, Rows: d, Cols: k})
	defer lrFree(b, w, ps, x, g, dst)

	tr := newLRMemTracker(b)
	base := b.MemInUse()
	lr, err := backend.NewLowRank(tr, w, ps)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, f func() error) {
		t.Helper()
		tr.reset()
		before := tr.cur
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		extra := tr.peak - before
		t.Logf("memory %s (reference): peak extra %.1f MB = %.2f d×p buffers, largest allocation %.1f MB", what,
			float64(extra)/1e6, float64(extra)/float64(dp), float64(tr.maxAlloc)/1e6)
		if extra > 3*dp+slack {
			t.Errorf("%s: peak extra allocation %d bytes > 3 d×p (%d) + %d", what, extra, 3*dp, slack)
		}
		if tr.maxAlloc >= bigAlloc {
			t.Errorf("%s: an allocation of %d bytes ≥ d²/100 elements", what, tr.maxAlloc)
		}
		if tr.cur != before {
			t.Errorf("%s: %d bytes still allocated after the call", what, tr.cur-before)
		}
	}
	check("capacitance", lr.Refactor)
	check("solve k=1", func() error { return lr.Solve(g, g) })
	check("sample K=10", func() error { return lr.Sample(dst, nil, rng.Counter{Seed: 1}) })
	check("logdet", func() error { _, err := lr.LogDet(); return err })
	check("trace", func() error { _, err := lr.Trace(); return err })
	check("em Inner=1", func() error {
		_, err := backend.RecursiveEM(tr, w, ps, x, 1, 1, backend.EMOptions{Inner: 1})
		return err
	})
	check("em Inner=2", func() error {
		_, err := backend.RecursiveEM(tr, w, ps, x, 1, 1, backend.EMOptions{Inner: 2})
		return err
	})
	lr.Close()
	if got := b.MemInUse(); got != base {
		t.Errorf("MemInUse %d after the reference calls, want %d", got, base)
	}

	// Kernels: MemInUse unchanged, host heap allocated during the call ≤ 3 d×p.
	l := lrCapacityL(t, b, w, ps)
	defer b.Free(l)
	shape := w.Shape()
	heap := func(what string, f func() error) {
		t.Helper()
		before := b.MemInUse()
		var err error
		h := lrHeapDelta(func() { err = f() })
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("memory %s: host heap %.2f MB (%.3f d×p), MemInUse change %d", what, float64(h)/1e6, float64(h)/float64(dp), b.MemInUse()-before)
		if int64(h) > 3*dp {
			t.Errorf("%s: %d bytes of host heap > 3 d×p", what, h)
		}
		if b.MemInUse() != before {
			t.Errorf("%s: MemInUse changed by %d", what, b.MemInUse()-before)
		}
	}
	for _, kn := range backend.CapacitanceOp.Kernels(b, shape) {
		heap(kn.Name, func() error { return kn.Fn(b, l, w, ps) })
	}
	for _, kn := range backend.SolveOp.Kernels(b, shape) {
		heap(kn.Name, func() error { return kn.Fn(b, g, w, ps, l, g) })
	}
	for _, kn := range backend.SampleOp.Kernels(b, shape) {
		heap(kn.Name, func() error { return kn.Fn(b, dst, w, ps, l, nil, rng.Counter{Seed: 3}) })
	}
	for _, kn := range backend.EMStepOp.Kernels(b, shape) {
		heap(kn.Name, func() error {
			_, err := kn.Fn(b, backend.EMStepArgs{W: w, Psi: ps, X: x, Alpha: 1, Beta: 1})
			return err
		})
	}
}

// Bad input: shapes (ErrShape, outputs untouched), ψ ≤ 0 or not finite (ErrDomain naming psi), α, β < 0, and NaN
// propagation.
func lrTestErrors(t *testing.T, b backend.Backend) {
	const d, p = 20, 3
	r := lrRNG(1100)
	wm := normalDense(r, d, p, 1)
	psi := lrPsi(r, d, 0.5, 2)
	w, ps := lrUp(t, b, wm), lrUpVec(t, b, psi)
	defer lrFree(b, w, ps)

	// NewLowRank.
	if _, err := backend.NewLowRank(b, w, lrUpVec(t, b, psi[:d-1])); err == nil {
		t.Fatal("NewLowRank with ψ of d−1 entries: no error")
	} else {
		wantErr(t, "NewLowRank ψ short", err, backend.ErrShape, "psi", -1)
	}
	if _, err := backend.NewLowRank(b, nil, ps); err == nil {
		t.Fatal("NewLowRank(nil W): no error")
	} else {
		wantErr(t, "NewLowRank nil", err, backend.ErrShape, "w", -1)
	}
	w2, _ := b.Alloc(tensor.Shape{Batch: 2, Rows: d, Cols: p})
	if _, err := backend.NewLowRank(b, w2, ps); err == nil {
		t.Fatal("NewLowRank with batch 2: no error")
	} else {
		wantErr(t, "NewLowRank batch 2", err, backend.ErrShape, "w", -1)
	}
	b.Free(w2)
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		pv := append([]float64(nil), psi...)
		pv[d/2] = bad
		pt := lrUpVec(t, b, pv)
		_, err := backend.NewLowRank(b, w, pt)
		wantErr(t, fmt.Sprintf("NewLowRank ψ = %v", bad), err, backend.ErrDomain, "psi", -1)
		xm := normalDense(r, d, 1, 1)
		x := lrUp(t, b, xm)
		_, err = backend.RecursiveEM(b, w, pt, x, 1, 1, backend.EMOptions{})
		wantErr(t, fmt.Sprintf("RecursiveEM ψ = %v", bad), err, backend.ErrDomain, "psi", -1)
		lrSame(t, b, "RecursiveEM W", w, wm)
		lrFree(b, pt, x)
	}

	lr, err := backend.NewLowRank(b, w, ps)
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	const sentinel = 7.25
	for _, sh := range []tensor.Shape{{Batch: 1, Rows: d + 1, Cols: 2}, {Batch: 2, Rows: d, Cols: 2}, {Batch: 1, Rows: d, Cols: 0}} {
		bad, _ := b.Alloc(sh)
		gm := normalDense(r, d, 2, 1)
		g := lrUp(t, b, gm)
		geoSentinel(t, b, bad, sentinel)
		wantErr(t, "Solve dst "+sh.String(), lr.Solve(bad, g), backend.ErrShape, "dst", -1)
		if sh.Len() > 0 {
			geoUntouched(t, b, bad, sentinel)
		}
		lrSame(t, b, "Solve g", g, gm)
		wantErr(t, "Apply dst "+sh.String(), lr.Apply(bad, g), backend.ErrShape, "dst", -1)
		if sh.Len() > 0 {
			geoUntouched(t, b, bad, sentinel)
			wantErr(t, "Sample dst "+sh.String(), lr.Sample(bad, nil, rng.Counter{}), backend.ErrShape, "dst", -1)
			geoUntouched(t, b, bad, sentinel)
		}
		lrFree(b, bad, g)
	}
	{
		g := lrUp(t, b, normalDense(r, d, 2, 1))
		dst, _ := b.Alloc(tensor.Shape{Batch: 1, Rows: d, Cols: 3})
		geoSentinel(t, b, dst, sentinel)
		wantErr(t, "Solve k mismatch", lr.Solve(dst, g), backend.ErrShape, "", -1)
		geoUntouched(t, b, dst, sentinel)
		mu, _ := b.Alloc(tensor.Shape{Batch: 1, Rows: d, Cols: 2})
		wantErr(t, "Sample μ d×2", lr.Sample(dst, mu, rng.Counter{}), backend.ErrShape, "mu", -1)
		geoUntouched(t, b, dst, sentinel)
		lrFree(b, g, dst, mu)
	}

	// RecursiveEM: shapes and domain, W and ψ untouched.
	xm := normalDense(r, d, 2, 1)
	x := lrUp(t, b, xm)
	xbad, _ := b.Alloc(tensor.Shape{Batch: 1, Rows: d - 1, Cols: 2})
	defer lrFree(b, x, xbad)
	type emCase struct {
		name        string
		x           *tensor.Tensor
		alpha, beta float64
		opt         backend.EMOptions
		cause       error
		operand     string
	}
	for _, c := range []emCase{
		{"x rows", xbad, 1, 1, backend.EMOptions{}, backend.ErrShape, "x"},
		{"α < 0", x, -0.1, 1, backend.EMOptions{}, backend.ErrDomain, "alpha"},
		{"β < 0", x, 1, -1, backend.EMOptions{}, backend.ErrDomain, "beta"},
		{"α NaN", x, math.NaN(), 1, backend.EMOptions{}, backend.ErrDomain, "alpha"},
		{"α = β = 0", x, 0, 0, backend.EMOptions{}, backend.ErrDomain, ""},
		{"Inner < 0", x, 1, 1, backend.EMOptions{Inner: -1}, backend.ErrDomain, ""},
		{"floor < 0", x, 1, 1, backend.EMOptions{PsiFloor: -1}, backend.ErrDomain, ""},
	} {
		_, err := backend.RecursiveEM(b, w, ps, c.x, c.alpha, c.beta, c.opt)
		wantErr(t, "RecursiveEM "+c.name, err, c.cause, c.operand, -1)
		lrSame(t, b, "RecursiveEM "+c.name+" W", w, wm)
		if e := lrRelVec(lrDownVec(t, b, ps), psi); e != 0 {
			t.Fatalf("RecursiveEM %s: ψ changed", c.name)
		}
	}

	// NaN in W is not scanned for (documented); it must propagate into the solve, never vanish.
	wn := mat.DenseCopyOf(wm)
	wn.Set(3, 1, math.NaN())
	wnt := lrUp(t, b, wn)
	defer b.Free(wnt)
	l := lrCapacityL(t, b, w, ps)
	defer b.Free(l)
	for _, im := range implsOf(backend.SolveOp, b, w.Shape()) {
		g := lrUp(t, b, normalDense(r, d, 1, 1))
		if err := im.fn(b, g, wnt, ps, l, g); err != nil {
			t.Fatalf("%s: %v", im.name, err)
		}
		if !math.IsNaN(lrDownVec(t, b, g)[3]) {
			t.Errorf("%s: NaN in W did not propagate into the solve", im.name)
		}
		b.Free(g)
	}
}

// ---- benchmarks ----

// benchLowRank times the hot operations at p = 100 and d = 1e4, 1e5 and (not with -short) 1e6, next to two floors
// measured in the same run on the same backend:
//   - floor-gemm: Gemm (d×p)·(p×p) → d×p, dp² multiply-adds; its GFLOP/s is the DGEMM rate R.
//   - floor-copy: Copy of W (d×p), 16dp bytes moved (read + write); its GB/s is the copy bandwidth B.
//   - floor-rng: FillNormal of d×10, the draws sample-k10 needs (reported as GB/s of output).
//
// Each op reports GFLOP/s (2 × multiply-adds / time, counts below), GB/s (bytes of W moved / time) and x_floor:
// time / floor time, the floor being MACs/R for the EM step and (bytes of W read)/B for solve and sample.
func benchLowRank(bb *testing.B, be backend.Backend) {
	const p = 100
	for _, sz := range []struct {
		name string
		d    int
	}{{"small", 10000}, {"medium", 100000}, {"large", 1000000}} {
		bb.Run(fmt.Sprintf("%s/d=%d,p=%d", sz.name, sz.d, p), func(bb *testing.B) {
			if sz.d >= 1000000 && testing.Short() {
				bb.Skip("d = 1e6 skipped with -short")
			}
			lrBench(bb, be, sz.d, p)
		})
	}
}

func lrBench(bb *testing.B, be backend.Backend, d, p int) {
	alloc := func(r, c int) *tensor.Tensor {
		x, err := be.Alloc(tensor.Shape{Batch: 1, Rows: r, Cols: c})
		if err != nil {
			bb.Fatal(err)
		}
		return x
	}
	must := func(err error) {
		if err != nil {
			bb.Fatal(err)
		}
	}
	const k = 10
	w, w2, ps := alloc(d, p), alloc(d, p), alloc(d, 1)
	x, g1, g10, d1, d10, smp := alloc(d, 1), alloc(d, 1), alloc(d, k), alloc(d, 1), alloc(d, k), alloc(d, k)
	pp := alloc(p, p)
	defer lrFree(be, w, w2, ps, x, g1, g10, d1, d10, smp, pp)
	c := rng.Counter{Seed: 42}
	must(be.FillNormal(w, c))
	must(be.Axpby(w, 1/math.Sqrt(float64(p)), w, 0, nil))
	must(be.FillNormal(ps, c.Advance(d*p)))
	must(be.Map(ps, backend.Exp, 0.5, ps)) // ψ log-normal
	must(be.FillNormal(x, c.Advance(d*p+d)))
	must(be.FillNormal(g1, c.Advance(d*p+2*d)))
	must(be.FillNormal(g10, c.Advance(d*p+3*d)))
	must(be.FillNormal(pp, c.Advance(d*p+3*d+d*k)))
	lr, err := backend.NewLowRank(be, w, ps)
	must(err)
	defer lr.Close()
	fd, fp := float64(d), float64(p)
	wBytes := 8 * fd * fp
	var gemmRate, copyBW float64 // measured floors (flop/s, byte/s)

	report := func(b *testing.B, macs, bytes float64) (secs float64) {
		secs = b.Elapsed().Seconds() / float64(b.N)
		if macs > 0 {
			b.ReportMetric(2*macs/secs/1e9, "GFLOP/s")
		}
		if bytes > 0 {
			b.ReportMetric(bytes/secs/1e9, "GB/s")
		}
		return secs
	}
	// loop runs f once untimed (first touch of the outputs' pages, scratch pools: the first call into a fresh
	// d×p output spends as long in page faults as the product itself), then b.Loop times it.
	loop := func(b *testing.B, f func()) {
		f()
		must(be.Sync())
		for b.Loop() {
			f()
		}
	}
	bb.Run("floor-gemm", func(b *testing.B) {
		loop(b, func() { must(be.Gemm(blas.NoTrans, blas.NoTrans, 1, w, pp, 0, w2)) })
		must(be.Sync())
		secs := report(b, fd*fp*fp, 0)
		gemmRate = 2 * fd * fp * fp / secs
	})
	bb.Run("floor-copy", func(b *testing.B) {
		loop(b, func() { must(be.Copy(w2, w)) })
		must(be.Sync())
		secs := report(b, 0, 2*wBytes)
		copyBW = 2 * wBytes / secs
	})
	var rngSecs float64
	bb.Run("floor-rng", func(b *testing.B) {
		// FillNormal of d×K (K = 10): the random draws alone of sample-k10.
		var cc rng.Counter
		loop(b, func() {
			must(be.FillNormal(smp, cc))
			cc = cc.Advance(d * k)
		})
		must(be.Sync())
		rngSecs = report(b, 0, 8*fd*k)
	})
	xFloor := func(b *testing.B, secs, floorSecs float64) {
		if floorSecs > 0 {
			b.ReportMetric(secs/floorSecs, "x_floor")
		}
	}
	bb.Run("em", func(b *testing.B) {
		// RecursiveEM, Inner = 1, K_c = 1, α = β = 1 (linear-regression precision mode). Multiply-adds of the
		// selected implementation: the fused CPU kernel does dp²/2 (SYRK for M) + dp(p+1) (H) + dp² (W_new) +
		// dp (Y) ≈ 2.5dp² + 2dp; the reference does dp² (M) + dp² (α W M) + dp² (B) + dp² (two TRSMs) + dp² (G M)
		// + 4dp ≈ 5dp² + 4dp. Bytes: fused 3 passes of W (read, read, write) = 24dp; reference ≈ 19 d×p passes.
		_, name := backend.EMStepOp.Select(be, w.Shape())
		macs, passes := 2.5*fd*fp*fp+2*fd*fp, 3.0
		if name == "reference" {
			macs, passes = 5*fd*fp*fp+4*fd*fp, 19
		}
		loop(b, func() {
			if _, err := backend.RecursiveEM(be, w, ps, x, 1, 1, backend.EMOptions{Inner: 1}); err != nil {
				b.Fatal(err)
			}
		})
		must(be.Sync())
		secs := report(b, macs, passes*wBytes)
		if gemmRate > 0 {
			xFloor(b, secs, 2*macs/gemmRate)
		}
		must(lr.Refactor())
	})
	solve := func(name string, g, dst *tensor.Tensor, kk int) {
		bb.Run(name, func(b *testing.B) {
			// 2 passes over W (Wᵀ(g⊘ψ), then W v): 2dpk multiply-adds, 16dp bytes of W read.
			loop(b, func() { must(lr.Solve(dst, g)) })
			must(be.Sync())
			secs := report(b, 2*fd*fp*float64(kk), 2*wBytes)
			if copyBW > 0 {
				xFloor(b, secs, 2*wBytes/copyBW)
			}
		})
	}
	solve("solve-k1", g1, d1, 1)
	solve("solve-k10", g10, d10, k)
	bb.Run("logdet", func(b *testing.B) {
		// Σ log ψ (d logs, 8d bytes) + the cached p×p factor.
		loop(b, func() {
			if _, err := lr.LogDet(); err != nil {
				b.Fatal(err)
			}
		})
		report(b, 0, 8*fd)
	})
	bb.Run("sample-k10", func(b *testing.B) {
		// 2 passes over W (Wᵀx, then W Q): 2dpK multiply-adds, dK normal draws, 16dp bytes of W read.
		var cc rng.Counter
		loop(b, func() {
			must(lr.Sample(smp, nil, cc))
			cc = cc.Advance((d + p) * k)
		})
		must(be.Sync())
		secs := report(b, 2*fd*fp*k, 2*wBytes)
		if copyBW > 0 {
			xFloor(b, secs, 2*wBytes/copyBW)
			if rngSecs > 0 {
				// Against the bandwidth floor plus the time of the d×K normal draws themselves.
				b.ReportMetric(secs/(2*wBytes/copyBW+rngSecs), "x_floor+rng")
			}
		}
	})
	bb.Run("capacitance", func(b *testing.B) {
		// One pass over W: SYRK of Ψ^{-1/2} W, dp²/2 multiply-adds; 8dp bytes of W read.
		loop(b, func() { must(lr.Refactor()) })
		must(be.Sync())
		report(b, fd*fp*fp/2, wBytes)
	})
}
