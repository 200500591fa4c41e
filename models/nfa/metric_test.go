package nfa

import (
	"math"
	"sort"
	"testing"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/internal/repro"
)

// warmNSSM returns the gate's NSSM (NSSM-SYN, d = 5, H = 20) of size T after iters RCG iterations from Init(0),
// with the between-step update applied at the returned means.
func warmNSSM(t *testing.T, T int, mo Moments, iters int) (*Model, []float64) {
	t.Helper()
	m, err := New(SyntheticNSSM(T, 1), T, 21, Config{Dynamic: true, D: 5, H: 20, Moments: mo})
	if err != nil {
		t.Fatal(err)
	}
	x0, err := m.Init(0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := rcg.Minimize(m, x0, rcg.Settings{Method: rcg.RCG, PowellBeale: 0.2}, run.Control{MaxIter: iters})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Update(res.X); err != nil {
		t.Fatal(err)
	}
	return m, res.X
}

// TestReproMetricIsCurvature checks the premise of RCG on the NSSM (notes §2.1): with the fixed-point variances
// (13), the Fisher metric of q matches the curvature of F in the means (Price/Bonnet), so a unit natural-gradient
// step is a (block-diagonal) Newton step. On the gate's NSSM-SYN (T = 100) after 100 RCG iterations with the
// Gauss–Hermite moments (≈ 10 s):
//   - weights: the diagonal Hessian ∂²F/∂w̄² by central differences of the analytic gradient (h = 1e-5, every third
//     weight) times the variance w̃ (the inverse of the metric) has median in [0.9, 1.1] and 5–95 % quantiles in
//     [0.75, 1.33];
//   - states: the decrease of F under the unit step −G⁻¹g on the state block (two chain scans per component) is
//     within 35 % of the quadratic model's ½gᵀG⁻¹g. (For the weights the unit step is not a Newton step: the diagonal
//     metric ignores their correlations, which the conjugate directions take care of.)
//
// Both checks fail without the clamp of the Gauss–Hermite residual variance (measured: H·w̃ 5–95 % 0.33–2.35, the
// unit state step raising F by 3.5e6), and the weight check fails with the Taylor moments (95 % quantile 2.54; up to
// ≈ 500 at other points, docs/rcg.md): the Taylor mean ½φ″(ȳ)ỹ breaks the Price/Bonnet identity when a
// pre-activation variance is O(1).
func TestReproMetricIsCurvature(t *testing.T) {
	repro.Require(t)
	m, x := warmNSSM(t, 100, GaussHermite, 100)
	g, gt := make([]float64, len(x)), make([]float64, len(x))
	F0 := m.Grad(g, x)
	m.NatGrad(gt, g, x)
	n := m.T * m.Cfg.D
	wv := append(append([]float64(nil), m.WVarF...), m.WVarG...)
	gp, gm := make([]float64, len(x)), make([]float64, len(x))
	var r []float64
	for k := 0; k < len(wv); k += 3 { // every third weight
		i := n + k
		old, h := x[i], 1e-5
		x[i] = old + h
		m.Grad(gp, x)
		x[i] = old - h
		m.Grad(gm, x)
		x[i] = old
		r = append(r, (gp[i]-gm[i])/(2*h)*wv[k])
	}
	sort.Float64s(r)
	q := func(p float64) float64 { return r[int(p*float64(len(r)-1))] }
	t.Logf("weights: H·w̃ quantiles 5%% %.3g, 50%% %.3g, 95%% %.3g (%d weights)", q(0.05), q(0.5), q(0.95), len(r))
	if q(0.5) < 0.9 || q(0.5) > 1.1 || q(0.05) < 0.75 || q(0.95) > 1.33 {
		t.Errorf("weights: H·w̃ quantiles %.3g, %.3g, %.3g not ≈ 1", q(0.05), q(0.5), q(0.95))
	}
	// The states: the chain metric has the tridiagonal structure of their Hessian, so the unit step on the block
	// should realise the quadratic model's decrease.
	xt := append([]float64(nil), x...)
	var gn float64
	for i := range n {
		xt[i] -= gt[i]
		gn += g[i] * gt[i]
	}
	dF := m.Value(xt) - F0
	t.Logf("states: unit natural step ΔF %.4g, quadratic model −½gᵀG⁻¹g %.4g", dF, -gn/2)
	if rel := math.Abs(dF+gn/2) / (gn / 2); !(rel <= 0.35) {
		t.Errorf("states: unit natural step ΔF %.4g vs model %.4g (relative difference %.2g)", dF, -gn/2, rel)
	}
}
