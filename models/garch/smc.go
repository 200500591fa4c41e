package garch

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/internal/stablemath"
	"github.com/geovb/geovb/rng"
)

// Tempered is a Bayesian model as likelihood-tempered SMC needs it: draws from the prior, the normalised log prior
// density and the log-likelihood, all in the same (unconstrained) coordinates θ. With a normalised prior and
// likelihood the SMC evidence estimate is log p(y) itself.
type Tempered interface {
	Dim() int
	SamplePrior(r *rand.Rand, theta []float64)
	LogPrior(theta []float64) float64
	LogLik(theta []float64) float64
}

// SMCConfig holds the settings of SMC; DefaultSMCConfig gives those of paper 000's GARCH experiment where it states
// them (10,000 particles, ESS ≥ 80 %) and ours where it does not (the move kernel).
type SMCConfig struct {
	N       int     // particles (≥ 10)
	ESS     float64 // relative effective sample size kept at each tempering step, in (0, 1)
	Moves   int     // random-walk Metropolis sweeps per temperature (≥ 1)
	Seed    uint64  // the draws depend on Seed only, not on Workers
	Workers int     // goroutines for the move step (0: GOMAXPROCS)
}

// DefaultSMCConfig: N = 10,000, ESS 0.8, 5 moves per temperature.
func DefaultSMCConfig() SMCConfig { return SMCConfig{N: 10000, ESS: 0.8, Moves: 5} }

// SMCResult is the output of SMC: N equally weighted draws from the posterior (row-major N×d), the estimate of
// log p(y), and per tempering step the temperature γ_k and the acceptance rate of the moves.
type SMCResult struct {
	Theta       []float64
	N           int
	LogEvidence float64
	Gammas      []float64
	Acceptance  []float64
}

// SMC is likelihood-tempered (annealed) sequential Monte Carlo, the gold standard of paper 000's GARCH experiment
// (Section 5.2): the targets π_k(θ) ∝ p(θ) p(y|θ)^{γ_k}, 0 = γ₀ < γ₁ < … < γ_K = 1, start from N prior
// draws; each step chooses γ_{k+1} by bisection so that the ESS of the incremental weights p(y|θ)^{γ_{k+1}−γ_k}
// is cfg.ESS·N (or takes γ = 1 when that keeps more), adds log mean_i w_i to the evidence estimate
// (log p(y) ≈ Σ_k log mean_i w_i^{(k)}, the particles being equally weighted after each resampling), resamples
// systematically, and moves every particle by cfg.Moves random-walk Metropolis steps invariant for π_{k+1} with the
// proposal covariance (2.38²/d)·Cov(particles). Each particle of each step has its own random stream, so the result
// does not depend on the number of workers.
func SMC(t Tempered, cfg SMCConfig) (*SMCResult, error) {
	d, N := t.Dim(), cfg.N
	switch {
	case d < 1:
		return nil, fmt.Errorf("smc: dimension %d", d)
	case N < 10:
		return nil, fmt.Errorf("smc: N = %d particles, need at least 10", N)
	case !(cfg.ESS > 0 && cfg.ESS < 1):
		return nil, fmt.Errorf("smc: ESS fraction %v must be in (0, 1)", cfg.ESS)
	case cfg.Moves < 1:
		return nil, fmt.Errorf("smc: %d moves per temperature, need at least 1", cfg.Moves)
	}
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	x := make([]float64, N*d)
	lpr, ll := make([]float64, N), make([]float64, N)
	// Streams: 0 the prior draws, 1 the resampling uniforms, 2 + k·N + i the moves of particle i at step k.
	r0 := rand.New(rng.NewSource(cfg.Seed, 0))
	for i := 0; i < N; i++ {
		t.SamplePrior(r0, x[i*d:(i+1)*d])
	}
	parallel(N, workers, func(i int) {
		p := x[i*d : (i+1)*d]
		lpr[i], ll[i] = t.LogPrior(p), t.LogLik(p)
	})
	for i := range ll {
		if math.IsNaN(ll[i]) || math.IsInf(ll[i], 1) || math.IsNaN(lpr[i]) || math.IsInf(lpr[i], 0) {
			return nil, fmt.Errorf("smc: prior draw %d has log prior %v and log-likelihood %v", i, lpr[i], ll[i])
		}
	}
	res := &SMCResult{N: N}
	rs := rand.New(rng.NewSource(cfg.Seed, 1))
	gamma := 0.0
	lw := make([]float64, N)
	xn := make([]float64, N*d)
	lprn, lln := make([]float64, N), make([]float64, N)
	for step := 0; gamma < 1; step++ {
		if step > 10000 {
			return nil, errors.New("smc: more than 10,000 tempering steps")
		}
		// γ' by bisection on the relative ESS of the incremental weights.
		ess := func(g float64) float64 {
			for i := range lw {
				lw[i] = (g - gamma) * ll[i]
			}
			return relESS(lw)
		}
		next := 1.0
		if ess(1) < cfg.ESS {
			lo, hi := gamma, 1.0
			for it := 0; it < 100 && hi-lo > 1e-15*hi; it++ {
				mid := 0.5 * (lo + hi)
				if ess(mid) >= cfg.ESS {
					lo = mid
				} else {
					hi = mid
				}
			}
			next = lo
			if next <= gamma {
				next = hi // the ESS falls below the target within round-off of γ: take the smallest step that moves
			}
		}
		ess(next)
		mx := math.Inf(-1)
		for _, v := range lw {
			mx = math.Max(mx, v)
		}
		sum := 0.0
		for i, v := range lw {
			lw[i] = math.Exp(v - mx)
			sum += lw[i]
		}
		res.LogEvidence += mx + math.Log(sum/float64(N))
		gamma = next
		// Systematic resampling.
		u := rs.Float64() / float64(N)
		c, j := lw[0]/sum, 0
		for i := 0; i < N; i++ {
			target := u + float64(i)/float64(N)
			for c < target && j < N-1 {
				j++
				c += lw[j] / sum
			}
			copy(xn[i*d:(i+1)*d], x[j*d:(j+1)*d])
			lprn[i], lln[i] = lpr[j], ll[j]
		}
		x, xn, lpr, lprn, ll, lln = xn, x, lprn, lpr, lln, ll
		// Random-walk Metropolis moves with proposal (2.38²/d) Cov(particles).
		chol, err := proposalChol(x, N, d)
		if err != nil {
			return nil, fmt.Errorf("smc: step %d (γ = %g): %w", step, gamma, err)
		}
		acc := make([]int, N)
		g := gamma
		parallel(N, workers, func(i int) {
			r := rand.New(rng.NewSource(cfg.Seed, 2+uint64(step)*uint64(N)+uint64(i)))
			p := x[i*d : (i+1)*d]
			q := make([]float64, d)
			z := make([]float64, d)
			for m := 0; m < cfg.Moves; m++ {
				for k := range z {
					z[k] = r.NormFloat64()
				}
				for a := 0; a < d; a++ {
					q[a] = p[a]
					for b := 0; b <= a; b++ {
						q[a] += chol[a*d+b] * z[b]
					}
				}
				qp := t.LogPrior(q)
				if math.IsInf(qp, -1) || math.IsNaN(qp) {
					continue
				}
				ql := t.LogLik(q)
				if math.IsNaN(ql) {
					continue
				}
				if math.Log(r.Float64()) < qp+g*ql-lpr[i]-g*ll[i] {
					copy(p, q)
					lpr[i], ll[i] = qp, ql
					acc[i]++
				}
			}
		})
		na := 0
		for _, a := range acc {
			na += a
		}
		res.Gammas = append(res.Gammas, gamma)
		res.Acceptance = append(res.Acceptance, float64(na)/float64(N*cfg.Moves))
	}
	res.Theta = x
	return res, nil
}

// relESS is (Σw)²/(N Σw²) for the weights exp(lw).
func relESS(lw []float64) float64 {
	mx := math.Inf(-1)
	for _, v := range lw {
		mx = math.Max(mx, v)
	}
	var s1, s2 float64
	for _, v := range lw {
		w := math.Exp(v - mx)
		s1 += w
		s2 += w * w
	}
	return s1 * s1 / (s2 * float64(len(lw)))
}

// proposalChol returns the lower Cholesky factor (row-major d×d) of (2.38²/d)·Cov of the N particles in x.
func proposalChol(x []float64, N, d int) ([]float64, error) {
	mean := make([]float64, d)
	for i := 0; i < N; i++ {
		for a := 0; a < d; a++ {
			mean[a] += x[i*d+a] / float64(N)
		}
	}
	cov := mat.NewSymDense(d, nil)
	for a := 0; a < d; a++ {
		for b := a; b < d; b++ {
			s := 0.0
			for i := 0; i < N; i++ {
				s += (x[i*d+a] - mean[a]) * (x[i*d+b] - mean[b])
			}
			cov.SetSym(a, b, 2.38*2.38/float64(d)*s/float64(N-1))
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(cov) {
		return nil, errors.New("particle covariance not positive definite (the particles collapsed)")
	}
	var l mat.TriDense
	ch.LTo(&l)
	out := make([]float64, d*d)
	for a := 0; a < d; a++ {
		for b := 0; b <= a; b++ {
			out[a*d+b] = l.At(a, b)
		}
	}
	return out, nil
}

// parallel runs f(0), …, f(n−1) on the given number of goroutines (contiguous blocks).
func parallel(n, workers int, f func(i int)) {
	workers = max(1, min(workers, n))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*n/workers, (w+1)*n/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				f(i)
			}
		}()
	}
	wg.Wait()
}

// SamplePrior draws θ = (log w, logit ψ₁, logit ψ₂) from the prior w ~ IG(1, 1) (w = 1/E, E ~ Exp(1)) and
// ψ₁, ψ₂ ~ U(0, 1).
func (m *Model) SamplePrior(r *rand.Rand, theta []float64) {
	theta[0] = -math.Log(r.ExpFloat64())
	for j := 1; j < 3; j++ {
		u := r.Float64()
		for u == 0 {
			u = r.Float64()
		}
		theta[j] = math.Log(u) - math.Log1p(-u)
	}
}

// LogPrior is the normalised log prior density in θ, Jacobians included:
// −θ_w − e^{−θ_w} + Σ_j [θ_ψj − 2 log(1 + e^{θ_ψj})].
func (m *Model) LogPrior(theta []float64) float64 {
	lp := -theta[0] - math.Exp(-theta[0])
	for _, t := range theta[1:] {
		lp += t - 2*stablemath.Softplus(t)
	}
	return lp
}

// LogLik is the Gaussian log-likelihood Σ_t [−½ log 2π − ½ log σ²_t − y²_t/(2σ²_t)] at θ.
func (m *Model) LogLik(theta []float64) float64 {
	w, a, b := Natural(theta)
	s2, ll := m.Sigma1, 0.0
	const half = 0.5 * 1.8378770664093453 // ½ log 2π
	for t, y := range m.Y {
		if t > 0 {
			s2 = w + a*s2 + b*m.Y[t-1]*m.Y[t-1]
		}
		ll -= half + 0.5*math.Log(s2) + y*y/(2*s2)
	}
	return ll
}
