package cpu

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/lapack"
	lapackgonum "gonum.org/v1/gonum/lapack/gonum"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// blasImpl and lapackImpl are the BLAS and LAPACK the backend calls: gonum's, with the faster kernels of
// fastblas.go when the CPU has them, or OpenBLAS and LAPACKE under the netlib tag (netlib.go). The backend calls them
// directly and never changes gonum's process-wide choice (blas64.Use, lapack64.Use) unless a program asks for it
// with UseForGonum.
var (
	blasImpl   blas.Float64   = gonum.Implementation{}
	lapackImpl lapack.Float64 = lapackgonum.Implementation{}
)

// UseForGonum makes the backend's BLAS and LAPACK (see Backend.Info) gonum's process-wide implementation, as
// blas64.Use and lapack64.Use do: every later gonum/mat, blas64 and lapack64 call in the program, and gonum's own
// LAPACK inside this backend (Potrf, QR, Syev), then runs on them. Importing the package changes nothing; call it
// from main, before any other goroutine uses gonum, like blas64.Use. In the pure-Go build on a CPU without AVX2
// and FMA it leaves gonum's defaults as they are.
func UseForGonum() {
	blas64.Use(blasImpl)
	lapack64.Use(lapackImpl)
}

// The wrappers below are blas64's and lapack64's (same argument mapping, so the same calls reach the
// implementation), on blasImpl and lapackImpl.

func blasGemm(tA, tB blas.Transpose, alpha float64, a, b blas64.General, beta float64, c blas64.General) {
	var m, n, k int
	if tA == blas.NoTrans {
		m, k = a.Rows, a.Cols
	} else {
		m, k = a.Cols, a.Rows
	}
	if tB == blas.NoTrans {
		n = b.Cols
	} else {
		n = b.Rows
	}
	blasImpl.Dgemm(tA, tB, m, n, k, alpha, a.Data, a.Stride, b.Data, b.Stride, beta, c.Data, c.Stride)
}

func blasSyrk(t blas.Transpose, alpha float64, a blas64.General, beta float64, c blas64.Symmetric) {
	var n, k int
	if t == blas.NoTrans {
		n, k = a.Rows, a.Cols
	} else {
		n, k = a.Cols, a.Rows
	}
	blasImpl.Dsyrk(c.Uplo, t, n, k, alpha, a.Data, a.Stride, beta, c.Data, c.Stride)
}

func blasTrsm(s blas.Side, tA blas.Transpose, alpha float64, a blas64.Triangular, b blas64.General) {
	blasImpl.Dtrsm(s, a.Uplo, tA, a.Diag, b.Rows, b.Cols, alpha, a.Data, a.Stride, b.Data, b.Stride)
}

func blasTrmm(s blas.Side, tA blas.Transpose, alpha float64, a blas64.Triangular, b blas64.General) {
	blasImpl.Dtrmm(s, a.Uplo, tA, a.Diag, b.Rows, b.Cols, alpha, a.Data, a.Stride, b.Data, b.Stride)
}

func blasGemv(t blas.Transpose, alpha float64, a blas64.General, x blas64.Vector, beta float64, y blas64.Vector) {
	blasImpl.Dgemv(t, a.Rows, a.Cols, alpha, a.Data, a.Stride, x.Data, x.Inc, beta, y.Data, y.Inc)
}

func lapackPotrf(a blas64.Symmetric) (t blas64.Triangular, ok bool) {
	ok = lapackImpl.Dpotrf(a.Uplo, a.N, a.Data, max(1, a.Stride))
	t.Uplo = a.Uplo
	t.N = a.N
	t.Data = a.Data
	t.Stride = a.Stride
	t.Diag = blas.NonUnit
	return
}

func lapackPotrs(t blas64.Triangular, b blas64.General) {
	lapackImpl.Dpotrs(t.Uplo, t.N, b.Cols, t.Data, max(1, t.Stride), b.Data, max(1, b.Stride))
}

func lapackGeqrf(a blas64.General, tau, work []float64, lwork int) {
	lapackImpl.Dgeqrf(a.Rows, a.Cols, a.Data, max(1, a.Stride), tau, work, lwork)
}

func lapackOrgqr(a blas64.General, tau []float64, work []float64, lwork int) {
	lapackImpl.Dorgqr(a.Rows, a.Cols, len(tau), a.Data, a.Stride, tau, work, lwork)
}

func lapackSyev(jobz lapack.EVJob, a blas64.Symmetric, w, work []float64, lwork int) (ok bool) {
	return lapackImpl.Dsyev(jobz, a.Uplo, a.N, a.Data, max(1, a.Stride), w, work, lwork)
}

func lapackTrtri(a blas64.Triangular) (ok bool) {
	return lapackImpl.Dtrtri(a.Uplo, a.Diag, a.N, a.Data, max(1, a.Stride))
}
