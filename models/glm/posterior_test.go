package glm

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/rng"
)

func posteriorData(n, d int, link Link, seed uint64) (x, y []float64) {
	x, y = make([]float64, n*d), make([]float64, n)
	c := rng.Counter{Seed: seed}
	c.FillNormal(x)
	u := make([]float64, n)
	c.Advance(n * d).FillNormal(u)
	for i := range y {
		eta := 0.0
		for j := 0; j < d; j++ {
			eta += x[i*d+j] * 0.5 * float64(j%3-1)
		}
		switch link {
		case LinearLink:
			y[i] = eta + 0.3*u[i]
		default:
			if eta+u[i] > 0 {
				y[i] = 1
			}
		}
	}
	return x, y
}

// TestPosteriorGradient: the gradient of every link matches central differences to 1e-6 (relative to
// max(1, |difference quotient|)) at three points, one of them far from the data (|η| up to about 10).
func TestPosteriorGradient(t *testing.T) {
	for _, link := range []Link{LogitLink, ProbitLink, LinearLink} {
		x, y := posteriorData(60, 4, link, 3)
		p, err := NewPosterior(x, y, 60, 4, link, 4, 0.09)
		if err != nil {
			t.Fatal(err)
		}
		for _, th := range [][]float64{{0, 0, 0, 0}, {0.3, -0.2, 0.8, 0.1}, {2, -3, 1, 2.5}} {
			if err := model.CheckGradient(p, th, 0, 1e-6); err != nil {
				t.Errorf("%v at %v: %v", link, th, err)
			}
		}
	}
}

// TestPosteriorLinearClosedForm: with the linear link the posterior is Gaussian with precision
// A = XᵀX/σ² + I/τ and mean A⁻¹Xᵀy/σ² (dense float64 algebra): the gradient vanishes at the mean (1e-9) and
// log p(m + δ) − log p(m) = −½δᵀAδ (1e-9 relative).
func TestPosteriorLinearClosedForm(t *testing.T) {
	const n, d, tau, s2 = 50, 3, 2.0, 0.09
	x, y := posteriorData(n, d, LinearLink, 5)
	p, err := NewPosterior(x, y, n, d, LinearLink, tau, s2)
	if err != nil {
		t.Fatal(err)
	}
	X := mat.NewDense(n, d, x)
	var a mat.SymDense
	a.SymOuterK(1/s2, X.T())
	for i := 0; i < d; i++ {
		a.SetSym(i, i, a.At(i, i)+1/tau)
	}
	var xty, m mat.VecDense
	xty.MulVec(X.T(), mat.NewVecDense(n, y))
	xty.ScaleVec(1/s2, &xty)
	var ch mat.Cholesky
	if !ch.Factorize(&a) {
		t.Fatal("A not SPD")
	}
	if err := ch.SolveVecTo(&m, &xty); err != nil {
		t.Fatal(err)
	}
	g := make([]float64, d)
	l0, _ := p.LogDensity(g, m.RawVector().Data)
	for i, v := range g {
		if math.Abs(v) > 1e-9*float64(n) {
			t.Errorf("∂/∂θ[%d] log p at the posterior mean = %g", i, v)
		}
	}
	delta := mat.NewVecDense(d, []float64{0.1, -0.05, 0.2})
	var md mat.VecDense
	md.AddVec(&m, delta)
	l1, _ := p.LogDensity(g, md.RawVector().Data)
	want := -0.5 * mat.Inner(delta, &a, delta)
	if math.Abs((l1-l0)-want) > 1e-9*math.Abs(want) {
		t.Errorf("log p(m + δ) − log p(m) = %.15g, closed form %.15g", l1-l0, want)
	}
}

// TestPosteriorProbitValues: log p(y | η) of the probit link against log Φ written with math.Erf at moderate η
// (1e-14), the symmetry log p(1 | η) = log p(0 | −η), and a finite value and gradient at η = −30 (the tail).
func TestPosteriorProbitValues(t *testing.T) {
	p := &Posterior{Link: ProbitLink}
	for _, eta := range []float64{-3, -0.5, 0, 0.7, 2.5} {
		want := math.Log(0.5 * (1 + math.Erf(eta/math.Sqrt2)))
		l, _ := p.obs(1, eta)
		if math.Abs(l-want) > 1e-14*math.Max(1, math.Abs(want)) {
			t.Errorf("log Φ(%v) = %v, want %v", eta, l, want)
		}
		l0, r0 := p.obs(0, -eta)
		l1, r1 := p.obs(1, eta)
		if l0 != l1 || r0 != -r1 {
			t.Errorf("η = %v: (%v, %v) for y = 0 at −η, (%v, %v) for y = 1", eta, l0, r0, l1, r1)
		}
	}
	l, r := p.obs(1, -30)
	// Asymptotics: log Φ(−z) = −z²/2 − log(z√(2π)) − 1/z² + O(z⁻⁴), inverse Mills ratio z + 1/z + O(z⁻³).
	if math.Abs(l-(-450-math.Log(30*math.Sqrt(2*math.Pi))-1.0/900)) > 1e-5 || math.Abs(r-(30+1.0/30)) > 1e-4 {
		t.Errorf("tail: log Φ(−30) = %v, d/dη = %v", l, r)
	}
}

// TestNewPosteriorErrors: labels outside {0, 1}, NaN data, sizes and variances are refused.
func TestNewPosteriorErrors(t *testing.T) {
	x := []float64{1, 2, 3, 4}
	for name, f := range map[string]func() error{
		"label 2": func() error { _, err := NewPosterior(x, []float64{0, 2}, 2, 2, LogitLink, 1, 0); return err },
		"NaN x": func() error {
			_, err := NewPosterior([]float64{1, math.NaN(), 3, 4}, []float64{0, 1}, 2, 2, ProbitLink, 1, 0)
			return err
		},
		"sizes":        func() error { _, err := NewPosterior(x, []float64{0, 1}, 2, 3, LogitLink, 1, 0); return err },
		"prior var":    func() error { _, err := NewPosterior(x, []float64{0, 1}, 2, 2, LogitLink, 0, 0); return err },
		"noise var":    func() error { _, err := NewPosterior(x, []float64{0.5, 1}, 2, 2, LinearLink, 1, -1); return err },
		"unknown link": func() error { _, err := NewPosterior(x, []float64{0, 1}, 2, 2, 9, 1, 1); return err },
	} {
		if f() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
