package backendtest

import (
	"errors"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// Helpers shared by the test groups of every family.

// normalDense returns a rows×cols matrix of N(0, scale²) entries.
func normalDense(r *rand.Rand, rows, cols int, scale float64) *mat.Dense {
	m := mat.NewDense(rows, cols, nil)
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			m.Set(i, j, scale*r.NormFloat64())
		}
	}
	return m
}

// wantErr fails unless err wraps cause and is an *OpError; when operand is not empty it must be the error's
// operand, and when batch ≥ 0 its batch.
func wantErr(t testing.TB, what string, err, cause error, operand string, batch int) {
	t.Helper()
	if !errors.Is(err, cause) {
		t.Fatalf("%s: error %v, want one wrapping %v", what, err, cause)
	}
	var oe *backend.OpError
	if !errors.As(err, &oe) {
		t.Fatalf("%s: error %v is not an *OpError", what, err)
	}
	if operand != "" && oe.Operand != operand {
		t.Fatalf("%s: error names operand %q, want %q (%v)", what, oe.Operand, operand, err)
	}
	if batch >= 0 && oe.Batch != batch {
		t.Fatalf("%s: error names batch %d, want %d (%v)", what, oe.Batch, batch, err)
	}
}

// impl is one implementation of a hot operation under test.
type impl[F any] struct {
	name string
	fn   F
}

// implsOf returns the operation's reference and every kernel b registers for shape s: each is checked.
func implsOf[F any](op *backend.Op[F], b backend.Backend, s tensor.Shape) []impl[F] {
	out := []impl[F]{{"reference", op.Reference()}}
	for _, k := range op.Kernels(b, s) {
		out = append(out, impl[F]{k.Name, k.Fn})
	}
	return out
}
