package mog

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/tensor"
)

// VBEMBatch runs VBEM for every run of bt from x0[i] (len Dim each) at once on bt's backend and returns one result
// per run, in the order of x0: per run the same iteration, the same F and the same stopping rule (|ΔF| < tol for
// patience consecutive iterations, 0 meaning 2; at most maxIter iterations, 0 meaning VBEM's 100000). One pass
// over the unfinished runs is one iteration of each:
//
//   - the statistics of the responsibilities (one batched GEMM, as for Value), from which the host forms F of the
//     previous iteration (after its E-step, with its M-step's α, β, ν, W, as VBEM evaluates it), the means (68) and
//     the M-step (65)–(67), (69);
//   - the E-step (62): the batched GEMM Z Cᵀ of Grad's φ pass and the log-domain normalisation of Step, i.e. the
//     unit natural step on the responsibilities (App. B; TestUnitStepIsVBStep).
//
// So an iteration costs one Grad and one Step of the batch, and F comes one pass late, with no extra evaluation. A
// run whose M-step gives a W that is not positive definite stops with reason NotFinite (VBEM returns an error
// there). s is VBEM's stopping rule (no target); ctl gives the context, the iteration cap per run (0: VBEM's
// 100000) and checkpoints: every ctl.CheckpointEvery passes the state of every run (its point, the EM parameters
// of its last M-step, F, the calm count, its iterations and stop reason) goes to ctl.CheckpointPath, and with
// ctl.Resume a call continues from that file (x0 is then only checked), bit for bit as the uninterrupted batch;
// runs that had finished stay finished. The file must exist: a missing, damaged or unfitting one is an error
// wrapping run.ErrCheckpoint. Bad settings (and starting points of the wrong count or length) are errors wrapping
// run.ErrConfig; a starting point that is not finite wraps ErrBadInput. Per-run progress goes to record (if not nil), which
// gets run i's F after each of its iterations, not to ctl.Recorder. A cancelled ctx stops every unfinished run
// (Cancelled) and VBEMBatch returns the results with ctx's error. The slots of bt are in the order of x0 again on
// return (not after an error from the backend or from writing a checkpoint).
func VBEMBatch(bt *Batch, x0 [][]float64, s VBEMSettings, ctl run.Control,
	record func(i int, F float64)) ([]*VBEMResult, error) {
	if err := checkVBEMBatch(bt, x0, s, ctl); err != nil {
		return nil, err
	}
	var ck *vbemCheckpoint
	if ctl.Resume {
		var err error
		if ck, err = loadVBEM(ctl.CheckpointPath, vbemBatchCheckpointMethod, bt.B, bt.N, bt.K, bt.D, true); err != nil {
			return nil, err
		}
	}
	patience, maxIter := s.patience(), ctl.MaxIter
	if maxIter == 0 {
		maxIter = 100000
	}
	ctx := ctl.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	vb := &vbemBatch{bt: bt, n: bt.B}
	defer vb.free()
	if err := vb.start(x0, ck); err != nil {
		return nil, err
	}
	first := ck == nil
	passes := 0
	for vb.n > 0 {
		if err := bt.moments(vb.x, vb.n); err != nil {
			return nil, err
		}
		if err := vb.energies(ctx, first, s.Tol, patience, maxIter, record); err != nil {
			return nil, err
		}
		first = false
		if vb.n == 0 {
			break
		}
		if err := vb.mStep(); err != nil {
			return nil, err
		}
		if vb.n == 0 {
			break
		}
		if err := vb.eStep(); err != nil {
			return nil, err
		}
		// A pass in which some runs were cancelled is not saved: on resume they should run on.
		if passes++; ctl.CheckpointEvery > 0 && passes%ctl.CheckpointEvery == 0 && ctx.Err() == nil {
			if err := saveVBEMBatch(ctl.CheckpointPath, bt, vb.x, vb.hx, vb.st); err != nil {
				return nil, err
			}
		}
	}
	return vb.results(ctx)
}

// checkVBEMBatch checks VBEMBatch's arguments.
func checkVBEMBatch(bt *Batch, x0 [][]float64, s VBEMSettings, ctl run.Control) error {
	if err := ctl.Validate(); err != nil {
		return err
	}
	if err := s.check(); err != nil {
		return err
	}
	switch {
	case len(x0) != bt.B:
		return run.ConfigErrorf("mog", "x0", "%d starting points for a batch of %d", len(x0), bt.B)
	case s.UseTarget:
		return run.ConfigErrorf("mog", "UseTarget", "VBEMBatch has no target")
	case ctl.Recorder != nil:
		return run.ConfigErrorf("mog", "Control", "VBEMBatch reports per run through its record function, not "+
			"Control.Recorder")
	}
	for i, x := range x0 {
		if len(x) != bt.dim {
			return run.ConfigErrorf("mog", "x0", "x0[%d] has length %d, Dim %d", i, len(x), bt.dim)
		}
		if !run.Finite(x...) {
			return fmt.Errorf("%w: x0[%d] is not finite", ErrBadInput, i)
		}
	}
	return nil
}

// vbemBatch is the state of one VBEMBatch call: the device points x (one per slot), the E-step's direction p, a
// scratch row tmp, host scratch hx of x's shape, the host state of the run in each slot and the number n of
// unfinished runs, which hold slots 0…n−1.
type vbemBatch struct {
	bt        *Batch
	x, p, tmp *tensor.Tensor
	owned     []*tensor.Tensor
	hx        *tensor.Tensor
	st        []*vbemState
	n         int
	ones      []float64
}

// free releases the device tensors of vb.
func (vb *vbemBatch) free() {
	for _, t := range vb.owned {
		vb.bt.be.Free(t)
	}
}

// start allocates vb's tensors, uploads the starting points (x0, or the points of ck when resuming) and, when
// resuming, restores every run's EM parameters and state from ck and retires the finished runs.
func (vb *vbemBatch) start(x0 [][]float64, ck *vbemCheckpoint) error {
	bt := vb.bt
	B, dim := bt.B, bt.dim
	be := bt.be
	shape := tensor.Shape{Batch: B, Rows: 1, Cols: dim}
	for range 3 {
		t, err := be.Alloc(shape)
		if err != nil {
			return err
		}
		vb.owned = append(vb.owned, t)
	}
	vb.x, vb.p, vb.tmp = vb.owned[0], vb.owned[1], vb.owned[2]
	vb.hx = tensor.NewHost(B, 1, dim)
	for i, v := range x0 {
		d, _, _, _ := vb.hx.Matrix(i)
		if ck != nil {
			copy(d, ck.Runs[i].LogR)
			copy(d[bt.N*bt.K:], ck.Runs[i].Mu)
		} else {
			copy(d, v)
		}
	}
	if err := be.Upload(vb.x, vb.hx); err != nil {
		return err
	}
	if err := be.Fill(vb.p, 0); err != nil { // the mean block of the E-step's direction stays 0
		return err
	}
	vb.st = make([]*vbemState, B)
	for i := range vb.st {
		vb.st[i] = &vbemState{id: i}
	}
	vb.ones = make([]float64, B)
	for i := range vb.ones {
		vb.ones[i] = 1
	}
	if ck == nil {
		return nil
	}
	// Slot i holds run i; the finished runs go behind the others, as retire would have put them.
	for i, c := range ck.Runs {
		r, post := vb.st[i], bt.posts[i]
		r.iters, r.calm, r.fPrev, r.reason = c.Iters, c.Calm, c.FPrev, c.Reason
		copy(post.Alpha, c.Alpha)
		copy(post.Beta, c.Beta)
		copy(post.Nu, c.Nu)
		copy(post.W, c.W)
	}
	for i := B - 1; i >= 0; i-- {
		if vb.st[i].reason != run.Running {
			if err := vb.retire(i, vb.st[i].reason); err != nil {
				return err
			}
		}
	}
	return nil
}

// swapSlots exchanges the runs of slots i and j: their data and posteriors in bt, their downloaded statistics,
// their points in x and their host state.
func (vb *vbemBatch) swapSlots(i, j int) error {
	bt, x, tmp := vb.bt, vb.x, vb.tmp
	if err := bt.Swap(i, j); err != nil {
		return err
	}
	// The downloaded statistics travel with their run, so that the pass goes on without computing them again.
	for _, h := range []*tensor.Tensor{bt.hStats, bt.hMu, bt.hScal} {
		a, _, _, _ := h.Matrix(i)
		b, _, _, _ := h.Matrix(j)
		for k := range a {
			a[k], b[k] = b[k], a[k]
		}
	}
	for _, c := range [][2]*tensor.Tensor{{tmp.Item(0), x.Item(i)}, {x.Item(i), x.Item(j)}, {x.Item(j), tmp.Item(0)}} {
		if err := bt.be.Copy(c[0], c[1]); err != nil {
			return err
		}
	}
	vb.st[i], vb.st[j] = vb.st[j], vb.st[i]
	return nil
}

// retire stops the run in slot i with reason and moves it behind the unfinished ones; callers walk slots
// downwards.
func (vb *vbemBatch) retire(i int, reason run.StopReason) error {
	vb.st[i].reason = reason
	vb.n--
	if i != vb.n {
		return vb.swapSlots(i, vb.n)
	}
	return nil
}

// energies forms, from the statistics of bt.moments, F of each unfinished run's last iteration (its E-step's
// responsibilities and means with its M-step's parameters) and applies the stopping rule; on the first pass it
// forms the M-step at x0 and F there instead (VBEM's start).
func (vb *vbemBatch) energies(ctx context.Context, first bool, tol float64, patience, maxIter int,
	record func(i int, F float64)) error {
	bt := vb.bt
	for i := vb.n - 1; i >= 0; i-- {
		r := vb.st[i]
		if first {
			if r.fPrev = bt.finish(i); !run.Finite(r.fPrev) { // VBEM's start: the M-step at x0 and F
				return fmt.Errorf("%w: run %d: free energy %v at the start", ErrBadInput, r.id, r.fPrev)
			}
			continue
		}
		bt.loadStats(i)
		f := bt.energy(i)
		r.iters++
		if !run.Finite(f) {
			if err := vb.retire(i, run.NotFinite); err != nil {
				return err
			}
			continue
		}
		if math.Abs(f-r.fPrev) < tol {
			r.calm++
		} else {
			r.calm = 0
		}
		r.fPrev = f
		if record != nil {
			record(r.id, f)
		}
		var err error
		switch {
		case r.calm >= patience:
			err = vb.retire(i, run.Converged)
		case r.iters >= maxIter:
			err = vb.retire(i, run.MaxIter)
		case ctx.Err() != nil:
			err = vb.retire(i, run.Cancelled)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// mStep forms the means (68) from Σ_n r_nk x_n = a_k + N_k x̄ (a the centred sums), then the M-step at them, for
// every unfinished run. A run whose W is not positive definite stops before its E-step; the pass goes on with the
// others.
func (vb *vbemBatch) mStep() error {
	bt := vb.bt
	D, K, P := bt.D, bt.K, bt.P
	for {
		before := vb.n
		for i := range vb.n {
			stats, _, _, _ := bt.hStats.Matrix(i)
			mu, _, _, _ := bt.hMu.Matrix(i)
			c, pr := bt.centre[i], bt.models[i].Prior
			for k := range K {
				row := stats[k*P : k*P+P]
				nk, a := row[P-1], row[D*D:D*D+D]
				for j := range D {
					mu[k*D+j] = (pr.Beta0*pr.M0[j] + a[j] + nk*c[j]) / (pr.Beta0 + nk)
				}
			}
			vb.st[i].bad = !bt.coefs(i, !run.Finite(bt.finish(i)))
		}
		for i := vb.n - 1; i >= 0; i-- {
			if vb.st[i].bad {
				if err := vb.retire(i, run.NotFinite); err != nil {
					return err
				}
			}
		}
		if vb.n == before {
			return nil
		}
	}
}

// eStep uploads the means and runs the E-step (62) of the unfinished runs: log r ← normalise(−Z Cᵀ) (φ without
// log r; the −½D log 2π of its constant cancels), taken as Step's x + p with p = −Z Cᵀ − log r.
func (vb *vbemBatch) eStep() error {
	bt, be, n, x, p := vb.bt, vb.bt.be, vb.n, vb.x, vb.p
	if err := be.Upload(bt.mu(x, n), bt.hMu.Batches(0, n)); err != nil {
		return err
	}
	phi := bt.phi.Batches(0, n)
	if err := be.Upload(bt.coef.Batches(0, n), bt.hCoef.Batches(0, n)); err != nil {
		return err
	}
	if err := be.Gemm(blas.NoTrans, blas.Trans, 1, bt.zs(n), bt.coef.Batches(0, n), 0, phi); err != nil {
		return err
	}
	if err := be.Axpby(bt.logr(p, n), -1, phi, -1, bt.logr(x, n)); err != nil {
		return err
	}
	return bt.Step(x.Batches(0, n), x.Batches(0, n), p.Batches(0, n), vb.ones[:n])
}

// results undoes the swaps, so that slot i of bt is run i again, and returns the result of every run, with ctx's
// error when some run was cancelled.
func (vb *vbemBatch) results(ctx context.Context) ([]*VBEMResult, error) {
	bt, st := vb.bt, vb.st
	for i := range bt.B {
		for st[i].id != i {
			if err := vb.swapSlots(i, st[i].id); err != nil {
				return nil, err
			}
		}
	}
	if err := bt.be.Download(vb.hx, vb.x); err != nil {
		return nil, err
	}
	K := bt.K
	out := make([]*VBEMResult, bt.B)
	var cancelled error
	for i, r := range st {
		d, _, _, _ := vb.hx.Matrix(i)
		post := bt.posts[i]
		res := &VBEMResult{LogR: append([]float64(nil), d[:bt.N*K]...), Mu: append([]float64(nil), d[bt.N*K:]...),
			Post: &Post{Alpha: append([]float64(nil), post.Alpha...), Beta: append([]float64(nil), post.Beta...),
				Nu: append([]float64(nil), post.Nu...), W: append([]float64(nil), post.W...)},
			F: r.fPrev, Result: run.Result{Reason: r.reason, Iters: r.iters}}
		if r.reason == run.Cancelled {
			res.Err = ctx.Err()
			cancelled = res.Err
		}
		out[i] = res
	}
	return out, cancelled
}

// vbemState is the host state of one run in VBEMBatch.
type vbemState struct {
	id, iters, calm int // id: the run's index in x0 (its slot changes as runs retire)
	fPrev           float64
	reason          run.StopReason
	bad             bool // the M-step's W is not positive definite
}

// saveVBEMBatch writes the state of every run of VBEMBatch to path (atomically, run.SaveCheckpoint), by run: slot i
// holds run st[i].id. hx is host scratch of x's shape.
func saveVBEMBatch(path string, bt *Batch, x, hx *tensor.Tensor, st []*vbemState) error {
	if err := bt.be.Download(hx, x); err != nil {
		return err
	}
	NK := bt.N * bt.K
	c := vbemCheckpoint{N: bt.N, K: bt.K, D: bt.D, Runs: make([]vbemRun, len(st))}
	for i, r := range st {
		d, _, _, _ := hx.Matrix(i)
		post := bt.posts[i]
		c.Runs[r.id] = vbemRun{LogR: d[:NK], Mu: d[NK:], Alpha: post.Alpha, Beta: post.Beta, Nu: post.Nu, W: post.W,
			FPrev: r.fPrev, Calm: r.calm, Iters: r.iters, Reason: r.reason}
	}
	return run.SaveCheckpoint(path, vbemBatchCheckpointMethod, vbemCheckpointVersion, c)
}
