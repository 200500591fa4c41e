// Package stablemath holds the logistic functions the models share, written so that neither overflows nor loses
// its tails: σ(x) = 1/(1+e^{−x}) and softplus(x) = log(1+eˣ) for any finite x. (The backends' element-wise
// Sigmoid and Softplus maps are separate: they are part of the backend contract and have GPU kernels.)
package stablemath

import "math"

// Sigmoid is σ(x) = 1/(1+e^{−x}), evaluated through e^{−|x|} so that it never overflows and keeps full relative
// accuracy in the lower tail.
func Sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// Softplus is log(1+eˣ) = x + log(1+e^{−x}) for x > 0, so that it never overflows and keeps full relative
// accuracy in the lower tail (where it equals eˣ to rounding).
func Softplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}
