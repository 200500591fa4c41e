package nfa

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/rng"
)

// Lorenz returns T states (T×3, row-major) of the Lorenz system σ = 10, ρ = 28, β = 8/3 integrated by RK4 with
// dt = 0.01, keeping every 5th step after a burn-in of 1000 steps, each component standardised (notes §6.10).
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
// A, B entries N(0, 1/fan-in), a, b from N(0, 0.1²), noise std 0.1 (notes §6.10). The MLP is drawn from seed.
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

// SyntheticNSSM is NSSM-SYN of notes §6.10: a standardised Lorenz trajectory through a random MLP to p = 21
// outputs (H = 20, noise 0.1).
func SyntheticNSSM(T int, seed uint64) []float64 { return Observe(Lorenz(T), T, 3, 21, 20, seed) }

// SyntheticNFA is NFA-SYN of notes §6.10: i.i.d. s ~ N(0, I₃) through a random MLP to p = 21 (H = 20, noise 0.1).
func SyntheticNFA(T int, seed uint64) []float64 {
	r := rand.New(rng.NewSource(seed, 0x736f75))
	S := make([]float64, 3*T)
	for i := range S {
		S[i] = r.NormFloat64()
	}
	return Observe(S, T, 3, 21, 20, seed)
}

// Init sets the posterior state for one run from seed and returns the initial means [I; notes §10.8]: sources from
// PCA of the data (the d leading components, unit variance) plus N(0, 0.1²) noise, f weights N(0, 1/fan-in)
// (biases 0), g weights near zero (dynamics ≈ identity), variances 0.01 (sources, states) and 1e-4 (weights),
// breve 0, noise log-stds at log 0.5 with variance 1e-4.
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

// Methods are the methods Run accepts.
var Methods = []string{"RCG", "RG", "CG", "GD"}

// Run fits m from Init(seed) with one method: the joint gradient step on all means with the Powell–Beale restart
// (7) for the conjugate methods, the between-step updates of Update, and the rule |ΔF| < tol for patience
// consecutive iterations (§3.5: tol = 1e-5·T/80, patience 5), within a cap of limit process CPU time (0: none). It
// returns the F(t) trace for time-to-target summaries, with t in seconds of process CPU time (user + system, as the
// paper's CPU time; on a machine without getrusage, wall time).
func Run(m *Model, seed uint64, method string, tol float64, patience int, limit time.Duration) (*rcg.Trace, error) {
	x0, err := m.Init(seed)
	if err != nil {
		return nil, err
	}
	s := rcg.Settings{Tol: tol, Patience: patience, PowellBeale: 0.2}
	switch method {
	case "RCG":
		s.Method = rcg.RCG
	case "RG":
		s.Method = rcg.RG
	case "CG":
		s.Method = rcg.CG
	case "GD":
		s.Method = rcg.GD
	default:
		return nil, fmt.Errorf("%w: method %q", ErrBadInput, method)
	}
	tr := &rcg.Trace{Method: method, Seed: int(seed)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := rcg.CPUTime()
	ctl := run.Control{Ctx: ctx, MaxIter: 1 << 30, Recorder: run.Func(func(r run.Record) {
		el := rcg.CPUTime() - start
		tr.T = append(tr.T, el.Seconds())
		tr.F = append(tr.F, r.Extra["F"])
		tr.Evals = append(tr.Evals, int(r.Extra["f_evals"]+r.Extra["g_evals"]))
		if limit > 0 && el >= limit {
			cancel() // the loop stops before the next iteration
		}
	})}
	res, err := rcg.Minimize(m, x0, s, ctl)
	if res == nil {
		return nil, err
	}
	tr.Final, tr.Iters, tr.Reason, tr.Time = res.F, res.Iters, res.Reason.String(), (rcg.CPUTime() - start).Seconds()
	return tr, nil
}

// Sweep runs methods over seeds on one synthetic data set of size T (NSSM-SYN when dyn, else NFA-SYN) fitted with
// d = 5, H = 20 and the §3.5 rule ε = 1e-5·T/80 over 5 iterations. RCG runs first, capped at rcgCap (0: none); the
// other methods are capped at capFactor × RCG's median run time (the §6.7 budget form), so a method that never
// converges within it has a lower-bound time. Times and caps are process CPU time (Run). It returns the traces per
// method.
func Sweep(dyn bool, T, seeds int, methods []string, rcgCap time.Duration, capFactor float64, mo Moments) (map[string][]*rcg.Trace, error) {
	X := SyntheticNFA(T, 1)
	if dyn {
		X = SyntheticNSSM(T, 1)
	}
	m, err := New(X, T, 21, Config{Dynamic: dyn, D: 5, H: 20, Moments: mo})
	if err != nil {
		return nil, err
	}
	out := map[string][]*rcg.Trace{}
	var rcgTimes []float64
	for _, meth := range methods {
		limit := rcgCap
		if meth != "RCG" && len(rcgTimes) > 0 {
			limit = time.Duration(capFactor * rcg.Median(rcgTimes) * float64(time.Second))
		}
		for seed := range seeds {
			tr, err := Run(m, uint64(seed), meth, 1e-5*float64(T)/80, 5, limit)
			if err != nil {
				return nil, err
			}
			out[meth] = append(out[meth], tr)
			if meth == "RCG" {
				rcgTimes = append(rcgTimes, tr.Time)
			}
		}
	}
	return out, nil
}
