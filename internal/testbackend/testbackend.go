// Package testbackend opens the backend that tests of the methods and models run on: $GEOVB_BACKEND when set (so a
// GPU machine runs them on CUDA), else the CPU.
package testbackend

import (
	"os"
	"testing"

	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/all"
	"github.com/geovb/geovb/tensor"
)

// Open returns the test backend, failing the test when it cannot start, and closes it when the test ends.
func Open(t testing.TB) backend.Backend {
	t.Helper()
	name := os.Getenv(backend.EnvVar)
	if name == "" {
		name = "cpu"
	}
	b, err := backend.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// UploadRows returns a tensor of len(rows)×1×n on b holding rows (a batch of runs' vectors), freed when the test
// ends.
func UploadRows(t testing.TB, b backend.Backend, rows [][]float64, n int) *tensor.Tensor {
	t.Helper()
	h, err := tensor.FromRows(rows, n)
	if err != nil {
		t.Fatal(err)
	}
	d, err := b.Alloc(h.Shape())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free(d) })
	if err := b.Upload(d, h); err != nil {
		t.Fatal(err)
	}
	return d
}

// DownloadRows returns every item of the tensor d on b, flattened (tensor.ItemRows).
func DownloadRows(t testing.TB, b backend.Backend, d *tensor.Tensor) [][]float64 {
	t.Helper()
	h := tensor.NewHost(d.Batch(), d.Rows(), d.Cols())
	if err := b.Download(h, d); err != nil {
		t.Fatal(err)
	}
	return h.ItemRows()
}

// Alloc returns a zeroed tensor of the given shape on b, freed when the test ends. Library functions that take a
// backend want their tensors there: a GPU backend refuses host memory, which the CPU backend accepts unless
// GEOVB_CPU_STRICT=1 (as scripts/test.sh runs the tests), so a test that hands over tensor.NewHost fails on a GPU
// or under the strict CPU backend.
func Alloc(t testing.TB, b backend.Backend, batch, rows, cols int) *tensor.Tensor {
	t.Helper()
	d, err := b.Alloc(tensor.Shape{Batch: batch, Rows: rows, Cols: cols})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free(d) })
	return d
}

// Upload returns a tensor on b holding a copy of the host tensor h, freed when the test ends.
func Upload(t testing.TB, b backend.Backend, h *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	d := Alloc(t, b, h.Batch(), h.Rows(), h.Cols())
	if err := b.Upload(d, h); err != nil {
		t.Fatal(err)
	}
	return d
}

// Download returns a host copy of the tensor d on b (element access to d itself works on the CPU only).
func Download(t testing.TB, b backend.Backend, d *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	h := tensor.NewHost(d.Batch(), d.Rows(), d.Cols())
	if err := b.Download(h, d); err != nil {
		t.Fatal(err)
	}
	return h
}
