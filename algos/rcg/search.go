package rcg

import "math"

// lsState is the step rule (Settings.Search, with LineSearch.Refine) as a state machine: start begins a search,
// trial is the step at which it wants F next, feed takes that F. Minimize and MinimizeBatch drive it alike, one
// evaluation per round; the batch evaluates the trial points of all its runs still searching in one Value call.
//
// Parabolic: a trial step α₀, one parabola through F(0), F'(0), F(α₀) clamped to [Shrink·α₀,
// Grow·α₀], expansion ×2 (at most MaxExpand) under negative curvature, Armijo acceptance with C1, then backtracking
// ×Backtrack (at most MaxBacktrack, or MaxBacktrackSteepest along −g̃, past MaxBacktrack only to a strictly lower
// F), and on acceptance up to Refine unclamped parabolic refits through F(0), F'(0) and the best point, each kept
// only if it lowers F. Unit: α = 1, and if F rises, backtracking only along −g̃ (steepest).
type lsState struct {
	stage                  int // lsIdle, lsFirst, lsParab, lsExpand, lsBack, lsRefine, lsDone
	F0, d0, a0             float64
	bestA, bestF, a, trial float64
	k                      int // expansions or backtracks so far
	refits                 int // refits kept so far (lsRefine)
	ok                     bool
	unit, steepest         bool
}

const (
	lsIdle = iota
	lsFirst
	lsParab
	lsExpand
	lsBack
	lsRefine
	lsDone
)

// searching reports whether the search wants F at its trial step.
func (l *lsState) searching() bool { return l.stage != lsIdle && l.stage != lsDone }

// start begins a search from F0 with slope d0: the parabolic search from α₀ = a0, or with unit the unit rule (α = 1,
// a0 unused); steepest says the direction is −g̃ (or −g).
func (l *lsState) start(F0, d0, a0 float64, unit, steepest bool) {
	if unit {
		a0 = 1
	}
	*l = lsState{stage: lsFirst, F0: F0, d0: d0, a0: a0, bestF: F0, trial: a0, unit: unit, steepest: steepest}
}

func (l *lsState) armijo(a, fa float64, ls LineSearch) bool { return fa <= l.F0+ls.C1*a*l.d0 }

// feed takes F at the current trial step (+Inf for a rejected point) and moves to the next trial or to lsDone.
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
		l.decide(ls)
	case lsParab:
		if f < l.bestF {
			l.bestA, l.bestF = l.trial, f
		}
		l.decide(ls)
	case lsExpand:
		if f >= l.bestF {
			l.decide(ls)
			return
		}
		l.bestA, l.bestF = l.a, f
		if l.k++; l.k < ls.MaxExpand {
			l.a *= 2
			l.trial = l.a
			return
		}
		l.decide(ls)
	case lsBack:
		if l.armijo(l.a, f, ls) && (l.k <= ls.MaxBacktrack || f < l.F0) {
			l.bestF = f
			l.accept(ls)
			return
		}
		l.backtrack(ls)
	case lsRefine:
		if f >= l.bestF {
			l.stage = lsDone
			return
		}
		l.a, l.bestF = l.trial, f
		l.refits++
		l.refit(ls)
	}
}

// decide ends the first trials of the parabolic search: the best point if it passes Armijo, else backtracking from
// min(α₀, best α).
func (l *lsState) decide(ls LineSearch) {
	if l.bestA > 0 && l.armijo(l.bestA, l.bestF, ls) {
		l.a = l.bestA
		l.accept(ls)
		return
	}
	l.a = l.a0
	if l.bestA > 0 {
		l.a = math.Min(l.a, l.bestA)
	}
	l.k = 0
	l.backtrack(ls)
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

// accept takes the parabolic search's point (a, bestF) and refines it (LineSearch.Refine).
func (l *lsState) accept(ls LineSearch) {
	l.ok, l.refits = true, 0
	l.refit(ls)
}

// refit asks for the minimiser of the parabola through F(0), F'(0) and (a, bestF), unless Refine refits were kept,
// the parabola has no minimum or its minimiser is a to working precision.
func (l *lsState) refit(ls LineSearch) {
	l.stage = lsDone
	if l.refits >= ls.Refine {
		return
	}
	curv := l.bestF - l.F0 - l.d0*l.a
	if curv <= 0 {
		return
	}
	as := -l.d0 * l.a * l.a / (2 * curv)
	if math.Abs(as-l.a) <= 1e-14*l.a {
		return
	}
	l.trial, l.stage = as, lsRefine
}
