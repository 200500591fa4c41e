package rcg

import (
	"fmt"
	"math"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/internal/slots"
)

// The core of Minimize and MinimizeBatch: one iteration of every unfinished run of a batch, the per-run decisions
// (β and restarts, the descent safeguard, α₀, the step rule, Old's multipliers, the convergence tests) written once
// and the vector work left to an engine. Minimize runs it as a batch of one on host slices (optimizer), MinimizeBatch
// on a backend (batchEngine); each engine does its arithmetic as before the two shared this core.

// vec names a vector of every run that an engine keeps.
type vec int

const (
	vG      vec = iota // ∇F at x
	vGt                // the natural gradient g̃ (g for the Euclidean methods)
	vGPrev             // g of the previous iteration (Hestenes–Stiefel)
	vGtPrev            // g̃ of the previous iteration
	vP                 // the search direction
	vPPrev             // the previous iteration's direction
)

// engine is the vector side of the core for the runs in slots 0…n−1.
type engine interface {
	update(n int) error                                // the closed-form updates between steps (Updater)
	grad(n int, f []float64) error                     // F, g (and for a batch g̃) at x
	finite(i int, f float64) bool                      // F and g of slot i are finite
	natural(n int) error                               // g̃ at x (g for the Euclidean methods)
	dots(dst []float64, a, b vec, n int) error         // aᵀb per run
	sqNormG(i int) float64                             // gᵀg of slot i
	direction(n int, beta, d0 []float64) error         // p = −g̃ + βp_prev (GD: −g) and d0 = gᵀp
	trial(m int, alpha, f []float64) error             // F at x + α p (the Stepper's point) into f
	unmoved(m int, dst []bool) error                   // the trial point is x to the last bit
	accept(n int, alpha []float64) error               // x ← x + αp, and g, g̃, p become the previous ones
	swap(i, j int) error                               // exchange two runs (a batch keeps the unfinished first)
	hostRows(n int) (gt, pPrev [][]float64, err error) // Old: g̃ and p_prev of each run on the host
	setP(i int, p []float64) error                     // Old: the direction of slot i
}

// control is the run control of the core: Minimize's run.Loop or MinimizeBatch's batchControl.
type control interface {
	halt(r *runState) (run.StopReason, bool) // whether run r stops before its next iteration, and why
	report(r *runState, rec run.Record)      // the record of an iteration of r
	finish(r *runState, reason run.StopReason)
	failed(err error) error // an Update failed: nil ends the runs (Minimize), else the error is returned
	roundDone() error       // after the accepted steps of an iteration of every run: checkpoints
}

// runState is the host state of one run.
type runState struct {
	id                       int // the run's index (the slot changes when runs are swapped)
	gnPrev, alphaPrev, fPrev float64
	fLast                    float64 // F at the current state: after Update, F(x) can be below the last step's value
	sinceReset, calm, iters  int
	havePrev                 bool
	res                      Result
	beta, gn, d0, a0, f      float64
	restart, retry           bool
	search                   lsState
	mult, oldG               []float64 // Old: the per-element multipliers, and g̃ of this iteration
	try                      int       // Old: the multipliers' shrinkings in this iteration
}

type core struct {
	s               Settings
	ls              LineSearch
	every, patience int
	e               engine
	ctl             control
	st              []*runState
	n               int  // unfinished runs, in slots 0…n−1
	first           bool // the gradient of the first iteration was computed by start
	batched         bool // errors name the run

	fs, gn, cross, gp, gpp, d0, beta, alpha []float64
	unmoved                                 []bool
	row                                     []float64 // Old: a direction on the host
}

// newCore returns the core of the runs st (slot i = run i) of dimension dim, nFree free parameters each (the n of
// the √n restart rule).
func newCore(s Settings, nFree, dim int, st []*runState, e engine) *core {
	c := &core{s: s, ls: s.LS.withDefaults(s.Search, s.Method), every: s.RestartEvery, patience: s.Patience, e: e,
		st: st, n: len(st)}
	if c.every == SqrtN {
		c.every = RestartPeriod(nFree)
	}
	if c.patience == 0 {
		c.patience = 2
	}
	B := len(st)
	c.fs, c.gn, c.cross, c.gp, c.gpp = make([]float64, B), make([]float64, B), make([]float64, B),
		make([]float64, B), make([]float64, B)
	c.d0, c.beta, c.alpha, c.unmoved = make([]float64, B), make([]float64, B), make([]float64, B), make([]bool, B)
	if s.Method == Old {
		c.row = make([]float64, dim)
		for _, r := range st {
			if r.mult == nil {
				r.mult = make([]float64, dim)
				for k := range r.mult {
					r.mult[k] = 1
				}
			}
		}
	}
	return c
}

// start runs the updates and the gradient at x0 before the first iteration; a run whose F or gradient is not
// finite there is an error.
func (c *core) start() error {
	if err := c.e.update(c.n); err != nil {
		return err
	}
	if err := c.e.grad(c.n, c.fs); err != nil {
		return err
	}
	for i := range c.n {
		r := c.st[i]
		r.res.GEvals++
		if !c.e.finite(i, c.fs[i]) {
			if c.batched {
				return fmt.Errorf("%w: run %d: F = %v", ErrNotFinite, i, c.fs[i])
			}
			return fmt.Errorf("%w: F = %v", ErrNotFinite, c.fs[i])
		}
		r.fPrev, r.fLast = c.fs[i], c.fs[i]
	}
	c.first = true
	return nil
}

// run iterates until every run has stopped. Each iteration (Algorithm 1): Update → gradient → natural gradient →
// β and restarts → step rule, for all unfinished runs.
func (c *core) run() error {
	for c.n > 0 {
		for i := c.n - 1; i >= 0; i-- {
			if reason, stop := c.ctl.halt(c.st[i]); stop {
				if err := c.retire(i, reason, NotConverged); err != nil {
					return err
				}
			}
		}
		if c.n == 0 {
			return nil
		}
		if err := c.gradient(); err != nil || c.n == 0 {
			return err
		}
		var err error
		if c.s.Method == Old {
			err = c.oldStep()
		} else {
			err = c.conjugateStep()
		}
		if err != nil {
			return err
		}
		for i := c.n - 1; i >= 0; i-- {
			if r := c.st[i]; !r.search.ok { // no decrease along −g̃ (−g): converged to working precision
				c.report(r, r.f, r.gn, 0, r.beta)
				if err := c.retire(i, run.Converged, NoDecrease); err != nil {
					return err
				}
			}
		}
		if c.n == 0 {
			return nil
		}
		if err := c.accept(); err != nil {
			return err
		}
		if err := c.ctl.roundDone(); err != nil {
			return err
		}
	}
	return nil
}

// retire ends the run in slot i and moves it behind the unfinished ones; callers walk the slots downwards.
func (c *core) retire(i int, reason run.StopReason, by Convergence) error {
	r := c.st[i]
	r.res.Result = run.Result{Reason: reason, Iters: r.iters}
	r.res.ConvergedBy = by
	r.res.F = r.fLast
	c.ctl.finish(r, reason)
	c.n--
	if i != c.n {
		return c.swap(i, c.n)
	}
	return nil
}

func (c *core) swap(i, j int) error {
	if err := c.e.swap(i, j); err != nil {
		return err
	}
	c.st[i], c.st[j] = c.st[j], c.st[i]
	return nil
}

// report closes an iteration of r: Objective = −F, GradNorm = √(gᵀg̃), Step = α and Extra "F", "beta", "f_evals",
// "g_evals", "rejected", "restarts".
func (c *core) report(r *runState, F, gn, alpha, beta float64) {
	r.iters++
	c.ctl.report(r, run.Record{Iter: r.iters - 1, Objective: -F, Smoothed: math.NaN(),
		GradNorm: math.Sqrt(math.Max(gn, 0)), Step: alpha, Extra: map[string]float64{"F": F, "beta": beta,
			"f_evals": float64(r.res.FEvals), "g_evals": float64(r.res.GEvals), "rejected": float64(r.res.Rejected),
			"restarts": float64(r.res.Restarts)}})
}

// gradient runs the updates and the gradient of every unfinished run (after the first iteration), retires those
// whose F or g is not finite, and computes g̃ and gᵀg̃ of the others.
func (c *core) gradient() error {
	if c.first {
		c.first = false
		for i := range c.n {
			c.st[i].f = c.st[i].fPrev
		}
	} else {
		if err := c.e.update(c.n); err != nil {
			if err := c.ctl.failed(err); err != nil {
				return err
			}
			for i := c.n - 1; i >= 0; i-- {
				if err := c.retire(i, run.Failed, NotConverged); err != nil {
					return err
				}
			}
			return nil
		}
		if err := c.e.grad(c.n, c.fs); err != nil {
			return err
		}
		for i := range c.n {
			c.st[i].res.GEvals++
			c.st[i].f = c.fs[i]
		}
		for i := c.n - 1; i >= 0; i-- {
			if !c.e.finite(i, c.fs[i]) {
				if err := c.retire(i, run.NotFinite, NotConverged); err != nil {
					return err
				}
			} else {
				c.st[i].fLast = c.fs[i]
			}
		}
		if c.n == 0 {
			return nil
		}
	}
	if err := c.e.natural(c.n); err != nil {
		return err
	}
	if err := c.e.dots(c.gn, vG, vGt, c.n); err != nil {
		return err
	}
	for i := range c.n {
		c.st[i].gn = c.gn[i]
	}
	return nil
}

// trialF counts the evaluation of slot i's trial point and returns its F, +Inf where F is not finite (a rejected
// point).
func (c *core) trialF(i int) float64 {
	r := c.st[i]
	r.res.FEvals++
	if math.IsNaN(c.fs[i]) || math.IsInf(c.fs[i], 0) {
		r.res.Rejected++
		return math.Inf(1)
	}
	return c.fs[i]
}

// front swaps the runs whose search wants F to the front (slots 0…m−1), evaluates their trial points into fs and
// returns m.
func (c *core) front() (int, error) {
	m, err := slots.Front(c.n, func(i int) bool { return c.st[i].search.searching() }, c.swap)
	if err != nil || m == 0 {
		return 0, err
	}
	for i := range m {
		c.alpha[i] = c.st[i].search.trial
	}
	return m, c.e.trial(m, c.alpha, c.fs)
}

// lineSearch runs the searches of the runs that started one to their end, one evaluation of each run still
// searching per round: the runs' searches end after different numbers of rounds.
func (c *core) lineSearch() error {
	for {
		m, err := c.front()
		if err != nil || m == 0 {
			return err
		}
		for i := range m {
			c.st[i].search.feed(c.trialF(i), c.ls)
		}
	}
}

// accept takes the accepted steps, then the convergence tests: |ΔF| < Tol for Patience iterations, the target.
func (c *core) accept() error {
	for i := range c.n {
		c.alpha[i] = c.st[i].search.a
	}
	if err := c.e.accept(c.n, c.alpha); err != nil {
		return err
	}
	for i := c.n - 1; i >= 0; i-- {
		r := c.st[i]
		fNew := r.search.bestF
		r.sinceReset++
		r.gnPrev, r.alphaPrev, r.havePrev = r.gn, r.search.a, true
		if math.Abs(r.fPrev-fNew) < c.s.Tol {
			r.calm++
		} else {
			r.calm = 0
		}
		r.fPrev, r.fLast = fNew, fNew
		c.report(r, fNew, r.gn, r.search.a, r.beta)
		var err error
		if c.s.UseTarget && fNew <= c.s.Target {
			err = c.retire(i, run.Converged, TargetReached)
		} else if r.calm >= c.patience {
			err = c.retire(i, run.Converged, Tolerance)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
