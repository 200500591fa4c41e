package sggmc

import (
	"math"
	"testing"

	"github.com/geovb/geovb/internal/repro"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/models/vmf"
)

// TestReproToyCircle is paper 001 Section 5.1 (Fig. 3): the two-component vMF mixture on the circle,
// E[x] = (0.446692, −0.257897), P(angle > 0) = 0.338483 (recomputed here by quadrature), with the exact gradient,
// with gradient noise 𝒩(0, 1000 I) corrected by V̂ = 1000, and the negative control V̂ = 0, which must land on the
// tempered target π^{1/T}, T = (2Cε + 1000ε²)/(2Cε) = 1.5. Independent batched chains give the standard errors.
func TestReproToyCircle(t *testing.T) {
	repro.Require(t)
	b := testbackend.Open(t)
	exact := circleTarget(t, 0)
	ex, ey, pu := circleMoments(exact, 1)
	if math.Abs(ex-0.446692) > 1e-6 || math.Abs(ey+0.257897) > 1e-6 || math.Abs(pu-0.338483) > 1e-6 {
		t.Fatalf("quadrature reference (%.6f, %.6f, %.6f) disagrees with the notes", ex, ey, pu)
	}
	tx, ty, tp := circleMoments(exact, 1.5)
	if math.Abs(tx-0.40496) > 1e-5 || math.Abs(ty+0.17022) > 1e-5 || math.Abs(tp-0.39152) > 1e-5 {
		t.Fatalf("tempered reference (%.6f, %.6f, %.6f) disagrees with the notes", tx, ty, tp)
	}
	const chains = 1000
	for _, c := range []struct {
		name        string
		noise, vhat float64
		eps         float64
		burn, keep  int // samples of L = 10 steps
		wx, wy, wp  float64
		tx, ty, tp  float64 // tolerances
	}{
		{"exact", 0, 0, 0.01, 100, 4000, ex, ey, pu, 0.003, 0.015, 0.01},
		{"noise-vhat", 1000, 1000, 1e-3, 300, 5000, ex, ey, pu, 0.006, 0.03, 0.02},
		{"noise-vhat0-tempered", 1000, 0, 1e-3, 300, 5000, tx, ty, tp, 0.006, 0.03, 0.02},
	} {
		t.Run(c.name, func(t *testing.T) {
			tgt := circleTarget(t, c.noise)
			s, err := New(b, tgt, randomPoints(t, b, chains, 1, 2, 11), Config{Step: c.eps, Friction: 1, L: 10, VHat: c.vhat, Seed: 21})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			st := newChainStats(chains, 3)
			runChains(t, s, c.burn, c.keep, func(ch int, x []float64) {
				up := 0.0
				if x[1] > 0 {
					up = 1
				}
				st.add(ch, x[0], x[1], up)
			})
			st.n = c.keep
			mx, sx := st.mean(0)
			my, sy := st.mean(1)
			mp, sp := st.mean(2)
			t.Logf("E[x] = (%.5f ± %.5f, %.5f ± %.5f), P(up) = %.5f ± %.5f; want (%.5f, %.5f), %.5f",
				mx, sx, my, sy, mp, sp, c.wx, c.wy, c.wp)
			if c.vhat == 0 && c.noise > 0 && math.Abs(mx-ex) < 10*sx {
				t.Errorf("V̂ = 0 control: E[x₁] = %.5f is not separated from the untempered %.5f", mx, ex)
			}
			for _, q := range []struct{ m, se, want, tol float64 }{{mx, sx, c.wx, c.tx}, {my, sy, c.wy, c.ty},
				{mp, sp, c.wp, c.tp}} {
				if q.se > q.tol/2 {
					t.Errorf("standard error %.4g too large for tolerance %.4g", q.se, q.tol)
				}
				if math.Abs(q.m-q.want) > q.tol {
					t.Errorf("mean %.5f, want %.5f ± %.4g", q.m, q.want, q.tol)
				}
			}
		})
	}
}

// vmfRun runs chains on vMF(e₁, 20) in d = 10 from x₀ ⊥ μ and returns E[μᵀx], its SE, mean ‖v‖²/m, mean ξ and the
// mean resultant vector of all kept samples.
func vmfRun(t *testing.T, cfg Config, noise float64, chains, burn, keep int) (m, se, kin, xi float64, mean []float64) {
	b := testbackend.Open(t)
	tgt, mu := vmfTarget(t, 10, 20, noise)
	x0 := make([]float64, 10)
	x0[1] = 1
	s, err := New(b, tgt, pointsAt(t, b, chains, x0), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st := newChainStats(chains, 1)
	mean = make([]float64, 10)
	k := 0
	runChains(t, s, burn, keep, func(ch int, x []float64) {
		st.add(ch, x[0]*mu[0])
		for i := range mean {
			mean[i] += x[i]
		}
		if ch == 0 {
			d, err := s.Diagnostics()
			if err != nil {
				t.Fatal(err)
			}
			kin += d.Kinetic
			xi += d.Xi
			k++
		}
	})
	st.n = keep
	m, se = st.mean(0)
	return m, se, kin / float64(k), xi / float64(k), mean
}

// TestReproVMFTarget checks the samplers on vMF(μ, 20), d = 10 (E[μᵀx] = A₁₀(20) = 0.795519): SGGMC with ε = 0.05,
// C = 1; κ̂ and mean direction from its samples; gSGNHT under unknown gradient noise 𝒩(0, 25 I) with V̂ = 0 (ξ →
// C + εσ²/2 = 1.625), and the negative controls (SGGMC with the same noise; the thermostat dividing by n).
func TestReproVMFTarget(t *testing.T) {
	repro.Require(t)
	const chains = 200
	t.Run("sggmc", func(t *testing.T) {
		m, se, kin, _, mean := vmfRun(t, Config{Step: 0.05, Friction: 1, Seed: 1}, 0, chains, 2000, 10000)
		t.Logf("E[μᵀx] = %.5f ± %.5f, ‖v‖²/m = %.4f", m, se, kin)
		if m < 0.7945 || m > 0.7975 {
			t.Errorf("E[μᵀx] = %.5f not in [0.7945, 0.7975]", m)
		}
		if kin < 0.99 || kin > 1.02 {
			t.Errorf("‖v‖²/m = %.4f not in [0.99, 1.02]", kin)
		}
		r := 0.0
		for _, v := range mean {
			r += v * v
		}
		r = math.Sqrt(r)
		k, err := vmf.FitKappa(10, r/float64(chains*10000))
		if err != nil {
			t.Fatal(err)
		}
		ang := math.Acos(mean[0] / r)
		t.Logf("κ̂ = %.3f, direction error %.4f rad", k, ang)
		if math.Abs(k-20) > 0.6 || ang > 0.01 {
			t.Errorf("κ̂ = %.3f (want 20 ± 3 %%), direction error %.4f", k, ang)
		}
	})
	t.Run("gsgnht-noise", func(t *testing.T) {
		m, se, kin, xi, _ := vmfRun(t, Config{Method: GSGNHT, Step: 0.05, Friction: 1, Seed: 2}, 25, chains, 2000, 10000)
		t.Logf("E[μᵀx] = %.5f ± %.5f, ‖v‖²/m = %.4f, ξ = %.4f", m, se, kin, xi)
		if m < 0.793 || m > 0.800 {
			t.Errorf("E[μᵀx] = %.5f not in [0.793, 0.800]", m)
		}
		if math.Abs(kin-1) > 0.01 {
			t.Errorf("‖v‖²/m = %.4f", kin)
		}
		if math.Abs(xi-1.625) > 0.02 {
			t.Errorf("ξ = %.4f, want 1.625 ± 0.02", xi)
		}
	})
	t.Run("sggmc-noise-control", func(t *testing.T) {
		m, _, kin, _, _ := vmfRun(t, Config{Step: 0.05, Friction: 1, Seed: 3}, 25, chains, 1000, 3000)
		t.Logf("E[μᵀx] = %.5f, ‖v‖²/m = %.4f (notes: 0.690, 1.64)", m, kin)
		if m > 0.72 || kin < 1.5 {
			t.Errorf("SGGMC with unaccounted noise should be hot: E = %.4f, ‖v‖²/m = %.4f", m, kin)
		}
	})
	t.Run("gsgnht-dim-n-control", func(t *testing.T) {
		m, _, _, _, _ := vmfRun(t, Config{Method: GSGNHT, Step: 0.025, Friction: 1, Dim: 10, Seed: 4}, 0, chains, 4000, 6000)
		want, _ := vmf.A(10, 20*0.9) // tempered by n/m = 10/9 (the thermostat dividing by the embedding dimension)
		t.Logf("E[μᵀx] = %.5f with m := n (tempered target %.5f)", m, want)
		if math.Abs(m-want) > 0.003 {
			t.Errorf("thermostat with n: E = %.5f, want ≈ %.5f", m, want)
		}
	})
}
