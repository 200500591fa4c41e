package model_test

import (
	"context"
	"math"
	"testing"

	"github.com/geovb/geovb/algos/cholng"
	"github.com/geovb/geovb/algos/mgvb"
	"github.com/geovb/geovb/algos/sggmc"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/datatest"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/manifold"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/tensor"
)

// logReg is Bayesian logistic regression y_i ~ Bernoulli(σ(x_iᵀθ)), θ ~ N(0, priorVar·I), written in the host form
// as a user would: a loop over the rows, no backend.
type logReg struct {
	x, y     []float64 // n×d row-major, n labels in {0, 1}
	n, d     int
	priorVar float64
}

func (m *logReg) Dim() int { return m.d }

func (m *logReg) LogDensity(grad, th []float64) (float64, error) {
	lp := 0.0
	for j, t := range th {
		lp -= t * t / (2 * m.priorVar)
		grad[j] = -t / m.priorVar
	}
	for i := 0; i < m.n; i++ {
		row := m.x[i*m.d : (i+1)*m.d]
		eta := 0.0
		for j, v := range row {
			eta += v * th[j]
		}
		// log σ(η) = −log(1 + e^{−η}), written so that neither branch overflows
		sp := math.Max(eta, 0) + math.Log1p(math.Exp(-math.Abs(eta)))
		lp += m.y[i]*eta - sp
		r := m.y[i] - 1/(1+math.Exp(-eta))
		for j, v := range row {
			grad[j] += r * v
		}
	}
	return lp, nil
}

// fitFour fits m by MGVB (score-function gradient), Cholesky-NG (dense covariance factor), NAGVAC and SGNHT on
// Euclidean space and returns each method's posterior mean, and SGNHT's posterior sd and Monte Carlo standard
// error of the mean per coordinate.
func fitFour(t *testing.T, b backend.Backend, m model.Density, samples int) (means map[string][]float64, sd, mcse []float64) {
	d := m.Dim()
	means = map[string][]float64{}
	bm := model.Batch(m)

	cfg := mgvb.DefaultConfig() // with paper 000's step for German credit and no early stop
	cfg.Step, cfg.Patience, cfg.Seed = 0.05, 0, 1
	sigma0 := make([]float64, d*d)
	for i := 0; i < d; i++ {
		sigma0[i*d+i] = 0.04
	}
	cfg.InitSigma = sigma0
	r, err := mgvb.Fit(context.Background(), b, bm, cfg)
	if err != nil {
		t.Fatal("mgvb:", err)
	}
	means["MGVB"] = make([]float64, d)
	for i := range d {
		means["MGVB"][i] = r.Mu.At(0, i, 0)
	}

	cr, err := cholng.Fit(context.Background(), b, m, cholng.Config{Seed: 1})
	if err != nil {
		t.Fatal("cholng:", err)
	}
	means["Cholesky-NG"] = cr.Mu

	nc := mgvb.NAGVACDefault() // with a step that decays from iteration 500 on, against NAGVAC's gradient noise
	nc.Tau, nc.Control.MaxIter, nc.Seed = 500, 2000, 1
	nr, err := mgvb.NAGVAC(context.Background(), b, bm, nc)
	if err != nil {
		t.Fatal("nagvac:", err)
	}
	means["NAGVAC"] = nr.Mu

	means["SGNHT"], sd, mcse = sgnht(t, b, bm, means["MGVB"], samples)
	return means, sd, mcse
}

// sgnht runs 4 SGNHT chains on Euclidean(1, d) from start, discards the first fifth of the samples and returns the
// mean, the sd and the Monte Carlo standard error of the mean (batch means over 20 batches per chain).
func sgnht(t *testing.T, b backend.Backend, m model.Batched, start []float64, samples int) (mean, sd, mcse []float64) {
	const chains, batches = 4, 20
	d := m.Dim()
	eu, err := manifold.NewEuclidean(1, d)
	if err != nil {
		t.Fatal(err)
	}
	x0h := tensor.NewHost(chains, 1, d)
	for c := 0; c < chains; c++ {
		for i, v := range start {
			x0h.Set(c, 0, i, v)
		}
	}
	x0 := testbackend.Upload(t, b, x0h)
	pot := sggmc.NewPotential(m)
	defer pot.Close()
	s, err := sggmc.New(b, pot, x0, sggmc.Config{Manifold: eu, Method: sggmc.GSGNHT, Step: 0.02, Friction: 1, L: 5, Seed: 7})
	if err != nil {
		t.Fatal("sgnht:", err)
	}
	defer s.Close()
	burn := samples / 5
	kept := samples - burn
	per := kept / batches
	bsum := make([][]float64, chains*batches)
	sum, sq := make([]float64, d), make([]float64, d)
	h := tensor.NewHost(chains, 1, d)
	for k := 0; k < samples; k++ {
		if err := s.Sample(); err != nil {
			t.Fatal(err)
		}
		if k < burn {
			continue
		}
		if err := b.Download(h, s.X()); err != nil {
			t.Fatal(err)
		}
		j := min((k-burn)/per, batches-1)
		for c := 0; c < chains; c++ {
			if bsum[c*batches+j] == nil {
				bsum[c*batches+j] = make([]float64, d)
			}
			for i := 0; i < d; i++ {
				v := h.At(c, 0, i)
				sum[i] += v
				sq[i] += v * v
				bsum[c*batches+j][i] += v
			}
		}
	}
	n := float64(kept * chains)
	mean, sd, mcse = make([]float64, d), make([]float64, d), make([]float64, d)
	for i := 0; i < d; i++ {
		mean[i] = sum[i] / n
		sd[i] = math.Sqrt(sq[i]/n - mean[i]*mean[i])
		v := 0.0
		for _, bs := range bsum {
			bm := bs[i] / float64(per)
			v += (bm - mean[i]) * (bm - mean[i])
		}
		// variance of a batch mean over the chains·batches batches, divided by their number
		mcse[i] = math.Sqrt(v / float64(len(bsum)-1) / float64(len(bsum)))
	}
	return mean, sd, mcse
}

// TestOneModelManyMethods fits the host-form logistic regression above to German credit (d = 25 with the intercept,
// prior N(0, 50 I), as in paper 000's experiment) with four methods through the one model contract. MGVB and
// Cholesky-NG target the full-covariance Gaussian optimum and SGNHT the exact posterior; for this model (n = 1000,
// d = 25) the posterior is close to Gaussian, so their means must agree with SGNHT's within 0.15 posterior sd per
// coordinate. That covers SGNHT's Monte Carlo error (at most 0.05 sd, checked below), the VB methods' Monte Carlo
// and stopping error, the Gaussian approximation's bias of the mean and SGNHT's discretisation bias at step 0.02.
// NAGVAC's one-factor family, with its noisier natural gradient, stops short of that optimum (its lower bound
// plateaus several nats below, see docs/mgvb.md): it runs on the same model, and its distance is logged, not
// asserted.
func TestOneModelManyMethods(t *testing.T) {
	if testing.Short() {
		t.Skip("fits German credit four times")
	}
	g, err := datasets.ReadGermanFile(datatest.Require(t, "german-credit", "germancredit_numeric.txt"))
	if err != nil {
		t.Fatal(err)
	}
	x, n, d := g.GermanDesign(true)
	m := &logReg{x: x, y: g.Y, n: n, d: d, priorVar: 50}
	if err := model.CheckGradient(m, make([]float64, d), 0, 1e-6); err != nil {
		t.Fatal(err)
	}
	b := testbackend.Open(t)
	means, sd, mcse := fitFour(t, b, m, 6000)
	worstMC := 0.0
	for i := range sd {
		worstMC = math.Max(worstMC, mcse[i]/sd[i])
	}
	t.Logf("SGNHT: largest Monte Carlo error of the mean %.3f sd", worstMC)
	if worstMC > 0.05 {
		t.Errorf("SGNHT's Monte Carlo error %.3f sd > 0.05: too few effective samples for the comparison", worstMC)
	}
	for name, mu := range means {
		worst, at := 0.0, 0
		for i := range mu {
			if e := math.Abs(mu[i]-means["SGNHT"][i]) / sd[i]; e > worst {
				worst, at = e, i
			}
		}
		t.Logf("%-12s largest |mean − SGNHT mean| = %.3f sd (coordinate %d)", name, worst, at)
		if worst > 0.15 && name != "NAGVAC" {
			t.Errorf("%s: mean[%d] = %.5f, SGNHT %.5f ± %.5f (sd %.4f): %.3f sd apart, want ≤ 0.15", name, at, mu[at],
				means["SGNHT"][at], mcse[at], sd[at], worst)
		}
	}
}
