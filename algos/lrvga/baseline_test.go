package lrvga

// The sampled scheme's moments at the state of T16 (Fig. 4, Sec. 5.4) at σ₀ = 3. The batch Laplace baseline and T15
// (Fig. 3) are tested in internal/repro/lrvgaref, T16 (Fig. 4) in fig4_test.go.

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/models/glm"
)

// The ensemble expectations of the sampled scheme at the state the filter has in T16 at σ₀ = 3 (d = 1000, p = 10,
// seed 2, after 300 observations of K = 10 updates, where xᵀPx ≈ 18 for the next input): R = 2000 calls of the
// moment estimator (Prop. 1 draws, fresh each call) against Gaussian quadrature of a = xᵀθ ~ N(xᵀμ, xᵀPx) (xᵀPx by a
// Woodbury solve). The mean estimate m̄ = (1/K) Σ σ(a_i) and the curvature c̄ = (1/K) Σ σ'(a_i) must average to
// E[σ(a)], E[σ'(a)] within 4 standard errors (unbiased), and the variance of m̄ over the calls must be Var σ(a)/K
// within 4 standard errors of a variance estimate (the noise Prop. 1 implies, no more). The probit closed form of
// the analytic baseline must sit more than 6 standard errors from E[σ(a)] here, so the check tells exact Gaussian
// expectations from the probit ones. Measured (xᵀμ = −6.61, xᵀPx = 14.9): m̄ −1.1 and c̄ −1.7 s.e. from
// quadrature, Var m̄ / (Var σ/K) = 1.012 (0.3 s.e.); the probit E[σ] is 0.0742 against the exact 0.0605 (11 s.e.).
func TestSampledMomentsSigma3(t *testing.T) {
	const d, p, n, k, reps, sigma0 = 1000, 10, 300, 10, 2000, 3.0
	data := glm.LogisticMixture(glm.NewDesign(d, 1, 2), n+1, 0.15, 2)
	f, err := New(testbackend.Open(t), Config{D: d, P: p, Inner: 1, Sigma0: sigma0, InitStd: 1e-2, Seed: 2,
		Scheme: SchemeExtragrad, Model: glm.Logistic{}, Samples: k})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := 0; i < n; i++ {
		if err := f.Update(data.Row(i), data.Y[i]); err != nil {
			t.Fatal(err)
		}
	}
	b := f.b
	x, y := data.Row(n), data.Y[n]
	xt := upload(t, b, x, d, 1)
	if err := b.Copy(f.x, xt); err != nil {
		t.Fatal(err)
	}
	if err := f.cur.lr.Solve(f.g2, f.x); err != nil {
		t.Fatal(err)
	}
	xx := dotHost(x, x)
	nu := dotHost(download(t, b, f.g2), x)
	a := dotHost(download(t, b, f.cur.mu), x)
	fac := alloc(t, b, d, 1)
	sq := func(z float64) float64 { return Sigmoid(z) * Sigmoid(z) }
	ref := gaussExpect(a, nu, Sigmoid, SigmoidPrime, sq, func(z float64) float64 { return SigmoidPrime(z) * SigmoidPrime(z) })
	varS, varSP := ref[2]-ref[0]*ref[0], ref[3]-ref[1]*ref[1]
	var sm, smm, sc, m4 float64
	ms := make([]float64, reps)
	for r := 0; r < reps; r++ {
		if err := f.moments(f.cur.mu, f.cur.lr, y, f.g, fac); err != nil {
			t.Fatal(err)
		}
		m := y - dotHost(download(t, b, f.g), x)/xx // ḡ = x (y − m̄)
		rc := dotHost(download(t, b, fac), x) / xx  // X = x √c̄
		ms[r] = m
		sm += m
		sc += rc * rc
	}
	mean := sm / reps
	for _, m := range ms {
		smm += (m - mean) * (m - mean)
		m4 += math.Pow(m-mean, 4)
	}
	v := smm / (reps - 1)
	seV := math.Sqrt((m4/reps - v*v) / reps)
	zm := (mean - ref[0]) / math.Sqrt(varS/(k*reps))
	zc := (sc/reps - ref[1]) / math.Sqrt(varSP/(k*reps))
	zv := (v - varS/k) / seV
	pm, _ := probitMoments(a, nu)
	zp := (pm - ref[0]) / math.Sqrt(varS/(k*reps))
	t.Logf("xᵀμ = %.3f, xᵀPx = %.3f: m̄ %.5f vs E σ %.5f (%.1f s.e.); c̄ %.5f vs E σ' %.5f (%.1f s.e.); Var m̄ %.4e vs Var σ/K %.4e (ratio %.3f, %.1f s.e.); probit %.5f (%.0f s.e.)",
		a, nu, mean, ref[0], zm, sc/reps, ref[1], zc, v, varS/k, v/(varS/k), zv, pm, zp)
	if math.Abs(zm) > 4 || math.Abs(zc) > 4 || math.Abs(zv) > 4 {
		t.Errorf("ensemble moments at σ₀ = 3: m̄ %.1f, c̄ %.1f, Var m̄ %.1f standard errors from quadrature (≤ 4)", zm, zc, zv)
	}
	if math.Abs(zp) < 6 {
		t.Errorf("probit E[σ] only %.1f standard errors from quadrature: the check cannot tell exact from probit", zp)
	}
}

// relDiff returns ‖a − b‖/‖b‖.
func relDiff(a, b []float64) float64 { return floats.Distance(a, b, 2) / floats.Norm(b, 2) }
