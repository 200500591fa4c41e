package garch

import (
	"math"
	"testing"

	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

func synth(t *testing.T, T int) *Model {
	t.Helper()
	eps := make([]float64, T)
	rng.Counter{Seed: 3, Stream: 1}.FillNormal(eps)
	m, err := New(Simulate(0.1, 0.85, 0.10, eps))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGradFD checks the gradient against central finite differences (step 1e-5; relative error ≤ 1e-6) at several
// points.
func TestGradFD(t *testing.T) {
	m := synth(t, 500)
	for _, th := range [][]float64{{-2, 2, -2}, {0.3, 0.5, 1.2}, {-1, 4, -1}} {
		g := make([]float64, 3)
		m.LogPostGradHost(th, g)
		for i := range th {
			const h = 1e-5
			p, q := append([]float64(nil), th...), append([]float64(nil), th...)
			p[i] += h
			q[i] -= h
			fd := (m.LogPostGradHost(p, nil) - m.LogPostGradHost(q, nil)) / (2 * h)
			if math.Abs(fd-g[i]) > 1e-6*math.Max(1, math.Abs(fd)) {
				t.Errorf("θ = %v, coordinate %d: analytic %.10g, FD %.10g", th, i, g[i], fd)
			}
		}
	}
}

// TestValue checks log p(θ, y) (LogPostGradHost, and LogPrior + LogLik of the SMC target) against a direct
// evaluation in the natural parameters: the IG(1,1) and uniform prior densities with the Jacobian
// |∂(w, ψ₁, ψ₂)/∂θ| = w ψ₁(1−ψ₁) ψ₂(1−ψ₂), and the Gaussian likelihood.
func TestValue(t *testing.T) {
	m := synth(t, 50)
	th := []float64{-0.7, 1.3, -0.4}
	w, a, b := Natural(th)
	p1, p2 := 1/(1+math.Exp(-th[1])), 1/(1+math.Exp(-th[2]))
	if math.Abs(a+b-p1) > 1e-15 || math.Abs(b/(a+b)-p2) > 1e-14 {
		t.Fatalf("α %v β %v, ψ %v %v", a, b, p1, p2)
	}
	want := math.Log(math.Pow(w, -2)*math.Exp(-1/w)) + math.Log(w*p1*(1-p1)*p2*(1-p2))
	s2 := m.Sigma1
	for i, y := range m.Y {
		if i > 0 {
			s2 = w + a*s2 + b*m.Y[i-1]*m.Y[i-1]
		}
		want += math.Log(math.Exp(-y*y/(2*s2)) / math.Sqrt(2*math.Pi*s2))
	}
	if got := m.LogPostGradHost(th, nil); math.Abs(got-want) > 1e-10*math.Abs(want) {
		t.Fatalf("log p %v, want %v", got, want)
	}
	if got := m.LogPrior(th) + m.LogLik(th); math.Abs(got-want) > 1e-10*math.Abs(want) {
		t.Fatalf("LogPrior + LogLik %v, want %v", got, want)
	}
}

// TestBatched checks LogDensityBatch on the backend against the host evaluation column by column.
func TestBatched(t *testing.T) {
	b := testbackend.Open(t)
	m := synth(t, 100)
	th := tensor.NewHost(2, 3, 4)
	rng.Counter{Seed: 9}.FillNormal(th.Storage().Host())
	lpd, gd := testbackend.Alloc(t, b, 2, 1, 4), testbackend.Alloc(t, b, 2, 3, 4)
	if err := m.LogDensityBatch(b, lpd, gd, testbackend.Upload(t, b, th)); err != nil {
		t.Fatal(err)
	}
	lp, g := testbackend.Download(t, b, lpd), testbackend.Download(t, b, gd)
	for k := 0; k < 2; k++ {
		for j := 0; j < 4; j++ {
			x := []float64{th.At(k, 0, j), th.At(k, 1, j), th.At(k, 2, j)}
			gh := make([]float64, 3)
			if v := m.LogPostGradHost(x, gh); v != lp.At(k, 0, j) || gh[2] != g.At(k, 2, j) {
				t.Fatalf("column %d,%d differs", k, j)
			}
		}
	}
	if err := m.LogDensityBatch(b, lpd, nil, testbackend.Alloc(t, b, 2, 2, 4)); err == nil {
		t.Fatal("wrong shape accepted")
	}
}

// TestMetropolisQuadrature checks the gold-standard sampler against an independent reference: on simulated data
// (T = 200, a synthetic truth w = 0.1, α = 0.85, β = 0.10) the posterior means and sds of θ from a 48³
// midpoint grid over mean ± 7 sd are matched by the chain (20,000 kept draws) to 0.15 sd and 10%.
func TestMetropolisQuadrature(t *testing.T) {
	m := synth(t, 200)
	r := m.Metropolis([]float64{0, 1, 0}, 20000, 8000, 1)
	if r.Acceptance < 0.1 || r.Acceptance > 0.7 {
		t.Fatalf("acceptance %v", r.Acceptance)
	}
	mc, sc := thetaMoments(r.Theta, r.N)
	_, mq, sq := quadLogZ(m, mc, sc, 48, 7)
	for i := 0; i < 3; i++ {
		t.Logf("θ%d: chain mean %.4f sd %.4f; quadrature mean %.4f sd %.4f", i, mc[i], sc[i], mq[i], sq[i])
		if math.Abs(mc[i]-mq[i]) > 0.15*sq[i] || math.Abs(sc[i]/sq[i]-1) > 0.1 {
			t.Errorf("θ%d: chain mean %.4f sd %.4f; quadrature mean %.4f sd %.4f", i, mc[i], sc[i], mq[i], sq[i])
		}
	}
}
