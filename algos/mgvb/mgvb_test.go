package mgvb

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// TestBadInput: a non-SPD or asymmetric Σ₀, ε₀ ≤ 0, S < 2 and an unknown source of draws are errors before any iteration (issue 6).
func TestBadInput(t *testing.T) {
	b := testbackend.Open(t)
	m := newLin(t, b, 20, 3, 1)
	mu := make([]float64, 3)
	good := DefaultConfig()
	calls := 0
	rec := run.Func(func(run.Record) { calls++ })
	for _, c := range []struct {
		name  string
		cfg   func(*Config)
		sigma []float64
		want  error
	}{
		{"non-SPD Σ₀", nil, []float64{1, 0, 0, 0, -1, 0, 0, 0, 1}, backend.ErrNotPositiveDefinite},
		{"asymmetric Σ₀", nil, []float64{1, 0.5, 0, 0, 1, 0, 0, 0, 1}, backend.ErrNotPositiveDefinite},
		{"NaN Σ₀", nil, []float64{math.NaN(), 0, 0, 0, 1, 0, 0, 0, 1}, nil},
		{"ε₀ = 0", func(c *Config) { c.Step = 0 }, eye(3, 1), run.ErrConfig},
		{"ε₀ < 0", func(c *Config) { c.Step = -0.1 }, eye(3, 1), run.ErrConfig},
		{"S = 1", func(c *Config) { c.S = 1 }, eye(3, 1), run.ErrConfig},
		{"ω = 1", func(c *Config) { c.Momentum = 1 }, eye(3, 1), run.ErrConfig},
		{"unknown draws", func(c *Config) { c.Draws = 7 }, eye(3, 1), run.ErrConfig},
	} {
		cfg := good
		if c.cfg != nil {
			c.cfg(&cfg)
		}
		_, err := fitOne(b, m, mu, c.sigma, cfg, run.Control{Recorder: rec})
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
	}
	if calls != 0 {
		t.Fatalf("%d iterations recorded on bad input", calls)
	}
	good.Gradient = Reparameterisation
	if _, err := fitOne(b, m, mu, eye(3, 0.04), good, run.Control{MaxIter: 5}); err != nil {
		t.Fatalf("good input rejected: %v", err)
	}
}

// NAGVAC refuses bad settings before any iteration, as MGVB does: a negative τ, clip, window or iteration cap (a
// negative cap ran without end), b₀ = 0 (the Fisher block 1/κ is infinite) and a non-finite start.
func TestNAGVACBadInput(t *testing.T) {
	b := testbackend.Open(t)
	m := newLin(t, b, 20, 3, 1)
	mu, b0, c0 := make([]float64, 3), []float64{0.01, -0.02, 0.01}, []float64{0.2, 0.2, 0.2}
	calls := 0
	rec := run.Func(func(run.Record) { calls++ })
	for _, c := range []struct {
		name   string
		cfg    func(*NAGVACConfig)
		mu, b0 []float64
		want   string
	}{
		{"τ < 0", func(c *NAGVACConfig) { c.Tau = -1 }, mu, b0, "τ = -1"},
		{"clip < 0", func(c *NAGVACConfig) { c.Clip = -1 }, mu, b0, "clip -1"},
		{"clip NaN", func(c *NAGVACConfig) { c.Clip = math.NaN() }, mu, b0, "clip NaN"},
		{"window < 0", func(c *NAGVACConfig) { c.Window = -1 }, mu, b0, "window -1"},
		{"max-iter < 0", func(c *NAGVACConfig) { c.Control.MaxIter = -1 }, mu, b0, "MaxIter: -1 < 0"},
		{"b₀ = 0", nil, mu, make([]float64, 3), "b₀ = 0"},
		{"damping < 0", func(c *NAGVACConfig) { c.Damping = -1 }, mu, b0, "damping -1"},
		{"unknown Fisher", func(c *NAGVACConfig) { c.Fisher = 7 }, mu, b0, "unknown Fisher form Fisher(7)"},
		{"μ₀ NaN", nil, []float64{0, math.NaN(), 0}, b0, "μ₀[1] = NaN"},
	} {
		cfg := NAGVACDefault()
		if c.cfg != nil {
			c.cfg(&cfg)
		}
		_, err := runNAGVAC(b, m, c.mu, c.b0, c0, cfg, run.Control{Recorder: rec})
		if !errors.Is(err, run.ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want ErrConfig naming %q", c.name, err, c.want)
		}
	}
	if calls != 0 {
		t.Fatalf("%d iterations recorded on bad input", calls)
	}
	if _, err := runNAGVAC(b, m, mu, b0, c0, NAGVACDefault(), run.Control{MaxIter: 3}); err != nil {
		t.Fatalf("good input rejected: %v", err)
	}
}

// scoresHost returns the explicit per-sample scores (g_μ, vec g_Σ) of N(μ, Σ) at θ, d + d² values.
func scoresHost(mu []float64, sigma *mat.SymDense, theta []float64) []float64 {
	d := len(mu)
	var ch mat.Cholesky
	ch.Factorize(sigma)
	p := mat.NewSymDense(d, nil)
	ch.InverseTo(p)
	diff := make([]float64, d)
	for i := range diff {
		diff[i] = theta[i] - mu[i]
	}
	var a mat.VecDense
	a.MulVec(p, mat.NewVecDense(d, diff))
	out := make([]float64, 0, d+d*d)
	out = append(out, a.RawVector().Data...)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			out = append(out, -0.5*p.At(i, j)+0.5*a.AtVec(i)*a.AtVec(j))
		}
	}
	return out
}

func logNormal(mu []float64, sigma *mat.SymDense, theta []float64) float64 {
	d := len(mu)
	var ch mat.Cholesky
	if !ch.Factorize(sigma) {
		return math.NaN()
	}
	diff := mat.NewVecDense(d, nil)
	for i := range mu {
		diff.SetVec(i, theta[i]-mu[i])
	}
	var z mat.VecDense
	ch.SolveVecTo(&z, diff)
	return -0.5*float64(d)*math.Log(2*math.Pi) - 0.5*ch.LogDet() - 0.5*mat.Dot(diff, &z)
}

// TestB1Scores: the score formulas against central differences of log N(θ; μ, Σ) over all d² free entries of Σ.
func TestB1Scores(t *testing.T) {
	mu := []float64{0.1, -0.3, 0.2}
	sigma := mat.NewSymDense(3, []float64{1, 0.3, -0.2, 0.3, 0.8, 0.1, -0.2, 0.1, 0.5})
	theta := []float64{0.7, -1.1, 0.4}
	g := scoresHost(mu, sigma, theta)
	const e = 1e-6
	for i := 0; i < 3; i++ {
		mp, mm := append([]float64(nil), mu...), append([]float64(nil), mu...)
		mp[i] += e
		mm[i] -= e
		fd := (logNormal(mp, sigma, theta) - logNormal(mm, sigma, theta)) / (2 * e)
		if math.Abs(fd-g[i]) > 1e-7*math.Max(1, math.Abs(g[i])) {
			t.Fatalf("μ score %d: %v vs FD %v", i, g[i], fd)
		}
	}
	// Σ as d² free entries: g_Σ is symmetric, so the derivative along the symmetric direction ½(E_ij + E_ji),
	// which SetSym(i, j, ±e/2) makes, is ½(g_ij + g_ji) = g_ij; on the diagonal the direction is E_ii.
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			sp, sm := mat.NewSymDense(3, nil), mat.NewSymDense(3, nil)
			sp.CopySym(sigma)
			sm.CopySym(sigma)
			h := e
			if i != j {
				h = e / 2
			}
			sp.SetSym(i, j, sigma.At(i, j)+h)
			sm.SetSym(i, j, sigma.At(i, j)-h)
			fd := (logNormal(mu, sp, theta) - logNormal(mu, sm, theta)) / (2 * e)
			want := g[3+i*3+j]
			if math.Abs(fd-want) > 1e-7*math.Max(1, math.Abs(want)) {
				t.Fatalf("Σ score (%d,%d): %v vs FD %v", i, j, want, fd)
			}
		}
	}
}

// newTestWork builds a work for one fit at (μ, Σ) of m with cfg.
func newTestWork(t *testing.T, b backend.Backend, m model.Batched, mu []float64, sigma *mat.SymDense, cfg Config, B int) *work {
	t.Helper()
	w, err := newWork(b, m, cfg, B)
	if err != nil {
		t.Fatal(err)
	}
	d := m.Dim()
	hm := tensor.NewHost(B, d, 1)
	hs := tensor.NewHost(B, d, d)
	for k := 0; k < B; k++ {
		for i := 0; i < d; i++ {
			hm.Set(k, i, 0, mu[i])
			for j := 0; j < d; j++ {
				hs.Set(k, i, j, sigma.At(i, j))
			}
		}
	}
	b.Upload(w.mu, hm)
	b.Upload(w.sigma, hs)
	if err := w.chol(w.l, w.sigma); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestScoreGradMatchesExplicit checks the SYRK assembly of the estimator (5.1) and of the control variates against
// the explicit S×(d+d²) computation of the authors' code, over two consecutive batches so that the second
// uses the control variates of the first.
func TestScoreGradMatchesExplicit(t *testing.T) {
	b := testbackend.Open(t)
	const d, S = 3, 7
	m := newLin(t, b, 30, d, 2)
	mu := []float64{0.2, 0.1, -0.1}
	sigma := mat.NewSymDense(d, []float64{0.5, 0.1, 0, 0.1, 0.4, 0.05, 0, 0.05, 0.3})
	w := newTestWork(t, b, m, mu, sigma, Config{S: S, Step: 1, Seed: 5}, 1)
	defer w.free()
	nc := d + d*d
	c := make([]float64, nc)
	for batch := 0; batch < 2; batch++ {
		if err := w.grad(); err != nil {
			t.Fatal(err)
		}
		th := tensor.NewHost(1, d, S)
		b.Download(th, w.theta)
		lp := tensor.NewHost(1, 1, S)
		b.Download(lp, w.lp)
		gs := make([][]float64, S)
		hs := make([]float64, S)
		for s := 0; s < S; s++ {
			x := []float64{th.At(0, 0, s), th.At(0, 1, s), th.At(0, 2, s)}
			gs[s] = scoresHost(mu, sigma, x)
			hs[s] = lp.At(0, 0, s) - logNormal(mu, sigma, x)
		}
		want := make([]float64, nc)
		for i := 0; i < nc; i++ {
			for s := 0; s < S; s++ {
				want[i] += gs[s][i] * (hs[s] - c[i]) / S
			}
		}
		gm := tensor.NewHost(1, d, 1)
		gS := tensor.NewHost(1, d, d)
		b.Download(gm, w.gMu)
		b.Download(gS, w.gS)
		got := append(append([]float64(nil), gm.Storage().Host()...), gS.Storage().Host()...)
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-9*(1+math.Abs(want[i])) {
				t.Fatalf("batch %d coordinate %d: %v, explicit %v", batch, i, got[i], want[i])
			}
		}
		// c for the next batch: Cov(g h, g)/Var(g), both with the unbiased (S − 1) normalisation.
		for i := 0; i < nc; i++ {
			var sg, sgh, sgg, sggh float64
			for s := 0; s < S; s++ {
				g := gs[s][i]
				sg += g
				sgh += g * hs[s]
				sgg += g * g
				sggh += g * g * hs[s]
			}
			c[i] = (sggh - sgh*sg/S) / (sgg - sg*sg/S)
		}
	}
}

// elboGradLin is the closed-form ELBO gradient of the conjugate model: with posterior precision A and mean m,
// ∇_μ = −A(μ − m), ∇_Σ = −½A + ½Σ⁻¹.
func elboGradLin(m *linModel, mu []float64, sigma *mat.SymDense) []float64 {
	d := m.d
	var a, p mat.SymDense
	var ch mat.Cholesky
	ch.Factorize(m.postCov)
	ch.InverseTo(&a)
	ch.Factorize(sigma)
	ch.InverseTo(&p)
	out := make([]float64, d+d*d)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			out[i] -= a.At(i, j) * (mu[j] - m.postMu[j])
			out[d+i*d+j] = -0.5*a.At(i, j) + 0.5*p.At(i, j)
		}
	}
	return out
}

// TestB2Unbiased: on the conjugate model the score-function gradient, with and without control variates and with
// RQMC draws, is within 4 standard errors of the closed form coordinate-wise (R = 200 replications of S = 500, 1e5
// draws); the control variates (from the previous, independent batch) reduce the average variance, and RQMC draws
// reduce it further (measured: 0.019 and a further 0.052).
func TestB2Unbiased(t *testing.T) {
	b := testbackend.Open(t)
	const d, S, R = 3, 500, 200
	m := newLin(t, b, 50, d, 3)
	mu := []float64{0.3, 0.1, 0.5}
	sigma := mat.NewSymDense(d, []float64{0.05, 0.01, 0, 0.01, 0.04, 0.005, 0, 0.005, 0.03})
	truth := elboGradLin(m, mu, sigma)
	nc := d + d*d
	variants := []struct {
		name  string
		nocv  bool
		draws Draws
	}{{"no control variate", true, PseudoRandom}, {"control variates", false, PseudoRandom}, {"control variates, RQMC", false, RQMC}}
	variance := make([]float64, len(variants))
	for v, c := range variants {
		w := newTestWork(t, b, m, mu, sigma, Config{S: S, Step: 1, Seed: 11, NoControlVariate: c.nocv, Draws: c.draws}, R)
		if err := w.grad(); err != nil { // warm-up batch: sets c from an independent batch
			t.Fatal(err)
		}
		if err := w.grad(); err != nil {
			t.Fatal(err)
		}
		gm := tensor.NewHost(R, d, 1)
		gS := tensor.NewHost(R, d, d)
		b.Download(gm, w.gMu)
		b.Download(gS, w.gS)
		w.free()
		for i := 0; i < nc; i++ {
			var s1, s2 float64
			for k := 0; k < R; k++ {
				var x float64
				if i < d {
					x = gm.At(k, i, 0)
				} else {
					x = gS.At(k, (i-d)/d, (i-d)%d)
				}
				s1 += x
				s2 += x * x
			}
			mean := s1 / R
			vr := (s2 - s1*s1/R) / (R - 1)
			se := math.Sqrt(vr / R)
			if math.Abs(mean-truth[i]) > 4*se {
				t.Errorf("%s, coordinate %d: mean %v ± %v, truth %v", c.name, i, mean, se, truth[i])
			}
			variance[v] += vr / float64(nc)
		}
	}
	ratio, rqmc := variance[1]/variance[0], variance[2]/variance[1]
	t.Logf("average variance with/without control variates: %.3g; RQMC/pseudo-random draws: %.3g", ratio, rqmc)
	if !(ratio < 1) {
		t.Fatalf("control variates do not reduce the variance: ratio %v", ratio)
	}
	if !(rqmc < 1) {
		t.Fatalf("RQMC draws do not reduce the variance: ratio %v", rqmc)
	}
}

// TestB3Natural: ΣGΣ equals vec⁻¹((Σ⊗Σ) vec G) and Σg at d = 4; 2ΣGΣ solves the exact Fisher system
// ½(Σ⁻¹⊗Σ⁻¹) vec X = vec G on symmetric G (the paper's form is half the exact natural gradient).
func TestB3Natural(t *testing.T) {
	b := testbackend.Open(t)
	const d = 4
	m := newLin(t, b, 10, d, 4)
	a := mat.NewDense(d, d, nil)
	g := mat.NewDense(d, d, nil)
	r := make([]float64, 2*d*d+d)
	rng.Counter{Seed: 21}.FillNormal(r)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			a.Set(i, j, r[i*d+j])
			g.Set(i, j, r[d*d+i*d+j]+r[d*d+j*d+i]) // symmetric G
		}
	}
	sigma := mat.NewSymDense(d, nil)
	sigma.SymOuterK(1, a)
	for i := 0; i < d; i++ {
		sigma.SetSym(i, i, sigma.At(i, i)+0.5)
	}
	w := newTestWork(t, b, m, make([]float64, d), sigma, Config{S: 2, Step: 1}, 1)
	defer w.free()
	hg, _ := tensor.FromSlice(append([]float64(nil), g.RawMatrix().Data...), 1, d, d)
	hv, _ := tensor.FromSlice(append([]float64(nil), r[2*d*d:]...), 1, d, 1)
	b.Upload(w.gS, hg)
	b.Upload(w.gMu, hv)
	if err := w.natural(); err != nil {
		t.Fatal(err)
	}
	ns := tensor.NewHost(1, d, d)
	nm := tensor.NewHost(1, d, 1)
	b.Download(ns, w.nS)
	b.Download(nm, w.nMu)
	var kron mat.Dense
	kron.Kronecker(sigma, sigma)
	// Column-major vec: vec(G)[i + j d] = G[i, j].
	vec := func(x mat.Matrix) *mat.VecDense {
		v := mat.NewVecDense(d*d, nil)
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				v.SetVec(i+j*d, x.At(i, j))
			}
		}
		return v
	}
	var kv mat.VecDense
	kv.MulVec(&kron, vec(g))
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			if math.Abs(kv.AtVec(i+j*d)-ns.At(0, i, j)) > 1e-12*(1+math.Abs(kv.AtVec(i+j*d))) {
				t.Fatalf("ΣGΣ[%d,%d] = %v, Kronecker %v", i, j, ns.At(0, i, j), kv.AtVec(i+j*d))
			}
		}
		want := 0.0
		for j := 0; j < d; j++ {
			want += sigma.At(i, j) * r[2*d*d+j]
		}
		if math.Abs(want-nm.At(0, i, 0)) > 1e-12*(1+math.Abs(want)) {
			t.Fatalf("Σg[%d] = %v, want %v", i, nm.At(0, i, 0), want)
		}
	}
	// Exact Fisher on Σ: F_{ij,kl} = ½ tr(Σ⁻¹ E_ij Σ⁻¹ E_kl) = ½ (Σ⁻¹⊗Σ⁻¹); F vec(2ΣGΣ) = vec G.
	var p mat.Dense
	p.Inverse(sigma)
	var fisher mat.Dense
	fisher.Kronecker(&p, &p)
	fisher.Scale(0.5, &fisher)
	x := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			x.Set(i, j, 2*ns.At(0, i, j))
		}
	}
	var fx mat.VecDense
	fx.MulVec(&fisher, vec(x))
	gv := vec(g)
	for i := 0; i < d*d; i++ {
		if math.Abs(fx.AtVec(i)-gv.AtVec(i)) > 1e-10*(1+math.Abs(gv.AtVec(i))) {
			t.Fatalf("exact Fisher: F·vec(2ΣGΣ)[%d] = %v, vec G %v", i, fx.AtVec(i), gv.AtVec(i))
		}
	}
}

// TestC1Conjugate: on Bayesian linear regression (d = 5, n = 200, prior N(0, 10 I)) MGVB with S = 100 recovers the
// exact posterior (‖μ − μ_post‖∞ ≤ 0.05 posterior sd, ‖Σ − Σ_post‖_F ≤ 0.05 ‖Σ_post‖_F) and its smoothed LB comes
// within 0.2 nats of log p(y), for both gradient estimators. C3: no retraction safeguard fired.
func TestC1Conjugate(t *testing.T) {
	b := testbackend.Open(t)
	const d = 5
	m := newLin(t, b, 200, d, 6)
	for _, grad := range []Gradient{ScoreFunction, Reparameterisation} {
		cfg := DefaultConfig()
		cfg.Gradient = grad
		cfg.Step, cfg.Tau, cfg.Patience, cfg.Seed = 0.05, 300, 0, 3
		ctl := run.Control{MaxIter: 1500}
		res, err := fitOne(b, m, make([]float64, d), eye(d, 0.04), cfg, ctl)
		if err != nil {
			t.Fatal(err)
		}
		mu, sg := vecOf(res.LastMu, 0), symOf(res.LastSigma, 0)
		worst := 0.0
		for i := 0; i < d; i++ {
			worst = math.Max(worst, math.Abs(mu[i]-m.postMu[i])/math.Sqrt(m.postCov.At(i, i)))
		}
		var diff mat.Dense
		diff.Sub(sg, m.postCov)
		rel := mat.Norm(&diff, 2) / mat.Norm(m.postCov, 2)
		gap := m.logEv - res.BestSmoothed[0]
		t.Logf("estimator %d: μ error %.3g sd, Σ rel error %.3g, LB gap %.3g nats, safeguard %d", grad, worst, rel, gap, res.Safeguard)
		if worst > 0.05 || rel > 0.05 || math.Abs(gap) > 0.2 || res.Safeguard != 0 {
			t.Fatalf("estimator %d: μ error %.3g sd, Σ rel error %.3g, LB gap %.3g", grad, worst, rel, gap)
		}
	}
}

// TestRunControl: checkpoint and resume continue bit for bit, with either source of draws; a cancelled context stops the run with Cancelled;
// patience stops a run with Patience and returns the best iterate.
func TestRunControl(t *testing.T) {
	b := testbackend.Open(t)
	m := newLin(t, b, 50, 3, 8)
	cfg := DefaultConfig()
	cfg.Seed = 4
	mu0, s0 := make([]float64, 3), eye(3, 0.04)
	var last [2][]float64
	for _, draws := range []Draws{PseudoRandom, RQMC} {
		cfg := cfg
		cfg.Draws = draws
		full, err := fitOne(b, m, mu0, s0, cfg, run.Control{MaxIter: 30})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "ck")
		if _, err := fitOne(b, m, mu0, s0, cfg, run.Control{MaxIter: 12, CheckpointEvery: 12, CheckpointPath: path}); err != nil {
			t.Fatal(err)
		}
		resumed, err := fitOne(b, m, mu0, s0, cfg, run.Control{MaxIter: 30, CheckpointPath: path, Resume: true})
		if err != nil {
			t.Fatal(err)
		}
		if resumed.Iters != 30 {
			t.Fatalf("draws %d: resumed run ended at %d", draws, resumed.Iters)
		}
		for i, v := range full.LastSigma.Storage().Host() {
			if resumed.LastSigma.Storage().Host()[i] != v {
				t.Fatalf("draws %d: resumed Σ differs at %d: %v vs %v", draws, i, resumed.LastSigma.Storage().Host()[i], v)
			}
		}
		last[draws] = full.LastSigma.Storage().Host()
	}
	if last[0][0] == last[1][0] {
		t.Fatalf("RQMC and pseudo-random fits end at the same Σ₁₁ = %v: the draws option had no effect", last[0][0])
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	res, _ := fitOne(b, m, mu0, s0, cfg, run.Control{Ctx: ctx, Recorder: run.Func(func(run.Record) {
		if n++; n == 5 {
			cancel()
		}
	})})
	if res.Reason != run.Cancelled || res.Iters != 5 {
		t.Fatalf("cancelled run: %v after %d", res.Reason, res.Iters)
	}
	cfg.Patience, cfg.BurnIn, cfg.Step = 3, 20, 0.05
	res, err := fitOne(b, m, mu0, s0, cfg, run.Control{MaxIter: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != run.Patience || res.StoppedAt[0] == 0 || res.BestIter[0] >= res.StoppedAt[0] {
		t.Fatalf("patience: reason %v stopped %d best %d", res.Reason, res.StoppedAt[0], res.BestIter[0])
	}
}
