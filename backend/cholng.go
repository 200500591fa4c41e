package backend

import (
	"math"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/tensor"
)

// Triangular kernels of the Cholesky-factor natural gradient (paper 003, Lemma 1 / Theorem 2).
//
// CholNGTri is the one kernel both parametrisations need: for lower-triangular Λ and vectors x, y it forms
//
//	dst = α · Λ · dbar(lower(x yᵀ)),   dbar(A) = Ā − dg(A)/2,
//
// which is Λ H̿ of Lemma 1 with H̿ = dbar(ΛᵀḠ) written in the fused O(d²) form (a reverse cumulative sum along each
// row; not in the paper):
//   - parametrisation 1 (Σ = CCᵀ): Λ = C, x = a = Cᵀg, y = z, α = 1;
//   - parametrisation 2 (Σ⁻¹ = TTᵀ): Λ = T, x = z, y = v = T⁻¹g, α = −1.
//
// Entry (i, j), i ≥ j: α·y_j(Σ_{k=j}^{i} Λ_ik x_k − ½Λ_ij x_j), a reverse cumulative sum along row i: O(d²) with no
// matrix product. The reference is the paper-literal form built from primitives (outer product, mask, TRMM: O(d³));
// the CPU backend registers the O(d²) scan (backend/cpu/kernel_cholng.go). The strict upper triangle of dst is 0.
//
// LowerOuter is the Euclidean counterpart (Algs 1a/2a): dst = α · lower(x yᵀ) (diagonal kept).

// CholNGTriFunc is the signature of CholNGTri; kernels receive checked operands.
type CholNGTriFunc func(b Backend, dst, l, x, y *T, alpha float64) error

// LowerOuterFunc is the signature of LowerOuter; kernels receive checked operands.
type LowerOuterFunc func(b Backend, dst, x, y *T, alpha float64) error

// CholNGTriOp is the batched Lemma 1 kernel; kernels are selected on the shape of l (batch × d × d).
var CholNGTriOp = NewOp[CholNGTriFunc]("cholng.tri", cholNGTriRef)

// LowerOuterOp is the batched masked outer product; kernels are selected on the shape of dst (batch × d × d).
var LowerOuterOp = NewOp[LowerOuterFunc]("cholng.lowerouter", lowerOuterRef)

const (
	opCholNGTri  = "cholng.tri"
	opLowerOuter = "cholng.lowerouter"
)

func checkCholNG(op string, dst, l, x, y *T, alpha float64) error {
	if err := CheckNotNil(op, []string{"dst", "x", "y"}, dst, x, y); err != nil {
		return err
	}
	if !(alpha == alpha) || math.IsInf(alpha, 0) {
		return Errorf(op, "alpha", ErrDomain, "alpha %g is not finite", alpha)
	}
	if err := CheckSquare(op, "dst", dst); err != nil {
		return err
	}
	d, n := dst.Rows(), dst.Batch()
	if l != nil {
		if err := CheckMatrix(op, "l", l, n, d, d); err != nil {
			return err
		}
	}
	if err := CheckMatrix(op, "x", x, n, d, 1); err != nil {
		return err
	}
	return CheckMatrix(op, "y", y, n, d, 1)
}

// CholNGTri computes dst = α·Λ·dbar(lower(x yᵀ)) for each batch item (see the file comment): the natural gradient
// of a Cholesky factor by Lemma 1 of paper 003. l is batch × d × d lower triangular (its strict upper triangle is
// not read); x and y are batch × d × 1; each may have batch 1 (broadcast over dst's batch). dst must not alias l.
func CholNGTri(b Backend, dst, l, x, y *T, alpha float64) error {
	if err := CheckNotNil(opCholNGTri, []string{"l"}, l); err != nil {
		return err
	}
	if err := checkCholNG(opCholNGTri, dst, l, x, y, alpha); err != nil {
		return err
	}
	if dst.Len() == 0 {
		return nil
	}
	f, _ := CholNGTriOp.Select(b, l.Shape())
	return f(b, dst, l, x, y, alpha)
}

// LowerOuter computes dst = α·lower(x yᵀ) (diagonal kept, strict upper triangle 0) for each batch item: the
// Euclidean gradient vech(Ḡ) of a Cholesky factor (paper 003 §5.1–5.2, Algs 1a/2a). x and y are batch × d × 1 and
// may have batch 1.
func LowerOuter(b Backend, dst, x, y *T, alpha float64) error {
	if err := checkCholNG(opLowerOuter, dst, nil, x, y, alpha); err != nil {
		return err
	}
	if dst.Len() == 0 {
		return nil
	}
	f, _ := LowerOuterOp.Select(b, dst.Shape())
	return f(b, dst, x, y, alpha)
}

// triMask returns a 1×d×d backend tensor with ones strictly below the diagonal, diag on the diagonal and 0 above.
func triMask(b Backend, d int, diag float64) (*T, error) {
	h := tensor.NewHost(1, d, d)
	for i := 0; i < d; i++ {
		for j := 0; j < i; j++ {
			h.Set(0, i, j, 1)
		}
		h.Set(0, i, i, diag)
	}
	m, err := b.Alloc(h.Shape())
	if err != nil {
		return nil, err
	}
	if err := b.Upload(m, h); err != nil {
		b.Free(m)
		return nil, err
	}
	return m, nil
}

// maskedOuter writes dst = α·(x yᵀ) ⊙ mask with primitives (GEMM of d×1 by 1×d, then a Hadamard product).
func maskedOuter(b Backend, dst, x, y *T, alpha, diag float64) error {
	d := dst.Rows()
	mask, err := triMask(b, d, diag)
	if err != nil {
		return err
	}
	defer b.Free(mask)
	if err := b.Gemm(blas.NoTrans, blas.Trans, alpha, x, y, 0, dst); err != nil {
		return err
	}
	return b.Mul(dst, dst, mask)
}

func lowerOuterRef(b Backend, dst, x, y *T, alpha float64) error {
	return maskedOuter(b, dst, x, y, alpha, 1)
}

// cholNGTriRef is the paper-literal form: H̿ = dbar(lower(x yᵀ)) by an outer product and a mask, then Λ·H̿ by TRMM
// (O(d³) per item; the reference against which the O(d²) kernels are checked).
func cholNGTriRef(b Backend, dst, l, x, y *T, alpha float64) error {
	if err := maskedOuter(b, dst, x, y, alpha, 0.5); err != nil {
		return err
	}
	return b.Trmm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, l, dst)
}
