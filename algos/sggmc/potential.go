package sggmc

import (
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/tensor"
)

// Potential is the target of a model: π(x) ∝ p(x), U(x) = −log p(x). A chain's point (K×n on the sampler's
// manifold) is the model's parameter vector θ of length d = K·n in row-major order: on manifold.Euclidean(1, d) it
// is θ itself. The model's gradient is exact, so the sampler runs with V̂ = 0 unless the model is a minibatch
// estimate (then set Config.VHat). Close frees its backend scratch.
type Potential struct {
	m  model.Batched
	b  backend.Backend
	lp *T // batch×1×1
	hl *T // host copy of lp, for U
}

// NewPotential returns the potential −log p of m.
func NewPotential(m model.Batched) *Potential { return &Potential{m: m} }

// Close frees the scratch tensor.
func (p *Potential) Close() {
	if p.lp != nil {
		p.b.Free(p.lp)
		p.lp = nil
	}
}

// eval evaluates log p (and ∇ log p into grad when not nil) at every chain of x.
func (p *Potential) eval(b backend.Backend, grad, x *T) error {
	batch, d := x.Batch(), x.Rows()*x.Cols()
	if d != p.m.Dim() {
		return backend.Errorf("sggmc.potential", "x", backend.ErrShape, "chains of %d×%d = %d coordinates, model has %d", x.Rows(), x.Cols(), d, p.m.Dim())
	}
	if p.lp == nil || p.lp.Batch() != batch || p.b != b {
		p.Close()
		lp, err := b.Alloc(tensor.Shape{Batch: batch, Rows: 1, Cols: 1})
		if err != nil {
			return err
		}
		p.b, p.lp = b, lp
	}
	th, err := x.Reshape(batch, d, 1)
	if err != nil {
		return backend.Errorf("sggmc.potential", "x", backend.ErrShape, "%v", err)
	}
	var g *T
	if grad != nil {
		if g, err = grad.Reshape(batch, d, 1); err != nil {
			return backend.Errorf("sggmc.potential", "grad", backend.ErrShape, "%v", err)
		}
	}
	return p.m.LogDensityBatch(b, p.lp, g, th)
}

// GradU writes ∇U = −∇ log p of every chain of x into grad.
func (p *Potential) GradU(b backend.Backend, grad, x *T, step uint64) error {
	if err := p.eval(b, grad, x); err != nil {
		return err
	}
	return b.Axpby(grad, -1, grad, 0, nil)
}

// U writes U = −log p of every chain of x into u (length batch).
func (p *Potential) U(b backend.Backend, u []float64, x *T) error {
	if err := p.eval(b, nil, x); err != nil {
		return err
	}
	if p.hl == nil || p.hl.Batch() != x.Batch() {
		p.hl = tensor.NewHost(x.Batch(), 1, 1)
	}
	if err := b.Download(p.hl, p.lp); err != nil {
		return err
	}
	for i := range u {
		u[i] = -p.hl.At(i, 0, 0)
	}
	return nil
}

var _ Energy = (*Potential)(nil)
