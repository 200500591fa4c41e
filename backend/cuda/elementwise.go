package cuda

import (
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// prep runs the shared checks of an element-wise operation: dst present, operands shaped like dst (batch 1 or
// dst's), all on this GPU.
func (b *Backend) prep(op string, dst *tensor.Tensor, names []string, xs ...*tensor.Tensor) error {
	if err := backend.CheckNotNil(op, []string{"dst"}, dst); err != nil {
		return err
	}
	if err := backend.CheckElementwise(op, dst, names, xs...); err != nil {
		return err
	}
	return b.ownsNamed(op, append([]string{"dst"}, names...), append([]*tensor.Tensor{dst}, xs...)...)
}

// dims returns batch, rows, cols of t as kernel arguments.
func dims(t *tensor.Tensor) (int64, int64, int64) {
	return int64(t.Batch()), int64(t.Rows()), int64(t.Cols())
}

// Fill sets every element of dst to v.
func (b *Backend) Fill(dst *tensor.Tensor, v float64) error {
	if err := b.prep("fill", dst, nil); err != nil {
		return err
	}
	d := b.viewOf(dst)
	B, R, C := dims(dst)
	return b.queue("fill", func() error { return b.launch1D("core", "ew_fill", B*R*C, d.p, d.bs, d.rs, B, R, C, v) })
}

// Axpby computes dst = alpha·x + beta·y element-wise (y may be nil).
func (b *Backend) Axpby(dst *tensor.Tensor, alpha float64, x *tensor.Tensor, beta float64, y *tensor.Tensor) error {
	if err := backend.CheckNotNil("axpby", []string{"x"}, x); err != nil {
		return err
	}
	if err := b.prep("axpby", dst, []string{"x", "y"}, x, y); err != nil {
		return err
	}
	d, xv, yv := b.viewOf(dst), b.viewOf(x), b.viewOf(y)
	hasY := int32(0)
	if y != nil {
		hasY = 1
	}
	B, R, C := dims(dst)
	return b.queue("axpby", func() error {
		return b.launch1D("core", "ew_axpby", B*R*C, d.p, d.bs, d.rs, xv.p, xv.bs, xv.rs, yv.p, yv.bs, yv.rs,
			B, R, C, alpha, beta, hasY)
	})
}

// Mul computes dst = x ⊙ y.
func (b *Backend) Mul(dst, x, y *tensor.Tensor) error { return b.mulDiv("mul", dst, x, y, 0) }

// Div computes dst = x ⊘ y.
func (b *Backend) Div(dst, x, y *tensor.Tensor) error { return b.mulDiv("div", dst, x, y, 1) }

func (b *Backend) mulDiv(op string, dst, x, y *tensor.Tensor, div int32) error {
	if err := backend.CheckNotNil(op, []string{"x", "y"}, x, y); err != nil {
		return err
	}
	if err := b.prep(op, dst, []string{"x", "y"}, x, y); err != nil {
		return err
	}
	d, xv, yv := b.viewOf(dst), b.viewOf(x), b.viewOf(y)
	B, R, C := dims(dst)
	return b.queue(op, func() error {
		return b.launch1D("core", "ew_muldiv", B*R*C, d.p, d.bs, d.rs, xv.p, xv.bs, xv.rs, yv.p, yv.bs, yv.rs,
			B, R, C, div)
	})
}

// Map computes dst = f(alpha·x) with the formulas of the CPU backend (kernels/core.cu, unary).
func (b *Backend) Map(dst *tensor.Tensor, f backend.UnaryOp, alpha float64, x *tensor.Tensor) error {
	if err := backend.CheckNotNil("map", []string{"x"}, x); err != nil {
		return err
	}
	if f < backend.Identity || f > backend.Step {
		return backend.Errorf("map", "", backend.ErrDomain, "unknown function %d", int(f))
	}
	if err := b.prep("map", dst, []string{"x"}, x); err != nil {
		return err
	}
	d, xv := b.viewOf(dst), b.viewOf(x)
	B, R, C := dims(dst)
	return b.queue("map", func() error {
		return b.launch1D("core", "ew_map", B*R*C, d.p, d.bs, d.rs, xv.p, xv.bs, xv.rs, B, R, C, int32(f), alpha)
	})
}

// ScaleRows computes dst[b,i,j] = x[b,i,j]·v[b,i].
func (b *Backend) ScaleRows(dst, x, v *tensor.Tensor) error {
	return b.scale("scale_rows", dst, x, v, 0)
}

// ScaleCols computes dst[b,i,j] = x[b,i,j]·v[b,j].
func (b *Backend) ScaleCols(dst, x, v *tensor.Tensor) error {
	return b.scale("scale_cols", dst, x, v, 1)
}

func (b *Backend) scale(op string, dst, x, v *tensor.Tensor, byCol int32) error {
	if err := backend.CheckNotNil(op, []string{"x", "v"}, x, v); err != nil {
		return err
	}
	if err := b.prep(op, dst, []string{"x"}, x); err != nil {
		return err
	}
	if err := backend.CheckScaleVector(op, dst, v, byCol == 1); err != nil {
		return err
	}
	if err := b.ownsNamed(op, []string{"v"}, v); err != nil {
		return err
	}
	d, xv, vv := b.viewOf(dst), b.viewOf(x), b.viewOf(v)
	B, R, C := dims(dst)
	return b.queue(op, func() error {
		return b.launch1D("core", "ew_scale", B*R*C, d.p, d.bs, d.rs, xv.p, xv.bs, xv.rs, vv.p, vv.bs, vv.rs,
			B, R, C, byCol)
	})
}

// rowWarps is the launch of reduce_row: one warp per row, 8 warps per block, at most 32 blocks per multiprocessor.
func (b *Backend) rowWarps(module, name string, rows int64, args ...any) error {
	grid := (rows + 7) / 8
	if max := int64(b.info.Cores) * 32; max > 0 && grid > max {
		grid = max
	}
	if grid < 1 {
		return nil
	}
	return b.gpu.launch(module, name, [3]uint32{uint32(grid), 1, 1}, [3]uint32{256, 1, 1}, 0, args...)
}

// RowDots computes dst[b,i] = Σ_j x[b,i,j]·y[b,i,j].
func (b *Backend) RowDots(dst, x, y *tensor.Tensor) error {
	const op = "row_dots"
	if err := backend.CheckRowDots(dst, x, y); err != nil {
		return err
	}
	if err := b.ownsNamed(op, []string{"dst", "x", "y"}, dst, x, y); err != nil {
		return err
	}
	d, xv, yv := b.viewOf(dst), b.viewOf(x), b.viewOf(y)
	B, R, C := int64(dst.Batch()), int64(x.Rows()), int64(x.Cols())
	return b.queue(op, func() error {
		return b.rowWarps("core", "reduce_row", B*R, d.p, d.bs, d.rs, xv.p, xv.bs, xv.rs, yv.p, yv.bs, yv.rs,
			B, R, C, int32(backend.ReduceSum))
	})
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
	if err := b.ownsNamed(name, []string{"dst", "x"}, dst, x); err != nil {
		return err
	}
	d, xv := b.viewOf(dst), b.viewOf(x)
	B, R, C := dims(x)
	if B*R*C == 0 {
		return b.Fill(dst, reduceEmpty(op))
	}
	return b.queue(name, func() error {
		switch axis {
		case backend.AxisCols:
			return b.rowWarps("core", "reduce_row", B*R, d.p, d.bs, d.rs, xv.p, xv.bs, xv.rs, cuNil, int64(0), int64(0),
				B, R, C, int32(op))
		case backend.AxisRows:
			return b.launch1D("core", "reduce_col", B*C, d.p, d.bs, xv.p, xv.bs, xv.rs, B, R, C, int32(op))
		default:
			return b.gpu.launch("core", "reduce_all", [3]uint32{uint32(B), 1, 1}, [3]uint32{256, 1, 1}, 0, d.p, d.bs,
				xv.p, xv.bs, xv.rs, R, C, int32(op))
		}
	})
}

// reduceEmpty is the value a reduction over no elements gives (the CPU backend's starting values).
func reduceEmpty(op backend.ReduceOp) float64 {
	switch op {
	case backend.ReduceMax:
		return negInf
	case backend.ReduceMin:
		return posInf
	}
	return 0
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
	if err := b.ownsNamed(op, []string{"dst"}, dst); err != nil {
		return err
	}
	d := b.viewOf(dst)
	B, n := int64(dst.Batch()), int64(dst.Rows())
	return b.queue(op, func() error { return b.launch1D("core", "add_diag", B*n, d.p, d.bs, d.rs, B, n, alpha) })
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
	if err := b.ownsNamed(op, []string{"dst"}, dst); err != nil {
		return err
	}
	d := b.viewOf(dst)
	B, n := int64(dst.Batch()), int64(dst.Rows())
	return b.queue(op, func() error { return b.launch1D("core", "symmetrize", B*n*n, d.p, d.bs, d.rs, B, n) })
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
	if err := b.ownsNamed(op, []string{"dst", "x"}, dst, x); err != nil {
		return err
	}
	d, xv := b.viewOf(dst), b.viewOf(x)
	B, R, C := int64(dst.Batch()), int64(x.Rows()), int64(x.Cols())
	return b.queue(op, func() error {
		return b.launch1D("core", "transpose", B*R*C, d.p, d.bs, d.rs, xv.p, xv.bs, xv.rs, B, R, C)
	})
}

// FillNormal writes standard normal draws of c into dst, the same numbers as every backend (package rng).
func (b *Backend) FillNormal(dst *tensor.Tensor, c rng.Counter) error {
	if err := b.prep("fill_normal", dst, nil); err != nil {
		return err
	}
	return b.fillRandom(dst, c, true)
}

// FillUniform writes uniform draws of c on (0, 1) into dst.
func (b *Backend) FillUniform(dst *tensor.Tensor, c rng.Counter) error {
	if err := b.prep("fill_uniform", dst, nil); err != nil {
		return err
	}
	return b.fillRandom(dst, c, false)
}
