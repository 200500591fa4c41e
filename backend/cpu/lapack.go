package cpu

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// smallChol is the order up to which Potrf uses the unblocked kernel below instead of LAPACK: for small matrices
// the call and blocking overhead of dpotrf dominates.
const smallChol = 48

// cholSmall factors the lower triangle of the n×n row-major matrix a in place (a = L·Lᵀ), zeroing the strict upper
// triangle. It reports false if a pivot is not positive and finite.
func cholSmall(a []float64, n, stride int) bool {
	for j := 0; j < n; j++ {
		rj := a[j*stride : j*stride+n]
		d := rj[j]
		for k := 0; k < j; k++ {
			d -= rj[k] * rj[k]
		}
		if !(d > 0) || math.IsInf(d, 0) {
			return false
		}
		d = math.Sqrt(d)
		rj[j] = d
		inv := 1 / d
		for i := j + 1; i < n; i++ {
			ri := a[i*stride : i*stride+n]
			s := ri[j]
			for k := 0; k < j; k++ {
				s -= ri[k] * rj[k]
			}
			ri[j] = s * inv
		}
		clear(rj[j+1:])
	}
	return true
}

// potrfOne factors one matrix; it reports false when it is not numerically positive definite.
func potrfOne(g blas64.General) bool {
	n := g.Rows
	if n == 0 {
		return true
	}
	if n <= smallChol {
		return cholSmall(g.Data, n, g.Stride)
	}
	_, ok := lapackPotrf(blas64.Symmetric{N: n, Stride: g.Stride, Data: g.Data, Uplo: blas.Lower})
	if !ok {
		return false
	}
	for i := 0; i < n; i++ {
		clear(g.Data[i*g.Stride+i+1 : i*g.Stride+n])
		if d := g.Data[i*g.Stride+i]; math.IsNaN(d) || math.IsInf(d, 0) {
			return false
		}
	}
	return true
}

// Potrf overwrites each SPD matrix of a with its lower Cholesky factor.
func (b *Backend) Potrf(a *tensor.Tensor) error {
	const op = "potrf"
	if err := backend.CheckNotNil(op, []string{"a"}, a); err != nil {
		return err
	}
	if err := backend.CheckSquare(op, "a", a); err != nil {
		return err
	}
	if err := checkHost(op, []string{"a"}, a); err != nil {
		return err
	}
	nb := a.Batch()
	failed := make([]bool, nb)
	n := float64(a.Rows())
	b.parallelWork(nb, n*n*n/3, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			failed[i] = !potrfOne(general(a, i))
		}
	})
	for i, f := range failed {
		if f {
			return backend.BatchErrorf(op, "a", i, backend.ErrNotPositiveDefinite, "Cholesky factorisation of a %d×%d matrix failed", a.Rows(), a.Rows())
		}
	}
	return nil
}

// Potrs solves A·X = B in place in b given the lower Cholesky factor of A.
func (b *Backend) Potrs(l, bm *tensor.Tensor) error {
	if err := backend.CheckPotrs(l, bm); err != nil {
		return err
	}
	if err := b.Trsm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, l, bm); err != nil {
		return err
	}
	return b.Trsm(blas.Left, blas.Lower, blas.Trans, blas.NonUnit, 1, l, bm)
}

// qrWork is the scratch of one worker for QR.
type qrWork struct {
	tau, work, sign []float64
}

func newQRWork(n, p int) *qrWork {
	w := &qrWork{tau: make([]float64, p), sign: make([]float64, p)}
	if n == 0 || p == 0 {
		return w
	}
	probe := blas64.General{Rows: n, Cols: p, Stride: p, Data: make([]float64, 1)}
	q := make([]float64, 1)
	lapackGeqrf(probe, w.tau, q, -1)
	lw := int(q[0])
	lapackOrgqr(probe, w.tau, q, -1)
	lw = max(lw, int(q[0]), p)
	w.work = make([]float64, lw)
	return w
}

// qrOne computes the sign-fixed thin QR of the matrix already copied into q, writing R into r when r.Data is set.
func qrOne(q, r blas64.General, w *qrWork) {
	n, p := q.Rows, q.Cols
	if p == 0 || n == 0 {
		return
	}
	lapackGeqrf(q, w.tau, w.work, len(w.work))
	// Record the sign of each R_jj before Orgqr overwrites the upper triangle.
	sign := w.sign
	for j := 0; j < p; j++ {
		sign[j] = 1
		if q.Data[j*q.Stride+j] < 0 {
			sign[j] = -1
		}
	}
	if r.Data != nil {
		for i := 0; i < p; i++ {
			ri := r.Data[i*r.Stride : i*r.Stride+p]
			clear(ri[:i])
			for j := i; j < p; j++ {
				ri[j] = sign[i] * q.Data[i*q.Stride+j]
			}
		}
	}
	lapackOrgqr(q, w.tau, w.work, len(w.work))
	// qf: Q·diag(sign) has R with a positive diagonal (paper 000 eq. (3.9)).
	for i := 0; i < n; i++ {
		qi := q.Data[i*q.Stride : i*q.Stride+p]
		for j, s := range sign {
			qi[j] *= s
		}
	}
}

// QR computes the sign-fixed thin QR factorisation of each matrix of a.
func (b *Backend) QR(q, r, a *tensor.Tensor) error {
	if err := backend.CheckQR(q, r, a); err != nil {
		return err
	}
	if err := checkHost("qr", []string{"q", "r", "a"}, q, r, a); err != nil {
		return err
	}
	if q != a {
		if err := b.Copy(q, a); err != nil {
			return err
		}
	}
	n, p := a.Rows(), a.Cols()
	b.parallelWork(a.Batch(), 4*float64(n)*float64(p)*float64(p), func(lo, hi int) {
		w := newQRWork(n, p)
		for i := lo; i < hi; i++ {
			var rg blas64.General
			if r != nil {
				rg = general(r, i)
			}
			qrOne(general(q, i), rg, w)
		}
	})
	return nil
}

// Syev computes eigenvalues (ascending) and optionally eigenvectors of each symmetric matrix of a.
func (b *Backend) Syev(w, v, a *tensor.Tensor) error {
	const op = "syev"
	if err := backend.CheckSyev(w, v, a); err != nil {
		return err
	}
	if err := checkHost(op, []string{"w", "v", "a"}, w, v, a); err != nil {
		return err
	}
	n := a.Rows()
	jobz := lapack.EVNone
	if v != nil {
		jobz = lapack.EVCompute
	}
	nb := a.Batch()
	failed := make([]bool, nb)
	b.parallelWork(nb, 10*float64(n)*float64(n)*float64(n), func(lo, hi int) {
		buf := make([]float64, n*n)
		wv := make([]float64, n)
		var work []float64
		if n > 0 {
			q := make([]float64, 1)
			lapackSyev(jobz, blas64.Symmetric{N: n, Stride: n, Data: buf, Uplo: blas.Lower}, wv, q, -1)
			work = make([]float64, int(q[0]))
		}
		for i := lo; i < hi; i++ {
			if n == 0 {
				continue
			}
			ag := general(a, i)
			for r := 0; r < n; r++ {
				copy(buf[r*n:r*n+n], ag.Data[r*ag.Stride:r*ag.Stride+n])
			}
			e := 0
			if jobz == lapack.EVNone {
				e = syevPrescale(buf, n)
			}
			if !lapackSyev(jobz, blas64.Symmetric{N: n, Stride: n, Data: buf, Uplo: blas.Lower}, wv, work, len(work)) {
				failed[i] = true
				continue
			}
			for k := range wv {
				wv[k] = math.Ldexp(wv[k], -e)
			}
			copyCol(w, i, wv)
			if v != nil {
				vg := general(v, i)
				for r := 0; r < n; r++ {
					copy(vg.Data[r*vg.Stride:r*vg.Stride+n], buf[r*n:r*n+n])
				}
			}
		}
	})
	for i, f := range failed {
		if f {
			return backend.BatchErrorf(op, "a", i, backend.ErrNoConvergence, "symmetric eigen-solver did not converge")
		}
	}
	return nil
}

// syevPrescale scales the lower triangle of the n×n a by 2^e so that its largest magnitude lies in [½, 1), and
// returns e (0 when a is zero or not finite). Without vectors gonum's Dsyev ends in Dsterf, which can panic when it
// has to rescale the matrix itself (it does for entries below about 1e-146). Scaling by a power of two rounds
// nothing, unless entries far smaller than the largest fall below the normal range.
func syevPrescale(a []float64, n int) int {
	var m float64
	for r := 0; r < n; r++ {
		for _, x := range a[r*n : r*n+r+1] {
			m = max(m, math.Abs(x))
		}
	}
	if m == 0 || math.IsInf(m, 0) || math.IsNaN(m) {
		return 0
	}
	_, e := math.Frexp(m)
	e = -e
	for r := 0; r < n; r++ {
		for c := range a[r*n : r*n+r+1] {
			a[r*n+c] = math.Ldexp(a[r*n+c], e)
		}
	}
	return e
}

// copyCol writes src into the n×1 matrix bb of t, whatever its row stride.
func copyCol(t *tensor.Tensor, bb int, src []float64) {
	h := hostData(t)
	base := t.Offset() + bb*t.BatchStride()
	for i, x := range src {
		h[base+i*t.RowStride()] = x
	}
}
