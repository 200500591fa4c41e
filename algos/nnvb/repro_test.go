package nnvb

import (
	"math"
	"testing"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/datatest"
	"github.com/geovb/geovb/internal/repro"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/models/nnet"
)

// TestReproNNVBGerman is the NNVB claim on paper 000's own experiment (§5.3, Fig. 7): the 2×10
// Bayesian neural-net classifier on German credit (models/nnet: p = 24, d = 361, tanh, prior N(0, I)), manifold
// NNVB with S = 20, ω = 0.4, damping 10⁻², 200 iterations, from the same Haar-random W₁, W₂ (b = 0) and draws.
//   - ‖WᵀW − I‖_max ≤ 1e-12 at every iteration of every run;
//   - the natural-gradient run (ε₀ = 0.01) reaches the best plain run's final smoothed LB (plain ε₀ ∈ {0.01, 0.03},
//     best by final smoothed LB) in fewer iterations than that plain run takes to first reach it.
func TestReproNNVBGerman(t *testing.T) {
	repro.Require(t)
	g, err := datasets.ReadGermanFile(datatest.Require(t, "german-credit", "germancredit_numeric.txt"))
	if err != nil {
		t.Fatal(err)
	}
	x, n, p := g.GermanDesign(false)
	m, err := nnet.New(x, g.Y, n, p)
	if err != nil {
		t.Fatal(err)
	}
	b := testbackend.Open(t)
	p0, err := RandomInit(b, m.Dim(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	const iters = 200
	fit := func(plain bool, step float64) *Result {
		cfg := DefaultConfig()
		cfg.Plain, cfg.Step, cfg.Seed, cfg.TrackOrth = plain, step, 1, true
		r, err := fitFrom(b, model.Batch(m), p0, cfg, run.Control{MaxIter: iters})
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for _, o := range r.Orth {
			worst = math.Max(worst, o)
		}
		if len(r.Orth) != iters || worst > 1e-12 {
			t.Errorf("plain=%v ε₀=%g: %d orthogonality records, worst %.3g", plain, step, len(r.Orth), worst)
		}
		t.Logf("plain=%v ε₀=%g: smoothed LB at 50: %.1f, 100: %.1f, %d: %.1f; worst ‖WᵀW − I‖ %.2g (%v)", plain, step,
			r.Smoothed[49], r.Smoothed[99], iters, r.Smoothed[iters-1], worst, r.Elapsed)
		return r
	}
	var pl *Result
	for _, s := range []float64{0.01, 0.03} {
		if r := fit(true, s); pl == nil || r.Smoothed[iters-1] > pl.Smoothed[iters-1] {
			pl = r
		}
	}
	nat := fit(false, 0.01)
	target := pl.Smoothed[iters-1]
	kn, kp := firstReach(nat.Smoothed, target), firstReach(pl.Smoothed, target)
	t.Logf("best plain final smoothed LB %.1f: first reached at iteration %d (natural), %d (plain)", target, kn, kp)
	if kn == 0 || kn >= kp {
		t.Errorf("natural reaches %.1f at iteration %d, plain at %d", target, kn, kp)
	}
}
