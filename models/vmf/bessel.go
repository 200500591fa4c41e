package vmf

import "math"

// debyeMinNu is the order from which the four-term Debye expansion alone is accurate to about 1e-13 in log I
// (its error falls like ν⁻⁵; about 7e-11 at ν = 49). Lower orders start there and recur downwards.
const debyeMinNu = 200

// LogBesselI returns log I_ν(x), the logarithm of the modified Bessel function of the first kind, for ν ≥ 0 and
// x > 0, in log space so that it neither overflows (x ≫ 700) nor underflows (ν ≫ x).
// x = 0 gives 0 for ν = 0 and −Inf otherwise; invalid arguments give NaN.
func LogBesselI(nu, x float64) float64 {
	l, _ := logBesselIRatio(nu, x)
	return l
}

// logBesselIRatio returns log I_ν(x) and the ratio I_{ν+1}(x)/I_ν(x).
//
// For ν ≥ debyeMinNu both come from the Debye uniform expansion. Below, the expansion is evaluated at
// ν₀ = ν + N ≥ debyeMinNu and the three-term recurrence I_{k−1} = (2k/x) I_k + I_{k+1} is run downwards on the
// ratios R_k = I_{k−1}/I_k = 2k/x + 1/R_{k+1}: every term is positive, so the recurrence is stable and
// log I_ν = log I_{ν₀} + Σ_{k=ν+1}^{ν₀} log R_k.
func logBesselIRatio(nu, x float64) (logI, ratio float64) {
	switch {
	case math.IsNaN(nu) || math.IsNaN(x) || nu < 0 || x < 0 || math.IsInf(nu, 0):
		return math.NaN(), math.NaN()
	case x == 0:
		if nu == 0 {
			return 0, 0
		}
		return math.Inf(-1), 0
	case math.IsInf(x, 1):
		return math.Inf(1), 1
	}
	if x <= seriesMaxX && nu < debyeMinNu {
		l0, s0 := besselISeriesScaled(nu, x)
		_, s1 := besselISeriesScaled(nu+1, x)
		// I_{ν+1}/I_ν = (x/2)/(ν+1) · S_{ν+1}/S_ν.
		return l0, x / 2 / (nu + 1) * s1 / s0
	}
	if nu >= debyeMinNu {
		l0 := debyeLogI(nu, x)
		l1 := debyeLogI(nu+1, x)
		return l0, math.Exp(l1 - l0)
	}
	n := int(math.Ceil(debyeMinNu - nu))
	top := nu + float64(n)
	l0 := debyeLogI(top, x)
	r := math.Exp(debyeLogI(top+1, x) - l0) // I_{top+1}/I_top
	// Downward: R_k = I_{k−1}/I_k = 2k/x + I_{k+1}/I_k.
	sum := 0.0
	inv := r // I_{k+1}/I_k for k = top
	for i := 0; i < n; i++ {
		k := top - float64(i)
		rk := 2*k/x + inv
		sum += math.Log(rk)
		inv = 1 / rk // I_k/I_{k−1}, i.e. I_{(k−1)+1}/I_{k−1}
	}
	return l0 + sum, inv
}

// seriesMaxX is the largest x for which small orders use the power series (about x + 40 terms, no overflow).
const seriesMaxX = 30

// besselISeriesScaled returns log I_ν(x) and S = Σ_m t_m with t_0 = 1, t_{m+1} = t_m (x/2)²/((m+1)(m+ν+1)), so
// that I_ν(x) = (x/2)^ν/Γ(ν+1)·S (A&S 9.6.10). All terms are positive: S is accurate to rounding.
func besselISeriesScaled(nu, x float64) (float64, float64) {
	q := x * x / 4
	s, t := 1.0, 1.0
	for m := 0; m < 500; m++ {
		t *= q / (float64(m+1) * (float64(m) + nu + 1))
		s += t
		if t < 1e-17*s {
			break
		}
	}
	lg, _ := math.Lgamma(nu + 1)
	return nu*math.Log(x/2) - lg + math.Log(s), s
}

// debyeLogI is the Debye uniform asymptotic expansion of log I_ν(νz) with terms up to u₄ (Abramowitz
// & Stegun 9.7.7), ν > 0.
func debyeLogI(nu, x float64) float64 {
	z := x / nu
	s := math.Hypot(1, z)
	t := 1 / s
	// η = s + log z − log(1+s), written so that small z does not lose digits.
	eta := s + math.Log(z) - math.Log1p(s)
	t2 := t * t
	u1 := t * (3 - 5*t2) / 24
	u2 := t2 * (81 + t2*(-462+t2*385)) / 1152
	u3 := t * t2 * (30375 + t2*(-369603+t2*(765765-t2*425425))) / 414720
	u4 := t2 * t2 * (4465125 + t2*(-94121676+t2*(349922430+t2*(-446185740+t2*185910725)))) / 39813120
	in := 1 / nu
	series := in * (u1 + in*(u2+in*(u3+in*u4)))
	return nu*eta - 0.5*math.Log(2*math.Pi*nu) - 0.5*math.Log(s) + math.Log1p(series)
}
