package mgvb

import (
	"math"
	"testing"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/internal/repro"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// German credit optimum of the Gaussian family (reproduced by models/logistic TestGermanOptimum).
const elboStar = -566.2902

// TestReproGermanC2 is acceptance test C2 (the German-credit fit of §5.1) with C3's invariant: d = 25, prior N(0, 50 I), ε₀ = 0.05,
// ω = 0.4, S = 100, clip 100 with the initial gradient clipped, 2000 iterations. The exact (quadrature) ELBO at the
// returned iterate must be ≥ ELBO* − 0.05 = −566.34, must not exceed ELBO* by more than the quadrature error,
// ‖μ − μ*‖∞ ≤ 0.05, and the retraction safeguard never fires; with pseudo-random and with RQMC draws, and at
// d = 24 (no intercept) against its own optimum.
func TestReproGermanC2(t *testing.T) {
	repro.Require(t)
	b := testbackend.Open(t)
	// d = 25 (the paper's, with the intercept) with both sources of draws; d = 24 (the authors' public example,
	// optimum −571.9542 from models/logistic) with pseudo-random draws.
	for _, c := range []struct {
		intercept bool
		optimum   float64
		draws     Draws
	}{{true, elboStar, PseudoRandom}, {true, elboStar, RQMC}, {false, -571.9542, PseudoRandom}} {
		m := germanModel(t, b, c.intercept)
		d := m.Dim()
		muStar, _, star, err := m.Optimum()
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(star-c.optimum) > 1e-4 {
			t.Fatalf("d = %d: ELBO* %v, notes %v", d, star, c.optimum)
		}
		cfg := DefaultConfig()
		cfg.Step, cfg.Patience, cfg.Seed, cfg.Draws = 0.05, 0, 1, c.draws
		res, err := fitOne(b, m, make([]float64, d), eye(d, 0.04), cfg, run.Control{MaxIter: 2000})
		if err != nil {
			t.Fatal(err)
		}
		mu := vecOf(res.Mu, 0)
		e, err := m.ExactELBO(mu, symOf(res.Sigma, 0))
		if err != nil {
			t.Fatal(err)
		}
		dmu := 0.0
		for i := range mu {
			dmu = math.Max(dmu, math.Abs(mu[i]-muStar[i]))
		}
		t.Logf("d = %d, draws %d: exact ELBO at the best iterate %.4f (gap %.4f), ‖μ−μ*‖∞ %.4f, best at %d, clipped %d of 2001, safeguard %d, %v",
			d, c.draws, e, star-e, dmu, res.BestIter[0], res.Clipped, res.Safeguard, res.Elapsed)
		if e < star-0.05 || e > star+1e-6 || dmu > 0.05 || res.Safeguard != 0 {
			t.Fatalf("d = %d, draws %d: exact ELBO %.4f (ELBO* %.4f), ‖μ−μ*‖∞ %.4f, safeguard %d", d, c.draws, e, star, dmu, res.Safeguard)
		}
	}
}

// TestReproGermanC5 is acceptance test C5 (Fig. 5): on German credit the exact ELBO of MGVB's output exceeds that
// of NAGVAC's (one-factor covariance, structurally below ELBO*; with deepGLM's Fisher form and with the exact one),
// and over 20 replications (the count; the MGVB fits run as one batched fit) with the same initialisation
// the SD of μ̂ averaged over the 25 coordinates is smaller for MGVB (a ratio test; paper 0.01 vs 0.03). Settings:
// MGVB ε₀ = 0.05, τ = 400, 800 iterations; NAGVAC ε₀ = 0.01, ω = 0.4, 800 iterations.
func TestReproGermanC5(t *testing.T) {
	repro.Require(t)
	b := testbackend.Open(t)
	m := germanModel(t, b, true)
	const R, d, iters = 20, 25, 800
	cfg := DefaultConfig()
	cfg.Step, cfg.Tau, cfg.Patience, cfg.Seed = 0.05, 400, 0, 100
	mu0 := tensor.NewHost(R, d, 1)
	s0 := tensor.NewHost(R, d, d)
	for k := 0; k < R; k++ {
		for i := 0; i < d; i++ {
			s0.Set(k, i, i, 0.04)
		}
	}
	mg, err := fitBatch(b, m, mu0, s0, cfg, run.Control{MaxIter: iters})
	if err != nil {
		t.Fatal(err)
	}
	nc := NAGVACDefault()
	nc.Control.MaxIter = iters
	b0 := make([]float64, d)
	c0 := make([]float64, d)
	mus := make([][]float64, R)
	worstNag, bestNag := math.Inf(1), math.Inf(-1)
	bestExact := math.Inf(-1)
	for k := 0; k < 2*R; k++ {
		// The first R fits use deepGLM's Fisher form, the next R the exact one (damping 0.01): MGVB must beat both.
		nc.Fisher = FisherDeepGLM
		if k >= R {
			nc.Fisher = FisherExact
		}
		rng.Counter{Seed: 500, Stream: 3}.FillNormal(b0)
		for i := range b0 {
			b0[i] *= 0.01
			c0[i] = 0.2
		}
		nc.Seed = uint64(1000 + k%R)
		r, err := runNAGVAC(b, m, make([]float64, d), b0, c0, nc, run.Control{})
		if err != nil {
			t.Fatal(err)
		}
		e, err := m.ExactELBO(r.Mu, symFrom(d, r.Sigma()))
		if err != nil {
			t.Fatal(err)
		}
		if k >= R {
			bestExact = math.Max(bestExact, e)
			continue
		}
		mus[k] = r.Mu
		worstNag, bestNag = math.Min(worstNag, e), math.Max(bestNag, e)
	}
	worstMG := math.Inf(1)
	mgMus := make([][]float64, R)
	for k := 0; k < R; k++ {
		mgMus[k] = vecOf(mg.Mu, k)
		e, err := m.ExactELBO(mgMus[k], symOf(mg.Sigma, k))
		if err != nil {
			t.Fatal(err)
		}
		worstMG = math.Min(worstMG, e)
	}
	sdMG, sdNag := meanSD(mgMus), meanSD(mus)
	t.Logf("exact ELBO: MGVB worst %.4f; NAGVAC %.4f..%.4f, with the exact Fisher best %.4f; SD(μ̂) MGVB %.5f NAGVAC %.5f", worstMG, worstNag, bestNag, bestExact, sdMG, sdNag)
	if best := math.Max(bestNag, bestExact); !(worstMG > best) || best > elboStar+1e-6 {
		t.Fatalf("MGVB worst exact ELBO %.4f not above NAGVAC best %.4f (exact Fisher %.4f; ELBO* %.4f)", worstMG, bestNag, bestExact, elboStar)
	}
	if !(sdMG < sdNag) {
		t.Fatalf("SD(μ̂) MGVB %.5f not below NAGVAC %.5f", sdMG, sdNag)
	}
}

// meanSD is the SD across runs of each coordinate, averaged over coordinates.
func meanSD(x [][]float64) float64 {
	d, R := len(x[0]), float64(len(x))
	out := 0.0
	for i := 0; i < d; i++ {
		s1, s2 := 0.0, 0.0
		for _, v := range x {
			s1 += v[i]
			s2 += v[i] * v[i]
		}
		out += math.Sqrt(math.Max(0, (s2-s1*s1/R)/(R-1))) / float64(d)
	}
	return out
}
