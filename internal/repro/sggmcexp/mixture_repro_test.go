package sggmcexp

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geovb/geovb/algos/sggmc"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/repro"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

const mixGrid = 720

func mixtureTarget(t testing.TB, seed uint64) *TwoVMF {
	m, err := SyntheticTwoVMF(seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func gridCell(a float64) int { return GridCell(a, mixGrid) }

// mixtureRun runs SGGMC chains (batch 10 of 100, V̂ on or off) from near the prior's mode and returns the
// histograms of the kept samples' angles, the fraction with θ₂ > 0, the angles' correlation and the kinetic
// temperature ‖v‖²/m averaged over the kept samples.
func mixtureRun(t *testing.T, m *TwoVMF, cfg sggmc.Config, chains, burn, keep int) (h1, h2 []float64, upper, cor, kin float64) {
	b := testbackend.Open(t)
	x0 := tensor.NewHost(chains, 2, 2)
	init := rand.New(rng.NewSource(cfg.Seed, 8))
	for c := 0; c < chains; c++ {
		// Start half the chains near each mode's v₂ sign, spread by ±0.3 rad.
		a1, a2 := 0.3*(init.Float64()-0.5), 0.6*(init.Float64()-0.5)
		for j, v := range append(unitAngle(a1), unitAngle(a2)...) {
			x0.Set(c, j/2, j%2, v)
		}
	}
	s, err := sggmc.New(b, m, testbackend.Upload(t, b, x0), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h1, h2 = make([]float64, mixGrid), make([]float64, mixGrid)
	var e1, e2, e11, e22, e12, n float64
	runChains(t, b, s, burn, keep, func(ch int, x []float64) {
		if ch == 0 {
			d, err := s.Diagnostics()
			if err != nil {
				t.Fatal(err)
			}
			kin += d.Kinetic / float64(keep)
		}
		a, bb := math.Atan2(x[1], x[0]), math.Atan2(x[3], x[2])
		h1[gridCell(a)]++
		h2[gridCell(bb)]++
		if bb > 0 {
			upper++
		}
		e1, e2, e11, e22, e12, n = e1+a, e2+bb, e11+a*a, e22+bb*bb, e12+a*bb, n+1
	})
	for i := range h1 {
		h1[i] /= n
		h2[i] /= n
	}
	e1, e2, e11, e22, e12 = e1/n, e2/n, e11/n, e22/n, e12/n
	return h1, h2, upper / n, (e12 - e1*e2) / math.Sqrt((e11-e1*e1)*(e22-e2*e2)), kin
}

// TestReproVMFMixture is paper 001 Section 5.2 (Fig. 4): SGGMC with minibatches of 10 of the 100
// points and the empirical-Fisher V̂ (through the NoiseEstimator hook) samples the posterior of (v₁, v₂): with 10⁵
// samples (500 chains × 200) the marginals of both angles lie within TV 0.05 of the 720² grid posterior (histograms
// of 4-cell = 2° bins), the mode θ₂ > 0 holds the grid's mass within ±0.1, the angles' correlation is the grid's
// within ±0.1, and the kinetic temperature is 1 ± 0.05. Negative control: with V̂ reported as 0 and a step where
// V̂ε is comparable to 2C, the chains run at the tempered T = 1 + V̄ε/(2C) (unmodelled gradient noise heats the chain) and the correlation is
// visibly weakened.
func TestReproVMFMixture(t *testing.T) {
	repro.Require(t)
	m := mixtureTarget(t, 2016)
	m.Batch, m.Seed = 10, 5
	g := m.Grid(mixGrid)
	t.Logf("grid: P(θ₂ > 0) = %.4f, corr(θ₁, θ₂) = %.4f", g.Upper, g.Corr)
	// The posterior must be bimodal with strong correlation for the test to mean anything.
	if !(g.Upper > 0.1 && g.Upper < 0.9) || !(g.Corr < -0.5) {
		t.Fatalf("grid posterior: P(θ₂ > 0) = %.3f, corr %.3f", g.Upper, g.Corr)
	}
	const chains, burn, keep = 500, 50, 200
	t.Run("fisher", func(t *testing.T) {
		cfg := sggmc.Config{Step: 1e-3, Friction: 20, L: 100, Seed: 3}
		h1, h2, up, cor, kin := mixtureRun(t, m, cfg, chains, burn, keep)
		tv1, tv2 := TV(h1, g.M1, 4), TV(h2, g.M2, 4)
		t.Logf("TV(v₁) = %.4f, TV(v₂) = %.4f, P(θ₂ > 0) = %.4f, corr = %.4f, ‖v‖²/m = %.4f, mean V̂ = %.4g (2C/ε = %.4g)",
			tv1, tv2, up, cor, kin, m.MeanNoiseVar(), 2*cfg.Friction/cfg.Step)
		if !(tv1 < 0.05 && tv2 < 0.05) {
			t.Errorf("TV(v₁) = %.4f, TV(v₂) = %.4f, want < 0.05", tv1, tv2)
		}
		if !(math.Abs(up-g.Upper) <= 0.1) {
			t.Errorf("mode θ₂ > 0 holds %.4f, grid %.4f", up, g.Upper)
		}
		if !(math.Abs(cor-g.Corr) <= 0.1) {
			t.Errorf("corr(θ₁, θ₂) = %.4f, grid %.4f", cor, g.Corr)
		}
		if !(math.Abs(kin-1) <= 0.05) {
			t.Errorf("‖v‖²/m = %.4f, want 1 ± 0.05", kin)
		}
	})
	t.Run("vhat-off-control", func(t *testing.T) {
		m.NoFisher = true
		m.vhatSum, m.vhatN = 0, 0
		defer func() { m.NoFisher = false }()
		cfg := sggmc.Config{Step: 4e-3, Friction: 20, L: 25, Seed: 4}
		_, _, _, cor, kin := mixtureRun(t, m, cfg, chains, burn, keep)
		temp := 1 + m.MeanNoiseVar()*cfg.Step/(2*cfg.Friction)
		t.Logf("V̂ off: corr = %.4f (grid %.4f), ‖v‖²/m = %.4f, tempered T = %.4f", cor, g.Corr, kin, temp)
		if !(temp > 1.3) || !(math.Abs(kin-temp) <= 0.1) {
			t.Errorf("V̂ off: ‖v‖²/m = %.4f, want the tempered T = %.4f ± 0.1 (> 1.3)", kin, temp)
		}
		if !(cor > g.Corr+0.05) {
			t.Errorf("V̂ off: corr %.4f not weakened from the grid's %.4f", cor, g.Corr)
		}
	})
}

// runChains runs burn samples, then keep samples, calling f(chain, x row-major K×n) on each kept sample.
func runChains(t testing.TB, b backend.Backend, s *sggmc.Sampler, burn, keep int, f func(chain int, x []float64)) {
	t.Helper()
	x := s.X()
	h := tensor.NewHost(x.Batch(), x.Rows(), x.Cols())
	kn := x.Rows() * x.Cols()
	for i := 0; i < burn+keep; i++ {
		if err := s.Sample(); err != nil {
			t.Fatal(err)
		}
		if i < burn {
			continue
		}
		if err := b.Download(h, s.X()); err != nil {
			t.Fatal(err)
		}
		d := hostData(h)
		for c := 0; c < x.Batch(); c++ {
			f(c, d[c*kn:(c+1)*kn])
		}
	}
}
