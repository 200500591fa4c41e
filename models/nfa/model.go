// Package nfa is nonlinear factor analysis (NFA, eq. 36, Table 3) and the nonlinear state-space model (NSSM,
// eqs. 87–91) of paper 004 (Honkela et al. 2010) with fixed-form Gaussian posteriors: diagonal for the weights,
// hyperparameters and the NFA sources, independent scalar Gaussian Markov chains for the NSSM states (eq. 20).
// Moments of the MLP outputs are propagated with the Taylor or the Gauss–Hermite rule (Honkela & Valpola 2005, which the paper
// cites for the NSSM). The free
// energy (eqs. 97–103) includes every constant; its gradient with respect to all means, variances and
// hyperparameters is hand-written reverse mode. The model is an rcg.Objective (Dim, Value, Grad, NatGrad, Update,
// State, SetState; it does not import algos/rcg, which adapts it) over the means (sources/states and
// weights); variances follow the fixed point (13) and the noise hyperparameters a VB-EM-type Newton update
// between steps (App. C.4, Table 2), and so do the ARD weight log-stds when Config.ARD is set and the top-level nodes of
// the hierarchical priors when Config.Hierarchical is (hierarchy.go). See docs/rcg.md for the deviations.
package nfa

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Config describes a model.
type Config struct {
	Dynamic bool    // NSSM (states follow s(t) = s(t−1) + g(s(t−1)) + noise) instead of NFA (i.i.d. sources)
	D       int     // source/state dimension d
	H       int     // hidden units of f
	HG      int     // hidden units of g (NSSM); 0 means H
	Moments Moments // Taylor or GaussHermite
	GHOrder int     // quadrature nodes for GaussHermite; 0 means 10
	// ARD gives the weights Φ ∈ {B, C, D} the priors Φ_ij ~ N(0, e^{2v_Φj}), one latent log-std per column j
	// (eqs. 92–96): the columns of B for f (its hidden units), of C (state components) and D (hidden
	// units) for g. Each v_Φj has q = N(v̄, ṽ) under the vague N(0, 100²) prior (or, with Hierarchical, under
	// N(m_vΦ, e^{2v_vΦ}) shared by the columns of Φ) and is updated between steps like the noise log-stds. Without
	// ARD every weight has the N(0, 1) prior.
	ARD bool
	// Hierarchical gives the biases, the noise log-stds and (with ARD) the ARD log-stds the hierarchical priors of
	// eqs. 92–96: the members of each group share a latent mean and log-std, whose posteriors are updated between
	// steps (hierarchy.go). Without it those priors are fixed: N(0, 1) for the biases, N(0, 100²) for the log-stds.
	Hierarchical bool
	// HyperDelay is the number of between-step updates (Update calls after Init, one per iteration of every rcg
	// method) during which the ARD log-stds and the hierarchy's nodes stay at their initial values; the noise
	// log-stds adapt from the start. [I] Without it RCG's fast first steps can prune the NSSM's dynamics early:
	// q(v_Φ) follows weights still fitted to the initial states and switches hidden units of g off, a poor local
	// optimum (docs/rcg.md, "ARD pruning"); the NLFA tradition holds hyperparameters fixed for the first 100 sweeps.
	// 0 takes DefaultHyperDelay for the NSSM and none for NFA (where, in the one comparison run, the delay left
	// RCG's F higher), a negative value none. Only ARD and Hierarchical models are affected.
	HyperDelay int
}

// DefaultHyperDelay is the HyperDelay a zero Config field takes for the NSSM.
const DefaultHyperDelay = 100

const (
	log2pi    = 1.8378770664093453 // log 2π
	hyperPrec = 1e-4               // precision of the vague N(0, 100²) prior of the top-level hyperparameters
	minVar    = 1e-12              // floor of fixed-point variances (they must stay > 0)
)

// ErrBadInput reports unusable data or configuration.
var ErrBadInput = errors.New("nfa: bad input")

// Model holds the data, the configuration and the posterior parameters other than the means, which live in the
// optimiser's vector x = (s̄ (T×d, row-major), f weights (A, a, B, b), g weights (C, c, D, d)).
type Model struct {
	Cfg  Config
	X    []float64 // T×p observations, row-major
	T, P int

	f, g   layer
	chunks []*chunk    // blocks of time steps of eval (steps.go)
	fw, gw *mlpWeights // the weights of f and g for the evaluation under way, shared by the blocks

	// Posterior state (everything but the means).
	SVar          []float64 // NFA: source variances s̃ (T×d)
	Ring, Breve   []float64 // NSSM: chain parameters s̊, s̆ (T×d; Breve[0..d) unused)
	WVarF, WVarG  []float64 // weight variances of f and g
	VnMean, VnVar []float64 // q of the noise log-stds v_n (p)
	VmMean, VmVar []float64 // q of the process noise log-stds v_m (d; NSSM)
	// q of the ARD log-stds v_Φ (Config.ARD): the columns of B, then (NSSM) of C and of D.
	VPhiMean, VPhiVar []float64
	// q of the hierarchy's nodes (Config.Hierarchical): group k (GroupNames) has its mean node at index 2k and its
	// log-std node at 2k+1.
	TopMean, TopVar []float64

	groups                []hgroup
	hier                  [nsrc][]int // group of each child per source, −1 for none; nil without the hierarchy
	topCnt, topDiff, topE []float64   // per group: children, and Σ(γ̄ − m̄), ΣE of the last evaluation

	ardF, ardG []int     // ARD group of each f and g weight, −1 for the fixed N(0, 1) prior
	phiE, phiM []float64 // per ARD group: Σ(Φ̄² + Φ̃) of the last evaluation, and the number of weights

	// Scratch.
	sTil, obsE, stE []float64
	gsTil, direct   []float64
	prevSm, prevTil []float64 // gradient parts of step t − 1 from the transition of step t (steps.go)
	grad            *Grad
	last            lastEval // the last evaluation's point and F (steps.go)
	evals           int      // evaluations of F so far
	fpRejected      int
	updates         int // Update calls since Init (Config.HyperDelay)
}

// Grad is the gradient of F with respect to every posterior parameter (entropy terms included).
type Grad struct {
	Mean          []float64 // with respect to x (len Dim)
	SVar          []float64 // NFA: ∂F/∂s̃
	Ring, Breve   []float64 // NSSM: ∂F/∂s̊, ∂F/∂s̆ (through the marginal-variance recursion)
	WVarF, WVarG  []float64
	VnMean, VnVar []float64
	VmMean, VmVar []float64
	VPhiMean      []float64 // Config.ARD
	VPhiVar       []float64
	TopMean       []float64 // Config.Hierarchical
	TopVar        []float64
}

// New returns a model of the T×p data X with cfg. Errors: d, H < 1, T < 2, non-finite data.
func New(X []float64, T, P int, cfg Config) (*Model, error) {
	if cfg.HG == 0 {
		cfg.HG = cfg.H
	}
	if cfg.GHOrder == 0 {
		cfg.GHOrder = 10
	}
	var small []string
	for _, c := range []struct {
		name   string
		v, min int
	}{{"d", cfg.D, 1}, {"H", cfg.H, 1}, {"HG", cfg.HG, 1}, {"p", P, 1}, {"T", T, 2}, {"GHOrder", cfg.GHOrder, 2}} {
		if c.v < c.min {
			small = append(small, fmt.Sprintf("%s = %d (want ≥ %d)", c.name, c.v, c.min))
		}
	}
	switch {
	case len(small) > 0:
		return nil, fmt.Errorf("%w: %s", ErrBadInput, strings.Join(small, ", "))
	case len(X) != T*P:
		return nil, fmt.Errorf("%w: len(X) = %d, want %d", ErrBadInput, len(X), T*P)
	case cfg.Moments != Taylor && cfg.Moments != GaussHermite:
		return nil, fmt.Errorf("%w: moments %d", ErrBadInput, cfg.Moments)
	}
	for _, v := range X {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: non-finite data", ErrBadInput)
		}
	}
	d := cfg.D
	m := &Model{Cfg: cfg, X: X, T: T, P: P, f: layer{in: d, hid: cfg.H, out: P}}
	m.WVarF = make([]float64, m.f.size())
	m.VnMean, m.VnVar = make([]float64, P), make([]float64, P)
	if cfg.Dynamic {
		m.g = layer{in: d, hid: cfg.HG, out: d, skip: true}
		m.WVarG = make([]float64, m.g.size())
		m.Ring, m.Breve = make([]float64, T*d), make([]float64, T*d)
		m.VmMean, m.VmVar = make([]float64, d), make([]float64, d)
	} else {
		m.SVar = make([]float64, T*d)
	}
	m.sTil = make([]float64, T*d)
	m.obsE, m.stE = make([]float64, P), make([]float64, d)
	m.gsTil, m.direct = make([]float64, T*d), make([]float64, T*d)
	if cfg.ARD {
		m.ardF = ardGroups(m.f, false, 0)
		if cfg.Dynamic {
			m.ardG = ardGroups(m.g, true, m.f.hid)
		}
		n := m.f.hid
		if cfg.Dynamic {
			n += m.g.in + m.g.hid
		}
		m.VPhiMean, m.VPhiVar = make([]float64, n), make([]float64, n)
		m.phiE, m.phiM = make([]float64, n), make([]float64, n)
		for _, k := range append(append([]int(nil), m.ardF...), m.ardG...) {
			if k >= 0 {
				m.phiM[k]++
			}
		}
	}
	if cfg.Hierarchical {
		m.buildHierarchy()
		m.initTop()
	}
	m.newChunks()
	m.grad = m.NewGrad()
	return m, nil
}

// ardGroups maps each weight of l (order A, a, B, b) to its ARD group, numbered from first: the columns of the
// second-layer matrix B (one per hidden unit) and, when first is set, before them the columns of the first-layer
// matrix A (one per input); −1 for the rest (eqs. 92–96: Φ ∈ {B, C, D}, the NSSM's g = D tanh(Cs + c) + d).
func ardGroups(l layer, first bool, from int) []int {
	grp := make([]int, l.size())
	for i := range grp {
		grp[i] = -1
	}
	nA := l.hid * l.in // A is hid×in, then a (hid), B (out×hid), b (out), as layer.split
	if first {
		for i := range nA {
			grp[i] = from + i%l.in
		}
		from += l.in
	}
	for i := range l.out * l.hid {
		grp[nA+l.hid+i] = from + i%l.hid
	}
	return grp
}

// Dim returns the number of means updated by gradient steps: Td + |f| + |g|.
func (m *Model) Dim() int { return m.T*m.Cfg.D + m.f.size() + m.gsize() }

func (m *Model) gsize() int {
	if m.Cfg.Dynamic {
		return m.g.size()
	}
	return 0
}

// NewGrad allocates a Grad of m's shapes.
func (m *Model) NewGrad() *Grad {
	gr := &Grad{Mean: make([]float64, m.Dim()), WVarF: make([]float64, len(m.WVarF)),
		VnMean: make([]float64, m.P), VnVar: make([]float64, m.P)}
	n := m.T * m.Cfg.D
	if m.Cfg.Dynamic {
		gr.Ring, gr.Breve, gr.WVarG = make([]float64, n), make([]float64, n), make([]float64, len(m.WVarG))
		gr.VmMean, gr.VmVar = make([]float64, m.Cfg.D), make([]float64, m.Cfg.D)
	} else {
		gr.SVar = make([]float64, n)
	}
	if m.VPhiMean != nil {
		gr.VPhiMean, gr.VPhiVar = make([]float64, len(m.VPhiMean)), make([]float64, len(m.VPhiVar))
	}
	if m.TopMean != nil {
		gr.TopMean, gr.TopVar = make([]float64, len(m.TopMean)), make([]float64, len(m.TopVar))
	}
	return gr
}

func (m *Model) split(x []float64) (s, wf, wg []float64) {
	n := m.T * m.Cfg.D
	return x[:n], x[n : n+m.f.size()], x[n+m.f.size():]
}

// kahan is Neumaier-compensated summation (convergence tests compare F to 1e-12 relative).
type kahan struct{ s, c float64 }

func (k *kahan) add(x float64) {
	t := k.s + x
	if math.Abs(k.s) >= math.Abs(x) {
		k.c += (k.s - t) + x
	} else {
		k.c += (x - t) + k.s
	}
	k.s = t
}

func (k *kahan) sum() float64 { return k.s + k.c }

func allPositive(vs ...[]float64) bool {
	for _, v := range vs {
		for _, x := range v {
			if !(x > 0) || math.IsInf(x, 1) {
				return false
			}
		}
	}
	return true
}

// FreeEnergy returns F at means x (eqs. 97–103); NaN when a variance is not positive.
func (m *Model) FreeEnergy(x []float64) float64 { return m.eval(x, nil) }

// Gradient writes the gradient of F with respect to all posterior parameters into gr and returns F.
func (m *Model) Gradient(gr *Grad, x []float64) float64 { return m.eval(x, gr) }

// eval computes F and, when gr is not nil, its gradient.
func (m *Model) eval(x []float64, gr *Grad) float64 {
	m.evals++
	d, T := m.Cfg.D, m.T
	dyn := m.Cfg.Dynamic
	sm, wf, wg := m.split(x)
	if !allPositive(m.WVarF, m.VnVar, m.VPhiVar, m.TopVar) || dyn && !allPositive(m.Ring, m.WVarG, m.VmVar) || !dyn && !allPositive(m.SVar) {
		m.last.ok = false
		return math.NaN()
	}
	sTil := m.marginals()
	var F kahan
	var gsm, gwf, gwg, gwvf, gwvg, gsTil []float64
	if gr != nil {
		for _, v := range [][]float64{gr.Mean, gr.SVar, gr.Ring, gr.Breve, gr.WVarF, gr.WVarG, gr.VnMean, gr.VnVar,
			gr.VmMean, gr.VmVar, gr.VPhiMean, gr.VPhiVar, gr.TopMean, gr.TopVar} {
			clear(v)
		}
		gsm, gwf, gwg = m.split(gr.Mean)
		gwvf, gwvg = gr.WVarF, gr.WVarG
		gsTil = m.gsTil
		clear(gsTil)
		clear(m.direct)
	}
	psiN := psi(m.VnMean, m.VnVar)
	var psiM []float64
	if dyn {
		psiM = psi(m.VmMean, m.VmVar)
	}
	F.add(m.timeSteps(&stepArgs{sm: sm, sTil: sTil, wf: wf, wg: wg, psiN: psiN, psiM: psiM, grad: gr != nil, gsm: gsm,
		gsTil: gsTil}, gwf, gwvf, gwg, gwvg))
	// Sources / states.
	prior0 := func(t int) { // N(0, 1): NFA sources and the NSSM's s(1) (the text's prior; Table 3 has e^{2v_s})
		var ft float64
		for i := range d {
			j := t*d + i
			ft += 0.5*log2pi + 0.5*(sm[j]*sm[j]+sTil[j])
			if gr != nil {
				gsm[j] += sm[j]
				gsTil[j] += 0.5
			}
		}
		F.add(ft)
	}
	if !dyn {
		for t := range T {
			prior0(t)
		}
	} else {
		prior0(0)
	}
	// Weight priors and their entropies: N(0, 1), or with ARD N(0, e^{2v_Φj}) by eq. (101) with a zero mean,
	// E{−log p(Φ_ij)} = ½log 2π + v̄_j + ½(Φ̄² + Φ̃)e^{2ṽ_j−2v̄_j}; with the hierarchy the biases' group priors.
	psiPhi := psi(m.VPhiMean, m.VPhiVar)
	clear(m.phiE)
	clear(m.topDiff)
	clear(m.topE)
	weights := func(w, wv, gw, gwv []float64, grp []int, src hsrc) {
		var ft float64
		for i := range w {
			if pr, k := m.childPrior(src, i, prior{}); k >= 0 {
				c, e := pr.cost(w[i], wv[i])
				ft += c - 0.5*math.Log(2*math.Pi*math.E*wv[i])
				m.topDiff[k] += w[i] - pr.m
				m.topE[k] += e
				if gr != nil {
					gw[i] += (w[i] - pr.m) * pr.psi
					gwv[i] += 0.5*pr.psi - 0.5/wv[i]
				}
				continue
			}
			e, vm, psi := w[i]*w[i]+wv[i], 0.0, 1.0
			if grp != nil && grp[i] >= 0 {
				k := grp[i]
				m.phiE[k] += e
				vm, psi = m.VPhiMean[k], psiPhi[k]
			}
			ft += 0.5*log2pi + vm + 0.5*e*psi - 0.5*math.Log(2*math.Pi*math.E*wv[i])
			if gr != nil {
				gw[i] += w[i] * psi
				gwv[i] += 0.5*psi - 0.5/wv[i]
			}
		}
		F.add(ft)
	}
	weights(wf, m.WVarF, gwf, gwvf, m.ardF, srcF)
	if dyn {
		weights(wg, m.WVarG, gwg, gwvg, m.ardG, srcG)
	}
	// Noise log-stds with the vague prior N(0, 100²) (with the hierarchy their group's prior), eqs. (100)–(101).
	hyper := func(src hsrc, vm, vv, sumE []float64, cnt func(int) float64, psi []float64, gm, gv []float64) {
		var ft float64
		for i := range vm {
			pr, k := m.childPrior(src, i, vague)
			c, e := pr.cost(vm[i], vv[i])
			ft += c - 0.5*math.Log(2*math.Pi*math.E*vv[i])
			if k >= 0 {
				m.topDiff[k] += vm[i] - pr.m
				m.topE[k] += e
			}
			if gr != nil {
				gm[i] = cnt(i) - sumE[i]*psi[i] + pr.psi*(vm[i]-pr.m)
				gv[i] = sumE[i]*psi[i] + 0.5*pr.psi - 0.5/vv[i]
			}
		}
		F.add(ft)
	}
	hyper(srcVn, m.VnMean, m.VnVar, m.obsE, func(int) float64 { return float64(T) }, psiN, gr.vnMean(), gr.vnVar())
	if dyn {
		hyper(srcVm, m.VmMean, m.VmVar, m.stE, func(int) float64 { return float64(T - 1) }, psiM, gr.vmMean(), gr.vmVar())
	}
	// ARD log-stds v_Φ with the same prior; their children are the weights of each column.
	hyper(srcPhi, m.VPhiMean, m.VPhiVar, m.phiE, func(k int) float64 { return m.phiM[k] }, psiPhi, gr.vPhiMean(), gr.vPhiVar())
	// The hierarchy's top-level nodes.
	F.add(m.topTerms(gr))
	// Source entropies, eq. (98).
	var ent float64
	if dyn {
		for _, r := range m.Ring {
			ent -= 0.5 * math.Log(2*math.Pi*math.E*r)
		}
	} else {
		for _, v := range m.SVar {
			ent -= 0.5 * math.Log(2*math.Pi*math.E*v)
		}
	}
	F.add(ent)
	if gr != nil {
		if dyn {
			// Through s̃_t = s̊_t + s̆_t² s̃_{t−1} (eq. 20): κ_t = ∂C/∂s̃_t + s̆_{t+1}²κ_{t+1}, the total derivative through the later
			// s̃.
			for i := range d {
				kap := 0.0
				for t := T - 1; t >= 0; t-- {
					j := t*d + i
					if t+1 < T {
						b := m.Breve[j+d]
						kap = gsTil[j] + b*b*kap
					} else {
						kap = gsTil[j]
					}
					gr.Ring[j] = kap - 0.5/m.Ring[j]
					if t > 0 {
						gr.Breve[j] = 2*kap*m.Breve[j]*sTil[j-d] + m.direct[j]
					}
				}
			}
		} else {
			for j, v := range m.SVar {
				gr.SVar[j] = gsTil[j] - 0.5/v
			}
		}
	}
	m.last.remember(x, m.keyParts(), F.sum(), gr != nil && gr == m.grad)
	return m.last.F
}

// marginals fills m.sTil with the sources' variances, or the chains' marginal variances s̃_t = s̊_t + s̆_t² s̃_{t−1}
// (eq. 20), and returns it.
func (m *Model) marginals() []float64 {
	if !m.Cfg.Dynamic {
		copy(m.sTil, m.SVar)
		return m.sTil
	}
	d := m.Cfg.D
	for j := range m.sTil {
		m.sTil[j] = m.Ring[j]
		if j >= d {
			m.sTil[j] += m.Breve[j] * m.Breve[j] * m.sTil[j-d]
		}
	}
	return m.sTil
}

func (g *Grad) vnMean() []float64 { return g.field(func(g *Grad) []float64 { return g.VnMean }) }
func (g *Grad) vnVar() []float64  { return g.field(func(g *Grad) []float64 { return g.VnVar }) }
func (g *Grad) vmMean() []float64 { return g.field(func(g *Grad) []float64 { return g.VmMean }) }
func (g *Grad) vmVar() []float64  { return g.field(func(g *Grad) []float64 { return g.VmVar }) }
func (g *Grad) vPhiMean() []float64 {
	return g.field(func(g *Grad) []float64 { return g.VPhiMean })
}
func (g *Grad) vPhiVar() []float64 { return g.field(func(g *Grad) []float64 { return g.VPhiVar }) }

func (g *Grad) field(f func(*Grad) []float64) []float64 {
	if g == nil {
		return nil
	}
	return f(g)
}
