package samvi

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/models/sam"
	"github.com/geovb/geovb/models/vmf"
	"github.com/geovb/geovb/rng"
)

// synth is a corpus drawn from SAM itself with the topics that generated it.
type synth struct {
	train *datasets.Corpus
	m     []float64
	topic [][]float64
	h     sam.Hyper
}

func unit(x []float64) []float64 {
	n := math.Sqrt(dot(x, x))
	for i := range x {
		x[i] /= n
	}
	return x
}

// genSAM draws μ ~ vMF(m, κ₀), β_k ~ vMF(μ, σ), θ_d ~ Dir(α), v_d ~ vMF(βθ_d/‖βθ_d‖, κ) over V words, m random;
// documents are dense.
func genSAM(t *testing.T, D, V, K int, h sam.Hyper, seed uint64) synth {
	src := rng.NewSource(seed, 9)
	r := rand.New(src)
	m := make([]float64, V)
	for i := range m {
		m[i] = r.NormFloat64()
	}
	unit(m)
	draw := func(mu []float64, k float64) []float64 {
		s, err := vmf.NewSampler(mu, k, src)
		if err != nil {
			t.Fatal(err)
		}
		return s.Rand(make([]float64, V))
	}
	mu := draw(m, h.Kappa0)
	topic := make([][]float64, K)
	for k := range topic {
		topic[k] = draw(mu, h.Sigma)
	}
	g := distuv.Gamma{Alpha: h.Alpha, Beta: 1, Src: r}
	c := &datasets.Corpus{V: V, Ptr: []int{0}}
	for d := 0; d < D; d++ {
		b := make([]float64, V)
		for k := 0; k < K; k++ {
			w := g.Rand()
			for i := range b {
				b[i] += w * topic[k][i]
			}
		}
		v := draw(unit(b), h.Kappa)
		for i, x := range v {
			c.Idx = append(c.Idx, int32(i))
			c.Val = append(c.Val, x)
		}
		c.Ptr = append(c.Ptr, len(c.Idx))
		c.Label = append(c.Label, 1)
	}
	return synth{train: c, m: m, topic: topic, h: h}
}

var testHyper = sam.Hyper{Kappa0: 20, Sigma: 10, Kappa: 150, Alpha: 0.7}

// naiveELBO is an independent dense evaluation of (V3): E[βθ_d] formed as a V-vector Σ_k e_dk m_k,
// E‖βθ_d‖² = Σ_{j,k} Θ_d,jk E[β_jᵀβ_k] with E[β_kᵀβ_k] = 1 and E[β_j]ᵀE[β_k] = m_jᵀm_k, the Dirichlet terms
// as E log Dir(θ|α) + entropy of Dir(γ), and the vMF terms from the natural parameters.
func naiveELBO(t *testing.T, v *VI) float64 {
	K, V, D := v.K, v.V, v.D
	h := v.H
	lc := func(k float64) float64 {
		l, err := vmf.LogNormalizer(V, k)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	A := func(k float64) float64 { a, _ := vmf.A(V, k); return a }
	zeta := v.zeta
	Emu := make([]float64, V)
	for i := range Emu {
		Emu[i] = A(zeta) * v.mu[i]
	}
	mk := make([][]float64, K)
	L := lc(h.Kappa0) + h.Kappa0*dot(v.M, Emu) - (lc(zeta) + zeta*A(zeta))
	for k := 0; k < K; k++ {
		eta := v.eta[k*V : (k+1)*V]
		xi := math.Sqrt(dot(eta, eta))
		mk[k] = make([]float64, V)
		for i := range eta {
			mk[k][i] = A(xi) * eta[i] / xi
		}
		L += lc(h.Sigma) + h.Sigma*dot(Emu, mk[k]) - (lc(xi) + xi*A(xi))
	}
	lgA, _ := math.Lgamma(h.Alpha)
	lgKA, _ := math.Lgamma(float64(K) * h.Alpha)
	ev := make([]float64, V)
	for d := 0; d < D; d++ {
		gm := v.gamma[d*K : (d+1)*K]
		g0 := 0.0
		for _, x := range gm {
			g0 += x
		}
		// E log Dir(θ|α) and the entropy of Dir(γ).
		lg0, _ := math.Lgamma(g0)
		L += lgKA - float64(K)*lgA - lg0
		for _, x := range gm {
			el := mathext.Digamma(x) - mathext.Digamma(g0)
			lg, _ := math.Lgamma(x)
			L += (h.Alpha-1)*el + lg - (x-1)*el
		}
		clear(ev)
		for k := 0; k < K; k++ {
			for i := range ev {
				ev[i] += gm[k] / g0 * mk[k][i]
			}
		}
		n2 := 0.0
		for j := 0; j < K; j++ {
			for k := 0; k < K; k++ {
				th := gm[j] * gm[k] / (g0 * (g0 + 1))
				eb := dot(mk[j], mk[k])
				if j == k {
					th += gm[k] / (g0 * (g0 + 1))
					eb = 1
				}
				n2 += th * eb
			}
		}
		dv := make([]float64, V)
		ids, vals := v.Train.Doc(d)
		for i, id := range ids {
			dv[id] = vals[i]
		}
		L += lc(h.Kappa) + h.Kappa*dot(dv, ev)/math.Sqrt(n2)
	}
	return L
}

// TestTrigamma: ψ′ against the closed forms ψ′(1) = π²/6, ψ′(1/2) = π²/2 and against central differences of
// gonum's digamma (tolerances 1e-13 and 1e-7 relative).
func TestTrigamma(t *testing.T) {
	for _, c := range []struct{ x, want float64 }{{1, math.Pi * math.Pi / 6}, {0.5, math.Pi * math.Pi / 2}} {
		if got := trigamma(c.x); math.Abs(got-c.want) > 1e-13*c.want {
			t.Errorf("ψ′(%v) = %.17g, want %.17g", c.x, got, c.want)
		}
	}
	for _, x := range []float64{0.01, 0.3, 2.5, 9.9, 10, 40, 1e4} {
		h := 1e-5 * x
		fd := (mathext.Digamma(x+h) - mathext.Digamma(x-h)) / (2 * h)
		if got := trigamma(x); math.Abs(got-fd) > 1e-7*math.Abs(fd) {
			t.Errorf("ψ′(%v) = %.12g, finite difference of ψ %.12g", x, got, fd)
		}
	}
}

// TestELBOMatchesNaive: the Gram-trick bound equals the dense reference to 1e-10 relative, at the start and
// after a few sweeps.
func TestELBOMatchesNaive(t *testing.T) {
	s := genSAM(t, 40, 25, 3, testHyper, 1)
	v, err := New(s.train, s.h, 3, s.m, Options{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	for it := 0; it < 4; it++ {
		got, want := v.ELBO(), naiveELBO(t, v)
		if math.Abs(got-want) > 1e-10*math.Abs(want) {
			t.Errorf("sweep %d: ELBO %.15g, dense reference %.15g", it, got, want)
		}
		if err := v.Sweep(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStoStepThenELBO: StoStep recomputes y_d for its minibatch only; the bound evaluated afterwards must still
// match the dense reference (which projects every document itself), and so must a VI sweep taken after StoVI steps.
func TestStoStepThenELBO(t *testing.T) {
	s := genSAM(t, 40, 25, 3, testHyper, 1)
	v, err := New(s.train, s.h, 3, s.m, Options{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	for step := range 5 {
		if err := v.StoStep(step, 8, 5, 0.7); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := v.ELBO(), naiveELBO(t, v); math.Abs(got-want) > 1e-10*math.Abs(want) {
		t.Errorf("after 5 StoVI steps: ELBO %.15g, dense reference %.15g", got, want)
	}
	if err := v.StoStep(5, 8, 5, 0.7); err != nil {
		t.Fatal(err)
	}
	if err := v.Sweep(); err != nil {
		t.Fatal(err)
	}
	if got, want := v.ELBO(), naiveELBO(t, v); math.Abs(got-want) > 1e-10*math.Abs(want) {
		t.Errorf("StoVI step then a sweep: ELBO %.15g, dense reference %.15g", got, want)
	}
}

// TestSetTopicsRefusesWithoutWriting: topics whose concentration cannot be evaluated (a NaN row) are refused and
// leave η and everything derived from it as they were.
func TestSetTopicsRefusesWithoutWriting(t *testing.T) {
	s := genSAM(t, 20, 25, 3, testHyper, 3)
	v, err := New(s.train, s.h, 3, s.m, Options{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	eta, beta, xi, L := append([]float64(nil), v.eta...), append([]float64(nil), v.beta...), v.Concentrations(), v.ELBO()
	bad := append([]float64(nil), eta...)
	bad[2*v.V+1] = math.NaN() // the last topic's row
	if err := v.setTopics(bad); err == nil {
		t.Fatal("NaN topics accepted")
	}
	if !slices.Equal(v.eta, eta) || !slices.Equal(v.beta, beta) || !slices.Equal(v.Concentrations(), xi) || v.ELBO() != L {
		t.Error("refused topics changed the state")
	}
}

// TestUpdatesMonotone (test a): on a synthetic corpus, none of the updates (θ block, μ, topics, μ) lowers the
// bound evaluated by the dense reference, to 1e-9 relative, over 60 sweeps; the bound also rises overall.
func TestUpdatesMonotone(t *testing.T) {
	s := genSAM(t, 60, 30, 4, testHyper, 3)
	v, err := New(s.train, s.h, 4, s.m, Options{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	L := naiveELBO(t, v)
	L0 := L
	worst := math.Inf(1)
	for it := 0; it < 60; it++ {
		for _, u := range []struct {
			name string
			f    func() error
		}{
			{"θ", func() error { v.UpdateTheta(); return nil }},
			{"μ", v.UpdateMu},
			{"β", func() error { _, err := v.UpdateTopics(); return err }},
			{"μ", v.UpdateMu},
		} {
			if err := u.f(); err != nil {
				t.Fatal(err)
			}
			Ln := naiveELBO(t, v)
			rel := (Ln - L) / math.Abs(L)
			worst = math.Min(worst, rel)
			if rel < -1e-9 {
				t.Errorf("sweep %d: %s update lowered the bound from %.15g to %.15g (%.3g relative)", it, u.name, L, Ln, rel)
			}
			L = Ln
		}
	}
	t.Logf("bound %.6g → %.6g; smallest relative change of an update %.3g", L0, L, worst)
	if !(L > L0) {
		t.Errorf("bound did not rise: %.15g → %.15g", L0, L)
	}
}

// fd5 is the five-point central difference (−f(2h) + 8f(h) − 8f(−h) + f(−2h))/(12h), error O(h⁴).
func fd5(f func(float64) float64, h float64) float64 {
	return (-f(2*h) + 8*f(h) - 8*f(-h) + f(-2*h)) / (12 * h)
}

// fisherDot returns (∂m/∂η)δ for the vMF mean m(η) = A(‖η‖)η/‖η‖ (one topic row):
// (A/ξ)(δ − η̂η̂ᵀδ) + A′(ξ)η̂η̂ᵀδ.
func fisherDot(eta, delta []float64, V int) []float64 {
	xi := math.Sqrt(dot(eta, eta))
	a, _ := vmf.A(V, xi)
	ap, _ := vmf.APrime(V, xi)
	pr := dot(eta, delta) / xi
	out := make([]float64, len(eta))
	for i := range eta {
		e := eta[i] / xi
		out[i] = a/xi*(delta[i]-e*pr) + ap*e*pr
	}
	return out
}

// elboDirs returns, for random directions in η (all topics), in u = log γ (all documents), in the tangent of μ̃
// and in log ζ, the analytic directional derivative of L — (V4) chained through (∂m/∂η), (V6), and 0 for q(μ)
// after (V7) — and central finite differences of ELBO.
func elboDirs(t *testing.T, v *VI, seed uint64) (name []string, ana, fd []float64) {
	K, V, D := v.K, v.V, v.D
	r := rand.New(rng.NewSource(seed, 5))
	randDir := func(n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = r.NormFloat64()
		}
		return unit(x)
	}
	// η.
	g := make([]float64, K*V)
	v.natGrad(g, nil, 1)
	dir := randDir(K * V)
	a := 0.0
	for k := 0; k < K; k++ {
		res := make([]float64, V)
		for i := range res {
			res[i] = g[k*V+i] - v.eta[k*V+i]
		}
		a += dot(res, fisherDot(v.eta[k*V:(k+1)*V], dir[k*V:(k+1)*V], V))
	}
	old := append([]float64(nil), v.eta...)
	at := func(h float64) float64 {
		x := make([]float64, len(old))
		for i := range x {
			x[i] = old[i] + h*dir[i]
		}
		if err := v.setTopics(x); err != nil {
			t.Fatal(err)
		}
		v.projectAll()
		return v.ELBO()
	}
	h := 1e-4 * math.Sqrt(dot(old, old))
	f := (at(h) - at(-h)) / (2 * h)
	at(0)
	name, ana, fd = append(name, "η"), append(ana, a), append(fd, f)
	// u = log γ.
	dir = randDir(D * K)
	a = 0.0
	gr := make([]float64, K)
	wk := v.works[0]
	wk.setGlobals(v)
	for d := 0; d < D; d++ {
		wk.setDoc(v.y[d*K:(d+1)*K], v.a)
		wk.eval(gr, v.gamma[d*K:(d+1)*K], true)
		a += dot(gr, dir[d*K:(d+1)*K])
	}
	og := append([]float64(nil), v.gamma...)
	atg := func(h float64) float64 {
		for i := range og {
			v.gamma[i] = og[i] * math.Exp(h*dir[i])
		}
		return v.ELBO()
	}
	h = 1e-3
	f = fd5(atg, h)
	atg(0)
	name, ana, fd = append(name, "log γ"), append(ana, a), append(fd, f)
	// μ̃ along a tangent great circle and log ζ.
	dir = randDir(V)
	pr := dot(dir, v.mu)
	for i := range dir {
		dir[i] -= pr * v.mu[i]
	}
	unit(dir)
	c := make([]float64, V)
	for i := range c {
		c[i] = v.H.Kappa0 * v.M[i]
		for k := 0; k < K; k++ {
			c[i] += v.H.Sigma * v.mean[k*V+i]
		}
	}
	apz, _ := vmf.APrime(V, v.zeta)
	omu, oz := append([]float64(nil), v.mu...), v.zeta
	atm := func(h float64) float64 {
		for i := range omu {
			v.mu[i] = math.Cos(h)*omu[i] + math.Sin(h)*dir[i]
		}
		return v.ELBO()
	}
	h = 1e-3
	f = fd5(atm, h)
	atm(0)
	name, ana, fd = append(name, "μ̃"), append(ana, v.azeta*dot(c, dir)), append(fd, f)
	atz := func(h float64) float64 {
		v.zeta = oz * math.Exp(h)
		v.azeta, _ = vmf.A(V, v.zeta)
		return v.ELBO()
	}
	f = fd5(atz, h)
	atz(0)
	name, ana, fd = append(name, "log ζ"), append(ana, oz*apz*(dot(c, omu)-oz)), append(fd, f)
	return name, ana, fd
}

// TestGradientAndStationarity (test b): away from convergence the analytic directional derivatives of L in η,
// log γ, μ̃ and log ζ match five-point central differences to 5e-6 relative; at convergence (400 sweeps) the natural-parameter residual
// ‖∇_mF − η‖/‖η‖ of (V4) is below 1e-6, and every finite-difference directional derivative (η, log γ, μ̃, log ζ)
// is below 1e-4 of the one measured at the start in the same direction (the updates are fixed points).
func TestGradientAndStationarity(t *testing.T) {
	s := genSAM(t, 50, 20, 3, testHyper, 5)
	v, err := New(s.train, s.h, 3, s.m, Options{Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	for it := 0; it < 2; it++ {
		if err := v.Sweep(); err != nil {
			t.Fatal(err)
		}
	}
	// Off every fixed point: the topics move after μ and θ were last updated, then θ moves.
	if _, err := v.UpdateTopics(); err != nil {
		t.Fatal(err)
	}
	v.UpdateTheta()
	names, ana0, fd0 := elboDirs(t, v, 1)
	for i := range names {
		t.Logf("start: %s: analytic %.10g, finite difference %.10g", names[i], ana0[i], fd0[i])
		if !(math.Abs(ana0[i]-fd0[i]) <= 5e-6*math.Abs(fd0[i])) {
			t.Errorf("start: %s: analytic derivative %.10g, finite difference %.10g", names[i], ana0[i], fd0[i])
		}
	}
	for it := 0; it < 400; it++ {
		if err := v.Sweep(); err != nil {
			t.Fatal(err)
		}
	}
	g := make([]float64, len(v.eta))
	v.natGrad(g, nil, 1)
	res := 0.0
	for i := range g {
		res += (g[i] - v.eta[i]) * (g[i] - v.eta[i])
	}
	rel := math.Sqrt(res / dot(v.eta, v.eta))
	t.Logf("converged: ‖∇_mF − η‖/‖η‖ = %.3g", rel)
	if !(rel < 1e-6) {
		t.Errorf("natural-parameter residual %.3g at convergence, want < 1e-6", rel)
	}
	_, ana1, fd1 := elboDirs(t, v, 1)
	for i, n := range names {
		t.Logf("converged: %s: analytic %.4g, finite difference %.4g (start %.4g)", n, ana1[i], fd1[i], fd0[i])
		if !(math.Abs(fd1[i]) <= 1e-4*math.Abs(fd0[i])) {
			t.Errorf("converged: %s: directional derivative %.4g, start %.4g", n, fd1[i], fd0[i])
		}
	}
}

// bestCosines matches fitted topics (K×V) to the true ones over all permutations and returns the cosines of the
// best match (largest smallest cosine).
func bestCosines(fit []float64, truth [][]float64) []float64 {
	K, V := len(truth), len(truth[0])
	perm := make([]int, K)
	for i := range perm {
		perm[i] = i
	}
	var best []float64
	bestMin := math.Inf(-1)
	var rec func(i int)
	rec = func(i int) {
		if i == K {
			cs := make([]float64, K)
			mn := math.Inf(1)
			for k := range cs {
				cs[k] = dot(fit[perm[k]*V:(perm[k]+1)*V], truth[k])
				mn = math.Min(mn, cs[k])
			}
			if mn > bestMin {
				bestMin, best = mn, cs
			}
			return
		}
		for j := i; j < K; j++ {
			perm[i], perm[j] = perm[j], perm[i]
			rec(i + 1)
			perm[i], perm[j] = perm[j], perm[i]
		}
	}
	rec(0)
	return best
}

// TestRecoverTopics (test c): on 400 documents drawn from SAM with K = 4 known topics over V = 40 words (κ₀ = 20,
// σ = 10, κ = 150, α = 0.7), VI (200 sweeps) and StoVI (S = 50, τ₀ = 5, r = 0.8, 3000 steps) recover every topic
// direction with cosine ≥ 0.98 after matching by permutation, while the topics start at cosine < 0.9 (the
// samplers' initialisation around the corpus mean).
func TestRecoverTopics(t *testing.T) {
	const K = 4
	s := genSAM(t, 400, 40, K, testHyper, 11)
	v, err := New(s.train, s.h, K, s.m, Options{Seed: 12})
	if err != nil {
		t.Fatal(err)
	}
	c0 := bestCosines(v.Topics(), s.topic)
	for it := 0; it < 200; it++ {
		if err := v.Sweep(); err != nil {
			t.Fatal(err)
		}
	}
	c1 := bestCosines(v.Topics(), s.topic)
	w, err := New(s.train, s.h, K, s.m, Options{Seed: 12})
	if err != nil {
		t.Fatal(err)
	}
	for it := 0; it < 3000; it++ {
		if err := w.StoStep(it, 50, 5, 0.8); err != nil {
			t.Fatal(err)
		}
	}
	c2 := bestCosines(w.Topics(), s.topic)
	t.Logf("cosines to the true topics: start %.4f, VI %.4f, StoVI %.4f", c0, c1, c2)
	for k := 0; k < K; k++ {
		if !(c0[k] < 0.9) {
			t.Errorf("topic %d starts at cosine %.4f: the test would not show recovery", k, c0[k])
		}
		if !(c1[k] >= 0.98) {
			t.Errorf("VI: topic %d at cosine %.4f, want ≥ 0.98", k, c1[k])
		}
		if !(c2[k] >= 0.98) {
			t.Errorf("StoVI: topic %d at cosine %.4f, want ≥ 0.98", k, c2[k])
		}
	}
}

// TestBadInput: malformed corpora, hyper-parameters, K, prior mean, options and run settings give errors that
// wrap backend.ErrShape or ErrDomain and name the problem.
func TestBadInput(t *testing.T) {
	s := genSAM(t, 10, 8, 2, testHyper, 13)
	bad := *s.train
	bad.Val = append([]float64(nil), s.train.Val...)
	bad.Val[3] *= 2
	cases := []struct {
		name string
		err  func() error
		kind error
		want string
	}{
		{"K", func() error { _, err := New(s.train, s.h, 0, s.m, Options{}); return err }, backend.ErrDomain, "K = 0"},
		{"document norm", func() error { _, err := New(&bad, s.h, 2, s.m, Options{}); return err }, backend.ErrDomain, "document 0 has norm"},
		{"κ", func() error {
			h := s.h
			h.Kappa = -1
			_, err := New(s.train, h, 2, s.m, Options{})
			return err
		}, backend.ErrDomain, "κ = -1"},
		{"m length", func() error { _, err := New(s.train, s.h, 2, s.m[:5], Options{}); return err }, backend.ErrShape, "prior mean of length 5"},
		{"Xi0", func() error { _, err := New(s.train, s.h, 2, s.m, Options{Xi0: -3}); return err }, backend.ErrDomain, "Xi0 = -3"},
		{"rate", func() error {
			v, err := New(s.train, s.h, 2, s.m, Options{})
			if err != nil {
				return err
			}
			return v.StoStep(0, 5, 5, 0.4)
		}, backend.ErrDomain, "forgetting rate 0.4"},
		{"batch", func() error {
			v, err := New(s.train, s.h, 2, s.m, Options{})
			if err != nil {
				return err
			}
			return v.StoStep(0, 11, 5, 0.8)
		}, backend.ErrDomain, "batch 11 of 10"},
		{"step", func() error {
			v, err := New(s.train, s.h, 2, s.m, Options{})
			if err != nil {
				return err
			}
			return v.StoStep(-6, 5, 5, 0.8)
		}, backend.ErrDomain, "step -6"},
		{"method", func() error {
			return Run(context.Background(), s.train, s.train, Config{Method: "EP", K: 2, Hyper: s.h}, func(Point) error { return nil })
		}, backend.ErrDomain, `unknown method "EP"`},
		{"test vocabulary", func() error {
			o := genSAM(t, 5, 9, 2, testHyper, 14)
			return Run(context.Background(), s.train, o.train, Config{Method: MethodVI, K: 2, Hyper: s.h, MaxIter: 1}, func(Point) error { return nil })
		}, backend.ErrShape, "test vocabulary 9, training vocabulary 8"},
		{"word id", func() error {
			c := *s.train
			c.Idx = append([]int32(nil), s.train.Idx...)
			c.Idx[0] = 99
			return Run(context.Background(), &c, s.train, Config{Method: MethodVI, K: 2, Hyper: s.h, MaxIter: 1}, func(Point) error { return nil })
		}, backend.ErrShape, "word id 99 out of range"},
		{"negative cap", func() error { // it would mean no cap
			return Run(context.Background(), s.train, s.train, Config{Method: MethodVI, K: 2, Hyper: s.h, MaxIter: -1}, func(Point) error { return nil })
		}, backend.ErrDomain, "MaxIter -1"},
	}
	for _, c := range cases {
		err := c.err()
		if err == nil || !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %v mentioning %q", c.name, err, c.kind, c.want)
		}
	}
}

// TestRunReports: Run reports iterations 1, 2, 4 and the last, with fitting time increasing, for both methods;
// VI's reported bound does not decrease (test a at the level of sweeps).
func TestRunReports(t *testing.T) {
	s := genSAM(t, 60, 20, 3, testHyper, 15)
	for _, m := range Methods {
		var pts []Point
		err := Run(context.Background(), s.train, s.train, Config{Method: m, K: 3, Hyper: s.h, Batch: 10, MaxIter: 6, NTheta: 50},
			func(p Point) error { pts = append(pts, p); return nil })
		if err != nil {
			t.Fatal(err)
		}
		var iters []int
		for i, p := range pts {
			iters = append(iters, p.Iter)
			if i > 0 && (p.Seconds < pts[i-1].Seconds || (m == MethodVI && p.ELBO < pts[i-1].ELBO-1e-9*math.Abs(p.ELBO))) {
				t.Errorf("%s: point %+v after %+v", m, p, pts[i-1])
			}
			if math.IsNaN(p.LogPerp) {
				t.Errorf("%s: log-perplexity NaN at iteration %d", m, p.Iter)
			}
		}
		if want := []int{1, 2, 4, 6}; !slices.Equal(iters, want) {
			t.Errorf("%s: reported iterations %v, want %v", m, iters, want)
		}
	}
}
