package cpu

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cpu/internal/vec"
	"github.com/geovb/geovb/tensor"
)

// Kernels for the Stiefel QR retraction qf(X + tV) (paper 000 eq. (3.9)):
//   - cpu.qr_retract.small: many small matrices, one per worker at a time, in a column-major scratch that lives in
//     L1/L2 cache; X + tV is formed while loading. Each matrix goes through classical Gram–Schmidt with one
//     reorthogonalisation (dot products and axpys on AVX2/FMA where available), and through an unblocked
//     Householder QR with Q formed explicitly and the sign fix applied when a column is close to rank deficient.
//     No allocation per matrix.
//   - cpu.qr_retract.tall: one n×p matrix with n ≫ p, by CholeskyQR2 (Gram matrix, Cholesky, Q = A R⁻¹, twice),
//     which reads the matrix in three parallel streaming passes instead of p strided Householder sweeps. It falls
//     back to the backend's Householder QR when the matrix is too ill-conditioned for the Gram matrix.

const (
	qrSmallMaxElems = 1 << 15 // n·p of the largest matrix the small kernel takes (two scratch copies ≤ 512 KiB)
	qrTallMinRows   = 10000
	qrTallMaxCols   = 256
)

func init() {
	backend.QRRetractOp.Register(backend.Kernel[backend.QRRetractFunc]{
		Name: "cpu.qr_retract.small", Backend: Name, Priority: 10,
		Applies: func(b backend.Backend, s tensor.Shape) bool {
			return isCPU(b, s) && s.Rows >= s.Cols && s.Rows*s.Cols <= qrSmallMaxElems
		},
		Fn: qrRetractSmall,
	})
	backend.QRRetractOp.Register(backend.Kernel[backend.QRRetractFunc]{
		Name: "cpu.qr_retract.tall", Backend: Name, Priority: 20,
		Applies: func(b backend.Backend, s tensor.Shape) bool {
			return isCPU(b, s) && s.Batch == 1 && s.Rows >= qrTallMinRows && s.Cols >= 1 && s.Cols <= qrTallMaxCols
		},
		Fn: qrRetractTall,
	})
}

// qrReflect applies H = I − τ·u·uᵀ, u = [1; tail], to the column segment c (len(c) = 1 + len(tail)).
func qrReflect(tau float64, tail, c []float64) {
	w := tau * (c[0] + vec.Dot(tail, c[1:]))
	c[0] -= w
	vec.Axpy(-w, tail, c[1:])
}

// qrReflect2 is qrReflect on two column segments at once, so that u is loaded once for both.
func qrReflect2(tau float64, tail, c0, c1 []float64) {
	m := len(tail)
	c0, c1 = c0[:m+1], c1[:m+1]
	t0, t1 := c0[1:m+1], c1[1:m+1]
	s0, s1 := c0[0], c1[0]
	for i, u := range tail {
		s0 += u * t0[i]
		s1 += u * t1[i]
	}
	s0, s1 = tau*s0, tau*s1
	c0[0] -= s0
	c1[0] -= s1
	for i, u := range tail {
		t0[i] -= s0 * u
		t1[i] -= s1 * u
	}
}

// qrReflect4 is qrReflect on four column segments at once: five loads per eight flops instead of two per two.
func qrReflect4(tau float64, tail, c0, c1, c2, c3 []float64) {
	m := len(tail)
	c0, c1, c2, c3 = c0[:m+1], c1[:m+1], c2[:m+1], c3[:m+1]
	t0, t1, t2, t3 := c0[1:m+1], c1[1:m+1], c2[1:m+1], c3[1:m+1]
	s0, s1, s2, s3 := c0[0], c1[0], c2[0], c3[0]
	for i, u := range tail {
		s0 += u * t0[i]
		s1 += u * t1[i]
		s2 += u * t2[i]
		s3 += u * t3[i]
	}
	s0, s1, s2, s3 = tau*s0, tau*s1, tau*s2, tau*s3
	c0[0] -= s0
	c1[0] -= s1
	c2[0] -= s2
	c3[0] -= s3
	for i, u := range tail {
		t0[i] -= s0 * u
		t1[i] -= s1 * u
		t2[i] -= s2 * u
		t3[i] -= s3 * u
	}
}

// qrReflectCols applies H_k (u = [1; tail] from row k) to the rows ≥ k of columns [j0, p) of the column-major
// n-row matrix c.
func qrReflectCols(tau float64, tail, c []float64, n, k, j0, p int) {
	j := j0
	for ; j+4 <= p; j += 4 {
		qrReflect4(tau, tail, c[j*n+k:(j+1)*n], c[(j+1)*n+k:(j+2)*n], c[(j+2)*n+k:(j+3)*n], c[(j+3)*n+k:(j+4)*n])
	}
	if j+2 <= p {
		qrReflect2(tau, tail, c[j*n+k:(j+1)*n], c[(j+1)*n+k:(j+2)*n])
		j += 2
	}
	if j < p {
		qrReflect(tau, tail, c[j*n+k:(j+1)*n])
	}
}

// qrPair4 applies two reflectors H₁ = I − τ₁u₁u₁ᵀ and H₂ = I − τ₂u₂u₂ᵀ (s = u₁ᵀu₂) to four column segments of
// length len(u1): c ← H₂H₁c when first1, else c ← H₁H₂c. Fusing the pair halves the loads and stores per flop
// compared with one reflector at a time (a two-column compact-WY block): one pass for the dots u₁ᵀc, u₂ᵀc and
// one for c −= w₁u₁ + w₂u₂.
func qrPair4(t1, t2, s float64, first1 bool, u1, u2, c0, c1, c2, c3 []float64) {
	m := len(u1)
	u2, c0, c1, c2, c3 = u2[:m], c0[:m], c1[:m], c2[:m], c3[:m]
	var a0, a1, a2, a3, b0, b1, b2, b3 float64
	for i, x := range u1 {
		y := u2[i]
		v0, v1, v2, v3 := c0[i], c1[i], c2[i], c3[i]
		a0 += x * v0
		b0 += y * v0
		a1 += x * v1
		b1 += y * v1
		a2 += x * v2
		b2 += y * v2
		a3 += x * v3
		b3 += y * v3
	}
	a0, b0 = qrPairWeights(t1, t2, s, first1, a0, b0)
	a1, b1 = qrPairWeights(t1, t2, s, first1, a1, b1)
	a2, b2 = qrPairWeights(t1, t2, s, first1, a2, b2)
	a3, b3 = qrPairWeights(t1, t2, s, first1, a3, b3)
	for i, x := range u1 {
		y := u2[i]
		c0[i] -= a0*x + b0*y
		c1[i] -= a1*x + b1*y
		c2[i] -= a2*x + b2*y
		c3[i] -= a3*x + b3*y
	}
}

// qrPair2 is qrPair4 for two columns.
func qrPair2(t1, t2, s float64, first1 bool, u1, u2, c0, c1 []float64) {
	m := len(u1)
	u2, c0, c1 = u2[:m], c0[:m], c1[:m]
	var a0, a1, b0, b1 float64
	for i, x := range u1 {
		y := u2[i]
		v0, v1 := c0[i], c1[i]
		a0 += x * v0
		b0 += y * v0
		a1 += x * v1
		b1 += y * v1
	}
	a0, b0 = qrPairWeights(t1, t2, s, first1, a0, b0)
	a1, b1 = qrPairWeights(t1, t2, s, first1, a1, b1)
	for i, x := range u1 {
		y := u2[i]
		c0[i] -= a0*x + b0*y
		c1[i] -= a1*x + b1*y
	}
}

// qrPair1 is qrPair4 for one column.
func qrPair1(t1, t2, s float64, first1 bool, u1, u2, c []float64) {
	m := len(u1)
	u2, c = u2[:m], c[:m]
	var a, b float64
	for i, x := range u1 {
		a += x * c[i]
		b += u2[i] * c[i]
	}
	a, b = qrPairWeights(t1, t2, s, first1, a, b)
	for i, x := range u1 {
		c[i] -= a*x + b*u2[i]
	}
}

// qrPairWeights turns the dots d₁ = u₁ᵀc, d₂ = u₂ᵀc into the weights of c −= w₁u₁ + w₂u₂.
func qrPairWeights(t1, t2, s float64, first1 bool, d1, d2 float64) (w1, w2 float64) {
	if first1 {
		w1 = t1 * d1
		return w1, t2 * (d2 - w1*s)
	}
	w2 = t2 * d2
	return t1 * (d1 - w2*s), w2
}

// qrPairCols applies the pair to rows [k, n) of columns [j0, p) of the column-major n-row matrix c.
func qrPairCols(t1, t2, s float64, first1 bool, u1, u2, c []float64, n, k, j0, p int) {
	j := j0
	for ; j+4 <= p; j += 4 {
		qrPair4(t1, t2, s, first1, u1, u2, c[j*n+k:(j+1)*n], c[(j+1)*n+k:(j+2)*n], c[(j+2)*n+k:(j+3)*n],
			c[(j+3)*n+k:(j+4)*n])
	}
	if j+2 <= p {
		qrPair2(t1, t2, s, first1, u1, u2, c[j*n+k:(j+1)*n], c[(j+1)*n+k:(j+2)*n])
		j += 2
	}
	if j < p {
		qrPair1(t1, t2, s, first1, u1, u2, c[j*n+k:(j+1)*n])
	}
}

// qrSmallWork is one worker's scratch for the small kernel.
type qrSmallWork struct {
	a, q      []float64 // n×p column-major: the reflectors (and R) and the explicit Q
	tau, sign []float64
	u1, u2    []float64 // a pair of reflectors written out in full, rows k..n−1
}

func newQRSmallWork(n, p int) *qrSmallWork {
	return &qrSmallWork{a: make([]float64, n*p), q: make([]float64, n*p), tau: make([]float64, p),
		sign: make([]float64, p), u1: make([]float64, n), u2: make([]float64, n)}
}

// qrHouse turns column k of the column-major matrix a into the reflector H_k that zeroes its rows below k (LAPACK
// dlarfg convention: u = [1; tail], R_kk = β in place), recording τ_k and sign(R_kk).
func qrHouse(w *qrSmallWork, n, k int) {
	col := w.a[k*n : (k+1)*n]
	alpha := col[k]
	tail := col[k+1:]
	xx := vec.Dot(tail, tail)
	if xx == 0 {
		// Nothing below the diagonal: H = I and R_kk = alpha.
		w.tau[k] = 0
		w.sign[k] = 1
		if alpha < 0 {
			w.sign[k] = -1
		}
		return
	}
	beta := -math.Copysign(math.Hypot(alpha, math.Sqrt(xx)), alpha)
	w.tau[k] = (beta - alpha) / beta
	sc := 1 / (alpha - beta)
	for i := range tail {
		tail[i] *= sc
	}
	col[k] = beta
	// qf takes Q·diag(sign(R_kk)) so that diag(R) > 0 (paper 000 eq. (3.9)).
	w.sign[k] = 1
	if beta < 0 {
		w.sign[k] = -1
	}
}

// qrLoadPair writes reflectors k and k+1 out in full over rows k..n−1 (u₁ = [1; tail₁], u₂ = [0; 1; tail₂]) and
// returns them with s = u₁ᵀu₂.
func qrLoadPair(w *qrSmallWork, n, k int) (u1, u2 []float64, s float64) {
	m := n - k
	u1, u2 = w.u1[:m], w.u2[:m]
	u1[0] = 1
	copy(u1[1:], w.a[k*n+k+1:(k+1)*n])
	u2[0], u2[1] = 0, 1
	copy(u2[2:], w.a[(k+1)*n+k+2:(k+2)*n])
	return u1, u2, vec.Dot(u1[1:], u2[1:])
}

// qfColMajor overwrites the column-major n×p matrix in w.a with Householder reflectors and writes the sign-fixed
// Q (diag R > 0) into w.q, column-major. Reflectors are generated one at a time and applied in pairs.
func qfColMajor(w *qrSmallWork, n, p int) {
	a, q, tau := w.a, w.q, w.tau
	k := 0
	for ; k+1 < p; k += 2 {
		qrHouse(w, n, k)
		if tau[k] != 0 {
			qrReflect(tau[k], a[k*n+k+1:(k+1)*n], a[(k+1)*n+k:(k+2)*n])
		}
		qrHouse(w, n, k+1)
		if k+2 < p {
			u1, u2, s := qrLoadPair(w, n, k)
			qrPairCols(tau[k], tau[k+1], s, true, u1, u2, a, n, k, k+2, p)
		}
	}
	if k < p {
		qrHouse(w, n, k)
	}
	// Q = H_0 ⋯ H_{p−1} [I; 0], accumulated backwards so that H_k only touches rows and columns ≥ k.
	clear(q[:n*p])
	for j := 0; j < p; j++ {
		q[j*n+j] = 1
	}
	k = p - 1
	if p%2 == 1 {
		if tau[k] != 0 {
			qrReflectCols(tau[k], a[k*n+k+1:(k+1)*n], q, n, k, k, p)
		}
		k--
	}
	// Now pairs (k−1, k): Q ← H_{k−1} H_k Q on columns ≥ k−1.
	for ; k >= 1; k -= 2 {
		u1, u2, s := qrLoadPair(w, n, k-1)
		qrPairCols(tau[k-1], tau[k], s, false, u1, u2, q, n, k-1, k-1, p)
	}
}

// cgsMinRatio is the smallest ‖q_j‖²/‖a_j‖² (what is left of column j after removing its components along the
// earlier columns) that the Gram–Schmidt path accepts. Above it, orthogonalisation with one reorthogonalisation
// leaves Q orthonormal to working precision ("twice is enough" needs κ(A)·ε well below 1); below it the matrix is
// close to rank deficient and the Householder path takes over.
const cgsMinRatio = 1e-8

// cgsReorth is the DGKS test of classical Gram–Schmidt: a second orthogonalisation pass runs only when the first
// removed more than half of the column's squared norm (‖q_j‖ < ‖a_j‖/√2), the case where cancellation can leave
// q_j measurably off orthogonal. Retraction inputs X + tV with X orthonormal pass with one pass per column.
const cgsReorth = 0.5

// cgs2ColMajor writes into q the Q factor of the column-major n×p matrix a by classical Gram–Schmidt with
// reorthogonalisation where the DGKS test asks for it. Its R has a positive diagonal by construction, so Q is
// qf(a) with no sign fix. It reports false, leaving q undefined, when a column is too close to the span of the
// earlier ones (see cgsMinRatio) or the data are not finite. 2np² to 4np² flops, all in dot products and axpys over
// contiguous columns; r is p scratch values.
func cgs2ColMajor(a, q, r []float64, n, p int) bool {
	for j := 0; j < p; j++ {
		qj := q[j*n : (j+1)*n]
		copy(qj, a[j*n:(j+1)*n])
		n0 := vec.Dot(qj, qj)
		nj := n0
		for pass := 0; pass < 2 && j > 0; pass++ {
			for k := 0; k < j; k++ {
				r[k] = vec.Dot(q[k*n:(k+1)*n], qj)
			}
			for k := 0; k < j; k++ {
				vec.Axpy(-r[k], q[k*n:(k+1)*n], qj)
			}
			prev := nj
			nj = vec.Dot(qj, qj)
			if nj >= cgsReorth*prev {
				break
			}
		}
		if !(nj > cgsMinRatio*n0) || math.IsInf(nj, 0) {
			return false
		}
		s := 1 / math.Sqrt(nj)
		for i := range qj {
			qj[i] *= s
		}
	}
	return true
}

// qrLoadT writes the row-major n×p matrix x + t·v (rows at xo + i·xrs and vo + i·vrs of xh and vh) into the
// column-major scratch a. Four rows go at a time, so each column receives four consecutive values.
func qrLoadT(a, xh, vh []float64, xo, xrs, vo, vrs, n, p int, t float64, withV bool) {
	i := 0
	for ; i+4 <= n; i += 4 {
		x0, x1 := xh[xo+i*xrs:][:p], xh[xo+(i+1)*xrs:][:p]
		x2, x3 := xh[xo+(i+2)*xrs:][:p], xh[xo+(i+3)*xrs:][:p]
		if withV {
			v0, v1 := vh[vo+i*vrs:][:p], vh[vo+(i+1)*vrs:][:p]
			v2, v3 := vh[vo+(i+2)*vrs:][:p], vh[vo+(i+3)*vrs:][:p]
			for j := range x0 {
				c := a[j*n+i:][:4]
				c[0], c[1], c[2], c[3] = x0[j]+t*v0[j], x1[j]+t*v1[j], x2[j]+t*v2[j], x3[j]+t*v3[j]
			}
			continue
		}
		for j := range x0 {
			c := a[j*n+i:][:4]
			c[0], c[1], c[2], c[3] = x0[j], x1[j], x2[j], x3[j]
		}
	}
	for ; i < n; i++ {
		xr := xh[xo+i*xrs:][:p]
		for j, xv := range xr {
			if withV {
				xv += t * vh[vo+i*vrs+j]
			}
			a[j*n+i] = xv
		}
	}
}

// qrStoreT writes the column-major n×p matrix q, column j scaled by sign[j], into the row-major destination rows
// at do + i·drs of dh, four rows at a time.
func qrStoreT(dh []float64, do, drs int, q, sign []float64, n, p int) {
	i := 0
	for ; i+4 <= n; i += 4 {
		d0, d1 := dh[do+i*drs:][:p], dh[do+(i+1)*drs:][:p]
		d2, d3 := dh[do+(i+2)*drs:][:p], dh[do+(i+3)*drs:][:p]
		for j, sg := range sign[:p] {
			c := q[j*n+i:][:4]
			d0[j], d1[j], d2[j], d3[j] = c[0]*sg, c[1]*sg, c[2]*sg, c[3]*sg
		}
	}
	for ; i < n; i++ {
		dr := dh[do+i*drs:][:p]
		for j, sg := range sign[:p] {
			dr[j] = q[j*n+i] * sg
		}
	}
}

// qrRetractSmall is the batched small-matrix kernel, parallel over the batch.
func qrRetractSmall(be backend.Backend, dst, x, v *tensor.Tensor, t float64) error {
	cb := be.(*Backend)
	if err := checkHost("stiefel.qr_retract", []string{"dst", "x", "v"}, dst, x, v); err != nil {
		return err
	}
	s := x.Shape()
	n, p := s.Rows, s.Cols
	if s.Len() == 0 {
		return nil
	}
	// Raw slices and strides, looked up once: per-row accessor calls would cost as much as the arithmetic here.
	xh, xrs, xbs := hostData(x), x.RowStride(), x.BatchStride()
	dh, drs, dbs := hostData(dst), dst.RowStride(), dst.BatchStride()
	var vh []float64
	vrs, vbs := 0, 0
	if v != nil {
		vh, vrs, vbs = hostData(v), v.RowStride(), v.BatchStride()
		if v.Batch() == 1 {
			vbs = 0
		}
	}
	cb.parallelWork(s.Batch, 4*float64(n)*float64(p)*float64(p), func(lo, hi int) {
		w := newQRSmallWork(n, p)
		a := w.a
		for bb := lo; bb < hi; bb++ {
			// Load X + tV transposed into the column-major scratch, so every column operation is contiguous. Rows of
			// x and v are read contiguously; the scattered writes stay in the L1-resident scratch.
			xo, vo := x.Offset()+bb*xbs, 0
			if v != nil {
				vo = v.Offset() + bb*vbs
			}
			qrLoadT(a, xh, vh, xo, xrs, vo, vrs, n, p, t, v != nil)
			if cgs2ColMajor(w.a, w.q, w.tau, n, p) {
				for j := range w.sign[:p] {
					w.sign[j] = 1
				}
			} else {
				qfColMajor(w, n, p)
			}
			// Store Q·diag(sign) row-major, one contiguous destination row at a time; dst may alias x or v, which were
			// fully read above.
			q, sign := w.q, w.sign[:p]
			do := dst.Offset() + bb*dbs
			qrStoreT(dh, do, drs, q, sign, n, p)
		}
	})
	return nil
}

// qrTallBlockRows is the number of rows one BLAS call of the tall kernel works on: a few hundred rows of p ≤ 256
// columns stay in L2 between forming a block and multiplying it.
const qrTallBlockRows = 256

// qrRetractTall is CholeskyQR2 for one tall-skinny matrix: G = AᵀA, R₁ = chol(G), Q₁ = A R₁⁻¹, then the same on Q₁;
// Q = Q₁ R₂⁻¹ and R = R₂R₁ has a positive diagonal, so Q is qf(A) with no sign fix. One pass is accurate only to
// κ(A)²·ε; the second pass restores orthogonality to O(ε) while κ(A) ≲ ε^{-1/2}. Beyond that the kernel falls back to
// the Householder QR of the backend.
func qrRetractTall(be backend.Backend, dst, x, v *tensor.Tensor, t float64) error {
	cb := be.(*Backend)
	if err := checkHost("stiefel.qr_retract", []string{"dst", "x", "v"}, dst, x, v); err != nil {
		return err
	}
	n, p := x.Rows(), x.Cols()
	d := general(dst, 0)
	// A fixed number of row blocks, each with its own Gram matrix summed in order, so results do not depend on the
	// number of workers.
	nblk := min(max((n+2047)/2048, 1), 32)
	grams := make([]float64, nblk*p*p)
	gram := make([]float64, p*p)
	blk := func(k int) (lo, hi int) { return k * n / nblk, (k + 1) * n / nblk }

	// sweep runs body on the rows [lo, hi) of dst, in parallel over the row blocks and in sub-blocks of
	// qrTallBlockRows rows, then sums the blocks' upper-triangular Gram matrices Aᵀ_blk A_blk (Syrk) in order into gram.
	sweep := func(body func(lo, hi int)) {
		clear(grams)
		cb.parallelFor(nblk, func(k0, k1 int) {
			for k := k0; k < k1; k++ {
				lo, hi := blk(k)
				gk := blas64.Symmetric{Uplo: blas.Upper, N: p, Stride: p, Data: grams[k*p*p : (k+1)*p*p]}
				for r := lo; r < hi; r += qrTallBlockRows {
					r1 := min(r+qrTallBlockRows, hi)
					body(r, r1)
					qrGramAdd(d, r, r1, gk)
				}
			}
		})
		clear(gram)
		for k := 0; k < nblk; k++ {
			gk := grams[k*p*p : (k+1)*p*p]
			for i := 0; i < p; i++ {
				for j := i; j < p; j++ {
					gram[i*p+j] += gk[i*p+j]
				}
			}
		}
	}
	// chol factors gram = RᵀR in place (upper) and reports whether R is usable.
	chol := func() (blas64.Triangular, bool) {
		r, ok := lapackPotrf(blas64.Symmetric{Uplo: blas.Upper, N: p, Stride: p, Data: gram})
		if !ok {
			return r, false
		}
		// max/min of diag(R) bounds κ(A) from below; past ~1e7 one CholeskyQR pass leaves Q₁ too far from
		// orthonormal for the second to repair.
		lo, hi := math.Inf(1), 0.0
		for i := 0; i < p; i++ {
			dii := gram[i*p+i]
			lo, hi = min(lo, dii), max(hi, dii)
		}
		return r, lo > 0 && hi/lo < 1e7
	}
	solve := func(r blas64.Triangular) func(lo, hi int) {
		rt := qrInvT(r)
		return func(lo, hi int) { qrSolveRows(d, lo, hi, r, rt) }
	}

	// Pass 1: dst = X + tV (row by row: dst may alias x or v) and its Gram matrix.
	sweep(func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dr, xr := row(dst, 0, i)[:p], row(x, 0, i)[:p]
			if v != nil {
				vr := row(v, 0, i)[:p]
				for j, xv := range xr {
					dr[j] = xv + t*vr[j]
				}
			} else if &xr[0] != &dr[0] {
				copy(dr, xr)
			}
		}
	})
	r1, ok := chol()
	if !ok {
		return cb.QR(dst, nil, dst)
	}
	r1c := blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: p, Stride: p, Data: append([]float64(nil), r1.Data...)}
	// Pass 2: Q₁ = A R₁⁻¹ and Q₁ᵀQ₁.
	sweep(solve(r1c))
	// Q₁ᵀQ₁ should be close to I; if not, the Gram matrix lost too much and the second pass cannot repair it.
	for i := 0; i < p; i++ {
		for j := i; j < p; j++ {
			want := 0.0
			if i == j {
				want = 1
			}
			if math.Abs(gram[i*p+j]-want) > 0.5 {
				return cb.QR(dst, nil, dst)
			}
		}
	}
	r2, ok := lapackPotrf(blas64.Symmetric{Uplo: blas.Upper, N: p, Stride: p, Data: gram})
	if !ok {
		return cb.QR(dst, nil, dst)
	}
	// Pass 3: Q = Q₁ R₂⁻¹.
	solve2 := solve(r2)
	cb.parallelFor(nblk, func(k0, k1 int) {
		for k := k0; k < k1; k++ {
			lo, hi := blk(k)
			for r := lo; r < hi; r += qrTallBlockRows {
				solve2(r, min(r+qrTallBlockRows, hi))
			}
		}
	})
	return nil
}

// qrTallHandCols is the widest p for which the tall kernel uses its own row loops; wider matrices go to BLAS, whose
// per-call overhead is then amortised. With gonum's Syrk and Trsm the loops win up to p = 32; with the packed ones
// of internal/gemm (fastblas.go sets 7) BLAS is 2–5× faster from p = 8 (measured on Zen 5 at n = 2e5, p = 8 to 32),
// and below that Syrk falls back to gonum's.
var qrTallHandCols = qrTallHandMax

// qrTallHandMax is the largest qrTallHandCols: the loops' row buffer.
const qrTallHandMax = 32

// qrGramAdd adds Σ_r a_r a_rᵀ over the rows [lo, hi) of d to the upper triangle of the p×p matrix g.
func qrGramAdd(d blas64.General, lo, hi int, g blas64.Symmetric) {
	p := d.Cols
	if p > qrTallHandCols {
		blasSyrk(blas.Trans, 1, subRows(d, lo, hi), 1, g)
		return
	}
	gd, st := g.Data, d.Stride
	r := lo
	// Four rows at a time: each element of g is loaded and stored once per four rank-1 updates.
	for ; r+4 <= hi; r += 4 {
		r0, r1 := d.Data[r*st:r*st+p], d.Data[(r+1)*st:(r+1)*st+p]
		r2, r3 := d.Data[(r+2)*st:(r+2)*st+p], d.Data[(r+3)*st:(r+3)*st+p]
		for i := 0; i < p; i++ {
			a0, a1, a2, a3 := r0[i], r1[i], r2[i], r3[i]
			gi := gd[i*p+i : i*p+p]
			b0, b1, b2, b3 := r0[i:], r1[i:], r2[i:], r3[i:]
			b0, b1, b2, b3 = b0[:len(gi)], b1[:len(gi)], b2[:len(gi)], b3[:len(gi)]
			for j := range gi {
				gi[j] += a0*b0[j] + a1*b1[j] + a2*b2[j] + a3*b3[j]
			}
		}
	}
	for ; r < hi; r++ {
		r0 := d.Data[r*st : r*st+p]
		for i := 0; i < p; i++ {
			a0 := r0[i]
			gi := gd[i*p+i : i*p+p]
			b0 := r0[i:][:len(gi)]
			for j := range gi {
				gi[j] += a0 * b0[j]
			}
		}
	}
}

// qrInvT returns the transpose of R⁻¹ for the upper triangular p×p matrix r (nil when p > qrTallHandCols), so that
// column j of R⁻¹ is contiguous.
func qrInvT(r blas64.Triangular) []float64 {
	p := r.N
	if p > qrTallHandCols {
		return nil
	}
	inv := blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: p, Stride: p, Data: make([]float64, p*p)}
	for i := 0; i < p; i++ {
		copy(inv.Data[i*p+i:i*p+p], r.Data[i*r.Stride+i:i*r.Stride+p])
	}
	lapackTrtri(inv)
	rt := make([]float64, p*p)
	for i := 0; i < p; i++ {
		for j := i; j < p; j++ {
			rt[j*p+i] = inv.Data[i*p+j]
		}
	}
	return rt
}

// qrSolveRows overwrites the rows [lo, hi) of d with d·R⁻¹: through the explicit inverse (transposed in rt) for
// narrow matrices, where a row-by-row triangular solve would be dominated by call overhead, else by Trsm.
func qrSolveRows(d blas64.General, lo, hi int, r blas64.Triangular, rt []float64) {
	p := d.Cols
	if rt == nil {
		blasTrsm(blas.Right, blas.NoTrans, 1, r, subRows(d, lo, hi))
		return
	}
	var buf [qrTallHandMax]float64
	a := buf[:p]
	st := d.Stride
	for i := lo; i < hi; i++ {
		row := d.Data[i*st : i*st+p]
		copy(a, row)
		for j := range row {
			c := rt[j*p : j*p+j+1]
			var s0, s1 float64
			k := 0
			for ; k+2 <= len(c); k += 2 {
				s0 += a[k] * c[k]
				s1 += a[k+1] * c[k+1]
			}
			if k < len(c) {
				s0 += a[k] * c[k]
			}
			row[j] = s0 + s1
		}
	}
}
