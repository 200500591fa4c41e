// Package vmath evaluates elementary functions over a row, four lanes at a time on AVX2/FMA (special_amd64.s,
// exp_amd64.s, log_amd64.s), for the CPU backend's Map and for the host models: softplus, sigmoid and tanh, and the
// exponential and the logarithm with math.Exp's and math.Log's own bits (exp.go, log.go). e^{-|x|} is computed by a reduction to
// [−ln2/2, ln2/2] and a degree-13 Taylor polynomial scaled by 2^n, log1p by the atanh series of the logarithm with
// the rounding of 1 + y corrected. All are within a few ulps of the correctly rounded value. Arguments the kernels
// do not take (softplus and sigmoid: |x| > 708, where e^{-|x|} leaves the normal range; tanh: |x| > 354; NaN) go
// to the caller's scalar function, so tails and extremes give exactly what the scalar path gives, in place or not.
//
// It is a package of its own, outside the CPU backend, because that backend uses cgo under the netlib tag (a cgo
// package cannot contain Go assembly) and because models/nfa evaluates tanh with it too.
package vmath

import (
	"math"
	"math/big"
)

// Softplus sets dst[i] = log(1 + e^{x}) with x = alpha·src[i]; scalar is the reference used for the tail of the row
// and for extreme or non-finite arguments.
func Softplus(dst, src []float64, alpha float64, scalar func(float64) float64) {
	apply(dst, src, alpha, scalar, softplusKernel, beyondLimit)
}

// Sigmoid sets dst[i] = 1/(1 + e^{−x}) with x = alpha·src[i], as Softplus.
func Sigmoid(dst, src []float64, alpha float64, scalar func(float64) float64) {
	apply(dst, src, alpha, scalar, sigmoidKernel, beyondLimit)
}

// Tanh sets dst[i] = tanh(x) with x = alpha·src[i], within 4 ulps of the correctly rounded value (TestSpecial); scalar
// is the reference used for the tail of the row and for |x| > 354 or NaN. The kernel takes e^{−2|x|} from the
// exponential of Softplus and Sigmoid, and tanh|x| = −m/(2 + m) with m = e^{−2|x|} − 1 (no cancellation: m ≤ −0.63)
// for |x| ≥ ½, and for |x| < ½ with m = expm1(−2|x|) by its Taylor series to degree 19 (relative error below
// 2⁻⁵³ on [−1, 0]), so that tanh keeps its relative accuracy near 0.
func Tanh(dst, src []float64, alpha float64, scalar func(float64) float64) {
	apply(dst, src, alpha, scalar, tanhKernel, beyondOne)
}

// apply runs kernel over the longest prefix of the row whose length is a multiple of 4 and scalar over the rest.
// When the kernel reports lanes it could not take, it has stored in them a value from which flagged recovers the
// argument (ok); flagged tells them from computed lanes by range alone, so reading dst, not src, keeps this right
// when dst is src.
func apply(dst, src []float64, alpha float64, scalar func(float64) float64,
	kernel func(dst, src *float64, n int, alpha float64) bool, flagged func(v float64) (x float64, ok bool)) {
	src = src[:len(dst)]
	n4 := 0
	if UseFMA {
		n4 = len(dst) &^ 3
	}
	if n4 > 0 && kernel(&dst[0], &src[0], n4, alpha) {
		for i := 0; i < n4; i++ {
			if x, ok := flagged(dst[i]); ok {
				dst[i] = scalar(x)
			}
		}
	}
	for i := n4; i < len(dst); i++ {
		dst[i] = scalar(alpha * src[i])
	}
}

func softplusKernel(dst, src *float64, n int, alpha float64) bool {
	return softplusAVX2(dst, src, n, alpha, &specialConsts)
}

func sigmoidKernel(dst, src *float64, n int, alpha float64) bool {
	return sigmoidAVX2(dst, src, n, alpha, &specialConsts)
}

func tanhKernel(dst, src *float64, n int, alpha float64) bool {
	return tanhAVX2(dst, src, n, alpha, &specialConsts, &tanhCoef)
}

// beyondLimit: softplus and sigmoid store x = alpha·src itself in a flagged lane; every computed lane holds a value
// within [−708, 708] (softplus of |x| ≤ 708, or a sigmoid).
func beyondLimit(v float64) (float64, bool) { return v, !(math.Abs(v) <= specialLimit) }

// beyondOne: tanh stores 2x in a flagged lane (|2x| > 708 or NaN); every computed lane holds a value in [−1, 1], and
// 2x/2 = x exactly.
func beyondOne(v float64) (float64, bool) { return v / 2, !(math.Abs(v) <= 1) }

// specialLimit bounds |x| for the vector path: e^{-708} is still a normal number.
const specialLimit = 708

// tanhCoef holds 1/k!, k = 19 down to 1, correctly rounded: the Taylor coefficients of expm1 in Horner order.
var tanhCoef = func() (t [19][4]uint64) {
	fact := big.NewInt(1)
	for k := 1; k <= 19; k++ {
		fact.Mul(fact, big.NewInt(int64(k)))
		f := new(big.Float).SetPrec(256).SetInt(fact)
		c, _ := f.Quo(big.NewFloat(1).SetPrec(256), f).Float64()
		v := math.Float64bits(c)
		t[19-k] = [4]uint64{v, v, v, v}
	}
	return t
}()

// Taylor coefficients of e^r (1/k!) and of 2·atanh (2/(2k+1)); ln 2 split so that n·ln2Hi is exact.
var specialConsts = func() (t [34][4]uint64) {
	f := math.Float64bits
	vals := []uint64{
		1<<63 - 1, f(1.4426950408889634), f(0x1.62e42ffp-01), f(-4.2009150726810846e-11), f(0x1p52 + 1023), f(specialLimit),
		f(1.6059043836821613e-10), f(2.08767569878681e-09), f(2.505210838544172e-08), f(2.7557319223985888e-07),
		f(2.7557319223985893e-06), f(2.4801587301587302e-05), f(0.00019841269841269841), f(0.0013888888888888889),
		f(0.0083333333333333332), f(0.041666666666666664), f(0.16666666666666666), f(0.5), f(1), f(1),
		f(1), f(math.Sqrt2), f(0.5), f(2),
		f(0.095238095238095233), f(0.10526315789473684), f(0.11764705882352941), f(0.13333333333333333),
		f(0.15384615384615385), f(0.18181818181818182), f(0.22222222222222221), f(0.2857142857142857),
		f(0.40000000000000002), f(0.66666666666666663),
	}
	for i, v := range vals {
		t[i] = [4]uint64{v, v, v, v}
	}
	return t
}()
