// Package rcg is approximate Riemannian conjugate gradient for fixed-form variational Bayes (paper 004, Honkela
// et al. 2010): nonlinear conjugate gradient on the mean parameters in which the gradient is the natural gradient
// G⁻¹∇F (eq. 4), inner products use the Fisher metric of q through the cheap identities of notes §2.2
// (⟨g̃_k, g̃_l⟩_k = g_kᵀg̃_l, no product with G), steps follow straight lines and nothing is transported (§3.2).
//
// The same driver runs the comparators of the paper: plain Riemannian gradient (RG), Euclidean conjugate gradient
// (CG) and gradient descent (GD). Covariances (fixed point, eq. 13) and conjugate-exponential parts (VB-EM) are
// updated between steps through the optional Updater interface; a model that wants VB-EM inside the line search
// (the mixture of Gaussians, App. B.3) folds it into Value and Grad (a collapsed objective).
//
// The hot loops of Minimize are plain float64 Go on the host; the models own their arithmetic. MinimizeBatch runs
// the same algorithm for B problems at once on a backend (a BatchObjective such as mog.Batch). See docs/rcg.md.
package rcg

import (
	"errors"
	"fmt"
	"math"

	"github.com/geovb/geovb/algos/run"
)

// Objective is the free energy F (to be minimised) of a fixed-form approximation as a function of the parameters
// x updated by gradient steps.
type Objective interface {
	// Dim returns len(x).
	Dim() int
	// Value returns F(x). NaN or +Inf marks a point the line search must reject.
	Value(x []float64) float64
	// Grad writes the Euclidean gradient ∇F(x) into g and returns F(x).
	Grad(g, x []float64) float64
	// NatGrad writes the Riemannian gradient G(x)⁻¹g into dst (eq. 4). It is called right after Grad at the same
	// x, so an implementation may reuse what Grad cached (e.g. φ of notes §2.5).
	NatGrad(dst, g, x []float64)
}

// Updater is implemented by objectives with parameters updated in closed form between gradient steps: fixed-point
// variances (eq. 13) and VB-EM updates of conjugate parts (Algorithm 1). Update must not change x's length and
// never runs inside a line search (notes §7.7).
type Updater interface {
	Update(x []float64) error
}

// Stepper is implemented by objectives whose trial points are not x + αp, e.g. softmax responsibilities stepped in
// the log domain (eqs. 85–86).
type Stepper interface {
	Step(dst, x, p []float64, alpha float64)
}

// Sizer is implemented by objectives whose number of free gradient-updated parameters (n of the √n restart rule)
// differs from Dim, e.g. N(K−1)+KD for the mixture whose x holds all K log-responsibilities.
type Sizer interface {
	NumFree() int
}

// Stateful is implemented by objectives with internal state (variances, hyperparameters) that a checkpoint must
// carry.
type Stateful interface {
	State() []float64
	SetState([]float64) error
}

// Method picks the search direction.
type Method int

// Methods.
const (
	RCG Method = iota // Riemannian conjugate gradient: p = −g̃ + βp_prev with Riemannian β (eqs. 5–7)
	CG                // Euclidean conjugate gradient: g̃ = g
	RG                // Riemannian gradient: p = −g̃
	GD                // gradient descent: p = −g
	// Old is the heuristic of Valpola & Karhunen (2002), the "Old" baseline of Figs. 9–10 (notes §4.2.7): the unit
	// natural-gradient step −g̃ (with the fixed-point variances of Update a per-element Newton step) scaled by a
	// per-element multiplier that grows ×LS.OldUp while the sign of the element's step repeats and shrinks ×LS.OldDown
	// when it flips, clipped to [LS.MinAlpha, LS.MaxAlpha]; no line search. [I] A step that raises F is rejected and
	// all multipliers shrink ×LS.Backtrack, for that step below LS.MinAlpha too, until F does not rise (the run has
	// converged when the step no longer changes x), so F never increases; the NLFA code's coupling correction
	// through the output Jacobians is left out (for the NSSM the chain metric couples consecutive states).
	Old
)

var methodNames = [...]string{"RCG", "CG", "RG", "GD", "Old"}

func (m Method) String() string {
	if m >= 0 && int(m) < len(methodNames) {
		return methodNames[m]
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

func (m Method) riemannian() bool { return m == RCG || m == RG || m == Old }
func (m Method) conjugate() bool  { return m == RCG || m == CG }

// Beta picks the conjugacy formula.
type Beta int

// β formulas, all in the cheap form of notes §2.2 (g is the Euclidean gradient, g̃ the natural one).
const (
	PolakRibiere     Beta = iota // (g_kᵀg̃_k − g_kᵀg̃_{k−1}) / g_{k−1}ᵀg̃_{k−1}, eq. (6); β < 0 allowed (paper)
	FletcherReeves               // g_kᵀg̃_k / g_{k−1}ᵀg̃_{k−1}
	HestenesStiefel              // (g_kᵀg̃_k − g_kᵀg̃_{k−1}) / (g_kᵀp − g_{k−1}ᵀp), with G_kg̃_{k−1} ≈ g_{k−1} (notes §3.1)
	PolakRibierePlus             // max(PR, 0)
)

// Search picks the step rule.
type Search int

// Step rules.
const (
	// Parabolic is the line search of notes §3.4: a trial step α₀, one parabola through F(0), F'(0), F(α₀)
	// clamped to [Shrink·α₀, Grow·α₀], expansion ×2 (at most MaxExpand) under negative curvature, Armijo
	// acceptance with C1, backtracking ×Backtrack (at most MaxBacktrack), then a restart along −g̃.
	Parabolic Search = iota
	// Unit takes α = 1 (notes §9). On an increase of F it reverts and resets the direction
	// to −g̃; if the reset step also increases F it backtracks ×Backtrack with Armijo acceptance.
	Unit
)

// LineSearch holds the constants of the step rules; zero fields take the defaults in brackets.
type LineSearch struct {
	C1           float64 // Armijo constant [1e-4]
	Shrink, Grow float64 // clamp of the parabola's minimiser relative to α₀ [0.1, 4]
	Backtrack    float64 // backtracking factor [0.25; 0.5 for Unit]
	MaxBacktrack int     // [8] (Old halves until F falls or the step no longer moves x, at most 60 times)
	MaxExpand    int     // [3]
	// MaxBacktrackSteepest is the backtracking limit along −g̃ (or −g), where a failed search ends the run as
	// converged [40]. Past MaxBacktrack a trial must also lower F strictly. A unit natural step can overshoot by
	// more than four orders of magnitude where the metric is a poor curvature model (docs/rcg.md, "The false
	// stop"), so the 8 backtracks of a conjugate direction are too few to tell a stationary point.
	MaxBacktrackSteepest int
	// Refine adds up to Refine unclamped parabolic refits through F(0), F'(0) and the best point (an exact line
	// search on quadratics, for tests of CG theory). Default 0.
	Refine int
	// MinAlpha, MaxAlpha clip the carried-over trial step of Riemannian directions and the multipliers of Old
	// [1e-3, 1e2].
	MinAlpha, MaxAlpha float64
	// OldUp, OldDown are Old's per-element multiplier factors on a repeated and a flipped step sign [1.05, 0.8]
	// (notes §4.2.7).
	OldUp, OldDown float64
}

func (l LineSearch) withDefaults(s Search, method Method) LineSearch {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.C1, 1e-4)
	def(&l.Shrink, 0.1)
	def(&l.Grow, 4)
	def(&l.OldUp, 1.05)
	def(&l.OldDown, 0.8)
	if s == Unit || method == Old {
		def(&l.Backtrack, 0.5)
	} else {
		def(&l.Backtrack, 0.25)
	}
	def(&l.MinAlpha, 1e-3)
	def(&l.MaxAlpha, 1e2)
	if l.MaxBacktrack == 0 {
		l.MaxBacktrack = 8
	}
	if l.MaxBacktrackSteepest == 0 {
		l.MaxBacktrackSteepest = 40
	}
	if l.MaxExpand == 0 {
		l.MaxExpand = 3
	}
	return l
}

// validate reports the first field of the line search l (after withDefaults) that cannot work, by name.
func (l LineSearch) validate() error {
	bad := func(name string, v any, want string) error {
		return fmt.Errorf("%w: LineSearch.%s = %v, want %s", ErrBadInput, name, v, want)
	}
	open01 := func(v float64) bool { return v > 0 && v < 1 }
	switch {
	case !open01(l.C1):
		return bad("C1", l.C1, "0 < C1 < 1")
	case !(l.Shrink > 0 && l.Shrink <= 1):
		return bad("Shrink", l.Shrink, "0 < Shrink ≤ 1")
	case !(l.Grow >= 1 && !math.IsInf(l.Grow, 1)):
		return bad("Grow", l.Grow, "1 ≤ Grow < ∞")
	case !open01(l.Backtrack):
		return bad("Backtrack", l.Backtrack, "0 < Backtrack < 1")
	case l.MaxBacktrack < 0:
		return bad("MaxBacktrack", l.MaxBacktrack, "≥ 0")
	case l.MaxBacktrackSteepest < 0:
		return bad("MaxBacktrackSteepest", l.MaxBacktrackSteepest, "≥ 0")
	case l.MaxExpand < 0:
		return bad("MaxExpand", l.MaxExpand, "≥ 0")
	case l.Refine < 0:
		return bad("Refine", l.Refine, "≥ 0")
	case !(l.MinAlpha > 0 && l.MinAlpha <= l.MaxAlpha && !math.IsInf(l.MaxAlpha, 1)):
		return fmt.Errorf("%w: LineSearch.MinAlpha = %v, MaxAlpha = %v, want 0 < MinAlpha ≤ MaxAlpha < ∞", ErrBadInput,
			l.MinAlpha, l.MaxAlpha)
	case !(l.OldUp >= 1 && !math.IsInf(l.OldUp, 1)):
		return bad("OldUp", l.OldUp, "1 ≤ OldUp < ∞")
	case !(l.OldDown > 0 && l.OldDown <= 1):
		return bad("OldDown", l.OldDown, "0 < OldDown ≤ 1")
	}
	return nil
}

// validate reports settings of s that cannot work: a NaN, a negative tolerance or rule, an unknown search, a bad
// line search. Minimize and MinimizeBatch check the methods they run themselves.
func (s Settings) validate() error {
	switch {
	case !(s.PowellBeale >= 0) || !(s.Tol >= 0) || s.Patience < 0 || s.RestartEvery < SqrtN:
		return fmt.Errorf("%w: PowellBeale %v, Tol %v, Patience %d, RestartEvery %d: want none negative or NaN",
			ErrBadInput, s.PowellBeale, s.Tol, s.Patience, s.RestartEvery)
	case s.UseTarget && math.IsNaN(s.Target):
		return fmt.Errorf("%w: Target is NaN", ErrBadInput)
	case s.Search != Parabolic && s.Search != Unit:
		return fmt.Errorf("%w: search %d", ErrBadInput, s.Search)
	}
	return s.LS.withDefaults(s.Search, s.Method).validate()
}

// Settings configure a run. The zero value is paper-faithful RCG with Polak–Ribière β, the parabolic line search
// and no restart rule other than the descent safeguard; set PowellBeale = 0.2 (eq. 7) or RestartEvery.
type Settings struct {
	Method Method
	Beta   Beta
	// PowellBeale restarts with p = −g̃ when |g_kᵀg̃_{k−1}| ≥ PowellBeale·g_kᵀg̃_k (eq. 7 in the cheap form; the paper
	// uses 0.2). 0 disables it.
	PowellBeale float64
	// RestartEvery resets the direction every RestartEvery iterations; SqrtN asks for ⌈√n⌉ with n from Sizer (or
	// Dim), the MoG rule of §6.2. 0 disables it.
	RestartEvery int
	Search       Search
	LS           LineSearch
	// Tol and Patience: the run converges when |F_t − F_{t−1}| < Tol for Patience consecutive iterations (§3.5).
	// Patience 0 means 2.
	Tol      float64
	Patience int
	// Target, when UseTarget is set, stops the run (Converged) as soon as F ≤ Target: time-to-target runs.
	Target    float64
	UseTarget bool
	// Resume continues from Control.CheckpointPath when that file exists.
	Resume bool
}

// SqrtN is the RestartEvery value asking for ⌈√n⌉.
const SqrtN = -1

// RestartPeriod returns ⌈√n⌉, the MoG restart period of §6.2 (45 for n = 2010, 84 for n = 7016).
func RestartPeriod(n int) int {
	k := int(math.Ceil(math.Sqrt(float64(n))))
	for k*k < n { // guard against rounding of Sqrt
		k++
	}
	for k > 1 && (k-1)*(k-1) >= n {
		k--
	}
	return k
}

// PowellBealeFires reports whether the Riemannian Powell–Beale test (7) asks for a restart, in the cheap form
// |g_kᵀg̃_{k−1}| ≥ c·g_kᵀg̃_k, where cross = g_kᵀg̃_{k−1} and norm2 = g_kᵀg̃_k.
func PowellBealeFires(cross, norm2, c float64) bool { return math.Abs(cross) >= c*norm2 }

// Result is the outcome of Minimize.
type Result struct {
	X []float64 // final parameters (the last accepted point)
	F float64   // F at the state the run ended in (X and, after Update, the model's other parameters)
	run.Result
	FEvals   int // evaluations of F (line-search trials)
	GEvals   int // gradient evaluations
	Rejected int // trial points whose F was NaN or ±Inf
	Restarts int // directions reset to −g̃ (first iteration included)
	// ConvergedBy says which test ended a run that stopped as run.Converged (NotConverged otherwise).
	ConvergedBy Convergence
}

// Convergence names the test that ended a converged run. The tests mean different things: Tolerance and
// TargetReached are the stopping rules of §3.5 and time-to-target runs, while Stationary and NoDecrease say that no
// step of the method lowers F any more, which before the steepest search's longer backtracking could also be a
// false stop (docs/rcg.md, "The false stop").
type Convergence int

// Convergence tests.
const (
	NotConverged  Convergence = iota // the run did not stop as converged
	Tolerance                        // |F_t − F_{t−1}| < Tol for Patience consecutive iterations
	TargetReached                    // F ≤ Settings.Target
	Stationary                       // gᵀg̃ = 0, or no descent direction, to working precision
	NoDecrease                       // no step along −g̃ (−g) lowered F; for Old, none with every multiplier shrunk
)

var convergenceNames = [...]string{"", "tolerance", "target", "stationary", "no-decrease"}

func (c Convergence) String() string {
	if c >= 0 && int(c) < len(convergenceNames) {
		return convergenceNames[c]
	}
	return fmt.Sprintf("Convergence(%d)", int(c))
}

// MarshalText writes the test's name, so that JSON lines read "no-decrease", not 4.
func (c Convergence) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// Errors.
var (
	ErrBadInput  = errors.New("rcg: bad input")
	ErrNotFinite = errors.New("rcg: free energy not finite at the start")
)

const checkpointMethod = "rcg"
const checkpointVersion = 1

type checkpoint struct {
	Method                             int
	X, P, GPrev, GtPrev                []float64
	GnPrev, Alpha, FPrev               float64
	SinceReset, Calm, Iter             int
	FEvals, GEvals, Rejected, Restarts int
	HavePrev                           bool
	ObjState                           []float64
	Mult                               []float64 // Old's per-element multipliers
}

type optimizer struct {
	obj     Objective
	s       Settings
	ls      LineSearch
	stepper Stepper
	n       int
	xt      []float64 // trial point
	best    []float64
	res     *Result
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

func (o *optimizer) step(dst, x, p []float64, alpha float64) {
	if o.stepper != nil {
		o.stepper.Step(dst, x, p, alpha)
		return
	}
	for i := range x {
		dst[i] = x[i] + alpha*p[i]
	}
}

// eval returns F at x + αp (in o.xt); a non-finite value is counted as a rejected trial and returned as +Inf, so
// the state never sees it.
func (o *optimizer) eval(x, p []float64, alpha float64) float64 {
	o.step(o.xt, x, p, alpha)
	f := o.obj.Value(o.xt)
	o.res.FEvals++
	if math.IsNaN(f) || math.IsInf(f, 0) {
		o.res.Rejected++
		return math.Inf(1)
	}
	return f
}

// search runs the step rule along p from x (F0 = F(x), d0 = ∇Fᵀp < 0, a0 the trial step). It returns the accepted
// α and F(x + αp), or ok = false when no acceptable point was found. steepest says p is −g̃ (or −g): the unit rule
// backtracks only then, and both rules backtrack up to MaxBacktrackSteepest times instead of MaxBacktrack.
func (o *optimizer) search(x, p []float64, F0, d0, a0 float64, steepest bool) (alpha, f float64, ok bool) {
	ls := o.ls
	armijo := func(a, fa float64) bool { return fa <= F0+ls.C1*a*d0 }
	limit := ls.MaxBacktrack
	if steepest {
		limit = ls.MaxBacktrackSteepest
	}
	if o.s.Search == Unit {
		f1 := o.eval(x, p, 1)
		if f1 <= F0 {
			return 1, f1, true
		}
		if !steepest {
			return 0, 0, false
		}
		a := 1.0
		for k := range limit {
			a *= ls.Backtrack
			if fa := o.eval(x, p, a); armijo(a, fa) && (k < ls.MaxBacktrack || fa < F0) {
				return a, fa, true
			}
		}
		return 0, 0, false
	}
	bestA, bestF := 0.0, F0
	f1 := o.eval(x, p, a0)
	if f1 < bestF {
		bestA, bestF = a0, f1
	}
	if !math.IsInf(f1, 1) {
		curv := f1 - F0 - d0*a0
		if curv > 0 {
			as := -d0 * a0 * a0 / (2 * curv)
			as = math.Min(math.Max(as, ls.Shrink*a0), ls.Grow*a0)
			if fs := o.eval(x, p, as); fs < bestF {
				bestA, bestF = as, fs
			}
		} else if f1 < F0 {
			a := a0
			for range ls.MaxExpand {
				a *= 2
				fa := o.eval(x, p, a)
				if fa >= bestF {
					break
				}
				bestA, bestF = a, fa
			}
		}
	}
	if bestA > 0 && armijo(bestA, bestF) {
		a, fa := o.refine(x, p, F0, d0, bestA, bestF)
		return a, fa, true
	}
	a := a0
	if bestA > 0 {
		a = math.Min(a, bestA)
	}
	for k := range limit {
		a *= ls.Backtrack
		if fa := o.eval(x, p, a); armijo(a, fa) && (k < ls.MaxBacktrack || fa < F0) {
			a, fa = o.refine(x, p, F0, d0, a, fa)
			return a, fa, true
		}
	}
	return 0, 0, false
}

// refine applies up to LS.Refine unclamped parabolic refits through F(0), F'(0) and the best point (a), keeping
// each only if it lowers F: an exact line search on quadratics.
func (o *optimizer) refine(x, p []float64, F0, d0, a, fa float64) (float64, float64) {
	for range o.ls.Refine {
		curv := fa - F0 - d0*a
		if curv <= 0 {
			break
		}
		as := -d0 * a * a / (2 * curv)
		if math.Abs(as-a) <= 1e-14*a {
			break
		}
		fs := o.eval(x, p, as)
		if fs >= fa {
			break
		}
		a, fa = as, fs
	}
	return a, fa
}

// Minimize runs the method of s on obj from x0 under the run control ctl and returns the final point. Bad input
// (wrong length, non-finite x0, non-finite F or gradient at the start, bad settings) is an error before any
// iteration; a NaN during a line search only rejects that trial (Result.Rejected and the recorder's "rejected").
//
// Each iteration: Update (fixed points, VB-EM) → gradient → natural gradient → β and restarts → step rule. The
// recorder gets Objective = −F (higher is better), GradNorm = √(gᵀg̃), Step = α and Extra "F", "beta",
// "f_evals", "g_evals", "rejected", "restarts".
func Minimize(obj Objective, x0 []float64, s Settings, ctl run.Control) (*Result, error) {
	if err := ctl.Validate(); err != nil {
		return nil, err
	}
	dim := obj.Dim()
	switch {
	case len(x0) != dim:
		return nil, fmt.Errorf("%w: len(x0) = %d, Dim = %d", ErrBadInput, len(x0), dim)
	case !finiteVec(x0):
		return nil, fmt.Errorf("%w: x0 not finite", ErrBadInput)
	case s.Method < RCG || s.Method > Old:
		return nil, fmt.Errorf("%w: method %d", ErrBadInput, s.Method)
	case s.Beta < PolakRibiere || s.Beta > PolakRibierePlus:
		return nil, fmt.Errorf("%w: beta %d", ErrBadInput, s.Beta)
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	o := &optimizer{obj: obj, s: s, ls: s.LS.withDefaults(s.Search, s.Method), xt: make([]float64, dim), res: &Result{}}
	o.stepper, _ = obj.(Stepper)
	upd, _ := obj.(Updater)
	stf, _ := obj.(Stateful)
	o.n = dim
	if sz, ok := obj.(Sizer); ok {
		o.n = sz.NumFree()
	}
	every := s.RestartEvery
	if every == SqrtN {
		every = RestartPeriod(o.n)
	}
	patience := s.Patience
	if patience == 0 {
		patience = 2
	}

	x := append([]float64(nil), x0...)
	g, gt := make([]float64, dim), make([]float64, dim)
	gPrev, gtPrev, p, pPrev := make([]float64, dim), make([]float64, dim), make([]float64, dim), make([]float64, dim)
	var mult []float64 // Old's per-element step multipliers
	if s.Method == Old {
		mult = make([]float64, dim)
		for i := range mult {
			mult[i] = 1
		}
	}
	var gnPrev, alphaPrev, fPrev float64
	var sinceReset, calm, done int
	havePrev := false
	res := o.res

	resumed := false
	if s.Resume && ctl.CheckpointPath != "" {
		var c checkpoint
		err := run.LoadCheckpoint(ctl.CheckpointPath, checkpointMethod, checkpointVersion, &c)
		switch {
		case err == nil:
			if c.Method != int(s.Method) || len(c.X) != dim {
				return nil, fmt.Errorf("%w: checkpoint of method %d, dim %d", ErrBadInput, c.Method, len(c.X))
			}
			if stf != nil {
				if err := stf.SetState(c.ObjState); err != nil {
					return nil, err
				}
			}
			copy(x, c.X)
			copy(gPrev, c.GPrev)
			copy(gtPrev, c.GtPrev)
			copy(pPrev, c.P)
			copy(mult, c.Mult)
			gnPrev, alphaPrev, fPrev = c.GnPrev, c.Alpha, c.FPrev
			sinceReset, calm, done, havePrev = c.SinceReset, c.Calm, c.Iter, c.HavePrev
			res.FEvals, res.GEvals, res.Rejected, res.Restarts = c.FEvals, c.GEvals, c.Rejected, c.Restarts
			resumed = true
		case errors.Is(err, run.ErrCheckpoint):
			return nil, err
		}
	}

	if !resumed {
		if upd != nil {
			if err := upd.Update(x); err != nil {
				return nil, err
			}
		}
		f0 := obj.Grad(g, x)
		res.GEvals++
		if math.IsNaN(f0) || math.IsInf(f0, 0) || !finiteVec(g) {
			return nil, fmt.Errorf("%w: F = %v", ErrNotFinite, f0)
		}
		fPrev = f0
	}

	fLast := fPrev // F at the current state: after Update, F(x) can be below the last step's value
	loop := ctl.Start(10000, done)
	first := true
	for loop.Next() {
		// Algorithm 1: closed-form updates (EM, fixed points) first, then the gradient at the new values.
		if upd != nil && !(first && !resumed) {
			if err := upd.Update(x); err != nil {
				loop.Fail(err)
				break
			}
		}
		var F float64
		if first && !resumed {
			F = fPrev // gradient already computed at the start
		} else {
			F = obj.Grad(g, x)
			res.GEvals++
		}
		first = false
		if math.IsNaN(F) || math.IsInf(F, 0) || !finiteVec(g) {
			loop.Finish(run.NotFinite)
			break
		}
		fLast = F
		if s.Method.riemannian() {
			obj.NatGrad(gt, g, x)
		} else {
			copy(gt, g)
		}
		gn := dot(g, gt)
		var restart, ok bool
		var alpha, fNew, beta float64
		if s.Method == Old {
			if gn == 0 {
				loop.Report(o.record(F, gn, 0, 0))
				res.ConvergedBy = Stationary
				loop.Finish(run.Converged)
				break
			}
			alpha = 1
			if fNew, ok = o.oldStep(x, gt, p, pPrev, mult, havePrev, F); !ok {
				// No decrease even with every multiplier shrunk: converged to working precision.
				loop.Report(o.record(F, gn, 0, 0))
				res.ConvergedBy = NoDecrease
				loop.Finish(run.Converged)
				break
			}
		} else {
			restart = !havePrev || !s.Method.conjugate() || (every > 0 && sinceReset >= every)
			if !restart {
				c := dot(g, gtPrev)
				switch s.Beta {
				case PolakRibiere:
					beta = (gn - c) / gnPrev
				case PolakRibierePlus:
					beta = math.Max((gn-c)/gnPrev, 0)
				case FletcherReeves:
					beta = gn / gnPrev
				case HestenesStiefel:
					beta = (gn - c) / (dot(g, pPrev) - dot(gPrev, pPrev))
				}
				if s.PowellBeale > 0 && PowellBealeFires(c, gn, s.PowellBeale) {
					restart = true
				}
				if math.IsNaN(beta) || math.IsInf(beta, 0) {
					restart = true
				}
			}
			if restart {
				beta = 0
			}
			dir := func(beta float64) float64 {
				if s.Method == GD {
					for i := range p {
						p[i] = -g[i]
					}
				} else {
					for i := range p {
						p[i] = -gt[i] + beta*pPrev[i]
					}
				}
				return dot(g, p)
			}
			d0 := dir(beta)
			if beta != 0 && !(d0 < 0) { // descent safeguard (notes §7.8)
				beta, restart = 0, true
				d0 = dir(0)
			}
			if restart && s.Method.conjugate() {
				res.Restarts++
				sinceReset = 0
			}
			if !(d0 < 0) || gn == 0 {
				// Stationary to working precision.
				loop.Report(o.record(F, gn, 0, beta))
				res.ConvergedBy = Stationary
				loop.Finish(run.Converged)
				break
			}
			// Trial step (notes §3.4 step 2).
			var a0 float64
			switch {
			case s.Method.riemannian() && (restart && s.Method == RCG || alphaPrev == 0):
				a0 = 1
			case s.Method.riemannian():
				a0 = math.Min(math.Max(alphaPrev, o.ls.MinAlpha), o.ls.MaxAlpha)
			case alphaPrev == 0:
				a0 = 1 / math.Sqrt(dot(g, g))
			default:
				a0 = alphaPrev
			}
			alpha, fNew, ok = o.search(x, p, F, d0, a0, beta == 0)
			if !ok && beta != 0 {
				// Revert and reset: the conjugate direction failed, try the (natural) gradient.
				beta = 0
				d0 = dir(0)
				res.Restarts++
				sinceReset = 0
				if s.Method.riemannian() {
					a0 = 1
				}
				alpha, fNew, ok = o.search(x, p, F, d0, a0, true)
			}
			if !ok {
				// No decrease along the steepest (natural) direction: converged to working precision.
				loop.Report(o.record(F, gn, 0, beta))
				res.ConvergedBy = NoDecrease
				loop.Finish(run.Converged)
				break
			}
		}
		o.step(x, x, p, alpha)
		res.F = fNew
		sinceReset++
		copy(gPrev, g)
		copy(gtPrev, gt)
		copy(pPrev, p)
		gnPrev, alphaPrev, havePrev = gn, alpha, true
		if math.Abs(fPrev-fNew) < s.Tol {
			calm++
		} else {
			calm = 0
		}
		fPrev, fLast = fNew, fNew
		loop.Report(o.record(fNew, gn, alpha, beta))
		if s.UseTarget && fNew <= s.Target {
			res.ConvergedBy = TargetReached
			loop.Finish(run.Converged)
		} else if calm >= patience {
			res.ConvergedBy = Tolerance
			loop.Finish(run.Converged)
		}
		if loop.CheckpointDue() {
			c := checkpoint{Method: int(s.Method), X: x, P: pPrev, GPrev: gPrev, GtPrev: gtPrev, GnPrev: gnPrev,
				Alpha: alphaPrev, FPrev: fPrev, SinceReset: sinceReset, Calm: calm, Iter: loop.Iter(),
				FEvals: res.FEvals, GEvals: res.GEvals, Rejected: res.Rejected, Restarts: res.Restarts,
				HavePrev: havePrev, Mult: mult}
			if stf != nil {
				c.ObjState = stf.State()
			}
			if err := run.SaveCheckpoint(ctl.CheckpointPath, checkpointMethod, checkpointVersion, c); err != nil {
				loop.Fail(err)
			}
		}
	}
	res.Result = loop.Result()
	if res.Reason != run.Converged { // the first stop reason wins (run.Loop.Finish)
		res.ConvergedBy = NotConverged
	}
	res.X = x
	res.F = fLast
	return res, res.Err
}

func (o *optimizer) record(F, gn, alpha, beta float64) run.Record {
	return run.Record{Objective: -F, Smoothed: math.NaN(), GradNorm: math.Sqrt(math.Max(gn, 0)), Step: alpha,
		Extra: map[string]float64{"F": F, "beta": beta, "f_evals": float64(o.res.FEvals),
			"g_evals": float64(o.res.GEvals), "rejected": float64(o.res.Rejected), "restarts": float64(o.res.Restarts)}}
}

// oldStep takes one step of the Old heuristic (see Old) from x, where F(x) = F0 and gt is the natural gradient:
// each multiplier is scaled by OldUp when −g̃_i has the sign of the previous step pPrev_i and by OldDown when the
// sign flips (each then clipped to [MinAlpha, MaxAlpha]), then p = −mult ⊙ g̃ is tried; on an increase of F all
// multipliers shrink by Backtrack and it is tried again, until p no longer changes x. It returns F(x + p), or ok =
// false when every trial that moved x raised F (at most oldMaxHalvings + 1 trials).
func (o *optimizer) oldStep(x, gt, p, pPrev, mult []float64, havePrev bool, F0 float64) (float64, bool) {
	ls := o.ls
	if havePrev {
		for i, gi := range gt {
			m := mult[i]
			switch c := gi * pPrev[i]; {
			case c < 0: // the step −g̃_i repeats the previous step's sign
				m *= ls.OldUp
			case c > 0:
				m *= ls.OldDown
			}
			// Backtracking may have left m below MinAlpha; each step starts from [MinAlpha, MaxAlpha] again.
			mult[i] = math.Min(math.Max(m, ls.MinAlpha), ls.MaxAlpha)
		}
	}
	for try := 0; ; try++ {
		for i, gi := range gt {
			p[i] = -mult[i] * gi
		}
		f := o.eval(x, p, 1)
		// A step that no longer moves x ends the run even where its F, being F(x), passes the test.
		if !moved(o.xt, x) {
			return 0, false
		}
		if f <= F0 {
			return f, true
		}
		if try == oldMaxHalvings {
			return 0, false
		}
		for i := range mult {
			mult[i] *= ls.Backtrack
		}
	}
}

// oldMaxHalvings bounds Old's backtracking; it normally ends earlier, when the step no longer changes x.
const oldMaxHalvings = 60

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
