package nfa

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/rng"
)

// Lorenz returns T states (T×3, row-major) of the Lorenz system σ = 10, ρ = 28, β = 8/3 integrated by RK4 with
// dt = 0.01, keeping every 5th step after a burn-in of 1000 steps, each component standardised (a substitute for the paper's speech data).
func Lorenz(T int) []float64 {
	f := func(s [3]float64) [3]float64 {
		return [3]float64{10 * (s[1] - s[0]), s[0]*(28-s[2]) - s[1], s[0]*s[1] - 8.0/3*s[2]}
	}
	const dt = 0.01
	rk4 := func(s [3]float64) [3]float64 {
		add := func(a, b [3]float64, h float64) [3]float64 {
			return [3]float64{a[0] + h*b[0], a[1] + h*b[1], a[2] + h*b[2]}
		}
		k1 := f(s)
		k2 := f(add(s, k1, dt/2))
		k3 := f(add(s, k2, dt/2))
		k4 := f(add(s, k3, dt))
		for i := range 3 {
			s[i] += dt / 6 * (k1[i] + 2*k2[i] + 2*k3[i] + k4[i])
		}
		return s
	}
	s := [3]float64{1, 1, 1}
	for range 1000 {
		s = rk4(s)
	}
	out := make([]float64, 3*T)
	for t := range T {
		for range 5 {
			s = rk4(s)
		}
		copy(out[3*t:], s[:])
	}
	standardise(out, T, 3)
	return out
}

func standardise(x []float64, T, d int) {
	for i := range d {
		var m, v float64
		for t := range T {
			m += x[t*d+i]
		}
		m /= float64(T)
		for t := range T {
			v += (x[t*d+i] - m) * (x[t*d+i] - m)
		}
		sd := math.Sqrt(v / float64(T))
		for t := range T {
			x[t*d+i] = (x[t*d+i] - m) / sd
		}
	}
}

// Observe maps T sources (T×d) through a random MLP x = B tanh(As + a) + b + n with p outputs and H hidden units:
// A, B entries N(0, 1/fan-in), a, b from N(0, 0.1²), noise std 0.1. The MLP is drawn from seed.
func Observe(S []float64, T, d, p, H int, seed uint64) []float64 {
	r := rand.New(rng.NewSource(seed, 0x6f6273))
	A, a, B, b := make([]float64, H*d), make([]float64, H), make([]float64, p*H), make([]float64, p)
	for i := range A {
		A[i] = r.NormFloat64() / math.Sqrt(float64(d))
	}
	for i := range B {
		B[i] = r.NormFloat64() / math.Sqrt(float64(H))
	}
	for i := range a {
		a[i] = 0.1 * r.NormFloat64()
	}
	for i := range b {
		b[i] = 0.1 * r.NormFloat64()
	}
	X := make([]float64, T*p)
	hid := make([]float64, H)
	for t := range T {
		for h := range H {
			y := a[h]
			for j := range d {
				y += A[h*d+j] * S[t*d+j]
			}
			hid[h] = math.Tanh(y)
		}
		for i := range p {
			x := b[i] + 0.1*r.NormFloat64()
			for h := range H {
				x += B[i*H+h] * hid[h]
			}
			X[t*p+i] = x
		}
	}
	return X
}

// SyntheticNSSM is NSSM-SYN, our substitute for the paper's speech data: a standardised Lorenz trajectory through a random MLP to p = 21
// outputs (H = 20, noise 0.1).
func SyntheticNSSM(T int, seed uint64) []float64 { return Observe(Lorenz(T), T, 3, 21, 20, seed) }

// SyntheticNFA is NFA-SYN, our substitute for the paper's speech data: i.i.d. s ~ N(0, I₃) through a random MLP to p = 21 (H = 20, noise 0.1).
func SyntheticNFA(T int, seed uint64) []float64 {
	r := rand.New(rng.NewSource(seed, 0x736f75))
	S := make([]float64, 3*T)
	for i := range S {
		S[i] = r.NormFloat64()
	}
	return Observe(S, T, 3, 21, 20, seed)
}

// Init sets the posterior state for one run from seed and returns the initial means (the paper does not give its
// initialisation; Valpola & Karhunen used PCA): sources from
// PCA of the data (the d leading components, unit variance) plus N(0, 0.1²) noise, f weights N(0, 1/fan-in)
// (biases 0), g weights near zero (dynamics ≈ identity), variances 0.01 (sources, states) and 1e-4 (weights),
// breve 0, noise log-stds at log 0.5 with variance 1e-4, ARD log-stds (Config.ARD) at 0 with variance 1e-4, and the
// hierarchy's nodes (Config.Hierarchical) at the priors of the model without it (initTop), and no updates counted
// (Config.HyperDelay), so that every run from Init starts afresh.
func (m *Model) Init(seed uint64) ([]float64, error) {
	d, T, P := m.Cfg.D, m.T, m.P
	if d > P {
		return nil, fmt.Errorf("%w: d = %d > p = %d", ErrBadInput, d, P)
	}
	r := rand.New(rng.NewSource(seed, 0x6e6661))
	x := make([]float64, m.Dim())
	mean := make([]float64, P)
	for t := range T {
		for i := range P {
			mean[i] += m.X[t*P+i] / float64(T)
		}
	}
	cov := mat.NewSymDense(P, nil)
	for i := range P {
		for j := i; j < P; j++ {
			var c float64
			for t := range T {
				c += (m.X[t*P+i] - mean[i]) * (m.X[t*P+j] - mean[j])
			}
			cov.SetSym(i, j, c/float64(T))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(cov, true) {
		return nil, fmt.Errorf("%w: PCA failed", ErrBadInput)
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	sm, wf, wg := m.split(x)
	for c := range d {
		col := P - 1 - c // ascending eigenvalues
		sd := math.Sqrt(math.Max(vals[col], 1e-12))
		for t := range T {
			var s float64
			for i := range P {
				s += (m.X[t*P+i] - mean[i]) * vecs.At(i, col)
			}
			sm[t*d+c] = s/sd + 0.1*r.NormFloat64()
		}
	}
	A, _, B, _ := m.f.split(wf)
	for i := range A {
		A[i] = r.NormFloat64() / math.Sqrt(float64(d))
	}
	for i := range B {
		B[i] = r.NormFloat64() / math.Sqrt(float64(m.Cfg.H))
	}
	fill := func(v []float64, c float64) {
		for i := range v {
			v[i] = c
		}
	}
	fill(m.WVarF, 1e-4)
	fill(m.VnMean, math.Log(0.5))
	fill(m.VnVar, 1e-4)
	fill(m.VPhiMean, 0) // ARD: start at the unit prior
	fill(m.VPhiVar, 1e-4)
	m.updates = 0
	if m.groups != nil {
		m.initTop()
	}
	if m.Cfg.Dynamic {
		C, _, D, _ := m.g.split(wg)
		for i := range C {
			C[i] = r.NormFloat64() / math.Sqrt(float64(d))
		}
		for i := range D {
			D[i] = 0.01 * r.NormFloat64()
		}
		fill(m.WVarG, 1e-4)
		fill(m.Ring, 0.01)
		fill(m.Breve, 0)
		fill(m.VmMean, math.Log(0.5))
		fill(m.VmVar, 1e-4)
	} else {
		fill(m.SVar, 0.01)
	}
	return x, nil
}
