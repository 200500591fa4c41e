package rcgplot

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// CheckSeeds rejects a -seeds below 1.
func CheckSeeds(n int) error {
	if n < 1 {
		return fmt.Errorf("-seeds %d: want at least 1", n)
	}
	return nil
}

// CheckSpacing rejects a component spacing -r that is not finite and positive: mog.Synthetic centres the
// components at (0, 0) and (±R, ±R), so R = 0 puts them all in one place and −R is R.
func CheckSpacing(R float64) error {
	if !(R > 0) || math.IsInf(R, 0) {
		return fmt.Errorf("-r %v: want a finite spacing above 0", R)
	}
	return nil
}

// ParseSpacings reads a comma-separated list of spacings (spaces allowed), each as CheckSpacing wants.
func ParseSpacings(list string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(list, ",") {
		R, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, fmt.Errorf("-r %q: %q is not a number", list, f)
		}
		if err := CheckSpacing(R); err != nil {
			return nil, err
		}
		out = append(out, R)
	}
	return out, nil
}

// CheckNonNegative rejects a value of the flag name (a tolerance, a cap factor) that is not finite and at least 0.
func CheckNonNegative(name string, v float64) error {
	if !(v >= 0) || math.IsInf(v, 0) {
		return fmt.Errorf("-%s %v: want a finite value of at least 0", name, v)
	}
	return nil
}

// CheckLimit rejects a negative CPU-time cap -limit (0: none).
func CheckLimit(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("-limit %v: want at least 0 (0: none)", d)
	}
	return nil
}
