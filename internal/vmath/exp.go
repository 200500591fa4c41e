package vmath

import "math"

// Exp sets dst[i] = math.Exp(src[i]) bit for bit. On AVX2/FMA the kernel (exp_amd64.s) repeats, four lanes at a
// time, the operations of the Go runtime's amd64 exponential on its FMA path — the one math.Exp takes on every CPU
// that runs the kernel: k = round(x·log2 e), r = (x − k·ln2)/16 with ln 2 in two parts, a degree-8 Taylor
// polynomial, four squarings of (1 + r')², and the scaling by 2^k — so the results are the same bits, not merely
// close. Groups of four holding an argument beyond ±708 or a NaN, and the tail of the row, go to math.Exp.
// dst may be src.
func Exp(dst, src []float64) {
	exact(dst, src, func(d, s *float64, n int) int { return expAVX2(d, s, n, &expConsts) }, math.Exp)
}

// exact runs kernel over the longest prefix of the row whose length is a multiple of 4, and scalar on each group of
// four the kernel stops at (it returns how many elements it wrote) and on the rest of the row.
func exact(dst, src []float64, kernel func(dst, src *float64, n int) int, scalar func(float64) float64) {
	src = src[:len(dst)]
	i := 0
	if UseFMA {
		n4 := len(dst) &^ 3
		for i < n4 {
			i += kernel(&dst[i], &src[i], n4-i)
			if i < n4 { // a group the kernel left: an argument out of its range
				for j := i; j < i+4; j++ {
					dst[j] = scalar(src[j])
				}
				i += 4
			}
		}
	}
	for ; i < len(dst); i++ {
		dst[i] = scalar(src[i])
	}
}

// The constants of the runtime's exponential (math/exp_amd64.s), each repeated over the four lanes.
const (
	expLimit = 708 // |x| ≤ 708: 2^k stays a normal number (|k| ≤ 1021) and e^x neither overflows nor goes subnormal
	expLog2E = 1.4426950408889634073599246810018920
	expLn2U  = 0.69314718055966295651160180568695068359375
	expLn2L  = 0.28235290563031577122588448175013436025525412068e-12
)

var expConsts = func() (t [15][4]uint64) {
	vals := []uint64{
		0x7fffffffffffffff, // |x| mask
		math.Float64bits(expLimit),
		math.Float64bits(expLog2E),
		math.Float64bits(expLn2U),
		math.Float64bits(expLn2L),
		math.Float64bits(0.0625),
		math.Float64bits(2.4801587301587301587e-5), // 1/8!
		math.Float64bits(1.9841269841269841270e-4), // 1/7!
		math.Float64bits(1.3888888888888888889e-3), // 1/6!
		math.Float64bits(8.3333333333333333333e-3), // 1/5!
		math.Float64bits(4.1666666666666666667e-2), // 1/4!
		math.Float64bits(1.6666666666666666667e-1), // 1/3!
		math.Float64bits(0.5),
		math.Float64bits(1.0),
		math.Float64bits(2.0),
	}
	for i, v := range vals {
		t[i] = [4]uint64{v, v, v, v}
	}
	return t
}()
