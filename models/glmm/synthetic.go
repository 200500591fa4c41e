package glmm

import (
	"fmt"
	"math"

	"github.com/geovb/geovb/rng"
)

// SyntheticEpilepsy draws an Epilepsy-like Poisson random-slope data set for scaling runs: n groups of
// 4 visits (−0.3, −0.1, 0.1, 0.3), p = 6 (intercept, base, treatment, base×treatment, age, visit), r = 2, known
// β = (0.2, 0.9, −0.9, 0.3, 0.5, −0.3) and b_i ~ N(0, B⁻¹) with B⁻¹ = diag(0.25, 0.5). The prior is ν = 3, S = B/ν
// (prior mean B). Deterministic in seed.
func SyntheticEpilepsy(n int, seed uint64) (*Model, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: %d groups", ErrData, n)
	}
	const p, r, per = 6, 2, 4
	beta := []float64{0.2, 0.9, -0.9, 0.3, 0.5, -0.3}
	sd := []float64{0.5, math.Sqrt(0.5)}
	visits := []float64{-0.3, -0.1, 0.1, 0.3}
	nobs := n * per
	x, z, y := make([]float64, nobs*p), make([]float64, nobs*r), make([]float64, nobs)
	start := make([]int, n+1)
	c := rng.Counter{Seed: seed}
	u := make([]float64, 5)
	for i := 0; i < n; i++ {
		c.Advance(i * 5).FillNormal(u)
		base := 1.5 + 0.6*u[0]
		trt := 0.0
		if u[1] > 0 {
			trt = 1
		}
		age := 0.2 * u[2]
		b0, b1 := sd[0]*u[3], sd[1]*u[4]
		for j, v := range visits {
			o := i*per + j
			copy(x[o*p:], []float64{1, base, trt, base * trt, age, v})
			z[o*r], z[o*r+1] = 1, v
			eta := b0 + b1*v
			for k := 0; k < p; k++ {
				eta += x[o*p+k] * beta[k]
			}
			y[o] = poisson(math.Exp(eta), rng.Counter{Seed: seed, Stream: 1}, uint64(o))
		}
		start[i+1] = (i + 1) * per
	}
	s := []float64{4.0 / 3, 0, 0, 2.0 / 3}
	return New(Poisson, x, z, y, start, p, r, 3, s)
}

// SyntheticToenail draws a Toenail-like logistic random-intercept data set: n groups of 7 visits at months
// 0, 1, 2, 3, 6, 9, 12, p = 4 (intercept, treatment, time, treatment×time), r = 1, β = (−1.6, −0.1, −0.4, −0.14),
// b_i ~ N(0, 16), prior ν = 1, S = B/ν with B = 1/16. Deterministic in seed.
func SyntheticToenail(n int, seed uint64) (*Model, error) {
	if n < 1 {
		return nil, fmt.Errorf("%w: %d groups", ErrData, n)
	}
	const p, r = 4, 1
	times := []float64{0, 1, 2, 3, 6, 9, 12}
	beta := []float64{-1.6, -0.1, -0.4, -0.14}
	per := len(times)
	nobs := n * per
	x, z, y := make([]float64, nobs*p), make([]float64, nobs), make([]float64, nobs)
	start := make([]int, n+1)
	c := rng.Counter{Seed: seed}
	uc := rng.Counter{Seed: seed, Stream: 1}
	u := make([]float64, 2)
	for i := 0; i < n; i++ {
		c.Advance(i * 2).FillNormal(u)
		trt := 0.0
		if u[0] > 0 {
			trt = 1
		}
		b := 4 * u[1]
		for j, tm := range times {
			o := i*per + j
			copy(x[o*p:], []float64{1, trt, tm, trt * tm})
			z[o] = 1
			eta := b + beta[0] + beta[1]*trt + beta[2]*tm + beta[3]*trt*tm
			if uc.Uniform(uint64(o)) < 1/(1+math.Exp(-eta)) {
				y[o] = 1
			}
		}
		start[i+1] = (i + 1) * per
	}
	return New(Bernoulli, x, z, y, start, p, r, 1, []float64{1.0 / 16})
}

// poisson draws Poisson(λ) by inversion of uniform k of the counter (λ is small here: e^η ≲ 100).
func poisson(lam float64, c rng.Counter, k uint64) float64 {
	u := c.Uniform(k)
	pr := math.Exp(-lam)
	cdf := pr
	x := 0.0
	for u > cdf && x < 1e4 {
		x++
		pr *= lam / x
		cdf += pr
	}
	return x
}
