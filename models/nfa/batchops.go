package nfa

import (
	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// ops queues backend calls and keeps the first error, so that the long chains of Batch's forward and backward
// passes read as the formulas they compute; after an error every later call is skipped.
type ops struct {
	be  backend.Backend
	err error
}

const (
	nt = blas.NoTrans
	tr = blas.Trans
)

func (o *ops) do(f func() error) {
	if o.err == nil {
		o.err = f()
	}
}

func (o *ops) gemm(tA, tB blas.Transpose, alpha float64, a, b *tensor.Tensor, beta float64, c *tensor.Tensor) {
	o.do(func() error { return o.be.Gemm(tA, tB, alpha, a, b, beta, c) })
}

func (o *ops) axpby(dst *tensor.Tensor, alpha float64, x *tensor.Tensor, beta float64, y *tensor.Tensor) {
	o.do(func() error { return o.be.Axpby(dst, alpha, x, beta, y) })
}

func (o *ops) scale(dst *tensor.Tensor, alpha float64, x *tensor.Tensor) {
	o.do(func() error { return o.be.Axpby(dst, alpha, x, 0, nil) })
}

func (o *ops) mul(dst, x, y *tensor.Tensor) { o.do(func() error { return o.be.Mul(dst, x, y) }) }
func (o *ops) div(dst, x, y *tensor.Tensor) { o.do(func() error { return o.be.Div(dst, x, y) }) }
func (o *ops) copy(dst, x *tensor.Tensor)   { o.do(func() error { return o.be.Copy(dst, x) }) }
func (o *ops) fill(dst *tensor.Tensor, v float64) {
	o.do(func() error { return o.be.Fill(dst, v) })
}
func (o *ops) mapf(dst *tensor.Tensor, f backend.UnaryOp, x *tensor.Tensor) {
	o.do(func() error { return o.be.Map(dst, f, 1, x) })
}
func (o *ops) scaleRows(dst, x, v *tensor.Tensor) {
	o.do(func() error { return o.be.ScaleRows(dst, x, v) })
}
func (o *ops) scaleCols(dst, x, v *tensor.Tensor) {
	o.do(func() error { return o.be.ScaleCols(dst, x, v) })
}
func (o *ops) rowDots(dst, x, y *tensor.Tensor) {
	o.do(func() error { return o.be.RowDots(dst, x, y) })
}
func (o *ops) transpose(dst, x *tensor.Tensor) { o.do(func() error { return o.be.Transpose(dst, x) }) }
func (o *ops) sum(dst *tensor.Tensor, axis backend.Axis, x *tensor.Tensor) {
	o.do(func() error { return o.be.Reduce(dst, backend.ReduceSum, axis, x) })
}

// re reinterprets the leading batch×rows×cols elements of the contiguous scratch tensor t, e.g. n runs of H×T as
// n·H matrices of T×1.
func re(t *tensor.Tensor, batch, rows, cols int) *tensor.Tensor {
	v, err := tensor.New(t.Storage(), t.Offset(), tensor.Shape{Batch: batch, Rows: rows, Cols: cols}, rows*cols, cols)
	if err != nil {
		panic(err)
	}
	return v
}
