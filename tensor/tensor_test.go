package tensor

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestViews(t *testing.T) {
	x := NewHost(3, 4, 5)
	for i, h := 0, x.Storage().Host(); i < len(h); i++ {
		h[i] = float64(i)
	}
	if !x.Contiguous() || x.Len() != 60 {
		t.Fatalf("new tensor: contiguous %v, len %d", x.Contiguous(), x.Len())
	}
	if got := x.At(2, 3, 4); got != 59 {
		t.Fatalf("At(2,3,4) = %v, want 59", got)
	}
	s := x.Slice(1, 3, 2, 5)
	if s.Shape() != (Shape{3, 2, 3}) || s.Contiguous() || s.RowsContiguous() {
		t.Fatalf("slice shape %v contiguous %v", s.Shape(), s.Contiguous())
	}
	if got, want := s.At(1, 0, 0), float64(20+5+2); got != want {
		t.Fatalf("slice At(1,0,0) = %v, want %v", got, want)
	}
	s.Set(2, 1, 2, -1)
	if x.At(2, 2, 4) != -1 {
		t.Fatalf("write through a slice not seen in the parent")
	}
	it := x.Item(1)
	if it.Batch() != 1 || it.At(0, 0, 0) != 20 {
		t.Fatalf("Item(1): batch %d first %v", it.Batch(), it.At(0, 0, 0))
	}
	bc := it.Broadcast(4)
	if bc.Batch() != 4 || bc.BatchStride() != 0 || bc.At(3, 0, 1) != 21 {
		t.Fatalf("broadcast view wrong: %v", bc)
	}
	r, err := x.Reshape(1, 12, 5)
	if err != nil || r.At(0, 11, 4) != x.At(2, 3, 4) {
		t.Fatalf("reshape: %v", err)
	}
	if _, err := s.Reshape(1, 6, 3); !errors.Is(err, ErrShape) {
		t.Fatalf("reshape of a strided view: err = %v, want ErrShape", err)
	}
	if _, err := x.Reshape(2, 2, 2); !errors.Is(err, ErrShape) {
		t.Fatalf("reshape to a different size: err = %v, want ErrShape", err)
	}
	c := s.Clone()
	if !c.Contiguous() || c.At(2, 1, 2) != -1 {
		t.Fatalf("clone wrong")
	}
}

func TestWindow(t *testing.T) {
	x := NewHost(3, 1, 20) // three packed vectors, element (b, 0, i) = 100b + i
	for b := 0; b < 3; b++ {
		for i := 0; i < 20; i++ {
			x.Set(b, 0, i, float64(100*b+i))
		}
	}
	for _, c := range []struct{ n, off, rows, cols, rs int }{
		{2, 5, 3, 4, 4}, // a dense 3×4 block after 5 elements, first two vectors
		{3, 1, 3, 2, 6}, // rows 6 apart: the last element read is 1 + 2·6 + 1 = 14
		{3, 0, 1, 20, 20},
		{3, 20, 0, 0, 0}, // empty window at the end
	} {
		w := x.Window(c.n, c.off, c.rows, c.cols, c.rs)
		if w.Shape() != (Shape{c.n, c.rows, c.cols}) || w.BatchStride() != 20 {
			t.Fatalf("Window%v: shape %v batch stride %d", c, w.Shape(), w.BatchStride())
		}
		for b := 0; b < c.n; b++ {
			for i := 0; i < c.rows; i++ {
				for j := 0; j < c.cols; j++ {
					if got, want := w.At(b, i, j), float64(100*b+c.off+i*c.rs+j); got != want {
						t.Fatalf("Window%v At(%d,%d,%d) = %v, want %v", c, b, i, j, got, want)
					}
				}
			}
		}
	}
	// On a strided parent the window counts elements from each matrix's first, row stride included.
	m := NewHost(2, 4, 5).Slice(1, 4, 0, 3) // 2×3×3 with row stride 5: extent 2·5 + 3 = 13
	if got := m.Window(2, 5, 2, 2, 5).Offset(); got != m.Offset()+5 {
		t.Fatalf("window offset %d, want %d", got, m.Offset()+5)
	}
	for _, c := range []struct{ n, off, rows, cols, rs int }{
		{4, 0, 1, 1, 1},  // more matrices than the batch
		{1, 17, 1, 4, 4}, // past the end of the vector
		{1, 0, 2, 4, 3},  // rows overlap
		{1, -1, 1, 1, 1},
		{1, 0, -1, 1, 1},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Window%v on %v did not panic", c, x.Shape())
				}
			}()
			x.Window(c.n, c.off, c.rows, c.cols, c.rs)
		}()
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("window past a strided matrix's extent did not panic")
			}
		}()
		m.Window(1, 10, 1, 4, 4) // 10 + 4 > 13
	}()
}

func TestNewChecks(t *testing.T) {
	st := NewHostStorage(make([]float64, 10), nil)
	for _, c := range []struct {
		off, bs, rs int
		s           Shape
	}{
		{0, 6, 3, Shape{2, 2, 3}},  // needs 12
		{0, 0, 2, Shape{1, 2, 3}},  // row stride < cols
		{-1, 0, 3, Shape{1, 1, 3}}, // negative offset
		{0, 0, 3, Shape{1, -1, 3}}, // negative dimension
	} {
		if _, err := New(st, c.off, c.s, c.bs, c.rs); !errors.Is(err, ErrShape) {
			t.Errorf("New(off %d, %v, %d, %d): err = %v, want ErrShape", c.off, c.s, c.bs, c.rs, err)
		}
	}
	if _, err := New(st, 1, Shape{1, 3, 3}, 9, 3); err != nil {
		t.Errorf("New of a view that fits: %v", err)
	}
	if _, err := FromSlice(make([]float64, 5), 1, 2, 3); !errors.Is(err, ErrShape) {
		t.Errorf("FromSlice with 5 values for 1×2×3: err = %v", err)
	}
}

func TestGonumZeroCopy(t *testing.T) {
	m := mat.NewDense(3, 4, nil)
	sub := m.Slice(1, 3, 1, 4).(*mat.Dense)
	x := FromDense(sub)
	if x.Shape() != (Shape{1, 2, 3}) || x.RowStride() != 4 {
		t.Fatalf("FromDense of a slice: %v", x)
	}
	x.Set(0, 1, 2, 7)
	if m.At(2, 3) != 7 {
		t.Fatalf("write through FromDense not seen by gonum")
	}
	d := x.Dense(0)
	d.Set(0, 0, 5)
	if m.At(1, 1) != 5 {
		t.Fatalf("Dense view does not share memory")
	}
	c := x.ToDense(0)
	c.Set(0, 0, 9)
	if m.At(1, 1) != 5 {
		t.Fatalf("ToDense shares memory")
	}
	v := mat.NewVecDense(6, []float64{0, 1, 2, 3, 4, 5})
	sv := v.SliceVec(1, 6)
	xv := FromVecDense(sv.(*mat.VecDense))
	if xv.Shape() != (Shape{1, 5, 1}) || xv.At(0, 4, 0) != 5 {
		t.Fatalf("FromVecDense: %v", xv)
	}
}

func TestCheckFinite(t *testing.T) {
	x := NewHost(2, 3, 3)
	if err := x.CheckFinite("x"); err != nil {
		t.Fatal(err)
	}
	x.Set(1, 2, 0, math.NaN())
	err := x.CheckFinite("sigma")
	if !errors.Is(err, ErrNotFinite) {
		t.Fatalf("err = %v, want ErrNotFinite", err)
	}
	if want := "tensor: sigma[1, 2, 0] = NaN: not finite"; err.Error() != want {
		t.Fatalf("message %q, want %q", err.Error(), want)
	}
	// A NaN outside a view is not the view's business.
	if err := x.Slice(0, 2, 0, 3).CheckFinite("v"); err != nil {
		t.Fatalf("view without the NaN: %v", err)
	}
}

func TestCopyHost(t *testing.T) {
	src := NewHost(1, 2, 2)
	src.Set(0, 1, 1, 3)
	dst := NewHost(3, 2, 2)
	if err := CopyHost(dst, src); err != nil {
		t.Fatal(err)
	}
	if dst.At(2, 1, 1) != 3 {
		t.Fatalf("broadcast copy missing")
	}
	if err := CopyHost(dst, NewHost(2, 2, 2)); !errors.Is(err, ErrShape) {
		t.Fatalf("copy of batch 2 into 3: err = %v", err)
	}
}

// TestRows: FromRows and ItemRows are inverse; ItemRows flattens a strided view item by item; a row of the wrong
// length is an error.
func TestRows(t *testing.T) {
	rows := [][]float64{{1, 2, 3}, {4, 5, 6}}
	h, err := FromRows(rows, 3)
	if err != nil {
		t.Fatal(err)
	}
	if h.Shape() != (Shape{2, 1, 3}) || !reflect.DeepEqual(h.ItemRows(), rows) {
		t.Errorf("FromRows %v, ItemRows %v", h.Shape(), h.ItemRows())
	}
	m, _ := FromSlice([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 2, 2, 3)
	if got, want := m.Slice(0, 2, 1, 3).ItemRows(), [][]float64{{2, 3, 5, 6}, {8, 9, 11, 12}}; !reflect.DeepEqual(got, want) {
		t.Errorf("ItemRows of a column slice: %v, want %v", got, want)
	}
	if _, err := FromRows([][]float64{{1, 2}, {3}}, 2); err == nil {
		t.Error("FromRows accepted a short row")
	}
}

// MatrixIn reads a view's matrices out of a slice given in place of the storage's: the same span of it as Matrix
// gives of the storage, and an index past the batch panics.
func TestMatrixIn(t *testing.T) {
	x := NewHost(3, 4, 5)
	other := make([]float64, x.Len())
	for i := range other {
		other[i] = float64(-i)
	}
	s := x.Slice(1, 3, 2, 5) // 3 × 2×3, row stride 5
	for b := 0; b < 3; b++ {
		m, stride, rows, cols := s.MatrixIn(other, b)
		if stride != 5 || rows != 2 || cols != 3 || len(m) != 5+3 {
			t.Fatalf("matrix %d: stride %d, %d×%d, len %d; want 5, 2×3, 8", b, stride, rows, cols, len(m))
		}
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				if want := -float64(s.Index(b, i, j)); m[i*stride+j] != want {
					t.Errorf("matrix %d (%d, %d) = %v, want %v", b, i, j, m[i*stride+j], want)
				}
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("MatrixIn(3) of a batch of 3 did not panic")
		}
	}()
	s.MatrixIn(other, 3)
}
