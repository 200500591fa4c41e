package vmath

import "math"

// Log sets dst[i] = math.Log(src[i]) bit for bit. On AVX2/FMA the kernel (log_amd64.s) repeats, four lanes at a
// time, the operations of the Go runtime's amd64 logarithm: x = f1·2^k with f1 in [½, 1) from the bits, f1 doubled
// (and k lowered) when f1 ≤ √2/2, s = f/(2 + f) with f = f1 − 1, the two polynomials in s⁴ and the final sum with
// ln 2 in two parts — no FMA, as there. Groups of four holding an argument that is not a positive normal number
// (zero, negative, subnormal, +Inf, NaN) go to math.Log, as does the tail of the row. dst may be src.
func Log(dst, src []float64) {
	exact(dst, src, func(d, s *float64, n int) int { return logAVX2(d, s, n, &logConsts) }, math.Log)
}

// The constants of the runtime's logarithm (math/log_amd64.s), each repeated over the four lanes.
var logConsts = func() (t [18][4]uint64) {
	vals := []uint64{
		0x0010000000000000, // smallest normal
		0x7fefffffffffffff, // largest finite
		0x000fffffffffffff, // fraction mask
		0x3fe0000000000000, // 0.5: the exponent of f1, and hfsq's factor
		0x3fe,              // exponent bias − 1, as an integer
		0x4338000000000000, // 2^52 + 2^51: small integers to doubles
		math.Float64bits(7.07106781186547524401e-01), // √2/2
		math.Float64bits(1.0),
		math.Float64bits(2.0),
		0x3FE5555555555593, // L1
		0x3FD999999997FA04, // L2
		0x3FD2492494229359, // L3
		0x3FCC71C51D8E78AF, // L4
		0x3FC7466496CB03DE, // L5
		0x3FC39A09D078C69F, // L6
		0x3FC2F112DF3E5244, // L7
		0x3fe62e42fee00000, // ln 2, high part
		0x3dea39ef35793c76, // ln 2, low part
	}
	for i, v := range vals {
		t[i] = [4]uint64{v, v, v, v}
	}
	return t
}()
