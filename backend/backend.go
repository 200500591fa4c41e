// Package backend is the compute contract of geovb: the Backend interface that every device implements (memory,
// copies, linear-algebra primitives, element-wise maps, reductions and random fills), the hot operations of the
// methods written once on top of it, the kernel registry through which a backend substitutes faster kernels for
// those hot operations, and run-time selection with Open.
//
// Conventions shared by every operation:
//   - Operands are tensors of Batch matrices (see package tensor). An operand with batch 1 is broadcast over the
//     batch of the destination where the operation says so; otherwise batches must agree.
//   - The destination comes first. Shapes are checked on every call and a mismatch is an *OpError wrapping ErrShape
//     before anything is written. Checks that need a pass over the data (NaN scans) are left to where user data
//     enters (see CheckFinite).
//   - GPU backends run asynchronously; Download and Sync wait for outstanding work.
//   - Numerical failures (a non-SPD matrix) return an *OpError naming the batch item; the destination is then
//     undefined unless the operation says otherwise.
package backend

import (
	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// T is short for *tensor.Tensor in signatures.
type T = tensor.Tensor

// Info describes a running backend for reports.
type Info struct {
	Name     string   // backend name as given to Open, e.g. "cpu"
	Library  string   // linear-algebra library, e.g. "gonum (pure Go)", "OpenBLAS 0.3.21", "cuBLAS 13.0"
	Device   string   // CPU model or GPU name
	Cores    int      // worker goroutines (CPU) or multiprocessors (GPU)
	Features []string // SIMD features (CPU) or compute capability (GPU)
	Memory   int64    // device memory in bytes (0 for host memory)
	Extra    map[string]string
}

// UnaryOp is an element-wise function for Map.
type UnaryOp int

// Element-wise functions. Inputs outside a function's domain give NaN or ±Inf as in package math.
const (
	Identity UnaryOp = iota
	Neg
	Abs
	Square
	Sqrt
	Recip // 1/x
	Exp
	Log
	Log1p
	Sigmoid  // 1/(1+e^{-x}), evaluated without overflow
	Softplus // log(1+e^x), evaluated without overflow
	Tanh
	Sin
	Cos
	Sinc // sin(x)/x, 1 at x = 0
	Step // Heaviside: 1 for x ≥ 0, 0 for x < 0 (NaN stays NaN); a mask for the gradient of max(x, 0)
)

var unaryNames = [...]string{"identity", "neg", "abs", "square", "sqrt", "recip", "exp", "log", "log1p",
	"sigmoid", "softplus", "tanh", "sin", "cos", "sinc", "step"}

func (o UnaryOp) String() string {
	if o >= 0 && int(o) < len(unaryNames) {
		return unaryNames[o]
	}
	return "unknown"
}

// ReduceOp is the combining function of Reduce.
type ReduceOp int

// Reductions.
const (
	ReduceSum   ReduceOp = iota
	ReduceMax            // a NaN among the elements gives NaN
	ReduceMin            // likewise
	ReduceSumSq          // Σ x²
)

// Axis says what Reduce collapses.
type Axis int

// Reduction axes.
const (
	AxisAll  Axis = iota // each matrix to a scalar: dst is batch×1×1
	AxisRows             // over rows, one value per column: dst is batch×1×cols
	AxisCols             // over columns, one value per row: dst is batch×rows×1
)

// Backend is the contract every compute device implements. The hot operations (QR retraction, SPD retraction and
// transport, Kronecker solves, low-rank algebra, sphere flows) are not methods: they are package functions built on
// these primitives, which a backend may replace with registered kernels (see Op).
type Backend interface {
	// Name returns the backend's name ("cpu", "cuda").
	Name() string
	// Info describes the device and library.
	Info() Info
	// Close releases the backend's resources. Tensors it allocated become invalid.
	Close() error

	// Alloc returns a zeroed contiguous tensor in the backend's memory.
	Alloc(s tensor.Shape) (*T, error)
	// Free releases a tensor returned by Alloc. Views of it become invalid. Freeing host memory is a no-op.
	Free(t *T)
	// MemInUse returns the bytes currently allocated through Alloc and not freed.
	MemInUse() int64
	// Upload copies the host tensor src into dst (backend memory). Shapes must agree; src may be any strided view.
	Upload(dst, src *T) error
	// Download copies src (backend memory) into the host tensor dst, waiting for pending work.
	Download(dst, src *T) error
	// Copy copies src into dst, both in backend memory. A src of batch 1 is broadcast over dst's batch.
	Copy(dst, src *T) error
	// Sync waits until all queued work is done and reports any asynchronous failure.
	Sync() error

	// Gemm computes C = alpha·op(A)·op(B) + beta·C for each batch item. A and B may have batch 1 (broadcast).
	// With beta = 0, C is not read (NaN in C does not propagate).
	Gemm(tA, tB blas.Transpose, alpha float64, a, b *T, beta float64, c *T) error
	// Syrk computes C = alpha·A·Aᵀ + beta·C (blas.NoTrans) or C = alpha·Aᵀ·A + beta·C (blas.Trans), writing both
	// triangles of the symmetric result. A may have batch 1. With beta = 0, C is not read.
	Syrk(tA blas.Transpose, alpha float64, a *T, beta float64, c *T) error
	// Trsm solves op(A)·X = alpha·B (blas.Left) or X·op(A) = alpha·B (blas.Right) in place in B, A triangular.
	// A may have batch 1.
	Trsm(side blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, alpha float64, a, b *T) error
	// Trmm computes B = alpha·op(A)·B (blas.Left) or B = alpha·B·op(A) (blas.Right) in place, A triangular.
	Trmm(side blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, alpha float64, a, b *T) error

	// Potrf overwrites each symmetric positive definite matrix of a (its lower triangle is read) with its lower
	// Cholesky factor L, a = L·Lᵀ, and zeroes the strict upper triangle. A matrix that is not numerically SPD gives
	// an error wrapping ErrNotPositiveDefinite naming the first such batch item.
	Potrf(a *T) error
	// Potrs solves A·X = B in place in b given the lower Cholesky factor l of A. l may have batch 1.
	Potrs(l, b *T) error
	// QR computes the thin QR factorisation a = q·r of each n×p matrix (n ≥ p) with diag(r) ≥ 0 (the sign-fixed,
	// unique factor when a has full column rank). q is n×p, r is p×p upper triangular; r may be nil. q may alias a.
	QR(q, r, a *T) error
	// Syev computes the eigenvalues (ascending, into w of shape batch×n×1) and, when v is not nil, orthonormal
	// eigenvectors (the columns of v) of each symmetric matrix of a (lower triangle read). v may alias a.
	Syev(w, v, a *T) error

	// Fill sets every element of dst to v.
	Fill(dst *T, v float64) error
	// Axpby computes dst = alpha·x + beta·y element-wise. y may be nil (dst = alpha·x). x and y may have batch 1.
	Axpby(dst *T, alpha float64, x *T, beta float64, y *T) error
	// Mul computes the Hadamard product dst = x ⊙ y. x and y may have batch 1.
	Mul(dst, x, y *T) error
	// Div computes dst = x ⊘ y element-wise. x and y may have batch 1.
	Div(dst, x, y *T) error
	// Map computes dst = f(alpha·x) element-wise.
	Map(dst *T, f UnaryOp, alpha float64, x *T) error
	// ScaleRows computes dst[b,i,j] = x[b,i,j]·v[b,i] (v is batch×rows×1, or batch 1): row i scaled by v_i.
	ScaleRows(dst, x, v *T) error
	// ScaleCols computes dst[b,i,j] = x[b,i,j]·v[b,j] (v is batch×1×cols, or batch 1): column j scaled by v_j.
	ScaleCols(dst, x, v *T) error
	// RowDots computes dst[b,i] = Σ_j x[b,i,j]·y[b,i,j], the diagonal of X·Yᵀ (dst is batch×rows×1).
	RowDots(dst, x, y *T) error
	// Reduce collapses x along axis with op into dst.
	Reduce(dst *T, op ReduceOp, axis Axis, x *T) error
	// AddDiag adds alpha to the diagonal of each square matrix of dst.
	AddDiag(dst *T, alpha float64) error
	// Symmetrize replaces each square matrix of dst by (X + Xᵀ)/2.
	Symmetrize(dst *T) error
	// Transpose writes the transpose of each matrix of x into dst. dst must not alias x.
	Transpose(dst, x *T) error

	// FillNormal writes standard normal draws of the stream c into dst: element (b, i, j) gets draw
	// c.Offset + (b·rows + i)·cols + j, the same numbers on every backend (see package rng).
	FillNormal(dst *T, c rng.Counter) error
	// FillUniform is FillNormal for uniform draws on (0, 1).
	FillUniform(dst *T, c rng.Counter) error
}
