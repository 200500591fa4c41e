package mgvb

import (
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/tensor"
)

// symPow returns S^p for a symmetric positive definite S by its eigendecomposition (gonum, float64).
func symPow(s *mat.SymDense, p float64) *mat.Dense {
	var e mat.EigenSym
	if !e.Factorize(s, true) {
		panic("eigendecomposition failed")
	}
	var v mat.Dense
	e.VectorsTo(&v)
	vals := e.Values(nil)
	d := len(vals)
	var out mat.Dense
	vs := mat.NewDense(d, d, nil)
	for j := 0; j < d; j++ {
		f := math.Pow(vals[j], p)
		for i := 0; i < d; i++ {
			vs.Set(i, j, v.At(i, j)*f)
		}
	}
	out.Mul(vs, v.T())
	return &out
}

// transportRef is the dense reference Γ_{S₁→S₂}(ξ) = EξEᵀ with E = (S₂S₁⁻¹)^{1/2} written as
// S₁^{1/2}(S₁^{-1/2}S₂S₁^{-1/2})^{1/2}S₁^{-1/2} (the principal root: a product similar to an SPD matrix), by
// symmetric eigendecompositions — another route than the backend's Cholesky form L₁N^{1/2}L₁⁻¹.
func transportRef(s1, s2 *mat.SymDense, xi *mat.Dense) *mat.Dense {
	d, _ := xi.Dims()
	h, mh := symPow(s1, 0.5), symPow(s1, -0.5)
	var n mat.Dense
	n.Product(mh, s2, mh)
	ns := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			ns.SetSym(i, j, (n.At(i, j)+n.At(j, i))/2)
		}
	}
	var e, out mat.Dense
	e.Product(h, symPow(ns, 0.5), mh)
	out.Product(&e, xi, e.T())
	return &out
}

// affineInner is tr(S⁻¹aS⁻¹b), the affine-invariant metric at S.
func affineInner(s *mat.SymDense, a, b *mat.Dense) float64 {
	var ch mat.Cholesky
	if !ch.Factorize(s) {
		panic("not SPD")
	}
	var x, y, p mat.Dense
	ch.SolveTo(&x, a)
	ch.SolveTo(&y, b)
	p.Mul(&x, &y)
	return mat.Trace(&p)
}

// TestC3Invariants is acceptance test C3 along MGVB runs on German credit (d = 25, prior N(0, 50 I),
// S = 100, two fits per batch, 150 iterations): the authors' settings (ε₀ = 0.01, iteration-0 gradient not
// clipped, whose huge first step is the hardest case for the retraction) and the converged settings (ε₀ = 0.05,
// clipped). At every iteration and for every fit:
//   - Σ_t is SPD (a float64 Cholesky of the downloaded Σ succeeds) and the retraction's step-halving safeguard never
//     fires (Result.Safeguard = 0);
//   - the momentum before and after the transport is exactly symmetric (bit for bit);
//   - the transported momentum equals a dense reference EξEᵀ, E = (S₂S₁⁻¹)^{1/2} by eigendecompositions (gonum),
//     to 1e-10 relative (Frobenius);
//   - the transport is an isometry of the affine-invariant metric: tr(S₂⁻¹ΓS₂⁻¹Γ) = tr(S₁⁻¹ξS₁⁻¹ξ) to 1e-10
//     relative (EξEᵀ is the parallel transport of the affine-invariant metric).
//
// The NNVB invariant of C3 (‖WᵀW − I‖ ≤ 1e-12 at every iteration) is asserted by TestC7Toy in algos/nnvb.
func TestC3Invariants(t *testing.T) {
	b := testbackend.Open(t)
	m := germanModel(t, b, true)
	d := m.Dim()
	const B, iters = 2, 150
	for _, c := range []struct {
		name     string
		step     float64
		clipInit bool
	}{{"authors' settings", 0.01, false}, {"converged settings", 0.05, true}} {
		cfg := DefaultConfig()
		cfg.Step, cfg.ClipInit, cfg.Patience, cfg.Seed = c.step, c.clipInit, 0, 11
		calls := 0
		var worstRef, worstIso float64
		cfg.transportHook = func(be backend.Backend, so, sn, before, after *T) error {
			calls++
			get := func(x *T) *tensor.Tensor {
				h := tensor.NewHost(x.Batch(), x.Rows(), x.Cols())
				if err := be.Download(h, x); err != nil {
					t.Fatal(err)
				}
				return h
			}
			hso, hsn, hb, ha := get(so), get(sn), get(before), get(after)
			for k := 0; k < B; k++ {
				for i := 0; i < d; i++ {
					for j := 0; j < i; j++ {
						if hb.At(k, i, j) != hb.At(k, j, i) || ha.At(k, i, j) != ha.At(k, j, i) {
							return fmt.Errorf("transport %d, fit %d: momentum not symmetric at (%d, %d): before %v/%v, after %v/%v",
								calls, k, i, j, hb.At(k, i, j), hb.At(k, j, i), ha.At(k, i, j), ha.At(k, j, i))
						}
					}
				}
				s1, s2 := symOf(hso, k), symOf(hsn, k)
				var ch mat.Cholesky
				if !ch.Factorize(s2) {
					return fmt.Errorf("transport %d, fit %d: Σ not positive definite", calls, k)
				}
				xi, got := mat.DenseCopyOf(symOf(hb, k)), mat.DenseCopyOf(symOf(ha, k))
				ref := transportRef(s1, s2, xi)
				var diff mat.Dense
				diff.Sub(got, ref)
				rel := mat.Norm(&diff, 2) / mat.Norm(ref, 2)
				i1, i2 := affineInner(s1, xi, xi), affineInner(s2, got, got)
				iso := math.Abs(i2-i1) / math.Abs(i1)
				worstRef, worstIso = math.Max(worstRef, rel), math.Max(worstIso, iso)
				if !(rel <= 1e-10) || !(iso <= 1e-10) {
					return fmt.Errorf("transport %d, fit %d: relative error to the dense EξEᵀ %.3g, isometry error %.3g", calls, k, rel, iso)
				}
			}
			return nil
		}
		mu0 := tensor.NewHost(B, d, 1)
		s0 := tensor.NewHost(B, d, d)
		for k := 0; k < B; k++ {
			for i := 0; i < d; i++ {
				s0.Set(k, i, i, 0.04)
			}
		}
		res, err := fitBatch(b, m, mu0, s0, cfg, run.Control{MaxIter: iters})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Logf("%s: %d transports × %d fits; worst relative error to the dense transport %.2g, worst isometry error %.2g; safeguard %d; smoothed LB %.2f",
			c.name, calls, B, worstRef, worstIso, res.Safeguard, res.Last.Smoothed)
		if calls != iters || res.Safeguard != 0 {
			t.Errorf("%s: %d transports in %d iterations, safeguard fired %d times", c.name, calls, iters, res.Safeguard)
		}
	}
}
