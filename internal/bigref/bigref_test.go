package bigref

import (
	"math"
	"testing"
)

// The references against package math (itself within 1 ulp) and exact values: every function within 1 ulp of math
// on a grid, exact where the value is a representable constant.
func TestAgainstMath(t *testing.T) {
	for x := -700.0; x <= 700; x += 7.3 {
		if d := Ulps(Exp(x), math.Exp(x)); d > 1 {
			t.Fatalf("Exp(%v) = %v, math %v", x, Exp(x), math.Exp(x))
		}
		if x > 0 {
			if d := Ulps(Log(x), math.Log(x)); d > 1 {
				t.Fatalf("Log(%v) = %v, math %v", x, Log(x), math.Log(x))
			}
		}
		if x < 30 {
			if d := Ulps(Log1pExp(x), math.Log1p(math.Exp(x))); d > 2 {
				t.Fatalf("Log1pExp(%v) = %v, math %v", x, Log1pExp(x), math.Log1p(math.Exp(x)))
			}
		}
		if d := Ulps(Sigmoid(x), 1/(1+math.Exp(-x))); x > -30 && d > 2 {
			t.Fatalf("Sigmoid(%v) = %v, math %v", x, Sigmoid(x), 1/(1+math.Exp(-x)))
		}
	}
	for _, x := range []float64{1e-300, 1e-19, 1e-12, 3e-5, 0.01, 0.3, 0.5, 0.625, 1, 2.5, 7, 19, 22, 400} {
		for _, v := range []float64{x, -x} {
			if d := Ulps(Tanh(v), math.Tanh(v)); d > 2 {
				t.Fatalf("Tanh(%v) = %v, math %v", v, Tanh(v), math.Tanh(v))
			}
		}
	}
	s, c := Sincos2Pi(0.125)
	if Ulps(s, math.Sqrt2/2) > 1 || Ulps(c, math.Sqrt2/2) > 1 || Log(0.5) != -math.Ln2 || Exp(0) != 1 || Log1pExp(0) != math.Ln2 ||
		Tanh(0) != 0 {
		t.Fatalf("constants: sincos(π/4) %v %v, ln ½ %v, e⁰ %v, softplus(0) %v", s, c, Log(0.5), Exp(0), Log1pExp(0))
	}
}
