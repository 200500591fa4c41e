package tensor

import (
	"errors"
	"fmt"
)

// ErrShape is the cause of every shape or stride error on user data.
var ErrShape = errors.New("shape mismatch")

// ErrNotFinite is the cause of an error about a NaN or an infinity in user data.
var ErrNotFinite = errors.New("not finite")

// shapeErr returns an error wrapping ErrShape with a description.
func shapeErr(format string, args ...any) error {
	return fmt.Errorf("tensor: %s: %w", fmt.Sprintf(format, args...), ErrShape)
}
