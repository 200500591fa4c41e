// Package model is the contract between a user's model and geovb's methods: what a user implements once and hands
// to MGVB, NAGVAC, Cholesky-NG or an SG-MCMC sampler alike.
//
// A model is an unnormalised log density log p(θ) (for Bayesian inference, log p(y | θ) + log p(θ)) with its
// gradient, in one of two forms:
//
//   - Density, the host form, in the spirit of gonum/optimize: the dimension, and LogDensity(grad, x), which returns
//     log p(x) and writes ∇ log p(x) into the caller's slice. It is what a user writes first.
//   - Batched, the form evaluated on a backend: B fits × S draws at once (θ is a B×d×S tensor whose columns are the
//     points), so that a GPU run keeps the model and its data in device memory. The ready-made models in models/
//     implement it with backend operations.
//
// Batch lifts a Density to a Batched model (one host round trip per evaluation), so every method that takes a
// Batched model also takes a host model. CheckGradient compares a model's gradient with central finite
// differences; call it from your own tests.
//
// Errors: a point outside the support (a negative variance, a probability outside [0, 1]) is an error wrapping
// ErrSupport; a method stops with that error. A NaN or infinite log density or gradient is not an error of the
// model: the methods detect it and stop (run.NotFinite) with the last finite state.
//
// Methods whose model is different by nature keep contracts of their own with the same conventions: L-RVGA's
// observation model (algos/lrvga.Model) and RCG's free energy (algos/rcg.Objective).
package model

import (
	"errors"
	"fmt"
	"math"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// ErrSupport is the cause of an error for a point outside the model's support.
var ErrSupport = errors.New("point outside the support")

// ErrGradient is the cause of CheckGradient's error: the gradient disagrees with finite differences.
var ErrGradient = errors.New("gradient does not match finite differences")

// Density is the host form of a model: an unnormalised log density on R^Dim and its gradient.
type Density interface {
	// Dim is d, the number of parameters.
	Dim() int
	// LogDensity returns log p(x) up to a constant and writes ∇ log p(x) into grad (len d). len(x) is d. An
	// implementation must not keep x or grad. A point outside the support gives an error wrapping ErrSupport.
	LogDensity(grad, x []float64) (float64, error)
}

// Batched is a model evaluated on a backend for many points at once.
type Batched interface {
	// Dim is d, the number of parameters.
	Dim() int
	// LogDensityBatch writes log p(θ) of every column θ of theta (B×d×S, backend memory) into lp (B×1×S) and, when
	// grad is not nil, ∇ log p(θ) of every column into grad (B×d×S). Shape mismatches are errors wrapping
	// backend.ErrShape; a point outside the support is an error wrapping ErrSupport.
	LogDensityBatch(b backend.Backend, lp, grad, theta *tensor.Tensor) error
}

// Batch returns m as a Batched model. Each evaluation downloads θ, calls m.LogDensity for each of its B·S columns
// in order (batch item, then column), and uploads the values and gradients: fine on the CPU backend, one host round
// trip per evaluation on a GPU. A Density that is already Batched is returned as it is.
func Batch(m Density) Batched {
	if bm, ok := m.(Batched); ok {
		return bm
	}
	return &hostBatch{m: m}
}

// hostBatch evaluates a Density column by column; its host buffers grow to the largest call and are reused.
type hostBatch struct {
	m             Density
	th, lp, gr    *tensor.Tensor
	x, g          []float64
	thLen, outLen int
}

func (h *hostBatch) Dim() int { return h.m.Dim() }

func (h *hostBatch) LogDensityBatch(b backend.Backend, lp, grad, theta *tensor.Tensor) error {
	const op = "model.Batch"
	d := h.m.Dim()
	s := theta.Shape()
	if s.Rows != d || s.Batch < 1 || s.Cols < 1 {
		return backend.Errorf(op, "theta", backend.ErrShape, "theta is %v, want B×%d×S", s, d)
	}
	if err := backend.CheckSame(op, "lp", lp, tensor.Shape{Batch: s.Batch, Rows: 1, Cols: s.Cols}); err != nil {
		return err
	}
	if grad != nil {
		if err := backend.CheckSame(op, "grad", grad, s); err != nil {
			return err
		}
	}
	h.buffers(s, grad != nil)
	if err := b.Download(h.th, theta); err != nil {
		return err
	}
	for k := 0; k < s.Batch; k++ {
		for j := 0; j < s.Cols; j++ {
			for i := 0; i < d; i++ {
				h.x[i] = h.th.At(k, i, j)
			}
			v, err := h.m.LogDensity(h.g, h.x)
			if err != nil {
				return fmt.Errorf("%s: fit %d, draw %d: %w", op, k, j, err)
			}
			h.lp.Set(k, 0, j, v)
			if grad != nil {
				for i := 0; i < d; i++ {
					h.gr.Set(k, i, j, h.g[i])
				}
			}
		}
	}
	if err := b.Upload(lp, h.lp); err != nil {
		return err
	}
	if grad != nil {
		return b.Upload(grad, h.gr)
	}
	return nil
}

func (h *hostBatch) buffers(s tensor.Shape, wantGrad bool) {
	if h.th == nil || h.th.Shape() != s {
		h.th = tensor.NewHost(s.Batch, s.Rows, s.Cols)
		h.lp = tensor.NewHost(s.Batch, 1, s.Cols)
		h.gr = nil
	}
	if wantGrad && h.gr == nil {
		h.gr = tensor.NewHost(s.Batch, s.Rows, s.Cols)
	}
	if len(h.x) != s.Rows {
		h.x = make([]float64, s.Rows)
		h.g = make([]float64, s.Rows)
	}
}

// OnHost is a Batched model seen as a Density: each LogDensity call evaluates one point (a 1×d×1 evaluation) on
// the backend. It serves methods that take the host form (Cholesky-NG) and CheckGradient. It is not safe for
// concurrent use; Close frees its three small backend tensors.
type OnHost struct {
	b             backend.Backend
	m             Batched
	th, lp, gr    *tensor.Tensor // backend 1×d×1, 1×1×1, 1×d×1
	hth, hlp, hgr *tensor.Tensor // host copies
}

// Host returns m evaluated on b as a Density.
func Host(b backend.Backend, m Batched) *OnHost { return &OnHost{b: b, m: m} }

// Dim is m's dimension.
func (h *OnHost) Dim() int { return h.m.Dim() }

// Close frees the backend tensors; the value can still be used (they are allocated again).
func (h *OnHost) Close() {
	for _, t := range []**tensor.Tensor{&h.th, &h.lp, &h.gr} {
		if *t != nil {
			h.b.Free(*t)
			*t = nil
		}
	}
}

func (h *OnHost) alloc() error {
	if h.th != nil {
		return nil
	}
	d := h.m.Dim()
	for _, p := range []struct {
		t    **tensor.Tensor
		rows int
	}{{&h.th, d}, {&h.lp, 1}, {&h.gr, d}} {
		t, err := h.b.Alloc(tensor.Shape{Batch: 1, Rows: p.rows, Cols: 1})
		if err != nil {
			h.Close()
			return err
		}
		*p.t = t
	}
	h.hth, h.hlp, h.hgr = tensor.NewHost(1, d, 1), tensor.NewHost(1, 1, 1), tensor.NewHost(1, d, 1)
	return nil
}

// LogDensity evaluates m at x on the backend.
func (h *OnHost) LogDensity(grad, x []float64) (float64, error) {
	d := h.m.Dim()
	if len(x) != d || len(grad) != d {
		return math.NaN(), backend.Errorf("model.Host", "x", backend.ErrShape, "len(x) = %d, len(grad) = %d, want %d", len(x), len(grad), d)
	}
	if err := h.alloc(); err != nil {
		return math.NaN(), err
	}
	for i, v := range x {
		h.hth.Set(0, i, 0, v)
	}
	if err := h.b.Upload(h.th, h.hth); err != nil {
		return math.NaN(), err
	}
	if err := h.m.LogDensityBatch(h.b, h.lp, h.gr, h.th); err != nil {
		return math.NaN(), err
	}
	if err := h.b.Download(h.hlp, h.lp); err != nil {
		return math.NaN(), err
	}
	if err := h.b.Download(h.hgr, h.gr); err != nil {
		return math.NaN(), err
	}
	for i := range grad {
		grad[i] = h.hgr.At(0, i, 0)
	}
	return h.hlp.At(0, 0, 0), nil
}
