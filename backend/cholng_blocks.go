package backend

import (
	"math"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/tensor"
)

// Batched block kernels of the sparse Cholesky-factor families of paper 003 (Section 6, Table 3): the
// block-diagonal covariance factor C = blockdiag(C_1 … C_n) of Alg 1c and the arrow-shaped precision factor of
// Alg 2c (eq. (11)),
//
//	    ⎡ T_1                 ⎤
//	T = ⎢      ⋱              ⎥ ,   T_i lower triangular r×r, T_Gi dense q×r, T_G lower triangular q×q.
//	    ⎢           T_n       ⎥
//	    ⎣ T_G1  …  T_Gn   T_G ⎦
//
// A block of groups of equal size r is a batch: Λ (n×r×r) holds the diagonal blocks, M (n×q×r) the coupling blocks
// of the last block row, vectors are n×r×1. The global q×q block is one matrix handled with the primitives. Each
// product or solve with T splits into a batched local part (these operations) and a small global part:
//
//	T·x:    (Tx)_i = T_i x_i,                 (Tx)_G = T_G x_G + Σ_i T_Gi x_i           BlockLower, product
//	T⁻¹·x:  v_i = T_i⁻¹ x_i,                  v_G = T_G⁻¹(x_G − Σ_i T_Gi v_i)           BlockLower, solve
//	Tᵀ·x:   (Tᵀx)_i = T_iᵀ x_i + T_Giᵀ x_G,   (Tᵀx)_G = T_Gᵀ x_G                       BlockUpper, product
//	T⁻ᵀ·x:  u_G = T_G⁻ᵀ x_G,                  w_i = T_i⁻ᵀ(x_i − T_Giᵀ u_G)             BlockUpper, solve
//
// (in Alg 2c: sampling θ − μ = T⁻ᵀz, v = T⁻¹∇_θh, the μ step T⁻ᵀv). With no coupling (M absent) the same
// operations are the block-diagonal products and solves of Alg 1c. The Σ_i T_Gi(·)_i term is the segmented reduction
// by which the global block accumulates the contributions of all groups.
//
// The natural gradient of the coupling blocks (Appendix D, eq. (12), in a fused row-scan form) is
// BlockCoupledTri; the diagonal blocks T_i H̿_i use CholNGTri with the batch. BlockTriNorm2 is the pattern part of
// the Riemannian norm ⟨ĝ, g̃⟩ of Snngm (Table 4) and BlockLogAbsDiag the Σ log|Λ_ii| of log q
// (no positivity constraint is used, so diagonal signs may flip), both summed over the batch.
//
// Every operand may have batch 1 (one block broadcast over the batch) unless stated otherwise, and any strided view.
// The references are written with primitives (copies, TRMM/TRSM, GEMM, element-wise maps, Reduce over a reshaped
// scratch); the CPU backend registers one-pass loops (backend/cpu/kernel_cholng_blocks.go).

// BlockLowerFunc is the signature of BlockLower; kernels receive checked operands.
type BlockLowerFunc func(b Backend, solve bool, dst, s, l, m, x *T, beta float64) error

// BlockUpperFunc is the signature of BlockUpper; kernels receive checked operands.
type BlockUpperFunc func(b Backend, solve bool, dst, l, m, c, x *T) error

// BlockCoupledTriFunc is the signature of BlockCoupledTri; kernels receive checked operands.
type BlockCoupledTriFunc func(b Backend, dst, m, x, y, q *T, alpha float64) error

// BlockTriNorm2Func is the signature of BlockTriNorm2; n is the batch of the operation.
type BlockTriNorm2Func func(b Backend, dst, x, y *T, n int) error

// BlockLogAbsDiagFunc is the signature of BlockLogAbsDiag; kernels receive checked operands.
type BlockLogAbsDiagFunc func(b Backend, dst, l *T) error

// The block operations. Kernels are selected on the shape of dst for BlockLower and BlockUpper (n × r × 1) and
// BlockCoupledTri (n × q × r), on n × r × 1 for BlockTriNorm2 and on the shape of l for BlockLogAbsDiag.
var (
	BlockLowerOp      = NewOp[BlockLowerFunc]("cholng.blocks.lower", blockLowerRef)
	BlockUpperOp      = NewOp[BlockUpperFunc]("cholng.blocks.upper", blockUpperRef)
	BlockCoupledTriOp = NewOp[BlockCoupledTriFunc]("cholng.blocks.coupled", blockCoupledRef)
	BlockTriNorm2Op   = NewOp[BlockTriNorm2Func]("cholng.blocks.trinorm2", blockTriNorm2Ref)
	BlockLogAbsDiagOp = NewOp[BlockLogAbsDiagFunc]("cholng.blocks.logabsdiag", blockLogAbsDiagRef)
)

const (
	opBlockLower      = "cholng.blocks.lower"
	opBlockUpper      = "cholng.blocks.upper"
	opBlockCoupled    = "cholng.blocks.coupled"
	opBlockTriNorm2   = "cholng.blocks.trinorm2"
	opBlockLogAbsDiag = "cholng.blocks.logabsdiag"
)

func checkFiniteScalar(op, name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return Errorf(op, name, ErrDomain, "%s %g is not finite", name, v)
	}
	return nil
}

// checkColumn checks that dst holds column vectors and returns n and r.
func checkColumn(op, name string, x *T) (n, r int, err error) {
	if x.Cols() != 1 {
		return 0, 0, shapeErr(op, name, "matrices %d×%d are not column vectors", x.Rows(), x.Cols())
	}
	return x.Batch(), x.Rows(), nil
}

// checkPair checks that a and b are both nil or both set.
func checkPair(op, na, nb string, a, b *T) error {
	if (a == nil) != (b == nil) {
		if a == nil {
			return shapeErr(op, na, "nil tensor (%s is given)", nb)
		}
		return shapeErr(op, nb, "nil tensor (%s is given)", na)
	}
	return nil
}

// CheckBlockLower checks the operands of BlockLower.
func CheckBlockLower(dst, s, l, m, x *T, beta float64) error {
	const op = opBlockLower
	if err := CheckNotNil(op, []string{"dst", "l", "x"}, dst, l, x); err != nil {
		return err
	}
	n, r, err := checkColumn(op, "dst", dst)
	if err != nil {
		return err
	}
	if err := CheckMatrix(op, "l", l, n, r, r); err != nil {
		return err
	}
	if err := CheckMatrix(op, "x", x, n, r, 1); err != nil {
		return err
	}
	if err := checkPair(op, "m", "s", m, s); err != nil {
		return err
	}
	if m != nil {
		q := m.Rows()
		if err := CheckMatrix(op, "m", m, n, q, r); err != nil {
			return err
		}
		if err := CheckSame(op, "s", s, tensor.Shape{Batch: 1, Rows: q, Cols: 1}); err != nil {
			return err
		}
	}
	return checkFiniteScalar(op, "beta", beta)
}

// BlockLower computes, for each batch item i (a block of the arrow T of the file comment, or of a block-diagonal
// factor when m and s are nil),
//
//	solve = false:  dst_i = Λ_i x_i,     s ← β·s + Σ_i M_i x_i
//	solve = true:   dst_i = Λ_i⁻¹ x_i,   s ← β·s + Σ_i M_i dst_i
//
// the local rows of T·x and T⁻¹·x and the coupling sum that enters their global row (v = T⁻¹∇_θh
// of Alg 2c: ṽ_i = T_i⁻¹∇_i log p and Σ_i T_Gi ṽ_i; Tz for the Euclidean gradient; Cz and C a for Alg 1c).
// dst is n×r×1; l (n×r×r, lower triangular, its strict upper triangle not read), x (n×r×1) and m (n×q×r) may have
// batch 1; s is 1×q×1 and is not read when β = 0. m and s are both nil or both set. dst may be x itself; it must
// not overlap l, m or s otherwise.
func BlockLower(b Backend, solve bool, dst, s, l, m, x *T, beta float64) error {
	if err := CheckBlockLower(dst, s, l, m, x, beta); err != nil {
		return err
	}
	if dst.Len() == 0 {
		return scaleSum(b, s, beta)
	}
	f, _ := BlockLowerOp.Select(b, dst.Shape())
	return f(b, solve, dst, s, l, m, x, beta)
}

// scaleSum sets s = β·s (0 when β = 0): the empty coupling sum.
func scaleSum(b Backend, s *T, beta float64) error {
	if s == nil {
		return nil
	}
	if beta == 0 {
		return b.Fill(s, 0)
	}
	return b.Axpby(s, beta, s, 0, nil)
}

// CheckBlockUpper checks the operands of BlockUpper.
func CheckBlockUpper(dst, l, m, c, x *T) error {
	const op = opBlockUpper
	if err := CheckNotNil(op, []string{"dst", "l", "x"}, dst, l, x); err != nil {
		return err
	}
	n, r, err := checkColumn(op, "dst", dst)
	if err != nil {
		return err
	}
	if err := CheckMatrix(op, "l", l, n, r, r); err != nil {
		return err
	}
	if err := CheckMatrix(op, "x", x, n, r, 1); err != nil {
		return err
	}
	if err := checkPair(op, "m", "c", m, c); err != nil {
		return err
	}
	if m != nil {
		q := m.Rows()
		if err := CheckMatrix(op, "m", m, n, q, r); err != nil {
			return err
		}
		return CheckMatrix(op, "c", c, n, q, 1)
	}
	return nil
}

// BlockUpper computes, for each batch item i,
//
//	solve = false:  dst_i = Λ_iᵀ x_i + M_iᵀ c
//	solve = true:   dst_i = Λ_i⁻ᵀ (x_i − M_iᵀ c)
//
// the local rows of Tᵀ·x and T⁻ᵀ·x once the global part c = x_G or c = u_G = T_G⁻ᵀx_G is known (Alg 2c:
// sampling w_i = T_i⁻ᵀ(z_i − T_Giᵀu_G) and the μ step x_i = T_i⁻ᵀ(v_i − T_Giᵀx_G) of Alg 2c; a = Cᵀ∇log p and C⁻ᵀz
// of Alg 1c with m and c nil). dst is n×r×1; l (n×r×r lower triangular), x (n×r×1), m (n×q×r) and c (q×1) may have
// batch 1. m and c are both nil or both set. dst may be x itself; it must not overlap l, m or c otherwise.
func BlockUpper(b Backend, solve bool, dst, l, m, c, x *T) error {
	if err := CheckBlockUpper(dst, l, m, c, x); err != nil {
		return err
	}
	if dst.Len() == 0 {
		return nil
	}
	f, _ := BlockUpperOp.Select(b, dst.Shape())
	return f(b, solve, dst, l, m, c, x)
}

// CheckBlockCoupledTri checks the operands of BlockCoupledTri.
func CheckBlockCoupledTri(dst, m, x, y, q *T, alpha float64) error {
	const op = opBlockCoupled
	if err := CheckNotNil(op, []string{"dst", "y"}, dst, y); err != nil {
		return err
	}
	if m == nil && q == nil {
		return shapeErr(op, "m", "m and q are both nil")
	}
	n, p, r := dst.Batch(), dst.Rows(), dst.Cols()
	if err := CheckMatrix(op, "y", y, n, r, 1); err != nil {
		return err
	}
	if m != nil {
		if err := CheckNotNil(op, []string{"x"}, x); err != nil {
			return err
		}
		if err := CheckMatrix(op, "m", m, n, p, r); err != nil {
			return err
		}
		if err := CheckMatrix(op, "x", x, n, r, 1); err != nil {
			return err
		}
	}
	if q != nil {
		if err := CheckMatrix(op, "q", q, n, p, 1); err != nil {
			return err
		}
	}
	return checkFiniteScalar(op, "alpha", alpha)
}

// BlockCoupledTri computes, for each batch item i,
//
//	dst_i = α·(M_i·dbar(lower(x_i y_iᵀ)) + q y_iᵀ),   dbar(A) = Ā − dg(A)/2,
//
// entry (a, b) = α·y_b(Σ_{c≥b} M_ac x_c − ½M_ab x_b + q_a), a reverse cumulative sum along each row: O(qr) per item.
// With M_i = T_Gi, x_i = z_i, y_i = v_i, q = T_G z_G and α = −1 this is the coupling block T_Gi H̿_i − T_G z_G v_iᵀ
// of the natural gradient of Alg 2c (Appendix D, eq. (12), fused: the sum runs over the group's
// own entries only, which is what masking the dense formula gets wrong). With m nil the first term is absent and
// x is not read: dst_i = α q y_iᵀ, the coupling block −u_G v_iᵀ of the Euclidean gradient. With q nil the second
// term is absent. dst is n×q×r; m (n×q×r), x, y (n×r×1) and q (q×1) may have batch 1; m and q are not both nil.
// dst must not overlap the operands.
func BlockCoupledTri(b Backend, dst, m, x, y, q *T, alpha float64) error {
	if err := CheckBlockCoupledTri(dst, m, x, y, q, alpha); err != nil {
		return err
	}
	if dst.Len() == 0 {
		return nil
	}
	f, _ := BlockCoupledTriOp.Select(b, dst.Shape())
	return f(b, dst, m, x, y, q, alpha)
}

// checkBatchPair checks that x and y are column vectors of one length with batch 1 or a common n, and returns n.
func checkBatchPair(op string, x, y *T) (int, error) {
	if err := CheckNotNil(op, []string{"x", "y"}, x, y); err != nil {
		return 0, err
	}
	_, r, err := checkColumn(op, "x", x)
	if err != nil {
		return 0, err
	}
	n := max(x.Batch(), y.Batch())
	if err := CheckMatrix(op, "x", x, n, r, 1); err != nil {
		return 0, err
	}
	return n, CheckMatrix(op, "y", y, n, r, 1)
}

var scalarShape = tensor.Shape{Batch: 1, Rows: 1, Cols: 1}

// BlockTriNorm2 computes the scalar
//
//	dst = Σ_i [ Σ_{k>l} x_ik² y_il² + ½ Σ_k x_ik² y_ik² ]
//
// over the batch (dst is 1×1×1; x and y are n×r×1, either may have batch 1). With x_i = z_i and y_i = v_i it is the
// part of the Riemannian norm² ⟨ĝ, g̃⟩ of a T-family natural gradient (‖v‖² + Σ_{k>l} z_k²v_l² + ½Σ_k z_k²v_k² over the
// pattern) that comes from the entries of the diagonal blocks; the coupling blocks add ‖z_G‖²‖v_i‖² and the μ part
// ‖v‖², both plain sums of squares.
func BlockTriNorm2(b Backend, dst, x, y *T) error {
	n, err := checkBatchPair(opBlockTriNorm2, x, y)
	if err != nil {
		return err
	}
	if err := CheckNotNil(opBlockTriNorm2, []string{"dst"}, dst); err != nil {
		return err
	}
	if err := CheckSame(opBlockTriNorm2, "dst", dst, scalarShape); err != nil {
		return err
	}
	if n*x.Rows() == 0 {
		return b.Fill(dst, 0)
	}
	f, _ := BlockTriNorm2Op.Select(b, tensor.Shape{Batch: n, Rows: x.Rows(), Cols: 1})
	return f(b, dst, x, y, n)
}

// BlockLogAbsDiag computes the scalar dst = Σ_i Σ_a log|(Λ_i)_aa| over the batch of square matrices l (dst is
// 1×1×1): the Σ log|C_ii| or Σ log|T_ii| of log q (Appendix D with n for N; diagonal signs are free). A zero diagonal
// entry gives −Inf.
func BlockLogAbsDiag(b Backend, dst, l *T) error {
	const op = opBlockLogAbsDiag
	if err := CheckNotNil(op, []string{"dst", "l"}, dst, l); err != nil {
		return err
	}
	if err := CheckSquare(op, "l", l); err != nil {
		return err
	}
	if err := CheckSame(op, "dst", dst, scalarShape); err != nil {
		return err
	}
	if l.Len() == 0 {
		return b.Fill(dst, 0)
	}
	f, _ := BlockLogAbsDiagOp.Select(b, l.Shape())
	return f(b, dst, l)
}

// ---- references (primitives only) ----

// allocScratch allocates a contiguous scratch tensor.
func allocScratch(b Backend, n, r, c int) (*T, error) {
	return b.Alloc(tensor.Shape{Batch: n, Rows: r, Cols: c})
}

// blockSum sets s = β·s + Σ_i M_i y_i over n items: a batched GEMV into an n×q×1 scratch, viewed as one n×q
// matrix and reduced over its rows.
func blockSum(b Backend, s, m, y *T, n int, beta float64) error {
	q := m.Rows()
	if q == 0 {
		return nil
	}
	tmp, err := allocScratch(b, n, q, 1)
	if err != nil {
		return err
	}
	defer b.Free(tmp)
	red, err := allocScratch(b, 1, 1, q)
	if err != nil {
		return err
	}
	defer b.Free(red)
	if err := b.Gemm(blas.NoTrans, blas.NoTrans, 1, m, y, 0, tmp); err != nil {
		return err
	}
	flat, err := tmp.Reshape(1, n, q)
	if err != nil {
		return err
	}
	if err := b.Reduce(red, ReduceSum, AxisRows, flat); err != nil {
		return err
	}
	col, err := red.Reshape(1, q, 1)
	if err != nil {
		return err
	}
	if beta == 0 {
		return b.Copy(s, col)
	}
	return b.Axpby(s, 1, col, beta, s)
}

func blockLowerRef(b Backend, solve bool, dst, s, l, m, x *T, beta float64) error {
	n := dst.Batch()
	if !solve && m != nil { // the sum reads x, which dst may alias
		if err := blockSum(b, s, m, x, n, beta); err != nil {
			return err
		}
	}
	if err := b.Copy(dst, x); err != nil {
		return err
	}
	if solve {
		if err := b.Trsm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, l, dst); err != nil {
			return err
		}
		if m != nil {
			return blockSum(b, s, m, dst, n, beta)
		}
		return nil
	}
	return b.Trmm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, l, dst)
}

func blockUpperRef(b Backend, solve bool, dst, l, m, c, x *T) error {
	if err := b.Copy(dst, x); err != nil {
		return err
	}
	if solve {
		if m != nil {
			if err := b.Gemm(blas.Trans, blas.NoTrans, -1, m, c, 1, dst); err != nil {
				return err
			}
		}
		return b.Trsm(blas.Left, blas.Lower, blas.Trans, blas.NonUnit, 1, l, dst)
	}
	if err := b.Trmm(blas.Left, blas.Lower, blas.Trans, blas.NonUnit, 1, l, dst); err != nil {
		return err
	}
	if m != nil {
		return b.Gemm(blas.Trans, blas.NoTrans, 1, m, c, 1, dst)
	}
	return nil
}

// blockCoupledRef is the paper-literal form: H̿_i = α·dbar(lower(x_i y_iᵀ)) by outer products and a mask, then
// M_i·H̿_i and α·q y_iᵀ by GEMMs.
func blockCoupledRef(b Backend, dst, m, x, y, q *T, alpha float64) error {
	n, r := dst.Batch(), dst.Cols()
	if m == nil {
		return b.Gemm(blas.NoTrans, blas.Trans, alpha, q, y, 0, dst)
	}
	h, err := allocScratch(b, n, r, r)
	if err != nil {
		return err
	}
	defer b.Free(h)
	if err := maskedOuter(b, h, x, y, alpha, 0.5); err != nil {
		return err
	}
	if err := b.Gemm(blas.NoTrans, blas.NoTrans, 1, m, h, 0, dst); err != nil {
		return err
	}
	if q != nil {
		return b.Gemm(blas.NoTrans, blas.Trans, alpha, q, y, 1, dst)
	}
	return nil
}

// blockTriNorm2Ref forms (x⊙x)(y⊙y)ᵀ masked to the lower triangle with the diagonal halved for every item and sums
// all entries.
func blockTriNorm2Ref(b Backend, dst, x, y *T, n int) error {
	r := x.Rows()
	x2, err := allocScratch(b, n, r, 1)
	if err != nil {
		return err
	}
	defer b.Free(x2)
	y2, err := allocScratch(b, n, r, 1)
	if err != nil {
		return err
	}
	defer b.Free(y2)
	h, err := allocScratch(b, n, r, r)
	if err != nil {
		return err
	}
	defer b.Free(h)
	if err := b.Mul(x2, x, x); err != nil {
		return err
	}
	if err := b.Mul(y2, y, y); err != nil {
		return err
	}
	if err := maskedOuter(b, h, x2, y2, 1, 0.5); err != nil {
		return err
	}
	flat, err := h.Reshape(1, n*r, r)
	if err != nil {
		return err
	}
	return b.Reduce(dst, ReduceSum, AxisAll, flat)
}

// diagView returns the diagonals of the square matrices of l as a batch × n × 1 view of the same storage.
func diagView(l *T) (*T, error) {
	return tensor.New(l.Storage(), l.Offset(), tensor.Shape{Batch: l.Batch(), Rows: l.Rows(), Cols: 1},
		l.BatchStride(), l.RowStride()+1)
}

func blockLogAbsDiagRef(b Backend, dst, l *T) error {
	n, r := l.Batch(), l.Rows()
	dv, err := diagView(l)
	if err != nil {
		return err
	}
	tmp, err := allocScratch(b, n, r, 1)
	if err != nil {
		return err
	}
	defer b.Free(tmp)
	if err := b.Map(tmp, Abs, 1, dv); err != nil {
		return err
	}
	if err := b.Map(tmp, Log, 1, tmp); err != nil {
		return err
	}
	flat, err := tmp.Reshape(1, n*r, 1)
	if err != nil {
		return err
	}
	return b.Reduce(dst, ReduceSum, AxisAll, flat)
}

// ---- fused operations (one pass over the blocks per step of Alg 2c) ----
//
// An iteration of Alg 2c reads the blocks of every group three times: the draw (BlockUpper solve and
// BlockLogAbsDiag on the same Λ_i, M_i), the solve v = T⁻¹g with its coupling sum (BlockLower), and the natural
// gradient step (the μ-step BlockUpper solve, CholNGTri, BlockCoupledTri and BlockTriNorm2 on the same Λ_i, M_i,
// z_i, v_i). BlockDraw and BlockNatGrad are the first and the last of these as one operation each, so that a
// backend can do each in one pass (one kernel launch on a GPU). Their references are the unfused
// sequences, so they give what the separate operations give.

// BlockDrawFunc is the signature of BlockDraw; kernels receive checked operands.
type BlockDrawFunc func(b Backend, dst, ld, l, m, c, x *T) error

// BlockNatGradFunc is the signature of BlockNatGrad; kernels receive checked operands.
type BlockNatGradFunc func(b Backend, dmu, dl, dm, tn, l, m, c, q, z, v *T, alpha float64) error

// The fused operations; kernels are selected on the shape of dst (BlockDraw) and dmu (BlockNatGrad), n × r × 1.
var (
	BlockDrawOp    = NewOp[BlockDrawFunc]("cholng.blocks.draw", blockDrawRef)
	BlockNatGradOp = NewOp[BlockNatGradFunc]("cholng.blocks.natgrad", blockNatGradRef)
)

const (
	opBlockDraw    = "cholng.blocks.draw"
	opBlockNatGrad = "cholng.blocks.natgrad"
)

// CheckBlockDraw checks the operands of BlockDraw.
func CheckBlockDraw(dst, ld, l, m, c, x *T) error {
	const op = opBlockDraw
	if err := CheckNotNil(op, []string{"ld", "l"}, ld, l); err != nil {
		return err
	}
	if err := CheckBlockUpper(dst, l, m, c, x); err != nil {
		return relabel(err, op)
	}
	if l.Batch() != dst.Batch() {
		return shapeErr(op, "l", "batch %d, want %d (the log-determinant sums over l's batch)", l.Batch(), dst.Batch())
	}
	return CheckSame(op, "ld", ld, scalarShape)
}

// relabel returns err as the error of op (the shared checks name the operation they belong to).
func relabel(err error, op string) error {
	if e, ok := err.(*OpError); ok {
		c := *e
		c.Op = op
		return &c
	}
	return err
}

// BlockDraw computes, for each batch item i,
//
//	dst_i = Λ_i⁻ᵀ (x_i − M_iᵀ c),   ld = Σ_i Σ_a log|(Λ_i)_aa|,
//
// BlockUpper (solve) and BlockLogAbsDiag on the same blocks in one operation: the local rows w_i of the draw
// θ − μ = T⁻ᵀz of Alg 2c and the Σ log|T_ii| of log q (Appendix D). dst is n×r×1; l (n×r×r, batch n:
// ld sums over it) and x (n×r×1), m (n×q×r) and c (q×1) may have batch 1 except l; m and c are both nil or both set;
// ld is 1×1×1. dst may be x itself; it must not overlap the other operands.
func BlockDraw(b Backend, dst, ld, l, m, c, x *T) error {
	if err := CheckBlockDraw(dst, ld, l, m, c, x); err != nil {
		return err
	}
	if dst.Len() == 0 {
		return b.Fill(ld, 0)
	}
	f, _ := BlockDrawOp.Select(b, dst.Shape())
	return f(b, dst, ld, l, m, c, x)
}

func blockDrawRef(b Backend, dst, ld, l, m, c, x *T) error {
	if err := BlockUpperOp.Reference()(b, true, dst, l, m, c, x); err != nil {
		return err
	}
	return BlockLogAbsDiagOp.Reference()(b, ld, l)
}

// CheckBlockNatGrad checks the operands of BlockNatGrad.
func CheckBlockNatGrad(dmu, dl, dm, tn, l, m, c, q, z, v *T, alpha float64) error {
	const op = opBlockNatGrad
	if err := CheckNotNil(op, []string{"dmu", "dl", "dm", "tn", "l", "m", "c", "z", "v"},
		dmu, dl, dm, tn, l, m, c, z, v); err != nil {
		return err
	}
	n, r, err := checkColumn(op, "dmu", dmu)
	if err != nil {
		return err
	}
	p := m.Rows()
	for _, o := range []struct {
		name             string
		t                *T
		batch, rows, col int
	}{
		{"dl", dl, -1, r, r}, {"dm", dm, -1, p, r}, {"l", l, n, r, r}, {"m", m, n, p, r}, {"c", c, n, p, 1},
		{"z", z, n, r, 1}, {"v", v, n, r, 1},
	} {
		if err := CheckMatrix(op, o.name, o.t, o.batch, o.rows, o.col); err != nil {
			return err
		}
	}
	if dl.Batch() != n || dm.Batch() != n {
		return shapeErr(op, "dl", "batches dl %d, dm %d, want %d", dl.Batch(), dm.Batch(), n)
	}
	if q != nil {
		if err := CheckMatrix(op, "q", q, n, p, 1); err != nil {
			return err
		}
	}
	if err := CheckSame(op, "tn", tn, scalarShape); err != nil {
		return err
	}
	return checkFiniteScalar(op, "alpha", alpha)
}

// BlockNatGrad computes, for each batch item i,
//
//	dmu_i = Λ_i⁻ᵀ (v_i − M_iᵀ c)                           (BlockUpper, solve)
//	dl_i  = α·Λ_i·dbar(lower(z_i v_iᵀ))                    (CholNGTri)
//	dm_i  = α·(M_i·dbar(lower(z_i v_iᵀ)) + q v_iᵀ)         (BlockCoupledTri)
//	tn    = Σ_i [Σ_{k>l} z_ik² v_il² + ½ Σ_k z_ik² v_ik²]  (BlockTriNorm2 over the n items)
//
// the four operations of the natural-gradient step of Alg 2c that read the same blocks (Appendix D
// eq. (12): with c = x_G, q = T_G z_G and α = −1 they are the μ part, the T_i and T_Gi parts and the pattern part of
// the Riemannian norm). dmu is n×r×1, dl n×r×r (strict upper triangle set to 0), dm n×p×r, tn 1×1×1; l (n×r×r lower
// triangular), m (n×p×r), c, q (p×1), z and v (n×r×1) may have batch 1 (tn counts a broadcast item n times); q may
// be nil (no q term). The destinations must not overlap each other or the operands.
func BlockNatGrad(b Backend, dmu, dl, dm, tn, l, m, c, q, z, v *T, alpha float64) error {
	if err := CheckBlockNatGrad(dmu, dl, dm, tn, l, m, c, q, z, v, alpha); err != nil {
		return err
	}
	if dmu.Len() == 0 {
		return b.Fill(tn, 0)
	}
	f, _ := BlockNatGradOp.Select(b, dmu.Shape())
	return f(b, dmu, dl, dm, tn, l, m, c, q, z, v, alpha)
}

func blockNatGradRef(b Backend, dmu, dl, dm, tn, l, m, c, q, z, v *T, alpha float64) error {
	n := dmu.Batch()
	zz := z
	if z.Batch() == 1 && v.Batch() == 1 && n > 1 {
		zz = z.Broadcast(n) // tn counts the broadcast item n times
	}
	if err := BlockUpperOp.Reference()(b, true, dmu, l, m, c, v); err != nil {
		return err
	}
	if err := cholNGTriRef(b, dl, l, z, v, alpha); err != nil {
		return err
	}
	if err := BlockCoupledTriOp.Reference()(b, dm, m, z, v, q, alpha); err != nil {
		return err
	}
	return BlockTriNorm2Op.Reference()(b, tn, zz, v, n)
}
