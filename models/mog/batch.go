package mog

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// Batch is the collapsed objective (see Collapsed) of B independent mixtures with equal N, K and D — different data
// sets, seeds or priors — evaluated together on a backend: a batch of problems. The runs' parameters
// are one tensor x of B×1×Dim (run b's x = (log r (N×K), m (K×D)) as for Collapsed), in backend memory.
//
// What runs on the backend (O(NKD²) per run, all runs in one call each): r = exp(log r); Σ r log r (71) by RowDots;
// the sufficient statistics N_k, Σ_n r_nk x_n and Σ_n r_nk x_n x_nᵀ as one batched GEMM Rᵀ Z with the design
// Z = [vec(x xᵀ), x, 1] (N×(D²+D+1)); φ_nk as a second GEMM log r + Z Cᵀ, where row k of C holds the
// coefficients of the quadratic ν_k/2 (x − m_k)ᵀW_k(x − m_k) (op. 1 of §5) and the constants of φ; φ̄_n = Σ_k r_nk φ_nk
// by RowDots; g = r ⊙ (φ − φ̄) (82)–(84); and the log-domain step (86). What stays on the host (O(KD³) per run,
// op. 4 of §5): the K×(D²+D+1) statistics come back, the Model's own code forms the conditional optima (65)–(69),
// the Wishart and Dirichlet terms (72)–(79), the mean gradients (81) and §2.6, and the coefficients C go back. So a
// run's F, gradient and natural gradient are the host model's up to round-off (TestBatchMatchesHost). Every entry
// of x must be finite: a log responsibility of −∞ (r = 0 exactly) makes Σ r log r NaN here, where Collapsed skips
// it. MinimizeBatch never produces one (the log-domain step keeps log r ≥ its row maximum − 700).
//
// Data are centred per run (x' = x − x̄) before Z is formed, so that the moment expansion Σ r (x − m)(x − m)ᵀ =
// Σ r x'x'ᵀ − a m'ᵀ − m'aᵀ + N m'm'ᵀ (a = Σ r x', m' = m − x̄) loses no more digits than the spread of the data
// allows. When all runs share one data set, Z is stored once and broadcast.
type Batch struct {
	be         backend.Backend
	B          int
	N, K, D, P int
	dim        int
	models     []*Model
	posts      []*Post
	centre     [][]float64 // x̄ per run
	shared     bool

	z                    *tensor.Tensor // B×N×P, or 1×N×P when shared
	r, phi, tmp          *tensor.Tensor // B×N×K
	rowA, rowB           *tensor.Tensor // B×N×1
	stats, coef          *tensor.Tensor // B×K×P
	scal                 *tensor.Tensor // B×1×1
	alpha                *tensor.Tensor // B×1×1
	ap                   *tensor.Tensor // B×1×Dim
	ones                 *tensor.Tensor // 1×1×K
	stack                *tensor.Tensor // B×NK×2, allocated on first use (element-wise max)
	zSwap                *tensor.Tensor // 1×N×P (distinct data only)
	hStats, hCoef        *tensor.Tensor // host B×K×P
	hMu, hGMu, hNMu      *tensor.Tensor // host B×K×D
	hScal, hAlpha        *tensor.Tensor // host B×1×1
	owned                []*tensor.Tensor
	gammaLow, stepSpread float64
}

// NewBatch uploads the data of the models (one per run; a model may appear more than once, e.g. one data set with
// several initialisations) to be and returns their batched collapsed objective. All models must have the same N, K
// and D; priors and Options may differ.
func NewBatch(be backend.Backend, models []*Model) (*Batch, error) {
	if len(models) == 0 {
		return nil, fmt.Errorf("%w: no models", ErrBadInput)
	}
	m0 := models[0]
	N, K, D := m0.N, m0.K, m0.D
	for i, m := range models {
		if m.N != N || m.K != K || m.D != D {
			return nil, fmt.Errorf("%w: model %d has N, K, D = %d, %d, %d, want %d, %d, %d", ErrBadInput, i, m.N, m.K,
				m.D, N, K, D)
		}
	}
	B, P := len(models), D*D+D+1
	bt := &Batch{be: be, B: B, N: N, K: K, D: D, P: P, dim: N*K + K*D, models: slices.Clone(models),
		posts: make([]*Post, B), centre: make([][]float64, B), shared: true, gammaLow: -745, stepSpread: 700}
	for i, m := range models {
		bt.posts[i] = NewPost(K, D)
		if !slices.Equal(m.X, m0.X) {
			bt.shared = false
		}
	}
	zb := B
	if bt.shared {
		zb = 1
	}
	hz := tensor.NewHost(zb, N, P)
	for i := range zb {
		X := models[i].X
		c := make([]float64, D)
		for n := range N {
			for j := range D {
				c[j] += X[n*D+j]
			}
		}
		for j := range c {
			c[j] /= float64(N)
		}
		zi, _, _, _ := hz.Matrix(i)
		for n := range N {
			row := zi[n*P : n*P+P]
			for a := range D {
				xa := X[n*D+a] - c[a]
				row[D*D+a] = xa
				for b := range D {
					row[a*D+b] = xa * (X[n*D+b] - c[b])
				}
			}
			row[P-1] = 1
		}
		bt.centre[i] = c
	}
	for i := zb; i < B; i++ {
		bt.centre[i] = bt.centre[0]
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
	bt.z = alloc(zb, N, P)
	bt.r, bt.phi, bt.tmp = alloc(B, N, K), alloc(B, N, K), alloc(B, N, K)
	bt.rowA, bt.rowB = alloc(B, N, 1), alloc(B, N, 1)
	bt.stats, bt.coef = alloc(B, K, P), alloc(B, K, P)
	bt.scal, bt.alpha = alloc(B, 1, 1), alloc(B, 1, 1)
	bt.ap = alloc(B, 1, bt.dim)
	bt.ones = alloc(1, 1, K)
	if !bt.shared {
		bt.zSwap = alloc(1, N, P)
	}
	if err == nil {
		err = be.Upload(bt.z, hz)
	}
	if err == nil {
		err = be.Fill(bt.ones, 1)
	}
	if err != nil {
		bt.Close()
		return nil, err
	}
	bt.hStats, bt.hCoef = tensor.NewHost(B, K, P), tensor.NewHost(B, K, P)
	bt.hMu, bt.hGMu, bt.hNMu = tensor.NewHost(B, K, D), tensor.NewHost(B, K, D), tensor.NewHost(B, K, D)
	bt.hScal, bt.hAlpha = tensor.NewHost(B, 1, 1), tensor.NewHost(B, 1, 1)
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

// Dim returns NK + KD, the length of one run's x.
func (bt *Batch) Dim() int { return bt.dim }

// NumFree returns N(K−1) + KD (see Collapsed.NumFree).
func (bt *Batch) NumFree() int { return bt.N*(bt.K-1) + bt.K*bt.D }

// Model returns the host model of slot i.
func (bt *Batch) Model(i int) *Model { return bt.models[i] }

// Post returns the EM parameters of slot i after the last evaluation.
func (bt *Batch) Post(i int) *Post { return bt.posts[i] }

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

// logr and mu views of the first n runs of x.
func (bt *Batch) logr(x *tensor.Tensor, n int) *tensor.Tensor {
	return x.Window(n, 0, bt.N, bt.K, bt.K)
}
func (bt *Batch) mu(x *tensor.Tensor, n int) *tensor.Tensor {
	return x.Window(n, bt.N*bt.K, bt.K, bt.D, bt.D)
}

// flat returns the first n items of a B×N×K tensor (or of the log r part of x) as n×1×NK.
func (bt *Batch) flat(t *tensor.Tensor, n int) *tensor.Tensor {
	return t.Window(n, 0, 1, bt.N*bt.K, bt.N*bt.K)
}

func (bt *Batch) zs(n int) *tensor.Tensor {
	if bt.shared {
		return bt.z.Broadcast(n)
	}
	return bt.z.Batches(0, n)
}

// moments computes r, Σ r log r and the statistics Rᵀ Z of the first n runs and downloads them with the means.
func (bt *Batch) moments(x *tensor.Tensor, n int) error {
	be := bt.be
	lr := bt.logr(x, n)
	r := bt.r.Batches(0, n)
	if err := be.Map(r, backend.Exp, 1, lr); err != nil {
		return err
	}
	// (71): Σ_nk r_nk log r_nk per run.
	if err := be.RowDots(bt.scal.Batches(0, n), bt.flat(r, n), bt.flat(x, n)); err != nil {
		return err
	}
	// Row k of Rᵀ Z = [Σ_n r_nk vec(x'x'ᵀ), Σ_n r_nk x', N_k].
	st := bt.stats.Batches(0, n)
	if err := be.Gemm(blas.Trans, blas.NoTrans, 1, r, bt.zs(n), 0, st); err != nil {
		return err
	}
	if err := be.Download(bt.hStats.Batches(0, n), st); err != nil {
		return err
	}
	if err := be.Download(bt.hScal.Batches(0, n), bt.scal.Batches(0, n)); err != nil {
		return err
	}
	return be.Download(bt.hMu.Batches(0, n), bt.mu(x, n))
}

// finish turns run i's downloaded statistics into the host model's scratch (loadStats), sets its EM parameters to
// the conditional optima (65)–(69) and returns F (70)–(79).
func (bt *Batch) finish(i int) float64 {
	bt.loadStats(i)
	mu, _, _, _ := bt.hMu.Matrix(i)
	bt.models[i].mstepFromStats(bt.posts[i], mu)
	return bt.energy(i)
}

// energy returns F (70)–(79) of run i with its EM parameters as they are, after loadStats.
func (bt *Batch) energy(i int) float64 {
	m, post := bt.models[i], bt.posts[i]
	mu, _, _, _ := bt.hMu.Matrix(i)
	if !m.prepare(post, mu) {
		return math.NaN()
	}
	var acc kahan
	acc.add(bt.hScal.At(i, 0, 0))
	return m.componentEnergy(&acc, mu, post)
}

// loadStats turns run i's downloaded statistics into the host model's scratch: N_k, s1_k = Σ_n r_nk (x_n − m_k)
// and sm_k = Σ_n r_nk (x_n − m_k)(x_n − m_k)ᵀ about the downloaded means.
func (bt *Batch) loadStats(i int) {
	m := bt.models[i]
	s := &m.scratch
	D, K, P := bt.D, bt.K, bt.P
	st, _, _, _ := bt.hStats.Matrix(i)
	mu, _, _, _ := bt.hMu.Matrix(i)
	c := bt.centre[i]
	mp := s.diff
	for k := range K {
		row := st[k*P : k*P+P]
		nk := row[P-1]
		a := row[D*D : D*D+D]
		s.nk[k] = nk
		for j := range D {
			mp[j] = mu[k*D+j] - c[j]
		}
		s1 := s.s1[k*D : k*D+D]
		sm := s.sm[k*D*D : (k+1)*D*D]
		for p := range D {
			s1[p] = a[p] - nk*mp[p]
			for q := 0; q <= p; q++ {
				v := row[p*D+q] - a[p]*mp[q] - mp[p]*a[q] + nk*mp[p]*mp[q]
				sm[p*D+q], sm[q*D+p] = v, v
			}
		}
	}
}

// Value writes F (collapsed: α, β, ν, W at their conditional optima) of the first n runs of x (n×1×Dim) into f.
// NaN marks a run whose W_k is not positive definite.
func (bt *Batch) Value(f []float64, x *tensor.Tensor) error {
	n, err := bt.check("Value", x)
	if err != nil {
		return err
	}
	if err := bt.moments(x, n); err != nil {
		return err
	}
	for i := range n {
		f[i] = bt.finish(i)
	}
	return nil
}

// Grad writes F into f, the Euclidean gradient with respect to (γ = log r, m) into g ((82)–(84), (81)) and the
// closed-form natural gradient (φ − φ̄; the W-free mean form) into gt, for the first n runs of x.
// A run with a non-finite F gets NaN in f; its gradients are then undefined.
func (bt *Batch) Grad(f []float64, g, gt, x *tensor.Tensor) error {
	n, err := bt.check("Grad", g, gt, x)
	if err != nil {
		return err
	}
	if err := bt.moments(x, n); err != nil {
		return err
	}
	for i := range n {
		f[i] = bt.finish(i)
		gm, _, _, _ := bt.hGMu.Matrix(i)
		nm, _, _, _ := bt.hNMu.Matrix(i)
		if !bt.coefs(i, math.IsNaN(f[i])) {
			clear(gm)
			clear(nm)
			continue
		}
		mu, _, _, _ := bt.hMu.Matrix(i)
		bt.models[i].meanGrad(gm, nm, mu, bt.posts[i])
	}
	be := bt.be
	if err := bt.phiInto(x, n); err != nil {
		return err
	}
	phi := bt.phi.Batches(0, n)
	r := bt.r.Batches(0, n)
	phibar := bt.rowA.Batches(0, n)
	if err := be.RowDots(phibar, r, phi); err != nil {
		return err
	}
	// Natural gradient of γ: φ − φ̄ (App. B); Euclidean: r ⊙ (φ − φ̄) (82)–(84).
	gtl := bt.logr(gt, n)
	if err := be.Copy(gtl, phi); err != nil {
		return err
	}
	if err := be.Gemm(blas.NoTrans, blas.NoTrans, -1, phibar, bt.ones.Broadcast(n), 1, gtl); err != nil {
		return err
	}
	if err := be.Mul(bt.logr(g, n), r, gtl); err != nil {
		return err
	}
	if err := be.Upload(bt.mu(g, n), bt.hGMu.Batches(0, n)); err != nil {
		return err
	}
	return be.Upload(bt.mu(gt, n), bt.hNMu.Batches(0, n))
}

// coefs writes run i's coefficients C on the host, from its EM parameters and means (after finish): row k holds
// φ_nk − log r_nk = −log π̃_k − ½(log Λ̃_k − D/β_k − D log 2π − ν_k (x_n − m_k)ᵀW_k(x_n − m_k)) (App. B) as a
// linear function of z_n = [vec(x'x'ᵀ), x', 1]. With bad (F not finite) it zeroes them and returns false.
func (bt *Batch) coefs(i int, bad bool) bool {
	D, K, P := bt.D, bt.K, bt.P
	d := float64(D)
	co, _, _, _ := bt.hCoef.Matrix(i)
	if bad {
		clear(co)
		return false
	}
	m, post := bt.models[i], bt.posts[i]
	s := &m.scratch
	mu, _, _, _ := bt.hMu.Matrix(i)
	c := bt.centre[i]
	for k := range K {
		w := post.W[k*D*D : (k+1)*D*D]
		nu := post.Nu[k]
		row := co[k*P : k*P+P]
		mp := s.diff
		for j := range D {
			mp[j] = mu[k*D+j] - c[j]
		}
		var mwm float64
		for p := range D {
			var wm float64
			for q := range D {
				row[p*D+q] = nu / 2 * w[p*D+q]
				wm += w[p*D+q] * mp[q]
			}
			row[D*D+p] = -nu * wm
			mwm += mp[p] * wm
		}
		row[P-1] = -s.logPi[k] - 0.5*(s.logLam[k]-d/post.Beta[k]-d*math.Log(2*math.Pi)) + nu/2*mwm
	}
	return true
}

// phiInto uploads the host coefficients of the first n runs and writes φ = max(log r, −745) + Z Cᵀ into bt.phi.
func (bt *Batch) phiInto(x *tensor.Tensor, n int) error {
	be := bt.be
	co := bt.coef.Batches(0, n)
	if err := be.Upload(co, bt.hCoef.Batches(0, n)); err != nil {
		return err
	}
	phi := bt.phi.Batches(0, n)
	if err := bt.clampLow(phi, bt.logr(x, n), n); err != nil {
		return err
	}
	return be.Gemm(blas.NoTrans, blas.Trans, 1, bt.zs(n), co, 1, phi)
}

// clampLow writes max(log r, −745) into dst (n×N×K), the guard of the host φ; the exact element-wise maximum runs
// only when some entry is below the bound.
func (bt *Batch) clampLow(dst, lr *tensor.Tensor, n int) error {
	be := bt.be
	if err := be.Copy(dst, lr); err != nil {
		return err
	}
	low := bt.scal.Batches(0, n)
	if err := be.Reduce(low, backend.ReduceMin, backend.AxisAll, bt.flat(dst, n)); err != nil {
		return err
	}
	if err := be.Download(bt.hScal.Batches(0, n), low); err != nil {
		return err
	}
	need := false
	for i := range n {
		need = need || bt.hScal.At(i, 0, 0) < bt.gammaLow
	}
	if !need {
		return nil
	}
	t := bt.tmp.Batches(0, n)
	if err := be.Fill(t, bt.gammaLow); err != nil {
		return err
	}
	return bt.maxInto(dst, dst, t, n)
}

// maxInto writes the element-wise maximum of a and b (n×N×K, contiguous items) into dst, exactly: the two operands
// are interleaved as the columns of an NK×2 matrix and reduced with ReduceMax along the rows.
func (bt *Batch) maxInto(dst, a, b *tensor.Tensor, n int) error {
	be := bt.be
	NK := bt.N * bt.K
	if bt.stack == nil {
		st, err := be.Alloc(tensor.Shape{Batch: bt.B, Rows: NK, Cols: 2})
		if err != nil {
			return err
		}
		bt.stack = st
		bt.owned = append(bt.owned, st)
	}
	col := func(t *tensor.Tensor, off, rs int) *tensor.Tensor {
		v, err := tensor.New(t.Storage(), t.Offset()+off, tensor.Shape{Batch: n, Rows: NK, Cols: 1}, t.BatchStride(), rs)
		if err != nil {
			panic(err)
		}
		return v
	}
	s0, s1 := col(bt.stack, 0, 2), col(bt.stack, 1, 2)
	if err := be.Copy(s0, col(a, 0, 1)); err != nil {
		return err
	}
	if err := be.Copy(s1, col(b, 0, 1)); err != nil {
		return err
	}
	return be.Reduce(col(dst, 0, 1), backend.ReduceMax, backend.AxisCols, bt.stack.Batches(0, n))
}

// Step writes the trial points of the first n runs into dst: x + α_b p with the responsibilities renormalised in the
// log domain (86), u = max(ℓ + αp, max_k(ℓ + αp) − 700), ℓ' = u − LSE(u) (the clamp at −700 keeps exp(ℓ) from underflowing), as Collapsed.Step. alpha
// holds one step per run. dst may be x.
func (bt *Batch) Step(dst, x, p *tensor.Tensor, alpha []float64) error {
	n, err := bt.check("Step", dst, x, p)
	if err != nil {
		return err
	}
	be := bt.be
	ha := bt.hAlpha.Batches(0, n)
	for i := range n {
		ha.Set(i, 0, 0, alpha[i])
	}
	a := bt.alpha.Batches(0, n)
	if err := be.Upload(a, ha); err != nil {
		return err
	}
	ap := bt.ap.Batches(0, n)
	if err := be.ScaleRows(ap, p, a); err != nil {
		return err
	}
	if err := be.Axpby(dst, 1, x, 1, ap); err != nil {
		return err
	}
	u := bt.logr(dst, n)
	mx := bt.rowA.Batches(0, n)
	if err := be.Reduce(mx, backend.ReduceMax, backend.AxisCols, u); err != nil {
		return err
	}
	t := bt.tmp.Batches(0, n)
	ones := bt.ones.Broadcast(n)
	shifted := func() error { // t = u − max
		if err := be.Copy(t, u); err != nil {
			return err
		}
		return be.Gemm(blas.NoTrans, blas.NoTrans, -1, mx, ones, 1, t)
	}
	if err := shifted(); err != nil {
		return err
	}
	low := bt.scal.Batches(0, n)
	if err := be.Reduce(low, backend.ReduceMin, backend.AxisAll, bt.flat(t, n)); err != nil {
		return err
	}
	if err := be.Download(bt.hScal.Batches(0, n), low); err != nil {
		return err
	}
	need := false
	for i := range n {
		need = need || bt.hScal.At(i, 0, 0) < 1-bt.stepSpread // a margin for round-off in u − max; the max below is exact
	}
	if need {
		// u = max(u, max_k u − 700): the floor row by row, exactly as the host.
		floor := bt.phi.Batches(0, n)
		if err := be.Fill(t, -bt.stepSpread); err != nil {
			return err
		}
		if err := be.Gemm(blas.NoTrans, blas.NoTrans, 1, mx, ones, 0, floor); err != nil {
			return err
		}
		if err := be.Axpby(floor, 1, floor, 1, t); err != nil {
			return err
		}
		ut := bt.r.Batches(0, n) // contiguous copy of u for the interleaving
		if err := be.Copy(ut, u); err != nil {
			return err
		}
		if err := bt.maxInto(ut, ut, floor, n); err != nil {
			return err
		}
		if err := be.Copy(u, ut); err != nil {
			return err
		}
		if err := shifted(); err != nil {
			return err
		}
	}
	// LSE = max + log Σ_k exp(u − max).
	if err := be.Map(t, backend.Exp, 1, t); err != nil {
		return err
	}
	lse := bt.rowB.Batches(0, n)
	if err := be.Reduce(lse, backend.ReduceSum, backend.AxisCols, t); err != nil {
		return err
	}
	if err := be.Map(lse, backend.Log, 1, lse); err != nil {
		return err
	}
	if err := be.Axpby(lse, 1, mx, 1, lse); err != nil {
		return err
	}
	return be.Gemm(blas.NoTrans, blas.NoTrans, -1, lse, ones, 1, u)
}

// Swap exchanges the data, host models and EM parameters of slots i and j (the driver keeps its active runs first).
func (bt *Batch) Swap(i, j int) error {
	if i == j {
		return nil
	}
	bt.models[i], bt.models[j] = bt.models[j], bt.models[i]
	bt.posts[i], bt.posts[j] = bt.posts[j], bt.posts[i]
	bt.centre[i], bt.centre[j] = bt.centre[j], bt.centre[i]
	if bt.shared {
		return nil
	}
	be := bt.be
	zi, zj := bt.z.Item(i), bt.z.Item(j)
	if err := be.Copy(bt.zSwap, zi); err != nil {
		return err
	}
	if err := be.Copy(zi, zj); err != nil {
		return err
	}
	return be.Copy(zj, bt.zSwap)
}
