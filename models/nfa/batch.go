package nfa

import (
	"fmt"
	"math"
	"slices"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// Batch is nonlinear factor analysis (Config.Dynamic false) of B independent runs with equal T, p, d, H and
// Gauss–Hermite order — different data sets or initialisations — evaluated together on a backend: the batch of
// problems of notes §5 for the NFA experiments' repetitions. The runs' means are one tensor x of B×1×Dim (run b's x
// as Model's: s̄ (T×d), then A, a, B, b), in backend memory; each run's Model holds its state (variances and noise
// hyperparameters), which the batch mirrors on the backend.
//
// What runs on the backend, all runs and time steps in one call each (ops 5–10 of notes §5): the layer-1 moments
// Y = S̄Āᵀ + 1āᵀ, the weight part (S̄² + S̃)Ãᵀ + 1ãᵀ and the source part S̃(Ā²)ᵀ as batched GEMMs; the Gauss–Hermite
// nonlinearity as Q passes of Map(Tanh) and Axpby, with the clamp max(v, 0) as (v + |v|)/2; the output mean and
// weight-variance terms as GEMMs; the Jacobian term Σ_j J_tij² s̃_tj without a loop over t, as one GEMM per run with
// the Khatri–Rao factor C (H × Td, C_h,(t,j) = k_th Ā_hj, built by n·H outer products), J = B̄C, squared, scaled by
// S̃ (ScaleCols) and summed over j (Reduce); the squared errors; and the reverse pass of all of it, the same
// formulas as prop.backward in matrix form. What stays on the host (O(p) per run and per evaluation): the sums of
// the squared errors, Σ(s̄² + s̃) and Σw̄² come back, and F is completed with the noise, prior and entropy terms of
// the state; between steps (Update) the noise hyperparameters, the fixed-point variances (13) and their damping run
// on each run's Model, as Model.Update does, and the new state goes back. So a run's F and gradient are its
// Model's up to round-off (TestBatchMatchesModel).
//
// The batch covers the flat model with the Gauss–Hermite moments, which the NFA experiments use: NewBatch refuses
// the NSSM, the Taylor moments, ARD and the hierarchical priors.
type Batch struct {
	be            backend.Backend
	B             int
	T, P, D, H, Q int
	fsz, dim      int
	models        []*Model
	shared        bool      // one data set for every run: stored once, broadcast
	z, w          []float64 // Gauss–Hermite nodes and weights
	wsum          float64

	xd, xSwap *tensor.Tensor // data B×T×p (1×T×p when shared); swap scratch 1×T×p
	vr, gv    *tensor.Tensor // B×1×Dim in x's layout: the variances, and ∂F/∂(variances) without the prior and entropy terms
	gs        *tensor.Tensor // B×1×Dim: the gradient of the means at Update's last evaluation
	// Update's last evaluation, when every run kept the full fixed-point step: its means (B×1×Dim) and F; Grad at
	// the same means and state takes it from gs instead of evaluating again, as Model.Grad does after Update.
	last, diff *tensor.Tensor
	maxd, hMax *tensor.Tensor // B×1×1: max|x − last| per run, and its host copy
	lastF      []float64
	lastN      int
	lastOK     bool
	// The line search's best point of each slot since its state last changed (best: F below bestF), with F and the
	// sums F is made of, so that Update at the accepted point need not evaluate it again.
	best     *tensor.Tensor // B×1×Dim
	bestSums *tensor.Tensor // host B×1×(p+2)
	bestF    []float64
	psiN     *tensor.Tensor // B×1×p: e^{2ṽ−2v̄} of the noise log-stds
	psiH     *tensor.Tensor // B×1×p: psiN/2
	ones     *tensor.Tensor // 1×T×1
	onesTH   *tensor.Tensor // 1×T×H
	sq, td   *tensor.Tensor // B×T×d: s̄² + s̃, scratch
	tq       *tensor.Tensor // B×(Q·T)×H: tanh at every node
	// B×T×H: layer-1 moments, the nonlinearity's outputs and their gradients, scratch
	y, yw, ys, yt, sd, m1, m2, k, res, phw, pv, w1, w2, gphm, gphw, gk, gys, gy, gsum, gyw *tensor.Tensor
	a2, ac, hd                                                                             *tensor.Tensor // B×H×d
	b2, ph                                                                                 *tensor.Tensor // B×p×H
	kt, gkt                                                                                *tensor.Tensor // B×H×T
	c, mm                                                                                  *tensor.Tensor // B×H×(T·d)
	j, j2, gj                                                                              *tensor.Tensor // B×p×(T·d)
	xm, xv, r, e, tp                                                                       *tensor.Tensor // B×T×p
	jt                                                                                     *tensor.Tensor // B×(p·T)×1
	h1, h2, h3                                                                             *tensor.Tensor // B×1×H
	sums                                                                                   *tensor.Tensor // B×1×(p+2): Σ_t E_ti, Σ(s̄² + s̃), Σw̄²
	alpha                                                                                  *tensor.Tensor // B×1×1
	ap                                                                                     *tensor.Tensor // B×1×Dim
	hSums, hRow, hPsi, hAlpha                                                              *tensor.Tensor // host copies
	cst                                                                                    []float64      // per run: the terms of F fixed by the state
	F                                                                                      []float64      // per run: F of the last evaluation
	owned                                                                                  []*tensor.Tensor
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
		case c.Dynamic || c.Moments != GaussHermite || c.ARD || c.Hierarchical:
			return nil, fmt.Errorf("%w: model %d: the batch runs NFA with the Gauss–Hermite moments and flat priors, "+
				"not dynamic=%v moments=%v ARD=%v hierarchical=%v", ErrBadInput, i, c.Dynamic, c.Moments, c.ARD, c.Hierarchical)
		case m.T != m0.T || m.P != m0.P || c.D != m0.Cfg.D || c.H != m0.Cfg.H || c.GHOrder != m0.Cfg.GHOrder:
			return nil, fmt.Errorf("%w: model %d has T, p, d, H, GH = %d, %d, %d, %d, %d, want %d, %d, %d, %d, %d",
				ErrBadInput, i, m.T, m.P, c.D, c.H, c.GHOrder, m0.T, m0.P, m0.Cfg.D, m0.Cfg.H, m0.Cfg.GHOrder)
		case slices.Index(models, m) != i:
			return nil, fmt.Errorf("%w: model %d is also run %d; each run needs its own Model", ErrBadInput, i,
				slices.Index(models, m))
		}
	}
	B, T, P, d, H := len(models), m0.T, m0.P, m0.Cfg.D, m0.Cfg.H
	bt := &Batch{be: be, B: B, T: T, P: P, D: d, H: H, Q: m0.Cfg.GHOrder, fsz: m0.f.size(), models: slices.Clone(models),
		shared: true, cst: make([]float64, B), F: make([]float64, B)}
	bt.dim = T*d + bt.fsz
	bt.z, bt.w = GHNodes(bt.Q)
	for _, w := range bt.w {
		bt.wsum += w
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
	bt.vr, bt.gv, bt.gs, bt.ap = alloc(B, 1, bt.dim), alloc(B, 1, bt.dim), alloc(B, 1, bt.dim), alloc(B, 1, bt.dim)
	bt.last, bt.diff, bt.maxd = alloc(B, 1, bt.dim), alloc(B, 1, bt.dim), alloc(B, 1, 1)
	bt.lastF = make([]float64, B)
	bt.best, bt.bestF = alloc(B, 1, bt.dim), make([]float64, B)
	bt.psiN, bt.psiH = alloc(B, 1, P), alloc(B, 1, P)
	bt.ones, bt.onesTH = alloc(1, T, 1), alloc(1, T, H)
	bt.sq, bt.td = alloc(B, T, d), alloc(B, T, d)
	bt.tq = alloc(B, bt.Q*T, H)
	for _, t := range []**tensor.Tensor{&bt.y, &bt.yw, &bt.ys, &bt.yt, &bt.sd, &bt.m1, &bt.m2, &bt.k, &bt.res, &bt.phw,
		&bt.pv, &bt.w1, &bt.w2, &bt.gphm, &bt.gphw, &bt.gk, &bt.gys, &bt.gy, &bt.gsum, &bt.gyw} {
		*t = alloc(B, T, H)
	}
	bt.a2, bt.ac, bt.hd = alloc(B, H, d), alloc(B, H, d), alloc(B, H, d)
	bt.b2, bt.ph = alloc(B, P, H), alloc(B, P, H)
	bt.kt, bt.gkt = alloc(B, H, T), alloc(B, H, T)
	bt.c, bt.mm = alloc(B, H, T*d), alloc(B, H, T*d)
	bt.j, bt.j2, bt.gj = alloc(B, P, T*d), alloc(B, P, T*d), alloc(B, P, T*d)
	bt.xm, bt.xv, bt.r, bt.e, bt.tp = alloc(B, T, P), alloc(B, T, P), alloc(B, T, P), alloc(B, T, P), alloc(B, T, P)
	bt.jt = alloc(B, P*T, 1)
	bt.h1, bt.h2, bt.h3 = alloc(B, 1, H), alloc(B, 1, H), alloc(B, 1, H)
	bt.sums = alloc(B, 1, P+2)
	bt.alpha = alloc(B, 1, 1)
	if err == nil {
		hx := tensor.NewHost(xb, T, P)
		for i := range xb {
			dst, _, _, _ := hx.Matrix(i)
			copy(dst, models[i].X)
		}
		o := &ops{be: be}
		o.do(func() error { return be.Upload(bt.xd, hx) })
		o.fill(bt.ones, 1)
		o.fill(bt.onesTH, 1)
		err = o.err
	}
	bt.hSums, bt.hRow, bt.hPsi, bt.hAlpha = tensor.NewHost(B, 1, P+2), tensor.NewHost(B, 1, bt.dim),
		tensor.NewHost(B, 1, P), tensor.NewHost(B, 1, 1)
	bt.hMax, bt.bestSums = tensor.NewHost(B, 1, 1), tensor.NewHost(B, 1, P+2)
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

// Model returns the model in slot i (after MinimizeBatch returns, run i's).
func (bt *Batch) Model(i int) *Model { return bt.models[i] }

// sync uploads the state of the model in slot i (its variances in x's layout and its noise precisions) and
// recomputes the terms of F that depend on the state alone: T Σ_i(½log 2π + v̄_n,i) of (102), the constants of the
// N(0, 1) priors (98)–(99), ½Σw̃ − ½Σlog(2πe w̃) of the weights, the noise log-stds' priors and entropies (100)–(101)
// and the source entropy −½Σlog(2πe s̃).
func (bt *Batch) sync(i int) error {
	bt.lastOK = false
	bt.bestF[i] = math.Inf(1)
	m := bt.models[i]
	row, _, _, _ := bt.hRow.Matrix(i)
	n := bt.T * bt.D
	copy(row, m.SVar)
	copy(row[n:], m.WVarF)
	ps, _, _, _ := bt.hPsi.Matrix(i)
	copy(ps, psi(m.VnMean, m.VnVar))
	var F kahan
	if !allPositive(m.SVar, m.WVarF, m.VnVar) {
		F.add(math.NaN())
	}
	F.add(float64(n+bt.fsz) * 0.5 * log2pi)
	for k := range m.VnMean {
		F.add(float64(bt.T) * (0.5*log2pi + m.VnMean[k]))
		pr, _ := m.childPrior(srcVn, k, vague)
		c, _ := pr.cost(m.VnMean[k], m.VnVar[k])
		F.add(c - 0.5*math.Log(2*math.Pi*math.E*m.VnVar[k]))
	}
	for _, v := range m.WVarF {
		F.add(0.5*v - 0.5*math.Log(2*math.Pi*math.E*v))
	}
	for _, v := range m.SVar {
		F.add(-0.5 * math.Log(2*math.Pi*math.E*v))
	}
	bt.cst[i] = F.sum()
	o := &ops{be: bt.be}
	o.do(func() error { return bt.be.Upload(bt.vr.Item(i), bt.hRow.Item(i)) })
	o.do(func() error { return bt.be.Upload(bt.psiN.Item(i), bt.hPsi.Item(i)) })
	o.scale(bt.psiH.Item(i), 0.5, bt.psiN.Item(i))
	return o.err
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

// parts returns the views of the first n items of t (b×1×Dim, x's layout): s̄ (T×d), A (H×d), a (1×H), B (p×H),
// b (1×p), and all the weights (1×|f|).
func (bt *Batch) parts(t *tensor.Tensor, n int) (s, A, a, B, b, w *tensor.Tensor) {
	T, d, H, P := bt.T, bt.D, bt.H, bt.P
	o := T * d
	s = view(t, n, 0, T, d, d)
	A = view(t, n, o, H, d, d)
	a = view(t, n, o+H*d, 1, H, H)
	B = view(t, n, o+H*d+H, P, H, H)
	b = view(t, n, o+H*d+H+P*H, 1, P, P)
	w = view(t, n, o, 1, bt.fsz, bt.fsz)
	return
}

// flatS returns the sources' part of t (b×1×Dim) as n×1×Td.
func (bt *Batch) flatS(t *tensor.Tensor, n int) *tensor.Tensor {
	return view(t, n, 0, 1, bt.T*bt.D, bt.T*bt.D)
}

func (bt *Batch) data(n int) *tensor.Tensor {
	if bt.shared {
		return bt.xd
	}
	return bt.xd.Batches(0, n)
}

// node returns tanh at Gauss–Hermite node q of the first n runs (n×T×H).
func (bt *Batch) node(q, n int) *tensor.Tensor {
	return bt.tq.Batches(0, n).Slice(q*bt.T, (q+1)*bt.T, 0, bt.H)
}

// forward evaluates F at the means x of the first n runs into bt.F, leaving every intermediate for backward.
func (bt *Batch) forward(x *tensor.Tensor, n int) error {
	T, d, P, H := bt.T, bt.D, bt.P, bt.H
	o := &ops{be: bt.be}
	it := func(t *tensor.Tensor) *tensor.Tensor { return t.Batches(0, n) }
	S, A, a, Bm, bb, W := bt.parts(x, n)
	V, Av, av, Bv, bv, _ := bt.parts(bt.vr, n)
	sq, y, yw, ys, yt, sd := it(bt.sq), it(bt.y), it(bt.yw), it(bt.ys), it(bt.yt), it(bt.sd)
	m1, m2, k, res, phw, pv, w1 := it(bt.m1), it(bt.m2), it(bt.k), it(bt.res), it(bt.phw), it(bt.pv), it(bt.w1)
	// Layer 1 (op. 5): ȳ = S̄Āᵀ + 1āᵀ, the weight part (S̄² + S̃)Ãᵀ + 1ãᵀ, the source part S̃(Ā²)ᵀ.
	o.mul(sq, S, S)
	o.axpby(sq, 1, sq, 1, V)
	o.gemm(nt, tr, 1, S, A, 0, y)
	o.gemm(nt, nt, 1, bt.ones, a, 1, y)
	o.gemm(nt, tr, 1, sq, Av, 0, yw)
	o.gemm(nt, nt, 1, bt.ones, av, 1, yw)
	o.mul(it(bt.a2), A, A)
	o.gemm(nt, tr, 1, V, it(bt.a2), 0, ys)
	o.axpby(yt, 1, ys, 1, yw)
	// Gauss–Hermite moments (op. 6, prop.nonlin): E tanh, E tanh², the slope k = Σw − E tanh² (Σ w_q(1 − t_q²)) and the
	// residual variance max(E tanh² − (E tanh)² − k²ys, 0).
	o.mapf(sd, backend.Sqrt, yt)
	o.fill(m1, 0)
	o.fill(m2, 0)
	for q := range bt.Q {
		u := bt.node(q, n)
		o.axpby(u, 1, y, bt.z[q], sd)
		o.mapf(u, backend.Tanh, u)
		o.axpby(m1, bt.w[q], u, 1, m1)
		o.mul(w1, u, u)
		o.axpby(m2, bt.w[q], w1, 1, m2)
	}
	o.axpby(k, bt.wsum, bt.onesTH, -1, m2)
	o.mul(w1, m1, m1)
	o.axpby(res, 1, m2, -1, w1)
	o.mul(w1, k, k)
	o.mul(w1, w1, ys)
	o.axpby(res, 1, res, -1, w1)
	o.mapf(w1, backend.Abs, res)
	o.axpby(phw, 0.5, res, 0.5, w1)
	// Layer 2 (op. 7): x̄ = M1 B̄ᵀ + 1b̄ᵀ; x̃ = pv B̃ᵀ + phw (B̄²)ᵀ + 1b̃ᵀ + Σ_j J_tij² s̃_tj with pv = E φ² = m1² + k²ys + phw.
	xm, xv := it(bt.xm), it(bt.xv)
	o.gemm(nt, tr, 1, m1, Bm, 0, xm)
	o.gemm(nt, nt, 1, bt.ones, bb, 1, xm)
	o.mul(pv, m1, m1)
	o.mul(w1, k, k)
	o.mul(w1, w1, ys)
	o.axpby(pv, 1, pv, 1, w1)
	o.axpby(pv, 1, pv, 1, phw)
	o.gemm(nt, tr, 1, pv, Bv, 0, xv)
	o.mul(it(bt.b2), Bm, Bm)
	o.gemm(nt, tr, 1, phw, it(bt.b2), 1, xv)
	o.gemm(nt, nt, 1, bt.ones, bv, 1, xv)
	// The Jacobian J_t = B̄ diag(k_t) Ā of every step at once (ops 8–9): C_h,(t,j) = k_th Ā_hj by n·H outer products,
	// J = B̄C (p × Td), then Σ_j J² s̃ over each step's d columns.
	o.transpose(it(bt.kt), k)
	o.copy(it(bt.ac), A)
	o.gemm(nt, nt, 1, re(bt.kt, n*H, T, 1), re(bt.ac, n*H, 1, d), 0, re(bt.c, n*H, T, d))
	o.gemm(nt, nt, 1, Bm, it(bt.c), 0, it(bt.j))
	o.mul(it(bt.j2), it(bt.j), it(bt.j))
	o.scaleCols(it(bt.gj), it(bt.j2), bt.flatS(bt.vr, n))
	o.sum(re(bt.jt, n, P*T, 1), backend.AxisCols, re(bt.gj, n, P*T, d))
	o.transpose(it(bt.tp), re(bt.jt, n, P, T))
	o.axpby(xv, 1, xv, 1, it(bt.tp))
	// Squared errors E_ti = (x̄ − x)² + x̃ and the sums F needs.
	r, e, sums := it(bt.r), it(bt.e), it(bt.sums)
	o.axpby(r, 1, xm, -1, bt.data(n))
	o.mul(e, r, r)
	o.axpby(e, 1, e, 1, xv)
	o.sum(sums.Slice(0, 1, 0, P), backend.AxisRows, e)
	o.sum(sums.Slice(0, 1, P, P+1), backend.AxisAll, sq)
	o.rowDots(sums.Slice(0, 1, P+1, P+2), W, W)
	hs := bt.hSums.Batches(0, n)
	o.do(func() error { return bt.be.Download(hs, sums) })
	if o.err != nil {
		return o.err
	}
	for i := range n {
		s, _, _, _ := hs.Matrix(i)
		ps, _, _, _ := bt.hPsi.Matrix(i)
		F := kahan{s: bt.cst[i]}
		for k := range P {
			F.add(0.5 * ps[k] * s[k])
		}
		F.add(0.5 * s[P])
		F.add(0.5 * s[P+1])
		bt.F[i] = F.sum()
	}
	return nil
}

// backward writes ∂F/∂x into g and ∂F/∂(variances), without the prior and entropy terms of the variances, into
// bt.gv for the first n runs, after forward at the same x: prop.backward in matrix form, with ∂F/∂x̄ = psiN ⊙ (x̄ − x)
// and ∂F/∂x̃ = psiN/2 (102).
func (bt *Batch) backward(x, g *tensor.Tensor, n int) error {
	T, d, P, H := bt.T, bt.D, bt.P, bt.H
	o := &ops{be: bt.be}
	it := func(t *tensor.Tensor) *tensor.Tensor { return t.Batches(0, n) }
	S, A, _, Bm, _, W := bt.parts(x, n)
	V, Av, _, Bv, _, _ := bt.parts(bt.vr, n)
	gS, gA, ga, gB, gb, gW := bt.parts(g, n)
	gV, gAv, gav, gBv, gbv, _ := bt.parts(bt.gv, n)
	psiN, psiH := it(bt.psiN), it(bt.psiH)
	m1, k, ys, phw, pv, res, sd := it(bt.m1), it(bt.k), it(bt.ys), it(bt.phw), it(bt.pv), it(bt.res), it(bt.sd)
	w1, w2, h1, h2, h3 := it(bt.w1), it(bt.w2), it(bt.h1), it(bt.h2), it(bt.h3)
	gphm, gphw, gk, gys, gy, gsum, gyw := it(bt.gphm), it(bt.gphw), it(bt.gk), it(bt.gys), it(bt.gy), it(bt.gsum), it(bt.gyw)
	j, j2, gj, c, mm, Vrow := it(bt.j), it(bt.j2), it(bt.gj), it(bt.c), it(bt.mm), bt.flatS(bt.vr, n)
	// Output layer: ∂F/∂x̄ in r, b and b̃.
	r := it(bt.r)
	o.scaleCols(r, r, psiN)
	o.sum(gb, backend.AxisRows, r)
	o.scale(gbv, float64(T), psiH)
	// Per hidden unit, constant over t: u = Σ_i psiH_i B̃_ih = ∂F/∂phv and w2 = Σ_i psiH_i B̄_ih² = ∂F/∂phw (direct).
	o.gemm(nt, nt, 1, psiH, Bv, 0, h1)
	o.gemm(nt, nt, 1, psiH, it(bt.b2), 0, h2)
	o.gemm(nt, nt, 1, r, Bm, 0, gphm) // ∂F/∂phm = (∂F/∂x̄) B̄ + 2 m1 ⊙ u
	o.scaleCols(w1, m1, h1)
	o.axpby(gphm, 1, gphm, 2, w1)
	o.axpby(h3, 1, h1, 1, h2) // ∂F/∂phw with phv = k²ys + phw
	o.gemm(nt, nt, 1, bt.ones, h3, 0, gphw)
	// ∂F/∂J = psiN J s̃, and the Jacobian path into B̄ (gj Cᵀ), s̃ (Σ_i psiH_i J²) and, through M = B̄ᵀ gj, into k and Ā.
	o.scaleRows(gj, j, re(bt.psiN, n, P, 1))
	o.scaleCols(gj, gj, Vrow)
	o.gemm(tr, nt, 1, r, m1, 0, gB)
	o.sum(h3, backend.AxisRows, phw)
	o.gemm(tr, nt, 1, psiN, h3, 0, it(bt.ph))
	o.mul(it(bt.ph), it(bt.ph), Bm)
	o.axpby(gB, 1, gB, 1, it(bt.ph))
	o.gemm(nt, tr, 1, gj, c, 1, gB)
	o.sum(h3, backend.AxisRows, pv)
	o.gemm(tr, nt, 1, psiH, h3, 0, gBv)
	o.gemm(nt, nt, 1, psiH, j2, 0, bt.flatS(bt.gv, n))
	o.gemm(tr, nt, 1, Bm, gj, 0, mm)
	o.gemm(nt, tr, 1, re(bt.mm, n*H, T, d), re(bt.ac, n*H, 1, d), 0, re(bt.gkt, n*H, T, 1))
	o.transpose(gk, it(bt.gkt))
	o.mul(w1, k, ys) // ∂F/∂k += 2 k ys u, ∂F/∂ys = k² u
	o.scaleCols(w1, w1, h1)
	o.axpby(gk, 1, gk, 2, w1)
	o.mul(w1, k, k)
	o.scaleCols(gys, w1, h1)
	// Through the Gauss–Hermite moments (prop.nonlinBack): no gradient through the clamped residual; with
	// gm1 = ∂phm − 2 m1 ∂phw and gkk = ∂k − 2 k ys ∂phw, each node adds w_q (1 − t²)(gm1 + 2t(∂phw − gkk)) to ∂ȳ and
	// z_q times that to ∂√yt.
	o.mapf(w1, backend.Step, res)
	o.mul(gphw, gphw, w1)
	o.mul(w1, m1, gphw)
	o.axpby(gphm, 1, gphm, -2, w1)
	o.mul(w1, k, ys)
	o.mul(w1, w1, gphw)
	o.axpby(gk, 1, gk, -2, w1)
	o.mul(w1, k, k)
	o.mul(w1, w1, gphw)
	o.axpby(gys, 1, gys, -1, w1)
	o.axpby(gk, 2, gphw, -2, gk)
	o.fill(gy, 0)
	o.fill(gsum, 0)
	for q := range bt.Q {
		u := bt.node(q, n)
		o.mul(w1, u, u)
		o.axpby(w1, 1, bt.onesTH, -1, w1)
		o.mul(w2, gk, u)
		o.axpby(w2, 1, w2, 1, gphm)
		o.mul(w1, w1, w2)
		o.axpby(gy, bt.w[q], w1, 1, gy)
		o.axpby(gsum, bt.w[q]*bt.z[q], w1, 1, gsum)
	}
	o.div(w1, gsum, sd) // ∂F/∂yt = ∂√yt/(2√yt), and yt = ys + yw
	o.axpby(gys, 1, gys, 0.5, w1)
	o.scale(gyw, 0.5, w1)
	// Layer 1.
	o.sum(ga, backend.AxisRows, gy)
	o.sum(gav, backend.AxisRows, gyw)
	hd, td := it(bt.hd), it(bt.td)
	o.gemm(tr, nt, 1, gy, S, 0, gA) // ∂Ā = gyᵀS̄ + 2Ā ⊙ (gysᵀS̃) + Σ_t k_th M_h,(t,·)
	o.gemm(tr, nt, 1, gys, V, 0, hd)
	o.mul(hd, hd, A)
	o.axpby(gA, 1, gA, 2, hd)
	o.gemm(nt, nt, 1, re(bt.kt, n*H, 1, T), re(bt.mm, n*H, T, d), 0, re(bt.hd, n*H, 1, d))
	o.axpby(gA, 1, gA, 1, hd)
	o.gemm(tr, nt, 1, gyw, it(bt.sq), 0, gAv)
	o.gemm(nt, nt, 1, gyw, Av, 0, td) // ∂s̃ += gyw Ã + gys Ā²; ∂s̄ = gy Ā + 2 s̄ ⊙ (gyw Ã) + s̄ (the N(0, 1) prior)
	o.axpby(gV, 1, gV, 1, td)
	o.gemm(nt, nt, 1, gys, it(bt.a2), 1, gV)
	o.gemm(nt, nt, 1, gy, A, 0, gS)
	o.mul(td, td, S)
	o.axpby(gS, 1, gS, 2, td)
	o.axpby(gS, 1, gS, 1, S)
	o.axpby(gW, 1, gW, 1, W) // the weights' N(0, 1) prior
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
	copy(f, bt.F[:n])
	for i := range n {
		if bt.F[i] < bt.bestF[i] {
			bt.bestF[i] = bt.F[i]
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

// Grad writes F, the gradient g and the natural gradient gt = S̃ ⊙ g (the variances times g, eq. 35) of each run
// (rcg.BatchObjective).
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
		copy(f, bt.F[:n])
	}
	return bt.be.Mul(gt, bt.vr.Batches(0, n), g)
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

// Swap exchanges the models, state and data of slots i and j (rcg.BatchObjective).
func (bt *Batch) Swap(i, j int) error {
	if i == j {
		return nil
	}
	bt.models[i], bt.models[j] = bt.models[j], bt.models[i]
	if err := bt.sync(i); err != nil {
		return err
	}
	if err := bt.sync(j); err != nil {
		return err
	}
	if bt.shared {
		return nil
	}
	o := &ops{be: bt.be}
	xi, xj := bt.xd.Item(i), bt.xd.Item(j)
	o.copy(bt.xSwap, xi)
	o.copy(xi, xj)
	o.copy(xj, bt.xSwap)
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
// evaluation (the results of runs no longer searching are not used). Like Model.Update, it takes F and the squared
// errors at x from the line search's evaluation there when it can (best), and leaves the gradient at the final
// state for the next Grad: each run's row of gs is written by the backward pass of the evaluation at which its
// state was settled.
func (bt *Batch) Update(x *tensor.Tensor) error {
	n, err := bt.check("Update", x)
	if err != nil {
		return err
	}
	F0 := make([]float64, n)
	if ok, err := bt.atBest(x, n); err != nil {
		return err
	} else if ok {
		copy(F0, bt.bestF[:n])
		if err := tensor.CopyHost(bt.hSums.Batches(0, n), bt.bestSums.Batches(0, n)); err != nil {
			return err
		}
	} else {
		if err := bt.forward(x, n); err != nil {
			return err
		}
		copy(F0, bt.F[:n])
	}
	saved := make([][]float64, n)
	for i := range n {
		m := bt.models[i]
		saved[i] = m.State()
		s, _, _, _ := bt.hSums.Matrix(i)
		copy(m.obsE, s[:bt.P])
		m.updateHyper(nil, true) // NFA without ARD or hierarchy: the noise log-stds only
		if err := bt.sync(i); err != nil {
			return err
		}
	}
	// F1 and the gradients at the new hyperparameters (means into gs, variances to the host), again where they
	// were reverted.
	F1 := make([]float64, n)
	gradAt := func() error {
		if err := bt.forward(x, n); err != nil {
			return err
		}
		if err := bt.backward(x, bt.gs.Batches(0, n), n); err != nil {
			return err
		}
		copy(F1, bt.F[:n])
		return bt.be.Download(bt.hRow.Batches(0, n), bt.gv.Batches(0, n))
	}
	if err := gradAt(); err != nil {
		return err
	}
	redo := false
	for i := range n {
		if !(F1[i] <= F0[i]+1e-12*math.Abs(F0[i])) || math.IsNaN(F1[i]) {
			m := bt.models[i]
			if err := m.SetState(saved[i]); err != nil {
				return err
			}
			m.fpRejected++
			if err := bt.sync(i); err != nil {
				return err
			}
			redo = true
		}
	}
	if redo {
		if err := gradAt(); err != nil {
			return err
		}
	}
	old, target := make([][]float64, n), make([][]float64, n)
	nS := bt.T * bt.D
	for i := range n {
		m := bt.models[i]
		row, _, _, _ := bt.hRow.Matrix(i)
		gr := &Grad{SVar: make([]float64, nS), WVarF: make([]float64, bt.fsz)}
		for k, v := range m.SVar { // with the N(0, 1) prior's ½ and the entropy's −½/s̃
			gr.SVar[k] = row[k] + 0.5 - 0.5/v
		}
		for k, v := range m.WVarF {
			gr.WVarF[k] = row[nS+k] + 0.5 - 0.5/v
		}
		old[i] = m.State()
		m.fixedPoint(gr)
		target[i] = m.State()
	}
	lastF := slices.Clone(F1) // a run that keeps its old variances keeps F1 and the gradient gradAt left in gs
	active := make([]bool, n)
	for i := range active {
		active[i] = true
	}
	cur := make([]float64, len(old[0]))
	for lam := 1.0; lam > 0.1 && slices.Contains(active, true); lam /= 2 {
		for i := range n {
			if !active[i] {
				continue
			}
			for k := range cur {
				cur[k] = old[i][k] + lam*(target[i][k]-old[i][k])
			}
			if err := bt.SetState(i, cur); err != nil {
				return err
			}
		}
		if err := bt.forward(x, n); err != nil {
			return err
		}
		var kept []int
		for i := range n {
			if active[i] && bt.F[i] <= F1[i] {
				active[i] = false
				kept = append(kept, i)
				lastF[i] = bt.F[i]
			}
		}
		if len(kept) == 0 {
			continue
		}
		// The gradient of the runs settled now, from this pass's intermediates, into their rows of gs.
		gs := bt.gs
		if len(kept) < n {
			gs = bt.diff
		}
		if err := bt.backward(x, gs.Batches(0, n), n); err != nil {
			return err
		}
		for _, i := range kept {
			if len(kept) < n {
				if err := bt.be.Copy(bt.gs.Item(i), bt.diff.Item(i)); err != nil {
					return err
				}
			}
		}
	}
	for i := range n {
		if active[i] {
			if err := bt.SetState(i, old[i]); err != nil {
				return err
			}
			bt.models[i].fpRejected++
		}
		bt.models[i].updates++
	}
	if err := bt.be.Copy(bt.last.Batches(0, n), x); err != nil {
		return err
	}
	copy(bt.lastF, lastF)
	bt.lastN, bt.lastOK = n, true
	return nil
}
