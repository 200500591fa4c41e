package rcg

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/geovb/geovb/algos/run"
)

// Minimize runs the method of s on obj from x0 under ctx and s.Control and returns the final point. Bad input
// (wrong length, non-finite x0, non-finite F or gradient at the start, bad settings) is an error before any
// iteration; a NaN during a line search only rejects that trial (Result.Rejected and the recorder's "rejected").
//
// Each iteration: Update (fixed points, VB-EM) → gradient → natural gradient → β and restarts → step rule. The
// recorder gets Objective = −F (higher is better), GradNorm = √(gᵀg̃), Step = α and Extra "F", "beta",
// "f_evals", "g_evals", "rejected", "restarts". The run is the core's batch of one (MinimizeBatch runs B of them),
// its vectors host slices.
func Minimize(ctx context.Context, obj Objective, x0 []float64, s Settings) (*Result, error) {
	ctl := s.Control.WithContext(ctx)
	if err := s.validate(); err != nil {
		return nil, err
	}
	dim := obj.Dim()
	switch {
	case len(x0) != dim:
		return nil, run.ConfigErrorf("rcg", "x0", "length %d, Dim %d", len(x0), dim)
	case !finiteVec(x0):
		return nil, fmt.Errorf("%w: x0 not finite", ErrBadInput)
	}
	o := newOptimizer(obj, s, x0)
	nFree := dim
	if sz, ok := obj.(Sizer); ok {
		nFree = sz.NumFree()
	}
	r := &runState{}
	c := newCore(s, nFree, dim, []*runState{r}, o)
	stf, _ := obj.(Stateful)
	if ctl.Resume {
		if err := o.resume(ctl.CheckpointPath, r, stf); err != nil {
			return nil, err
		}
	} else if err := c.start(); err != nil {
		return nil, err
	}
	hc := &hostControl{loop: ctl.Start(10000, r.iters), path: ctl.CheckpointPath, o: o, r: r, stf: stf}
	c.ctl = hc
	if err := c.run(); err != nil {
		return nil, err
	}
	res := r.res
	res.Result = hc.loop.Result()
	if res.Reason != run.Converged { // the first stop reason wins (run.Loop.Finish)
		res.ConvergedBy = NotConverged
	}
	res.X = o.x
	res.F = r.fLast
	return &res, res.Err
}

// optimizer is the engine of Minimize: one run on host slices.
type optimizer struct {
	obj                                   Objective
	s                                     Settings
	stepper                               Stepper
	upd                                   Updater
	x, xt, g, gt, gPrev, gtPrev, p, pPrev []float64
	rows                                  [2][][]float64 // Old: g̃ and p_prev as rows of a batch of one
}

func newOptimizer(obj Objective, s Settings, x0 []float64) *optimizer {
	dim := len(x0)
	o := &optimizer{obj: obj, s: s, x: append([]float64(nil), x0...)}
	o.stepper, _ = obj.(Stepper)
	o.upd, _ = obj.(Updater)
	for _, v := range []*[]float64{&o.xt, &o.g, &o.gt, &o.gPrev, &o.gtPrev, &o.p, &o.pPrev} {
		*v = make([]float64, dim)
	}
	o.rows = [2][][]float64{{o.gt}, {o.pPrev}}
	return o
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func finiteVec(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// step writes x + αp (or the Stepper's trial point) into dst.
func (o *optimizer) step(dst, x, p []float64, alpha float64) {
	if o.stepper != nil {
		o.stepper.Step(dst, x, p, alpha)
		return
	}
	for i := range x {
		dst[i] = x[i] + alpha*p[i]
	}
}

func (o *optimizer) update(int) error {
	if o.upd == nil {
		return nil
	}
	return o.upd.Update(o.x)
}

func (o *optimizer) grad(_ int, f []float64) error {
	f[0] = o.obj.Grad(o.g, o.x)
	return nil
}

func (o *optimizer) finite(_ int, f float64) bool {
	return !math.IsNaN(f) && !math.IsInf(f, 0) && finiteVec(o.g)
}

func (o *optimizer) natural(int) error {
	if o.s.Method.riemannian() {
		o.obj.NatGrad(o.gt, o.g, o.x)
	} else {
		copy(o.gt, o.g)
	}
	return nil
}

func (o *optimizer) vec(v vec) []float64 {
	return [...][]float64{vG: o.g, vGt: o.gt, vGPrev: o.gPrev, vGtPrev: o.gtPrev, vP: o.p, vPPrev: o.pPrev}[v]
}

func (o *optimizer) dots(dst []float64, a, b vec, _ int) error {
	dst[0] = dot(o.vec(a), o.vec(b))
	return nil
}

func (o *optimizer) sqNormG(int) float64 { return dot(o.g, o.g) }

func (o *optimizer) direction(_ int, beta, d0 []float64) error {
	if o.s.Method == GD {
		for i := range o.p {
			o.p[i] = -o.g[i]
		}
	} else {
		for i := range o.p {
			o.p[i] = -o.gt[i] + beta[0]*o.pPrev[i]
		}
	}
	d0[0] = dot(o.g, o.p)
	return nil
}

func (o *optimizer) trial(_ int, alpha, f []float64) error {
	o.step(o.xt, o.x, o.p, alpha[0])
	f[0] = o.obj.Value(o.xt)
	return nil
}

func (o *optimizer) unmoved(_ int, dst []bool) error {
	dst[0] = !moved(o.xt, o.x)
	return nil
}

func (o *optimizer) accept(_ int, alpha []float64) error {
	o.step(o.x, o.x, o.p, alpha[0])
	copy(o.gPrev, o.g)
	copy(o.gtPrev, o.gt)
	copy(o.pPrev, o.p)
	return nil
}

func (o *optimizer) swap(int, int) error { return nil } // a batch of one

func (o *optimizer) hostRows(int) (gt, pPrev [][]float64, err error) {
	return o.rows[0], o.rows[1], nil
}

func (o *optimizer) setP(_ int, p []float64) error {
	copy(o.p, p)
	return nil
}

// moved reports whether the trial point xt (x stepped along p, through the objective's Stepper if it has one)
// differs from x in some element.
func moved(xt, x []float64) bool {
	for i, v := range x {
		if xt[i] != v {
			return true
		}
	}
	return false
}

// resume loads the checkpoint at path into o and r (and the objective's state into stf). A missing or unreadable
// file, or one of another method or dimension, is an error wrapping run.ErrCheckpoint.
func (o *optimizer) resume(path string, r *runState, stf Stateful) error {
	var c checkpoint
	if err := loadCheckpoint(path, checkpointMethod, checkpointVersion, &c); err != nil {
		return err
	}
	if c.Method != int(o.s.Method) || len(c.X) != len(o.x) {
		return fmt.Errorf("rcg: %s: checkpoint of method %v, dim %d, want %v, dim %d: %w", path, Method(c.Method),
			len(c.X), o.s.Method, len(o.x), run.ErrCheckpoint)
	}
	if stf != nil {
		if err := stf.SetState(c.ObjState); err != nil {
			return err
		}
	}
	copy(o.x, c.X)
	copy(o.gPrev, c.GPrev)
	copy(o.gtPrev, c.GtPrev)
	copy(o.pPrev, c.P)
	copy(r.mult, c.Mult)
	r.gnPrev, r.alphaPrev, r.fPrev, r.fLast = c.GnPrev, c.Alpha, c.FPrev, c.FPrev
	r.sinceReset, r.calm, r.iters, r.havePrev = c.SinceReset, c.Calm, c.Iter, c.HavePrev
	r.res.FEvals, r.res.GEvals, r.res.Rejected, r.res.Restarts = c.FEvals, c.GEvals, c.Rejected, c.Restarts
	return nil
}

// loadCheckpoint is run.LoadCheckpoint for a resumed run: a file that cannot be read (a missing one included)
// is an error wrapping run.ErrCheckpoint as well as the cause.
func loadCheckpoint(path, method string, version int, state any) error {
	err := run.LoadCheckpoint(path, method, version, state)
	if err != nil && !errors.Is(err, run.ErrCheckpoint) {
		return fmt.Errorf("rcg: resume: %w: %w", err, run.ErrCheckpoint)
	}
	return err
}

// hostControl is the control of Minimize's run: ctl's run.Loop, and its checkpoints.
type hostControl struct {
	loop *run.Loop
	path string
	o    *optimizer
	r    *runState
	stf  Stateful
}

func (h *hostControl) halt(*runState) (run.StopReason, bool) { return run.Running, !h.loop.Next() }

func (h *hostControl) report(_ *runState, rec run.Record) { h.loop.Report(rec) }

func (h *hostControl) finish(_ *runState, reason run.StopReason) { h.loop.Finish(reason) }

func (h *hostControl) failed(err error) error {
	h.loop.Fail(err)
	return nil
}

func (h *hostControl) roundDone() error {
	if !h.loop.CheckpointDue() {
		return nil
	}
	o, r := h.o, h.r
	c := checkpoint{Method: int(o.s.Method), X: o.x, P: o.pPrev, GPrev: o.gPrev, GtPrev: o.gtPrev, GnPrev: r.gnPrev,
		Alpha: r.alphaPrev, FPrev: r.fPrev, SinceReset: r.sinceReset, Calm: r.calm, Iter: h.loop.Iter(),
		FEvals: r.res.FEvals, GEvals: r.res.GEvals, Rejected: r.res.Rejected, Restarts: r.res.Restarts,
		HavePrev: r.havePrev, Mult: r.mult}
	if h.stf != nil {
		c.ObjState = h.stf.State()
	}
	if err := run.SaveCheckpoint(h.path, checkpointMethod, checkpointVersion, c); err != nil {
		h.loop.Fail(err)
	}
	return nil
}
