package cpu

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// general returns matrix bb of t (with broadcast) as a blas64.General.
func general(t *tensor.Tensor, bb int) blas64.General {
	data, stride, r, c := matrix(t, bi(t, bb))
	return blas64.General{Rows: r, Cols: c, Stride: stride, Data: data}
}

// subRows returns rows [lo, hi) of g.
func subRows(g blas64.General, lo, hi int) blas64.General {
	if hi == lo {
		return blas64.General{Rows: 0, Cols: g.Cols, Stride: g.Stride}
	}
	return blas64.General{Rows: hi - lo, Cols: g.Cols, Stride: g.Stride, Data: g.Data[lo*g.Stride : (hi-1)*g.Stride+g.Cols]}
}

// subCols returns columns [lo, hi) of g.
func subCols(g blas64.General, lo, hi int) blas64.General {
	if hi == lo || g.Rows == 0 {
		return blas64.General{Rows: g.Rows, Cols: hi - lo, Stride: g.Stride}
	}
	return blas64.General{Rows: g.Rows, Cols: hi - lo, Stride: g.Stride, Data: g.Data[lo : (g.Rows-1)*g.Stride+hi]}
}

// opRows restricts the rows of op(g) to [lo, hi).
func opRows(t blas.Transpose, g blas64.General, lo, hi int) blas64.General {
	if t == blas.NoTrans {
		return subRows(g, lo, hi)
	}
	return subCols(g, lo, hi)
}

// opCols restricts the columns of op(g) to [lo, hi).
func opCols(t blas.Transpose, g blas64.General, lo, hi int) blas64.General {
	if t == blas.NoTrans {
		return subCols(g, lo, hi)
	}
	return subRows(g, lo, hi)
}

// scaleGeneral sets g = beta·g (zero when beta is 0, so NaN does not survive).
func scaleGeneral(g blas64.General, beta float64) {
	for i := 0; i < g.Rows; i++ {
		r := g.Data[i*g.Stride : i*g.Stride+g.Cols]
		if beta == 0 {
			clear(r)
			continue
		}
		for j := range r {
			r[j] *= beta
		}
	}
}

// gemmOne computes one C = alpha·op(A)·op(B) + beta·C, split over the workers when it is large.
func (b *Backend) gemmOne(tA, tB blas.Transpose, alpha float64, A, B blas64.General, beta float64, C blas64.General, split bool) {
	m, n := C.Rows, C.Cols
	if m == 0 || n == 0 {
		return
	}
	k := A.Cols
	if tA != blas.NoTrans {
		k = A.Rows
	}
	if k == 0 || alpha == 0 {
		scaleGeneral(C, beta)
		return
	}
	flops := 2 * float64(m) * float64(n) * float64(k)
	w := b.workers
	if !split || w == 1 || flops < 4e6 {
		blasGemm(tA, tB, alpha, A, B, beta, C)
		return
	}
	switch {
	case m >= 4*w && m >= n:
		b.parallelFor(m, func(lo, hi int) {
			blasGemm(tA, tB, alpha, opRows(tA, A, lo, hi), B, beta, subRows(C, lo, hi))
		})
	case n >= 4*w:
		b.parallelFor(n, func(lo, hi int) {
			blasGemm(tA, tB, alpha, A, opCols(tB, B, lo, hi), beta, subCols(C, lo, hi))
		})
	case k >= 64*w:
		// A small result with a long inner dimension (Gram matrices of tall factors): each worker sums a slice of
		// the inner dimension into its own buffer, then the partial sums are added.
		parts := make([][]float64, w)
		b.parallelFor(w, func(lo, hi int) {
			for p := lo; p < hi; p++ {
				k0, k1 := p*k/w, (p+1)*k/w
				buf := make([]float64, m*n)
				blasGemm(tA, tB, 1, opCols(tA, A, k0, k1), opRows(tB, B, k0, k1), 0,
					blas64.General{Rows: m, Cols: n, Stride: n, Data: buf})
				parts[p] = buf
			}
		})
		for i := 0; i < m; i++ {
			r := C.Data[i*C.Stride : i*C.Stride+n]
			for j := range r {
				var s float64
				for _, part := range parts {
					s += part[i*n+j]
				}
				if beta == 0 {
					r[j] = alpha * s
				} else {
					r[j] = alpha*s + beta*r[j]
				}
			}
		}
	default:
		blasGemm(tA, tB, alpha, A, B, beta, C)
	}
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C for each batch item.
func (b *Backend) Gemm(tA, tB blas.Transpose, alpha float64, a, bm *tensor.Tensor, beta float64, c *tensor.Tensor) error {
	if err := backend.CheckGemm(tA, tB, a, bm, c); err != nil {
		return err
	}
	if err := checkHost("gemm", []string{"a", "b", "c"}, a, bm, c); err != nil {
		return err
	}
	nb := c.Batch()
	k := a.Cols()
	if tA != blas.NoTrans {
		k = a.Rows()
	}
	if nb == 1 {
		b.gemmOne(tA, tB, alpha, general(a, 0), general(bm, 0), beta, general(c, 0), true)
		return nil
	}
	b.parallelWork(nb, 2*float64(c.Rows())*float64(c.Cols())*float64(k), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			b.gemmOne(tA, tB, alpha, general(a, i), general(bm, i), beta, general(c, i), false)
		}
	})
	return nil
}

// mirrorLower copies the strict lower triangle of a square matrix onto its upper triangle.
func mirrorLower(g blas64.General) {
	for i := 0; i < g.Rows; i++ {
		for j := 0; j < i; j++ {
			g.Data[j*g.Stride+i] = g.Data[i*g.Stride+j]
		}
	}
}

// Syrk computes C = alpha·A·Aᵀ + beta·C or C = alpha·Aᵀ·A + beta·C, both triangles written.
func (b *Backend) Syrk(tA blas.Transpose, alpha float64, a *tensor.Tensor, beta float64, c *tensor.Tensor) error {
	if err := backend.CheckSyrk(tA, a, c); err != nil {
		return err
	}
	if err := checkHost("syrk", []string{"a", "c"}, a, c); err != nil {
		return err
	}
	n := c.Rows()
	k := a.Cols()
	if tA != blas.NoTrans {
		k = a.Rows()
	}
	one := func(i int, split bool) {
		A, C := general(a, i), general(c, i)
		if n == 0 {
			return
		}
		if k == 0 || alpha == 0 {
			scaleGeneral(C, beta)
			return
		}
		if split && b.workers > 1 && k >= 64*b.workers && float64(n)*float64(n)*float64(k) > 4e6 {
			// Tall factor: split the inner dimension and add the partial Gram matrices.
			w := b.workers
			parts := make([][]float64, w)
			b.parallelFor(w, func(lo, hi int) {
				for p := lo; p < hi; p++ {
					k0, k1 := p*k/w, (p+1)*k/w
					buf := make([]float64, n*n)
					blasSyrk(tA, 1, opCols(tA, A, k0, k1), 0,
						blas64.Symmetric{N: n, Stride: n, Data: buf, Uplo: blas.Lower})
					parts[p] = buf
				}
			})
			for r := 0; r < n; r++ {
				for j := 0; j <= r; j++ {
					var s float64
					for _, part := range parts {
						s += part[r*n+j]
					}
					if beta == 0 {
						C.Data[r*C.Stride+j] = alpha * s
					} else {
						C.Data[r*C.Stride+j] = alpha*s + beta*C.Data[r*C.Stride+j]
					}
				}
			}
		} else {
			if beta == 0 { // gonum scales C by 0 here, which keeps a NaN; the contract says C is not read
				for r := 0; r < n; r++ {
					clear(C.Data[r*C.Stride : r*C.Stride+r+1])
				}
			}
			blasSyrk(tA, alpha, A, beta, blas64.Symmetric{N: n, Stride: C.Stride, Data: C.Data, Uplo: blas.Lower})
		}
		mirrorLower(C)
	}
	if c.Batch() == 1 {
		one(0, true)
		return nil
	}
	b.parallelWork(c.Batch(), float64(n)*float64(n)*float64(k), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			one(i, false)
		}
	})
	return nil
}

func triangular(t *tensor.Tensor, bb int, ul blas.Uplo, d blas.Diag) blas64.Triangular {
	g := general(t, bb)
	return blas64.Triangular{N: g.Rows, Stride: g.Stride, Data: g.Data, Uplo: ul, Diag: d}
}

// triOp runs Trsm or Trmm over the batch; a single large right-hand side is split over the workers along the
// dimension the triangular factor does not touch.
func (b *Backend) triOp(op string, side blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, alpha float64, a, bm *tensor.Tensor,
	f func(blas.Side, blas.Transpose, float64, blas64.Triangular, blas64.General)) error {
	if err := backend.CheckTri(op, side, ul, tA, d, a, bm); err != nil {
		return err
	}
	if err := checkHost(op, []string{"a", "b"}, a, bm); err != nil {
		return err
	}
	if bm.Len() == 0 {
		return nil
	}
	n := a.Rows()
	other := bm.Cols()
	if side == blas.Right {
		other = bm.Rows()
	}
	if bm.Batch() == 1 {
		A, B := triangular(a, 0, ul, d), general(bm, 0)
		if b.workers > 1 && other >= 4*b.workers && float64(n)*float64(n)*float64(other) > 4e6 {
			b.parallelFor(other, func(lo, hi int) {
				if side == blas.Left {
					f(side, tA, alpha, A, subCols(B, lo, hi))
				} else {
					f(side, tA, alpha, A, subRows(B, lo, hi))
				}
			})
			return nil
		}
		f(side, tA, alpha, A, B)
		return nil
	}
	b.parallelWork(bm.Batch(), float64(n)*float64(n)*float64(other), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			f(side, tA, alpha, triangular(a, i, ul, d), general(bm, i))
		}
	})
	return nil
}

// Trsm solves op(A)·X = alpha·B or X·op(A) = alpha·B in place in B.
func (b *Backend) Trsm(side blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, alpha float64, a, bm *tensor.Tensor) error {
	return b.triOp("trsm", side, ul, tA, d, alpha, a, bm, blasTrsm)
}

// Trmm computes B = alpha·op(A)·B or B = alpha·B·op(A) in place.
func (b *Backend) Trmm(side blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, alpha float64, a, bm *tensor.Tensor) error {
	return b.triOp("trmm", side, ul, tA, d, alpha, a, bm, blasTrmm)
}
