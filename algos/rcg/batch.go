package rcg

import (
	"context"
	"fmt"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// BatchObjective is B independent objectives of one dimension evaluated together on a backend (a batch of
// problems: initialisations, seeds, data sets), e.g. mog.Batch. Every call works on the first n runs (slots 0…n−1) of its operands, which
// are contiguous n×1×Dim tensors in the backend's memory; MinimizeBatch keeps the unfinished runs first by Swap, and
// in each round of its line search the runs still searching.
type BatchObjective interface {
	Backend() backend.Backend
	// Batch returns B, Dim the length of one run's x, NumFree the n of the √n restart rule.
	Batch() int
	Dim() int
	NumFree() int
	// Value writes F of each run into f; NaN or ±Inf marks a point the line search must reject.
	Value(f []float64, x *tensor.Tensor) error
	// Grad writes F, the Euclidean gradient g and the natural gradient gt = G⁻¹g (eq. 4) of each run.
	Grad(f []float64, g, gt, x *tensor.Tensor) error
	// Step writes x + α_b p for each run b (or the objective's own trial point, as Stepper) into dst (dst may be x).
	Step(dst, x, p *tensor.Tensor, alpha []float64) error
	// Swap exchanges the per-run data and state of slots i and j.
	Swap(i, j int) error
}

// BatchUpdater is Updater for a batch: Update(x) runs the closed-form updates between steps of the first n runs at
// their means x (n×1×Dim). MinimizeBatch calls it where Minimize calls Updater.Update: before the first gradient and
// at the start of every later iteration of the unfinished runs.
type BatchUpdater interface {
	Update(x *tensor.Tensor) error
}

// BatchStateful is Stateful for a batch, by slot: the state a BatchUpdater keeps besides x, which checkpoints save
// per run. MinimizeBatch checkpoints a BatchUpdater only when it is also BatchStateful.
type BatchStateful interface {
	State(i int) []float64
	SetState(i int, s []float64) error
}

// MinimizeBatch runs the method of s on every run of obj from x0[i] (len Dim each) at once and returns one Result
// per run, in the order of x0. Per run it is Minimize's algorithm — the same core, a batch of B runs instead of one:
// every Method, Beta and Search with LineSearch.Refine, Powell–Beale (7) and every-k / ⌈√n⌉ restarts, the descent
// safeguard, α₀, the retry along −g̃ and the convergence tests — with the vector work of all unfinished runs done by
// batched backend calls: one Grad per iteration, then rounds of one Value each in which every run still in its line
// search (or Old's backtracking) evaluates its next trial step (swapped to the front first; runs whose search has
// ended wait and are not evaluated). A run that stops (converged, cap, non-finite) is swapped behind the unfinished
// ones and no longer updated or evaluated; the slots of obj are back in the order of x0 when MinimizeBatch returns
// (not after an error from the backend). A cancelled ctx (or s.Control.Ctx when ctx is nil) stops every unfinished
// run with reason Cancelled, and MinimizeBatch returns the results with the context's error, as Minimize does. Old
// keeps its multipliers on the host.
//
// s.Control.MaxIter caps each run (0: 10000). The recorder gets each run's records, those Minimize reports, with
// Record.Run = i (the run's index in x0): every Control.Every iterations of that run (counted per run) and its last
// one. With Control.CheckpointEvery the state of every run is saved every so many rounds (one iteration of every
// unfinished run) to Control.CheckpointPath, and Control.Resume continues from that file (it must exist; x0 is then
// not used), as Minimize; the objective must keep no state between calls besides x, as mog.Batch does.
func MinimizeBatch(ctx context.Context, obj BatchObjective, x0 [][]float64, s Settings) ([]Result, error) {
	ctl := s.Control.WithContext(ctx)
	if err := s.validate(); err != nil {
		return nil, err
	}
	B, dim := obj.Batch(), obj.Dim()
	if len(x0) != B {
		return nil, run.ConfigErrorf("rcg", "x0", "%d starting points for a batch of %d", len(x0), B)
	}
	upd, _ := obj.(BatchUpdater)
	stf, _ := obj.(BatchStateful)
	if upd != nil && stf == nil && (ctl.CheckpointEvery > 0 || ctl.Resume) {
		return nil, run.ConfigErrorf("rcg", "Control", "checkpoints of a batch objective with updates between "+
			"steps need its state (BatchStateful)")
	}
	for i, x := range x0 {
		if len(x) != dim {
			return nil, run.ConfigErrorf("rcg", "x0", "x0[%d] has length %d, Dim %d", i, len(x), dim)
		}
		if !finiteVec(x) {
			return nil, fmt.Errorf("%w: x0[%d] is not finite", ErrBadInput, i)
		}
	}
	e, err := newBatchEngine(obj, s, upd)
	defer e.free()
	if err != nil {
		return nil, err
	}
	if err := uploadRows(e.be, e.x, x0); err != nil {
		return nil, err
	}
	st := make([]*runState, B)
	for i := range st {
		st[i] = &runState{id: i}
	}
	c := newCore(s, obj.NumFree(), dim, st, e)
	c.batched = true
	bc := &batchControl{ctx: ctl.Ctx, maxIter: ctl.MaxIter, rec: ctl.Recorder, every: max(ctl.Every, 1),
		ckEvery: ctl.CheckpointEvery, path: ctl.CheckpointPath, s: s, e: e, st: st, stf: stf,
		pending: make([]*run.Record, B)}
	if bc.ctx == nil {
		bc.ctx = context.Background()
	}
	if bc.maxIter == 0 {
		bc.maxIter = 10000
	}
	c.ctl = bc
	if ctl.Resume {
		if err := resumeBatch(c, ctl.CheckpointPath, stf); err != nil {
			return nil, err
		}
	} else if err := c.start(); err != nil {
		return nil, err
	}
	if err := c.run(); err != nil {
		return nil, err
	}
	return e.results(st, bc.ctx)
}

// resumeBatch loads the checkpoint at path into the core's runs (slot i = run i) and retires the runs that had
// finished.
func resumeBatch(c *core, path string, stf BatchStateful) error {
	e := c.e.(*batchEngine)
	B := len(c.st)
	ck, err := loadBatch(path, c.s, B, e.x.Cols())
	if err != nil {
		return err
	}
	rows := []struct {
		t    *tensor.Tensor
		rows [][]float64
	}{{e.x, ck.X}, {e.gtPrev, ck.GtPrev}, {e.pPrev, ck.PPrev}}
	if e.gPrev != nil {
		rows = append(rows, struct {
			t    *tensor.Tensor
			rows [][]float64
		}{e.gPrev, ck.GPrev})
	}
	for _, r := range rows {
		if err := uploadRows(e.be, r.t, r.rows); err != nil {
			return err
		}
	}
	if stf != nil && ck.ObjState == nil {
		return fmt.Errorf("rcg: %s holds no objective state: %w", path, run.ErrCheckpoint)
	}
	for i := 0; stf != nil && i < B; i++ {
		if err := stf.SetState(i, ck.ObjState[i]); err != nil {
			return err
		}
	}
	for i := B - 1; i >= 0; i-- {
		r := ck.Runs[i]
		c.st[i].load(r)
		if c.s.Method == Old {
			c.st[i].mult = ck.Mult[i]
		}
		if r.Done {
			if err := c.retire(i, r.Reason, r.ConvergedBy); err != nil {
				return err
			}
		}
	}
	return nil
}

// batchControl is MinimizeBatch's control: the context and cap of every run, the recorder (every so many
// iterations of each run, and its last), checkpoints every so many rounds.
type batchControl struct {
	ctx     context.Context
	maxIter int
	rec     run.Recorder
	every   int
	pending []*run.Record // by run: its last record when the recorder has not had it
	ckEvery int
	path    string
	rounds  int
	s       Settings
	e       *batchEngine
	st      []*runState
	stf     BatchStateful
}

func (b *batchControl) halt(r *runState) (run.StopReason, bool) {
	switch {
	case b.ctx.Err() != nil:
		return run.Cancelled, true
	case r.iters >= b.maxIter:
		return run.MaxIter, true
	}
	return run.Running, false
}

func (b *batchControl) report(r *runState, rec run.Record) {
	if b.rec == nil {
		return
	}
	rec.Run = r.id
	if rec.Iter%b.every == 0 {
		b.rec.Record(rec)
		b.pending[r.id] = nil
		return
	}
	b.pending[r.id] = &rec
}

func (b *batchControl) finish(r *runState, _ run.StopReason) {
	if p := b.pending[r.id]; p != nil {
		b.rec.Record(*p)
		b.pending[r.id] = nil
	}
}

func (b *batchControl) failed(err error) error { return err }

func (b *batchControl) roundDone() error {
	if b.rounds++; b.ckEvery > 0 && b.rounds%b.ckEvery == 0 {
		return saveBatch(b.path, b.e, b.s, b.st, b.stf)
	}
	return nil
}

// batchEngine is the engine of MinimizeBatch: the runs' vectors are the items of B×1×Dim tensors on the backend.
type batchEngine struct {
	obj                                        BatchObjective
	be                                         backend.Backend
	upd                                        BatchUpdater
	s                                          Settings
	x, xt, g, gt, gPrev, gtPrev, p, pPrev, tmp *tensor.Tensor // gPrev only for Hestenes–Stiefel
	dotT                                       *tensor.Tensor // B×1×1
	hd                                         *tensor.Tensor // B×1×1 on the host
	gg                                         []float64      // gᵀg by slot, from grad
	hg, hp                                     *tensor.Tensor // Old: g̃ and p_prev on the host
	hrow                                       *tensor.Tensor // Old: one direction on the host
	owned                                      []*tensor.Tensor
}

func newBatchEngine(obj BatchObjective, s Settings, upd BatchUpdater) (*batchEngine, error) {
	B, dim := obj.Batch(), obj.Dim()
	e := &batchEngine{obj: obj, be: obj.Backend(), upd: upd, s: s, hd: tensor.NewHost(B, 1, 1), gg: make([]float64, B)}
	shape := tensor.Shape{Batch: B, Rows: 1, Cols: dim}
	ts := []**tensor.Tensor{&e.x, &e.xt, &e.g, &e.gt, &e.gtPrev, &e.p, &e.pPrev, &e.tmp}
	if s.Beta == HestenesStiefel {
		ts = append(ts, &e.gPrev)
	}
	for _, t := range ts {
		v, err := e.be.Alloc(shape)
		if err != nil {
			return e, err
		}
		e.owned = append(e.owned, v)
		*t = v
	}
	d, err := e.be.Alloc(tensor.Shape{Batch: B, Rows: 1, Cols: 1})
	if err != nil {
		return e, err
	}
	e.owned = append(e.owned, d)
	e.dotT = d
	return e, nil
}

func (e *batchEngine) free() {
	for _, t := range e.owned {
		e.be.Free(t)
	}
}

// rowDots returns aᵀb for the first n runs.
func (e *batchEngine) rowDots(dst []float64, a, b *tensor.Tensor, n int) error {
	if err := e.be.RowDots(e.dotT.Batches(0, n), a.Batches(0, n), b.Batches(0, n)); err != nil {
		return err
	}
	if err := e.be.Download(e.hd.Batches(0, n), e.dotT.Batches(0, n)); err != nil {
		return err
	}
	for i := range n {
		dst[i] = e.hd.At(i, 0, 0)
	}
	return nil
}

func (e *batchEngine) update(n int) error {
	if e.upd == nil {
		return nil
	}
	return e.upd.Update(e.x.Batches(0, n))
}

func (e *batchEngine) grad(n int, f []float64) error {
	if err := e.obj.Grad(f, e.g.Batches(0, n), e.gt.Batches(0, n), e.x.Batches(0, n)); err != nil {
		return err
	}
	return e.rowDots(e.gg, e.g, e.g, n) // gᵀg is finite when g is (barring overflow)
}

func (e *batchEngine) finite(i int, f float64) bool { return run.Finite(f, e.gg[i]) }

func (e *batchEngine) natural(n int) error {
	if e.s.Method.riemannian() {
		return nil // the objective's Grad wrote g̃
	}
	return e.be.Copy(e.gt.Batches(0, n), e.g.Batches(0, n)) // Euclidean directions: g̃ = g
}

func (e *batchEngine) vec(v vec) *tensor.Tensor {
	return [...]*tensor.Tensor{vG: e.g, vGt: e.gt, vGPrev: e.gPrev, vGtPrev: e.gtPrev, vP: e.p, vPPrev: e.pPrev}[v]
}

func (e *batchEngine) dots(dst []float64, a, b vec, n int) error {
	return e.rowDots(dst, e.vec(a), e.vec(b), n)
}

func (e *batchEngine) sqNormG(i int) float64 { return e.gg[i] }

func (e *batchEngine) direction(n int, beta, d0 []float64) error {
	hb := e.hd.Batches(0, n)
	for i := range n {
		hb.Set(i, 0, 0, beta[i])
	}
	if err := e.be.Upload(e.dotT.Batches(0, n), hb); err != nil {
		return err
	}
	if err := e.be.ScaleRows(e.p.Batches(0, n), e.pPrev.Batches(0, n), e.dotT.Batches(0, n)); err != nil {
		return err
	}
	if err := e.be.Axpby(e.p.Batches(0, n), -1, e.gt.Batches(0, n), 1, e.p.Batches(0, n)); err != nil {
		return err
	}
	return e.rowDots(d0, e.g, e.p, n)
}

func (e *batchEngine) trial(m int, alpha, f []float64) error {
	if err := e.obj.Step(e.xt.Batches(0, m), e.x.Batches(0, m), e.p.Batches(0, m), alpha[:m]); err != nil {
		return err
	}
	return e.obj.Value(f, e.xt.Batches(0, m))
}

// unmoved: max |xt − x| of each run is 0.
func (e *batchEngine) unmoved(m int, dst []bool) error {
	d := e.tmp.Batches(0, m)
	if err := e.be.Axpby(d, 1, e.xt.Batches(0, m), -1, e.x.Batches(0, m)); err != nil {
		return err
	}
	if err := e.be.Map(d, backend.Abs, 1, d); err != nil {
		return err
	}
	if err := e.be.Reduce(e.dotT.Batches(0, m), backend.ReduceMax, backend.AxisCols, d); err != nil {
		return err
	}
	if err := e.be.Download(e.hd.Batches(0, m), e.dotT.Batches(0, m)); err != nil {
		return err
	}
	for i := range m {
		dst[i] = e.hd.At(i, 0, 0) == 0
	}
	return nil
}

func (e *batchEngine) accept(n int, alpha []float64) error {
	if err := e.obj.Step(e.x.Batches(0, n), e.x.Batches(0, n), e.p.Batches(0, n), alpha[:n]); err != nil {
		return err
	}
	pairs := [][2]*tensor.Tensor{{e.gtPrev, e.gt}, {e.pPrev, e.p}}
	if e.gPrev != nil {
		pairs = append(pairs, [2]*tensor.Tensor{e.gPrev, e.g})
	}
	for _, c := range pairs {
		if err := e.be.Copy(c[0].Batches(0, n), c[1].Batches(0, n)); err != nil {
			return err
		}
	}
	return nil
}

// swap exchanges the runs in slots i and j: the objective's data and state and the run's vectors. The slot arrays
// of the core (F, dots, …) are filled afresh before each use, so they need no swap.
func (e *batchEngine) swap(i, j int) error {
	if err := e.obj.Swap(i, j); err != nil {
		return err
	}
	for _, t := range []*tensor.Tensor{e.x, e.g, e.gt, e.gPrev, e.gtPrev, e.p, e.pPrev} {
		if t == nil {
			continue
		}
		if err := swapItems(e.be, t, e.tmp, i, j); err != nil {
			return err
		}
	}
	return nil
}

// hostRows downloads g̃ and p_prev of the first n runs (Old's host arithmetic: down once per iteration, and a row of
// p up once per shrinking).
func (e *batchEngine) hostRows(n int) (gt, pPrev [][]float64, err error) {
	B, dim := e.x.Batch(), e.x.Cols()
	if e.hg == nil {
		e.hg, e.hp, e.hrow = tensor.NewHost(B, 1, dim), tensor.NewHost(B, 1, dim), tensor.NewHost(1, 1, dim)
	}
	if err := e.be.Download(e.hg.Batches(0, n), e.gt.Batches(0, n)); err != nil {
		return nil, nil, err
	}
	if err := e.be.Download(e.hp.Batches(0, n), e.pPrev.Batches(0, n)); err != nil {
		return nil, nil, err
	}
	gt, pPrev = make([][]float64, n), make([][]float64, n)
	for i := range n {
		gt[i], _, _, _ = e.hg.Matrix(i)
		pPrev[i], _, _, _ = e.hp.Matrix(i)
	}
	return gt, pPrev, nil
}

func (e *batchEngine) setP(i int, p []float64) error {
	row, _, _, _ := e.hrow.Matrix(0)
	copy(row, p)
	return e.be.Upload(e.p.Item(i), e.hrow)
}

// results undoes the swaps, so that slot i of obj (its models, posteriors and data) is run i again and the batch
// can be minimised again, and returns the runs' results in the order of x0, with the context's error for the
// cancelled runs.
func (e *batchEngine) results(st []*runState, ctx context.Context) ([]Result, error) {
	B := len(st)
	for i := range B {
		for st[i].id != i {
			j := st[i].id
			if err := e.obj.Swap(i, j); err != nil {
				return nil, err
			}
			if err := swapItems(e.be, e.x, e.tmp, i, j); err != nil {
				return nil, err
			}
			st[i], st[j] = st[j], st[i]
		}
	}
	hx := tensor.NewHost(B, 1, e.x.Cols())
	if err := e.be.Download(hx, e.x); err != nil {
		return nil, err
	}
	var cancelled error
	out := make([]Result, B)
	xs := hx.ItemRows()
	for i, r := range st {
		r.res.X = xs[i]
		if r.res.Reason == run.Cancelled {
			r.res.Err = ctx.Err()
			cancelled = r.res.Err
		}
		out[i] = r.res
	}
	return out, cancelled
}

// swapItems exchanges items i and j of t through tmp.
func swapItems(be backend.Backend, t, tmp *tensor.Tensor, i, j int) error {
	if err := be.Copy(tmp.Item(0), t.Item(i)); err != nil {
		return err
	}
	if err := be.Copy(t.Item(i), t.Item(j)); err != nil {
		return err
	}
	return be.Copy(t.Item(j), tmp.Item(0))
}
