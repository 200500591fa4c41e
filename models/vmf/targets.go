package vmf

import (
	"math"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// Mixture is the target π(x) = Σ_j w_j vMF(x|μ_j, κ_j) on S^{n−1}, as a potential U = −log π with gradient for the
// samplers of package algos/sggmc (points are batch×1×n, one chain per batch item). Paper 001 Section 5.1 (the toy
// circle) is w = (1/3, 2/3), κ = 5, μ at ±π/3; one component is a plain vMF target.
//
// GradNoise > 0 adds 𝒩(0, GradNoise·I) to every gradient (drawn from the counter stream Seed and the step, so a
// run is reproducible), the noisy gradient of the paper's toy experiment (Section 5.1).
type Mixture struct {
	W, Kappa  []float64
	Mu        [][]float64
	GradNoise float64
	Seed      uint64

	logw []float64 // log w_j + log c_n(κ_j)
	host *tensor.Tensor
	gh   *tensor.Tensor
}

// NewMixture checks and returns the mixture (weights are normalised).
func NewMixture(w, kappa []float64, mu [][]float64) (*Mixture, error) {
	if len(w) == 0 || len(w) != len(kappa) || len(w) != len(mu) {
		return nil, domainErr("mixture with %d weights, %d concentrations, %d means", len(w), len(kappa), len(mu))
	}
	n := len(mu[0])
	m := &Mixture{W: w, Kappa: kappa, Mu: mu}
	tot := 0.0
	for _, x := range w {
		if !(x > 0) || math.IsInf(x, 1) {
			return nil, domainErr("mixture weight %v is not positive and finite", x)
		}
		tot += x
	}
	for j := range w {
		if len(mu[j]) != n {
			return nil, domainErr("mean %d has length %d, want %d", j, len(mu[j]), n)
		}
		if err := CheckUnit("μ", mu[j]); err != nil {
			return nil, err
		}
		lc, err := LogNormalizer(n, kappa[j])
		if err != nil {
			return nil, err
		}
		m.logw = append(m.logw, math.Log(w[j]/tot)+lc)
	}
	return m, nil
}

// Dim returns n.
func (m *Mixture) Dim() int { return len(m.Mu[0]) }

// eval returns U(x) and writes ∇U(x) into g (may be nil). The extension off the sphere is Σ_j w_j c_j e^{κ_j μ_jᵀx}.
func (m *Mixture) eval(x, g []float64) float64 {
	mx := math.Inf(-1)
	var a [8]float64
	as := a[:0]
	for j, mu := range m.Mu {
		d := 0.0
		for i := range x {
			d += mu[i] * x[i]
		}
		l := m.logw[j] + m.Kappa[j]*d
		as = append(as, l)
		mx = math.Max(mx, l)
	}
	s := 0.0
	for j := range as {
		as[j] = math.Exp(as[j] - mx)
		s += as[j]
	}
	if g != nil {
		for i := range g {
			g[i] = 0
		}
		for j, mu := range m.Mu {
			r := as[j] / s * m.Kappa[j]
			for i := range g {
				g[i] -= r * mu[i]
			}
		}
	}
	return -(mx + math.Log(s))
}

func (m *Mixture) hostOf(b backend.Backend, x *tensor.Tensor) (*tensor.Tensor, error) {
	// Points of another sphere would index past the means; an empty batch has no host data.
	if x == nil || x.Batch() < 1 || x.Rows() != 1 || x.Cols() != m.Dim() {
		var s tensor.Shape
		if x != nil {
			s = x.Shape()
		}
		return nil, backend.Errorf("vmf", "x", backend.ErrShape, "points %v, want batch×1×%d with batch ≥ 1", s, m.Dim())
	}
	if !(m.GradNoise >= 0) || math.IsInf(m.GradNoise, 1) {
		return nil, domainErr("gradient noise variance %v is not ≥ 0 and finite", m.GradNoise)
	}
	if m.host == nil || m.host.Shape() != x.Shape() {
		m.host = tensor.NewHost(x.Batch(), x.Rows(), x.Cols())
		m.gh = tensor.NewHost(x.Batch(), x.Rows(), x.Cols())
	}
	return m.host, b.Download(m.host, x)
}

// GradU writes ∇U (plus the optional noise) for every chain of x (batch×1×n).
func (m *Mixture) GradU(b backend.Backend, grad, x *tensor.Tensor, step uint64) error {
	h, err := m.hostOf(b, x)
	if err != nil {
		return err
	}
	xd := hostData(h)
	gd := hostData(m.gh)
	n := x.Cols()
	for c := 0; c < x.Batch(); c++ {
		m.eval(xd[c*n:(c+1)*n], gd[c*n:(c+1)*n])
	}
	if m.GradNoise > 0 {
		nc := rng.Counter{Seed: m.Seed, Stream: 1, Offset: step * uint64(x.Len())}
		sd := math.Sqrt(m.GradNoise)
		for i := range gd[:x.Len()] {
			gd[i] += sd * nc.Normal(uint64(i))
		}
	}
	return b.Upload(grad, m.gh)
}

// U writes U(x) per chain.
func (m *Mixture) U(b backend.Backend, u []float64, x *tensor.Tensor) error {
	h, err := m.hostOf(b, x)
	if err != nil {
		return err
	}
	if len(u) != x.Batch() {
		return backend.Errorf("vmf", "u", backend.ErrShape, "%d energies for %d chains", len(u), x.Batch())
	}
	xd := hostData(h)
	n := x.Cols()
	for c := range u {
		u[c] = m.eval(xd[c*n:(c+1)*n], nil)
	}
	return nil
}

// LogPdf returns log π(x).
func (m *Mixture) LogPdf(x []float64) float64 { return -m.eval(x, nil) }

// hostData returns the elements of a contiguous host tensor.
func hostData(t *tensor.Tensor) []float64 {
	d, _, _, _ := t.Matrix(0)
	return d[:t.Len():t.Len()]
}
