// Package rcg is approximate Riemannian conjugate gradient for fixed-form variational Bayes (paper 004, Honkela
// et al. 2010): nonlinear conjugate gradient on the mean parameters in which the gradient is the natural gradient
// G⁻¹∇F (eq. 4), inner products use the Fisher metric of q through the cheap identities that follow from
// G_k g̃_k = g_k (⟨g̃_k, g̃_l⟩_k = g_kᵀg̃_l, no product with G), steps follow straight lines and nothing is transported (§3.2).
//
// The same driver runs the comparators of the paper: plain Riemannian gradient (RG), Euclidean conjugate gradient
// (CG) and gradient descent (GD). Covariances (fixed point, eq. 13) and conjugate-exponential parts (VB-EM) are
// updated between steps through the optional Updater interface; a model that wants VB-EM inside the line search
// (the mixture of Gaussians, App. B.3) folds it into Value and Grad (a collapsed objective).
//
// Minimize and MinimizeBatch share one core: the per-run decisions are written once, the vector work is an
// engine's — plain float64 Go loops on host slices for Minimize (a batch of one), batched backend calls for the B
// problems of MinimizeBatch (a BatchObjective such as mog.Batch). The models own their arithmetic. See docs/rcg.md.
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
	// x, so an implementation may reuse what Grad cached (e.g. the φ of the softmax metric, §2.2 and App. B).
	NatGrad(dst, g, x []float64)
}

// Updater is implemented by objectives with parameters updated in closed form between gradient steps: fixed-point
// variances (eq. 13) and VB-EM updates of conjugate parts (Algorithm 1). Update must not change x's length and
// never runs inside a line search (which would compare F values of different models).
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
	// Old is the heuristic of Valpola & Karhunen (2002), the "Old" baseline of Figs. 9–10: the unit
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

// β formulas, all in the cheap form (G_k g̃_k = g_k) (g is the Euclidean gradient, g̃ the natural one).
const (
	PolakRibiere     Beta = iota // (g_kᵀg̃_k − g_kᵀg̃_{k−1}) / g_{k−1}ᵀg̃_{k−1}, eq. (6); β < 0 allowed (paper)
	FletcherReeves               // g_kᵀg̃_k / g_{k−1}ᵀg̃_{k−1}
	HestenesStiefel              // (g_kᵀg̃_k − g_kᵀg̃_{k−1}) / (g_kᵀp − g_{k−1}ᵀp), with G_kg̃_{k−1} ≈ g_{k−1}
	PolakRibierePlus             // max(PR, 0)
)

// Search picks the step rule.
type Search int

// Step rules.
const (
	// Parabolic is the line search (the paper asks only for a cheap, early-stopping one, §3): a trial step α₀, one parabola through F(0), F'(0), F(α₀)
	// clamped to [Shrink·α₀, Grow·α₀], expansion ×2 (at most MaxExpand) under negative curvature, Armijo
	// acceptance with C1, backtracking ×Backtrack (at most MaxBacktrack), then a restart along −g̃.
	Parabolic Search = iota
	// Unit takes α = 1. On an increase of F it reverts and resets the direction
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
	// (Valpola & Karhunen 2002).
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
		return run.ConfigErrorf("rcg", "LS."+name, "%v, want %s", v, want)
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
	case !(l.MinAlpha > 0 && l.MinAlpha <= l.MaxAlpha):
		return run.ConfigErrorf("rcg", "LS.MinAlpha", "MinAlpha = %v, MaxAlpha = %v, want 0 < MinAlpha ≤ MaxAlpha < ∞",
			l.MinAlpha, l.MaxAlpha)
	case math.IsInf(l.MaxAlpha, 1):
		return bad("MaxAlpha", l.MaxAlpha, "MinAlpha ≤ MaxAlpha < ∞")
	case !(l.OldUp >= 1 && !math.IsInf(l.OldUp, 1)):
		return bad("OldUp", l.OldUp, "1 ≤ OldUp < ∞")
	case !(l.OldDown > 0 && l.OldDown <= 1):
		return bad("OldDown", l.OldDown, "0 < OldDown ≤ 1")
	}
	return nil
}

// validate reports the first setting of s that cannot work, as a *run.ConfigError naming its field: an unknown
// method, β or search, a NaN or negative tolerance or rule, a bad line search, a bad run control.
func (s Settings) validate() error {
	bad := func(field, format string, args ...any) error { return run.ConfigErrorf("rcg", field, format, args...) }
	switch {
	case s.Method < RCG || s.Method > Old:
		return bad("Method", "unknown method %d", int(s.Method))
	case s.Beta < PolakRibiere || s.Beta > PolakRibierePlus:
		return bad("Beta", "unknown formula %d", int(s.Beta))
	case s.Search != Parabolic && s.Search != Unit:
		return bad("Search", "unknown step rule %d", int(s.Search))
	case !(s.PowellBeale >= 0):
		return bad("PowellBeale", "%v, want ≥ 0", s.PowellBeale)
	case s.RestartEvery < SqrtN:
		return bad("RestartEvery", "%d, want ≥ 0 or SqrtN", s.RestartEvery)
	case !(s.Tol >= 0):
		return bad("Tol", "%v, want ≥ 0", s.Tol)
	case s.Patience < 0:
		return bad("Patience", "%d, want ≥ 0", s.Patience)
	case s.UseTarget && math.IsNaN(s.Target):
		return bad("Target", "NaN with UseTarget")
	}
	if err := s.Control.Validate(); err != nil {
		return err
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
	// Control is the run control: the iteration cap per run (0: 10000), the recorder (Record.Run names the run
	// of a batch), checkpoints every Control.CheckpointEvery iterations (MinimizeBatch: rounds) and
	// Control.Resume, which continues from Control.CheckpointPath (the file must exist). Its Ctx is replaced by
	// the context given to Minimize or MinimizeBatch when that is not nil.
	Control run.Control
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

// Errors. Bad settings (and a starting point of the wrong length) are *run.ConfigError values wrapping
// run.ErrConfig; a checkpoint that does not fit the run wraps run.ErrCheckpoint. ErrBadInput is the cause of the
// errors about data: a starting point that is not finite, an objective's state that does not fit.
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
