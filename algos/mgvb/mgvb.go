// Package mgvb is Manifold Gaussian Variational Bayes (paper 000, Tran, Nguyen & Nguyen,
// "Variational Bayes on Manifolds", §5.1 and Algorithm 2): a full-covariance Gaussian q = N(μ, Σ) with Σ on the SPD manifold,
// fitted by the generic manifold VB loop of Algorithm 1 — natural-gradient preconditioning (Σg, ΣGΣ; eq. (5.2)),
// the SPD retraction Σ + ξ + ½ξΣ⁻¹ξ, momentum carried by the transport EξEᵀ, the step schedule ε₀ then ε₀τ/t,
// gradient clipping and the smoothed lower-bound stopping rule returning the best iterate — with the run control of
// package run (context, recorder, stop reason, checkpoints).
//
// Every fit is batched: B independent fits (seeds, initialisations, replications) advance in the same backend calls,
// and each fit's S Monte Carlo draws are the columns of a d×S matrix, so sampling, the model and the gradient
// statistics are GEMM/SYRK/TRSM work on the backend. Only per-sample scalars (log densities) and per-fit scalars
// (norms, lower bounds) cross to the host.
//
// Two gradients of the ELBO are offered: the score-function estimator with per-coordinate control variates of eq.
// (5.1) (needs only log p), computed without the S×d² score array through weighted SYRKs (the scores of Σ are
// ½(aaᵀ − Σ⁻¹), a = Σ⁻¹(θ − μ), so every weighted sum over the draws is a SYRK of A = L⁻ᵀE),
// and a reparameterisation estimator for models with ∇log p.
package mgvb

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/tensor"
)

// T is short for *tensor.Tensor.
type T = tensor.Tensor

// Gradient chooses the ELBO gradient estimator.
type Gradient int

const (
	// ScoreFunction is eq. (5.1): (1/S) Σ_s ∇log q(θ_s) (h(θ_s) − c), h = log p(θ,y) − log q, with the per-coordinate
	// control variates c of the previous batch (c = 0 at the first iteration; estimated on the same batch, c would
	// bias the estimate).
	ScoreFunction Gradient = iota
	// Reparameterisation uses θ = μ + Lε: ∇_μ = E[∇log p], and for Σ the Stein (Price) form
	// ∇_Σ = ½ E[sym(∇log p(θ) aᵀ)] + ½ Σ⁻¹, a = Σ⁻¹(θ − μ), an unbiased estimate of ½E[∇²log p] + ½Σ⁻¹.
	Reparameterisation
)

// Draws picks the source of the Monte Carlo draws.
type Draws int

const (
	// PseudoRandom draws Philox normals (the default).
	PseudoRandom Draws = iota
	// RQMC draws randomised quasi-Monte Carlo normals, as the authors' code: the first S points of a Sobol' sequence
	// in d dimensions, scrambled afresh for every fit and iteration (package rng/qmc), the authors' code's choice. The draws are
	// made on the host and uploaded.
	RQMC
)

// Config holds the settings of a fit. DefaultConfig gives the values of the authors' code (step, momentum, clipping,
// stopping and initialisation) with the initial gradient clipped, against premature stopping.
type Config struct {
	S        int     // Monte Carlo draws per iteration (≥ 2)
	Step     float64 // ε₀ > 0
	Tau      int     // ε_t = ε₀ for t ≤ τ, then ε₀τ/t; 0 keeps ε₀ throughout
	Momentum float64 // ω ∈ [0, 1)
	Clip     float64 // rescale the Euclidean gradient (all d + d² entries) to this norm when above it; 0: never
	ClipInit bool    // also clip the gradient of iteration 0 (the authors' code does not; unclipped, a pseudo-random run can stop at iteration 22)

	Gradient         Gradient
	Draws            Draws
	NoControlVariate bool // score function with c = 0 (for variance comparisons, B2)
	// Plain drops the natural-gradient preconditioning: m_μ from g_μ and m_Σ from sym(G_Σ) (the "without natural
	// gradient" variant of Fig. 4). The retraction and transport stay unless IdentityTransport is set.
	Plain             bool
	IdentityTransport bool // carry momentum unchanged (every symmetric matrix is tangent) instead of EξEᵀ

	// Smoothed lower-bound rule (run.Smoother): window (11 reproduces the code's w = 10), patience (0: never
	// stop early), burn-in iterations before comparing.
	Window, Patience, BurnIn int

	Seed uint64 // Philox stream of the draws; draw t of fit k is independent of every other

	// InitMu and InitSigma are the starting points of the B independent fits: InitMu holds B·d values (fit k's
	// μ₀ is InitMu[k·d : (k+1)·d]) and InitSigma B·d·d (fit k's Σ₀ row-major), symmetric positive definite. Nil
	// InitMu starts every fit at μ₀ = 0, nil InitSigma at Σ₀ = I; B is 1 when both are nil.
	InitMu, InitSigma []float64

	// Control holds the iteration cap (0: 2000), the progress recorder, checkpoints and resume.
	Control run.Control

	// transportHook, when set (by tests), sees every transport of the Σ-momentum (acceptance test C3): Σ_old, Σ_new and
	// the momentum before and after Γ_{Σold→Σnew}, all B×d×d backend tensors.
	transportHook func(b backend.Backend, sigmaOld, sigma, before, after *T) error
}

// DefaultConfig returns S = 100, ε₀ = 0.01, τ = 1000, ω = 0.4, clip 100 (initial gradient clipped too), window 11,
// patience 10, burn-in 50 (and 2000 iterations, one fit from μ₀ = 0, Σ₀ = I, by the zero values).
func DefaultConfig() Config {
	return Config{S: 100, Step: 0.01, Tau: 1000, Momentum: 0.4, Clip: 100, ClipInit: true, Window: 11, Patience: 10,
		BurnIn: 50}
}

// defaultMaxIter is the iteration cap when Control.MaxIter is 0.
const defaultMaxIter = 2000

// Result is the output of a fit: the best iterates by smoothed lower bound (the output of the authors' code),
// per fit, and how the run ended.
type Result struct {
	Mu    *T // B×d×1 host, best μ of each fit
	Sigma *T // B×d×d host, best Σ of each fit
	// LastMu and LastSigma are the final iterates.
	LastMu, LastSigma *T
	BestSmoothed      []float64 // best smoothed LB of each fit (NaN if none)
	BestIter          []int     // iteration of the best iterate
	StoppedAt         []int     // iteration at which each fit's patience ran out (0: never)
	Safeguard         int       // retraction step halvings (the authors' safeguard; stays 0, since Σ + ξ + ½ξΣ⁻¹ξ ⪰ ½Σ)
	Clipped           int       // gradient evaluations clipped, over all fits
	run.Result                  // how the run ended
}

const opName = "mgvb"

func domainErr(field, format string, args ...any) error {
	return run.ConfigErrorf(opName, field, format, args...)
}

func (c *Config) check() error {
	switch {
	case c.S < 2:
		return domainErr("S", "S = %d Monte Carlo draws, need at least 2 (control variates need a covariance)", c.S)
	case !(c.Step > 0) || math.IsInf(c.Step, 0):
		return domainErr("Step", "learning rate ε₀ = %v must be positive and finite", c.Step)
	case c.Tau < 0:
		return domainErr("Tau", "τ = %d < 0", c.Tau)
	case !(c.Momentum >= 0 && c.Momentum < 1):
		return domainErr("Momentum", "ω = %v must be in [0, 1)", c.Momentum)
	case !(c.Clip >= 0) || math.IsInf(c.Clip, 0):
		return domainErr("Clip", "clip %v must be ≥ 0 and finite", c.Clip)
	case c.Window < 0 || c.Patience < 0 || c.BurnIn < 0:
		return domainErr("Window", "window %d, patience %d, burn-in %d must be ≥ 0", c.Window, c.Patience, c.BurnIn)
	case c.Gradient != ScoreFunction && c.Gradient != Reparameterisation:
		return domainErr("Gradient", "unknown estimator %d", c.Gradient)
	case c.Draws != PseudoRandom && c.Draws != RQMC:
		return domainErr("Draws", "unknown source of draws %d", c.Draws)
	}
	return nil
}

// start builds the host tensors μ₀ (B×d×1) and Σ₀ (B×d×d) from InitMu and InitSigma and checks them: sizes, finite
// values, Σ₀ symmetric (positive definiteness is checked by the Cholesky factorisation of Fit).
func (c *Config) start(d int) (mu0, sigma0 *T, err error) {
	B := 1
	switch {
	case c.InitMu != nil && (len(c.InitMu) == 0 || len(c.InitMu)%d != 0):
		return nil, nil, domainErr("InitMu", "%d values, want B·d with d = %d", len(c.InitMu), d)
	case c.InitSigma != nil && (len(c.InitSigma) == 0 || len(c.InitSigma)%(d*d) != 0):
		return nil, nil, domainErr("InitSigma", "%d values, want B·d·d with d = %d", len(c.InitSigma), d)
	case c.InitMu != nil && c.InitSigma != nil && len(c.InitMu)/d != len(c.InitSigma)/(d*d):
		return nil, nil, domainErr("InitSigma", "%d fits' Σ₀ for %d fits' μ₀", len(c.InitSigma)/(d*d), len(c.InitMu)/d)
	case c.InitMu != nil:
		B = len(c.InitMu) / d
	case c.InitSigma != nil:
		B = len(c.InitSigma) / (d * d)
	}
	mu0, sigma0 = tensor.NewHost(B, d, 1), tensor.NewHost(B, d, d)
	for k := 0; k < B; k++ {
		for i := 0; i < d; i++ {
			if c.InitMu != nil {
				mu0.Set(k, i, 0, c.InitMu[k*d+i])
			}
			for j := 0; j < d; j++ {
				if c.InitSigma != nil {
					sigma0.Set(k, i, j, c.InitSigma[(k*d+i)*d+j])
				} else if i == j {
					sigma0.Set(k, i, j, 1)
				}
			}
		}
	}
	if err := checkStart(d, mu0, sigma0); err != nil {
		return nil, nil, err
	}
	return mu0, sigma0, nil
}

// checkStart checks that μ₀ (B×d×1) and Σ₀ (B×d×d) are finite and Σ₀ symmetric.
func checkStart(d int, mu0, sigma0 *T) error {
	if err := mu0.CheckFinite("mu0"); err != nil {
		return fmt.Errorf("%s: %w", opName, err)
	}
	if err := sigma0.CheckFinite("sigma0"); err != nil {
		return fmt.Errorf("%s: %w", opName, err)
	}
	for k := 0; k < mu0.Batch(); k++ {
		for i := 0; i < d; i++ {
			for j := 0; j < i; j++ {
				a, b := sigma0.At(k, i, j), sigma0.At(k, j, i)
				if math.Abs(a-b) > 1e-12*(math.Abs(a)+math.Abs(b)+math.Abs(sigma0.At(k, i, i))) {
					return backend.BatchErrorf(opName, "sigma0", k, backend.ErrNotPositiveDefinite, "initial Σ not symmetric: Σ[%d,%d] = %v, Σ[%d,%d] = %v", i, j, a, j, i, b)
				}
			}
		}
	}
	return nil
}

// Fit runs MGVB on the B independent fits that start at cfg.InitMu and cfg.InitSigma, under ctx and cfg.Control. Bad
// settings return an error wrapping run.ErrConfig before any iteration, a Σ₀ that is not symmetric positive definite
// one wrapping backend.ErrNotPositiveDefinite. A run that ends on an error returns the result so far together with
// that error; one whose lower bound or gradient becomes NaN or infinite ends with run.NotFinite and ErrNotFinite.
func Fit(ctx context.Context, b backend.Backend, m model.Batched, cfg Config) (*Result, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	ctl := cfg.Control.WithContext(ctx)
	if err := ctl.Validate(); err != nil {
		return nil, err
	}
	d := m.Dim()
	mu0, sigma0, err := cfg.start(d)
	if err != nil {
		return nil, err
	}
	w, err := newWork(b, m, cfg, mu0.Batch())
	if err != nil {
		return nil, err
	}
	defer w.free()
	if err := b.Upload(w.mu, mu0); err != nil {
		return nil, err
	}
	if err := b.Upload(w.sigma, sigma0); err != nil {
		return nil, err
	}
	if err := w.chol(w.l, w.sigma); err != nil {
		return nil, fmt.Errorf("%s: initial Σ: %w", opName, err)
	}
	return w.fit(ctl)
}

// ErrNotFinite is returned when the lower bound or the gradient becomes NaN or infinite.
var ErrNotFinite = errors.New("mgvb: lower bound or gradient not finite")
