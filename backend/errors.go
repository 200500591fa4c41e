package backend

import (
	"errors"
	"fmt"

	"github.com/geovb/geovb/tensor"
)

// Causes of the errors the backends return. Test with errors.Is.
var (
	// ErrShape: operand shapes or strides do not fit the operation.
	ErrShape = tensor.ErrShape
	// ErrNotFinite: a NaN or an infinity in user data.
	ErrNotFinite = tensor.ErrNotFinite
	// ErrNotPositiveDefinite: a matrix that must be symmetric positive definite is not (numerically).
	ErrNotPositiveDefinite = errors.New("not positive definite")
	// ErrDomain: a value outside the domain an operation requires (zero or negative Ψ, p > n for Stiefel, …).
	ErrDomain = errors.New("value out of domain")
	// ErrNoDevice: the requested backend cannot start (no device, no driver, library missing).
	ErrNoDevice = errors.New("backend unavailable")
	// ErrOutOfMemory: an allocation did not fit.
	ErrOutOfMemory = errors.New("out of memory")
	// ErrForeign: a tensor handed to a backend lives in another backend's memory, or in plain host memory where the
	// backend (a GPU, or the CPU under GEOVB_CPU_STRICT=1) needs its own, or was freed.
	ErrForeign = errors.New("tensor owned by another backend")
	// ErrNoConvergence: an iterative method (an eigen-solver) did not converge.
	ErrNoConvergence = errors.New("no convergence")
)

// OpError is the error every operation returns: which operation, which operand, which batch item, and why.
type OpError struct {
	Op      string // operation name, e.g. "potrf" or "lowrank.solve"
	Operand string // operand at fault, e.g. "a", "psi"; empty when the whole call is at fault
	Batch   int    // batch index at fault, or -1
	Detail  string // human-readable specifics
	Err     error  // one of the Err… causes above (or a lower-level error)
}

func (e *OpError) Error() string {
	s := "geovb: " + e.Op
	if e.Operand != "" {
		s += ": operand " + e.Operand
	}
	if e.Batch >= 0 {
		s += fmt.Sprintf(" (batch %d)", e.Batch)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s + ": " + e.Err.Error()
}

func (e *OpError) Unwrap() error { return e.Err }

// Errorf returns an *OpError for op and operand (batch -1) with cause err and a formatted detail.
func Errorf(op, operand string, err error, format string, args ...any) error {
	return &OpError{Op: op, Operand: operand, Batch: -1, Detail: fmt.Sprintf(format, args...), Err: err}
}

// BatchErrorf is Errorf for one batch item.
func BatchErrorf(op, operand string, batch int, err error, format string, args ...any) error {
	return &OpError{Op: op, Operand: operand, Batch: batch, Detail: fmt.Sprintf(format, args...), Err: err}
}
