package samvi

import "math"

// trigamma returns ψ′(x) = d²/dx² log Γ(x) for x > 0: the recurrence ψ′(x) = ψ′(x+1) + 1/x² up to x ≥ 10, then
// the asymptotic series ψ′(x) ~ 1/x + 1/(2x²) + Σ_{j=1..7} B_{2j}/x^{2j+1} (Abramowitz & Stegun 6.4.12), whose
// first omitted term at x = 10 is about 1e-16 relative.
func trigamma(x float64) float64 {
	if !(x > 0) {
		return math.NaN()
	}
	s := 0.0
	for x < 10 {
		s += 1 / (x * x)
		x++
	}
	z := 1 / (x * x)
	// B₂ = 1/6, B₄ = −1/30, B₆ = 1/42, B₈ = −1/30, B₁₀ = 5/66, B₁₂ = −691/2730, B₁₄ = 7/6.
	series := 1/x + z/2 + z/x*(1.0/6+z*(-1.0/30+z*(1.0/42+z*(-1.0/30+z*(5.0/66+z*(-691.0/2730+z*7.0/6))))))
	return s + series
}
