package rng

import (
	"math"
	"math/big"
)

// High-precision references for the accuracy tests: sin, cos and ln evaluated by their series in 256-bit
// arithmetic, then rounded once to float64.

const refPrec = 256

var refPi, _ = new(big.Float).SetPrec(refPrec).SetString(
	"3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798")

var refLn2, _ = new(big.Float).SetPrec(refPrec).SetString(
	"0.693147180559945309417232121458176568075500134360255254120680009493393621969694715605863326996418687542")

func bigf(x float64) *big.Float { return new(big.Float).SetPrec(refPrec).SetFloat64(x) }

// refSincos2Pi returns sin(2πu), cos(2πu) correctly rounded (to within the 256-bit evaluation).
func refSincos2Pi(u float64) (float64, float64) {
	x := bigf(u)
	x.Mul(x, refPi).Mul(x, bigf(2))
	x.Sub(x, refPi) // x − π in [−π, π), so the series converge fast; sin(x) = −sin(x − π), cos(x) = −cos(x − π)
	x2 := new(big.Float).SetPrec(refPrec).Mul(x, x)
	sin, cos := new(big.Float).SetPrec(refPrec), new(big.Float).SetPrec(refPrec)
	ts, tc := new(big.Float).SetPrec(refPrec).Set(x), bigf(1)
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

// refLog returns ln u correctly rounded: u = 2^e·m, ln m = 2·atanh((m−1)/(m+1)) summed to 256 bits.
func refLog(u float64) float64 {
	m, e := math.Frexp(u)
	bm := bigf(m)
	s := new(big.Float).SetPrec(refPrec).Sub(bm, bigf(1))
	s.Quo(s, new(big.Float).SetPrec(refPrec).Add(bm, bigf(1)))
	s2 := new(big.Float).SetPrec(refPrec).Mul(s, s)
	sum, pw := new(big.Float).SetPrec(refPrec), new(big.Float).SetPrec(refPrec).Set(s)
	for k := 0; k < 120; k++ {
		sum.Add(sum, new(big.Float).SetPrec(refPrec).Quo(pw, bigf(float64(2*k+1))))
		pw.Mul(pw, s2)
	}
	sum.Mul(sum, bigf(2))
	sum.Add(sum, new(big.Float).SetPrec(refPrec).Mul(refLn2, bigf(float64(e))))
	f, _ := sum.Float64()
	return f
}

// ulps is |got − want| in units of the spacing of float64 at want.
func ulps(got, want float64) float64 {
	if got == want {
		return 0
	}
	a := math.Abs(want)
	return math.Abs(got-want) / (math.Nextafter(a, math.Inf(1)) - a)
}
