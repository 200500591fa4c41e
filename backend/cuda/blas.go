package cuda

import (
	"math"
	"slices"
	"unsafe"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cuda/internal/cu"
	"github.com/geovb/geovb/tensor"
)

// Row-major tensors meet column-major cuBLAS through one identity: a row-major r×c matrix with row stride ld is,
// read column-major, its c×r transpose with leading dimension ld. So C = op(A)·op(B) is computed as
// Cᵀ = op(B)ᵀ·op(A)ᵀ with the operands swapped, and a triangular solve from the left becomes one from the right
// with the triangle flipped.

const cuNil = cu.DevPtr(0)

var (
	negInf = math.Inf(-1)
	posInf = math.Inf(1)
)

func cuOp(t blas.Transpose) cu.Op {
	if t == blas.NoTrans {
		return cu.OpN
	}
	return cu.OpT
}

// stride is the batch stride of an operand for a strided-batched call: 0 when one matrix serves the whole batch.
func stride(t *tensor.Tensor) int64 {
	if t.Batch() == 1 {
		return 0
	}
	return int64(t.BatchStride())
}

// ld is a leading dimension cuBLAS accepts: at least 1 and at least the column count.
func ld(t *tensor.Tensor) int {
	return max(t.RowStride(), t.Cols(), 1)
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C for each batch item with one strided-batched cuBLAS call.
func (b *Backend) Gemm(tA, tB blas.Transpose, alpha float64, a, bm *tensor.Tensor, beta float64, c *tensor.Tensor) error {
	if err := backend.CheckGemm(tA, tB, a, bm, c); err != nil {
		return err
	}
	if err := b.ownsNamed("gemm", []string{"a", "b", "c"}, a, bm, c); err != nil {
		return err
	}
	m, n := c.Rows(), c.Cols()
	k := a.Cols()
	if tA == blas.Trans {
		k = a.Rows()
	}
	if c.Len() == 0 {
		return nil
	}
	if k == 0 { // C = beta·C, without reading C when beta = 0
		if beta == 0 {
			return b.Fill(c, 0)
		}
		return b.Axpby(c, beta, c, 0, nil)
	}
	return b.queue("gemm", func() error {
		return b.gpu.DgemmStridedBatched(cuOp(tB), cuOp(tA), n, m, k, alpha,
			b.ptr(bm), ld(bm), stride(bm), b.ptr(a), ld(a), stride(a), beta, b.ptr(c), ld(c), int64(c.BatchStride()),
			c.Batch())
	})
}

// Syrk computes C = alpha·A·Aᵀ + beta·C (NoTrans) or alpha·Aᵀ·A + beta·C (Trans), both triangles, as a batched
// GEMM: the contract wants the full symmetric result, which GEMM writes in one pass.
func (b *Backend) Syrk(tA blas.Transpose, alpha float64, a *tensor.Tensor, beta float64, c *tensor.Tensor) error {
	if err := backend.CheckSyrk(tA, a, c); err != nil {
		return err
	}
	if err := b.ownsNamed("syrk", []string{"a", "c"}, a, c); err != nil {
		return err
	}
	t2 := blas.Trans
	if tA == blas.Trans {
		t2 = blas.NoTrans
	}
	return b.Gemm(tA, t2, alpha, a, a, beta, c)
}

// flipUplo maps a row-major triangle to its column-major reading.
func flipUplo(ul blas.Uplo) cu.Fill {
	if ul == blas.Lower {
		return cu.Upper
	}
	return cu.Lower
}

// flipSide maps a row-major side to its column-major reading.
func flipSide(s blas.Side) cu.Side {
	if s == blas.Left {
		return cu.Right
	}
	return cu.Left
}

func cuDiag(d blas.Diag) cu.Diag {
	if d == blas.Unit {
		return cu.Unit
	}
	return cu.NonUnit
}

// Trsm solves op(A)·X = alpha·B or X·op(A) = alpha·B in place in B: one batched cuBLAS call over device arrays of
// matrix addresses (A's address repeated when A is broadcast).
func (b *Backend) Trsm(side blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, alpha float64, a, bm *tensor.Tensor) error {
	if err := backend.CheckTri("trsm", side, ul, tA, d, a, bm); err != nil {
		return err
	}
	if err := b.ownsNamed("trsm", []string{"a", "b"}, a, bm); err != nil {
		return err
	}
	if bm.Len() == 0 {
		return nil
	}
	rows, cols := bm.Cols(), bm.Rows() // B read column-major
	return b.queue("trsm", func() error {
		if bm.Batch() == 1 {
			return b.gpu.Dtrsm(flipSide(side), flipUplo(ul), cuOp(tA), cuDiag(d), rows, cols, alpha,
				b.ptr(a), ld(a), b.ptr(bm), ld(bm))
		}
		arr, err := b.pointerArrays(a, bm)
		if err != nil {
			return err
		}
		nb := bm.Batch()
		return b.gpu.DtrsmBatched(flipSide(side), flipUplo(ul), cuOp(tA), cuDiag(d), rows, cols, alpha,
			arr, ld(a), arr+cu.DevPtr(8*nb), ld(bm), nb)
	})
}

// pointerArrays uploads, for each operand, the device addresses of its batch matrices (an operand of batch 1
// repeated over the batch of the last operand), one array after the other in scratch slot slotPtrs, and returns
// the address of the first array. Call inside do.
func (b *Backend) pointerArrays(ts ...*tensor.Tensor) (cu.DevPtr, error) {
	nb := ts[len(ts)-1].Batch()
	host := make([]uint64, 0, nb*len(ts))
	for _, t := range ts {
		base := uint64(b.ptr(t))
		st := uint64(stride(t)) * 8
		for i := 0; i < nb; i++ {
			host = append(host, base+uint64(i)*st)
		}
	}
	return b.uploadPointers(host)
}

// uploadPointers copies the device addresses host into scratch slot slotPtrs and returns their address there.
// Call inside do.
func (b *Backend) uploadPointers(host []uint64) (cu.DevPtr, error) {
	dev, err := b.gpu.Scratch(slotPtrs, int64(len(host))*8)
	if err != nil {
		return 0, err
	}
	// Consecutive calls on the same operands (the two solves of Potrs, a loop of batched solves) reuse the arrays
	// already on the device instead of copying them again.
	if dev == b.ptrsDev && slices.Equal(host, b.ptrsHost) {
		return dev, nil
	}
	if err := b.gpu.HtoD(dev, unsafe.Pointer(&host[0]), int64(len(host))*8); err != nil {
		b.ptrsHost = nil
		return 0, err
	}
	b.ptrsDev, b.ptrsHost = dev, host
	return dev, nil
}

// Trmm computes B = alpha·op(A)·B or alpha·B·op(A) in place. cuBLAS's triangular product writes a separate
// output, so each batch item goes through a contiguous scratch block and back.
func (b *Backend) Trmm(side blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, alpha float64, a, bm *tensor.Tensor) error {
	if err := backend.CheckTri("trmm", side, ul, tA, d, a, bm); err != nil {
		return err
	}
	if err := b.ownsNamed("trmm", []string{"a", "b"}, a, bm); err != nil {
		return err
	}
	if bm.Len() == 0 {
		return nil
	}
	rows, cols := bm.Cols(), bm.Rows()
	return b.queue("trmm", func() error {
		tmp, err := b.gpu.Scratch(slotPack, int64(rows*cols)*8)
		if err != nil {
			return err
		}
		for i := 0; i < bm.Batch(); i++ {
			ai := b.ptr(a) + cu.DevPtr(8*stride(a)*int64(i))
			bi := b.ptr(bm) + cu.DevPtr(8*bm.BatchStride()*i)
			if err := b.gpu.Dtrmm(flipSide(side), flipUplo(ul), cuOp(tA), cuDiag(d), rows, cols, alpha,
				ai, ld(a), bi, ld(bm), tmp, rows); err != nil {
				return err
			}
			if err := b.gpu.Dgeam(cu.OpN, cu.OpN, rows, cols, 1, tmp, rows, 0, tmp, rows, bi, ld(bm)); err != nil {
				return err
			}
		}
		return nil
	})
}
