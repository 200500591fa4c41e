package rcg

import (
	"math"

	"github.com/geovb/geovb/algos/run"
)

// conjugateStep is an iteration of RCG, CG, RG or GD after the gradient: β and restarts, the direction with the
// descent safeguard, the step rule from α₀, and where a conjugate direction failed, the retry along −g̃.
func (c *core) conjugateStep() error {
	if err := c.chooseBeta(); err != nil {
		return err
	}
	if err := c.direction(); err != nil {
		return err
	}
	safeguard := false
	for i := range c.n {
		if r := c.st[i]; r.beta != 0 && !(c.d0[i] < 0) { // descent safeguard: p_{k−1}, g̃_{k−1} came from G_{k−1}
			r.beta, r.restart, safeguard = 0, true, true
		}
	}
	if safeguard {
		if err := c.direction(); err != nil {
			return err
		}
	}
	if err := c.startSearches(); err != nil {
		return err
	}
	if err := c.lineSearch(); err != nil {
		return err
	}
	return c.retry()
}

// chooseBeta sets each run's β and restart: a reset on the first iteration, for the non-conjugate methods and every
// RestartEvery iterations; else β of Settings.Beta in the cheap form (G_k g̃_k = g_k), reset by Powell–Beale (7) or a β
// that is not finite.
func (c *core) chooseBeta() error {
	m := c.s.Method
	need := false
	for i := range c.n {
		r := c.st[i]
		r.restart = !r.havePrev || !m.conjugate() || (c.every > 0 && r.sinceReset >= c.every)
		r.beta = 0
		need = need || !r.restart
	}
	if !need {
		return nil
	}
	if err := c.e.dots(c.cross, vG, vGtPrev, c.n); err != nil {
		return err
	}
	if c.s.Beta == HestenesStiefel {
		if err := c.e.dots(c.gp, vG, vPPrev, c.n); err != nil {
			return err
		}
		if err := c.e.dots(c.gpp, vGPrev, vPPrev, c.n); err != nil {
			return err
		}
	}
	for i := range c.n {
		r := c.st[i]
		if r.restart {
			continue
		}
		cr := c.cross[i]
		switch c.s.Beta {
		case PolakRibiere:
			r.beta = (r.gn - cr) / r.gnPrev
		case PolakRibierePlus:
			r.beta = math.Max((r.gn-cr)/r.gnPrev, 0)
		case FletcherReeves:
			r.beta = r.gn / r.gnPrev
		case HestenesStiefel:
			r.beta = (r.gn - cr) / (c.gp[i] - c.gpp[i])
		}
		if c.s.PowellBeale > 0 && PowellBealeFires(cr, r.gn, c.s.PowellBeale) {
			r.restart = true
		}
		if math.IsNaN(r.beta) || math.IsInf(r.beta, 0) {
			r.restart = true
		}
		if r.restart {
			r.beta = 0
		}
	}
	return nil
}

// direction writes p = −g̃ + βp_prev with each run's β and gᵀp into d0.
func (c *core) direction() error {
	for i := range c.n {
		c.beta[i] = c.st[i].beta
	}
	return c.e.direction(c.n, c.beta, c.d0)
}

// startSearches counts the restarts, retires the runs that are stationary to working precision (gᵀg̃ = 0 or no
// descent direction) and starts the others' searches from α₀.
func (c *core) startSearches() error {
	m := c.s.Method
	for i := c.n - 1; i >= 0; i-- {
		r := c.st[i]
		r.d0 = c.d0[i]
		if r.restart && m.conjugate() {
			r.res.Restarts++
			r.sinceReset = 0
		}
		if !(r.d0 < 0) || r.gn == 0 {
			c.report(r, r.f, r.gn, 0, r.beta)
			if err := c.retire(i, run.Converged, Stationary); err != nil {
				return err
			}
			continue
		}
		switch {
		case m.riemannian() && (r.restart && m == RCG || r.alphaPrev == 0):
			r.a0 = 1
		case m.riemannian():
			r.a0 = math.Min(math.Max(r.alphaPrev, c.ls.MinAlpha), c.ls.MaxAlpha)
		case r.alphaPrev == 0:
			r.a0 = 1 / math.Sqrt(c.e.sqNormG(i))
		default:
			r.a0 = r.alphaPrev
		}
		r.search.start(r.f, r.d0, r.a0, c.s.Search == Unit, r.beta == 0)
	}
	return nil
}

// retry reverts and resets where the conjugate direction failed: the search along −g̃ (from α₀ = 1 if Riemannian).
func (c *core) retry() error {
	any := false
	for i := range c.n {
		r := c.st[i]
		r.retry = !r.search.ok && r.beta != 0
		if r.retry {
			r.beta, any = 0, true
		}
	}
	if !any {
		return nil
	}
	if err := c.direction(); err != nil {
		return err
	}
	for i := range c.n {
		if r := c.st[i]; r.retry {
			r.d0 = c.d0[i]
			r.res.Restarts++
			r.sinceReset = 0
			if c.s.Method.riemannian() {
				r.a0 = 1
			}
			r.search.start(r.f, r.d0, r.a0, c.s.Search == Unit, true)
		}
	}
	return c.lineSearch()
}

// oldStep is an iteration of Old after the gradient for every unfinished run: a run with g̃ = 0 stops (Stationary);
// the others scale their multipliers by the signs of g̃ and the previous step (×OldUp on a repeat, ×OldDown on a
// flip, clipped to [MinAlpha, MaxAlpha]), then try p = −mult ⊙ g̃ in rounds over the runs still trying, each
// shrinking its multipliers ×Backtrack after an increase of F, until F does not rise (search.ok, α = 1) or the step
// no longer moves x or oldMaxHalvings shrinkings were tried (not ok).
func (c *core) oldStep() error {
	for i := c.n - 1; i >= 0; i-- {
		if r := c.st[i]; r.gn == 0 {
			c.report(r, r.f, r.gn, 0, 0)
			if err := c.retire(i, run.Converged, Stationary); err != nil {
				return err
			}
		}
	}
	if c.n == 0 {
		return nil
	}
	gts, pPrevs, err := c.e.hostRows(c.n)
	if err != nil {
		return err
	}
	ls := c.ls
	for i := range c.n {
		r := c.st[i]
		r.beta = 0
		r.oldG = append(r.oldG[:0], gts[i]...)
		if r.havePrev {
			for k, gk := range r.oldG {
				m := r.mult[k]
				switch cr := gk * pPrevs[i][k]; {
				case cr < 0: // the step −g̃_k repeats the previous step's sign
					m *= ls.OldUp
				case cr > 0:
					m *= ls.OldDown
				}
				// Backtracking may have left m below MinAlpha; each step starts from [MinAlpha, MaxAlpha] again.
				r.mult[k] = math.Min(math.Max(m, ls.MinAlpha), ls.MaxAlpha)
			}
		}
		r.try = 0
		r.search = lsState{stage: lsFirst, F0: r.f, bestF: r.f, trial: 1}
		if err := c.setOldP(i); err != nil {
			return err
		}
	}
	for {
		m, err := c.front()
		if err != nil || m == 0 {
			return err
		}
		if err := c.e.unmoved(m, c.unmoved); err != nil {
			return err
		}
		for i := range m {
			r := c.st[i]
			f := c.trialF(i)
			switch {
			case c.unmoved[i]: // x not moved: the end, whatever F(x)
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
				if err := c.setOldP(i); err != nil {
					return err
				}
			}
		}
	}
}

// setOldP writes p = −mult ⊙ g̃ of the run in slot i.
func (c *core) setOldP(i int) error {
	r := c.st[i]
	for k, gk := range r.oldG {
		c.row[k] = -r.mult[k] * gk
	}
	return c.e.setP(i, c.row)
}

// oldMaxHalvings bounds Old's backtracking; it normally ends earlier, when the step no longer changes x.
const oldMaxHalvings = 60
