package nfa

import (
	"fmt"
	"math"
	"slices"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/slots"
	"github.com/geovb/geovb/tensor"
)

// Batch is nonlinear factor analysis or the nonlinear state-space model of B independent runs with equal T, p, d,
// H (and HG) and Gauss–Hermite order — different data sets or initialisations — evaluated together on a backend: the
// batch of problems for the experiments' repetitions. The runs' means are one tensor x of B×1×Dim (run
// b's x as Model's: s̄ (T×d), the f weights A, a, B, b, and for the NSSM the g weights C, c, D, d), in backend
// memory; each run's Model holds its state (variances, chain parameters and noise hyperparameters), which the batch
// mirrors on the backend.
//
// What runs on the backend, all runs and time steps in one call each (the MLP passes and the chain scans; mlpBatch): the
// layer-1 moments Y = S̄Āᵀ + 1āᵀ, the weight part (S̄² + S̃)Ãᵀ + 1ãᵀ and the source part S̃(Ā²)ᵀ as batched GEMMs; the
// Gauss–Hermite nonlinearity (backend.GHTanh and, in reverse, GHTanhBack: all Q nodes in one call), with the clamp
// max(v, 0) as (v + |v|)/2; the output mean and weight-variance terms as GEMMs; the Jacobian term Σ_j J_tij² s̃_tj without a loop over t, as one GEMM per
// run with the Khatri–Rao factor C (H × Td, C_h,(t,j) = k_th Ā_hj, built by n·H outer products), J = B̄C, squared,
// scaled by S̃ (ScaleCols) and summed over j (Reduce); for the NSSM the same through g on the states shifted by one
// step, with J's diagonal (the lag-one covariance of eq. 103) as k(D̄ ⊙ C̄ᵀ)ᵀ; the squared errors; the reverse pass of
// all of it; and the chains' natural gradient (backend.ChainNatGrad, eq. 20). What stays on the host (O(p + d) per
// run and per evaluation): the sums of the squared errors, of the prior terms and Σw̄² come back, and F is completed
// with the noise, prior and entropy terms of the state; the chains' marginal variances s̃_t = s̊_t + s̆_t² s̃_{t−1}
// are formed when the state changes; between steps (Update) the noise hyperparameters, the fixed-point variances
// (13) with the chains' backward sweep, and their damping run on each run's Model, as Model.Update does, and the new
// state goes back. So a run's F and gradient are its Model's up to round-off (TestBatchMatchesModel).
//
// The batch covers the Gauss–Hermite moments, which the experiments use, with every prior of the model: flat, ARD
// (the groups' Σw̄² come back as K more sums, through a GEMM with the groups' indicator) and hierarchical (the biases'
// prior means and precisions per weight; the nodes' updates read the means from the device). NewBatch refuses the
// Taylor moments.
type Batch struct {
	be            backend.Backend
	B             int
	T, P, D, H, Q int
	dyn           bool
	fsz, gsz, dim int
	models        []*Model
	shared        bool      // one data set for every run: stored once, broadcast
	f, g          *mlpBatch // the observation MLP (T steps) and the NSSM's dynamics (T − 1 steps)
	xd, xSwap     *tensor.Tensor
	bestSwap      *tensor.Tensor // 1×1×Dim: Swap's scratch for the best points
	// B×1×Dim in x's layout: s̃ (the marginals for the NSSM) and the weight variances, and ∂F/∂ of them without the
	// priors' ½ and the entropy terms.
	vr, gv      *tensor.Tensor
	gs          *tensor.Tensor // B×1×Dim: the gradient of the means at Update's last evaluation
	psiN, psiNH *tensor.Tensor // B×1×p: e^{2ṽ−2v̄} of the noise log-stds, and half of it
	psiM, psiMH *tensor.Tensor // B×1×d: the same for the process noise (NSSM)
	r, e        *tensor.Tensor // B×T×p: x̄ − x (then ∂F/∂x̄), squared errors
	brT         *tensor.Tensor // B×T×d: s̆ (NSSM)
	// B×d×T (NSSM): s̆, s̊ component-major, and the states' gradient and natural gradient
	brC, rgC, gC, gtC *tensor.Tensor
	et, eb, cov, dir  *tensor.Tensor // B×(T−1)×d (NSSM): s̄_t − h̄, its squared error, (J_ii + 1)s̆_t, ∂F/∂s̆ direct
	onesTd            *tensor.Tensor // 1×(T−1)×d (NSSM)
	// The weights' prior means and precisions (0 and 1; with ARD the precision e^{2ṽ−2v̄} of the column's log-std;
	// with the hierarchy the biases' group mean and precision), B×1×(|f| + |g|); scratch of that shape; and with ARD
	// the indicator of each weight's group, 1×(|f| + |g|)×K.
	pmW, psiW, wsq, grp *tensor.Tensor
	nPhi                int // ARD groups K (0 without ARD)
	// B×1×ns: Σ_t E_ti (p), Σ_t Eb_ti (d, NSSM), Σ(s̄² + s̃) of the N(0, 1) priors, Σ psiW w̄², and with ARD Σw̄²
	// per group (K)
	sums  *tensor.Tensor
	ns    int
	alpha *tensor.Tensor // B×1×1
	ap    *tensor.Tensor // B×1×Dim
	// Update's means (B×1×Dim) and each run's F at its final state, whose gradient Update leaves in gs: Grad at the
	// same means and state takes it instead of evaluating again, as Model.Grad does after Update.
	last       *tensor.Tensor
	diff       *tensor.Tensor // B×1×Dim scratch: x − last, or Update's gradient of the runs settled in one trial
	maxd, hMax *tensor.Tensor // B×1×1: max|x − reference| per run, and its host copy
	lastF      []float64
	lastN      int
	lastOK     bool
	// The line search's best point of each slot since its state last changed (best: F below bestF), with F and the
	// sums F is made of, so that Update at the accepted point need not evaluate it again.
	best                                                                *tensor.Tensor // B×1×Dim
	bestSums                                                            *tensor.Tensor // host B×1×ns
	bestF                                                               []float64
	hSums, hRow, hGrad, hPsiN, hPsiM, hAlpha, hChain, hDir, hPsiW, hPmW *tensor.Tensor // host copies
	cst                                                                 []float64      // per run: the terms of F fixed by the state
	vals                                                                []float64      // per run: F of the last evaluation
	forwards, runsForwarded                                             int            // forward passes, runs forwarded
	owned                                                               []*tensor.Tensor
}

// NewBatch uploads the data and state of the models (one per run, each Init'ed; runs may share a data set, not a
// Model) to be and returns their batched objective. Afterwards change a run's state only through the batch
// (SetState, Update): the batch keeps the backend's copy.
func NewBatch(be backend.Backend, models []*Model) (*Batch, error) {
	if len(models) == 0 {
		return nil, fmt.Errorf("%w: no models", ErrBadInput)
	}
	m0 := models[0]
	for i, m := range models {
		c := m.Cfg
		switch {
		case c.Moments != GaussHermite:
			return nil, fmt.Errorf("%w: model %d: the batch runs the Gauss–Hermite moments, not %v", ErrBadInput, i,
				c.Moments)
		case c.Dynamic != m0.Cfg.Dynamic || c.ARD != m0.Cfg.ARD || c.Hierarchical != m0.Cfg.Hierarchical ||
			m.T != m0.T || m.P != m0.P || c.D != m0.Cfg.D || c.H != m0.Cfg.H || c.HG != m0.Cfg.HG ||
			c.GHOrder != m0.Cfg.GHOrder:
			return nil, fmt.Errorf("%w: model %d has dynamic, ARD, hierarchical, T, p, d, H, HG, GH = %v, %v, %v, %d, "+
				"%d, %d, %d, %d, %d, want %v, %v, %v, %d, %d, %d, %d, %d, %d", ErrBadInput, i, c.Dynamic, c.ARD,
				c.Hierarchical, m.T, m.P, c.D, c.H, c.HG, c.GHOrder, m0.Cfg.Dynamic, m0.Cfg.ARD, m0.Cfg.Hierarchical,
				m0.T, m0.P, m0.Cfg.D, m0.Cfg.H, m0.Cfg.HG, m0.Cfg.GHOrder)
		case slices.Index(models, m) != i:
			return nil, fmt.Errorf("%w: model %d is also run %d; each run needs its own Model", ErrBadInput, i,
				slices.Index(models, m))
		}
	}
	B, T, P, d := len(models), m0.T, m0.P, m0.Cfg.D
	bt := &Batch{be: be, B: B, T: T, P: P, D: d, H: m0.Cfg.H, Q: m0.Cfg.GHOrder, dyn: m0.Cfg.Dynamic,
		fsz: m0.f.size(), gsz: m0.gsize(), models: slices.Clone(models), shared: true, cst: make([]float64, B),
		vals: make([]float64, B), lastF: make([]float64, B), bestF: make([]float64, B)}
	bt.dim = T*d + bt.fsz + bt.gsz
	bt.nPhi = len(m0.VPhiMean)
	bt.ns = P + 2 + bt.nPhi
	if bt.dyn {
		bt.ns += d
	}
	for _, m := range models {
		if !slices.Equal(m.X, m0.X) {
			bt.shared = false
		}
	}
	var err error
	alloc := func(b, r, c int) *tensor.Tensor {
		if err != nil {
			return nil
		}
		var t *tensor.Tensor
		t, err = be.Alloc(tensor.Shape{Batch: b, Rows: r, Cols: c})
		if err == nil {
			bt.owned = append(bt.owned, t)
		}
		return t
	}
	xb := B
	if bt.shared {
		xb = 1
	} else {
		bt.xSwap = alloc(1, T, P)
	}
	bt.xd = alloc(xb, T, P)
	bt.bestSwap = alloc(1, 1, bt.dim)
	for _, t := range []**tensor.Tensor{&bt.vr, &bt.gv, &bt.gs, &bt.ap, &bt.last, &bt.diff, &bt.best} {
		*t = alloc(B, 1, bt.dim)
	}
	bt.psiN, bt.psiNH = alloc(B, 1, P), alloc(B, 1, P)
	bt.r, bt.e = alloc(B, T, P), alloc(B, T, P)
	bt.f = newMLPBatch(alloc, B, m0.f, T, bt.Q)
	if bt.dyn {
		bt.g = newMLPBatch(alloc, B, m0.g, T-1, bt.Q)
		bt.psiM, bt.psiMH = alloc(B, 1, d), alloc(B, 1, d)
		bt.brT = alloc(B, T, d)
		bt.brC, bt.rgC, bt.gC, bt.gtC = alloc(B, d, T), alloc(B, d, T), alloc(B, d, T), alloc(B, d, T)
		bt.et, bt.eb, bt.cov, bt.dir = alloc(B, T-1, d), alloc(B, T-1, d), alloc(B, T-1, d), alloc(B, T-1, d)
		bt.onesTd = alloc(1, T-1, d)
	}
	bt.sums = alloc(B, 1, bt.ns)
	nw := bt.fsz + bt.gsz
	bt.pmW, bt.psiW, bt.wsq = alloc(B, 1, nw), alloc(B, 1, nw), alloc(B, 1, nw)
	var hg *tensor.Tensor
	if bt.nPhi > 0 {
		bt.grp = alloc(1, nw, bt.nPhi)
		hg = tensor.NewHost(1, nw, bt.nPhi)
		for i, k := range append(slices.Clone(m0.ardF), m0.ardG...) {
			if k >= 0 {
				hg.Set(0, i, k, 1)
			}
		}
	}
	bt.alpha, bt.maxd = alloc(B, 1, 1), alloc(B, 1, 1)
	if err == nil {
		hx := tensor.NewHost(xb, T, P)
		for i := range xb {
			dst, _, _, _ := hx.Matrix(i)
			copy(dst, models[i].X)
		}
		o := &ops{be: be}
		o.do(func() error { return be.Upload(bt.xd, hx) })
		bt.f.init(o)
		if hg != nil {
			o.do(func() error { return be.Upload(bt.grp, hg) })
		}
		if bt.dyn {
			bt.g.init(o)
			o.fill(bt.onesTd, 1)
		}
		err = o.err
	}
	bt.hSums, bt.bestSums = tensor.NewHost(B, 1, bt.ns), tensor.NewHost(B, 1, bt.ns)
	bt.hRow, bt.hGrad = tensor.NewHost(B, 1, bt.dim), tensor.NewHost(B, 1, bt.dim)
	bt.hPsiN, bt.hPsiM, bt.hAlpha, bt.hMax = tensor.NewHost(B, 1, P), tensor.NewHost(B, 1, d), tensor.NewHost(B, 1, 1),
		tensor.NewHost(B, 1, 1)
	bt.hChain, bt.hDir = tensor.NewHost(B, d, T), tensor.NewHost(B, max(T-1, 1), d)
	bt.hPsiW, bt.hPmW = tensor.NewHost(B, 1, nw), tensor.NewHost(B, 1, nw)
	for i := 0; err == nil && i < B; i++ {
		err = bt.sync(i)
	}
	if err != nil {
		bt.Close()
		return nil, err
	}
	return bt, nil
}

// Close frees the backend memory of the batch.
func (bt *Batch) Close() {
	for _, t := range bt.owned {
		bt.be.Free(t)
	}
	bt.owned = nil
}

// Backend returns the backend the batch runs on.
func (bt *Batch) Backend() backend.Backend { return bt.be }

// Batch returns B.
func (bt *Batch) Batch() int { return bt.B }

// Dim returns the length of one run's x, Model.Dim.
func (bt *Batch) Dim() int { return bt.dim }

// NumFree returns Dim: every mean is free.
func (bt *Batch) NumFree() int { return bt.dim }

// RunEvaluations returns the evaluations of one run's F the batch has made so far: each forward pass (of Value, Grad
// or Update) counts the runs it covers. It measures the batch's work in the host's unit.
func (bt *Batch) RunEvaluations() int { return bt.runsForwarded }

// Model returns the model in slot i (after MinimizeBatch returns, run i's).
func (bt *Batch) Model(i int) *Model { return bt.models[i] }

// sync uploads the state of the model in slot i — the marginal variances s̃ (for the NSSM from the chains, s̃_t = s̊_t +
// s̆_t²s̃_{t−1}, left in Model.sTil for the fixed point) and the weight variances in x's layout, the chains' s̆ and s̊, the
// noise precisions — and recomputes the terms of F that depend on the state alone: T Σ_i(½log 2π + v̄_n,i) of (102)
// and (T − 1) Σ_i(½log 2π + v̄_m,i) of (103), the constants of the N(0, 1) priors (98)–(99), ½Σw̃ − ½Σlog(2πe w̃)
// of the weights, the log-stds' priors and entropies (100)–(101) and the sources' or states' entropy −½Σlog(2πe s̃)
// (−½Σlog(2πe s̊) for the chains).
func (bt *Batch) sync(i int) error {
	bt.lastOK = false
	bt.bestF[i] = math.Inf(1)
	m := bt.models[i]
	T, d := bt.T, bt.D
	n := T * d
	row, _, _, _ := bt.hRow.Matrix(i)
	copy(row, m.marginals())
	copy(row[n:], m.WVarF)
	copy(row[n+bt.fsz:], m.WVarG)
	ps, _, _, _ := bt.hPsiN.Matrix(i)
	copy(ps, psi(m.VnMean, m.VnVar))
	var F kahan
	if !allPositive(m.SVar, m.Ring, m.WVarF, m.WVarG, m.VnVar, m.VmVar, m.VPhiVar, m.TopVar) {
		F.add(math.NaN())
	}
	nPrior := n // the N(0, 1) priors: every source, or the states at t = 0, and every weight
	if bt.dyn {
		nPrior = d
	}
	F.add(float64(nPrior+bt.fsz+bt.gsz) * 0.5 * log2pi)
	hyper := func(src hsrc, vm, vv []float64, cnt int) {
		for k := range vm {
			F.add(float64(cnt) * (0.5*log2pi + vm[k]))
			pr, _ := m.childPrior(src, k, vague)
			c, _ := pr.cost(vm[k], vv[k])
			F.add(c - 0.5*math.Log(2*math.Pi*math.E*vv[k]))
		}
	}
	hyper(srcVn, m.VnMean, m.VnVar, T)
	// The weights: with ARD N(0, e^{2v_Φk}), with the hierarchy a bias's group prior N(m, e^{2v}), by eq. (101)
	// E{−log p} = ½log 2π + v̄ + ½[(w̄ − m̄)² + w̃ + m̃]psi; the (w̄ − m̄)² part is the device's.
	pw, _, _, _ := bt.hPsiW.Matrix(i)
	pmw, _, _, _ := bt.hPmW.Matrix(i)
	psiPhi := psi(m.VPhiMean, m.VPhiVar)
	for j := range pw {
		wv := bt.weightVar(m, j)
		pw[j], pmw[j] = 1, 0
		src, jj := srcF, j
		if j >= bt.fsz {
			src, jj = srcG, j-bt.fsz
		}
		if pr, k := m.childPrior(src, jj, prior{}); k >= 0 {
			pw[j], pmw[j] = pr.psi, pr.m
			F.add(pr.c - 0.5*log2pi + 0.5*pr.psi*pr.mv)
		} else if k := bt.group(m, j); k >= 0 {
			pw[j] = psiPhi[k]
			F.add(m.VPhiMean[k])
		}
		F.add(0.5*pw[j]*wv - 0.5*math.Log(2*math.Pi*math.E*wv))
	}
	hyper(srcPhi, m.VPhiMean, m.VPhiVar, 0) // the ARD log-stds' prior and entropy
	for k := range m.TopMean {              // the hierarchy's nodes under the vague prior
		c, _ := vague.cost(m.TopMean[k], m.TopVar[k])
		F.add(c - 0.5*math.Log(2*math.Pi*math.E*m.TopVar[k]))
	}
	for _, v := range [][]float64{m.SVar, m.Ring} {
		for _, w := range v {
			F.add(-0.5 * math.Log(2*math.Pi*math.E*w))
		}
	}
	o := &ops{be: bt.be}
	if bt.dyn {
		hyper(srcVm, m.VmMean, m.VmVar, T-1)
		pm, _, _, _ := bt.hPsiM.Matrix(i)
		copy(pm, psi(m.VmMean, m.VmVar))
		o.do(func() error { return bt.be.Upload(bt.psiM.Item(i), bt.hPsiM.Item(i)) })
		o.scale(bt.psiMH.Item(i), 0.5, bt.psiM.Item(i))
		hb := bt.hChain.Item(i)
		for _, v := range []struct {
			src []float64
			dst *tensor.Tensor
		}{{m.Breve, bt.brC}, {m.Ring, bt.rgC}} {
			for t := range T {
				for c := range d {
					hb.Set(0, c, t, v.src[t*d+c])
				}
			}
			o.do(func() error { return bt.be.Upload(v.dst.Item(i), hb) })
		}
		hbT, err := tensor.FromSlice(m.Breve, 1, T, d)
		if err != nil {
			return err
		}
		o.do(func() error { return bt.be.Upload(bt.brT.Item(i), hbT) })
	}
	bt.cst[i] = F.sum()
	o.do(func() error { return bt.be.Upload(bt.psiW.Item(i), bt.hPsiW.Item(i)) })
	o.do(func() error { return bt.be.Upload(bt.pmW.Item(i), bt.hPmW.Item(i)) })
	o.do(func() error { return bt.be.Upload(bt.vr.Item(i), bt.hRow.Item(i)) })
	o.do(func() error { return bt.be.Upload(bt.psiN.Item(i), bt.hPsiN.Item(i)) })
	o.scale(bt.psiNH.Item(i), 0.5, bt.psiN.Item(i))
	return o.err
}

// weightVar returns the variance of weight j of m (the f weights, then g's).
func (bt *Batch) weightVar(m *Model, j int) float64 {
	if j < bt.fsz {
		return m.WVarF[j]
	}
	return m.WVarG[j-bt.fsz]
}

// group returns the ARD group of weight j of m (the f weights, then g's), −1 for none.
func (bt *Batch) group(m *Model, j int) int {
	switch {
	case j < bt.fsz && m.ardF != nil:
		return m.ardF[j]
	case j >= bt.fsz && m.ardG != nil:
		return m.ardG[j-bt.fsz]
	}
	return -1
}

func (bt *Batch) check(name string, ts ...*tensor.Tensor) (int, error) {
	n := ts[0].Batch()
	for _, t := range ts {
		if t.Batch() != n || t.Rows() != 1 || t.Cols() != bt.dim || !t.Contiguous() || n > bt.B || n < 1 {
			return 0, fmt.Errorf("%w: %s operand %v, want a contiguous n×1×%d with 1 ≤ n ≤ %d", ErrBadInput, name,
				t.Shape(), bt.dim, bt.B)
		}
	}
	return n, nil
}

// parts returns the views of the first n items of t (b×1×Dim, x's layout): s̄ (T×d), the same as n×1×Td, the f
// weights and the g weights (n×1×|f|, n×1×|g|; nil for NFA) and all the weights (n×1×(|f| + |g|)).
func (bt *Batch) parts(t *tensor.Tensor, n int) (s, sf, wf, wg, w *tensor.Tensor) {
	T, d := bt.T, bt.D
	o := T * d
	s = t.Window(n, 0, T, d, d)
	sf = t.Window(n, 0, 1, o, o)
	wf = t.Window(n, o, 1, bt.fsz, bt.fsz)
	if bt.dyn {
		wg = t.Window(n, o+bt.fsz, 1, bt.gsz, bt.gsz)
	}
	w = t.Window(n, o, 1, bt.fsz+bt.gsz, bt.fsz+bt.gsz)
	return
}

// lagged returns the rows [0, T−1) (the g inputs s_{t−1}) and [1, T) (the targets s_t) of s (n×T×d), and the
// inputs as n×1×(T−1)d.
func (bt *Batch) lagged(s *tensor.Tensor, n int) (prev, next, prevF *tensor.Tensor) {
	T, d := bt.T, bt.D
	prev, next = s.Slice(0, T-1, 0, d), s.Slice(1, T, 0, d)
	prevF = s.Window(n, 0, 1, (T-1)*d, (T-1)*d)
	return
}

func (bt *Batch) data(n int) *tensor.Tensor {
	if bt.shared {
		return bt.xd
	}
	return bt.xd.Batches(0, n)
}

// forward evaluates F at the means x of the first n runs into bt.vals, leaving every intermediate for backward.
func (bt *Batch) forward(x *tensor.Tensor, n int) error {
	bt.forwards++
	bt.runsForwarded += n
	T, P, d := bt.T, bt.P, bt.D
	o := &ops{be: bt.be}
	it := func(t *tensor.Tensor) *tensor.Tensor { return t.Batches(0, n) }
	S, _, wf, wg, W := bt.parts(x, n)
	V, Vf, vf, vg, _ := bt.parts(bt.vr, n)
	f := bt.f
	// Observations (102): E_ti = (x̄ − x)² + x̃ through f.
	f.forward(o, n, S, V, Vf, wf, vf)
	r, e, sums := it(bt.r), it(bt.e), it(bt.sums)
	o.axpby(r, 1, it(f.xm), -1, bt.data(n))
	o.mul(e, r, r)
	o.axpby(e, 1, e, 1, it(f.xv))
	o.sum(sums.Slice(0, 1, 0, P), backend.AxisRows, e)
	prior := it(f.sq) // the N(0, 1) prior of every source, or of the states at t = 0
	if bt.dyn {
		// Transitions (103) with h = s + g(s) (eq. 34): Eb = (s̄_t − h̄)² + s̃_t + h̃ − 2(J_ii + 1)s̆_t s̃_{t−1}.
		g := bt.g
		SP, ST, _ := bt.lagged(S, n)
		VP, VT, VPf := bt.lagged(V, n)
		g.forward(o, n, SP, VP, VPf, wg, vg)
		et, eb, cov := it(bt.et), it(bt.eb), it(bt.cov)
		o.axpby(et, 1, ST, -1, it(g.xm))
		o.mul(eb, et, et)
		o.axpby(eb, 1, eb, 1, VT)
		o.axpby(eb, 1, eb, 1, it(g.xv))
		o.axpby(cov, 1, it(g.jd), 1, bt.onesTd) // J_ii + 1, then (J_ii + 1)s̆_t
		o.mul(cov, cov, it(bt.brT).Slice(1, T, 0, d))
		o.mul(bt.dir.Batches(0, n), cov, VP)
		o.axpby(eb, 1, eb, -2, it(bt.dir))
		o.sum(sums.Slice(0, 1, P, P+d), backend.AxisRows, eb)
		prior = prior.Slice(0, 1, 0, d)
	}
	k0 := bt.ns - 2 - bt.nPhi
	o.sum(sums.Slice(0, 1, k0, k0+1), backend.AxisAll, prior)
	wsq := it(bt.wsq) // (w̄ − m̄)², m̄ = 0 but for the hierarchy's biases (never in an ARD group)
	o.axpby(wsq, 1, W, -1, it(bt.pmW))
	o.mul(wsq, wsq, wsq)
	o.rowDots(sums.Slice(0, 1, k0+1, k0+2), wsq, it(bt.psiW))
	if bt.nPhi > 0 {
		o.gemm(nt, nt, 1, wsq, bt.grp, 0, sums.Slice(0, 1, k0+2, bt.ns))
	}
	hs := bt.hSums.Batches(0, n)
	o.do(func() error { return bt.be.Download(hs, sums) })
	if o.err != nil {
		return o.err
	}
	for i := range n {
		s, _, _, _ := hs.Matrix(i)
		ps, _, _, _ := bt.hPsiN.Matrix(i)
		F := kahan{s: bt.cst[i]}
		for k := range P {
			F.add(0.5 * ps[k] * s[k])
		}
		if bt.dyn {
			pm, _, _, _ := bt.hPsiM.Matrix(i)
			for k := range d {
				F.add(0.5 * pm[k] * s[P+k])
			}
		}
		F.add(0.5 * s[k0])
		F.add(0.5 * s[k0+1])
		bt.vals[i] = F.sum()
	}
	return nil
}

// backward writes ∂F/∂x into g and ∂F/∂(s̃ and the weight variances), without the priors' ½ and the entropy terms,
// into bt.gv for the first n runs, after forward at the same x; for the NSSM also ∂F/∂s̆_t through the lag-one
// covariance (the direct term of eq. 103) into bt.dir. ∂F/∂x̄ = psiN ⊙ (x̄ − x) and ∂F/∂x̃ = psiN/2 (102); for the
// transitions ∂F/∂s̄_t = psiM ⊙ (s̄_t − h̄) = −∂F/∂h̄, ∂F/∂h̃ = ∂F/∂s̃_t = psiM/2, ∂F/∂J_ii = −psiM s̆_t s̃_{t−1},
// ∂F/∂s̃_{t−1} = −psiM (J_ii + 1)s̆_t and ∂F/∂s̆_t = −psiM (J_ii + 1)s̃_{t−1} (103).
func (bt *Batch) backward(x, g *tensor.Tensor, n int) error {
	T, d := bt.T, bt.D
	o := &ops{be: bt.be}
	it := func(t *tensor.Tensor) *tensor.Tensor { return t.Batches(0, n) }
	S, _, wf, wg, W := bt.parts(x, n)
	V, Vf, vf, vg, _ := bt.parts(bt.vr, n)
	gS, _, gwf, gwg, gW := bt.parts(g, n)
	gV, gVf, gvf, gvg, _ := bt.parts(bt.gv, n)
	o.fill(gS, 0)
	o.fill(gV, 0)
	r := it(bt.r)
	o.scaleCols(r, r, it(bt.psiN))
	bt.f.backward(o, n, S, V, Vf, wf, vf, r, it(bt.psiN), it(bt.psiNH), nil, gS, gV, gVf, gwf, gvf)
	if bt.dyn {
		gm := bt.g
		psiM, psiMH := it(bt.psiM), it(bt.psiMH)
		SP, _, _ := bt.lagged(S, n)
		VP, _, VPf := bt.lagged(V, n)
		gSP, gST, _ := bt.lagged(gS, n)
		gVP, gVT, gVPf := bt.lagged(gV, n)
		et, cov, dir, gjd := it(bt.et), it(bt.cov), it(bt.dir), it(bt.eb)
		o.scaleCols(et, et, psiM) // ∂F/∂s̄_t; ∂F/∂h̄ is its negative
		o.axpby(gST, 1, gST, 1, et)
		o.scale(et, -1, et)
		o.gemm(nt, nt, 1, gm.ones, psiMH, 1, gVT)
		o.scaleCols(dir, cov, psiM) // (J_ii + 1)s̆_t psiM into ∂F/∂s̃_{t−1}
		o.axpby(gVP, 1, gVP, -1, dir)
		o.mul(gjd, it(bt.brT).Slice(1, T, 0, d), VP) // ∂F/∂J_ii = −psiM s̆_t s̃_{t−1}
		o.scaleCols(gjd, gjd, psiM)
		o.scale(gjd, -1, gjd)
		o.axpby(dir, 1, it(gm.jd), 1, bt.onesTd) // ∂F/∂s̆_t direct = −psiM (J_ii + 1) s̃_{t−1}
		o.mul(dir, dir, VP)
		o.scaleCols(dir, dir, psiM)
		o.scale(dir, -1, dir)
		gm.backward(o, n, SP, VP, VPf, wg, vg, et, psiM, psiMH, gjd, gSP, gVP, gVPf, gwg, gvg)
		S0, gS0 := S.Slice(0, 1, 0, d), gS.Slice(0, 1, 0, d)
		o.axpby(gS0, 1, gS0, 1, S0)
	} else {
		o.axpby(gS, 1, gS, 1, S)
	}
	wsq := it(bt.wsq) // the weights' priors: ∂/∂w̄ of ½ psiW (w̄ − m̄)²
	o.axpby(wsq, 1, W, -1, it(bt.pmW))
	o.mul(wsq, wsq, it(bt.psiW))
	o.axpby(gW, 1, gW, 1, wsq)
	return o.err
}

// Value writes F of each of the first n runs (x is n×1×Dim) into f (rcg.BatchObjective).
func (bt *Batch) Value(f []float64, x *tensor.Tensor) error {
	n, err := bt.check("Value", x)
	if err != nil {
		return err
	}
	if err := bt.forward(x, n); err != nil {
		return err
	}
	copy(f, bt.vals[:n])
	for i := range n {
		if bt.vals[i] < bt.bestF[i] {
			bt.bestF[i] = bt.vals[i]
			if err := bt.be.Copy(bt.best.Item(i), x.Item(i)); err != nil {
				return err
			}
			if err := tensor.CopyHost(bt.bestSums.Item(i), bt.hSums.Item(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Grad writes F, the gradient g and the natural gradient gt of each run (rcg.BatchObjective): the variances times
// g (eq. 35) for the weights and NFA's sources, the two scans of each state chain for the NSSM (eq. 20,
// backend.ChainNatGrad on the states' gradient laid out one chain per row).
func (bt *Batch) Grad(f []float64, g, gt, x *tensor.Tensor) error {
	n, err := bt.check("Grad", g, gt, x)
	if err != nil {
		return err
	}
	same, err := bt.atLast(x, n)
	if err != nil {
		return err
	}
	if same {
		if err := bt.be.Copy(g, bt.gs.Batches(0, n)); err != nil {
			return err
		}
		copy(f, bt.lastF[:n])
	} else {
		if err := bt.forward(x, n); err != nil {
			return err
		}
		if err := bt.backward(x, g, n); err != nil {
			return err
		}
		copy(f, bt.vals[:n])
	}
	if !bt.dyn {
		return bt.be.Mul(gt, bt.vr.Batches(0, n), g)
	}
	o := &ops{be: bt.be}
	gS, _, _, _, gW := bt.parts(g, n)
	tS, _, _, _, tW := bt.parts(gt, n)
	_, _, _, _, vW := bt.parts(bt.vr, n)
	o.mul(tW, vW, gW)
	gC, gtC := bt.gC.Batches(0, n), bt.gtC.Batches(0, n)
	o.transpose(gC, gS)
	o.do(func() error { return backend.ChainNatGrad(bt.be, gtC, gC, bt.brC.Batches(0, n), bt.rgC.Batches(0, n)) })
	o.transpose(tS, gtC)
	return o.err
}

// atLast reports whether x (n×1×Dim) holds exactly the means of Update's last evaluation, at the state it left.
func (bt *Batch) atLast(x *tensor.Tensor, n int) (bool, error) {
	if !bt.lastOK || n != bt.lastN {
		return false, nil
	}
	return bt.same(x, bt.last, n)
}

// atBest reports whether x (n×1×Dim) holds exactly each run's best point of the line search, at the same state.
func (bt *Batch) atBest(x *tensor.Tensor, n int) (bool, error) {
	for i := range n {
		if math.IsInf(bt.bestF[i], 1) {
			return false, nil
		}
	}
	return bt.same(x, bt.best, n)
}

// same reports whether the first n items of x and ref are equal element for element.
func (bt *Batch) same(x, ref *tensor.Tensor, n int) (bool, error) {
	o := &ops{be: bt.be}
	d, mx := bt.diff.Batches(0, n), bt.maxd.Batches(0, n)
	o.axpby(d, 1, x, -1, ref.Batches(0, n))
	o.mapf(d, backend.Abs, d)
	o.do(func() error { return bt.be.Reduce(mx, backend.ReduceMax, backend.AxisCols, d) })
	o.do(func() error { return bt.be.Download(bt.hMax.Batches(0, n), mx) })
	if o.err != nil {
		return false, o.err
	}
	for i := range n {
		if bt.hMax.At(i, 0, 0) != 0 { // NaN too
			return false, nil
		}
	}
	return true, nil
}

// Step writes x + α_b p for each run into dst (rcg.BatchObjective).
func (bt *Batch) Step(dst, x, p *tensor.Tensor, alpha []float64) error {
	n, err := bt.check("Step", dst, x, p)
	if err != nil {
		return err
	}
	ha := bt.hAlpha.Batches(0, n)
	for i := range n {
		ha.Set(i, 0, 0, alpha[i])
	}
	o := &ops{be: bt.be}
	a, ap := bt.alpha.Batches(0, n), bt.ap.Batches(0, n)
	o.do(func() error { return bt.be.Upload(a, ha) })
	o.scaleRows(ap, p, a)
	o.axpby(dst, 1, x, 1, ap)
	return o.err
}

// Swap exchanges the models, state and data of slots i and j (rcg.BatchObjective), and the line search's best
// points, which stay valid: the state moves with its run unchanged. rcg.MinimizeBatch swaps the runs still
// searching to the front in every round of its line search (and Update the runs still damping), and Update at the
// accepted points then needs no evaluation.
func (bt *Batch) Swap(i, j int) error {
	if i == j {
		return nil
	}
	bestI, bestJ := bt.bestF[i], bt.bestF[j]
	bt.models[i], bt.models[j] = bt.models[j], bt.models[i]
	if err := bt.sync(i); err != nil {
		return err
	}
	if err := bt.sync(j); err != nil {
		return err
	}
	bt.bestF[i], bt.bestF[j] = bestJ, bestI
	o := &ops{be: bt.be}
	bi, bj := bt.best.Item(i), bt.best.Item(j)
	o.copy(bt.bestSwap, bi)
	o.copy(bi, bj)
	o.copy(bj, bt.bestSwap)
	si, _, _, _ := bt.bestSums.Matrix(i)
	sj, _, _, _ := bt.bestSums.Matrix(j)
	for k := range si {
		si[k], sj[k] = sj[k], si[k]
	}
	if !bt.shared {
		xi, xj := bt.xd.Item(i), bt.xd.Item(j)
		o.copy(bt.xSwap, xi)
		o.copy(xi, xj)
		o.copy(xj, bt.xSwap)
	}
	return o.err
}

// State returns the state of the model in slot i (Model.State; rcg.BatchStateful).
func (bt *Batch) State(i int) []float64 { return bt.models[i].State() }

// SetState restores the state of the model in slot i and uploads it (rcg.BatchStateful).
func (bt *Batch) SetState(i int, s []float64) error {
	if err := bt.models[i].SetState(s); err != nil {
		return err
	}
	return bt.sync(i)
}

// Update runs Model.Update's between-step updates for each of the first n runs at their means x
// (rcg.BatchUpdater): the noise hyperparameters by the Newton scheme from the squared errors at x, kept only where
// F did not increase, then the fixed-point variances (13) from the gradient at the new state, damped to the first
// of λ = 1, ½, ¼, ⅛ with F(old + λ(fixed point − old)) ≤ F(old), else the old variances. Each trial is one batched
// evaluation of the runs still damping, and the gradient again where a hyperparameter update was undone one of
// those runs alone: they are swapped to the front first (Swap, with x's and gs's rows), and back before Update
// returns, so a run costs the evaluations it costs Model.Update. Like Model.Update, it takes F and the squared
// errors at x from the line search's evaluation there when it can (best), and leaves the gradient at the final
// state for the next Grad: each run's row of gs is written by the backward pass of the evaluation at which its
// state was settled.
func (bt *Batch) Update(x *tensor.Tensor) error {
	n, err := bt.check("Update", x)
	if err != nil {
		return err
	}
	u := &updater{bt: bt, x: x, n: n, runs: make([]updRun, n), perm: make([]int, n)}
	for i := range u.perm {
		u.perm[i] = i
	}
	if err := u.startF(); err != nil {
		return err
	}
	if err := u.hyper(); err != nil {
		return err
	}
	if err := u.gradAt(n); err != nil {
		return err
	}
	if err := u.undoRisen(); err != nil {
		return err
	}
	u.fixedPoints()
	if err := u.damp(); err != nil {
		return err
	}
	return u.finish()
}

// updater is the state of one Update of the first n runs at their means x: each run's state, and perm[s], the
// slot at entry of the run now in slot s. Later passes evaluate only the runs they concern, swapped to the front
// (slots 0…k−1), and the runs go back to their slots before Update returns.
type updater struct {
	bt   *Batch
	x    *tensor.Tensor
	n    int
	runs []updRun
	perm []int
}

// startF sets each run's F0, F at x, and the squared-error sums in bt.hSums, from the line search's evaluation at
// x when it can (best), else from a forward pass.
func (u *updater) startF() error {
	bt, x, n, runs := u.bt, u.x, u.n, u.runs
	if ok, err := bt.atBest(x, n); err != nil {
		return err
	} else if ok {
		for i := range runs {
			runs[i].F0 = bt.bestF[i]
		}
		return tensor.CopyHost(bt.hSums.Batches(0, n), bt.bestSums.Batches(0, n))
	}
	if err := bt.forward(x, n); err != nil {
		return err
	}
	for i := range runs {
		runs[i].F0 = bt.vals[i]
	}
	return nil
}

// hyper saves each run's state and updates its hyperparameters from the sums: the noise log-stds, and when due
// the ARD log-stds and the hierarchy's nodes.
func (u *updater) hyper() error {
	bt, x, n, runs := u.bt, u.x, u.n, u.runs
	var xh [][]float64 // the means, for the hierarchy's nodes (their children include the biases)
	if bt.models[0].groups != nil {
		h := tensor.NewHost(n, 1, bt.dim)
		if err := bt.be.Download(h, x); err != nil {
			return err
		}
		xh = h.ItemRows()
	}
	for i := range n {
		m := bt.models[i]
		runs[i].saved = m.State()
		s, _, _, _ := bt.hSums.Matrix(i)
		copy(m.obsE, s[:bt.P])
		if bt.dyn {
			copy(m.stE, s[bt.P:bt.P+bt.D])
		}
		if bt.nPhi > 0 { // Σ(w̄² + w̃) per ARD group: the device's w̄² sums and the state's w̃
			copy(m.phiE, s[bt.ns-bt.nPhi:])
			for j := range bt.fsz + bt.gsz {
				if k := bt.group(m, j); k >= 0 {
					m.phiE[k] += bt.weightVar(m, j)
				}
			}
		}
		var xi []float64
		if xh != nil {
			xi = xh[i]
		}
		m.updateHyper(xi, m.hyperDue()) // the noise log-stds, and when due the ARD log-stds and the hierarchy's nodes
		if err := bt.sync(i); err != nil {
			return err
		}
	}
	return nil
}

// swap exchanges the runs of slots i and j: their models (Swap), their rows of x and gs, their downloaded
// gradients and directions, and their Update state.
func (u *updater) swap(i, j int) error {
	bt, x, runs, perm := u.bt, u.x, u.runs, u.perm
	if i == j {
		return nil
	}
	if err := bt.Swap(i, j); err != nil {
		return err
	}
	o := &ops{be: bt.be}
	for _, t := range []*tensor.Tensor{x, bt.gs} {
		ti, tj := t.Item(i), t.Item(j)
		o.copy(bt.bestSwap, ti)
		o.copy(ti, tj)
		o.copy(tj, bt.bestSwap)
	}
	for _, h := range []*tensor.Tensor{bt.hGrad, bt.hDir} {
		a, _, _, _ := h.Matrix(i)
		b, _, _, _ := h.Matrix(j)
		for k := range a {
			a[k], b[k] = b[k], a[k]
		}
	}
	runs[i], runs[j] = runs[j], runs[i]
	perm[i], perm[j] = perm[j], perm[i]
	return o.err
}

// front swaps the runs for which want holds to the front and returns their number.
func (u *updater) front(want func(r *updRun) bool) (int, error) {
	return slots.Front(u.n, func(i int) bool { return want(&u.runs[i]) }, u.swap)
}

// gradAt sets F1 and the gradients at the new hyperparameters of the first k runs (means into gs, variances to the
// host).
func (u *updater) gradAt(k int) error {
	bt := u.bt
	xk := u.x.Batches(0, k)
	if err := bt.forward(xk, k); err != nil {
		return err
	}
	if err := bt.backward(xk, bt.gs.Batches(0, k), k); err != nil {
		return err
	}
	for i := range k {
		u.runs[i].F1 = bt.vals[i]
	}
	if bt.dyn {
		if err := bt.be.Download(bt.hDir.Batches(0, k), bt.dir.Batches(0, k)); err != nil {
			return err
		}
	}
	return bt.be.Download(bt.hGrad.Batches(0, k), bt.gv.Batches(0, k))
}

// undoRisen restores the old hyperparameters of the runs where F rose, and F1 and the gradients again there.
func (u *updater) undoRisen() error {
	bt, n, runs := u.bt, u.n, u.runs
	for i := range n { // where F rose, the old hyperparameters, and F1 and the gradients again there
		r := &runs[i]
		r.redo = !(r.F1 <= r.F0+1e-12*math.Abs(r.F0)) || math.IsNaN(r.F1)
		if r.redo {
			m := bt.models[i]
			if err := m.SetState(r.saved); err != nil {
				return err
			}
			m.fpRejected++
			if err := bt.sync(i); err != nil {
				return err
			}
		}
	}
	if k, err := u.front(func(r *updRun) bool { return r.redo }); err != nil {
		return err
	} else if k > 0 {
		if err := u.gradAt(k); err != nil {
			return err
		}
	}
	return nil
}

// fixedPoints forms each run's variance gradient from the downloaded gradient and its fixed point (13), the
// target of the damping.
func (u *updater) fixedPoints() {
	bt, n, runs := u.bt, u.n, u.runs
	d, nS := bt.D, bt.T*bt.D
	for i := range n {
		m := bt.models[i]
		row, _, _, _ := bt.hGrad.Matrix(i)
		gr := m.grad // its variance parts: the model's own scratch, which the batch does not otherwise use
		pw, _, _, _ := bt.hPsiW.Matrix(i)
		for k, v := range m.WVarF { // with the prior's ½psi and the entropy's −½/w̃
			gr.WVarF[k] = row[nS+k] + 0.5*pw[k] - 0.5/v
		}
		for k, v := range m.WVarG {
			gr.WVarG[k] = row[nS+bt.fsz+k] + 0.5*pw[bt.fsz+k] - 0.5/v
		}
		if bt.dyn {
			// The chains' sweep reads ∂C/∂s̃_t (the prior's ½ at t = 0) and the direct ∂F/∂s̆_t from the model, and
			// the marginal variances sync left in it.
			copy(m.gsTil, row[:nS])
			for k := range d {
				m.gsTil[k] += 0.5
			}
			dir, _, _, _ := bt.hDir.Matrix(i)
			clear(m.direct[:d])
			copy(m.direct[d:], dir[:nS-d])
		} else {
			for k, v := range m.SVar {
				gr.SVar[k] = row[k] + 0.5 - 0.5/v
			}
		}
		r := &runs[i]
		r.old = m.State()
		m.fixedPoint(gr)
		r.target = m.State()
		r.lastF = r.F1 // a run that keeps its old variances keeps F1 and the gradient gradAt left in gs
		r.active = true
	}
}

// damp damps each run's variances to the first of λ = 1, ½, ¼, ⅛ with F(old + λ(fixed point − old)) ≤ F1, one
// batched evaluation of the runs still damping per λ; the gradient of the runs settled at a λ goes into their rows
// of gs.
func (u *updater) damp() error {
	bt, x, runs := u.bt, u.x, u.runs
	cur := make([]float64, len(runs[0].old))
	for lam := 1.0; lam > 0.1; lam /= 2 {
		k, err := u.front(func(r *updRun) bool { return r.active })
		if err != nil {
			return err
		}
		if k == 0 {
			break
		}
		for i := range k {
			r := &runs[i]
			for j := range cur {
				cur[j] = r.old[j] + lam*(r.target[j]-r.old[j])
			}
			if err := bt.SetState(i, cur); err != nil {
				return err
			}
		}
		xk := x.Batches(0, k)
		if err := bt.forward(xk, k); err != nil {
			return err
		}
		var kept []int
		for i := range k {
			if r := &runs[i]; bt.vals[i] <= r.F1 {
				r.active = false
				r.lastF = bt.vals[i]
				kept = append(kept, i)
			}
		}
		if len(kept) == 0 {
			continue
		}
		// The gradient of the runs settled now, from this pass's intermediates, into their rows of gs.
		gs := bt.gs
		if len(kept) < k {
			gs = bt.diff
		}
		if err := bt.backward(xk, gs.Batches(0, k), k); err != nil {
			return err
		}
		for _, i := range kept {
			if len(kept) < k {
				if err := bt.be.Copy(bt.gs.Item(i), bt.diff.Item(i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// finish puts the runs back in their slots, gives the runs still damping their old variances, and records each
// run's final F and the means at which it was taken.
func (u *updater) finish() error {
	bt, x, n, runs, perm := u.bt, u.x, u.n, u.runs, u.perm
	for i := range n {
		for perm[i] != i {
			if err := u.swap(i, perm[i]); err != nil {
				return err
			}
		}
	}
	for i := range n {
		r := &runs[i]
		if r.active {
			if err := bt.SetState(i, r.old); err != nil {
				return err
			}
			bt.models[i].fpRejected++
		}
		bt.models[i].updates++
		bt.lastF[i] = r.lastF
	}
	if err := bt.be.Copy(bt.last.Batches(0, n), x); err != nil {
		return err
	}
	bt.lastN, bt.lastOK = n, true
	return nil
}

// updRun is Update's state of one run: F before and after the hyperparameter update, F at the state it settles,
// the states before the update, before the fixed point and at it, and whether the hyperparameter update is undone
// (redo) and the damping still searches (active).
type updRun struct {
	F0, F1, lastF      float64
	saved, old, target []float64
	redo, active       bool
}
