package backendtest

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// Independent dense float64 references for the low-rank tests (gonum mat, small d only: they form d×d matrices,
// which the library never does), and small utilities. Everything here is prefixed lr.

func lrRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x10_4a_2b)) }

// lrPsi returns d values uniform on [lo, hi).
func lrPsi(r *rand.Rand, d int, lo, hi float64) []float64 {
	v := make([]float64, d)
	for i := range v {
		v[i] = lo + (hi-lo)*r.Float64()
	}
	return v
}

// lrUp copies m into a new backend tensor of shape 1×r×c.
func lrUp(t testing.TB, b backend.Backend, m *mat.Dense) *tensor.Tensor {
	t.Helper()
	return upload(t, b, tensor.FromDense(mat.DenseCopyOf(m)))
}

// lrUpVec copies v into a new backend tensor of shape 1×d×1.
func lrUpVec(t testing.TB, b backend.Backend, v []float64) *tensor.Tensor {
	t.Helper()
	h, err := tensor.FromSlice(append([]float64(nil), v...), 1, len(v), 1)
	if err != nil {
		t.Fatal(err)
	}
	return upload(t, b, h)
}

// lrUpStrided copies m into a view with row stride cols+pad of a larger backend tensor (column off of it), to
// exercise strided operands.
func lrUpStrided(t testing.TB, b backend.Backend, m *mat.Dense, pad, off int) *tensor.Tensor {
	t.Helper()
	r, c := m.Dims()
	big, err := b.Alloc(tensor.Shape{Batch: 1, Rows: r, Cols: c + pad})
	if err != nil {
		t.Fatal(err)
	}
	v := big.Slice(0, r, off, off+c)
	if err := b.Upload(v, tensor.FromDense(mat.DenseCopyOf(m))); err != nil {
		t.Fatal(err)
	}
	return v
}

// lrDown copies a batch-1 backend tensor into a new dense matrix.
func lrDown(t testing.TB, b backend.Backend, x *tensor.Tensor) *mat.Dense {
	t.Helper()
	return download(t, b, x).ToDense(0)
}

// lrDownVec copies a 1×d×1 backend tensor into a slice.
func lrDownVec(t testing.TB, b backend.Backend, x *tensor.Tensor) []float64 {
	t.Helper()
	m := lrDown(t, b, x)
	return mat.Col(nil, 0, m)
}

// lrFree frees backend tensors (views are freed through their owner, so only Alloc results are passed here).
func lrFree(b backend.Backend, ts ...*tensor.Tensor) {
	for _, x := range ts {
		b.Free(x)
	}
}

// lrLambda returns the dense precision W Wᵀ + Diag(ψ).
func lrLambda(w *mat.Dense, psi []float64) *mat.Dense {
	d, _ := w.Dims()
	l := mat.NewDense(d, d, nil)
	l.Mul(w, w.T())
	for i := 0; i < d; i++ {
		l.Set(i, i, l.At(i, i)+psi[i])
	}
	return l
}

// lrChol returns the Cholesky factorisation of a dense SPD matrix.
func lrChol(t testing.TB, a *mat.Dense) *mat.Cholesky {
	t.Helper()
	var c mat.Cholesky
	if ok := c.Factorize(mat.NewSymDense(a.RawMatrix().Rows, lrSymData(a))); !ok {
		t.Fatal("dense reference: matrix not positive definite")
	}
	return &c
}

// lrSymData returns the data of (A + Aᵀ)/2, row-major.
func lrSymData(a *mat.Dense) []float64 {
	n, _ := a.Dims()
	s := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			s[i*n+j] = 0.5 * (a.At(i, j) + a.At(j, i))
		}
	}
	return s
}

// lrInv returns the inverse of a dense square matrix (LU).
func lrInv(t testing.TB, a mat.Matrix) *mat.Dense {
	t.Helper()
	var inv mat.Dense
	if err := inv.Inverse(a); err != nil {
		t.Fatalf("dense reference inverse: %v", err)
	}
	return &inv
}

// lrCap returns M = I + Wᵀ Ψ⁻¹ W and C = Ψ⁻¹ W.
func lrCap(w *mat.Dense, psi []float64) (m, c *mat.Dense) {
	d, p := w.Dims()
	c = mat.NewDense(d, p, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < p; j++ {
			c.Set(i, j, w.At(i, j)/psi[i])
		}
	}
	m = mat.NewDense(p, p, nil)
	m.Mul(w.T(), c)
	for i := 0; i < p; i++ {
		m.Set(i, i, m.At(i, i)+1)
	}
	return m, c
}

// lrTarget returns S = α (W Wᵀ + Ψ) + β X Xᵀ (28); x may be nil.
func lrTarget(w *mat.Dense, psi []float64, x *mat.Dense, alpha, beta float64) *mat.Dense {
	s := lrLambda(w, psi)
	s.Scale(alpha, s)
	if x != nil {
		var xx mat.Dense
		xx.Mul(x, x.T())
		xx.Scale(beta, &xx)
		s.Add(s, &xx)
	}
	return s
}

// lrDenseEMPaper is one EM iteration in the paper's form (20)–(21), dense, with the non-symmetric
// A = I + M⁻¹ Wᵀ Ψ⁻¹ S Ψ⁻¹ W inverted by LU.
func lrDenseEMPaper(t testing.TB, s, w *mat.Dense, psi []float64) (*mat.Dense, []float64) {
	d, p := w.Dims()
	m, c := lrCap(w, psi)
	var sc, q, a, wn, t1, t2 mat.Dense
	sc.Mul(s, c)      // S Ψ⁻¹ W
	q.Mul(c.T(), &sc) // Wᵀ Ψ⁻¹ S Ψ⁻¹ W
	minv := lrInv(t, m)
	a.Mul(minv, &q)
	for i := 0; i < p; i++ {
		a.Set(i, i, a.At(i, i)+1)
	}
	wn.Mul(&sc, lrInv(t, &a)) // (20)
	t1.Mul(&wn, minv)
	t2.Mul(&t1, c.T()) // W_new M⁻¹ Wᵀ Ψ⁻¹
	var t3 mat.Dense
	t3.Mul(&t2, s)
	psin := make([]float64, d)
	for i := range psin {
		psin[i] = s.At(i, i) - t3.At(i, i) // (21)
	}
	return &wn, psin
}

// lrDenseEMSPD is the same iteration in the SPD form (A = M⁻¹(M + B)): G = V (M+B)⁻¹, W_new = G M,
// ψ_new = diag S − rowdot(G, V).
func lrDenseEMSPD(t testing.TB, s, w *mat.Dense, psi []float64) (*mat.Dense, []float64) {
	d, p := w.Dims()
	m, c := lrCap(w, psi)
	var v, bm, g, wn mat.Dense
	v.Mul(s, c)
	bm.Mul(c.T(), &v)
	bm.Add(&bm, m)
	ch := lrChol(t, &bm)
	var gt mat.Dense
	if err := ch.SolveTo(&gt, v.T()); err != nil { // (M+B) Gᵀ = Vᵀ
		t.Fatal(err)
	}
	g.CloneFrom(gt.T())
	wn.Mul(&g, m)
	psin := make([]float64, d)
	for i := range psin {
		var rd float64
		for j := 0; j < p; j++ {
			rd += g.At(i, j) * v.At(i, j)
		}
		psin[i] = s.At(i, i) - rd
	}
	return &wn, psin
}

// lrKL returns KL(N(0, S) ‖ N(0, Λ)) = ½ [Tr(Λ⁻¹ S) − d + log det Λ − log det S] (11).
func lrKL(t testing.TB, s, lam *mat.Dense) float64 {
	d, _ := s.Dims()
	cl, cs := lrChol(t, lam), lrChol(t, s)
	var x mat.Dense
	if err := cl.SolveTo(&x, s); err != nil {
		t.Fatal(err)
	}
	return 0.5 * (mat.Trace(&x) - float64(d) + cl.LogDet() - cs.LogDet())
}

// lrRel returns max |a − b| / max |b| (max |a − b| when b = 0).
func lrRel(a, b mat.Matrix) float64 {
	r, c := b.Dims()
	var num, den float64
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			num = math.Max(num, math.Abs(a.At(i, j)-b.At(i, j)))
			den = math.Max(den, math.Abs(b.At(i, j)))
		}
	}
	if den == 0 {
		return num
	}
	return num / den
}

// lrRelVec is lrRel for vectors.
func lrRelVec(a, b []float64) float64 {
	return lrRel(mat.NewDense(len(a), 1, a), mat.NewDense(len(b), 1, b))
}

// lrSame fails unless x still holds m exactly.
func lrSame(t testing.TB, b backend.Backend, what string, x *tensor.Tensor, m *mat.Dense) {
	t.Helper()
	if !mat.Equal(lrDown(t, b, x), m) {
		t.Fatalf("%s: operand changed by a call that failed", what)
	}
}

// lrRunEM runs inner iterations of an EM step implementation the way RecursiveEM does (a copy of (W, ψ) kept as
// (W_{t-1}, ψ_{t-1}) after the first), calling after(it) after iteration it. It returns the clamp count.
func lrRunEM(t testing.TB, b backend.Backend, fn backend.EMStepFunc, w, psi, x *tensor.Tensor, alpha, beta, floor float64,
	inner int, after func(it int)) int {
	t.Helper()
	a := backend.EMStepArgs{W: w, Psi: psi, X: x, Alpha: alpha, Beta: beta, Floor: floor}
	var w0, psi0 *tensor.Tensor
	if inner > 1 {
		w0 = upload(t, b, download(t, b, w))
		psi0 = upload(t, b, download(t, b, psi))
		defer lrFree(b, w0, psi0)
	}
	total := 0
	for it := 0; it < inner; it++ {
		if it > 0 {
			a.W0, a.Psi0 = w0, psi0
		}
		n, err := fn(b, a)
		if err != nil {
			t.Fatalf("EM iteration %d: %v", it, err)
		}
		total += n
		if after != nil {
			after(it)
		}
	}
	return total
}

// lrMemTracker wraps a backend and records the bytes allocated through it: current, peak and the largest single
// allocation. Its name differs from the wrapped backend's, so the Op registry selects the reference implementations.
type lrMemTracker struct {
	backend.Backend
	mu                  sync.Mutex
	live                map[*tensor.Tensor]int64
	cur, peak, maxAlloc int64
}

func newLRMemTracker(b backend.Backend) *lrMemTracker {
	return &lrMemTracker{Backend: b, live: map[*tensor.Tensor]int64{}}
}

func (m *lrMemTracker) Name() string { return "lowrank-memtrack(" + m.Backend.Name() + ")" }

func (m *lrMemTracker) Alloc(s tensor.Shape) (*tensor.Tensor, error) {
	x, err := m.Backend.Alloc(s)
	if err != nil {
		return nil, err
	}
	n := int64(s.Len()) * 8
	m.mu.Lock()
	m.live[x] = n
	m.cur += n
	m.peak = max(m.peak, m.cur)
	m.maxAlloc = max(m.maxAlloc, n)
	m.mu.Unlock()
	return x, nil
}

func (m *lrMemTracker) Free(x *tensor.Tensor) {
	m.mu.Lock()
	if n, ok := m.live[x]; ok {
		m.cur -= n
		delete(m.live, x)
	}
	m.mu.Unlock()
	m.Backend.Free(x)
}

// reset starts a new measurement from the current allocation level.
func (m *lrMemTracker) reset() {
	m.mu.Lock()
	m.peak, m.maxAlloc = m.cur, 0
	m.mu.Unlock()
}

// lrHeapDelta returns the Go heap bytes allocated while f runs (an upper bound on the host scratch of a kernel).
func lrHeapDelta(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}
