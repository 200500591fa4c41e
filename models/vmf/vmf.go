// Package vmf is the von Mises–Fisher distribution on the sphere S^{p−1} ⊂ R^p (paper 001 Sections 4 and 5.2): the log density with respect to the surface measure, the log normaliser log c_p(κ) evaluated in log
// space from p = 2 to p ≥ 1e4 and κ up to 1e5 and beyond, the mean resultant length A_p(κ) = I_{p/2}(κ)/I_{p/2−1}(κ),
// Wood's rejection sampler in its cancellation-free form, and the maximum-likelihood concentration.
//
// Arguments are checked: κ ≤ 0 (or not finite), p < 2 and a point whose norm is off 1 by more than UnitTol give an
// error wrapping backend.ErrDomain that names the problem.
package vmf

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/geovb/geovb/backend"
)

// UnitTol is how far ‖x‖ may be from 1 for a point accepted as lying on the sphere.
const UnitTol = 1e-8

func domainErr(format string, args ...any) error {
	return backend.Errorf("vmf", "", backend.ErrDomain, format, args...)
}

func checkPK(p int, kappa float64) error {
	if p < 2 {
		return domainErr("dimension p = %d < 2", p)
	}
	if !(kappa > 0) || math.IsInf(kappa, 1) {
		return domainErr("concentration κ = %v is not positive and finite", kappa)
	}
	return nil
}

// CheckUnit returns an error when x is not a finite vector of norm 1 within UnitTol; name is used in the message.
func CheckUnit(name string, x []float64) error {
	ss := 0.0
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return domainErr("%s[%d] = %v is not finite", name, i, v)
		}
		ss += v * v
	}
	if n := math.Sqrt(ss); math.Abs(n-1) > UnitTol {
		return domainErr("%s is not on the sphere: ‖%s‖ = %.17g", name, name, n)
	}
	return nil
}

// LogNormalizer returns log c_p(κ) = (p/2−1) log κ − (p/2) log 2π − log I_{p/2−1}(κ), the log normaliser of
// vMF(x|μ,κ) = c_p(κ) exp(κ μᵀx) on S^{p−1}, c_p(κ) = κ^{p/2−1}/((2π)^{p/2} I_{p/2−1}(κ)).
func LogNormalizer(p int, kappa float64) (float64, error) {
	if err := checkPK(p, kappa); err != nil {
		return math.NaN(), err
	}
	return logNormalizer(p, kappa), nil
}

func logNormalizer(p int, kappa float64) float64 {
	nu := float64(p)/2 - 1
	return nu*math.Log(kappa) - float64(p)/2*math.Log(2*math.Pi) - LogBesselI(nu, kappa)
}

// A returns the mean resultant length A_p(κ) = I_{p/2}(κ)/I_{p/2−1}(κ) ∈ (0, 1): E[x] = A_p(κ) μ and
// d/dκ log c_p(κ) = −A_p(κ). It never divides two overflowing Bessel values: A = exp(log I_{ν+1} − log I_ν).
func A(p int, kappa float64) (float64, error) {
	if err := checkPK(p, kappa); err != nil {
		return math.NaN(), err
	}
	_, r := logBesselIRatio(float64(p)/2-1, kappa)
	return r, nil
}

// APrime returns dA_p/dκ = 1 − A² − ((p−1)/κ) A.
func APrime(p int, kappa float64) (float64, error) {
	a, err := A(p, kappa)
	if err != nil {
		return math.NaN(), err
	}
	return 1 - a*a - float64(p-1)/kappa*a, nil
}

// LogPdf returns log vMF(x|μ,κ) = log c_p(κ) + κ μᵀx with respect to the surface measure of S^{p−1}. x and μ must
// have the same length p ≥ 2 and unit norm.
func LogPdf(x, mu []float64, kappa float64) (float64, error) {
	if len(x) != len(mu) {
		return math.NaN(), backend.Errorf("vmf", "x", backend.ErrShape, "len(x) = %d, len(μ) = %d", len(x), len(mu))
	}
	if err := checkPK(len(x), kappa); err != nil {
		return math.NaN(), err
	}
	if err := CheckUnit("x", x); err != nil {
		return math.NaN(), err
	}
	if err := CheckUnit("μ", mu); err != nil {
		return math.NaN(), err
	}
	dot := 0.0
	for i := range x {
		dot += x[i] * mu[i]
	}
	return logNormalizer(len(x), kappa) + kappa*dot, nil
}

// FitKappa returns the maximum-likelihood concentration on S^{p−1} for a mean resultant length rbar ∈ (0, 1),
// the root of A_p(κ) = r̄: Newton's method from Banerjee's κ ≈ r̄(p−r̄²)/(1−r̄²), safeguarded by
// bisection on a bracket (A_p is increasing in κ).
func FitKappa(p int, rbar float64) (float64, error) {
	if p < 2 {
		return math.NaN(), domainErr("dimension p = %d < 2", p)
	}
	if !(rbar > 0 && rbar < 1) {
		return math.NaN(), domainErr("mean resultant length %v is not in (0, 1)", rbar)
	}
	fp := float64(p)
	k := rbar * (fp - rbar*rbar) / (1 - rbar*rbar)
	lo, hi := 0.0, math.Inf(1)
	for it := 0; it < 200; it++ {
		a, _ := A(p, k)
		f := a - rbar
		if f > 0 {
			hi = k
		} else {
			lo = k
		}
		if math.Abs(f) <= 1e-15*rbar {
			return k, nil
		}
		d := 1 - a*a - (fp-1)/k*a
		next := k - f/d
		if !(next > lo && next < hi) || d <= 0 {
			if math.IsInf(hi, 1) {
				next = 2 * k
			} else {
				next = (lo + hi) / 2
			}
		}
		if math.Abs(next-k) <= 1e-15*k {
			return next, nil
		}
		k = next
	}
	return k, nil
}

// Sampler draws from vMF(μ, κ) on S^{p−1} with Wood's (1994) rejection algorithm in its stable form.
type Sampler struct {
	mu    []float64
	kappa float64
	p     int
	// Wood's constants: b = δ/(2κ + √(4κ²+δ²)), x₀ = (1−b)/(1+b), computed with 1−x₀ = 2b/(1+b).
	b, omx0, logc float64
	beta          distuv.Beta
	rnd           *rand.Rand
}

// NewSampler returns a sampler for vMF(μ, κ) drawing from src. μ must have unit norm (it is copied).
func NewSampler(mu []float64, kappa float64, src rand.Source) (*Sampler, error) {
	p := len(mu)
	if err := checkPK(p, kappa); err != nil {
		return nil, err
	}
	if err := CheckUnit("μ", mu); err != nil {
		return nil, err
	}
	delta := float64(p - 1)
	b := delta / (2*kappa + math.Sqrt(4*kappa*kappa+delta*delta))
	omx0 := 2 * b / (1 + b) // 1 − x₀
	// c = κx₀ + δ log(1−x₀²), 1−x₀² = 4b/(1+b)². The κx₀ part is kept out of logc and added as κ(1−x₀) terms.
	logc := delta * math.Log(4*b/((1+b)*(1+b)))
	r := rand.New(src)
	return &Sampler{mu: append([]float64(nil), mu...), kappa: kappa, p: p, b: b, omx0: omx0, logc: logc,
		beta: distuv.Beta{Alpha: delta / 2, Beta: delta / 2, Src: r}, rnd: r}, nil
}

// W draws the cosine w = μᵀx of a vMF draw, with 1 − w returned alongside without cancellation.
func (s *Sampler) W() (w, omw float64) {
	b, kappa, delta := s.b, s.kappa, float64(s.p-1)
	for {
		z := s.beta.Rand()
		den := 1 - (1-b)*z
		omw = 2 * b * z / den // 1 − w
		w = 1 - omw
		// κw + δ log(1 − x₀w) − c ≥ log u, with κ(w − x₀) = κ((1−x₀) − (1−w)) and 1 − x₀w = (1−x₀) + x₀(1−w).
		x0 := 1 - s.omx0
		lhs := kappa*(s.omx0-omw) + delta*math.Log(s.omx0+x0*omw) - s.logc
		u := s.rnd.Float64()
		if u > 0 && lhs >= math.Log(u) {
			return w, omw
		}
	}
}

// Rand writes one draw into dst (length p) and returns it.
func (s *Sampler) Rand(dst []float64) []float64 {
	if len(dst) != s.p {
		panic("vmf: Rand destination has the wrong length")
	}
	w, omw := s.W()
	// Uniform direction ξ ⊥ μ: a Gaussian with μ projected out, normalised.
	for {
		for i := range dst {
			dst[i] = s.rnd.NormFloat64()
		}
		d := 0.0
		for i, m := range s.mu {
			d += m * dst[i]
		}
		ss := 0.0
		for i, m := range s.mu {
			dst[i] -= d * m
			ss += dst[i] * dst[i]
		}
		if ss > 1e-20 {
			r := math.Sqrt(omw*(2-omw)) / math.Sqrt(ss) // √(1−w²) = √((1−w)(1+w))
			for i, m := range s.mu {
				dst[i] = w*m + r*dst[i]
			}
			return dst
		}
	}
}
