package cpu

import (
	"errors"
	"testing"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// TestStrictRefusesWhatAGPURefuses checks GEOVB_CPU_STRICT's rules: plain host tensors and freed tensors are
// refused as operands (ErrForeign, naming the operand), views of backend tensors and Upload's source and Download's
// destination in host memory are not, and the backend's memory has no host slice outside the backend; without it
// the CPU backend takes any host tensor.
func TestStrictRefusesWhatAGPURefuses(t *testing.T) {
	defer func(s bool) { strict = s }(strict)
	b, err := New()
	if err != nil {
		t.Fatal(err)
	}
	alloc := func() *tensor.Tensor {
		d, err := b.Alloc(tensor.Shape{Batch: 2, Rows: 3, Cols: 3})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	own, own2, plain := alloc(), alloc(), tensor.NewHost(2, 3, 3)
	freed := alloc()
	b.Free(freed)
	for _, s := range []bool{false, true} {
		strict = s
		for _, c := range []struct {
			name    string
			err     error
			refused bool // in strict mode
		}{
			{"copy from a backend tensor", b.Copy(own, own2), false},
			{"copy of views", b.Copy(own.Item(1), own2.Slice(0, 3, 0, 3).Item(0)), false},
			{"copy from plain host memory", b.Copy(own, plain), true},
			{"copy from a freed tensor", b.Copy(own, freed), true},
			{"gemm with a plain operand", b.Gemm(blas.NoTrans, blas.NoTrans, 1, own, plain, 0, own2), true},
			{"gemm into a plain tensor", b.Gemm(blas.NoTrans, blas.NoTrans, 1, own, own2, 0, plain), true},
			{"upload from plain host memory", b.Upload(own, plain), false},
			{"upload into plain host memory", b.Upload(plain, own), true},
			{"download into plain host memory", b.Download(plain, own), false},
			{"download from plain host memory", b.Download(own, plain), true},
			{"add-diag on a plain tensor", b.AddDiag(plain, 1), true},
		} {
			want := s && c.refused
			if got := errors.Is(c.err, backend.ErrForeign); got != want || (!want && c.err != nil) {
				t.Errorf("strict %v, %s: error %v, want refused %v", s, c.name, c.err, want)
			}
		}
	}
	// The backend's memory is opaque to other code, as a GPU's: no host slice, element access panics, and the
	// backend still computes on it and hands it back through Download.
	strict = true
	vals := tensor.NewHost(2, 3, 3)
	for i := range vals.Storage().Host() {
		vals.Storage().Host()[i] = float64(i) + 0.5
	}
	if err := b.Upload(own, vals); err != nil {
		t.Fatal(err)
	}
	if err := b.Axpby(own2, 2, own, 0, nil); err != nil {
		t.Fatal(err)
	}
	if own.IsHost() || own.Storage().Host() != nil {
		t.Error("strict: a backend tensor exposes its host slice")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("strict: element access to a backend tensor did not panic")
			}
		}()
		_ = own2.At(0, 0, 0)
	}()
	back := tensor.NewHost(2, 3, 3)
	if err := b.Download(back, own2); err != nil {
		t.Fatal(err)
	}
	for i, v := range back.Storage().Host() {
		if v != 2*(float64(i)+0.5) {
			t.Fatalf("strict: element %d came back %v, want %v", i, v, 2*(float64(i)+0.5))
		}
	}
	err = b.Gemm(blas.NoTrans, blas.NoTrans, 1, own, plain, 0, own2)
	var be *backend.OpError
	if !errors.As(err, &be) || be.Operand != "b" {
		t.Errorf("strict gemm error %v does not name operand b", err)
	}
}
