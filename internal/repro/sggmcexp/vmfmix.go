package sggmcexp

import (
	"math"
	"math/rand/v2"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/models/vmf"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// TwoVMF is the posterior of the synthetic Bayesian mixture of two vMFs of paper 001 Section 5.2 on
// the product S^{n−1} × S^{n−1} of (v₁, v₂), a point being a 2×n matrix with rows v₁, v₂:
//
//	v₁ ~ vMF(P1, κ₁),  v₂ ~ vMF(P2, κ₂),  x_i | v₁, v₂ ~ ½ vMF(v₁, κ_x) + ½ vMF(c₂, κ_x),
//
// where the second component's mean c₂ is μ = (v₁+v₂)/‖v₁+v₂‖ when MeanReading is set (the coherent reading of the
// garbled text: two modes related by the swap v₁ ↔ μ) and v₂ otherwise. GradU uses a minibatch of Batch
// points drawn without replacement (all points when Batch is 0) scaled by D/|𝒮| (paper eq. (1)), and TwoVMF is a
// NoiseEstimator: V̂ is the empirical Fisher estimate of Ahn et al. (2012) from the same minibatch,
// the per-sphere mean variance of the projected gradient, (D²/|𝒮|)(1 − (|𝒮|−1)/(D−1))·tr(Λ Ĉov Λ)/(n−1), with the
// finite-population factor of sampling without replacement.
type TwoVMF struct {
	Data                   [][]float64 // the points x_i (unit vectors of length n)
	P1, P2                 []float64   // prior means
	Kappa1, Kappa2, KappaX float64
	MeanReading            bool
	Batch                  int
	Seed                   uint64
	NoFisher               bool // report V̂ = 0 to the sampler (negative control); the estimate is still kept

	vhatSum float64 // running sum and count of the estimates, for diagnostics
	vhatN   int

	host, gh *tensor.Tensor
	vhat     []float64
	perm     []int
	gs       [][]float64 // per-point gradients of one chain (2n each)
}

// NewTwoVMF checks the data and prior means (unit vectors of one length n ≥ 2) and the concentrations.
func NewTwoVMF(data [][]float64, p1, p2 []float64, k1, k2, kx float64) (*TwoVMF, error) {
	n := len(p1)
	if len(data) == 0 || len(p2) != n || n < 2 {
		return nil, backend.Errorf("sggmc.twovmf", "data", backend.ErrShape, "%d points, prior means of length %d, %d",
			len(data), len(p1), len(p2))
	}
	for _, k := range []float64{k1, k2, kx} {
		if !(k > 0) || math.IsInf(k, 0) {
			return nil, backend.Errorf("sggmc.twovmf", "kappa", backend.ErrDomain, "κ = %v", k)
		}
	}
	for _, p := range append([][]float64{p1, p2}, data...) {
		if len(p) != n {
			return nil, backend.Errorf("sggmc.twovmf", "data", backend.ErrShape, "vector of length %d, want %d", len(p), n)
		}
		if err := vmf.CheckUnit("x", p); err != nil {
			return nil, err
		}
	}
	return &TwoVMF{Data: data, P1: p1, P2: p2, Kappa1: k1, Kappa2: k2, KappaX: kx, MeanReading: true}, nil
}

func dotv(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// pointGrad adds w·∇_{(v₁,v₂)}(−log p(x|v₁,v₂)) into g (length 2n) and returns −log p(x|v) up to the constant
// log(c_n(κ_x)/2). mu and inv are the second mean and 1/‖v₁+v₂‖ (MeanReading).
func (m *TwoVMF) pointGrad(g, x, v1, v2, mu []float64, inv, w float64) float64 {
	n, k := len(x), m.KappaX
	a, c := k*dotv(v1, x), k*dotv(mu, x)
	mx := math.Max(a, c)
	ea, ec := math.Exp(a-mx), math.Exp(c-mx)
	r1, r2 := ea/(ea+ec), ec/(ea+ec)
	if g != nil {
		for i := 0; i < n; i++ {
			g[i] -= w * r1 * k * x[i]
		}
		if m.MeanReading {
			// ∂(μᵀx)/∂v₁ = ∂(μᵀx)/∂v₂ = (I − μμᵀ)x/‖v₁+v₂‖.
			mxd := dotv(mu, x)
			for i := 0; i < n; i++ {
				d := w * r2 * k * (x[i] - mxd*mu[i]) * inv
				g[i] -= d
				g[n+i] -= d
			}
		} else {
			for i := 0; i < n; i++ {
				g[n+i] -= w * r2 * k * x[i]
			}
		}
	}
	return -(mx + math.Log(ea+ec))
}

// second returns the second component's mean and 1/‖v₁+v₂‖ into mu.
func (m *TwoVMF) second(mu, v1, v2 []float64) float64 {
	if !m.MeanReading {
		copy(mu, v2)
		return 1
	}
	ss := 0.0
	for i := range mu {
		mu[i] = v1[i] + v2[i]
		ss += mu[i] * mu[i]
	}
	if !(ss > 0) {
		return math.Inf(1) // v₂ = −v₁: μ undefined (a set of measure zero; prior mass ≈ 0)
	}
	inv := 1 / math.Sqrt(ss)
	for i := range mu {
		mu[i] *= inv
	}
	return inv
}

// Potential returns U(v₁, v₂) = −log prior − Σ_i log p(x_i|v₁, v₂) up to a constant (all data, exact).
func (m *TwoVMF) Potential(v1, v2 []float64) float64 {
	mu := make([]float64, len(v1))
	inv := m.second(mu, v1, v2)
	if math.IsInf(inv, 1) {
		return math.Inf(1)
	}
	u := -m.Kappa1*dotv(m.P1, v1) - m.Kappa2*dotv(m.P2, v2)
	for _, x := range m.Data {
		u += m.pointGrad(nil, x, v1, v2, mu, inv, 0)
	}
	return u
}

func (m *TwoVMF) hostOf(b backend.Backend, x *T) error {
	if x.Rows() != 2 || x.Cols() != len(m.P1) {
		return backend.Errorf("sggmc.twovmf", "x", backend.ErrShape, "x is %v, want batch×2×%d", x.Shape(), len(m.P1))
	}
	if m.host == nil || m.host.Shape() != x.Shape() {
		m.host = tensor.NewHost(x.Batch(), 2, x.Cols())
		m.gh = tensor.NewHost(x.Batch(), 2, x.Cols())
	}
	return b.Download(m.host, x)
}

// GradU writes the minibatch gradient of U for every chain (batch×2×n) and keeps V̂ for NoiseVar. Chain c at step
// t draws its minibatch from stream (Seed, t), draws c·D … (c+1)·D−1 (a partial Fisher–Yates shuffle).
func (m *TwoVMF) GradU(b backend.Backend, grad, x *T, step uint64) error {
	if err := m.hostOf(b, x); err != nil {
		return err
	}
	D, n := len(m.Data), x.Cols()
	S := m.Batch
	if S <= 0 || S > D {
		S = D
	}
	if len(m.perm) != D {
		m.perm = make([]int, D)
		m.gs = make([][]float64, D)
		for i := range m.gs {
			m.gs[i] = make([]float64, 2*n)
		}
	}
	if len(m.vhat) != 2*x.Batch() {
		m.vhat = make([]float64, 2*x.Batch())
	}
	xd, gd := hostData(m.host), hostData(m.gh)
	mu := make([]float64, n)
	mean := make([]float64, 2*n)
	ctr := rng.Counter{Seed: m.Seed, Stream: step}
	for c := 0; c < x.Batch(); c++ {
		v1, v2 := xd[c*2*n:c*2*n+n], xd[c*2*n+n:(c+1)*2*n]
		g := gd[c*2*n : (c+1)*2*n]
		inv := m.second(mu, v1, v2)
		for i := range m.perm {
			m.perm[i] = i
		}
		if S < D {
			for i := 0; i < S; i++ {
				j := i + int(ctr.Uniform(uint64(c*D+i))*float64(D-i))
				m.perm[i], m.perm[j] = m.perm[j], m.perm[i]
			}
		}
		for i := range mean {
			mean[i] = 0
		}
		for s := 0; s < S; s++ {
			gs := m.gs[s]
			for i := range gs {
				gs[i] = 0
			}
			m.pointGrad(gs, m.Data[m.perm[s]], v1, v2, mu, inv, 1)
			for i := range gs {
				mean[i] += gs[i] / float64(S)
			}
		}
		for i := 0; i < n; i++ {
			g[i] = -m.Kappa1*m.P1[i] + float64(D)*mean[i]
			g[n+i] = -m.Kappa2*m.P2[i] + float64(D)*mean[n+i]
		}
		// Empirical Fisher: per sphere, the mean tangential variance of the per-point gradients.
		for k, vk := range [][]float64{v1, v2} {
			m.vhat[2*c+k] = 0
			if S < 2 {
				continue
			}
			var ss float64
			for s := 0; s < S; s++ {
				d := m.gs[s][k*n : (k+1)*n]
				md := mean[k*n : (k+1)*n]
				p := 0.0
				for i := range d {
					p += (d[i] - md[i]) * vk[i]
				}
				for i := range d {
					e := d[i] - md[i] - p*vk[i]
					ss += e * e
				}
			}
			cov := ss / float64(S-1) / float64(n-1)
			fpc := 1.0
			if D > 1 {
				fpc = 1 - float64(S-1)/float64(D-1)
			}
			m.vhat[2*c+k] = float64(D) * float64(D) / float64(S) * fpc * cov
			m.vhatSum += m.vhat[2*c+k]
			m.vhatN++
		}
	}
	return b.Upload(grad, m.gh)
}

// NoiseVar returns the empirical-Fisher V̂ of the last GradU, one value per (chain, sphere).
func (m *TwoVMF) NoiseVar(vhat []float64) error {
	if len(vhat) != len(m.vhat) {
		return backend.Errorf("sggmc.twovmf", "vhat", backend.ErrShape, "length %d, want %d", len(vhat), len(m.vhat))
	}
	if m.NoFisher {
		clear(vhat)
		return nil
	}
	copy(vhat, m.vhat)
	return nil
}

// MeanNoiseVar returns the mean of all V̂ estimates so far (NaN before the first).
func (m *TwoVMF) MeanNoiseVar() float64 {
	if m.vhatN == 0 {
		return math.NaN()
	}
	return m.vhatSum / float64(m.vhatN)
}

// U writes the exact potential of every chain (for GMC).
func (m *TwoVMF) U(b backend.Backend, u []float64, x *T) error {
	if err := m.hostOf(b, x); err != nil {
		return err
	}
	n := x.Cols()
	xd := hostData(m.host)
	for c := range u {
		u[c] = m.Potential(xd[c*2*n:c*2*n+n], xd[c*2*n+n:(c+1)*2*n])
	}
	return nil
}

func unitAngle(a float64) []float64 { return []float64{math.Cos(a), math.Sin(a)} }

// SyntheticTwoVMF is the experiment of paper 001 Section 5.2 in the coherent reading: D = 100 points
// on S¹ drawn exactly (Wood's sampler, stream seed) from ½vMF(v₁, 20) + ½vMF(μ, 20) with v₁ at angle −π/24, v₂ at
// π/8 and μ = normalize(v₁+v₂); priors vMF(e₁, 20) on v₁ and v₂; κ_x = 20.
func SyntheticTwoVMF(seed uint64) (*TwoVMF, error) {
	const D, kappa = 100, 20
	v1, v2 := unitAngle(-math.Pi/24), unitAngle(math.Pi/8)
	mu := []float64{v1[0] + v2[0], v1[1] + v2[1]}
	r := math.Hypot(mu[0], mu[1])
	mu[0], mu[1] = mu[0]/r, mu[1]/r
	src := rng.NewSource(seed, 3)
	s1, err := vmf.NewSampler(v1, kappa, src)
	if err != nil {
		return nil, err
	}
	s2, err := vmf.NewSampler(mu, kappa, src)
	if err != nil {
		return nil, err
	}
	pick := rand.New(rng.NewSource(seed, 4))
	data := make([][]float64, D)
	for i := range data {
		data[i] = make([]float64, 2)
		if pick.Float64() < 0.5 {
			s1.Rand(data[i])
		} else {
			s2.Rand(data[i])
		}
	}
	return NewTwoVMF(data, []float64{1, 0}, []float64{1, 0}, kappa, kappa, kappa)
}

// GridCell returns the cell of angle a on a grid of n cells of width 2π/n starting at −π.
func GridCell(a float64, n int) int {
	i := int(math.Floor((a + math.Pi) / (2 * math.Pi) * float64(n)))
	return ((i % n) + n) % n
}

func cellAngle(i, n int) float64 { return -math.Pi + (float64(i)+0.5)*2*math.Pi/float64(n) }

// GridPosterior is the posterior of the angles (θ₁, θ₂) of (v₁, v₂) ∈ S¹×S¹ evaluated on an n×n grid (exact up to
// the quadrature: the surface measure is dθ₁dθ₂): the marginals (per cell), the mass with θ₂ > 0 and the angles'
// correlation.
type GridPosterior struct {
	M1, M2      []float64
	Upper, Corr float64
}

// Grid evaluates the exact full-data posterior of a target on S¹×S¹ on an n×n grid.
func (m *TwoVMF) Grid(n int) GridPosterior {
	lp := make([]float64, n*n)
	mx := math.Inf(-1)
	for i := 0; i < n; i++ {
		v1 := unitAngle(cellAngle(i, n))
		for j := 0; j < n; j++ {
			l := -m.Potential(v1, unitAngle(cellAngle(j, n)))
			lp[i*n+j] = l
			mx = math.Max(mx, l)
		}
	}
	g := GridPosterior{M1: make([]float64, n), M2: make([]float64, n)}
	var z, e1, e2, e11, e22, e12 float64
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			p := math.Exp(lp[i*n+j] - mx)
			z += p
			g.M1[i] += p
			g.M2[j] += p
			a, b := cellAngle(i, n), cellAngle(j, n)
			e1, e2, e11, e22, e12 = e1+p*a, e2+p*b, e11+p*a*a, e22+p*b*b, e12+p*a*b
			if b > 0 {
				g.Upper += p
			}
		}
	}
	for i := range g.M1 {
		g.M1[i] /= z
		g.M2[i] /= z
	}
	g.Upper /= z
	e1, e2, e11, e22, e12 = e1/z, e2/z, e11/z, e22/z, e12/z
	g.Corr = (e12 - e1*e2) / math.Sqrt((e11-e1*e1)*(e22-e2*e2))
	return g
}

// TV returns the total-variation distance between two histograms on the same grid after merging groups of w cells.
func TV(p, q []float64, w int) float64 {
	d := 0.0
	for i := 0; i < len(p); i += w {
		var a, b float64
		for j := i; j < i+w && j < len(p); j++ {
			a += p[j]
			b += q[j]
		}
		d += math.Abs(a - b)
	}
	return d / 2
}
