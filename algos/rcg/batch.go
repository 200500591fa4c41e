package rcg

import (
	"context"
	"fmt"
	"math"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/slots"
	"github.com/geovb/geovb/tensor"
)

// BatchObjective is B independent objectives of one dimension evaluated together on a backend (the batch of
// problems of notes §5), e.g. mog.Batch. Every call works on the first n runs (slots 0…n−1) of its operands, which
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

// BatchControl is the run control of MinimizeBatch: a context, the iteration cap per run (0: 10000), an optional
// per-run recorder, called after each iteration of run i with the same Record Minimize reports, and checkpoints:
// every CheckpointEvery rounds (one iteration of every unfinished run) the state goes to CheckpointPath
// (atomically), from which a call with Settings.Resume continues.
type BatchControl struct {
	Ctx             context.Context
	MaxIter         int
	Record          func(i int, r run.Record)
	CheckpointEvery int
	CheckpointPath  string
}

// bstate is the host state of one run in MinimizeBatch: Minimize's scalars.
type bstate struct {
	id                         int // index of the run in x0 (the slot changes when runs are swapped)
	gnPrev, alphaPrev, fPrev   float64
	sinceReset, calm, iters    int
	havePrev                   bool
	res                        Result
	beta, gn, d0, a0, f, alpha float64
	restart, retry             bool
	search                     lsState
	mult, oldG                 []float64 // Old: the per-element multipliers, and g̃ of this iteration on the host
	try                        int       // Old: the multipliers' shrinkings in this iteration
}

// lsState is the parabolic line search of optimizer.search as a state machine, so that the trial points of all
// runs are evaluated in one batched Value call per round.
type lsState struct {
	stage                  int // lsIdle, lsFirst, lsParab, lsExpand, lsBack, lsDone
	F0, d0, a0             float64
	bestA, bestF, a, trial float64
	k                      int
	ok                     bool
	unit, steepest         bool // Search Unit: α = 1, then backtracking only if steepest (optimizer.search)
}

const (
	lsIdle = iota
	lsFirst
	lsParab
	lsExpand
	lsBack
	lsDone
)

// searching reports whether the search wants F at its trial step.
func (l *lsState) searching() bool { return l.stage != lsIdle && l.stage != lsDone }

// start begins a search from F0 with slope d0: the parabolic search from α₀ = a0, or with unit the unit rule (α = 1,
// a0 unused); steepest is optimizer.search's.
func (l *lsState) start(F0, d0, a0 float64, unit, steepest bool) {
	if unit {
		a0 = 1
	}
	*l = lsState{stage: lsFirst, F0: F0, d0: d0, a0: a0, bestF: F0, trial: a0, unit: unit, steepest: steepest}
}

// feed takes F at the current trial step (+Inf for a rejected point) and moves to the next trial or to lsDone; the
// transitions are those of optimizer.search for Parabolic with Refine = 0, and for Unit.
func (l *lsState) feed(f float64, ls LineSearch) {
	if l.unit && l.stage == lsFirst {
		switch {
		case f <= l.F0:
			l.stage, l.ok, l.a, l.bestF = lsDone, true, 1, f
		case !l.steepest:
			l.stage, l.ok = lsDone, false
		default:
			l.a, l.k = 1, 0
			l.backtrack(ls)
		}
		return
	}
	armijo := func(a, fa float64) bool { return fa <= l.F0+ls.C1*a*l.d0 }
	decide := func() {
		if l.bestA > 0 && armijo(l.bestA, l.bestF) {
			l.stage, l.ok, l.a = lsDone, true, l.bestA
			return
		}
		l.a = l.a0
		if l.bestA > 0 {
			l.a = math.Min(l.a, l.bestA)
		}
		l.k = 0
		l.backtrack(ls)
	}
	switch l.stage {
	case lsFirst:
		if f < l.bestF {
			l.bestA, l.bestF = l.a0, f
		}
		if !math.IsInf(f, 1) {
			curv := f - l.F0 - l.d0*l.a0
			if curv > 0 {
				as := -l.d0 * l.a0 * l.a0 / (2 * curv)
				l.trial = math.Min(math.Max(as, ls.Shrink*l.a0), ls.Grow*l.a0)
				l.stage = lsParab
				return
			} else if f < l.F0 && ls.MaxExpand > 0 {
				l.a, l.k = 2*l.a0, 0
				l.trial, l.stage = l.a, lsExpand
				return
			}
		}
		decide()
	case lsParab:
		if f < l.bestF {
			l.bestA, l.bestF = l.trial, f
		}
		decide()
	case lsExpand:
		if f >= l.bestF {
			decide()
			return
		}
		l.bestA, l.bestF = l.a, f
		if l.k++; l.k < ls.MaxExpand {
			l.a *= 2
			l.trial = l.a
			return
		}
		decide()
	case lsBack:
		if armijo(l.a, f) && (l.k <= ls.MaxBacktrack || f < l.F0) {
			l.stage, l.ok, l.bestF = lsDone, true, f
			return
		}
		l.backtrack(ls)
	}
}

func (l *lsState) backtrack(ls LineSearch) {
	limit := ls.MaxBacktrack
	if l.steepest {
		limit = ls.MaxBacktrackSteepest
	}
	if l.k >= limit {
		l.stage, l.ok = lsDone, false
		return
	}
	l.k++
	l.a *= ls.Backtrack
	l.trial, l.stage = l.a, lsBack
}

// MinimizeBatch runs RCG (or RG, CG, GD) on every run of obj from x0[i] (len Dim each) at once and returns one Result
// per run, in the order of x0. Per run it is Minimize's algorithm — Polak–Ribière (or FR, PR+) β in the cheap form,
// Powell–Beale (7) and every-k / ⌈√n⌉ restarts, the descent safeguard, the parabolic line search of notes §3.4 with its
// α₀ rule, the retry along −g̃ and the |ΔF| < Tol convergence rule — with the vector work of all unfinished runs done
// by batched backend calls: one Grad per iteration, then rounds of one Value each in which every run still in its line
// search evaluates its next trial step (swapped to the front first; runs whose search has ended wait and are not
// evaluated). A run that stops (converged, cap,
// non-finite) is swapped behind the unfinished ones and no longer updated or evaluated; the slots of obj are back in
// the order of x0 when MinimizeBatch returns (not after an error from the backend). A cancelled context stops every
// unfinished run with reason Cancelled, and MinimizeBatch returns the results with the context's error, as Minimize
// does. Methods RCG, RG and the Euclidean CG and GD (g̃ = g, Minimize's α₀ rule for them), Beta PR, FR, PR+ and Search
// Parabolic (without Refine) and Unit are supported, and Old (optimizer.oldStep per run: its multipliers on the host,
// its trials in rounds of one Value over the runs still trying). With ctl.CheckpointEvery the state of every run is
// saved every so many rounds, and with s.Resume a call continues from ctl.CheckpointPath when the file exists (x0
// is then not used), as Minimize; the objective must keep no state between calls besides x, as mog.Batch does.
func MinimizeBatch(obj BatchObjective, x0 [][]float64, s Settings, ctl BatchControl) ([]Result, error) {
	B, dim := obj.Batch(), obj.Dim()
	switch {
	case len(x0) != B:
		return nil, fmt.Errorf("%w: %d starting points for a batch of %d", ErrBadInput, len(x0), B)
	case s.Method < RCG || s.Method > Old:
		return nil, fmt.Errorf("%w: MinimizeBatch runs RCG, RG, CG, GD and Old, not %v", ErrBadInput, s.Method)
	case s.Beta == HestenesStiefel || s.Beta < PolakRibiere || s.Beta > PolakRibierePlus:
		return nil, fmt.Errorf("%w: beta %d", ErrBadInput, s.Beta)
	case s.Search != Parabolic && s.Search != Unit || s.LS.Refine != 0:
		return nil, fmt.Errorf("%w: MinimizeBatch has the parabolic and unit searches, without Refine", ErrBadInput)
	case ctl.MaxIter < 0 || ctl.CheckpointEvery < 0 || ctl.CheckpointEvery > 0 && ctl.CheckpointPath == "":
		return nil, fmt.Errorf("%w: iteration cap %d, checkpoint every %d rounds to %q", ErrBadInput, ctl.MaxIter,
			ctl.CheckpointEvery, ctl.CheckpointPath)
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	upd, _ := obj.(BatchUpdater)
	stf, _ := obj.(BatchStateful)
	if upd != nil && stf == nil && ctl.CheckpointPath != "" && (ctl.CheckpointEvery > 0 || s.Resume) {
		return nil, fmt.Errorf("%w: checkpoints of a batch objective with updates between steps need its state "+
			"(BatchStateful)", ErrBadInput)
	}
	for i, x := range x0 {
		if len(x) != dim || !finiteVec(x) {
			return nil, fmt.Errorf("%w: x0[%d] has length %d (Dim %d) or is not finite", ErrBadInput, i, len(x), dim)
		}
	}
	ls := s.LS.withDefaults(s.Search, s.Method)
	every := s.RestartEvery
	if every == SqrtN {
		every = RestartPeriod(obj.NumFree())
	}
	patience := s.Patience
	if patience == 0 {
		patience = 2
	}
	maxIter := ctl.MaxIter
	if maxIter == 0 {
		maxIter = 10000
	}
	ctx := ctl.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	be := obj.Backend()
	shape := tensor.Shape{Batch: B, Rows: 1, Cols: dim}
	var owned []*tensor.Tensor
	defer func() {
		for _, t := range owned {
			be.Free(t)
		}
	}()
	alloc := func() (*tensor.Tensor, error) {
		t, err := be.Alloc(shape)
		if err == nil {
			owned = append(owned, t)
		}
		return t, err
	}
	var x, xt, g, gt, gtPrev, p, pPrev, tmp, dots *tensor.Tensor
	for _, t := range []**tensor.Tensor{&x, &xt, &g, &gt, &gtPrev, &p, &pPrev, &tmp} {
		v, err := alloc()
		if err != nil {
			return nil, err
		}
		*t = v
	}
	dots, err := be.Alloc(tensor.Shape{Batch: B, Rows: 1, Cols: 1})
	if err != nil {
		return nil, err
	}
	owned = append(owned, dots)
	if err := uploadRows(be, x, x0); err != nil {
		return nil, err
	}
	hd := tensor.NewHost(B, 1, 1)
	// rowDots returns aᵀb for the first n runs.
	rowDots := func(dst []float64, a, b *tensor.Tensor, n int) error {
		if err := be.RowDots(dots.Batches(0, n), a.Batches(0, n), b.Batches(0, n)); err != nil {
			return err
		}
		if err := be.Download(hd.Batches(0, n), dots.Batches(0, n)); err != nil {
			return err
		}
		for i := range n {
			dst[i] = hd.At(i, 0, 0)
		}
		return nil
	}
	st := make([]*bstate, B)
	for i := range st {
		st[i] = &bstate{id: i}
		if s.Method == Old {
			st[i].mult = make([]float64, dim)
			for k := range st[i].mult {
				st[i].mult[k] = 1
			}
		}
	}
	fs, gg := make([]float64, B), make([]float64, B)
	out := make([]Result, B)
	n := B
	// swapSlots exchanges the runs in slots i and j: the objective's data and state, the run's vectors and its host
	// state. The slot arrays (fs, gg, d0, …) are filled afresh before each use, so they need no swap.
	swapSlots := func(i, j int) error {
		if err := obj.Swap(i, j); err != nil {
			return err
		}
		for _, t := range []*tensor.Tensor{x, g, gt, gtPrev, p, pPrev} {
			if err := swapItems(be, t, tmp, i, j); err != nil {
				return err
			}
		}
		st[i], st[j] = st[j], st[i]
		return nil
	}
	// retire moves the run in slot i behind the unfinished ones; the caller walks slots downwards.
	retire := func(i int, reason run.StopReason, by Convergence) error {
		r := st[i]
		r.res.Result = run.Result{Reason: reason, Iters: r.iters}
		r.res.ConvergedBy = by
		r.res.F = r.fPrev
		n--
		if i != n {
			return swapSlots(i, n)
		}
		return nil
	}
	report := func(r *bstate, F, gn, alpha, beta float64) {
		r.iters++
		if ctl.Record != nil {
			ctl.Record(r.id, run.Record{Iter: r.iters - 1, Objective: -F, Smoothed: math.NaN(),
				GradNorm: math.Sqrt(math.Max(gn, 0)), Step: alpha, Extra: map[string]float64{"F": F, "beta": beta,
					"f_evals": float64(r.res.FEvals), "g_evals": float64(r.res.GEvals),
					"rejected": float64(r.res.Rejected), "restarts": float64(r.res.Restarts)}})
		}
	}
	grad := func() error {
		if upd != nil { // Algorithm 1: closed-form updates first, then the gradient at the new values
			if err := upd.Update(x.Batches(0, n)); err != nil {
				return err
			}
		}
		if err := obj.Grad(fs, g.Batches(0, n), gt.Batches(0, n), x.Batches(0, n)); err != nil {
			return err
		}
		if !s.Method.riemannian() { // Euclidean directions: g̃ = g
			if err := be.Copy(gt.Batches(0, n), g.Batches(0, n)); err != nil {
				return err
			}
		}
		return rowDots(gg, g, g, n) // gᵀg is finite when g is (barring overflow)
	}
	var ck *batchCheckpoint
	if s.Resume && ctl.CheckpointPath != "" {
		c, ok, err := loadBatch(ctl.CheckpointPath, s, B, dim)
		if err != nil {
			return nil, err
		}
		if ok {
			ck = c
		}
	}
	first := ck == nil
	if ck != nil {
		// Resume: the state of every run as saved (slot i = run i), then the finished runs behind the others.
		for _, c := range []struct {
			t    *tensor.Tensor
			rows [][]float64
		}{{x, ck.X}, {gtPrev, ck.GtPrev}, {pPrev, ck.PPrev}} {
			if err := uploadRows(be, c.t, c.rows); err != nil {
				return nil, err
			}
		}
		if stf != nil && ck.ObjState == nil {
			return nil, fmt.Errorf("%w: %s holds no objective state", ErrBadInput, ctl.CheckpointPath)
		}
		for i := 0; stf != nil && i < B; i++ {
			if err := stf.SetState(i, ck.ObjState[i]); err != nil {
				return nil, err
			}
		}
		for i := B - 1; i >= 0; i-- {
			c := ck.Runs[i]
			st[i].load(c)
			if s.Method == Old {
				st[i].mult = ck.Mult[i]
			}
			if c.Done {
				if err := retire(i, c.Reason, c.ConvergedBy); err != nil {
					return nil, err
				}
			}
		}
	} else {
		if err := grad(); err != nil {
			return nil, err
		}
		for i := range n {
			st[i].res.GEvals++
			if !run.Finite(fs[i], gg[i]) {
				return nil, fmt.Errorf("%w: run %d: F = %v", ErrNotFinite, i, fs[i])
			}
			st[i].fPrev = fs[i]
		}
	}
	rounds := 0
	gn, cross, d0 := make([]float64, B), make([]float64, B), make([]float64, B)
	beta, alpha := make([]float64, B), make([]float64, B)
	// direction writes p = −g̃ + β pPrev (the β of each run) and returns gᵀp in d0.
	direction := func() error {
		for i := range n {
			beta[i] = st[i].beta
		}
		hb := hd.Batches(0, n)
		for i := range n {
			hb.Set(i, 0, 0, beta[i])
		}
		if err := be.Upload(dots.Batches(0, n), hb); err != nil {
			return err
		}
		if err := be.ScaleRows(p.Batches(0, n), pPrev.Batches(0, n), dots.Batches(0, n)); err != nil {
			return err
		}
		if err := be.Axpby(p.Batches(0, n), -1, gt.Batches(0, n), 1, p.Batches(0, n)); err != nil {
			return err
		}
		return rowDots(d0, g, p, n)
	}
	// searchFront swaps the runs whose search wants F to the front (slots 0…m−1) and returns m.
	searchFront := func() (int, error) {
		return slots.Front(n, func(i int) bool { return st[i].search.searching() }, swapSlots)
	}
	// evaluate steps the first m runs to their trial points (x + trial·p) and evaluates F there into fs; trialF(i)
	// then counts run i's evaluation and returns its F, +Inf where F is not finite (a rejected point).
	evaluate := func(m int) error {
		for i := range m {
			alpha[i] = st[i].search.trial
		}
		if err := obj.Step(xt.Batches(0, m), x.Batches(0, m), p.Batches(0, m), alpha[:m]); err != nil {
			return err
		}
		return obj.Value(fs, xt.Batches(0, m))
	}
	trialF := func(i int) float64 {
		r := st[i]
		r.res.FEvals++
		if math.IsNaN(fs[i]) || math.IsInf(fs[i], 0) {
			r.res.Rejected++
			return math.Inf(1)
		}
		return fs[i]
	}
	// lineSearch runs the searches of the runs whose search stage is lsFirst to their end, one Value per round. Each
	// round first swaps the runs still searching to the front (slots 0…m−1), so that it steps and evaluates only
	// them: the runs' searches end after different numbers of rounds.
	lineSearch := func() error {
		for {
			m, err := searchFront()
			if err != nil || m == 0 {
				return err
			}
			if err := evaluate(m); err != nil {
				return err
			}
			for i := range m {
				st[i].search.feed(trialF(i), ls)
			}
		}
	}
	// oldStep is Old's step (optimizer.oldStep) for each unfinished run, its gn set: a run with g̃ = 0 stops
	// (Stationary); the others scale their multipliers by the signs of g̃ and the previous step, then try
	// p = −mult ⊙ g̃ in rounds of one Value over the runs still trying (swapped to the front), each shrinking its
	// multipliers after an increase of F, until F does not rise (search.ok, a = 1) or the step no longer moves x (not
	// ok). The vectors of this host arithmetic go down and up once per iteration, and a row of p once per shrinking.
	var hg, hp, hrow *tensor.Tensor
	setP := func(i int) error { // p of slot i = −mult ⊙ g̃
		r := st[i]
		row, _, _, _ := hrow.Matrix(0)
		for k, gk := range r.oldG {
			row[k] = -r.mult[k] * gk
		}
		return be.Upload(p.Item(i), hrow)
	}
	oldStep := func() error {
		for i := n - 1; i >= 0; i-- {
			if r := st[i]; r.gn == 0 {
				report(r, r.f, r.gn, 0, 0)
				if err := retire(i, run.Converged, Stationary); err != nil {
					return err
				}
			}
		}
		if n == 0 {
			return nil
		}
		if hg == nil {
			hg, hp, hrow = tensor.NewHost(B, 1, dim), tensor.NewHost(B, 1, dim), tensor.NewHost(1, 1, dim)
		}
		if err := be.Download(hg.Batches(0, n), gt.Batches(0, n)); err != nil {
			return err
		}
		if err := be.Download(hp.Batches(0, n), pPrev.Batches(0, n)); err != nil {
			return err
		}
		for i := range n {
			r := st[i]
			gi, _, _, _ := hg.Matrix(i)
			r.oldG = append(r.oldG[:0], gi...)
			if r.havePrev {
				pp, _, _, _ := hp.Matrix(i)
				for k, gk := range gi {
					m := r.mult[k]
					switch c := gk * pp[k]; {
					case c < 0: // the step −g̃_k repeats the previous step's sign
						m *= ls.OldUp
					case c > 0:
						m *= ls.OldDown
					}
					r.mult[k] = math.Min(math.Max(m, ls.MinAlpha), ls.MaxAlpha)
				}
			}
			r.try = 0
			r.search = lsState{stage: lsFirst, F0: r.f, bestF: r.f, trial: 1}
			if err := setP(i); err != nil {
				return err
			}
		}
		for {
			m, err := searchFront()
			if err != nil || m == 0 {
				return err
			}
			if err := evaluate(m); err != nil {
				return err
			}
			// max |xt − x| of each run: 0 when the step no longer moves x (moved).
			d := tmp.Batches(0, m)
			if err := be.Axpby(d, 1, xt.Batches(0, m), -1, x.Batches(0, m)); err != nil {
				return err
			}
			if err := be.Map(d, backend.Abs, 1, d); err != nil {
				return err
			}
			if err := be.Reduce(dots.Batches(0, m), backend.ReduceMax, backend.AxisCols, d); err != nil {
				return err
			}
			if err := be.Download(hd.Batches(0, m), dots.Batches(0, m)); err != nil {
				return err
			}
			for i := range m {
				r := st[i]
				f := trialF(i)
				switch {
				case hd.At(i, 0, 0) == 0: // x not moved: the end, whatever F(x) (optimizer.oldStep)
					r.search.stage, r.search.ok = lsDone, false
				case f <= r.search.F0:
					r.search.stage, r.search.ok, r.search.a, r.search.bestF = lsDone, true, 1, f
				case r.try == oldMaxHalvings:
					r.search.stage, r.search.ok = lsDone, false
				default:
					for k := range r.mult {
						r.mult[k] *= ls.Backtrack
					}
					r.try++
					if err := setP(i); err != nil {
						return err
					}
				}
			}
		}
	}
	for n > 0 {
		if ctx.Err() != nil {
			for i := n - 1; i >= 0; i-- {
				if err := retire(i, run.Cancelled, NotConverged); err != nil {
					return nil, err
				}
			}
			break
		}
		for i := n - 1; i >= 0; i-- {
			if st[i].iters >= maxIter {
				if err := retire(i, run.MaxIter, NotConverged); err != nil {
					return nil, err
				}
			}
		}
		if n == 0 {
			break
		}
		if !first {
			if err := grad(); err != nil {
				return nil, err
			}
			for i := range n {
				st[i].res.GEvals++
				st[i].f = fs[i]
			}
			for i := n - 1; i >= 0; i-- {
				if !run.Finite(fs[i], gg[i]) {
					if err := retire(i, run.NotFinite, NotConverged); err != nil {
						return nil, err
					}
				}
			}
			if n == 0 {
				break
			}
		} else {
			for i := range n {
				st[i].f = st[i].fPrev
			}
		}
		first = false
		if err := rowDots(gn, g, gt, n); err != nil {
			return nil, err
		}
		if err := rowDots(cross, g, gtPrev, n); err != nil {
			return nil, err
		}
		if s.Method == Old {
			for i := range n {
				st[i].gn, st[i].beta = gn[i], 0
			}
			if err := oldStep(); err != nil {
				return nil, err
			}
		} else {
			for i := range n {
				r := st[i]
				r.gn = gn[i]
				r.restart = !r.havePrev || !s.Method.conjugate() || (every > 0 && r.sinceReset >= every)
				r.beta = 0
				if !r.restart {
					c := cross[i]
					switch s.Beta {
					case PolakRibiere:
						r.beta = (r.gn - c) / r.gnPrev
					case PolakRibierePlus:
						r.beta = math.Max((r.gn-c)/r.gnPrev, 0)
					case FletcherReeves:
						r.beta = r.gn / r.gnPrev
					}
					if s.PowellBeale > 0 && PowellBealeFires(c, r.gn, s.PowellBeale) {
						r.restart = true
					}
					if math.IsNaN(r.beta) || math.IsInf(r.beta, 0) {
						r.restart = true
					}
				}
				if r.restart {
					r.beta = 0
				}
			}
			if err := direction(); err != nil {
				return nil, err
			}
			safeguard := false
			for i := range n {
				if r := st[i]; r.beta != 0 && !(d0[i] < 0) { // descent safeguard (notes §7.8)
					r.beta, r.restart, safeguard = 0, true, true
				}
			}
			if safeguard {
				if err := direction(); err != nil {
					return nil, err
				}
			}
			for i := n - 1; i >= 0; i-- {
				r := st[i]
				r.d0 = d0[i]
				if r.restart && s.Method.conjugate() {
					r.res.Restarts++
					r.sinceReset = 0
				}
				if !(r.d0 < 0) || r.gn == 0 { // stationary to working precision
					report(r, r.f, r.gn, 0, r.beta)
					if err := retire(i, run.Converged, Stationary); err != nil {
						return nil, err
					}
					continue
				}
				switch { // Minimize's α₀ rule
				case s.Method.riemannian() && (r.restart && s.Method == RCG || r.alphaPrev == 0):
					r.a0 = 1
				case s.Method.riemannian():
					r.a0 = math.Min(math.Max(r.alphaPrev, ls.MinAlpha), ls.MaxAlpha)
				case r.alphaPrev == 0:
					r.a0 = 1 / math.Sqrt(gg[i])
				default:
					r.a0 = r.alphaPrev
				}
				r.search.start(r.f, r.d0, r.a0, s.Search == Unit, r.beta == 0)
			}
			if err := lineSearch(); err != nil {
				return nil, err
			}
			// Revert and reset where the conjugate direction failed: search along −g̃ (from α₀ = 1 if Riemannian).
			retry := false
			for i := range n {
				r := st[i]
				r.retry = !r.search.ok && r.beta != 0
				if r.retry {
					r.beta, retry = 0, true
				}
			}
			if retry {
				if err := direction(); err != nil {
					return nil, err
				}
				for i := range n {
					if r := st[i]; r.retry {
						r.d0 = d0[i]
						r.res.Restarts++
						r.sinceReset = 0
						if s.Method.riemannian() {
							r.a0 = 1
						}
						r.search.start(r.f, r.d0, r.a0, s.Search == Unit, true)
					}
				}
				if err := lineSearch(); err != nil {
					return nil, err
				}
			}
		}
		for i := n - 1; i >= 0; i-- {
			if r := st[i]; !r.search.ok {
				// No decrease along the natural gradient: converged to working precision.
				report(r, r.f, r.gn, 0, r.beta)
				if err := retire(i, run.Converged, NoDecrease); err != nil {
					return nil, err
				}
			}
		}
		if n == 0 {
			break
		}
		for i := range n {
			alpha[i] = st[i].search.a
		}
		if err := obj.Step(x.Batches(0, n), x.Batches(0, n), p.Batches(0, n), alpha[:n]); err != nil {
			return nil, err
		}
		if err := be.Copy(gtPrev.Batches(0, n), gt.Batches(0, n)); err != nil {
			return nil, err
		}
		if err := be.Copy(pPrev.Batches(0, n), p.Batches(0, n)); err != nil {
			return nil, err
		}
		for i := n - 1; i >= 0; i-- {
			r := st[i]
			fNew := r.search.bestF
			r.sinceReset++
			r.gnPrev, r.alphaPrev, r.havePrev = r.gn, r.search.a, true
			if math.Abs(r.fPrev-fNew) < s.Tol {
				r.calm++
			} else {
				r.calm = 0
			}
			r.fPrev = fNew
			report(r, fNew, r.gn, r.search.a, r.beta)
			if s.UseTarget && fNew <= s.Target {
				if err := retire(i, run.Converged, TargetReached); err != nil {
					return nil, err
				}
			} else if r.calm >= patience {
				if err := retire(i, run.Converged, Tolerance); err != nil {
					return nil, err
				}
			}
		}
		if rounds++; ctl.CheckpointEvery > 0 && rounds%ctl.CheckpointEvery == 0 {
			if err := saveBatch(ctl.CheckpointPath, be, s, st, stf, x, gtPrev, pPrev); err != nil {
				return nil, err
			}
		}
	}
	// Undo the swaps, so that slot i of obj (its models, posteriors and data) is run i again on return and the
	// batch can be minimised again.
	for i := range B {
		for st[i].id != i {
			j := st[i].id
			if err := obj.Swap(i, j); err != nil {
				return nil, err
			}
			if err := swapItems(be, x, tmp, i, j); err != nil {
				return nil, err
			}
			st[i], st[j] = st[j], st[i]
		}
	}
	hx := tensor.NewHost(B, 1, dim)
	if err := be.Download(hx, x); err != nil {
		return nil, err
	}
	var cancelled error
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
