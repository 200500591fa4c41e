package lrvga

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// Factor analysis of a covariance S ≈ W Wᵀ + Ψ from a stream of inputs (Sec. 3, 5.1, App. C and E;
// Algorithm 1, (110)–(116)): the recursive EM in covariance mode, the online EM baseline and the batch EM reference.
// All work on the backend in O(dp) memory (the batch EM in O(dN)).

// FAConfig describes a streaming factor analysis.
type FAConfig struct {
	D, P  int
	Inner int // n_in [1]
	// Sigma0 scales the initial (W₀, Ψ₀) ≈ σ₀⁻² I by App. D [√d: App. C's σ₀ = √(d/mean‖x‖²) for unit-norm
	// inputs, ψ₀ = (1−ε)/d, w₀ = √(ε/p)].
	Sigma0 float64
	Eps    float64 // App. D ε [1e-8]
	Seed   uint64
	// PsiFloor bounds ψ below [0: relative floor 1e-12·max diag S].
	PsiFloor float64
	// PseudoCount counts the initial factors as one observation in the recursive EM: α_t = t/(t+1),
	// β_t = 1/(t+1), so S_1 = (S_0 + x_1x_1ᵀ)/2 is never singular (App. C's prior S_0).
	PseudoCount bool
}

func (c FAConfig) withDefaults() (FAConfig, error) {
	if c.D < 2 || c.P < 1 || c.P >= c.D {
		return c, run.ConfigErrorf("lrvga", "P", "d = %d, p = %d: want 1 ≤ p < d", c.D, c.P)
	}
	if c.Inner == 0 {
		c.Inner = 1
	}
	if c.Sigma0 == 0 {
		c.Sigma0 = math.Sqrt(float64(c.D))
	}
	if c.Eps == 0 {
		c.Eps = 1e-8
	}
	if !(c.Sigma0 > 0) || c.Inner < 0 || !(c.Eps > 0 && c.Eps < 1) {
		return c, fmt.Errorf("lrvga: %w: σ₀ = %v, n_in = %d, ε = %v: want σ₀ > 0, n_in ≥ 0 and 0 < ε < 1", run.ErrConfig, c.Sigma0, c.Inner, c.Eps)
	}
	return c, nil
}

// RecursiveFA is the recursive EM of Algorithm 1 in covariance mode (App. C): after t inputs,
// W_tW_tᵀ + Ψ_t ≈_FA ((t−1)/t)(W_{t-1}W_{t-1}ᵀ + Ψ_{t-1}) + (1/t) x_t x_tᵀ, i.e. α_t = (t−1)/t, β_t = 1/t in (28).
// At t = 1, α = 0 and S_1 = x_1x_1ᵀ is singular: ψ is then held up by the floor; the initial factors
// get zero weight (α_1 = 0) and only warm-start the EM.
type RecursiveFA struct {
	Cfg    FAConfig
	W, Psi *tensor.Tensor
	T      int
	// Clamped counts ψ entries raised to the floor.
	Clamped int

	b backend.Backend
	x *tensor.Tensor
}

// NewRecursiveFA allocates and initialises (App. D) a recursive FA.
func NewRecursiveFA(b backend.Backend, c FAConfig) (*RecursiveFA, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &RecursiveFA{Cfg: c, b: b}
	if r.W, err = b.Alloc(tensor.Shape{Batch: 1, Rows: c.D, Cols: c.P}); err != nil {
		return nil, err
	}
	if r.Psi, err = b.Alloc(tensor.Shape{Batch: 1, Rows: c.D, Cols: 1}); err != nil {
		return nil, err
	}
	return r, InitFactors(b, r.W, r.Psi, c.Sigma0, c.Eps, 0, c.Seed)
}

// Update adds one block of inputs (the columns of x, d×K_c, row-major host data with K_c = len(x)/d) with
// α = (t−1)/t, β = 1/t, t counting blocks (a d×K_c block X_t enters as X_tX_tᵀ/t; (28) allows a d×K_c X_t).
func (r *RecursiveFA) Update(x []float64) error {
	d := r.Cfg.D
	if len(x) == 0 || len(x)%d != 0 {
		return fmt.Errorf("lrvga: input block of length %d, want a multiple of d = %d: %w", len(x), d, backend.ErrShape)
	}
	kc := len(x) / d
	h, _ := tensor.FromSlice(x, 1, d, kc)
	if r.x == nil || r.x.Cols() != kc {
		if r.x != nil {
			r.b.Free(r.x)
		}
		var err error
		if r.x, err = r.b.Alloc(h.Shape()); err != nil {
			return err
		}
	}
	if err := backend.UploadFinite(r.b, r.x, h, "x"); err != nil {
		return err
	}
	t := float64(r.T + 1)
	if r.Cfg.PseudoCount {
		t++
	}
	st, err := backend.RecursiveEM(r.b, r.W, r.Psi, r.x, (t-1)/t, 1/t, backend.EMOptions{Inner: r.Cfg.Inner, PsiFloor: r.Cfg.PsiFloor})
	r.Clamped += st.Clamped
	if err != nil {
		return err
	}
	r.T++
	return nil
}

// Close frees the buffers.
func (r *RecursiveFA) Close() {
	for _, t := range []*tensor.Tensor{r.W, r.Psi, r.x} {
		if t != nil {
			r.b.Free(t)
		}
	}
	r.W, r.Psi, r.x = nil, nil, nil
}

// BatchFA runs iters iterations of the batch EM fixed point (20)–(21) on S = XᵀX/N for the N inputs (rows of x,
// N×d), starting from (w, psi) in place: Algorithm 1 with α = 0, β = 1/N and X = Xᵀ (d×N), so no d×d matrix is
// formed (cost O(dpN) per iteration). It is the "batch EM" reference of Fig. 1 and Table 1.
func BatchFA(b backend.Backend, w, psi *tensor.Tensor, x []float64, n, iters int, floor float64) (int, error) {
	d := w.Rows()
	if n < 1 || len(x) != n*d {
		return 0, fmt.Errorf("lrvga: %d inputs of length %d for d = %d: %w", n, len(x), d, backend.ErrShape)
	}
	h := tensor.NewHost(1, d, n)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			h.Set(0, j, i, x[i*d+j])
		}
	}
	xt, err := b.Alloc(h.Shape())
	if err != nil {
		return 0, err
	}
	defer b.Free(xt)
	if err := backend.UploadFinite(b, xt, h, "x"); err != nil {
		return 0, err
	}
	st, err := backend.RecursiveEM(b, w, psi, xt, 0, 1/float64(n), backend.EMOptions{Inner: iters, PsiFloor: floor})
	return st.Clamped, err
}

// OnlineFA is the online EM of Cappé–Moulines for factor analysis (App. E, (110)–(116), with the second line of
// (110) read as (1−γ_t)S_{2,t-1}, not the printed (1−γ_t)μ_{t-1}), the baseline of Fig. 1 and Table 1. The sufficient
// statistics are S1 = diag (d), S2ᵀ (d×p) and S3 (p×p), with step γ_t = t^{-0.6} (γ_1 = 1):
//
//	E:  e = M⁻¹WᵀΨ⁻¹v,  S1 ← (1−γ)S1 + γ v∘v,  S2ᵀ ← (1−γ)S2ᵀ + γ v eᵀ,  S3 ← (1−γ)S3 + γ(M⁻¹ + e eᵀ)
//	M:  W = S2ᵀ S3⁻¹,  ψ = S1 − rowdot(W, S2ᵀ)
//
// with Polyak–Ruppert averaging of (W, ψ) after AverageFrom steps (the code's 500; 0: none). Memory: 8d(2p+2) bytes
// (W, S2ᵀ, ψ, S1; Table 1's 1.6 GB at d = 1e6, p = 100), plus 8d(p+1) for the averages, allocated when averaging
// starts.
type OnlineFA struct {
	Cfg         FAConfig
	AverageFrom int
	// W, Psi are the current (averaged when averaging has started) estimates.
	W, Psi *tensor.Tensor
	T      int

	b             backend.Backend
	w, psi        *tensor.Tensor // the iterate
	s1, s2t, x, e *tensor.Tensor
	s3            *mat.SymDense
	lr            *backend.LowRank
	wAvg, psiAvg  *tensor.Tensor
	tmp, tmpd     *tensor.Tensor
}

// NewOnlineFA allocates and initialises (App. D) an online EM.
func NewOnlineFA(b backend.Backend, c FAConfig, averageFrom int) (*OnlineFA, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	o := &OnlineFA{Cfg: c, AverageFrom: averageFrom, b: b, s3: mat.NewSymDense(c.P, nil)}
	get := func(r, cols int) *tensor.Tensor {
		if err != nil {
			return nil
		}
		var t *tensor.Tensor
		t, err = b.Alloc(tensor.Shape{Batch: 1, Rows: r, Cols: cols})
		return t
	}
	d, p := c.D, c.P
	o.w, o.psi, o.s1, o.s2t, o.x, o.e = get(d, p), get(d, 1), get(d, 1), get(d, p), get(d, 1), get(p, 1)
	o.tmp, o.tmpd = get(p, p), get(d, 1)
	if err != nil {
		return nil, err
	}
	if err := InitFactors(b, o.w, o.psi, c.Sigma0, c.Eps, 0, c.Seed); err != nil {
		return nil, err
	}
	if o.lr, err = backend.NewLowRank(b, o.w, o.psi); err != nil {
		return nil, err
	}
	o.W, o.Psi = o.w, o.psi
	return o, nil
}

// StateBytes is the size of the online EM's state in float64: W, S2ᵀ (d×p each), ψ and S1 (d each), 8d(2p+2)
// bytes (Table 1's 1.6 GB at d = 1e6, p = 100: W and S2), plus 8d(p+1) for the averages once averaging runs.
func (o *OnlineFA) StateBytes() int64 {
	d, p := int64(o.Cfg.D), int64(o.Cfg.P)
	n := 8 * d * (2*p + 2)
	if o.wAvg != nil {
		n += 8 * d * (p + 1)
	}
	return n
}

// Update consumes one input v (length d).
func (o *OnlineFA) Update(v []float64) error {
	b := o.b
	d, p := o.Cfg.D, o.Cfg.P
	if len(v) != d {
		return fmt.Errorf("lrvga: input of length %d, want d = %d: %w", len(v), d, backend.ErrShape)
	}
	h, _ := tensor.FromSlice(v, 1, d, 1)
	if err := backend.UploadFinite(b, o.x, h, "v"); err != nil {
		return err
	}
	t := o.T + 1
	if o.AverageFrom > 0 && t > o.AverageFrom && o.wAvg == nil {
		// The averages are made when averaging starts (zeroed; the first average is the iterate itself).
		var err error
		if o.wAvg, err = b.Alloc(tensor.Shape{Batch: 1, Rows: d, Cols: p}); err != nil {
			return err
		}
		if o.psiAvg, err = b.Alloc(tensor.Shape{Batch: 1, Rows: d, Cols: 1}); err != nil {
			b.Free(o.wAvg)
			o.wAvg = nil
			return err
		}
	}
	g := math.Pow(float64(t), -0.6)
	// E-step with the current (W, ψ): e = M⁻¹ Wᵀ Ψ⁻¹ v.
	if err := b.Div(o.tmpd, o.x, o.psi); err != nil {
		return err
	}
	if err := b.Gemm(blas.Trans, blas.NoTrans, 1, o.w, o.tmpd, 0, o.e); err != nil {
		return err
	}
	if err := b.Potrs(o.lr.L, o.e); err != nil {
		return err
	}
	eh := tensor.NewHost(1, p, 1)
	if err := b.Download(eh, o.e); err != nil {
		return err
	}
	lh := tensor.NewHost(1, p, p)
	if err := b.Download(lh, o.lr.L); err != nil {
		return err
	}
	// M⁻¹ from its Cholesky factor (p×p, host): U = Lᵀ.
	um := mat.NewTriDense(p, mat.Upper, nil)
	for i := 0; i < p; i++ {
		for j := 0; j <= i; j++ {
			um.SetTri(j, i, lh.At(0, i, j))
		}
	}
	var ch mat.Cholesky
	ch.SetFromU(um)
	var minv mat.SymDense
	if err := ch.InverseTo(&minv); err != nil {
		return err
	}
	for i := 0; i < p; i++ {
		for j := i; j < p; j++ {
			o.s3.SetSym(i, j, (1-g)*o.s3.At(i, j)+g*(minv.At(i, j)+eh.At(0, i, 0)*eh.At(0, j, 0)))
		}
	}
	if err := b.Mul(o.tmpd, o.x, o.x); err != nil {
		return err
	}
	if err := b.Axpby(o.s1, 1-g, o.s1, g, o.tmpd); err != nil {
		return err
	}
	if err := b.Gemm(blas.NoTrans, blas.Trans, g, o.x, o.e, 1-g, o.s2t); err != nil { // S2ᵀ ← (1−γ)S2ᵀ + γ v eᵀ
		return err
	}
	// M-step: W = S2ᵀ S3⁻¹ (S3 ⪰ γM⁻¹ ≻ 0), ψ = S1 − rowdot(W, S2ᵀ), floored.
	var c3 mat.Cholesky
	if !c3.Factorize(o.s3) {
		return fmt.Errorf("lrvga: online EM: S3 not positive definite: %w", backend.ErrNotPositiveDefinite)
	}
	var s3inv mat.SymDense
	if err := c3.InverseTo(&s3inv); err != nil {
		return err
	}
	ih := tensor.NewHost(1, p, p)
	for i := 0; i < p; i++ {
		for j := 0; j < p; j++ {
			ih.Set(0, i, j, s3inv.At(i, j))
		}
	}
	if err := b.Upload(o.tmp, ih); err != nil {
		return err
	}
	if err := b.Gemm(blas.NoTrans, blas.NoTrans, 1, o.s2t, o.tmp, 0, o.w); err != nil {
		return err
	}
	if err := b.RowDots(o.tmpd, o.w, o.s2t); err != nil {
		return err
	}
	if err := b.Axpby(o.psi, 1, o.s1, -1, o.tmpd); err != nil {
		return err
	}
	if err := floorPsi(b, o.psi, o.s1, o.Cfg.PsiFloor); err != nil {
		return err
	}
	if err := o.lr.Refactor(); err != nil {
		return err
	}
	o.T = t
	if o.AverageFrom > 0 && t > o.AverageFrom {
		k := float64(t - o.AverageFrom)
		if err := b.Axpby(o.wAvg, 1-1/k, o.wAvg, 1/k, o.w); err != nil {
			return err
		}
		if err := b.Axpby(o.psiAvg, 1-1/k, o.psiAvg, 1/k, o.psi); err != nil {
			return err
		}
		o.W, o.Psi = o.wAvg, o.psiAvg
	}
	return nil
}

// floorPsi raises ψ to max(floor, 1e-12·max s): ψ_new = s − rowdot(G, V) can cancel to ≤ 0. The common case, nothing
// below the floor, costs two reductions; otherwise ψ goes through the host (O(d)).
func floorPsi(b backend.Backend, psi, s *tensor.Tensor, floor float64) error {
	d := psi.Rows()
	if floor <= 0 {
		mx, err := reduce(b, backend.ReduceMax, s)
		if err != nil {
			return err
		}
		floor = math.Max(0x1p-1022, backend.RelPsiFloor*mx)
	}
	mn, err := reduce(b, backend.ReduceMin, psi)
	if err != nil {
		return err
	}
	if mn >= floor {
		return nil
	}
	ph := tensor.NewHost(1, d, 1)
	if err := b.Download(ph, psi); err != nil {
		return err
	}
	for i := 0; i < d; i++ {
		if !(ph.At(0, i, 0) >= floor) {
			ph.Set(0, i, 0, floor)
		}
	}
	return b.Upload(psi, ph)
}

// reduce returns the reduction of all of x to a host scalar.
func reduce(b backend.Backend, op backend.ReduceOp, x *tensor.Tensor) (float64, error) {
	r, err := b.Alloc(tensor.Shape{Batch: 1, Rows: 1, Cols: 1})
	if err != nil {
		return 0, err
	}
	defer b.Free(r)
	if err := b.Reduce(r, op, backend.AxisAll, x); err != nil {
		return 0, err
	}
	h := tensor.NewHost(1, 1, 1)
	if err := b.Download(h, r); err != nil {
		return 0, err
	}
	return h.At(0, 0, 0), nil
}

// SumQuad returns Σ_n x_nᵀ Λ⁻¹ x_n over the rows of x (n×d, row-major on the host) for the low-rank-plus-diagonal
// Λ = WWᵀ + Ψ of lr, by Woodbury solves in blocks of 64 rows (the trace terms of the factor-analysis KL and of
// the Gaussian KLs between a filter and a posterior).
func SumQuad(b backend.Backend, lr *backend.LowRank, x []float64, n, d int) (float64, error) {
	const blk = 64
	total := 0.0
	for n0 := 0; n0 < n; n0 += blk {
		k := min(blk, n-n0)
		h := tensor.NewHost(1, d, k) // Xᵀ block, d×k
		for j := 0; j < k; j++ {
			row := x[(n0+j)*d : (n0+j+1)*d]
			for i, v := range row {
				h.Set(0, i, j, v)
			}
		}
		xt, err := b.Alloc(h.Shape())
		if err != nil {
			return 0, err
		}
		sol, err := b.Alloc(h.Shape())
		if err != nil {
			b.Free(xt)
			return 0, err
		}
		s, err := func() (float64, error) {
			defer b.Free(xt)
			defer b.Free(sol)
			if err := b.Upload(xt, h); err != nil {
				return 0, err
			}
			if err := lr.Solve(sol, xt); err != nil {
				return 0, err
			}
			if err := b.Mul(sol, sol, xt); err != nil {
				return 0, err
			}
			return reduce(b, backend.ReduceSum, sol)
		}()
		if err != nil {
			return 0, err
		}
		total += s
	}
	return total, nil
}

// Close frees the buffers.
func (o *OnlineFA) Close() {
	if o.lr != nil {
		o.lr.Close()
	}
	for _, t := range []*tensor.Tensor{o.w, o.psi, o.s1, o.s2t, o.x, o.e, o.tmp, o.tmpd, o.wAvg, o.psiAvg} {
		if t != nil {
			o.b.Free(t)
		}
	}
}

// FAKL returns KL(N(0, S) ‖ N(0, W Wᵀ + Ψ)) + ½ log det S for S = XᵀX/N of the inputs (rows of x, N×d), the Fig. 1
// metric of Fig. 1, KL(N(0,S) ‖ N(0, WWᵀ+Ψ)) with S = XᵀX/N, without its method-independent constant −½ log det S:
// ½[Tr((WWᵀ+Ψ)⁻¹S) + log det(WWᵀ+Ψ) − d], with the trace as (1/N)Σ_n x_nᵀ(WWᵀ+Ψ)⁻¹x_n by Woodbury. Add −½ log det S
// (DenseLogDetS) for the KL.
func FAKL(b backend.Backend, w, psi *tensor.Tensor, x []float64, n int) (float64, error) {
	lr, err := backend.NewLowRank(b, w, psi)
	if err != nil {
		return 0, err
	}
	defer lr.Close()
	d := w.Rows()
	tr, err := SumQuad(b, lr, x, n, d)
	if err != nil {
		return 0, err
	}
	ld, err := lr.LogDet()
	if err != nil {
		return 0, err
	}
	return 0.5 * (tr/float64(n) + ld - float64(d)), nil
}

// DenseLogDetS returns log det(XᵀX/N) (dense d×d: small d only; N ≥ d).
func DenseLogDetS(x []float64, n, d int) (float64, error) {
	s := mat.NewSymDense(d, nil)
	s.SymOuterK(1/float64(n), mat.NewDense(n, d, x).T())
	var ch mat.Cholesky
	if !ch.Factorize(s) {
		return 0, fmt.Errorf("lrvga: XᵀX/N singular (N = %d, d = %d): %w", n, d, backend.ErrNotPositiveDefinite)
	}
	return ch.LogDet(), nil
}
