package nnvb

import (
	"math"
	"testing"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/internal/testbackend"
)

// c7 fits the 2-D correlated Gaussian target of acceptance test C7 (means (0.3, −0.2), variances 0.03, covariance
// 0.01; within reach of the sigmoid family, whose spread per direction is about that of sigmoid(N(0, 1)), sd 0.21;
// normalised, so ELBO = −KL(q‖p) ≤ 0) with S = 200 draws from the same start (Haar-random W,
// b = 0) and seed.
func c7(t *testing.T, plain bool, step float64, iters int) *Result {
	t.Helper()
	b := testbackend.Open(t)
	m := newGauss([]float64{0.3, -0.2}, []float64{0.03, 0.01, 0.01, 0.03})
	p, err := RandomInit(b, 2, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.S, cfg.Step, cfg.Plain, cfg.TrackOrth, cfg.Seed, cfg.Window = 200, step, plain, true, 2, 21
	res, err := Fit(b, m, p, cfg, run.Control{MaxIter: iters})
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

// TestC7Toy is acceptance test C7 on the 2-D Gaussian toy (600 iterations, natural ε₀ = 0.3, plain ε₀ = 0.03,
// the best of {0.01, 0.03, 0.1, 0.3} for each by final smoothed LB):
//   - ‖WᵀW − I‖_max ≤ 1e-12 at every iteration of both runs;
//   - the smoothed LB rises: its final value exceeds its first full-window value;
//   - the target's log normaliser is 0, so the smoothed LB must not exceed 0 by more than its MC noise (0.02), and
//     KL(q‖p) = −ELBO must end below 0.5 nats (the sigmoid family cannot match a Gaussian exactly: both runs
//     level off near KL ≈ 0.26).
//
// The notes' claim that the natural-gradient run reaches a given LB in fewer iterations does NOT hold on this toy
// (nor on a tighter one, sds 0.1 and 0.08): the plain run reaches −0.28 within about 25 iterations, the natural
// run after about 300 (K-FAC's C_δ ∝ 1/h'(a)² shrinks the W₂, b₂ steps). It is logged, not asserted; the
// claim is examined on the paper's own experiment by examples/mgvb-nnvb.
func TestC7Toy(t *testing.T) {
	const iters = 600
	nat, pl := c7(t, false, 0.3, iters), c7(t, true, 0.03, iters)
	for name, r := range map[string]*Result{"natural": nat, "plain": pl} {
		worst := 0.0
		for _, o := range r.Orth {
			worst = math.Max(worst, o)
		}
		if len(r.Orth) != iters || worst > 1e-12 {
			t.Errorf("%s: %d orthogonality records, worst ‖WᵀW − I‖ %.3g", name, len(r.Orth), worst)
		}
		f := r.Smoothed[iters-1]
		if !(f > r.Smoothed[20]) {
			t.Errorf("%s: smoothed LB fell from %.4f to %.4f", name, r.Smoothed[20], f)
		}
		if f > 0.02 || f < -0.5 {
			t.Errorf("%s: final smoothed LB %.4f: outside [−0.5, 0.02] (log normaliser 0)", name, f)
		}
		t.Logf("%s: smoothed LB at 21: %.4f, 100: %.4f, 300: %.4f, %d: %.4f; worst orth %.2g; reaches −0.28 at %d",
			name, r.Smoothed[20], r.Smoothed[99], r.Smoothed[299], iters, f, worst, firstReach(r.Smoothed, -0.28))
	}
}
