package cpu

import (
	"math"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/vmath"
	"github.com/geovb/geovb/tensor"
)

// eachRow runs f(bb, i) for every row of every matrix of dst, over the workers when there is enough work.
func (b *Backend) eachRow(dst *tensor.Tensor, costPerElem float64, f func(bb, i int)) {
	rows := dst.Rows()
	total := dst.Batch() * rows
	if total == 0 || dst.Cols() == 0 {
		return
	}
	b.parallelWork(total, costPerElem*float64(dst.Cols()), func(lo, hi int) {
		for k := lo; k < hi; k++ {
			f(k/rows, k%rows)
		}
	})
}

// spanLen is the length of the pieces into which eachSpan cuts matrices without row gaps.
const spanLen = 4096

// eachSpan runs f(bb, lo, hi) over pieces [lo, hi) of the row-major element order of every matrix of dst, over the
// workers when there is enough work. When dst and every non-nil x store their rows back to back, the pieces are
// runs of up to spanLen elements across rows (a d×1 vector is then a few calls, not d); otherwise each piece is one
// row. span maps a piece to a tensor's storage.
func (b *Backend) eachSpan(dst *tensor.Tensor, costPerElem float64, xs []*tensor.Tensor, f func(bb, lo, hi int)) {
	rows, cols := dst.Rows(), dst.Cols()
	n := rows * cols
	if dst.Batch() == 0 || n == 0 {
		return
	}
	piece := cols
	if dst.RowsContiguous() {
		piece = spanLen
		for _, x := range xs {
			if x != nil && !x.RowsContiguous() {
				piece = cols
				break
			}
		}
	}
	per := (n + piece - 1) / piece
	b.parallelWork(dst.Batch()*per, costPerElem*float64(min(piece, n)), func(lo, hi int) {
		for k := lo; k < hi; k++ {
			bb, q := k/per, k%per
			f(bb, q*piece, min((q+1)*piece, n))
		}
	})
}

// span returns elements [lo, hi) in row-major order of matrix bb of a host tensor; the range lies within one row
// unless the tensor stores its rows back to back.
func span(t *tensor.Tensor, bb, lo, hi int) []float64 {
	h := hostData(t)
	cols := t.Cols()
	start := t.Offset() + bi(t, bb)*t.BatchStride() + (lo/cols)*t.RowStride() + lo%cols
	return h[start : start+hi-lo]
}

func (b *Backend) prepElementwise(op string, dst *tensor.Tensor, names []string, xs ...*tensor.Tensor) error {
	if err := backend.CheckNotNil(op, []string{"dst"}, dst); err != nil {
		return err
	}
	if err := backend.CheckElementwise(op, dst, names, xs...); err != nil {
		return err
	}
	return checkHost(op, append([]string{"dst"}, names...), append([]*tensor.Tensor{dst}, xs...)...)
}

// Fill sets every element of dst to v.
func (b *Backend) Fill(dst *tensor.Tensor, v float64) error {
	if err := b.prepElementwise("fill", dst, nil); err != nil {
		return err
	}
	b.eachSpan(dst, 0.25, nil, func(bb, lo, hi int) {
		r := span(dst, bb, lo, hi)
		for j := range r {
			r[j] = v
		}
	})
	return nil
}

// Axpby computes dst = alpha·x + beta·y (y may be nil).
func (b *Backend) Axpby(dst *tensor.Tensor, alpha float64, x *tensor.Tensor, beta float64, y *tensor.Tensor) error {
	if err := backend.CheckNotNil("axpby", []string{"x"}, x); err != nil {
		return err
	}
	if err := b.prepElementwise("axpby", dst, []string{"x", "y"}, x, y); err != nil {
		return err
	}
	b.eachSpan(dst, 1, []*tensor.Tensor{x, y}, func(bb, lo, hi int) {
		d, xr := span(dst, bb, lo, hi), span(x, bb, lo, hi)
		if y == nil {
			for j := range d {
				d[j] = alpha * xr[j]
			}
			return
		}
		yr := span(y, bb, lo, hi)
		for j := range d {
			d[j] = alpha*xr[j] + beta*yr[j]
		}
	})
	return nil
}

// Mul computes dst = x ⊙ y.
func (b *Backend) Mul(dst, x, y *tensor.Tensor) error {
	if err := backend.CheckNotNil("mul", []string{"x", "y"}, x, y); err != nil {
		return err
	}
	if err := b.prepElementwise("mul", dst, []string{"x", "y"}, x, y); err != nil {
		return err
	}
	b.eachSpan(dst, 1, []*tensor.Tensor{x, y}, func(bb, lo, hi int) {
		d, xr, yr := span(dst, bb, lo, hi), span(x, bb, lo, hi), span(y, bb, lo, hi)
		for j := range d {
			d[j] = xr[j] * yr[j]
		}
	})
	return nil
}

// Div computes dst = x ⊘ y.
func (b *Backend) Div(dst, x, y *tensor.Tensor) error {
	if err := backend.CheckNotNil("div", []string{"x", "y"}, x, y); err != nil {
		return err
	}
	if err := b.prepElementwise("div", dst, []string{"x", "y"}, x, y); err != nil {
		return err
	}
	b.eachSpan(dst, 1, []*tensor.Tensor{x, y}, func(bb, lo, hi int) {
		d, xr, yr := span(dst, bb, lo, hi), span(x, bb, lo, hi), span(y, bb, lo, hi)
		for j := range d {
			d[j] = xr[j] / yr[j]
		}
	})
	return nil
}

// Unary evaluates f at x on the host; the CPU backend's Map and the tests of other backends use it.
func Unary(f backend.UnaryOp, x float64) float64 {
	switch f {
	case backend.Identity:
		return x
	case backend.Neg:
		return -x
	case backend.Abs:
		return math.Abs(x)
	case backend.Square:
		return x * x
	case backend.Sqrt:
		return math.Sqrt(x)
	case backend.Recip:
		return 1 / x
	case backend.Exp:
		return math.Exp(x)
	case backend.Log:
		return math.Log(x)
	case backend.Log1p:
		return math.Log1p(x)
	case backend.Sigmoid:
		if x >= 0 {
			return 1 / (1 + math.Exp(-x))
		}
		e := math.Exp(x)
		return e / (1 + e)
	case backend.Softplus:
		return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x)))
	case backend.Tanh:
		return math.Tanh(x)
	case backend.Sin:
		return math.Sin(x)
	case backend.Cos:
		return math.Cos(x)
	case backend.Sinc:
		if math.Abs(x) < 1e-4 {
			x2 := x * x
			return 1 - x2/6*(1-x2/20)
		}
		return math.Sin(x) / x
	case backend.Step:
		switch {
		case x >= 0:
			return 1
		case x < 0:
			return 0
		}
		return x
	}
	return math.NaN()
}

// Map computes dst = f(alpha·x).
func (b *Backend) Map(dst *tensor.Tensor, f backend.UnaryOp, alpha float64, x *tensor.Tensor) error {
	if err := backend.CheckNotNil("map", []string{"x"}, x); err != nil {
		return err
	}
	if f < backend.Identity || f > backend.Step {
		return backend.Errorf("map", "", backend.ErrDomain, "unknown function %d", int(f))
	}
	if err := b.prepElementwise("map", dst, []string{"x"}, x); err != nil {
		return err
	}
	scalar := func(v float64) float64 { return Unary(f, v) }
	b.eachSpan(dst, 20, []*tensor.Tensor{x}, func(bb, lo, hi int) {
		d, xr := span(dst, bb, lo, hi), span(x, bb, lo, hi)
		switch {
		case f == backend.Softplus && vmath.UseFMA:
			vmath.Softplus(d, xr, alpha, scalar) // the likelihoods of the logistic models spend their time here
		case f == backend.Sigmoid && vmath.UseFMA:
			vmath.Sigmoid(d, xr, alpha, scalar)
		case f == backend.Tanh && vmath.UseFMA:
			vmath.Tanh(d, xr, alpha, scalar) // the batched NFA/NSSM's Gauss–Hermite nodes
		case (f == backend.Exp || f == backend.Log) && vmath.UseFMA: // the batched mixture's responsibilities
			src := xr
			if alpha != 1 { // 1·x is x, so the kernels may read x itself
				for j := range d {
					d[j] = alpha * xr[j]
				}
				src = d
			}
			if f == backend.Exp {
				vmath.Exp(d, src) // math.Exp's bits
			} else {
				vmath.Log(d, src) // math.Log's bits
			}
		default:
			for j := range d {
				d[j] = Unary(f, alpha*xr[j])
			}
		}
	})
	return nil
}

// ScaleRows computes dst[b,i,j] = x[b,i,j]·v[b,i].
func (b *Backend) ScaleRows(dst, x, v *tensor.Tensor) error {
	const op = "scale_rows"
	if err := backend.CheckNotNil(op, []string{"x", "v"}, x, v); err != nil {
		return err
	}
	if err := b.prepElementwise(op, dst, []string{"x"}, x); err != nil {
		return err
	}
	if err := backend.CheckScaleVector(op, dst, v, false); err != nil {
		return err
	}
	if err := checkHost(op, []string{"v"}, v); err != nil {
		return err
	}
	dr, xrs, vr := rowsOf(dst), rowsOf(x), rowsOf(v)
	b.eachRow(dst, 1, func(bb, i int) {
		d, xr, s := dr.at(bb, i), xrs.at(bb, i), *vr.elem(bb, i, 0)
		for j := range d {
			d[j] = xr[j] * s
		}
	})
	return nil
}

// ScaleCols computes dst[b,i,j] = x[b,i,j]·v[b,j].
func (b *Backend) ScaleCols(dst, x, v *tensor.Tensor) error {
	const op = "scale_cols"
	if err := backend.CheckNotNil(op, []string{"x", "v"}, x, v); err != nil {
		return err
	}
	if err := b.prepElementwise(op, dst, []string{"x"}, x); err != nil {
		return err
	}
	if err := backend.CheckScaleVector(op, dst, v, true); err != nil {
		return err
	}
	if err := checkHost(op, []string{"v"}, v); err != nil {
		return err
	}
	dr, xrs, vr := rowsOf(dst), rowsOf(x), rowsOf(v)
	b.eachRow(dst, 1, func(bb, i int) {
		d, xr, s := dr.at(bb, i), xrs.at(bb, i), vr.at(bb, 0)
		for j := range d {
			d[j] = xr[j] * s[j]
		}
	})
	return nil
}

// RowDots computes dst[b,i] = Σ_j x[b,i,j]·y[b,i,j].
func (b *Backend) RowDots(dst, x, y *tensor.Tensor) error {
	const op = "row_dots"
	if err := backend.CheckRowDots(dst, x, y); err != nil {
		return err
	}
	if err := checkHost(op, []string{"dst", "x", "y"}, dst, x, y); err != nil {
		return err
	}
	rows := dst.Rows()
	total := dst.Batch() * rows
	dr, xrs, yrs := rowsOf(dst), rowsOf(x), rowsOf(y)
	b.parallelWork(total, 2*float64(x.Cols()), func(lo, hi int) {
		for k := lo; k < hi; k++ {
			bb, i := k/rows, k%rows
			xr, yr := xrs.at(bb, i), yrs.at(bb, i)
			yr = yr[:len(xr)]
			var s float64
			for j, v := range xr {
				s += v * yr[j]
			}
			*dr.elem(bb, i, 0) = s
		}
	})
	return nil
}

func reduceInit(op backend.ReduceOp) float64 {
	switch op {
	case backend.ReduceMax:
		return math.Inf(-1)
	case backend.ReduceMin:
		return math.Inf(1)
	}
	return 0
}

func reduceStep(op backend.ReduceOp, acc, x float64) float64 {
	switch op {
	case backend.ReduceMax:
		if x > acc || math.IsNaN(x) {
			return x
		}
		return acc
	case backend.ReduceMin:
		if x < acc || math.IsNaN(x) {
			return x
		}
		return acc
	case backend.ReduceSumSq:
		return acc + x*x
	}
	return acc + x
}

// reduceRow is reduceStep over v from reduceInit, in order, with op's case chosen once.
func reduceRow(op backend.ReduceOp, v []float64) float64 {
	switch op {
	case backend.ReduceMax:
		acc := math.Inf(-1)
		for _, x := range v {
			if x > acc || x != x { // a NaN wins, as in reduceStep
				acc = x
			}
		}
		return acc
	case backend.ReduceMin:
		acc := math.Inf(1)
		for _, x := range v {
			if x < acc || x != x {
				acc = x
			}
		}
		return acc
	case backend.ReduceSumSq:
		var acc float64
		for _, x := range v {
			acc += x * x
		}
		return acc
	}
	var acc float64
	for _, x := range v {
		acc += x
	}
	return acc
}

// combine merges two partial results of op (sums add; max/min compare).
func combine(op backend.ReduceOp, a, c float64) float64 {
	if op == backend.ReduceSumSq {
		return a + c
	}
	return reduceStep(op, a, c)
}

// Reduce collapses x along axis with op into dst.
func (b *Backend) Reduce(dst *tensor.Tensor, op backend.ReduceOp, axis backend.Axis, x *tensor.Tensor) error {
	const name = "reduce"
	if err := backend.CheckReduce(dst, axis, x); err != nil {
		return err
	}
	if op < backend.ReduceSum || op > backend.ReduceSumSq {
		return backend.Errorf(name, "", backend.ErrDomain, "unknown reduction %d", int(op))
	}
	if err := checkHost(name, []string{"dst", "x"}, dst, x); err != nil {
		return err
	}
	rows, cols := x.Rows(), x.Cols()
	dr, xr := rowsOf(dst), rowsOf(x)
	switch axis {
	case backend.AxisCols:
		b.parallelWork(x.Batch()*rows, float64(cols), func(lo, hi int) {
			for k := lo; k < hi; k++ {
				bb, i := k/rows, k%rows
				*dr.elem(bb, i, 0) = reduceRow(op, xr.at(bb, i))
			}
		})
	case backend.AxisRows:
		b.parallelWork(x.Batch(), float64(rows*cols), func(lo, hi int) {
			for bb := lo; bb < hi; bb++ {
				d := dr.at(bb, 0)
				for j := range d {
					d[j] = reduceInit(op)
				}
				for i := 0; i < rows; i++ {
					for j, v := range xr.at(bb, i) {
						d[j] = reduceStep(op, d[j], v)
					}
				}
			}
		})
	case backend.AxisAll:
		// Per-row partial results, then a sum over rows: each partial is short, which keeps float64 round-off
		// near the pairwise bound for tall matrices.
		tmp := new(scratch)
		defer tmp.release()
		part := tmp.dense(1, rows).Data
		for bb := 0; bb < x.Batch(); bb++ {
			b.parallelWork(rows, float64(cols), func(lo, hi int) {
				for i := lo; i < hi; i++ {
					part[i] = reduceRow(op, xr.at(bb, i))
				}
			})
			acc := reduceInit(op)
			if rows > 0 && cols > 0 {
				acc = pairwise(op, part)
			}
			row(dst, bb, 0)[0] = acc
		}
	}
	return nil
}

// pairwise combines partial results by halving, so a sum over n rows carries O(log n) round-off.
func pairwise(op backend.ReduceOp, v []float64) float64 {
	if len(v) <= 8 {
		acc := v[0]
		for _, x := range v[1:] {
			acc = combine(op, acc, x)
		}
		return acc
	}
	h := len(v) / 2
	return combine(op, pairwise(op, v[:h]), pairwise(op, v[h:]))
}

// AddDiag adds alpha to the diagonal of each square matrix of dst.
func (b *Backend) AddDiag(dst *tensor.Tensor, alpha float64) error {
	const op = "add_diag"
	if err := backend.CheckNotNil(op, []string{"dst"}, dst); err != nil {
		return err
	}
	if err := backend.CheckSquare(op, "dst", dst); err != nil {
		return err
	}
	if err := checkHost(op, []string{"dst"}, dst); err != nil {
		return err
	}
	b.eachRow(dst, 0.01, func(bb, i int) { row(dst, bb, i)[i] += alpha })
	return nil
}

// Symmetrize replaces each square matrix of dst by (X + Xᵀ)/2.
func (b *Backend) Symmetrize(dst *tensor.Tensor) error {
	const op = "symmetrize"
	if err := backend.CheckNotNil(op, []string{"dst"}, dst); err != nil {
		return err
	}
	if err := backend.CheckSquare(op, "dst", dst); err != nil {
		return err
	}
	if err := checkHost(op, []string{"dst"}, dst); err != nil {
		return err
	}
	n := dst.Rows()
	b.parallelWork(dst.Batch(), float64(n*n), func(lo, hi int) {
		for bb := lo; bb < hi; bb++ {
			g := general(dst, bb)
			for i := 0; i < n; i++ {
				for j := 0; j < i; j++ {
					s := 0.5 * (g.Data[i*g.Stride+j] + g.Data[j*g.Stride+i])
					g.Data[i*g.Stride+j], g.Data[j*g.Stride+i] = s, s
				}
			}
		}
	})
	return nil
}

// Transpose writes the transpose of each matrix of x into dst.
func (b *Backend) Transpose(dst, x *tensor.Tensor) error {
	const op = "transpose"
	if err := backend.CheckNotNil(op, []string{"dst", "x"}, dst, x); err != nil {
		return err
	}
	if err := backend.CheckMatrix(op, "dst", dst, -1, x.Cols(), x.Rows()); err != nil {
		return err
	}
	if err := backend.CheckBatch(op, "x", x, dst.Batch()); err != nil {
		return err
	}
	if err := checkHost(op, []string{"dst", "x"}, dst, x); err != nil {
		return err
	}
	dr, xr := rowsOf(dst), rowsOf(x)
	b.eachRow(dst, 1, func(bb, i int) {
		d := dr.at(bb, i)
		for j := range d {
			d[j] = *xr.elem(bb, j, i)
		}
	})
	return nil
}
