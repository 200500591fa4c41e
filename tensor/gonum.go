package tensor

import (
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// FromDense wraps a gonum matrix as a host tensor of batch 1 without copying: writes through the tensor are seen by
// m and the other way round.
func FromDense(m *mat.Dense) *Tensor {
	r := m.RawMatrix()
	if r.Rows == 0 || r.Cols == 0 {
		return NewHost(1, r.Rows, r.Cols)
	}
	return &Tensor{st: NewHostStorage(r.Data, nil), shape: Shape{1, r.Rows, r.Cols}, rstride: r.Stride,
		bstride: (r.Rows-1)*r.Stride + r.Cols}
}

// FromVecDense wraps a gonum vector as a host tensor of shape 1 × n × 1 without copying.
func FromVecDense(v *mat.VecDense) *Tensor {
	r := v.RawVector()
	if r.N == 0 {
		return NewHost(1, 0, 1)
	}
	return &Tensor{st: NewHostStorage(r.Data, nil), shape: Shape{1, r.N, 1}, rstride: r.Inc,
		bstride: (r.N-1)*r.Inc + 1}
}

// Dense returns matrix b of a host tensor as a gonum matrix sharing its memory.
func (t *Tensor) Dense(b int) *mat.Dense {
	data, stride, rows, cols := t.Matrix(b)
	if rows == 0 || cols == 0 {
		return &mat.Dense{}
	}
	var m mat.Dense
	m.SetRawMatrix(blas64.General{Rows: rows, Cols: cols, Stride: stride, Data: data})
	return &m
}

// ToDense returns a copy of matrix b of a host tensor.
func (t *Tensor) ToDense(b int) *mat.Dense {
	s := t.shape
	if s.Rows == 0 || s.Cols == 0 {
		return &mat.Dense{}
	}
	m := mat.NewDense(s.Rows, s.Cols, nil)
	m.Copy(t.Dense(b))
	return m
}

// CopyHost copies src into dst; both must be host tensors of the same shape (src may have batch 1, which is
// repeated over dst's batch).
func CopyHost(dst, src *Tensor) error {
	ds, ss := dst.shape, src.shape
	if ss.Rows != ds.Rows || ss.Cols != ds.Cols || (ss.Batch != ds.Batch && ss.Batch != 1) {
		return shapeErr("copy of %v into %v", ss, ds)
	}
	if ds.Len() == 0 {
		return nil
	}
	dh, sh := dst.hostData(), src.hostData()
	for b := 0; b < ds.Batch; b++ {
		sb := b
		if ss.Batch == 1 {
			sb = 0
		}
		for i := 0; i < ds.Rows; i++ {
			copy(dh[dst.off+b*dst.bstride+i*dst.rstride:][:ds.Cols], sh[src.off+sb*src.bstride+i*src.rstride:][:ds.Cols])
		}
	}
	return nil
}

// Clone returns a contiguous host copy of a host tensor.
func (t *Tensor) Clone() *Tensor {
	c := NewHost(t.shape.Batch, t.shape.Rows, t.shape.Cols)
	if err := CopyHost(c, t); err != nil {
		panic(err) // shapes agree by construction
	}
	return c
}
