//go:build !netlib || !cgo

package cpu

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/geovb/geovb/backend/cpu/internal/gemm"
)

// fastBLAS is gonum's BLAS with Dgemm and Dsyrk replaced by packed, register-blocked kernels (internal/gemm), Dtrsm
// by a recursive solve on that Dgemm with register-blocked substitution for small triangles, and Dsyr2k (the
// rank-2k update of LAPACK's reduction to tridiagonal form, inside every symmetric eigen-decomposition) by tiles of
// that Dgemm. The replacements check their arguments as gonum does and hand small, degenerate and invalid calls to
// gonum, so behaviour on bad input, panics included, is gonum's.
type fastBLAS struct{ gonum.Implementation }

// Dgemm computes C = alpha·op(A)·op(B) + beta·C.
func (fastBLAS) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int,
	beta float64, c []float64, ldc int) {
	gemm.Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Dsyrk computes one triangle of C = alpha·A·Aᵀ + beta·C or alpha·Aᵀ·A + beta·C.
func (fastBLAS) Dsyrk(ul blas.Uplo, tA blas.Transpose, n, k int, alpha float64, a []float64, lda int, beta float64,
	c []float64, ldc int) {
	gemm.Dsyrk(ul, tA, n, k, alpha, a, lda, beta, c, ldc)
}

// Dsyr2k computes one triangle of C = alpha·A·Bᵀ + alpha·B·Aᵀ + beta·C or alpha·Aᵀ·B + alpha·Bᵀ·A + beta·C.
func (fastBLAS) Dsyr2k(ul blas.Uplo, tA blas.Transpose, n, k int, alpha float64, a []float64, lda int, b []float64,
	ldb int, beta float64, c []float64, ldc int) {
	gemm.Dsyr2k(ul, tA, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Dtrsm solves op(A)·X = alpha·B or X·op(A) = alpha·B for triangular A, overwriting B with X.
func (fastBLAS) Dtrsm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64,
	lda int, b []float64, ldb int) {
	gemm.Dtrsm(s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
}

// The backend's own BLAS calls take fastBLAS; gonum's LAPACK (which calls blas64.Implementation()) and gonum/mat
// get it only after UseForGonum. Without AVX2+FMA there is nothing faster than gonum and the backend calls gonum.
func init() {
	if k := gemm.Kernel(); k != "" {
		blasImpl = fastBLAS{}
		library = "gonum (pure Go), Dgemm/Dsyrk/Dsyr2k/Dtrsm " + k
		qrTallHandCols = 7
	}
}

// startLibrary has nothing to set up for gonum.
func startLibrary() {}
