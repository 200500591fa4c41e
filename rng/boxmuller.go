package rng

import "math"

// The Box–Muller transform of two uniforms, written with our own polynomials and an explicit order of roundings
// (every fused multiply-add is math.FMA, every other product is forced to round by a float64 conversion), so the
// result is a pure function of the two uniforms: the same on every CPU and every Go build (GOAMD64=v3 may otherwise
// fuse a*b+c), and reproducible bit for bit by a GPU kernel that uses __fma_rn, __dmul_rn and __dadd_rn in the same
// order (kernels/philox.cu). Both functions are within one ulp of the correctly rounded value (tested
// against 256-bit series in boxmuller_test.go); in scalar Go they cost about what math.Log and math.Sincos cost.

// Coefficients of the series 2·atanh(s) = 2s + s·Σ_{k≥1} 2s^{2k}/(2k+1), truncated after s^20 (the next term is
// below 1e-18 relative for |s| ≤ 3 − 2√2, the range left after the reduction of logUnit).
const (
	atanh3  = 0.66666666666666663
	atanh5  = 0.40000000000000002
	atanh7  = 0.2857142857142857
	atanh9  = 0.22222222222222221
	atanh11 = 0.18181818181818182
	atanh13 = 0.15384615384615385
	atanh15 = 0.13333333333333333
	atanh17 = 0.11764705882352941
	atanh19 = 0.10526315789473684
	atanh21 = 0.095238095238095233

	// ln 2 = ln2Hi + ln2Lo, ln2Hi with 32 significant bits so e·ln2Hi is exact for |e| < 2²¹.
	ln2Hi = 0x1.62e42ffp-01
	ln2Lo = -4.2009150726810846e-11
)

// logUnit returns ln u for u in (0, 1) (u normal, as every uniform of this package is).
//
// u = 2^e·m with m in [√½, √2); with f = m − 1 (exact) and s = f/(2+f), ln m = 2·atanh(s) = f − s·(f − T(s²)),
// using 2s = f − s·f and T(z) = Σ_k 2z^k/(2k+1). The large term f is exact and the correction is at most a fifth of
// it, so the rounding of s barely shows.
func logUnit(u float64) float64 {
	bits := math.Float64bits(u)
	e := int64(bits>>52) - 1023
	m := math.Float64frombits(bits&(1<<52-1) | 1023<<52) // in [1, 2)
	if m > math.Sqrt2 {
		m = math.Float64frombits(bits&(1<<52-1) | 1022<<52) // m/2, exactly
		e++
	}
	f := m - 1
	s := f / (2 + f)
	z := float64(s * s)
	p := math.FMA(z, atanh21, atanh19)
	p = math.FMA(z, p, atanh17)
	p = math.FMA(z, p, atanh15)
	p = math.FMA(z, p, atanh13)
	p = math.FMA(z, p, atanh11)
	p = math.FMA(z, p, atanh9)
	p = math.FMA(z, p, atanh7)
	p = math.FMA(z, p, atanh5)
	p = math.FMA(z, p, atanh3)
	t := float64(z * p)
	fe := float64(e)
	corr := math.FMA(s, f-t, -float64(fe*ln2Lo))
	return math.FMA(fe, ln2Hi, f-corr)
}

// Taylor coefficients of sin(πx/2) and cos(πx/2) in x for |x| ≤ ½ (the next terms are below 1e-19 and 3e-18
// relative). π/2 = halfPiHi + halfPiLo.
const (
	halfPiHi = 1.5707963267948966
	halfPiLo = 6.123233995736766e-17
	sin3     = -0.64596409750624628
	sin5     = 0.079692626246167048
	sin7     = -0.0046817541353186883
	sin9     = 0.00016044118478735983
	sin11    = -3.5988432352120852e-06
	sin13    = 5.6921729219679267e-08
	sin15    = -6.6880351098114677e-10
	sin17    = 6.0669357311061955e-12
	cos2     = -1.2337005501361697
	cos4     = 0.25366950790104803
	cos6     = -0.020863480763352961
	cos8     = 0.00091926027483942659
	cos10    = -2.5202042373060607e-05
	cos12    = 4.7108747788181717e-07
	cos14    = -6.3866030837918521e-09
	cos16    = 6.5659631149794728e-11
	cos18    = -5.2944002007346235e-13
)

// sincos2Pi returns sin(2πu) and cos(2πu) for u in [0, 1). The reduction is exact: 4u = q + x with q an integer
// and |x| ≤ ½, so 2πu = qπ/2 + xπ/2 and the quadrant q picks signs and swaps.
func sincos2Pi(u float64) (sin, cos float64) {
	t := 4 * u
	q := int64(t + 0.5)
	x := t - float64(q)
	z := float64(x * x)
	ps := math.FMA(z, sin17, sin15)
	ps = math.FMA(z, ps, sin13)
	ps = math.FMA(z, ps, sin11)
	ps = math.FMA(z, ps, sin9)
	ps = math.FMA(z, ps, sin7)
	ps = math.FMA(z, ps, sin5)
	ps = math.FMA(z, ps, sin3)
	sx := math.FMA(x, halfPiHi, float64(x*math.FMA(z, ps, halfPiLo)))
	pc := math.FMA(z, cos18, cos16)
	pc = math.FMA(z, pc, cos14)
	pc = math.FMA(z, pc, cos12)
	pc = math.FMA(z, pc, cos10)
	pc = math.FMA(z, pc, cos8)
	pc = math.FMA(z, pc, cos6)
	pc = math.FMA(z, pc, cos4)
	pc = math.FMA(z, pc, cos2)
	cx := math.FMA(z, pc, 1)
	switch q & 3 {
	case 0:
		return sx, cx
	case 1:
		return cx, -sx
	case 2:
		return -sx, -cx
	default:
		return -cx, sx
	}
}

// BoxMuller returns the Box–Muller pair (r·cos 2πu2, r·sin 2πu2), r = √(−2 ln u1), for u1 in (0, 1) and u2 in
// [0, 1), exactly as the generator computes normals 2n and 2n+1 from the two uniforms of block n. Backends with their
// own normal kernels test against it bit for bit.
func BoxMuller(u1, u2 float64) (even, odd float64) {
	r := math.Sqrt(-2 * logUnit(u1))
	s, c := sincos2Pi(u2)
	return float64(r * c), float64(r * s)
}
