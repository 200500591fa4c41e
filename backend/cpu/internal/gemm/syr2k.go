package gemm

import (
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// syr2kBlock is the order of the square tiles of C that Dsyr2k computes at a time: a 256×256 tile (512 KiB) stays
// in L2 between the products that form it and the pass that adds it into C.
var syr2kBlock = 256

// Dsyr2k computes the ul triangle of C = alpha·A·Bᵀ + alpha·B·Aᵀ + beta·C (tA = NoTrans, A and B n×k) or
// C = alpha·Aᵀ·B + alpha·Bᵀ·A + beta·C (A and B k×n) exactly as gonum's Dsyr2k specifies, including its argument
// checks and panics; the other triangle is not touched. It is the rank-2k update of LAPACK's blocked reduction to
// tridiagonal form (Dsytrd), a tenth of the time of the SPD transport at order 200 with gonum's loops, which run it
// at 6.3–6.7 GFLOP/s on one Zen 5 core; these tiles at 45–55 (BenchmarkDsyr2k).
//
// C is taken in square tiles. With W = op(A)·op(B)ᵀ, C_ij = beta·C_ij + alpha·(W_ij + W_ji): a tile off the
// diagonal, rows I and columns J, is W_IJ + (W_JI)ᵀ = op(A)_I·op(B)_Jᵀ + op(B)_I·op(A)_Jᵀ, two Dgemm products into
// one buffer; a tile on the diagonal is W_II, one product, added to its own transpose. That is the 2n²k flops of
// the update, all of them in the packed kernels.
func Dsyr2k(ul blas.Uplo, tA blas.Transpose, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int,
	beta float64, c []float64, ldc int) {
	ks := active()
	if ks == nil || alpha == 0 || k == 0 || n < minSyrkN || n*n*k < minWork ||
		!syr2kArgsOK(ul, tA, n, k, a, lda, b, ldb, c, ldc) {
		gonum.Implementation{}.Dsyr2k(ul, tA, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	trans := tA != blas.NoTrans
	bs := min(syr2kBlock, n)
	wp := getSyr2kWork(bs * bs)
	defer syr2kPool.Put(wp)
	t := *wp
	// op(X) restricted to the rows [r0, …) starts at row r0 of X, or at its column r0 when X is transposed.
	rows := func(x []float64, ld, r0 int) []float64 {
		if trans {
			return x[r0:]
		}
		return x[r0*ld:]
	}
	for i0 := 0; i0 < n; i0 += bs {
		bi := min(bs, n-i0)
		j0, j1 := 0, i0+1
		if ul == blas.Upper {
			j0, j1 = i0, n
		}
		for ; j0 < j1; j0 += bs {
			bj := min(bs, n-j0)
			drive(ks, trans, !trans, bi, bj, k, 1, rows(a, lda, i0), lda, rows(b, ldb, j0), ldb, 0, t, bj, full)
			if j0 == i0 {
				syr2kDiag(ul, bi, alpha, t, bj, beta, c[i0*ldc+i0:], ldc)
				continue
			}
			drive(ks, trans, !trans, bi, bj, k, 1, rows(b, ldb, i0), ldb, rows(a, lda, j0), lda, 1, t, bj, full)
			for r := 0; r < bi; r++ {
				cr := c[(i0+r)*ldc+j0 : (i0+r)*ldc+j0+bj]
				tr := t[r*bj : r*bj+bj]
				if beta == 0 {
					for j, v := range tr {
						cr[j] = alpha * v
					}
					continue
				}
				for j, v := range tr {
					cr[j] = beta*cr[j] + alpha*v
				}
			}
		}
	}
}

// syr2kDiag sets the ul triangle of the n×n block c to beta·c + alpha·(t + tᵀ), t with stride ldt; with beta 0, c is
// not read.
func syr2kDiag(ul blas.Uplo, n int, alpha float64, t []float64, ldt int, beta float64, c []float64, ldc int) {
	for i := 0; i < n; i++ {
		lo, hi := 0, i+1
		if ul == blas.Upper {
			lo, hi = i, n
		}
		cr := c[i*ldc+lo : i*ldc+hi]
		for jj := range cr {
			j := lo + jj
			v := alpha * (t[i*ldt+j] + t[j*ldt+i])
			if beta == 0 {
				cr[jj] = v
			} else {
				cr[jj] = beta*cr[jj] + v
			}
		}
	}
}

// syr2kArgsOK reports whether gonum's Dsyr2k would accept the arguments and do work (n > 0).
func syr2kArgsOK(ul blas.Uplo, tA blas.Transpose, n, k int, a []float64, lda int, b []float64, ldb int,
	c []float64, ldc int) bool {
	if (ul != blas.Lower && ul != blas.Upper) || !okTrans(tA) || n <= 0 || k < 0 || ldc < max(1, n) {
		return false
	}
	row, col := k, n
	if tA == blas.NoTrans {
		row, col = n, k
	}
	return lda >= max(1, col) && ldb >= max(1, col) && len(a) >= lda*(row-1)+col && len(b) >= ldb*(row-1)+col &&
		len(c) >= ldc*(n-1)+n
}

// syr2kPool holds the tile buffers of Dsyr2k.
var syr2kPool sync.Pool

func getSyr2kWork(n int) *[]float64 {
	w, _ := syr2kPool.Get().(*[]float64)
	if w == nil || len(*w) < n {
		b := make([]float64, n)
		w = &b
	}
	return w
}
