package cpu

import (
	"math"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// Fused kernels for the SPD retraction sym(Σ + ξ + ½ξΣ⁻¹ξ) and the transport EξEᵀ, E = (S₂S₁⁻¹)^{1/2} (paper 000
// section 5.1; the references are in backend/spd.go). Each batch item goes through the whole
// formula on one worker, in that worker's scratch, with no allocation per item; small orders use plain loops over
// contiguous rows, larger ones BLAS calls (internal/gemm in the pure-Go build) on the same scratch.
//
// Results go to a buffer of the call and reach dst only once every item has succeeded, as in the references: a
// failed call leaves dst untouched, and dst may alias or overlap any operand, broadcast ones included, because
// every operand is read in full before dst is written.

func init() {
	backend.SPDRetractOp.Register(backend.Kernel[backend.SPDRetractFunc]{
		Name: "cpu.spd.retract.fused", Backend: Name, Priority: 10,
		Applies: isCPU,
		Fn:      spdRetractFused,
	})
	backend.SPDTransportOp.Register(backend.Kernel[backend.SPDTransportFunc]{
		Name: "cpu.spd.transport.fused", Backend: Name, Priority: 10,
		Applies: isCPU,
		Fn:      spdTransportFused,
	})
}

const (
	opSPDRetract   = "spd.retract"
	opSPDTransport = "spd.transport"
)

// spdLoopMax is the largest order for which the products and triangular solves run as plain loops; above it they go
// to BLAS, whose packing pays off from about there (measured on Zen 5).
var spdLoopMax = 10

// Outcome of one batch item. The references report a Cholesky failure of Σ or S₁ before a failure of the
// eigen-solver, and that before a non-positive eigenvalue (S₂), each for the lowest batch item it occurs in; the
// kernels record an outcome per item and report in the same order.
const (
	spdOK       = iota
	spdFailChol // Σ or S₁ not SPD
	spdFailEig  // the eigen-solver did not converge
	spdFailS2   // L₁⁻¹S₂L₁⁻ᵀ has an eigenvalue that is not positive and finite
)

// spdWork is one worker's scratch for matrices of order n.
type spdWork struct {
	n             int
	l, a, b, c, d []float64 // n×n, row-major, stride n
	w             []float64
	eig           *spdEigWork
}

var spdWorkPool sync.Pool

func getSPDWork(n int) *spdWork {
	w, _ := spdWorkPool.Get().(*spdWork)
	if w != nil && w.n == n {
		return w
	}
	nn := n * n
	buf := make([]float64, 5*nn+n)
	return &spdWork{n: n, l: buf[:nn:nn], a: buf[nn : 2*nn : 2*nn], b: buf[2*nn : 3*nn : 3*nn],
		c: buf[3*nn : 4*nn : 4*nn], d: buf[4*nn : 5*nn : 5*nn], w: buf[5*nn:]}
}

// spdLoad copies the n×n matrix bb of t (broadcast when t has batch 1) into the contiguous dst.
func spdLoad(dst []float64, t *tensor.Tensor, bb, n int) {
	data, stride, _, _ := matrix(t, bi(t, bb))
	for i := 0; i < n; i++ {
		copy(dst[i*n:(i+1)*n], data[i*stride:i*stride+n])
	}
}

// spdResult returns a buffer for batch results of n×n from the scratch pools (not zeroed: every element is written
// before it is read), and the function that gives it back.
func spdResult(batch, n int) ([]float64, func()) {
	l := batch * n * n
	bp, _ := scratchPool(l).Get().(*[]float64)
	if bp == nil {
		buf := make([]float64, l)
		bp = &buf
	}
	return *bp, func() { scratchPool(l).Put(bp) }
}

// spdStore copies the results into dst, in parallel over the batch.
func spdStore(cb *Backend, dst *tensor.Tensor, res []float64, n int) {
	nn := n * n
	cb.parallelWork(dst.Batch(), float64(nn), func(lo, hi int) {
		for bb := lo; bb < hi; bb++ {
			data, stride, _, _ := matrix(dst, bb)
			r := res[bb*nn : (bb+1)*nn]
			for i := 0; i < n; i++ {
				copy(data[i*stride:i*stride+n], r[i*n:(i+1)*n])
			}
		}
	})
}

// spdSquare and spdLower view the contiguous n×n scratch a as a BLAS matrix and as its lower triangle.
func spdSquare(a []float64, n int) blas64.General {
	return blas64.General{Rows: n, Cols: n, Stride: n, Data: a}
}

func spdLower(a []float64, n int) blas64.Triangular {
	return blas64.Triangular{Uplo: blas.Lower, Diag: blas.NonUnit, N: n, Stride: n, Data: a}
}

// spdRetractFused computes dst = sym(Σ + ξ + ½ξΣ⁻¹ξ) item by item as the reference does: L = chol(Σ), Y = L⁻¹ξ,
// Q = ½YᵀY (one triangle, so exactly symmetric), D = (Q + Σ) + ξ, dst = ½(D + Dᵀ).
func spdRetractFused(be backend.Backend, dst, sigma, xi *tensor.Tensor) error {
	cb := be.(*Backend)
	if err := checkHost(opSPDRetract, []string{"dst", "sigma", "xi"}, dst, sigma, xi); err != nil {
		return err
	}
	nb, n := dst.Batch(), dst.Rows()
	res, done := spdResult(nb, n)
	defer done()
	status := make([]uint8, nb)
	nf := float64(n)
	cb.parallelWork(nb, 7*nf*nf*nf/3, func(lo, hi int) {
		w := getSPDWork(n)
		defer spdWorkPool.Put(w)
		for bb := lo; bb < hi; bb++ {
			status[bb] = spdRetractItem(w, res[bb*n*n:(bb+1)*n*n], sigma, xi, bb)
		}
	})
	for bb, s := range status {
		if s != spdOK {
			return backend.BatchErrorf(opSPDRetract, "sigma", bb, backend.ErrNotPositiveDefinite, "Cholesky factorisation failed")
		}
	}
	spdStore(cb, dst, res, n)
	return nil
}

func spdRetractItem(w *spdWork, out []float64, sigma, xi *tensor.Tensor, bb int) uint8 {
	n := w.n
	l, y, q := w.l, w.a, w.b
	spdLoad(l, sigma, bb, n)
	if !potrfOne(spdSquare(l, n)) {
		return spdFailChol
	}
	spdLoad(y, xi, bb, n)
	// Y = L⁻¹ξ, so ½YᵀY = ½ξΣ⁻¹ξ; only its lower triangle is used.
	if n <= spdLoopMax {
		spdSolveL(l, y, n)
		spdGramCols(y, q, n, 0.5)
	} else {
		blasTrsm(blas.Left, blas.NoTrans, 1, spdLower(l, n), spdSquare(y, n))
		blasSyrk(blas.Trans, 0.5, spdSquare(y, n), 0, blas64.Symmetric{Uplo: blas.Lower, N: n, Stride: n, Data: q})
	}
	sd, ss, _, _ := matrix(sigma, bi(sigma, bb))
	xd, xs, _, _ := matrix(xi, bi(xi, bb))
	for i := 0; i < n; i++ {
		si, xr, qi, oi := sd[i*ss:i*ss+n], xd[i*xs:i*xs+n], q[i*n:i*n+i+1], out[i*n:i*n+n]
		for j := 0; j < i; j++ {
			dij := (qi[j] + si[j]) + xr[j]
			dji := (qi[j] + sd[j*ss+i]) + xd[j*xs+i]
			v := 0.5 * (dij + dji)
			oi[j], out[j*n+i] = v, v
		}
		oi[i] = (qi[i] + si[i]) + xr[i]
	}
	return spdOK
}

// spdTransportFused computes dst = EξEᵀ item by item. As in the reference, L₁ = chol(S₁) and N = L₁⁻¹S₂L₁⁻ᵀ = VνVᵀ
// (symmetrised first), and S₂ is SPD exactly when min ν > 0. Then E = L₁N^{1/2}L₁⁻¹ is formed explicitly, with
// N^{1/2} = UUᵀ, U = Vν^{1/4}, and dst = ½(R + Rᵀ), R = (Eξ)Eᵀ: after the eigen-decomposition a Gram matrix, three
// GEMMs and a triangular solve (8n³ flops with L₁ multiplied as a full matrix), against the reference's Gram
// matrix, two solves, two GEMMs and two triangular multiplies (9n³), and no gonum Dtrmm.
func spdTransportFused(be backend.Backend, dst, s1, s2, xi *tensor.Tensor) error {
	cb := be.(*Backend)
	if err := checkHost(opSPDTransport, []string{"dst", "s1", "s2", "xi"}, dst, s1, s2, xi); err != nil {
		return err
	}
	nb, n := dst.Batch(), dst.Rows()
	res, done := spdResult(nb, n)
	defer done()
	status := make([]uint8, nb)
	minEig := make([]float64, nb)
	nf := float64(n)
	cb.parallelWork(nb, 20*nf*nf*nf, func(lo, hi int) {
		w := getSPDWork(n)
		defer spdWorkPool.Put(w)
		for bb := lo; bb < hi; bb++ {
			status[bb], minEig[bb] = spdTransportItem(w, res[bb*n*n:(bb+1)*n*n], s1, s2, xi, bb)
		}
	})
	for _, f := range []uint8{spdFailChol, spdFailEig, spdFailS2} {
		for bb, s := range status {
			if s != f {
				continue
			}
			switch f {
			case spdFailChol:
				return backend.BatchErrorf(opSPDTransport, "s1", bb, backend.ErrNotPositiveDefinite, "Cholesky factorisation failed")
			case spdFailEig:
				return backend.BatchErrorf("syev", "a", bb, backend.ErrNoConvergence, "symmetric eigen-solver did not converge")
			default:
				return backend.BatchErrorf(opSPDTransport, "s2", bb, backend.ErrNotPositiveDefinite, "eigenvalue %g of L₁⁻¹S₂L₁⁻ᵀ", minEig[bb])
			}
		}
	}
	spdStore(cb, dst, res, n)
	return nil
}

func spdTransportItem(w *spdWork, out []float64, s1, s2, xi *tensor.Tensor, bb int) (uint8, float64) {
	n := w.n
	l, nm, u, m, e := w.l, w.a, w.b, w.c, w.d
	spdLoad(l, s1, bb, n)
	if !potrfOne(spdSquare(l, n)) {
		return spdFailChol, 0
	}
	// N = L₁⁻¹S₂L₁⁻ᵀ, symmetrised before the eigen-solver.
	spdLoad(nm, s2, bb, n)
	if n <= spdLoopMax {
		// L₁⁻¹(L₁⁻¹S₂)ᵀ is Nᵀ, which the symmetrisation does not tell from N.
		spdSolveL(l, nm, n)
		spdTranspose(m, nm, n)
		copy(nm, m)
		spdSolveL(l, nm, n)
	} else {
		blasTrsm(blas.Left, blas.NoTrans, 1, spdLower(l, n), spdSquare(nm, n))
		blasTrsm(blas.Right, blas.Trans, 1, spdLower(l, n), spdSquare(nm, n))
	}
	spdSymmetrize(nm, n)
	// Eigenvectors in the rows of u.
	if w.eig == nil {
		w.eig = newSPDEigWork(n) // the transport's only: the retraction shares the pool
	}
	if !spdEig(w.eig, n, nm, w.w, u) {
		return spdFailEig, 0
	}
	// N is congruent to S₂, so S₂ is SPD exactly when min ν > 0.
	v := math.Inf(1)
	for _, x := range w.w[:n] {
		v = reduceStep(backend.ReduceMin, v, x)
	}
	if !(v > 0) || math.IsInf(v, 0) {
		return spdFailS2, v
	}
	// Rows of u scaled by ν^{1/4}: u is Uᵀ, and N^{1/2} = UUᵀ.
	for k, x := range w.w[:n] {
		f := math.Sqrt(math.Sqrt(x))
		r := u[k*n : (k+1)*n]
		for j := range r {
			r[j] *= f
		}
	}
	xd, xs, _, _ := matrix(xi, bi(xi, bb))
	if n <= spdLoopMax {
		// M = N^{1/2} = UUᵀ, the Gram matrix of the columns of u = Uᵀ, in m; G = Eᵀ = L₁⁻ᵀ(M L₁ᵀ) in nm (L₁ᵀ in u
		// for the solve); T = ξG in m; R = EξEᵀ = GᵀT in e (Gᵀ in u).
		spdGramCols(u, m, n, 1)
		mirrorLower(spdSquare(m, n))
		spdMulLT(m, l, nm, n)
		spdTranspose(u, l, n)
		spdSolveLTLeft(u, nm, n)
		spdMulNN(xd, xs, nm, m, n)
		spdTranspose(u, nm, n)
		spdMulNN(u, n, m, e, n)
	} else {
		clear(m)
		blasSyrk(blas.Trans, 1, spdSquare(u, n), 0, blas64.Symmetric{Uplo: blas.Lower, N: n, Stride: n, Data: m})
		mirrorLower(spdSquare(m, n))
		// E = (L₁N^{1/2})L₁⁻¹ in nm; L₁ holds zeros above the diagonal, so the product is a GEMM.
		blasGemm(blas.NoTrans, blas.NoTrans, 1, spdSquare(l, n), spdSquare(m, n), 0, spdSquare(nm, n))
		blasTrsm(blas.Right, blas.NoTrans, 1, spdLower(l, n), spdSquare(nm, n))
		blasGemm(blas.NoTrans, blas.NoTrans, 1, spdSquare(nm, n), blas64.General{Rows: n, Cols: n, Stride: xs, Data: xd}, 0, spdSquare(u, n))
		blasGemm(blas.NoTrans, blas.Trans, 1, spdSquare(u, n), spdSquare(nm, n), 0, spdSquare(e, n))
	}
	for i := 0; i < n; i++ {
		for j := 0; j < i; j++ {
			s := 0.5 * (e[i*n+j] + e[j*n+i])
			out[i*n+j], out[j*n+i] = s, s
		}
		out[i*n+i] = e[i*n+i]
	}
	return spdOK, 0
}

// spdSymmetrize replaces the contiguous n×n a by ½(a + aᵀ), as Backend.Symmetrize does.
func spdSymmetrize(a []float64, n int) {
	for i := 0; i < n; i++ {
		for j := 0; j < i; j++ {
			s := 0.5 * (a[i*n+j] + a[j*n+i])
			a[i*n+j], a[j*n+i] = s, s
		}
	}
}

// Plain-loop kernels for small orders; all matrices are n×n, row-major, contiguous, and L is lower triangular.
// Rows are combined four at a time, so that each element of the row being updated is loaded and stored once per
// four multiply-adds.

// spdRowAcc sets d_j ← d_j + sign·Σ_{k0≤k<k1} c_k·b_{k,j} (sign ±1), the rows of b n apart.
func spdRowAcc(d []float64, sign float64, c, b []float64, n, k0, k1 int) {
	k := k0
	for ; k+4 <= k1; k += 4 {
		c0, c1, c2, c3 := c[k], c[k+1], c[k+2], c[k+3]
		b0 := b[k*n : k*n+n][:len(d)]
		b1 := b[(k+1)*n : (k+1)*n+n][:len(d)]
		b2 := b[(k+2)*n : (k+2)*n+n][:len(d)]
		b3 := b[(k+3)*n : (k+3)*n+n][:len(d)]
		for j := range d {
			d[j] += sign * (c0*b0[j] + c1*b1[j] + c2*b2[j] + c3*b3[j])
		}
	}
	for ; k < k1; k++ {
		c0 := c[k]
		b0 := b[k*n : k*n+n][:len(d)]
		for j := range d {
			d[j] += sign * (c0 * b0[j])
		}
	}
}

// spdDot is the dot product of x and y[:len(x)].
func spdDot(x, y []float64) float64 {
	y = y[:len(x)]
	var s0, s1 float64
	for len(x) >= 2 && len(y) >= 2 {
		s0 += x[0] * y[0]
		s1 += x[1] * y[1]
		x, y = x[2:], y[2:]
	}
	if len(x) == 1 && len(y) == 1 {
		s0 += x[0] * y[0]
	}
	return s0 + s1
}

// spdSolveL overwrites B with L⁻¹B by forward substitution over rows: B_i ← (B_i − Σ_{k<i} L_ik B_k) / L_ii.
func spdSolveL(l, b []float64, n int) {
	for i := 0; i < n; i++ {
		bi := b[i*n : i*n+n]
		spdRowAcc(bi, -1, l[i*n:i*n+i], b, n, 0, i)
		inv := 1 / l[i*n+i]
		for j := range bi {
			bi[j] *= inv
		}
	}
}

// spdSolveLTLeft overwrites B with L⁻ᵀB by backward substitution over rows: B_i ← (B_i − Σ_{k>i} L_ki B_k) / L_ii.
// lt holds Lᵀ, so that the coefficients L_ki are contiguous.
func spdSolveLTLeft(lt, b []float64, n int) {
	for i := n - 1; i >= 0; i-- {
		bi := b[i*n : i*n+n]
		spdRowAcc(bi, -1, lt[i*n:i*n+n], b, n, i+1, n)
		inv := 1 / lt[i*n+i]
		for j := range bi {
			bi[j] *= inv
		}
	}
}

// spdTranspose writes aᵀ into t.
func spdTranspose(t, a []float64, n int) {
	for i := 0; i < n; i++ {
		ai := a[i*n : i*n+n]
		for j, v := range ai {
			t[j*n+i] = v
		}
	}
}

// spdGramCols writes the lower triangle of alpha·YᵀY into q (the upper one is left as it was): rank-one updates by
// the rows of y, four at a time, over the leading i+1 elements of each row i of q.
func spdGramCols(y, q []float64, n int, alpha float64) {
	for i := 0; i < n; i++ {
		clear(q[i*n : i*n+i+1])
	}
	k := 0
	for ; k+4 <= n; k += 4 {
		y0, y1, y2, y3 := y[k*n:k*n+n], y[(k+1)*n:(k+1)*n+n], y[(k+2)*n:(k+2)*n+n], y[(k+3)*n:(k+3)*n+n]
		for i := 0; i < n; i++ {
			a0, a1, a2, a3 := alpha*y0[i], alpha*y1[i], alpha*y2[i], alpha*y3[i]
			qi := q[i*n : i*n+i+1]
			b0, b1, b2, b3 := y0[:len(qi)], y1[:len(qi)], y2[:len(qi)], y3[:len(qi)]
			for j := range qi {
				qi[j] += a0*b0[j] + a1*b1[j] + a2*b2[j] + a3*b3[j]
			}
		}
	}
	for ; k < n; k++ {
		y0 := y[k*n : k*n+n]
		for i := 0; i < n; i++ {
			a0 := alpha * y0[i]
			qi := q[i*n : i*n+i+1]
			b0 := y0[:len(qi)]
			for j := range qi {
				qi[j] += a0 * b0[j]
			}
		}
	}
}

// spdMulLT writes c = A Lᵀ: c_ij = Σ_{k≤j} A_ik L_jk.
func spdMulLT(a, l, c []float64, n int) {
	for i := 0; i < n; i++ {
		ai := a[i*n : i*n+n]
		ci := c[i*n : i*n+n]
		for j := range ci {
			ci[j] = spdDot(l[j*n:j*n+j+1], ai)
		}
	}
}

// spdMulNN writes c = A B for A with row stride as: c_i = Σ_k A_ik B_k.
func spdMulNN(a []float64, as int, b, c []float64, n int) {
	for i := 0; i < n; i++ {
		ci := c[i*n : i*n+n]
		clear(ci)
		spdRowAcc(ci, 1, a[i*as:i*as+n], b, n, 0, n)
	}
}

// spdEigWork is the scratch of spdEig for order n: the eigenvectors as Dsyev leaves them (columns) and its
// workspace.
type spdEigWork struct {
	v, work []float64
}

func newSPDEigWork(n int) *spdEigWork {
	ew := &spdEigWork{v: make([]float64, n*n)}
	var q [1]float64
	lapackSyev(lapack.EVCompute, blas64.Symmetric{Uplo: blas.Lower, N: n, Stride: max(n, 1), Data: ew.v}, nil, q[:], -1)
	ew.work = make([]float64, max(int(q[0]), 1))
	return ew
}

// spdEig computes the eigenvalues of the symmetric n×n matrix a (row-major, lower triangle read) in ascending order
// into w and the eigenvectors into the rows of zt, by the backend's LAPACK (Dsyev). It reports false when the
// iteration does not converge.
func spdEig(ew *spdEigWork, n int, a, w, zt []float64) bool {
	v := ew.v[:n*n]
	copy(v, a[:n*n])
	if !lapackSyev(lapack.EVCompute, blas64.Symmetric{Uplo: blas.Lower, N: n, Stride: n, Data: v}, w[:n], ew.work, len(ew.work)) {
		return false
	}
	spdTranspose(zt, v, n)
	return true
}
