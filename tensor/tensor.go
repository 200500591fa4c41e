// Package tensor holds batched dense float64 tensors: a batch of matrices, each stored row-major, with a row stride
// (leading dimension) and a batch stride. The storage belongs to a backend: a host slice for the CPU backend, device
// memory for a GPU backend. Views share storage; nothing in this package copies data unless its name says so.
package tensor

import (
	"fmt"
	"math"
)

// Storage is a block of memory owned by a backend. Host memory exposes its slice through Host.
type Storage interface {
	// Len is the number of float64 elements in the block.
	Len() int
	// Host returns the host slice holding the data, or nil when the memory is not addressable from the host.
	Host() []float64
	// Owner identifies the backend that allocated the memory; nil for plain host memory.
	Owner() any
}

// HostStorage is host memory: a plain slice of float64.
type HostStorage struct {
	Data  []float64
	owner any
}

// NewHostStorage wraps data as host storage owned by owner (nil for plain host memory).
func NewHostStorage(data []float64, owner any) *HostStorage {
	return &HostStorage{Data: data, owner: owner}
}

func (h *HostStorage) Len() int        { return len(h.Data) }
func (h *HostStorage) Host() []float64 { return h.Data }
func (h *HostStorage) Owner() any      { return h.owner }

// Shape is the logical shape of a tensor: Batch matrices of Rows × Cols.
type Shape struct{ Batch, Rows, Cols int }

func (s Shape) String() string { return fmt.Sprintf("%d×%d×%d", s.Batch, s.Rows, s.Cols) }

// Len is the number of elements of the shape.
func (s Shape) Len() int { return s.Batch * s.Rows * s.Cols }

// Tensor is a strided view of Batch matrices of Rows × Cols in a Storage. Element (b, i, j) lives at
// Offset + b·BatchStride + i·RowStride + j. A batch stride of 0 repeats one matrix over the batch.
type Tensor struct {
	st      Storage
	off     int
	shape   Shape
	bstride int
	rstride int
}

// New returns a view of st. It checks that the view lies inside the storage.
func New(st Storage, offset int, shape Shape, batchStride, rowStride int) (*Tensor, error) {
	if st == nil {
		return nil, shapeErr("nil storage")
	}
	if shape.Batch < 0 || shape.Rows < 0 || shape.Cols < 0 {
		return nil, shapeErr("negative dimension in %v", shape)
	}
	if offset < 0 || batchStride < 0 || rowStride < 0 {
		return nil, shapeErr("negative offset or stride (offset %d, batch stride %d, row stride %d)", offset, batchStride, rowStride)
	}
	if shape.Rows > 1 && rowStride < shape.Cols {
		return nil, shapeErr("row stride %d smaller than %d columns", rowStride, shape.Cols)
	}
	t := &Tensor{st: st, off: offset, shape: shape, bstride: batchStride, rstride: rowStride}
	if shape.Len() > 0 && t.span() > st.Len() {
		return nil, shapeErr("view %v at offset %d with strides (%d, %d) needs %d elements, storage has %d",
			shape, offset, batchStride, rowStride, t.span(), st.Len())
	}
	return t, nil
}

// span is one past the largest storage index the view touches.
func (t *Tensor) span() int {
	s := t.shape
	if s.Len() == 0 {
		return t.off
	}
	return t.off + (s.Batch-1)*t.bstride + (s.Rows-1)*t.rstride + s.Cols
}

// FromSlice wraps data as a contiguous host tensor of the given shape without copying.
func FromSlice(data []float64, batch, rows, cols int) (*Tensor, error) {
	s := Shape{batch, rows, cols}
	if batch < 0 || rows < 0 || cols < 0 {
		return nil, shapeErr("negative dimension in %v", s)
	}
	if len(data) != s.Len() {
		return nil, shapeErr("%d values for shape %v (%d elements)", len(data), s, s.Len())
	}
	return New(NewHostStorage(data, nil), 0, s, rows*cols, cols)
}

// NewHost allocates a zeroed contiguous host tensor.
func NewHost(batch, rows, cols int) *Tensor {
	s := Shape{batch, rows, cols}
	if batch < 0 || rows < 0 || cols < 0 {
		panic(fmt.Sprintf("tensor: negative dimension in %v", s))
	}
	return &Tensor{st: NewHostStorage(make([]float64, s.Len()), nil), shape: s, bstride: rows * cols, rstride: cols}
}

// Shape returns the logical shape.
func (t *Tensor) Shape() Shape { return t.shape }

// Batch returns the number of matrices.
func (t *Tensor) Batch() int { return t.shape.Batch }

// Rows returns the number of rows of each matrix.
func (t *Tensor) Rows() int { return t.shape.Rows }

// Cols returns the number of columns of each matrix.
func (t *Tensor) Cols() int { return t.shape.Cols }

// Len returns the number of logical elements.
func (t *Tensor) Len() int { return t.shape.Len() }

// Offset returns the storage index of element (0, 0, 0).
func (t *Tensor) Offset() int { return t.off }

// BatchStride returns the storage distance between consecutive matrices (0 for a broadcast view).
func (t *Tensor) BatchStride() int { return t.bstride }

// RowStride returns the storage distance between consecutive rows (the leading dimension).
func (t *Tensor) RowStride() int { return t.rstride }

// Storage returns the underlying storage.
func (t *Tensor) Storage() Storage { return t.st }

// Owner returns the backend that owns the storage (nil for plain host memory).
func (t *Tensor) Owner() any { return t.st.Owner() }

// IsHost reports whether the data is addressable from the host.
func (t *Tensor) IsHost() bool { return t.st.Host() != nil || t.st.Len() == 0 }

// Contiguous reports whether the elements are packed with no gaps in batch-row-column order.
func (t *Tensor) Contiguous() bool {
	s := t.shape
	return (s.Rows <= 1 || t.rstride == s.Cols) && (s.Batch <= 1 || t.bstride == s.Rows*s.Cols)
}

// RowsContiguous reports whether each matrix has packed rows (row stride equal to the column count).
func (t *Tensor) RowsContiguous() bool { return t.shape.Rows <= 1 || t.rstride == t.shape.Cols }

// Index returns the storage index of element (b, i, j). It panics when the element is out of range.
func (t *Tensor) Index(b, i, j int) int {
	s := t.shape
	if uint(b) >= uint(s.Batch) || uint(i) >= uint(s.Rows) || uint(j) >= uint(s.Cols) {
		panic(fmt.Sprintf("tensor: index (%d, %d, %d) out of range %v", b, i, j, s))
	}
	return t.off + b*t.bstride + i*t.rstride + j
}

// At returns element (b, i, j) of a host tensor.
func (t *Tensor) At(b, i, j int) float64 { return t.hostData()[t.Index(b, i, j)] }

// Set sets element (b, i, j) of a host tensor.
func (t *Tensor) Set(b, i, j int, v float64) { t.hostData()[t.Index(b, i, j)] = v }

func (t *Tensor) hostData() []float64 {
	h := t.st.Host()
	if h == nil {
		panic("tensor: element access to a tensor that is not in host memory")
	}
	return h
}

// Matrix returns the storage slice, row stride, rows and cols of matrix b of a host tensor, in the form gonum's
// blas64.General takes. The slice starts at element (b, 0, 0) and ends after element (b, Rows-1, Cols-1).
func (t *Tensor) Matrix(b int) (data []float64, stride, rows, cols int) {
	return t.MatrixIn(t.hostData(), b)
}

// MatrixIn is Matrix with h standing for the storage's host slice: for a backend that keeps its memory's slice to
// itself (Storage.Host nil) and reads its own tensors through it.
func (t *Tensor) MatrixIn(h []float64, b int) (data []float64, stride, rows, cols int) {
	s := t.shape
	if uint(b) >= uint(s.Batch) {
		panic(fmt.Sprintf("tensor: batch %d out of range %v", b, s))
	}
	stride = t.rstride
	if stride < s.Cols {
		stride = max(s.Cols, 1)
	}
	if s.Rows == 0 || s.Cols == 0 {
		return nil, stride, s.Rows, s.Cols
	}
	start := t.off + b*t.bstride
	return h[start : start+(s.Rows-1)*t.rstride+s.Cols], stride, s.Rows, s.Cols
}

// Item returns a view of matrix b as a batch of one.
func (t *Tensor) Item(b int) *Tensor { return t.Batches(b, b+1) }

// Batches returns a view of matrices lo to hi-1.
func (t *Tensor) Batches(lo, hi int) *Tensor {
	if lo < 0 || hi < lo || hi > t.shape.Batch {
		panic(fmt.Sprintf("tensor: batch range [%d, %d) out of range %v", lo, hi, t.shape))
	}
	u := *t
	u.off += lo * t.bstride
	u.shape.Batch = hi - lo
	return &u
}

// Slice returns the view of rows [r0, r1) and columns [c0, c1) of every matrix.
func (t *Tensor) Slice(r0, r1, c0, c1 int) *Tensor {
	s := t.shape
	if r0 < 0 || r1 < r0 || r1 > s.Rows || c0 < 0 || c1 < c0 || c1 > s.Cols {
		panic(fmt.Sprintf("tensor: slice [%d:%d, %d:%d] out of range %v", r0, r1, c0, c1, s))
	}
	u := *t
	u.off += r0*t.rstride + c0
	u.shape.Rows, u.shape.Cols = r1-r0, c1-c0
	return &u
}

// Window returns a view of matrices [0, n) that reads each as a rows×cols matrix with row stride rowStride,
// starting off elements into the matrix, with the batch stride kept. Batched models use it to address the parts of
// a packed per-run vector (one 1×len row per run) as matrices. The window must lie inside each matrix's elements.
func (t *Tensor) Window(n, off, rows, cols, rowStride int) *Tensor {
	s := t.shape
	extent := 0 // elements from a matrix's first to one past its last
	if s.Rows > 0 && s.Cols > 0 {
		extent = (s.Rows-1)*t.rstride + s.Cols
	}
	need := off
	if rows > 0 && cols > 0 {
		need += (rows-1)*rowStride + cols
	}
	if n < 0 || n > s.Batch || off < 0 || rows < 0 || cols < 0 || (rows > 1 && rowStride < cols) || need > extent {
		panic(fmt.Sprintf("tensor: window of %d×%d×%d at offset %d with row stride %d out of range %v",
			n, rows, cols, off, rowStride, s))
	}
	u := *t
	u.off += off
	u.shape = Shape{n, rows, cols}
	u.rstride = rowStride
	return &u
}

// Broadcast returns a view that repeats a single matrix n times (batch stride 0).
func (t *Tensor) Broadcast(n int) *Tensor {
	if t.shape.Batch != 1 {
		panic(fmt.Sprintf("tensor: broadcast of a batch of %d", t.shape.Batch))
	}
	u := *t
	u.shape.Batch = n
	u.bstride = 0
	return &u
}

// Reshape returns a contiguous tensor's data under another shape with the same number of elements.
func (t *Tensor) Reshape(batch, rows, cols int) (*Tensor, error) {
	if !t.Contiguous() {
		return nil, shapeErr("reshape of a non-contiguous view %v", t.shape)
	}
	s := Shape{batch, rows, cols}
	if batch < 0 || rows < 0 || cols < 0 || s.Len() != t.Len() {
		return nil, shapeErr("reshape %v to %v", t.shape, s)
	}
	return New(t.st, t.off, s, rows*cols, cols)
}

// CheckFinite returns an error naming the first NaN or infinite element of a host tensor. name is used in the
// message. It is a pass over the data: call it where user data enters, not in hot loops.
func (t *Tensor) CheckFinite(name string) error {
	s := t.shape
	if s.Len() == 0 {
		return nil
	}
	h := t.hostData()
	for b := 0; b < s.Batch; b++ {
		for i := 0; i < s.Rows; i++ {
			row := h[t.off+b*t.bstride+i*t.rstride:][:s.Cols]
			for j, v := range row {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return fmt.Errorf("tensor: %s[%d, %d, %d] = %v: %w", name, b, i, j, v, ErrNotFinite)
				}
			}
		}
	}
	return nil
}

// String describes the view (not its data).
func (t *Tensor) String() string {
	return fmt.Sprintf("Tensor(%v, offset %d, strides %d/%d)", t.shape, t.off, t.bstride, t.rstride)
}

// FromRows returns a new contiguous host tensor of len(rows)×1×n whose item i holds rows[i]; every row must have
// length n. It is how per-run vectors (a batch of runs' parameters) go to a backend.
func FromRows(rows [][]float64, n int) (*Tensor, error) {
	t := NewHost(len(rows), 1, n)
	for i, r := range rows {
		if len(r) != n {
			return nil, shapeErr("row %d has %d values, want %d", i, len(r), n)
		}
		copy(t.hostData()[i*n:], r)
	}
	return t, nil
}

// ItemRows returns a copy of every item of the host tensor t, each flattened row by row: the per-run vectors of a
// batch, the inverse of FromRows.
func (t *Tensor) ItemRows() [][]float64 {
	out := make([][]float64, t.shape.Batch)
	for b := range out {
		row := make([]float64, 0, t.shape.Rows*t.shape.Cols)
		for i := 0; t.shape.Cols > 0 && i < t.shape.Rows; i++ {
			d := t.hostData()[t.Index(b, i, 0):]
			row = append(row, d[:t.shape.Cols]...)
		}
		out[b] = row
	}
	return out
}
