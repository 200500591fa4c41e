// Package sggmc holds the stochastic-gradient geodesic MCMC samplers of paper 001 (Liu, Zhu & Song 2016) on a
// product of spheres: SGGMC (constant friction C) and gSGNHT (Nosé–Hoover thermostat ξ), integrated with the
// symmetric splitting A(ε/2) B(ε/2) O(ε) B(ε/2) A(ε/2) of §3.3 (second order, no Metropolis test), where A is the exact geodesic flow
// (backend.SphereFlow, paper eq. (7)), B the friction e^{−Cε/2} or e^{−ξε/2} and O the projected stochastic-gradient
// kick with injected noise 𝒩(0, 2Cε − V̂ε²) (paper eq. (8)); and GMC (Byrne & Girolami 2013), the
// full-gradient baseline with a Metropolis–Hastings test.
//
// Points of the product of K spheres S^{n−1} are the rows of a K×n matrix; a batch×K×n tensor holds one chain per
// batch item and every chain advances in the same backend calls. Everything stays in the backend's memory except the
// per-chain scalars a caller asks for (diagnostics, MH energies).
package sggmc

import (
	"fmt"
	"math"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/manifold"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// T is short for *tensor.Tensor.
type T = tensor.Tensor

// Target is a density π_ℋ(x) ∝ exp(−U(x)) on a product of spheres, with respect to the surface measure, given by
// the gradient of its potential. Implementations must be deterministic functions of (x, step) — draw minibatches
// and noise from counters derived from step — so that runs are reproducible and resume exactly from a checkpoint.
type Target interface {
	// GradU writes ∇_x Ũ(x) for every chain of x (batch×K×n) into grad (same shape): the Euclidean gradient of any
	// smooth extension of U off the spheres (the samplers project it with Λ(x), which removes the normal part), possibly a stochastic estimate.
	// step counts the gradient evaluations of the run.
	GradU(b backend.Backend, grad, x *T, step uint64) error
}

// Energy is a Target with an exact potential, which GMC needs for its Metropolis–Hastings test.
type Energy interface {
	Target
	// U writes U(x) of every chain of x into u (length batch), up to a constant.
	U(b backend.Backend, u []float64, x *T) error
}

// NoiseEstimator is a Target that estimates the variance of its stochastic gradient (V̂ of paper eq. (8)) at the
// last GradU call, one scalar per sphere (a per-sphere isotropic estimate in the tangent space): vhat has length
// batch·K, row-major. When a target implements it, it overrides Config.VHat.
type NoiseEstimator interface {
	NoiseVar(vhat []float64) error
}

// SampleHook is a Target that wants to know when a sample (L inner steps) starts, e.g. to redraw latent variables
// that stay fixed during the inner steps (the θ samples of the spherical admixture model, §4).
type SampleHook interface {
	BeginSample(b backend.Backend, x *T, sample int) error
}

// Method chooses the sampler.
type Method int

// Methods.
const (
	SGGMC  Method = iota // constant friction C (dynamics (5))
	GSGNHT               // scalar Nosé–Hoover thermostat ξ per chain, initialised at C (dynamics (6))
)

func (m Method) String() string {
	switch m {
	case SGGMC:
		return "SGGMC"
	case GSGNHT:
		return "gSGNHT"
	}
	return "unknown"
}

// Config sets a sampler.
type Config struct {
	// Manifold is the space the chains move on, any manifold with an exact geodesic flow; nil is the product of K
	// spheres S^{n−1} of the starting points' shape (batch×K×n), the samplers of paper 001. On a
	// manifold.Euclidean the same integrator is SGHMC (SGGMC) and SGNHT (gSGNHT) with the flow x + hv.
	Manifold manifold.Geodesic
	Method   Method
	Step     float64 // ε
	Friction float64 // C > 0 (for gSGNHT the constant of D = CG and the initial ξ)
	L        int     // ABOBA steps per sample (default 1); only the final state of a sample is returned
	// VHat is the gradient-noise variance estimate V̂ (0 by default); the injected variance 2Cε − V̂ε² must be ≥ 0.
	VHat float64
	// Dim is the intrinsic dimension m of the thermostat ξ += (vᵀv/m − 1)h; 0 means the manifold's dimension
	// (K(n−1) on K spheres, the right value). Setting it to Kn on spheres reproduces the authors' code.
	Dim int
	// RenormEvery renormalises x and re-projects v every so many steps against rounding drift (the flow keeps the
	// constraints only to rounding, about 1e-12 after 2e7 steps); 0 means
	// 100, a negative value never.
	RenormEvery int
	// Seed and Stream name the counter-based random stream of the injected noise.
	Seed, Stream uint64
}

func (c *Config) check(m manifold.Geodesic) error {
	const op = "sggmc"
	switch {
	case c.Method != SGGMC && c.Method != GSGNHT:
		return run.ConfigErrorf(op, "Method", "unknown method %d", c.Method)
	case !(c.Step > 0) || math.IsInf(c.Step, 0):
		return run.ConfigErrorf(op, "Step", "step ε = %v must be positive and finite", c.Step)
	case !(c.Friction > 0) || math.IsInf(c.Friction, 0):
		return run.ConfigErrorf(op, "Friction", "friction C = %v must be positive", c.Friction)
	case c.L < 0:
		return run.ConfigErrorf(op, "L", "L = %d", c.L)
	case c.VHat < 0 || math.IsNaN(c.VHat):
		return run.ConfigErrorf(op, "VHat", "V̂ = %v", c.VHat)
	case 2*c.Friction*c.Step-c.VHat*c.Step*c.Step < 0:
		return run.ConfigErrorf(op, "VHat",
			"injected variance 2Cε − V̂ε² = %g < 0: need 2C ≥ εV̂ (paper eq. (8))", 2*c.Friction*c.Step-c.VHat*c.Step*c.Step)
	case c.Dim < 0:
		return run.ConfigErrorf(op, "Dim", "Dim = %d", c.Dim)
	}
	if c.L == 0 {
		c.L = 1
	}
	if c.Dim == 0 {
		c.Dim = m.Dim()
	}
	if c.Dim == 0 {
		return run.ConfigErrorf(op, "Dim", "zero-dimensional manifold %s", m.Name())
	}
	if c.RenormEvery == 0 {
		c.RenormEvery = 100
	}
	return nil
}

// geometry returns m, or the product of K spheres S^{n−1} of x0's shape when m is nil.
func geometry(m manifold.Geodesic, x0 *T) (manifold.Geodesic, error) {
	if x0 == nil || x0.Batch() < 1 || x0.Rows() < 1 || x0.Cols() < 1 {
		var s tensor.Shape
		if x0 != nil {
			s = x0.Shape()
		}
		return nil, backend.Errorf("sggmc", "x", backend.ErrShape, "starting points %v: want batch×K×n with at least one chain, sphere and coordinate", s)
	}
	if m != nil {
		return m, nil
	}
	return manifold.NewSphere(x0.Rows(), x0.Cols())
}

// checkPoints checks that x (backend memory) has m's point shape and that each of its chains is a finite point of
// m within 1e-8 (unit rows on spheres).
func checkPoints(b backend.Backend, m manifold.Geodesic, x *T) error {
	if err := backend.CheckSame("sggmc", "x", x, m.PointShape(x.Batch())); err != nil {
		return err
	}
	h := tensor.NewHost(x.Batch(), x.Rows(), x.Cols())
	if err := b.Download(h, x); err != nil {
		return err
	}
	if err := m.CheckPoint(h, 1e-8); err != nil {
		return fmt.Errorf("sggmc: starting points on %s: %w", m.Name(), err)
	}
	return nil
}

// flat views a contiguous batch×K×n tensor as batch×1×(K·n), so that ScaleRows by a batch×1×1 tensor scales each
// chain by its own scalar.
func flat(t *T) *T {
	f, err := t.Reshape(t.Batch(), 1, t.Rows()*t.Cols())
	if err != nil {
		panic("sggmc: tensor not contiguous: " + err.Error())
	}
	return f
}

// scratch allocates backend tensors and frees them together.
type scratch struct {
	b  backend.Backend
	ts []*T
}

func (s *scratch) alloc(batch, rows, cols int) (*T, error) {
	t, err := s.b.Alloc(tensor.Shape{Batch: batch, Rows: rows, Cols: cols})
	if err != nil {
		return nil, err
	}
	s.ts = append(s.ts, t)
	return t, nil
}

func (s *scratch) free() {
	for _, t := range s.ts {
		s.b.Free(t)
	}
	s.ts = nil
}

// noiseStream hands out consecutive blocks of one counter-based normal stream.
type noiseStream struct {
	c rng.Counter
}

func (n *noiseStream) fill(b backend.Backend, dst *T) error {
	if err := b.FillNormal(dst, n.c); err != nil {
		return err
	}
	n.c = n.c.Advance(dst.Len())
	return nil
}
