// Package bigref holds high-precision references for the accuracy tests of the project's own elementary
// functions (rng's Box–Muller polynomials, the CPU backend's vector softplus and sigmoid): each is evaluated by its
// series in 256-bit arithmetic and rounded once to float64. Tests only; it is slow.
package bigref

import (
	"math"
	"math/big"
)

const prec = 256

var pi, _ = new(big.Float).SetPrec(prec).SetString(
	"3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798")

var ln2, _ = new(big.Float).SetPrec(prec).SetString(
	"0.693147180559945309417232121458176568075500134360255254120680009493393621969694715605863326996418687542")

func bigf(x float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(x) }

// Sincos2Pi returns sin(2πu), cos(2πu) correctly rounded (to within the 256-bit evaluation).
func Sincos2Pi(u float64) (float64, float64) {
	x := bigf(u)
	x.Mul(x, pi).Mul(x, bigf(2))
	x.Sub(x, pi) // x − π in [−π, π), so the series converge fast; sin(x) = −sin(x − π), cos(x) = −cos(x − π)
	x2 := new(big.Float).SetPrec(prec).Mul(x, x)
	sin, cos := new(big.Float).SetPrec(prec), new(big.Float).SetPrec(prec)
	ts, tc := new(big.Float).SetPrec(prec).Set(x), bigf(1)
	for k := 1; k < 80; k++ {
		sin.Add(sin, ts)
		cos.Add(cos, tc)
		ts.Mul(ts, x2).Quo(ts, bigf(float64(-(2*k)*(2*k+1))))
		tc.Mul(tc, x2).Quo(tc, bigf(float64(-(2*k-1)*(2*k))))
	}
	s, _ := sin.Neg(sin).Float64()
	c, _ := cos.Neg(cos).Float64()
	return s, c
}

// Log returns ln u correctly rounded.
func Log(u float64) float64 { return bigLog(bigf(u)) }

// bigLog returns ln x rounded to float64: x = m·2^e with m in [½, 1), ln m = 2·atanh((m−1)/(m+1)) summed to
// 256 bits.
func bigLog(x *big.Float) float64 {
	bm := new(big.Float).SetPrec(prec)
	e := x.MantExp(bm)
	s := new(big.Float).SetPrec(prec).Sub(bm, bigf(1))
	s.Quo(s, new(big.Float).SetPrec(prec).Add(bm, bigf(1)))
	s2 := new(big.Float).SetPrec(prec).Mul(s, s)
	sum, pw := new(big.Float).SetPrec(prec), new(big.Float).SetPrec(prec).Set(s)
	for k := 0; k < 120; k++ {
		sum.Add(sum, new(big.Float).SetPrec(prec).Quo(pw, bigf(float64(2*k+1))))
		pw.Mul(pw, s2)
	}
	sum.Mul(sum, bigf(2))
	sum.Add(sum, new(big.Float).SetPrec(prec).Mul(ln2, bigf(float64(e))))
	f, _ := sum.Float64()
	return f
}

// Ulps is |got − want| in units of the spacing of float64 at want.
func Ulps(got, want float64) float64 {
	if got == want {
		return 0
	}
	a := math.Abs(want)
	return math.Abs(got-want) / (math.Nextafter(a, math.Inf(1)) - a)
}

// Exp returns e^x correctly rounded.
func Exp(x float64) float64 {
	f, _ := bigExp(x).Float64()
	return f
}

// bigExp returns e^x to 256 bits: x = k·ln 2 + r with |r| ≤ ln 2/2, e^r by its series on r/1024 squared back ten
// times, then scaled by 2^k.
func bigExp(x float64) *big.Float {
	k := math.Round(x / math.Ln2)
	r := new(big.Float).SetPrec(prec).Sub(bigf(x), new(big.Float).SetPrec(prec).Mul(ln2, bigf(k)))
	r.Quo(r, bigf(1024))
	sum, term := bigf(1), bigf(1)
	for n := 1; n < 40; n++ {
		term.Mul(term, r).Quo(term, bigf(float64(n)))
		sum.Add(sum, term)
	}
	for i := 0; i < 10; i++ {
		sum.Mul(sum, sum)
	}
	return sum.SetMantExp(sum, int(k))
}

// Log1pExp returns log(1 + e^x) (softplus) correctly rounded, from Exp and Log in 256-bit arithmetic.
func Log1pExp(x float64) float64 {
	y := bigExp(x)
	if x > -10 {
		return bigLog(y.Add(y, bigf(1)))
	}
	// 1 + y would drop y at 256 bits for x below about −177: sum y − y²/2 + y³/3 − … instead (y < 5e-5).
	sum, pw := new(big.Float).SetPrec(prec), new(big.Float).SetPrec(prec).Set(y)
	for k := 1; k < 40; k++ {
		t := new(big.Float).SetPrec(prec).Quo(pw, bigf(float64(k)))
		if k%2 == 0 {
			t.Neg(t)
		}
		sum.Add(sum, t)
		pw.Mul(pw, y)
	}
	f, _ := sum.Float64()
	return f
}

// Sigmoid returns 1/(1 + e^{−x}) correctly rounded.
func Sigmoid(x float64) float64 {
	e := bigExp(-x)
	e.Add(e, bigf(1))
	f, _ := new(big.Float).SetPrec(prec).Quo(bigf(1), e).Float64()
	return f
}

// Tanh returns tanh x correctly rounded: (1 − e^{−2|x|})/(1 + e^{−2|x|}) in 256-bit arithmetic, with the sign of x.
// The subtraction loses about log₂(1/|x|) of the 256 bits; below |x| = 10⁻²⁰, where tanh x rounds to x, it returns x.
func Tanh(x float64) float64 {
	a := math.Abs(x)
	if a < 1e-20 || math.IsNaN(x) {
		return x
	}
	e := bigExp(-2 * a)
	num := new(big.Float).SetPrec(prec).Sub(bigf(1), e)
	f, _ := num.Quo(num, e.Add(e, bigf(1))).Float64()
	return math.Copysign(f, x)
}
