package stablemath

import (
	"math"
	"math/big"
	"testing"
)

// exactSoftplus and exactSigmoid evaluate the definitions in 200-bit arithmetic (e^x by its series after range
// reduction), an independent reference for the tails where the float64 formulas differ from the naive ones.
func bigExp(x float64) *big.Float {
	const prec = 200
	// e^x = (e^{x/2^k})^{2^k} with |x/2^k| < 1/2, series to convergence.
	k := 0
	for math.Abs(x)/math.Pow(2, float64(k)) > 0.5 {
		k++
	}
	r := new(big.Float).SetPrec(prec).SetFloat64(x / math.Pow(2, float64(k)))
	sum := new(big.Float).SetPrec(prec).SetInt64(1)
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	for n := 1; n < 80; n++ {
		term.Mul(term, r)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(n)))
		sum.Add(sum, term)
	}
	for ; k > 0; k-- {
		sum.Mul(sum, sum)
	}
	return sum
}

func TestSigmoidSoftplus(t *testing.T) {
	one := new(big.Float).SetPrec(200).SetInt64(1)
	for _, x := range []float64{-740, -700, -40, -20, -1, -1e-10, 0, 1e-10, 0.5, 1, 20, 40, 700} {
		e := bigExp(x)
		// σ(x) = e^x / (1 + e^x).
		want, _ := new(big.Float).Quo(e, new(big.Float).Add(one, e)).Float64()
		if got := Sigmoid(x); math.Abs(got-want) > 4e-16*want {
			t.Errorf("Sigmoid(%g) = %.17g, want %.17g", x, got, want)
		}
		sp := Softplus(x)
		if x <= -30 {
			// log(1 + e^x) = e^x (1 − e^x/2 + …): e^x to 1e-13 relative.
			ex, _ := e.Float64()
			if math.Abs(sp-ex) > 1e-13*ex {
				t.Errorf("Softplus(%g) = %.17g, want %.17g", x, sp, ex)
			}
			continue
		}
		// softplus(x) = log(1 + e^x): compared through e^{softplus} − 1 = e^x, avoiding a big-float logarithm.
		back := new(big.Float).Sub(bigExp(sp), one)
		rel, _ := new(big.Float).Quo(new(big.Float).Sub(back, e), e).Float64()
		if tol := 4e-16 * math.Max(1, sp); math.Abs(rel) > tol {
			t.Errorf("Softplus(%g) = %.17g: relative error of e^sp − 1 %.3g > %.3g", x, sp, rel, tol)
		}
	}
	for _, x := range []float64{710, 1e300} { // e^x overflows float64; the stable forms do not
		if Sigmoid(x) != 1 || Softplus(x) != x {
			t.Errorf("x = %g: Sigmoid %g, Softplus %g, want 1 and x", x, Sigmoid(x), Softplus(x))
		}
	}
	if Sigmoid(-1000) != 0 || Softplus(-1000) != 0 {
		t.Errorf("Sigmoid(-1000) = %g, Softplus(-1000) = %g, want 0", Sigmoid(-1000), Softplus(-1000))
	}
}
