// Package numtest holds the comparisons numeric tests make against an independent reference.
package numtest

import "math"

// MaxRel returns max|a − b| / max(floor, max|b|), the norm-wise relative error of a against the reference b; floor
// keeps a reference near zero from inflating it (0: none). It returns +Inf for a NaN or infinity in either slice or
// a length mismatch, so that a test comparing the result with a tolerance fails rather than passing on a NaN (every
// comparison with NaN is false), and 0 when a and b are equal, even if b is all zeros.
func MaxRel(a, b []float64, floor float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	num, den := 0.0, floor
	for i := range b {
		if math.IsNaN(a[i]) || math.IsInf(a[i], 0) || math.IsNaN(b[i]) || math.IsInf(b[i], 0) {
			return math.Inf(1)
		}
		num = math.Max(num, math.Abs(a[i]-b[i]))
		den = math.Max(den, math.Abs(b[i]))
	}
	if num == 0 {
		return 0
	}
	return num / den
}
