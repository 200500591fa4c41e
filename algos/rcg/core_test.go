package rcg

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// hostBatch runs host objectives of one dimension as a BatchObjective, their arithmetic on the host (the tensors go
// down and up around each call), with Update (BatchUpdater) when every objective is an Updater: on the CPU
// backend, whose row dots and axpbys round as Minimize's loops do, every evaluation of a run is Minimize's.
type hostBatch struct {
	be   backend.Backend
	objs []Objective
	dim  int
}

func (q *hostBatch) Backend() backend.Backend { return q.be }
func (q *hostBatch) Batch() int               { return len(q.objs) }
func (q *hostBatch) Dim() int                 { return q.dim }
func (q *hostBatch) NumFree() int             { return q.dim }
func (q *hostBatch) Swap(i, j int) error {
	q.objs[i], q.objs[j] = q.objs[j], q.objs[i]
	return nil
}

func (q *hostBatch) rows(x *tensor.Tensor) ([][]float64, error) {
	h := tensor.NewHost(x.Batch(), 1, q.dim)
	if err := q.be.Download(h, x); err != nil {
		return nil, err
	}
	return h.ItemRows(), nil
}

func (q *hostBatch) Value(f []float64, x *tensor.Tensor) error {
	xs, err := q.rows(x)
	for b, xb := range xs {
		f[b] = q.objs[b].Value(xb)
	}
	return err
}

func (q *hostBatch) Grad(f []float64, g, gt, x *tensor.Tensor) error {
	xs, err := q.rows(x)
	if err != nil {
		return err
	}
	gs, gts := make([][]float64, len(xs)), make([][]float64, len(xs))
	for b, xb := range xs {
		gs[b], gts[b] = make([]float64, q.dim), make([]float64, q.dim)
		f[b] = q.objs[b].Grad(gs[b], xb)
		q.objs[b].NatGrad(gts[b], gs[b], xb)
	}
	if err := uploadRows(q.be, g, gs); err != nil {
		return err
	}
	return uploadRows(q.be, gt, gts)
}

func (q *hostBatch) Step(dst, x, p *tensor.Tensor, alpha []float64) error {
	xs, err := q.rows(x)
	if err != nil {
		return err
	}
	ps, err := q.rows(p)
	if err != nil {
		return err
	}
	for b, xb := range xs {
		for i := range xb {
			xb[i] += alpha[b] * ps[b][i] // as Minimize's trial point x + α p
		}
	}
	return uploadRows(q.be, dst, xs)
}

// updBatch is hostBatch with its objectives' updates between steps.
type updBatch struct{ *hostBatch }

func (q updBatch) Update(x *tensor.Tensor) error {
	xs, err := q.rows(x)
	for b, xb := range xs {
		if err == nil {
			err = q.objs[b].(Updater).Update(xb)
		}
	}
	return err
}

// coreSettings are the settings the batch of one and the mixed batch are held against Minimize with: every method,
// every β of the conjugate ones, both searches, Refine, Powell–Beale and the restart rules.
func coreSettings() []Settings {
	var out []Settings
	for _, m := range []Method{RCG, CG, RG, GD, Old} {
		betas := []Beta{PolakRibiere}
		if m.conjugate() {
			betas = []Beta{PolakRibiere, FletcherReeves, HestenesStiefel, PolakRibierePlus}
		}
		for _, b := range betas {
			for _, refine := range []int{0, 3} {
				out = append(out, Settings{Method: m, Beta: b, Tol: 1e-12, LS: LineSearch{Refine: refine}},
					Settings{Method: m, Beta: b, Tol: 1e-12, PowellBeale: 0.2, RestartEvery: 3, Search: Unit,
						LS: LineSearch{Refine: refine, C1: 0.3}})
			}
		}
	}
	return out
}

// iterRec is what a run reports in an iteration, compared bit for bit.
type iterRec struct{ F, beta, step, grad, evals, restarts float64 }

func recOf(r run.Record) iterRec {
	return iterRec{r.Extra["F"], r.Extra["beta"], r.Step, r.GradNorm, r.Extra["f_evals"] + r.Extra["g_evals"],
		r.Extra["restarts"]}
}

// sameResult reports how a batch's result g differs from Minimize's h, "" when in nothing: x, F, iterations,
// evaluation, rejection and restart counts, stop reason and test, and every iteration's record.
func sameResult(g, h Result, gr, hr []iterRec) string {
	switch {
	case !slices.Equal(g.X, h.X) || g.F != h.F:
		return fmt.Sprintf("x %v F %v, host x %v F %v", g.X, g.F, h.X, h.F)
	case g.Iters != h.Iters || g.FEvals != h.FEvals || g.GEvals != h.GEvals || g.Rejected != h.Rejected ||
		g.Restarts != h.Restarts:
		return fmt.Sprintf("%d iterations, %d/%d evaluations, %d rejected, %d restarts; host %d, %d/%d, %d, %d",
			g.Iters, g.FEvals, g.GEvals, g.Rejected, g.Restarts, h.Iters, h.FEvals, h.GEvals, h.Rejected, h.Restarts)
	case g.Reason != h.Reason || g.ConvergedBy != h.ConvergedBy:
		return fmt.Sprintf("%v (%v), host %v (%v)", g.Reason, g.ConvergedBy, h.Reason, h.ConvergedBy)
	case !slices.Equal(gr, hr):
		return fmt.Sprintf("records differ: %v, host %v", gr, hr)
	}
	return ""
}

// hostRuns runs Minimize on each objective made by mk from xs[i] with s (its Control with the cap maxIter and a
// recorder), returning the results and records.
func hostRuns(t *testing.T, mk func(i int) Objective, xs [][]float64, s Settings, maxIter int) ([]Result,
	[][]iterRec) {
	t.Helper()
	res, recs := make([]Result, len(xs)), make([][]iterRec, len(xs))
	for i, x := range xs {
		s := s
		s.Control.MaxIter = maxIter
		s.Control.Recorder = run.Func(func(r run.Record) { recs[i] = append(recs[i], recOf(r)) })
		h, err := Minimize(context.Background(), mk(i), x, s)
		if err != nil {
			t.Fatal(err)
		}
		res[i] = *h
	}
	return res, recs
}

// batchRuns runs MinimizeBatch on the objectives made by mk from xs with s (its Control with the cap maxIter and a
// recorder) on the CPU backend.
func batchRuns(t *testing.T, be backend.Backend, mk func(i int) Objective, xs [][]float64, s Settings,
	maxIter int) ([]Result, [][]iterRec) {
	t.Helper()
	hb := &hostBatch{be: be, dim: len(xs[0])}
	for i := range xs {
		hb.objs = append(hb.objs, mk(i))
	}
	var obj BatchObjective = hb
	if _, ok := hb.objs[0].(Updater); ok {
		obj = updBatch{hb}
	}
	recs := make([][]iterRec, len(xs))
	s.Control.MaxIter = maxIter
	s.Control.Recorder = run.Func(func(r run.Record) { recs[r.Run] = append(recs[r.Run], recOf(r)) })
	res, err := MinimizeBatch(context.Background(), obj, xs, s)
	if err != nil {
		t.Fatal(err)
	}
	return res, recs
}

func cpuBackend(t *testing.T) backend.Backend {
	t.Helper()
	be, err := backend.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

// TestBatchOfOne: MinimizeBatch on a batch of one is Minimize bit for bit — x, F, every count, the stop and every
// iteration's record — for every method, β, search, Refine and restart rule of coreSettings, on the toy problem of
// §6.1 (updates between steps) and on a non-quadratic convex problem (smoothConvex, no updates), 60
// iterations at most. Refine and Hestenes–Stiefel must change some runs (they are exercised).
func TestBatchOfOne(t *testing.T) {
	be := cpuBackend(t)
	problems := []struct {
		name string
		mk   func(int) Objective
		x0   []float64
	}{
		{"toy", func(int) Objective { return &toy{1, 1} }, []float64{0.1, 0.2}},
		{"convex", func(int) Objective { return newSmoothConvex(4) }, []float64{1, -2, 0.5, 3}},
	}
	refined, hs := 0, 0
	for _, pr := range problems {
		for _, s := range coreSettings() {
			xs := [][]float64{pr.x0}
			h, hr := hostRuns(t, pr.mk, xs, s, 60)
			g, gr := batchRuns(t, be, pr.mk, xs, s, 60)
			if d := sameResult(g[0], h[0], gr[0], hr[0]); d != "" {
				t.Errorf("%s, %v β %d search %d Refine %d PB %v: %s", pr.name, s.Method, s.Beta, s.Search, s.LS.Refine,
					s.PowellBeale, d)
			}
			if s.LS.Refine > 0 {
				s0 := s
				s0.LS.Refine = 0
				if h0, _ := hostRuns(t, pr.mk, xs, s0, 60); h0[0].FEvals != h[0].FEvals {
					refined++
				}
			}
			if s.Beta == HestenesStiefel {
				pr := s
				pr.Beta = PolakRibiere
				if hp, _ := hostRuns(t, problems[1].mk, [][]float64{problems[1].x0}, pr, 60); hp[0].F != h[0].F {
					hs++
				}
			}
		}
	}
	t.Logf("%d settings on two problems; Refine changed %d runs, Hestenes–Stiefel %d", len(coreSettings()), refined, hs)
	if refined == 0 || hs == 0 {
		t.Errorf("Refine changed %d runs and Hestenes–Stiefel %d: want some of each", refined, hs)
	}
}

// TestMixedBatch: a batch of five runs from different starting points (and so ending at different iterations,
// which swaps the slots) agrees run by run, bit for bit, with five Minimize calls, for every setting of
// coreSettings, on the toy problem with its updates between steps.
func TestMixedBatch(t *testing.T) {
	be := cpuBackend(t)
	xs := [][]float64{{0.1, 0.2}, {-1, 0.5}, {2, 2}, {0.3, -0.1}, {-0.5, -1.5}}
	mk := func(int) Objective { return &toy{1, 1} }
	swapped := false
	for _, s := range coreSettings() {
		h, hr := hostRuns(t, mk, xs, s, 80)
		g, gr := batchRuns(t, be, mk, xs, s, 80)
		iters := map[int]bool{}
		for i := range xs {
			if d := sameResult(g[i], h[i], gr[i], hr[i]); d != "" {
				t.Errorf("%v β %d search %d Refine %d PB %v, run %d: %s", s.Method, s.Beta, s.Search, s.LS.Refine,
					s.PowellBeale, i, d)
			}
			iters[g[i].Iters] = true
		}
		swapped = swapped || len(iters) > 1
	}
	if !swapped {
		t.Error("every run took as many iterations as the others: no slot was swapped")
	}
}

// TestBatchHSCheckpointResume: a batch with Hestenes–Stiefel β (which needs the previous gradients) and Refine,
// stopped after 6 rounds with a checkpoint every 2 and resumed, ends every run bit for bit as the uninterrupted
// batch.
func TestBatchHSCheckpointResume(t *testing.T) {
	be := cpuBackend(t)
	xs := [][]float64{{1, -2, 0.5, 3}, {-1, 1, 2, -0.5}, {0.2, 0.1, -3, 1}}
	mk := func(int) Objective { return newSmoothConvex(4) }
	s := Settings{Beta: HestenesStiefel, Tol: 1e-14, LS: LineSearch{Refine: 2}}
	full, _ := batchRuns(t, be, mk, xs, s, 0)
	path := t.TempDir() + "/hs.ck"
	hb := func() *hostBatch {
		return &hostBatch{be: be, dim: 4, objs: []Objective{mk(0), mk(1), mk(2)}}
	}
	if _, err := MinimizeBatch(context.Background(), hb(), xs, withControl(s, run.Control{MaxIter: 6,
		CheckpointEvery: 2, CheckpointPath: path})); err != nil {
		t.Fatal(err)
	}
	got, err := MinimizeBatch(context.Background(), hb(), xs, withControl(s, run.Control{CheckpointPath: path,
		Resume: true}))
	if err != nil {
		t.Fatal(err)
	}
	for i := range xs {
		if d := sameResult(got[i], full[i], nil, nil); d != "" {
			t.Errorf("run %d resumed: %s", i, d)
		}
	}
	if full[0].Iters <= 6 {
		t.Errorf("run 0 stopped after %d iterations, before the checkpoint", full[0].Iters)
	}
}

// TestBatchRecordEvery: MinimizeBatch sends run i's records with Record.Run = i, every Control.Every iterations of
// that run and its last, as Minimize sends a run's records under the same Control.
func TestBatchRecordEvery(t *testing.T) {
	be := cpuBackend(t)
	xs := [][]float64{{1, -2, 0.5, 3}, {-1, 1, 2, -0.5}, {0.2, 0.1, -3, 1}}
	mk := func(int) Objective { return newSmoothConvex(4) }
	s := Settings{Tol: 1e-10, Control: run.Control{Every: 3}}
	host, hrecs := hostRuns(t, mk, xs, s, 40)
	got, grecs := batchRuns(t, be, mk, xs, s, 40)
	for i := range xs {
		if d := sameResult(got[i], host[i], grecs[i], hrecs[i]); d != "" {
			t.Errorf("run %d: %s", i, d)
		}
		if n := len(grecs[i]); n == 0 || n >= got[i].Iters {
			t.Errorf("run %d: %d records of %d iterations, want every third and the last", i, n, got[i].Iters)
		}
	}
}

// newSmoothConvex returns the problem of TestAppendixASuperlinear in n = 4 dimensions.
func newSmoothConvex(n int) *smoothConvex {
	return &smoothConvex{q: randSPD(newRand(21), n, 0.5), c: []float64{1, 0.5, 2, 1.5}[:n],
		d: []float64{0.3, 1, 0.2, 0.7}[:n]}
}
