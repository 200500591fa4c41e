package backendtest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// The suite reaches backend memory only through Alloc, Upload and Download, so it runs unchanged on devices whose
// memory the host cannot address.

// upload copies a host tensor into a new backend tensor.
func upload(t testing.TB, b backend.Backend, h *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	d, err := b.Alloc(h.Shape())
	if err != nil {
		t.Fatalf("alloc %v: %v", h.Shape(), err)
	}
	if err := b.Upload(d, h); err != nil {
		t.Fatalf("upload %v: %v", h.Shape(), err)
	}
	return d
}

// download copies a backend tensor into a new host tensor.
func download(t testing.TB, b backend.Backend, d *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	h := tensor.NewHost(d.Batch(), d.Rows(), d.Cols())
	if err := b.Download(h, d); err != nil {
		t.Fatalf("download %v: %v", d.Shape(), err)
	}
	return h
}

// randHost returns a host tensor with entries uniform on [-1, 1).
func randHost(r *rand.Rand, batch, rows, cols int) *tensor.Tensor {
	h := tensor.NewHost(batch, rows, cols)
	data := h.Storage().Host()
	for i := range data {
		data[i] = 2*r.Float64() - 1
	}
	return h
}

// maxAbsDiff returns max |a − b| over two host tensors of the same shape.
func maxAbsDiff(a, b *tensor.Tensor) float64 {
	var m float64
	s := a.Shape()
	for bb := 0; bb < s.Batch; bb++ {
		for i := 0; i < s.Rows; i++ {
			for j := 0; j < s.Cols; j++ {
				d := math.Abs(a.At(bb, i, j) - b.At(bb, i, j))
				if math.IsNaN(d) {
					return math.Inf(1)
				}
				m = math.Max(m, d)
			}
		}
	}
	return m
}

// maxAbs returns max |a|.
func maxAbs(a *tensor.Tensor) float64 {
	z := tensor.NewHost(a.Batch(), a.Rows(), a.Cols())
	return maxAbsDiff(a, z)
}

// near fails the test when |got − want| exceeds tol·scale anywhere.
func near(t testing.TB, what string, got, want *tensor.Tensor, tol, scale float64) {
	t.Helper()
	if got.Shape() != want.Shape() {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), want.Shape())
	}
	if d := maxAbsDiff(got, want); d > tol*scale {
		t.Fatalf("%s: max abs error %.3g > %.3g (tol %.1g × scale %.3g)", what, d, tol*scale, tol, scale)
	}
}
