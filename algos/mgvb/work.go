package mgvb

import (
	"math"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/manifold"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/rng/qmc"
	"github.com/geovb/geovb/tensor"
)

// work holds the backend tensors of a batched fit. Shapes: v = B×d×1, mat = B×d×d, samp = B×d×S, row = B×1×S.
type work struct {
	b   backend.Backend
	m   model.Batched
	spd *manifold.SPD // the geometry of Σ: natural gradient, retraction, transport
	cfg Config
	B   int
	d   int
	S   int

	mu, sigma, l       *T // current point, Cholesky factor of Σ
	sigmaOld, lOld     *T
	mMu, mS            *T // momentum
	gMu, gS            *T // Euclidean gradient
	nMu, nS            *T // natural gradient
	ccMu, ccS          *T // control variates (centred part, see grad)
	bestMu, bestS      *T
	eps, theta, a, a2  *T // samp
	ah, a2h            *T // samp
	lp, en, ht         *T // row
	g1, gh, q1, qh     *T // v
	pm, m1, mh, qq, t1 *T // mat
	t2                 *T // mat
	mPrev              *T // mat, the momentum before transport (only with Config.transportHook)
	ld                 *T // B×1×1
	nrm                *T // B×1×1
	eye, offEye, onesM *T // 1×d×d
	onesV              *T // 1×d×1
	ones               *T // 1×1×S
	sc                 *T // B×d×1 per-fit scalars for ScaleRows
	lgrad              *T // samp, ∇log p (reparameterisation)
	temps              []*T
	hostEps            *T // B×d×S host draws (RQMC only)

	hbarPrev  []float64 // mean of h of the previous batch (the control variate is h̄_prev + cc, see grad)
	lb        []float64 // lower-bound estimates of the last gradient evaluation
	gnorm     []float64 // Euclidean gradient norms (before clipping)
	draws     uint64    // gradient evaluations so far (draw counter)
	clipped   int
	safeguard int
}

func newWork(b backend.Backend, m model.Batched, cfg Config, B int) (*work, error) {
	d, S := m.Dim(), cfg.S
	spd, err := manifold.NewSPD(d)
	if err != nil {
		return nil, err
	}
	w := &work{b: b, m: m, spd: spd, cfg: cfg, B: B, d: d, S: S, hbarPrev: make([]float64, B), lb: make([]float64, B), gnorm: make([]float64, B)}
	alloc := func(batch, r, c int) *T {
		if err != nil {
			return nil
		}
		var t *T
		t, err = b.Alloc(tensor.Shape{Batch: batch, Rows: r, Cols: c})
		if err == nil {
			w.temps = append(w.temps, t)
		}
		return t
	}
	vs := []**T{&w.mu, &w.mMu, &w.gMu, &w.nMu, &w.ccMu, &w.bestMu, &w.g1, &w.gh, &w.q1, &w.qh, &w.sc}
	for _, p := range vs {
		*p = alloc(B, d, 1)
	}
	ms := []**T{&w.sigma, &w.l, &w.sigmaOld, &w.lOld, &w.mS, &w.gS, &w.nS, &w.ccS, &w.bestS, &w.pm, &w.m1, &w.mh, &w.qq, &w.t1, &w.t2}
	if cfg.transportHook != nil {
		ms = append(ms, &w.mPrev)
	}
	for _, p := range ms {
		*p = alloc(B, d, d)
	}
	ss := []**T{&w.eps, &w.theta, &w.a, &w.a2, &w.ah, &w.a2h}
	if cfg.Gradient == Reparameterisation {
		ss = append(ss, &w.lgrad)
	}
	for _, p := range ss {
		*p = alloc(B, d, S)
	}
	w.lp, w.en, w.ht = alloc(B, 1, S), alloc(B, 1, S), alloc(B, 1, S)
	w.ld, w.nrm = alloc(B, 1, 1), alloc(B, 1, 1)
	w.eye, w.offEye, w.ones = alloc(1, d, d), alloc(1, d, d), alloc(1, 1, S)
	w.onesM, w.onesV = alloc(1, d, d), alloc(1, d, 1)
	if err != nil {
		w.free()
		return nil, err
	}
	if cfg.Draws == RQMC {
		w.hostEps = tensor.NewHost(B, d, S)
	}
	he := tensor.NewHost(1, d, d)
	ho := tensor.NewHost(1, d, d)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			if i == j {
				he.Set(0, i, j, 1)
			} else {
				ho.Set(0, i, j, 1)
			}
		}
	}
	if err := b.Upload(w.eye, he); err != nil {
		return nil, err
	}
	if err := b.Upload(w.offEye, ho); err != nil {
		return nil, err
	}
	for _, o := range []*T{w.ones, w.onesM, w.onesV} {
		if err := b.Fill(o, 1); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func (w *work) free() {
	for _, t := range w.temps {
		w.b.Free(t)
	}
	w.temps = nil
	w.spd.Close()
}

// chol writes the lower Cholesky factor of s into l.
func (w *work) chol(l, s *T) error {
	if err := w.b.Copy(l, s); err != nil {
		return err
	}
	return w.b.Potrf(l)
}

// scalars uploads one value per fit into w.sc (B×d×1, the value repeated down the rows) for ScaleRows.
func (w *work) scalars(v []float64) error {
	h := tensor.NewHost(w.B, w.d, 1)
	for k := 0; k < w.B; k++ {
		for i := 0; i < w.d; i++ {
			h.Set(k, i, 0, v[k])
		}
	}
	return w.b.Upload(w.sc, h)
}

// download1 reads a B×1×1 tensor.
func (w *work) download1(t *T) ([]float64, error) {
	h := tensor.NewHost(w.B, 1, 1)
	if err := w.b.Download(h, t); err != nil {
		return nil, err
	}
	out := make([]float64, w.B)
	for k := range out {
		out[k] = h.At(k, 0, 0)
	}
	return out, nil
}

// logDet writes Σ_i log L_ii of each fit into w.ld: L∘I + (1 − I) has the diagonal of L and ones elsewhere, whose
// logs sum to log det L (no det(), which under- or overflows).
func (w *work) logDet() error {
	b := w.b
	if err := b.Mul(w.t1, w.l, w.eye); err != nil {
		return err
	}
	if err := b.Axpby(w.t1, 1, w.t1, 1, w.offEye); err != nil {
		return err
	}
	if err := b.Map(w.t1, backend.Log, 1, w.t1); err != nil {
		return err
	}
	return b.Reduce(w.ld, backend.ReduceSum, backend.AxisAll, w.t1)
}

// fillDraws writes the standard normal draws of the next gradient evaluation into eps: Philox normals from stream 0,
// or for RQMC a freshly scrambled Sobol' set per fit from stream 1 (fit k of evaluation t takes the scramble words
// of set tB + k). Either way the draws depend only on the seed and the evaluation count, so a resumed fit redraws
// the same samples.
func (w *work) fillDraws() error {
	t := w.draws
	w.draws++
	if w.cfg.Draws != RQMC {
		return w.b.FillNormal(w.eps, rng.Counter{Seed: w.cfg.Seed, Stream: 0, Offset: t * uint64(w.B*w.d*w.S)})
	}
	n := w.d * w.S
	data := w.hostEps.Storage().Host()
	for k := 0; k < w.B; k++ {
		c := rng.Counter{Seed: w.cfg.Seed, Stream: 1, Offset: (t*uint64(w.B) + uint64(k)) * qmc.WordsPerDim * uint64(w.d)}
		if err := qmc.Normal(data[k*n:(k+1)*n], w.d, w.S, c); err != nil {
			return err
		}
	}
	return w.b.Upload(w.eps, w.hostEps)
}

// grad draws S samples at (μ, Σ = LLᵀ) and writes the Euclidean ELBO gradient into gMu, gS, the lower-bound
// estimates mean_s h_s into lb and the gradient norms into gnorm.
func (w *work) grad() error {
	b, d, S := w.b, w.d, float64(w.S)
	if err := w.fillDraws(); err != nil {
		return err
	}
	// Θ = μ1ᵀ + L E (TRMM), A = L⁻ᵀE so that a_s = Σ⁻¹(θ_s − μ) (TRSM).
	if err := b.Copy(w.theta, w.eps); err != nil {
		return err
	}
	if err := b.Trmm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, w.l, w.theta); err != nil {
		return err
	}
	if err := b.Gemm(blas.NoTrans, blas.NoTrans, 1, w.mu, w.ones, 1, w.theta); err != nil {
		return err
	}
	var grad *T // the score function needs log p only
	if w.cfg.Gradient == Reparameterisation {
		grad = w.lgrad
	}
	if err := w.m.LogDensityBatch(b, w.lp, grad, w.theta); err != nil {
		return err
	}
	if err := b.Reduce(w.en, backend.ReduceSumSq, backend.AxisRows, w.eps); err != nil {
		return err
	}
	if err := w.logDet(); err != nil {
		return err
	}
	hlp := tensor.NewHost(w.B, 1, w.S)
	hen := tensor.NewHost(w.B, 1, w.S)
	if err := b.Download(hlp, w.lp); err != nil {
		return err
	}
	if err := b.Download(hen, w.en); err != nil {
		return err
	}
	ld, err := w.download1(w.ld)
	if err != nil {
		return err
	}
	// h_s = log p(θ_s, y) − log q(θ_s), log q = −d/2 log 2π − Σ log L_ii − ½‖ε_s‖². Centred:
	// h̃ = h − h̄, which keeps the control-variate covariances free of the cancellation of h ≈ −10³.
	hbar := make([]float64, w.B)
	ht := tensor.NewHost(w.B, 1, w.S)
	for k := 0; k < w.B; k++ {
		sum := 0.0
		for s := 0; s < w.S; s++ {
			h := hlp.At(k, 0, s) + 0.5*float64(d)*math.Log(2*math.Pi) + ld[k] + 0.5*hen.At(k, 0, s)
			ht.Set(k, 0, s, h)
			sum += h
		}
		hbar[k] = sum / S
		w.lb[k] = hbar[k]
		for s := 0; s < w.S; s++ {
			ht.Set(k, 0, s, ht.At(k, 0, s)-hbar[k])
		}
	}
	if err := b.Copy(w.a, w.eps); err != nil {
		return err
	}
	if err := b.Trsm(blas.Left, blas.Lower, blas.Trans, blas.NonUnit, 1, w.l, w.a); err != nil {
		return err
	}
	// P = Σ⁻¹ by Cholesky solves.
	if err := b.Copy(w.pm, w.eye); err != nil {
		return err
	}
	if err := b.Potrs(w.l, w.pm); err != nil {
		return err
	}
	if err := b.Symmetrize(w.pm); err != nil {
		return err
	}
	if w.cfg.Gradient == Reparameterisation {
		if err := w.reparamGrad(); err != nil {
			return err
		}
	} else {
		if err := b.Upload(w.ht, ht); err != nil {
			return err
		}
		if err := w.scoreGrad(hbar); err != nil {
			return err
		}
	}
	// Norm over all d + d² entries (off-diagonals twice, as the authors' code counts them).
	if err := b.Reduce(w.nrm, backend.ReduceSumSq, backend.AxisAll, w.gMu); err != nil {
		return err
	}
	n1, err := w.download1(w.nrm)
	if err != nil {
		return err
	}
	if err := b.Reduce(w.nrm, backend.ReduceSumSq, backend.AxisAll, w.gS); err != nil {
		return err
	}
	n2, err := w.download1(w.nrm)
	if err != nil {
		return err
	}
	for k := range w.gnorm {
		w.gnorm[k] = math.Sqrt(n1[k] + n2[k])
	}
	return nil
}

// scoreGrad is the score-function estimator (5.1) with per-coordinate control variates, from weighted SYRK-type
// products only: with scores g_μ = a, g_Σ = −½P + ½aaᵀ, P = Σ⁻¹ and weights w ∈ {1, h̃},
//
//	Σ_s w_s g_Σ,s    = −½(Σw)P + ½ A diag(w) Aᵀ
//	Σ_s w_s g_Σ,s²   = ¼(Σw) P∘P − ½ P∘(A diag(w) Aᵀ) + ¼ A∘² diag(w) (A∘²)ᵀ   (Σ_s h̃_s = 0 drops the P terms)
//
// The control variate of a coordinate is c = Cov(g h, g)/Var(g) = h̄ + Cov(g h̃, g)/Var(g); its centred part cc is
// kept and, since c comes from the previous batch (so that it stays independent of the
// draws it multiplies), ĝ = (1/S)[Σ g h̃ + (h̄ − h̄_prev − cc_prev) Σ g].
func (w *work) scoreGrad(hbar []float64) error {
	b, S := w.b, float64(w.S)
	if err := b.Map(w.a2, backend.Square, 1, w.a); err != nil {
		return err
	}
	if err := b.ScaleCols(w.ah, w.a, w.ht); err != nil {
		return err
	}
	if err := b.ScaleCols(w.a2h, w.a2, w.ht); err != nil {
		return err
	}
	red := func(dst, x *T) error { return b.Reduce(dst, backend.ReduceSum, backend.AxisCols, x) }
	for _, p := range [][2]*T{{w.g1, w.a}, {w.gh, w.ah}, {w.q1, w.a2}, {w.qh, w.a2h}} {
		if err := red(p[0], p[1]); err != nil {
			return err
		}
	}
	// Σ blocks: t1 = G1 = Σ g, m1 = Gh = Σ g h̃, mh = G2 = Σ g², qq = G2h = Σ g² h̃.
	if err := b.Syrk(blas.NoTrans, 1, w.a, 0, w.m1); err != nil { // A Aᵀ
		return err
	}
	if err := b.Axpby(w.t1, -0.5*S, w.pm, 0.5, w.m1); err != nil {
		return err
	}
	if err := b.Mul(w.t2, w.pm, w.pm); err != nil {
		return err
	}
	if err := b.Mul(w.mh, w.pm, w.m1); err != nil { // P∘AAᵀ
		return err
	}
	if err := b.Axpby(w.mh, 0.25*S, w.t2, -0.5, w.mh); err != nil {
		return err
	}
	if err := b.Syrk(blas.NoTrans, 1, w.a2, 0, w.qq); err != nil {
		return err
	}
	if err := b.Axpby(w.mh, 1, w.mh, 0.25, w.qq); err != nil { // G2 done
		return err
	}
	if err := b.Gemm(blas.NoTrans, blas.Trans, 1, w.ah, w.a, 0, w.m1); err != nil { // A diag(h̃) Aᵀ
		return err
	}
	if err := b.Symmetrize(w.m1); err != nil {
		return err
	}
	if err := b.Gemm(blas.NoTrans, blas.Trans, 1, w.a2h, w.a2, 0, w.qq); err != nil {
		return err
	}
	if err := b.Symmetrize(w.qq); err != nil {
		return err
	}
	if err := b.Mul(w.t2, w.pm, w.m1); err != nil {
		return err
	}
	if err := b.Axpby(w.qq, 0.25, w.qq, -0.5, w.t2); err != nil { // G2h done
		return err
	}
	if err := b.Axpby(w.m1, 0.5, w.m1, 0, nil); err != nil { // Gh done
		return err
	}
	// ĝ = (1/S)[Gh + δ G1 − cc∘G1], δ = h̄ − h̄_prev (c = 0 at the first batch: h̄_prev = 0, cc = 0).
	delta := make([]float64, w.B)
	for k := range delta {
		delta[k] = hbar[k] - w.hbarPrev[k]
	}
	if err := w.scalars(delta); err != nil {
		return err
	}
	type blk struct{ g, g1, gh, g2, g2h, cc, tmp *T }
	for _, x := range []blk{{w.gMu, w.g1, w.gh, w.q1, w.qh, w.ccMu, w.nMu}, {w.gS, w.t1, w.m1, w.mh, w.qq, w.ccS, w.t2}} {
		if err := b.Mul(x.tmp, x.cc, x.g1); err != nil {
			return err
		}
		if err := b.Axpby(x.g, 1/S, x.gh, -1/S, x.tmp); err != nil {
			return err
		}
		if err := b.ScaleRows(x.tmp, x.g1, w.sc); err != nil {
			return err
		}
		if err := b.Axpby(x.g, 1, x.g, 1/S, x.tmp); err != nil {
			return err
		}
		if w.cfg.NoControlVariate {
			continue
		}
		// cc = (G2h − Gh∘G1/S) / (G2 − G1∘G1/S): covariance over variance, the S−1 denominators cancel.
		if err := b.Mul(x.tmp, x.gh, x.g1); err != nil {
			return err
		}
		if err := b.Axpby(x.cc, 1, x.g2h, -1/S, x.tmp); err != nil {
			return err
		}
		if err := b.Mul(x.tmp, x.g1, x.g1); err != nil {
			return err
		}
		if err := b.Axpby(x.tmp, 1, x.g2, -1/S, x.tmp); err != nil {
			return err
		}
		// A coordinate with no variance (never in practice) gets 0/tiny = 0 or a huge value; guard by a floor.
		if err := b.Map(x.tmp, backend.Abs, 1, x.tmp); err != nil {
			return err
		}
		if err := b.Axpby(x.tmp, 1, x.tmp, 1e-300, w.onesLike(x.tmp)); err != nil {
			return err
		}
		if err := b.Div(x.cc, x.cc, x.tmp); err != nil {
			return err
		}
	}
	if !w.cfg.NoControlVariate {
		copy(w.hbarPrev, hbar)
	}
	return b.Symmetrize(w.gS)
}

// onesLike returns the batch-1 tensor of ones broadcastable onto t (v or mat shapes).
func (w *work) onesLike(t *T) *T {
	if t.Cols() == 1 {
		return w.onesV
	}
	return w.onesM
}

// reparamGrad: ĝ_μ = mean ∇log p, Ĝ_Σ = ½ sym(∇log p Aᵀ)/S + ½P.
func (w *work) reparamGrad() error {
	b, S := w.b, float64(w.S)
	if err := b.Reduce(w.gMu, backend.ReduceSum, backend.AxisCols, w.lgrad); err != nil {
		return err
	}
	if err := b.Axpby(w.gMu, 1/S, w.gMu, 0, nil); err != nil {
		return err
	}
	if err := b.Gemm(blas.NoTrans, blas.Trans, 0.5/S, w.lgrad, w.a, 0, w.gS); err != nil {
		return err
	}
	if err := b.Symmetrize(w.gS); err != nil {
		return err
	}
	return b.Axpby(w.gS, 1, w.gS, 0.5, w.pm)
}

const blasN = blas.NoTrans
