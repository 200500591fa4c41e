package garch

import (
	"math"
	"math/rand/v2"
	"runtime"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/rng"
)

// MCMCResult is the output of Metropolis: draws of θ after burn-in (row-major n×3) and the acceptance rate.
type MCMCResult struct {
	Theta      []float64
	N          int
	Acceptance float64
}

// Metropolis is one of the two gold standards of paper 000's GARCH experiment (a long random-walk MCMC is a
// gold standard as good as tempered SMC; SMC, the paper's own, also estimates log p(y)): random-walk Metropolis in
// θ = (log w, logit ψ₁, logit ψ₂) from θ₀. An adaptive pilot of
// `burn` iterations (proposal covariance (2.38²/3)·Cov of the pilot's second half, refreshed four times) is
// discarded; then n iterations with the proposal fixed are kept, so the kept chain is a plain Metropolis chain.
func (m *Model) Metropolis(theta0 []float64, n, burn int, seed uint64) *MCMCResult {
	r := rand.New(rng.NewSource(seed, 11))
	x := append([]float64(nil), theta0...)
	lp := m.LogPostGradHost(x, nil)
	chol := []float64{0.1, 0, 0, 0, 0.1, 0, 0, 0, 0.1} // lower-triangular proposal factor
	prop := make([]float64, 3)
	z := make([]float64, 3)
	step := func() bool {
		for i := range z {
			z[i] = r.NormFloat64()
		}
		for i := 0; i < 3; i++ {
			prop[i] = x[i]
			for j := 0; j <= i; j++ {
				prop[i] += chol[i*3+j] * z[j]
			}
		}
		lq := m.LogPostGradHost(prop, nil)
		if math.Log(r.Float64()) < lq-lp {
			copy(x, prop)
			lp = lq
			return true
		}
		return false
	}
	const rounds = 4
	per := burn / rounds
	for round := 0; round < rounds; round++ {
		var hist []float64
		for i := 0; i < per; i++ {
			step()
			if i >= per/2 {
				hist = append(hist, x...)
			}
		}
		if k := len(hist) / 3; k > 10 {
			var c mat.SymDense
			c.SymOuterK(1, mat.NewDense(3, k, transpose(hist, k)))
			var mean [3]float64
			for i := 0; i < k; i++ {
				for j := 0; j < 3; j++ {
					mean[j] += hist[i*3+j] / float64(k)
				}
			}
			cov := mat.NewSymDense(3, nil)
			for i := 0; i < 3; i++ {
				for j := i; j < 3; j++ {
					cov.SetSym(i, j, 2.38*2.38/3*(c.At(i, j)/float64(k)-mean[i]*mean[j]))
				}
			}
			var ch mat.Cholesky
			if ch.Factorize(cov) {
				var l mat.TriDense
				ch.LTo(&l)
				for i := 0; i < 3; i++ {
					for j := 0; j < 3; j++ {
						chol[i*3+j] = l.At(i, j)
					}
				}
			}
		}
	}
	out := &MCMCResult{Theta: make([]float64, 0, 3*n), N: n}
	acc := 0
	for i := 0; i < n; i++ {
		if step() {
			acc++
		}
		out.Theta = append(out.Theta, x...)
	}
	out.Acceptance = float64(acc) / float64(n)
	return out
}

// transpose turns k rows of 3 into 3 rows of k.
func transpose(rows []float64, k int) []float64 {
	t := make([]float64, 3*k)
	for i := 0; i < k; i++ {
		for j := 0; j < 3; j++ {
			t[j*k+i] = rows[i*3+j]
		}
	}
	return t
}

// NaturalMoments returns the means and sds of (w, α, β) over n draws of θ (row-major n×3).
func NaturalMoments(theta []float64, n int) (mean, sd [3]float64) {
	var s1, s2 [3]float64
	for k := 0; k < n; k++ {
		w, a, b := Natural(theta[3*k : 3*k+3])
		for i, v := range [3]float64{w, a, b} {
			s1[i] += v
			s2[i] += v * v
		}
	}
	for i := range mean {
		mean[i] = s1[i] / float64(n)
		sd[i] = math.Sqrt(math.Max(0, s2[i]/float64(n)-mean[i]*mean[i]))
	}
	return mean, sd
}

// GaussianDraws returns n draws (row-major n×3) of θ ~ N(mu, sigma) (sigma row-major 3×3, SPD), θ = μ + Lε with
// the Cholesky factor L and the normals of the Philox stream (seed, 2): how a Gaussian VB fit is pushed to
// (w, α, β) for comparison with the gold standard. It returns nil if sigma is not positive definite.
func GaussianDraws(mu, sigma []float64, n int, seed uint64) []float64 {
	var ch mat.Cholesky
	if !ch.Factorize(mat.NewSymDense(3, append([]float64(nil), sigma...))) {
		return nil
	}
	var l mat.TriDense
	ch.LTo(&l)
	eps := make([]float64, 3*n)
	rng.Counter{Seed: seed, Stream: 2}.FillNormal(eps)
	th := make([]float64, 3*n)
	for k := 0; k < n; k++ {
		for i := 0; i < 3; i++ {
			th[3*k+i] = mu[i]
			for j := 0; j <= i; j++ {
				th[3*k+i] += l.At(i, j) * eps[3*k+j]
			}
		}
	}
	return th
}

// GaussianELBO estimates the lower bound of q = N(mu, sigma) (3-vector, row-major 3×3) for the model,
// E_q[log p(θ) + log p(y|θ)] + ½ log det(2πe Σ), from n draws of q (GaussianDraws with seed); it returns the
// estimate and its Monte Carlo standard error (the entropy is exact). Since KL(q‖p(·|y)) = log p(y) − ELBO ≥ 0, it
// is compared with the SMC log-evidence estimate (KL ≥ 0, so the ELBO must lie below it). NaN if sigma is not positive definite.
func (m *Model) GaussianELBO(mu, sigma []float64, n int, seed uint64) (elbo, se float64) {
	th := GaussianDraws(mu, sigma, n, seed)
	if th == nil {
		return math.NaN(), math.NaN()
	}
	lp := make([]float64, n)
	parallel(n, runtime.GOMAXPROCS(0), func(i int) { lp[i] = m.LogPostGradHost(th[3*i:3*i+3], nil) })
	var s1, s2 float64
	for _, v := range lp {
		s1 += v
	}
	mean := s1 / float64(n)
	for _, v := range lp {
		s2 += (v - mean) * (v - mean)
	}
	var ch mat.Cholesky
	ch.Factorize(mat.NewSymDense(3, append([]float64(nil), sigma...)))
	ent := 0.5*ch.LogDet() + 1.5*(1+math.Log(2*math.Pi))
	return mean + ent, math.Sqrt(s2 / float64(n-1) / float64(n))
}
