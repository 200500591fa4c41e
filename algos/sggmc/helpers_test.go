package sggmc

import (
	"math"
	"testing"

	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/models/vmf"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// randomPoints returns batch×K×n uniform points (normalised Gaussians) from stream seed on b, freed when the test
// ends.
func randomPoints(t testing.TB, b backend.Backend, batch, K, n int, seed uint64) *T {
	t.Helper()
	return testbackend.Upload(t, b, randomHost(batch, K, n, seed))
}

// randomHost is randomPoints in host memory.
func randomHost(batch, K, n int, seed uint64) *T {
	h := tensor.NewHost(batch, K, n)
	c := rng.Counter{Seed: seed, Stream: 99}
	d := hostData(h)
	c.FillNormal(d)
	for r := 0; r < batch*K; r++ {
		row := d[r*n : (r+1)*n]
		s := 0.0
		for _, v := range row {
			s += v * v
		}
		s = math.Sqrt(s)
		for i := range row {
			row[i] /= s
		}
	}
	return h
}

// pointsAt returns batch×1×n copies of x on b, freed when the test ends.
func pointsAt(t testing.TB, b backend.Backend, batch int, x []float64) *T {
	t.Helper()
	h := tensor.NewHost(batch, 1, len(x))
	for c := 0; c < batch; c++ {
		for j, v := range x {
			h.Set(c, 0, j, v)
		}
	}
	return testbackend.Upload(t, b, h)
}

// chainStats accumulates per-chain means of a few statistics of the samples; the standard errors come from the
// spread of the chain means (independent chains).
type chainStats struct {
	sum [][]float64 // chain × statistic
	n   int
}

func newChainStats(chains, stats int) *chainStats {
	s := &chainStats{sum: make([][]float64, chains)}
	for i := range s.sum {
		s.sum[i] = make([]float64, stats)
	}
	return s
}

func (s *chainStats) add(chain int, vals ...float64) {
	for j, v := range vals {
		s.sum[chain][j] += v
	}
}

// mean returns the grand mean and its standard error for statistic j (samples per chain: s.n).
func (s *chainStats) mean(j int) (m, se float64) {
	c := float64(len(s.sum))
	var a, a2 float64
	for _, row := range s.sum {
		x := row[j] / float64(s.n)
		a += x
		a2 += x * x
	}
	m = a / c
	v := (a2/c - m*m) * c / (c - 1)
	return m, math.Sqrt(v / c)
}

// runChains runs burn samples, then keep samples, calling f(chain, x row-major K×n) on each kept sample.
func runChains(t testing.TB, s interface {
	Sample() error
	X() *T
}, burn, keep int, f func(chain int, x []float64)) {
	t.Helper()
	x := s.X()
	h := tensor.NewHost(x.Batch(), x.Rows(), x.Cols())
	kn := x.Rows() * x.Cols()
	for i := 0; i < burn+keep; i++ {
		if err := s.Sample(); err != nil {
			t.Fatal(err)
		}
		if i < burn {
			continue
		}
		if err := backendOf(s).Download(h, s.X()); err != nil {
			t.Fatal(err)
		}
		d := hostData(h)
		for c := 0; c < x.Batch(); c++ {
			f(c, d[c*kn:(c+1)*kn])
		}
	}
}

func backendOf(s any) backend.Backend {
	switch v := s.(type) {
	case *Sampler:
		return v.b
	case *GMC:
		return v.b
	}
	panic("unknown sampler")
}

// circleTarget is the toy target of paper 001 Section 5.1: weights 1/3, 2/3, κ = 5, means at ±π/3.
func circleTarget(t testing.TB, noise float64) *vmf.Mixture {
	m, err := vmf.NewMixture([]float64{1, 2}, []float64{5, 5},
		[][]float64{{math.Cos(math.Pi / 3), math.Sin(math.Pi / 3)}, {math.Cos(-math.Pi / 3), math.Sin(-math.Pi / 3)}})
	if err != nil {
		t.Fatal(err)
	}
	m.GradNoise, m.Seed = noise, 17
	return m
}

// circleMoments returns E[x₁], E[x₂] and P(angle > 0) under π^{1/T} on the circle by the trapezoidal rule (spectrally
// accurate for a smooth periodic integrand): the independent reference of the circle tests.
func circleMoments(m *vmf.Mixture, temp float64) (ex, ey, pup float64) {
	const n = 1 << 14
	var z float64
	for i := 0; i < n; i++ {
		th := -math.Pi + 2*math.Pi*(float64(i)+0.5)/n
		w := math.Exp(m.LogPdf([]float64{math.Cos(th), math.Sin(th)}) / temp)
		z += w
		ex += w * math.Cos(th)
		ey += w * math.Sin(th)
		if th > 0 {
			pup += w
		}
	}
	return ex / z, ey / z, pup / z
}
