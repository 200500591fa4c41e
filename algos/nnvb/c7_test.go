package nnvb

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/internal/testbackend"
)

// c7Target is the 2-D correlated Gaussian target of acceptance test C7 (means (0.3, −0.2), variances 0.03,
// covariance 0.01; within reach of the sigmoid family, whose spread per direction is about that of
// sigmoid(N(0, 1)), sd 0.21; normalised, so ELBO = −KL(q‖p) ≤ 0).
func c7Target() *gauss { return newGauss([]float64{0.3, -0.2}, []float64{0.03, 0.01, 0.01, 0.03}) }

// c7 fits the C7 target with S = 200 draws from the same start (Haar-random W, b = 0) and seed, the smoothed LB
// over a window of 21.
func c7(t *testing.T, cfg Config, iters int) *Result {
	t.Helper()
	b := testbackend.Open(t)
	p, err := RandomInit(b, 2, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.S, cfg.TrackOrth, cfg.Seed, cfg.Window = 200, true, 2, 21
	res, err := fitFrom(b, c7Target(), p, cfg, run.Control{MaxIter: iters})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// firstReach is the first iteration (1-based) whose smoothed LB is ≥ target, or 0.
func firstReach(sm []float64, target float64) int {
	for i, v := range sm {
		if v >= target {
			return i + 1
		}
	}
	return 0
}

// meanOf is the mean of x[lo:hi].
func meanOf(x []float64, lo, hi int) float64 {
	s := 0.0
	for _, v := range x[lo:hi] {
		s += v
	}
	return s / float64(hi-lo)
}

// TestC7Toy is acceptance test C7 on the 2-D Gaussian toy, 600 iterations, constant steps (τ = 0) for every run,
// each ε₀ the best of {0.01, 0.03, 0.1, 0.3, 1} for its method by the mean smoothed LB over iterations 101–600:
// plain (Euclidean gradient, ε₀ = 0.01; 0.1 and above diverge), the paper's K-FAC natural gradient (ε₀ = 0.3) and
// the K-FAC natural gradient with the W₂ gradient projected onto the tangent space first (Config.ProjectFirst,
// ε₀ = 0.3). Asserted:
//   - ‖WᵀW − I‖_max ≤ 1e-12 at every iteration of every run (C3);
//   - the smoothed LB rises: its final value exceeds its first full-window value;
//   - the target's log normaliser is 0, so the smoothed LB must not exceed 0 by more than its MC noise (0.02), and
//     KL(q‖p) = −ELBO must end below 0.5 nats (the sigmoid family cannot match a Gaussian exactly);
//   - the natural gradient with ProjectFirst holds a higher smoothed LB than plain: mean over iterations 101–600
//     −0.259 against −0.289 (asserted: higher by at least 0.01; over five start/draw seeds the margin was
//     0.015–0.045 nats), and it reaches plain's level (plain's mean over 101–600) within 100 iterations.
//
// Measured and logged, not asserted: the expectation that the natural gradient reaches a given LB in fewer
// iterations does not hold here in the paper's form. Its mean smoothed LB over 101–600 is −0.310, below plain, and
// it first reaches plain's level after ~300 iterations, plain after ~25 (plain with a tuned step is already nearly
// Newton for the location b₂, which dominates the early LB). The cause is not the K-FAC algebra (TestB6KFAC checks
// (5.7)–(5.9) against a dense Kronecker solve, TestC7FisherDense the Fisher scores with the corrected Jacobian
// term) but the Euclidean projection of the ambient natural gradient (Lemma 3.2 applied to G = K⁻¹g): it mixes
// the normal part of the ambient gradient into the W₂ step (see TestC7FisherDense), which ProjectFirst removes.
func TestC7Toy(t *testing.T) {
	const iters = 600
	plainCfg, natCfg, pfCfg := DefaultConfig(), DefaultConfig(), DefaultConfig()
	plainCfg.Plain, plainCfg.Step = true, 0.01
	natCfg.Step = 0.3
	pfCfg.Step, pfCfg.ProjectFirst = 0.3, true
	pl, nat, pf := c7(t, plainCfg, iters), c7(t, natCfg, iters), c7(t, pfCfg, iters)
	level := meanOf(pl.Smoothed, 100, iters)
	for _, r := range []struct {
		name string
		res  *Result
	}{{"plain", pl}, {"natural (paper's K-FAC)", nat}, {"natural, ProjectFirst", pf}} {
		worst := 0.0
		for _, o := range r.res.Orth {
			worst = math.Max(worst, o)
		}
		if len(r.res.Orth) != iters || worst > 1e-12 {
			t.Errorf("%s: %d orthogonality records, worst ‖WᵀW − I‖ %.3g", r.name, len(r.res.Orth), worst)
		}
		sm := r.res.Smoothed
		f := sm[iters-1]
		if !(f > sm[20]) {
			t.Errorf("%s: smoothed LB fell from %.4f to %.4f", r.name, sm[20], f)
		}
		if f > 0.02 || f < -0.5 {
			t.Errorf("%s: final smoothed LB %.4f: outside [−0.5, 0.02] (log normaliser 0)", r.name, f)
		}
		t.Logf("%s: smoothed LB at 21: %.4f, 50: %.4f, 100: %.4f, %d: %.4f; mean over 101–%d %.4f; reaches plain's level %.4f at %d; worst orth %.2g",
			r.name, sm[20], sm[49], sm[99], iters, f, iters, meanOf(sm, 100, iters), level, firstReach(sm, level), worst)
	}
	if m := meanOf(pf.Smoothed, 100, iters); !(m >= level+0.01) {
		t.Errorf("ProjectFirst: mean smoothed LB over 101–%d %.4f, plain %.4f", iters, m, level)
	}
	if k := firstReach(pf.Smoothed, level); k == 0 || k > 100 {
		t.Errorf("ProjectFirst reaches plain's level %.4f at iteration %d", level, k)
	}
}

// tangentScores returns, per draw of the work's last batch (d = 2), the Fisher scores ∂log q(θ)/∂λ at fixed θ along
// the tangent basis (b₁ (2), W₂Ω with Ω = [[0, 1], [−1, 0]], b₂ (2)) from the δ_z the gradient computed:
// s_b₁ = W₁ε, s_W₂Ω = zᵀΩδ_z, s_b₂ = −W₂δ_z (the K-FAC scores of (5.5)–(5.9) with the corrected δ_z).
func tangentScores(w *work, p Params) [][5]float64 {
	S := w.S
	E, Z, Dz := w.hE.Storage().Host(), w.hZ.Storage().Host(), w.hDz.Storage().Host()
	W1, W2 := p.W1, p.W2
	out := make([][5]float64, S)
	for s := 0; s < S; s++ {
		e, z, dz := [2]float64{E[s], E[S+s]}, [2]float64{Z[s], Z[S+s]}, [2]float64{Dz[s], Dz[S+s]}
		out[s] = [5]float64{W1[0]*e[0] + W1[1]*e[1], W1[2]*e[0] + W1[3]*e[1], z[0]*dz[1] - z[1]*dz[0],
			-(W2[0]*dz[0] + W2[1]*dz[1]), -(W2[2]*dz[0] + W2[3]*dz[1])}
	}
	return out
}

// rotate returns W expm(hΩ), Ω = [[0, 1], [−1, 0]] (a curve on O(2) with velocity WΩ).
func rotate(w []float64, h float64) []float64 {
	c, s := math.Cos(h), math.Sin(h)
	return []float64{w[0]*c - w[1]*s, w[0]*s + w[1]*c, w[2]*c - w[3]*s, w[2]*s + w[3]*c}
}

// TestC7FisherDense checks the natural gradient of NNVB against a dense Fisher on a tiny net (d = 2, at the C7
// start):
//   - the Fisher scores built from δ_z with the corrected Jacobian term equal central finite
//     differences of log q(θ) (LogDensity, the inverse path) in b₁, b₂ and along the O(2) tangent W₂Ω to 1e-6
//     relative; the paper-literal h”(a) form misses by more than 1e-3;
//   - the scores have mean zero under q (200,000 draws; within 4 standard errors), as scores must; the literal
//     form's do not (more than 10 standard errors off);
//   - the paper's W₂ direction Proj((W₂C_zW₂ᵀ + γ_zI)⁻¹ G (C_δ + γ_δI)⁻¹) changes when the ambient gradient gains
//     the normal term W₂ = ∇ log|det W₂| (log|det W₂| is constant on O(d), so the ELBO on the manifold is unchanged):
//     by more than 1e-3 relative (measured 3 %); with ProjectFirst it changes by less than 1e-12.
//
// Logged (measured at this point): the relative Frobenius error of the K-FAC factorisation W₂C_zW₂ᵀ ⊗ C_δ against
// the dense ambient Fisher E[vec s vec sᵀ] of the W₂ block (0.44), and the cosines, in the dense tangent Fisher
// metric, of the K-FAC directions with the exact natural gradient F⁻¹g over (b₁, W₂Ω, b₂): 0.67 for the paper's,
// 0.76 with ProjectFirst; both W₂ steps are far longer than the exact one (coordinate 0.89 and 0.53 against 0.004).
func TestC7FisherDense(t *testing.T) {
	b := testbackend.Open(t)
	p, err := RandomInit(b, 2, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.B1 = []float64{0.4, -0.7}
	p.B2 = []float64{0.1, 0.2}
	for _, literal := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.S, cfg.Seed, cfg.literal = 200000, 1, literal
		w, err := newWork(b, c7Target(), cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.grad(); err != nil {
			t.Fatal(err)
		}
		sc := tangentScores(w, p)
		th := w.download(w.th)
		// Finite differences of log q at fixed θ (first 5 draws).
		worstFD := 0.0
		for s := 0; s < 5; s++ {
			x := []float64{th[s], th[cfg.S+s]}
			fd := func(mod func(q *Params, h float64)) float64 {
				const h = 1e-6
				var v [2]float64
				for k, hh := range []float64{h, -h} {
					q := Params{W1: p.W1, W2: append([]float64(nil), p.W2...), B1: append([]float64(nil), p.B1...), B2: append([]float64(nil), p.B2...)}
					mod(&q, hh)
					v[k] = LogDensity(q, x)
				}
				return (v[0] - v[1]) / (2 * h)
			}
			fds := [5]float64{
				fd(func(q *Params, h float64) { q.B1[0] += h }), fd(func(q *Params, h float64) { q.B1[1] += h }),
				fd(func(q *Params, h float64) { q.W2 = rotate(q.W2, h) }),
				fd(func(q *Params, h float64) { q.B2[0] += h }), fd(func(q *Params, h float64) { q.B2[1] += h }),
			}
			for i := range fds {
				worstFD = math.Max(worstFD, math.Abs(fds[i]-sc[s][i])/math.Max(1, math.Abs(fds[i])))
			}
		}
		// Mean of the δ_z scores (W₂ and b₂ directions) in standard errors.
		worstZ := 0.0
		for i := 2; i < 5; i++ {
			var s1, s2 float64
			for _, v := range sc {
				s1, s2 = s1+v[i], s2+v[i]*v[i]
			}
			n := float64(len(sc))
			m := s1 / n
			se := math.Sqrt((s2/n - m*m) / n)
			worstZ = math.Max(worstZ, math.Abs(m)/se)
		}
		t.Logf("literal=%v: scores vs finite differences of log q: worst relative error %.2g; worst |mean score| %.1f standard errors", literal, worstFD, worstZ)
		if !literal && (worstFD > 1e-6 || worstZ > 4) {
			t.Errorf("corrected scores: finite-difference error %.3g, mean %.1f standard errors", worstFD, worstZ)
		}
		if literal && !(worstFD > 1e-3 && worstZ > 10) {
			t.Errorf("paper-literal scores pass: finite-difference error %.3g, mean %.1f standard errors", worstFD, worstZ)
		}
		if !literal {
			fisherDirections(t, w, p, sc)
		}
		w.free()
	}
	// Dependence on the ambient extension, at S = 200 as in a fit.
	for _, first := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.S, cfg.Seed, cfg.ProjectFirst = 200, 1, first
		w, err := newWork(b, c7Target(), cfg, p)
		if err != nil {
			t.Fatal(err)
		}
		dir := func() []float64 {
			if err := w.natural(); err != nil {
				t.Fatal(err)
			}
			if err := w.riemannian(); err != nil {
				t.Fatal(err)
			}
			return w.download(w.r2)
		}
		if err := w.grad(); err != nil {
			t.Fatal(err)
		}
		r0 := dir()
		if err := b.Axpby(w.g2, 1, w.g2, 1, w.w2); err != nil { // + ∇ log|det W₂| = W₂⁻ᵀ = W₂
			t.Fatal(err)
		}
		r1 := dir()
		w.free()
		var dn, n float64
		for i := range r0 {
			dn += (r1[i] - r0[i]) * (r1[i] - r0[i])
			n += r0[i] * r0[i]
		}
		rel := math.Sqrt(dn / n)
		t.Logf("ProjectFirst=%v: W₂ direction changes by %.3g relative when log|det W₂| is added to the ambient objective", first, rel)
		if first && rel > 1e-12 || !first && rel < 1e-3 {
			t.Errorf("ProjectFirst=%v: relative change %.3g", first, rel)
		}
	}
}

// fisherDirections logs how the K-FAC approximation compares with the dense Fisher at the work's point: the W₂
// block's ambient Kronecker factorisation against E[vec s vec sᵀ], and the directions against the exact natural
// gradient F⁻¹g in the tangent coordinates (b₁, W₂Ω, b₂).
func fisherDirections(t *testing.T, w *work, p Params, sc [][5]float64) {
	S := float64(len(sc))
	F := mat.NewSymDense(5, nil)
	for _, v := range sc {
		for i := 0; i < 5; i++ {
			for j := i; j < 5; j++ {
				F.SetSym(i, j, F.At(i, j)+v[i]*v[j]/S)
			}
		}
	}
	// Dense ambient W₂ Fisher with the paper's score (θ − b₂)δ_zᵀ = W₂zδ_zᵀ, row-major vec (W₂zδᵀ)_ij = u_i δ_j.
	Z, Dz := w.hZ.Storage().Host(), w.hDz.Storage().Host()
	n := len(sc)
	W2 := p.W2
	dense := mat.NewSymDense(4, nil)
	for s := 0; s < n; s++ {
		z, dz := [2]float64{Z[s], Z[n+s]}, [2]float64{Dz[s], Dz[n+s]}
		u := [2]float64{W2[0]*z[0] + W2[1]*z[1], W2[2]*z[0] + W2[3]*z[1]}
		v := [4]float64{u[0] * dz[0], u[0] * dz[1], u[1] * dz[0], u[1] * dz[1]}
		for i := 0; i < 4; i++ {
			for j := i; j < 4; j++ {
				dense.SetSym(i, j, dense.At(i, j)+v[i]*v[j]/S)
			}
		}
	}
	w2 := mat.NewDense(2, 2, W2)
	var bz, kron, diff mat.Dense
	bz.Product(w2, mat.NewDense(2, 2, w.download(w.cz)), w2.T())
	kron.Kronecker(&bz, mat.NewDense(2, 2, w.download(w.cd))) // row-major vec: (B ⊗ C_δ)
	diff.Sub(&kron, dense)
	t.Logf("K-FAC W₂ block against the dense ambient Fisher: relative Frobenius error %.3f", mat.Norm(&diff, 2)/mat.Norm(dense, 2))
	ew := []float64{-W2[1], W2[0], -W2[3], W2[2]} // W₂Ω
	g2, gb1, gb2 := w.download(w.g2), w.download(w.gb1), w.download(w.gb2)
	dot := func(a, c []float64) float64 {
		s := 0.0
		for i := range a {
			s += a[i] * c[i]
		}
		return s
	}
	g := mat.NewVecDense(5, []float64{gb1[0], gb1[1], dot(g2, ew), gb2[0], gb2[1]})
	var exact mat.VecDense
	if err := exact.SolveVec(F, g); err != nil {
		t.Fatal(err)
	}
	cos := func(a *mat.VecDense) float64 {
		return mat.Inner(a, F, &exact) / math.Sqrt(mat.Inner(a, F, a)*mat.Inner(&exact, F, &exact))
	}
	for _, first := range []bool{false, true} {
		w.cfg.ProjectFirst = first
		if err := w.natural(); err != nil {
			t.Fatal(err)
		}
		if err := w.riemannian(); err != nil {
			t.Fatal(err)
		}
		nb2 := w.download(w.nb2)
		u := mat.NewVecDense(5, []float64{gb1[0], gb1[1], dot(w.download(w.r2), ew) / 2, nb2[0], nb2[1]})
		t.Logf("ProjectFirst=%v: Fisher-metric cosine with the exact natural gradient %.3f; W₂ coordinate %.4f (exact %.4f)",
			first, cos(u), u.AtVec(2), exact.AtVec(2))
	}
	w.cfg.ProjectFirst = false
}
