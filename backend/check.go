package backend

import (
	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/tensor"
)

// Shape checks shared by every backend, so that a given mistake gets the same error everywhere. Each returns nil
// or an *OpError wrapping ErrShape. Backends call them before touching data.

func shapeErr(op, operand, format string, args ...any) error {
	return Errorf(op, operand, ErrShape, format, args...)
}

// CheckNotNil reports a nil operand.
func CheckNotNil(op string, names []string, ts ...*T) error {
	for i, t := range ts {
		if t == nil {
			return shapeErr(op, names[i], "nil tensor")
		}
	}
	return nil
}

// CheckBatch checks that x has batch 1 or batch n.
func CheckBatch(op, name string, x *T, n int) error {
	if x.Batch() != 1 && x.Batch() != n {
		return shapeErr(op, name, "batch %d, want 1 or %d", x.Batch(), n)
	}
	return nil
}

// CheckSame checks that x has exactly shape s.
func CheckSame(op, name string, x *T, s tensor.Shape) error {
	if x.Shape() != s {
		return shapeErr(op, name, "shape %v, want %v", x.Shape(), s)
	}
	return nil
}

// CheckMatrix checks that x is batch × rows × cols with batch 1 or n (n < 0 skips the batch check).
func CheckMatrix(op, name string, x *T, n, rows, cols int) error {
	if x.Rows() != rows || x.Cols() != cols {
		return shapeErr(op, name, "matrices %d×%d, want %d×%d", x.Rows(), x.Cols(), rows, cols)
	}
	if n >= 0 {
		return CheckBatch(op, name, x, n)
	}
	return nil
}

// CheckSquare checks that x holds square matrices.
func CheckSquare(op, name string, x *T) error {
	if x.Rows() != x.Cols() {
		return shapeErr(op, name, "matrices %d×%d are not square", x.Rows(), x.Cols())
	}
	return nil
}

// CheckElementwise checks dst against operands that must match its matrix shape with batch 1 or dst's batch.
func CheckElementwise(op string, dst *T, names []string, xs ...*T) error {
	for i, x := range xs {
		if x == nil {
			continue
		}
		if err := CheckMatrix(op, names[i], x, dst.Batch(), dst.Rows(), dst.Cols()); err != nil {
			return err
		}
	}
	return nil
}

func opDims(t blas.Transpose, x *T) (r, c int) {
	if t == blas.NoTrans {
		return x.Rows(), x.Cols()
	}
	return x.Cols(), x.Rows()
}

func checkTrans(op, name string, t blas.Transpose) error {
	if t != blas.NoTrans && t != blas.Trans {
		return shapeErr(op, name, "transpose flag %q", byte(t))
	}
	return nil
}

// CheckGemm checks the operands of Gemm.
func CheckGemm(tA, tB blas.Transpose, a, b, c *T) error {
	const op = "gemm"
	if err := CheckNotNil(op, []string{"a", "b", "c"}, a, b, c); err != nil {
		return err
	}
	if err := checkTrans(op, "a", tA); err != nil {
		return err
	}
	if err := checkTrans(op, "b", tB); err != nil {
		return err
	}
	m, k := opDims(tA, a)
	k2, n := opDims(tB, b)
	if k != k2 {
		return shapeErr(op, "b", "inner dimensions differ: op(a) is %d×%d, op(b) is %d×%d", m, k, k2, n)
	}
	if c.Rows() != m || c.Cols() != n {
		return shapeErr(op, "c", "matrices %d×%d, want %d×%d", c.Rows(), c.Cols(), m, n)
	}
	if err := CheckBatch(op, "a", a, c.Batch()); err != nil {
		return err
	}
	return CheckBatch(op, "b", b, c.Batch())
}

// CheckSyrk checks the operands of Syrk.
func CheckSyrk(tA blas.Transpose, a, c *T) error {
	const op = "syrk"
	if err := CheckNotNil(op, []string{"a", "c"}, a, c); err != nil {
		return err
	}
	if err := checkTrans(op, "a", tA); err != nil {
		return err
	}
	n, _ := opDims(tA, a)
	if err := CheckMatrix(op, "c", c, -1, n, n); err != nil {
		return err
	}
	return CheckBatch(op, "a", a, c.Batch())
}

// CheckTri checks the operands of Trsm and Trmm.
func CheckTri(op string, side blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, a, b *T) error {
	if err := CheckNotNil(op, []string{"a", "b"}, a, b); err != nil {
		return err
	}
	if side != blas.Left && side != blas.Right {
		return shapeErr(op, "", "side flag %q", byte(side))
	}
	if ul != blas.Lower && ul != blas.Upper {
		return shapeErr(op, "", "uplo flag %q", byte(ul))
	}
	if d != blas.Unit && d != blas.NonUnit {
		return shapeErr(op, "", "diag flag %q", byte(d))
	}
	if err := checkTrans(op, "a", tA); err != nil {
		return err
	}
	if err := CheckSquare(op, "a", a); err != nil {
		return err
	}
	k := b.Rows()
	if side == blas.Right {
		k = b.Cols()
	}
	if a.Rows() != k {
		return shapeErr(op, "a", "order %d, want %d to match b (%v)", a.Rows(), k, b.Shape())
	}
	return CheckBatch(op, "a", a, b.Batch())
}

// CheckPotrs checks the operands of Potrs.
func CheckPotrs(l, b *T) error {
	const op = "potrs"
	if err := CheckNotNil(op, []string{"l", "b"}, l, b); err != nil {
		return err
	}
	if err := CheckMatrix(op, "l", l, b.Batch(), b.Rows(), b.Rows()); err != nil {
		return err
	}
	return nil
}

// CheckQR checks the operands of QR.
func CheckQR(q, r, a *T) error {
	const op = "qr"
	if err := CheckNotNil(op, []string{"q", "a"}, q, a); err != nil {
		return err
	}
	n, p := a.Rows(), a.Cols()
	if p > n {
		return Errorf(op, "a", ErrDomain, "matrices %d×%d have more columns than rows", n, p)
	}
	if err := CheckSame(op, "q", q, a.Shape()); err != nil {
		return err
	}
	if r != nil {
		return CheckSame(op, "r", r, tensor.Shape{Batch: a.Batch(), Rows: p, Cols: p})
	}
	return nil
}

// CheckSyev checks the operands of Syev.
func CheckSyev(w, v, a *T) error {
	const op = "syev"
	if err := CheckNotNil(op, []string{"w", "a"}, w, a); err != nil {
		return err
	}
	if err := CheckSquare(op, "a", a); err != nil {
		return err
	}
	if err := CheckSame(op, "w", w, tensor.Shape{Batch: a.Batch(), Rows: a.Rows(), Cols: 1}); err != nil {
		return err
	}
	if v != nil {
		return CheckSame(op, "v", v, a.Shape())
	}
	return nil
}

// CheckReduce checks the operands of Reduce.
func CheckReduce(dst *T, axis Axis, x *T) error {
	const op = "reduce"
	if err := CheckNotNil(op, []string{"dst", "x"}, dst, x); err != nil {
		return err
	}
	want := tensor.Shape{Batch: x.Batch(), Rows: 1, Cols: 1}
	switch axis {
	case AxisAll:
	case AxisRows:
		want.Cols = x.Cols()
	case AxisCols:
		want.Rows = x.Rows()
	default:
		return shapeErr(op, "", "unknown axis %d", axis)
	}
	return CheckSame(op, "dst", dst, want)
}

// CheckRowDots checks the operands of RowDots: x and y of one matrix shape (batch 1 or dst's), dst rows × 1.
func CheckRowDots(dst, x, y *T) error {
	const op = "row_dots"
	if err := CheckNotNil(op, []string{"dst", "x", "y"}, dst, x, y); err != nil {
		return err
	}
	if err := CheckMatrix(op, "dst", dst, -1, x.Rows(), 1); err != nil {
		return err
	}
	if err := CheckMatrix(op, "x", x, dst.Batch(), x.Rows(), x.Cols()); err != nil {
		return err
	}
	return CheckMatrix(op, "y", y, dst.Batch(), x.Rows(), x.Cols())
}

// CheckScaleVector checks the vector v of ScaleRows (byCol false: v is batch×rows×1) or ScaleCols (byCol true: v
// is batch×1×cols) against dst.
func CheckScaleVector(op string, dst, v *T, byCol bool) error {
	rows, cols := dst.Rows(), 1
	if byCol {
		rows, cols = 1, dst.Cols()
	}
	return CheckMatrix(op, "v", v, dst.Batch(), rows, cols)
}

// CheckFinite scans host tensors for NaN and infinities, naming the first offender. Call it where user data enters.
func CheckFinite(op string, names []string, ts ...*T) error {
	for i, t := range ts {
		if t == nil || !t.IsHost() {
			continue
		}
		if err := t.CheckFinite(names[i]); err != nil {
			return &OpError{Op: op, Operand: names[i], Batch: -1, Err: err}
		}
	}
	return nil
}

// UploadNew returns a new tensor of b, of h's shape, holding a copy of the host tensor h: what a function that takes
// tensors of b needs from data built in host memory (a GPU backend refuses host tensors). The caller frees it.
func UploadNew(b Backend, h *T) (*T, error) {
	if err := CheckNotNil("upload", []string{"src"}, h); err != nil {
		return nil, err
	}
	d, err := b.Alloc(h.Shape())
	if err != nil {
		return nil, err
	}
	if err := b.Upload(d, h); err != nil {
		b.Free(d)
		return nil, err
	}
	return d, nil
}

// UploadFinite copies user data into backend memory like b.Upload, after scanning it: a NaN or an infinity gives
// an error wrapping ErrNotFinite that names the operand and the element, and dst is left untouched. Upload itself
// copies bits as they are; data from outside the program should come in through UploadFinite.
func UploadFinite(b Backend, dst, src *T, name string) error {
	if err := CheckNotNil("upload", []string{"dst", name}, dst, src); err != nil {
		return err
	}
	if err := CheckFinite("upload", []string{name}, src); err != nil {
		return err
	}
	return b.Upload(dst, src)
}
