package nfa

import "math"

// The hierarchical priors of eqs. 92–96, switched on by Config.Hierarchical. Each group is a set of
// children γ_i ~ N(m, e^{2v}) that share one mean node m and one log-std node v, both with q = N(mean, var) under the
// vague N(0, 100²) prior:
//   - the biases φ ∈ {a, b} of f and {c, d} of g: φ_i ~ N(m_φ, e^{2v_φ});
//   - the noise log-stds v_ν, ν ∈ {n, m}: v_νi ~ N(m_vν, e^{2v_vν});
//   - with ARD, the log-stds of the columns of each weight matrix Φ ∈ {B, C, D}: v_Φj ~ N(m_vΦ, e^{2v_vΦ}).
// The first-layer weights A of f keep the fixed N(0, 1) prior that fixes the scale of the sources.

// hsrc says where a group's children live.
type hsrc int

const (
	srcF   hsrc = iota // f weights: means in x, variances in WVarF
	srcG               // g weights: means in x, variances in WVarG
	srcVn              // VnMean, VnVar
	srcVm              // VmMean, VmVar
	srcPhi             // VPhiMean, VPhiVar
	nsrc
)

// hgroup is one group of the hierarchy: its children are elements lo … hi−1 of src.
type hgroup struct {
	name   string
	src    hsrc
	lo, hi int
}

// prior is a Gaussian prior N(m, e^{2v}) seen through q: m has mean m and variance mv, ψ = E e^{−2v} = e^{2ṽ−2v̄}, and
// c is the constant part ½log 2π + v̄ of eq. (101), which then reads E{−log p(γ)} = c + ½[(γ̄ − m)² + γ̃ + mv]ψ.
type prior struct{ m, mv, c, psi float64 }

// vague is the N(0, 100²) prior of the top-level hyperparameters.
var vague = prior{c: 0.5 * (log2pi - math.Log(hyperPrec)), psi: hyperPrec}

// cost returns E{−log p(γ)} under p for q(γ) = N(mean, vr) and the squared error E = (γ̄ − m)² + γ̃ + mv.
func (p prior) cost(mean, vr float64) (F, e float64) {
	d := mean - p.m
	e = d*d + vr + p.mv
	return p.c + 0.5*p.psi*e, e
}

// buildHierarchy lays out the groups of m's configuration and the group of each child.
func (m *Model) buildHierarchy() {
	bias := func(hidden, out string, src hsrc, l layer) {
		lo := l.hid * l.in // layer.split: A, a, B, b
		m.groups = append(m.groups, hgroup{hidden, src, lo, lo + l.hid})
		lo += l.hid + l.out*l.hid
		m.groups = append(m.groups, hgroup{out, src, lo, lo + l.out})
	}
	bias("a", "b", srcF, m.f)
	if m.Cfg.Dynamic {
		bias("c", "d", srcG, m.g)
	}
	m.groups = append(m.groups, hgroup{"v_n", srcVn, 0, m.P})
	if m.Cfg.Dynamic {
		m.groups = append(m.groups, hgroup{"v_m", srcVm, 0, m.Cfg.D})
	}
	if m.Cfg.ARD {
		n := m.f.hid
		m.groups = append(m.groups, hgroup{"v_B", srcPhi, 0, n})
		if m.Cfg.Dynamic {
			m.groups = append(m.groups, hgroup{"v_C", srcPhi, n, n + m.g.in}, hgroup{"v_D", srcPhi, n + m.g.in, n + m.g.in + m.g.hid})
		}
	}
	size := [nsrc]int{m.f.size(), m.gsize(), m.P, len(m.VmMean), len(m.VPhiMean)}
	for s := range m.hier {
		m.hier[s] = make([]int, size[s])
		for i := range m.hier[s] {
			m.hier[s][i] = -1
		}
	}
	for k, g := range m.groups {
		for i := g.lo; i < g.hi; i++ {
			m.hier[g.src][i] = k
		}
	}
	n := len(m.groups)
	m.TopMean, m.TopVar = make([]float64, 2*n), make([]float64, 2*n)
	m.topCnt, m.topDiff, m.topE = make([]float64, n), make([]float64, n), make([]float64, n)
	for k, g := range m.groups {
		m.topCnt[k] = float64(g.hi - g.lo)
	}
}

// GroupNames returns the names of the hierarchy's groups in the order of TopMean (Config.Hierarchical): group k has
// its mean node at TopMean[2k] and its log-std node at TopMean[2k+1].
func (m *Model) GroupNames() []string {
	var s []string
	for _, g := range m.groups {
		s = append(s, g.name)
	}
	return s
}

// topPrior returns the prior that group k gives its children, from the current q of its mean and log-std nodes.
func (m *Model) topPrior(k int) prior {
	return prior{m: m.TopMean[2*k], mv: m.TopVar[2*k], c: 0.5*log2pi + m.TopMean[2*k+1], psi: m.groupPsi(k)}
}

// groupPsi returns ψ = e^{2ṽ−2v̄} of group k's log-std node.
func (m *Model) groupPsi(k int) float64 { return math.Exp(2*m.TopVar[2*k+1] - 2*m.TopMean[2*k+1]) }

// childPrior returns the prior of element i of src and its group: the group's prior with Config.Hierarchical,
// else def (group −1).
func (m *Model) childPrior(src hsrc, i int, def prior) (prior, int) {
	if h := m.hier[src]; h != nil && h[i] >= 0 {
		return m.topPrior(h[i]), h[i]
	}
	return def, -1
}

// children returns the means and variances of group k's children at means x.
func (m *Model) children(k int, x []float64) (mean, vr []float64) {
	g := m.groups[k]
	_, wf, wg := m.split(x)
	switch g.src {
	case srcF:
		mean, vr = wf, m.WVarF
	case srcG:
		mean, vr = wg, m.WVarG
	case srcVn:
		mean, vr = m.VnMean, m.VnVar
	case srcVm:
		mean, vr = m.VmMean, m.VmVar
	default:
		mean, vr = m.VPhiMean, m.VPhiVar
	}
	return mean[g.lo:g.hi], vr[g.lo:g.hi]
}

// topTerms adds the top-level nodes' vague-prior costs and entropies to F and, when gr is not nil, writes their
// gradient from the children's sums Σ(γ̄ − m̄) and ΣE of the evaluation (eq. 101):
// ∂/∂m̄ = −ψΣ(γ̄ − m̄) + 10⁻⁴m̄, ∂/∂m̃ = ½Mψ + ½·10⁻⁴ − ½/m̃, ∂/∂v̄ = M − ψΣE + 10⁻⁴v̄, ∂/∂ṽ = ψΣE + ½·10⁻⁴ − ½/ṽ.
func (m *Model) topTerms(gr *Grad) float64 {
	var F float64
	for i := range m.TopMean {
		c, _ := vague.cost(m.TopMean[i], m.TopVar[i])
		F += c - 0.5*math.Log(2*math.Pi*math.E*m.TopVar[i])
	}
	if gr != nil {
		for k := range m.groups {
			psi := m.groupPsi(k)
			mm, mv, vm, vv := m.TopMean[2*k], m.TopVar[2*k], m.TopMean[2*k+1], m.TopVar[2*k+1]
			gr.TopMean[2*k] = -psi*m.topDiff[k] + hyperPrec*mm
			gr.TopVar[2*k] = 0.5*m.topCnt[k]*psi + 0.5*hyperPrec - 0.5/mv
			gr.TopMean[2*k+1] = m.topCnt[k] - psi*m.topE[k] + hyperPrec*vm
			gr.TopVar[2*k+1] = psi*m.topE[k] + 0.5*hyperPrec - 0.5/vv
		}
	}
	return F
}

// updateTop sets q of every group's mean node and then of its log-std node to their minimisers of F given the rest
// (App. C.4): m̃ = 1/(Mψ + 10⁻⁴), m̄ = m̃ψΣγ̄_i in closed form, then the log-std by the Newton scheme of
// newtonLogStd with S = Σ[(γ̄_i − m̄)² + γ̃_i + m̃].
func (m *Model) updateTop(x []float64) {
	for k := range m.groups {
		mean, vr := m.children(k, x)
		M := float64(len(mean))
		psi := m.groupPsi(k)
		var sum float64
		for _, g := range mean {
			sum += g
		}
		mv := 1 / (M*psi + hyperPrec)
		mm := mv * psi * sum
		var S float64
		for i, g := range mean {
			d := g - mm
			S += d*d + vr[i] + mv
		}
		m.TopMean[2*k], m.TopVar[2*k] = mm, mv
		newtonLogStd(S, M, vague, &m.TopMean[2*k+1], &m.TopVar[2*k+1])
	}
}

// initTop starts every group at the prior the model has without the hierarchy: biases N(0, 1) (m̄ = 0, v̄ = 0),
// noise and ARD log-stds the vague N(0, 100²) (m̄ = 0, v̄ = log 100), all node variances 1e-4.
func (m *Model) initTop() {
	for k, g := range m.groups {
		m.TopMean[2*k], m.TopMean[2*k+1] = 0, 0
		if g.src != srcF && g.src != srcG {
			m.TopMean[2*k+1] = math.Log(100)
		}
		m.TopVar[2*k], m.TopVar[2*k+1] = 1e-4, 1e-4
	}
}
