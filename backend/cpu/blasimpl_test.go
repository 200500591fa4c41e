package cpu

import (
	"testing"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
	lapackgonum "gonum.org/v1/gonum/lapack/gonum"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// Importing the package (and running its tests, which start backends) leaves gonum's process-wide BLAS as gonum's
// default; UseForGonum hands it the backend's own, which differs from the default when the backend has faster
// kernels (fastblas.go) or OpenBLAS (netlib.go).
func TestUseForGonum(t *testing.T) {
	if _, err := New(); err != nil {
		t.Fatal(err)
	}
	if impl, ok := blas64.Implementation().(gonum.Implementation); !ok {
		t.Fatalf("blas64 implementation is %T after importing backend/cpu, want gonum's default", impl)
	}
	defer func() {
		blas64.Use(gonum.Implementation{})
		lapack64.Use(lapackgonum.Implementation{})
	}()
	UseForGonum()
	got := blas64.Implementation()
	if got != blasImpl {
		t.Errorf("after UseForGonum blas64 implementation is %T, want the backend's %T", got, blasImpl)
	}
	if _, def := got.(gonum.Implementation); def && library != "gonum (pure Go)" {
		t.Errorf("UseForGonum left gonum's default BLAS although the backend runs %s", library)
	}
	t.Logf("backend BLAS %T (%s)", blasImpl, library)
}
