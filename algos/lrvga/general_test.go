package lrvga

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/models/glm"
)

// gaussMoments returns E[σ(a)] and E[σ'(a)] for a ~ N(m, v) by gaussExpect.
func gaussMoments(m, v float64) (es, esp float64) {
	e := gaussExpect(m, v, Sigmoid, SigmoidPrime)
	return e[0], e[1]
}

// gaussExpect returns E[fn(a)] for a ~ N(m, v) for each fn by the trapezoid rule on ±12 standard deviations (4001
// nodes: exact to far below the Monte Carlo errors compared with it).
func gaussExpect(m, v float64, fns ...func(float64) float64) []float64 {
	sd := math.Sqrt(v)
	const n = 4000
	h := 24.0 / n
	w := 0.0
	out := make([]float64, len(fns))
	for i := 0; i <= n; i++ {
		z := -12 + float64(i)*h
		g := math.Exp(-z*z/2) * h
		if i == 0 || i == n {
			g /= 2
		}
		w += g
		for j, fn := range fns {
			out[j] += g * fn(m+sd*z)
		}
	}
	for j := range out {
		out[j] /= w
	}
	return out
}

// denseGaussStep is one step of a full-covariance scheme with exact expectations: the reference for the general
// nonlinear L-RVGA (Sec. 4.2, App. G). P0 = σ₀² I, μ₀ = 0, one observation (x, y).
func denseGaussStep(scheme Scheme, x []float64, y, sigma0 float64, rounds int) (mu []float64, nu float64) {
	d := len(x)
	xv := mat.NewVecDense(d, x)
	xx := mat.Dot(xv, xv)
	s2 := sigma0 * sigma0
	// With P⁻¹ = I/σ₀² + c x xᵀ: P x = σ₀² x/(1 + c σ₀² ‖x‖²), xᵀPx = σ₀²‖x‖²/(1 + cσ₀²‖x‖²).
	px := func(c float64) float64 { return s2 / (1 + c*s2*xx) }
	mom := func(alpha, c float64) (float64, float64) { return gaussMoments(alpha, px(c)*xx) }
	scale := func(coef float64) []float64 {
		out := make([]float64, d)
		for i := range out {
			out[i] = coef * x[i]
		}
		return out
	}
	// q_{t-1}: xᵀμ = 0, c = 0.
	m0, c0 := mom(0, 0)
	muHatCoef := px(c0) * (y - m0) // μ̂ = P̂ x (y − m̄)
	alphaHat := muHatCoef * xx
	switch scheme {
	case SchemeExplicit:
		return scale(muHatCoef), px(c0) * xx
	case SchemeExtragrad:
		m1, _ := mom(alphaHat, c0)
		return scale(px(c0) * (y - m1)), px(c0) * xx
	case SchemeMirrorProx:
		m1, c1 := mom(alphaHat, c0)
		return scale(px(c1) * (y - m1)), px(c1) * xx
	case SchemeImplicit:
		// Round r: moments at (μ^(r), P^(r)); c ← c̄, μ ← μ₀ + P₀ x (y − m̄) ((3) uses P_{t-1}).
		alpha, c := 0.0, 0.0
		var coef float64
		for r := 0; r < rounds; r++ {
			m, cn := mom(alpha, c)
			c = cn
			coef = s2 * (y - m)
			alpha = coef * xx
		}
		return scale(coef), px(c) * xx
	}
	panic(scheme)
}

// The general nonlinear L-RVGA (explicit, implicit, extragrad = partial mirror prox, full mirror prox) with the
// logistic model through the Model interface (GGN factor, Prop. 1 ensemble draws), one step from the prior, against
// the same schemes with dense covariance and exact expectations (quadrature). K = 20000 draws (Philox seed 11,
// deterministic): measured errors are ≤ 0.7% in μ and ≤ 0.3% in xᵀPx; the schemes differ from each other by more
// (extragrad vs mirror-prox: 1% in xᵀPx, 1% in μ; explicit vs extragrad: 70% in μ).
func TestGeneralSchemes(t *testing.T) {
	b := testbackend.Open(t)
	x := []float64{0.54, -0.24, 0.66, 0.12, -0.48, 0.3, 0.78, -0.36} // ‖x‖² ≈ 1.9: the implicit fixed point contracts
	const d, y, sigma0 = 8, 1.0, 1.5
	for _, scheme := range []Scheme{SchemeExplicit, SchemeExtragrad, SchemeMirrorProx, SchemeImplicit} {
		f, err := New(b, Config{D: d, P: 3, Scheme: scheme, Model: glm.Logistic{}, Samples: 20000, Sigma0: sigma0,
			Inner: 50, Eps: 1e-10, Seed: 11, FixedPoint: 3})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Update(x, y); err != nil {
			t.Fatal(err)
		}
		mu, _ := f.MeanHost(nil)
		want, nuWant := denseGaussStep(scheme, x, y, sigma0, 3)
		xt := upload(t, b, x, d, 1)
		px := alloc(t, b, d, 1)
		if err := f.Precision().Solve(px, xt); err != nil {
			t.Fatal(err)
		}
		nu := dotHost(download(t, b, px), x)
		num, den := 0.0, 0.0
		for i := range mu {
			num += (mu[i] - want[i]) * (mu[i] - want[i])
			den += want[i] * want[i]
		}
		rel := math.Sqrt(num / den)
		t.Logf("%s: ‖μ − μ_ref‖/‖μ_ref‖ = %.2e (‖μ_ref‖ = %.4f), xᵀPx = %.6f vs %.6f", scheme, rel, math.Sqrt(den), nu, nuWant)
		if rel > 0.015 || math.Abs(nu-nuWant) > 0.006*nuWant {
			t.Errorf("%s: μ rel err %.2e (≤ 1.5%%), xᵀPx %.6f vs %.6f (≤ 0.6%%)", scheme, rel, nu, nuWant)
		}
		f.Close()
	}
}

// generalLogistic hides glm.Logistic's ConstantJacobian, forcing the general K·m-column GGN factor.
type generalLogistic struct{ glm.Logistic }

func (generalLogistic) ConstantJacobian() bool { return false }

// The general GGN factor (K columns c_i = x √σ'(xᵀθ_i)/√K) and the one-column GLM factor give the same X Xᵀ, so
// with the same draws the two paths must agree to rounding.
func TestGeneralFactorPaths(t *testing.T) {
	b := testbackend.Open(t)
	const d = 30
	data := glm.LogisticMixture(glm.NewDesign(d, 1, 3), 40, 0.2, 3)
	var mus [2][]float64
	for i, m := range []Model{glm.Logistic{}, generalLogistic{}} {
		f, err := New(b, Config{D: d, P: 4, Scheme: SchemeExtragrad, Model: m, Samples: 50, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < data.N; n++ {
			if err := f.Update(data.Row(n), data.Y[n]); err != nil {
				t.Fatal(err)
			}
		}
		mus[i], _ = f.MeanHost(nil)
		f.Close()
	}
	worst, nrm := 0.0, 0.0
	for i := range mus[0] {
		worst = math.Max(worst, math.Abs(mus[0][i]-mus[1][i]))
		nrm = math.Max(nrm, math.Abs(mus[0][i]))
	}
	t.Logf("one-column vs K-column GGN factor after 40 steps: max |Δμ| = %.2e (max |μ| = %.3f)", worst, nrm)
	if worst > 1e-9*nrm {
		t.Errorf("GGN factor paths differ: max |Δμ| = %.2e", worst)
	}
}
