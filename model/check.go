package model

import (
	"fmt"
	"math"
)

// GradientCheck is the outcome of comparing a gradient with central finite differences.
type GradientCheck struct {
	Coord    int     // the coordinate with the largest error
	Analytic float64 // the model's ∂/∂x_Coord log p
	Numeric  float64 // its central-difference estimate
	Err      float64 // |Analytic − Numeric| / max(1, |Numeric|), the largest over the coordinates
}

// CompareGradient evaluates m's gradient at x and compares each coordinate with the central difference
// (f(x + h e_i) − f(x − h e_i)) / 2h, h = step·max(1, |x_i|) (step 0: 1e-5, which balances truncation and rounding
// error for a smooth f of moderate curvature). It returns the worst coordinate. x is not changed.
func CompareGradient(m Density, x []float64, step float64) (GradientCheck, error) {
	d := m.Dim()
	if len(x) != d {
		return GradientCheck{}, fmt.Errorf("model: CompareGradient: len(x) = %d, want %d", len(x), d)
	}
	if step == 0 {
		step = 1e-5
	}
	if !(step > 0) || math.IsInf(step, 0) {
		return GradientCheck{}, fmt.Errorf("model: CompareGradient: step %v must be positive and finite", step)
	}
	g := make([]float64, d)
	scratch := make([]float64, d)
	xx := append([]float64(nil), x...)
	if _, err := m.LogDensity(g, xx); err != nil {
		return GradientCheck{}, fmt.Errorf("model: CompareGradient at x: %w", err)
	}
	worst := GradientCheck{Coord: -1, Err: -1}
	for i := range xx {
		h := step * math.Max(1, math.Abs(x[i]))
		xx[i] = x[i] + h
		fp, err := m.LogDensity(scratch, xx)
		if err != nil {
			return GradientCheck{}, fmt.Errorf("model: CompareGradient at x + h·e_%d: %w", i, err)
		}
		xx[i] = x[i] - h
		fm, err := m.LogDensity(scratch, xx)
		if err != nil {
			return GradientCheck{}, fmt.Errorf("model: CompareGradient at x − h·e_%d: %w", i, err)
		}
		xx[i] = x[i]
		num := (fp - fm) / (2 * h)
		e := math.Abs(g[i]-num) / math.Max(1, math.Abs(num))
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		if e > worst.Err {
			worst = GradientCheck{Coord: i, Analytic: g[i], Numeric: num, Err: e}
		}
	}
	return worst, nil
}

// CheckGradient returns an error wrapping ErrGradient when some coordinate of m's gradient at x differs from its
// central finite difference (step 0: the default of CompareGradient) by more than tol, relative to
// max(1, |difference quotient|). A typical tol for a smooth model with the default step is 1e-6.
func CheckGradient(m Density, x []float64, step, tol float64) error {
	c, err := CompareGradient(m, x, step)
	if err != nil {
		return err
	}
	if c.Err > tol {
		return fmt.Errorf("model: ∂/∂x[%d] log p = %.10g, finite differences %.10g (error %.3g > %.3g): %w",
			c.Coord, c.Analytic, c.Numeric, c.Err, tol, ErrGradient)
	}
	return nil
}
