package lrvga

import (
	"math"

	"github.com/geovb/geovb/internal/stablemath"
)

// BetaProbit is √(8/π), the scale of the probit approximation σ(a) ≈ Φ(a/β) of (52).
var BetaProbit = math.Sqrt(8 / math.Pi)

// Sigmoid is σ(z) = 1/(1+e^{−z}) without overflow.
func Sigmoid(z float64) float64 { return stablemath.Sigmoid(z) }

// SigmoidPrime is σ'(z) = σ(z)σ(−z), accurate in both tails.
func SigmoidPrime(z float64) float64 { return Sigmoid(z) * Sigmoid(-z) }

// Softplus is log(1 + e^z) without overflow.
func Softplus(z float64) float64 { return stablemath.Softplus(z) }

// ProbitK is k(ν) = β/√(ν + β²), β = √(8/π): E_{a~N(m,ν)}[σ(a)] ≈ σ(k m) (52).
func ProbitK(nu float64) float64 { return BetaProbit / math.Sqrt(nu+BetaProbit*BetaProbit) }

// ImplicitSolution is the root (α, ν) = (xᵀμ_t, xᵀP_tx) of the implicit logistic R-VGA system.
type ImplicitSolution struct {
	Alpha, Nu float64
	F, G      float64 // residuals f(α, ν), g(α, ν) at the root
}

// ImplicitResiduals evaluates the scalar system in (α, ν) (from (53)–(54) with Sherman–Morrison):
//
//	f(α,ν) = α − α₀ − ν₀ (y − σ(k(ν) α))
//	g(α,ν) = ν − ν₀ / (1 + ν₀ k(ν) σ'(k(ν) α))
func ImplicitResiduals(alpha, nu, a0, nu0, y float64) (f, g float64) {
	k := ProbitK(nu)
	f = alpha - a0 - nu0*(y-Sigmoid(k*alpha))
	g = nu - nu0/(1+nu0*k*SigmoidPrime(k*alpha))
	return f, g
}

// SolveImplicit solves the implicit scalar system to machine precision. For fixed ν, f is strictly increasing in
// α, so α(ν) is found by bisection in the bracket [α₀ + ν₀(y−1), α₀ + ν₀y]; then h(ν) = g(α(ν), ν) changes sign
// on [4ν₀/(4+ν₀), ν₀] (k σ' ≤ 1/4), and ν is found by bisection too. Both stop at adjacent floating-point
// numbers (about 60 halvings each), replacing the code's MINPACK solve at tolerance 1e-6.
func SolveImplicit(a0, nu0, y float64) ImplicitSolution {
	if nu0 <= 0 {
		return ImplicitSolution{Alpha: a0, Nu: 0}
	}
	alphaOf := func(nu float64) float64 {
		lo, hi := a0+nu0*(y-1), a0+nu0*y
		return bisect(lo, hi, func(a float64) float64 { f, _ := ImplicitResiduals(a, nu, a0, nu0, y); return f })
	}
	h := func(nu float64) float64 {
		_, g := ImplicitResiduals(alphaOf(nu), nu, a0, nu0, y)
		return g
	}
	nu := bisect(4*nu0/(4+nu0), nu0, h)
	alpha := alphaOf(nu)
	f, g := ImplicitResiduals(alpha, nu, a0, nu0, y)
	return ImplicitSolution{Alpha: alpha, Nu: nu, F: f, G: g}
}

// bisect returns a root of the non-decreasing-through-zero function fn on [lo, hi] (fn(lo) ≤ 0 ≤ fn(hi)), to
// adjacent floats; of the two final end points it returns the one with the smaller |fn|.
func bisect(lo, hi float64, fn func(float64) float64) float64 {
	flo, fhi := fn(lo), fn(hi)
	if flo >= 0 {
		return lo
	}
	if fhi <= 0 {
		return hi
	}
	for i := 0; i < 200; i++ {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		fm := fn(mid)
		switch {
		case fm == 0:
			return mid
		case fm < 0:
			lo, flo = mid, fm
		default:
			hi, fhi = mid, fm
		}
	}
	if -flo < fhi {
		return lo
	}
	return hi
}
