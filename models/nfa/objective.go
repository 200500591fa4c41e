package nfa

import (
	"fmt"
	"math"
	"slices"

	"github.com/geovb/geovb/models/fisher"
)

// Value returns F(x) (rcg.Objective).
func (m *Model) Value(x []float64) float64 { return m.eval(x, nil) }

// Grad writes ∂F/∂x into g and returns F (rcg.Objective). After Update it takes the gradient Update's last
// evaluation left at the same point and state, which is the same bit for bit.
func (m *Model) Grad(g, x []float64) float64 {
	F := m.last.F
	if !m.last.grad || !m.last.at(x, m.keyParts()) {
		F = m.eval(x, m.grad)
	}
	copy(g, m.grad.Mean)
	return F
}

// NatGrad writes G⁻¹g into dst (rcg.Objective): the Fisher metric of the means of a Gaussian q is its precision
// (eq. 18), so the natural gradient is Σg (35): w̃ ⊙ g for the diagonal weights and NFA sources, and the two
// linear scans of one Gaussian Markov chain per state component for the NSSM (eq. 20).
func (m *Model) NatGrad(dst, g, x []float64) {
	d, T := m.Cfg.D, m.T
	n := T * d
	if m.Cfg.Dynamic {
		col, br, ri := make([]float64, T), make([]float64, T), make([]float64, T)
		for i := range d {
			for t := range T {
				col[t], br[t], ri[t] = g[t*d+i], m.Breve[t*d+i], m.Ring[t*d+i]
			}
			fisher.ChainNatGrad(col, col, br, ri)
			for t := range T {
				dst[t*d+i] = col[t]
			}
		}
	} else {
		fisher.DiagNatGrad(dst[:n], m.SVar, g[:n])
	}
	nf := m.f.size()
	fisher.DiagNatGrad(dst[n:n+nf], m.WVarF, g[n:n+nf])
	if m.Cfg.Dynamic {
		fisher.DiagNatGrad(dst[n+nf:], m.WVarG, g[n+nf:])
	}
}

// Update runs the between-step updates (App. C.4, Table 2) in the order hyperparameters → fixed-point variances
// (rcg.Updater): the noise log-stds by the VB-EM-type Newton scheme (after Config.HyperDelay calls also the ARD
// log-stds and the hierarchy's nodes), then the variances by the fixed point (13) (all at once from one gradient). The fixed point is exact only where C_p is linear in the variances; through the
// Taylor/GH moments it is not, so [I] the update is damped: the first of λ = 1, ½, ¼, ⅛ with
// F(θ̃_old + λ(θ̃_fp − θ̃_old)) ≤ F(θ̃_old) is kept, else the old variances (FixedPointRejected counts those).
func (m *Model) Update(x []float64) error {
	saved := m.State()
	defer func() { m.updates++ }() // after every SetState below, which restore the count with the rest
	// F0 and the squared-error sums obsE, stE, phiE of the last evaluation, repeated only if that was elsewhere.
	F0 := m.last.F
	if !m.last.at(x, m.keyParts()) {
		F0 = m.eval(x, nil)
	}
	m.updateHyper(x, m.hyperDue())
	F1 := m.eval(x, m.grad)
	if !(F1 <= F0+1e-12*math.Abs(F0)) || math.IsNaN(F1) {
		m.SetState(saved)
		m.fpRejected++
		F1 = m.eval(x, m.grad)
	}
	old := m.State()
	m.fixedPoint(m.grad)
	target := m.State()
	cur := make([]float64, len(old))
	for lam := 1.0; lam > 0.1; lam /= 2 {
		for i := range cur {
			cur[i] = old[i] + lam*(target[i]-old[i])
		}
		m.SetState(cur)
		// The full step is nearly always kept, and the optimiser's next call is Grad at x: evaluate the gradient
		// with F, for Grad to take (about one evaluation of F fewer per iteration).
		var gr *Grad
		if lam == 1 {
			gr = m.grad
		}
		if F2 := m.eval(x, gr); F2 <= F1 {
			return nil
		}
	}
	m.SetState(old)
	m.fpRejected++
	return nil
}

// FixedPointRejected returns how many between-step updates were reverted because F increased.
func (m *Model) FixedPointRejected() int { return m.fpRejected }

// fixedPoint applies eq. (13) to every variance from the gradient gr taken at the current state: for a diagonal
// variance θ̃ ← 1/(2∂C_p/∂θ̃) (eq. 13); for the chains s̊_t = 1/(2κ_t) and s̆_t from ∂F/∂s̆_t = 0 with κ_t the
// total derivative of C_p with respect to the marginal variance s̃_t, accumulated backwards. A non-positive derivative keeps
// the old value (the Taylor moments can make it ≤ 0).
func (m *Model) fixedPoint(gr *Grad) {
	diag := func(v, g []float64) {
		for i := range v {
			if c := g[i] + 0.5/v[i]; c > 0 && !math.IsInf(c, 0) {
				v[i] = math.Max(0.5/c, minVar)
			}
		}
	}
	diag(m.WVarF, gr.WVarF)
	if !m.Cfg.Dynamic {
		diag(m.SVar, gr.SVar)
		return
	}
	diag(m.WVarG, gr.WVarG)
	// Chains: a backward sweep, exact for a linear-Gaussian chain (the backward information recursion). With a_t the
	// partial ∂C_p/∂s̃_t without the lag-1 term of step t+1, and b_t = ∂C_p/∂Cov(s_t, s_{t−1}) (the direct term of eq.
	// 103 over s̃_{t−1}), the total derivative is κ_t = a_t + b_{t+1}s̆_{t+1} + s̆_{t+1}²κ_{t+1} with the already updated
	// s̆_{t+1}, κ_{t+1}; then s̊_t = 1/(2κ_t) and s̆_t = −b_t/(2κ_t) (∂F/∂s̆_t = 0).
	d, T := m.Cfg.D, m.T
	for i := range d {
		var kapN, bN, brOldN, brNewN float64
		for t := T - 1; t >= 0; t-- {
			j := t*d + i
			kap := m.gsTil[j]
			if t+1 < T {
				kap += bN*(brNewN-brOldN) + brNewN*brNewN*kapN
			}
			b := 0.0
			if t > 0 {
				b = m.direct[j] / m.sTil[j-d]
			}
			brOldN, brNewN, bN, kapN = m.Breve[j], m.Breve[j], b, kap
			if !(kap > 0) || math.IsInf(kap, 0) {
				continue
			}
			m.Ring[j] = math.Max(0.5/kap, minVar)
			if t > 0 {
				m.Breve[j] = -b / (2 * kap)
				brNewN = m.Breve[j]
			}
		}
	}
}

// hyperDue reports whether the ARD log-stds and the hierarchy's nodes adapt in this update (Config.HyperDelay).
func (m *Model) hyperDue() bool {
	delay := m.Cfg.HyperDelay
	if delay == 0 && m.Cfg.Dynamic {
		delay = DefaultHyperDelay
	}
	return m.updates >= delay
}

// updateHyper sets q(v) of every noise log-std from the squared-error sums of the last evaluation,
// and when all is set those of the ARD log-stds, then (Config.Hierarchical) the hierarchy's nodes from their
// children at means x.
func (m *Model) updateHyper(x []float64, all bool) {
	for i := range m.VnMean {
		pr, _ := m.childPrior(srcVn, i, vague)
		newtonLogStd(m.obsE[i], float64(m.T), pr, &m.VnMean[i], &m.VnVar[i])
	}
	if m.Cfg.Dynamic {
		for i := range m.VmMean {
			pr, _ := m.childPrior(srcVm, i, vague)
			newtonLogStd(m.stE[i], float64(m.T-1), pr, &m.VmMean[i], &m.VmVar[i])
		}
	}
	if !all {
		return
	}
	for k := range m.VPhiMean { // ARD: the children of v_Φk are the weights of column k
		pr, _ := m.childPrior(srcPhi, k, vague)
		newtonLogStd(m.phiE[k], m.phiM[k], pr, &m.VPhiMean[k], &m.VPhiVar[k])
	}
	if m.groups != nil {
		m.updateTop(x)
	}
}

// newtonLogStd minimises over q(v) = N(v̄, ṽ) the cost of a log-std node with prior pr and M children whose squared
// errors sum to S: C(v̄, ṽ) = M v̄ + ½ S e^{2ṽ−2v̄} + ½[(v̄ − m)² + ṽ]ψ − ½ log ṽ, convex in v̄ (Newton)
// and with the fixed point ṽ = 1/(2S e^{2ṽ−2v̄} + ψ); jointly convex, so the stationary point is the minimum.
func newtonLogStd(S, M float64, pr prior, vm, vv *float64) {
	if !(S > 0) || math.IsInf(S, 0) {
		return
	}
	v, w := *vm, *vv
	for range 50 { // alternate v̄ (Newton) and ṽ (fixed point) to joint stationarity
		vOld := v
		a := S * math.Exp(2*w)
		v = 0.5 * math.Log(a/M) // minimiser without the prior, then Newton with it
		for i := range 100 {
			e := a * math.Exp(-2*v)
			step := (M - e + pr.psi*(v-pr.m)) / (2*e + pr.psi)
			if i >= 4 && math.Abs(step) <= 1e-15*math.Max(1, math.Abs(v)) {
				break // converged: four steps suffice under the vague prior; a tight prior far away takes more
			}
			v -= step
		}
		v = math.Max(v, -20) // e^{2ṽ−2v̄} overflows as v̄ → −∞
		for range 4 {
			w = 1 / (2*S*math.Exp(2*w-2*v) + pr.psi)
		}
		if math.Abs(v-vOld) < 1e-15*math.Max(1, math.Abs(v)) {
			break
		}
	}
	*vm, *vv = v, w
}

// State returns a copy of every posterior parameter except the means, and last the number of Update calls since
// Init (Config.HyperDelay) (rcg.Stateful).
func (m *Model) State() []float64 {
	var s []float64
	for _, v := range m.stateParts() {
		s = append(s, v...)
	}
	return append(s, float64(m.updates))
}

// SetState restores what State returned (rcg.Stateful).
func (m *Model) SetState(s []float64) error {
	n := 0
	for _, v := range m.stateParts() {
		n += len(v)
	}
	if len(s) != n+1 || !(s[n] >= 0 && s[n] == math.Trunc(s[n]) && s[n] <= math.MaxInt32) {
		return fmt.Errorf("%w: state of %d values, want %d ending in a count of updates", ErrBadInput, len(s), n+1)
	}
	m.updates = int(s[n])
	for _, v := range m.stateParts() {
		copy(v, s)
		s = s[len(v):]
	}
	return nil
}

// keyParts are what F depends on besides the means: the state and the data (X is exported, so it may change
// between evaluations).
func (m *Model) keyParts() [][]float64 { return append(m.stateParts(), m.X) }

func (m *Model) stateParts() [][]float64 {
	return slices.DeleteFunc([][]float64{m.SVar, m.Ring, m.Breve, m.WVarF, m.WVarG, m.VnMean, m.VnVar, m.VmMean, m.VmVar,
		m.VPhiMean, m.VPhiVar, m.TopMean, m.TopVar},
		func(v []float64) bool { return v == nil })
}
