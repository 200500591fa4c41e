package sggmcexp

import (
	"errors"
	"math"
	"testing"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/tensor"
)

// The full-data gradient of TwoVMF is the derivative of its potential (central differences in R^{2×n}, both
// readings), and the minibatch gradient averages to it over many steps.
func TestTwoVMFGradient(t *testing.T) {
	b := testbackend.Open(t)
	m, err := SyntheticTwoVMF(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, mean := range []bool{true, false} {
		m.MeanReading, m.Batch = mean, 0
		hx := tensor.NewHost(1, 2, 2)
		pt := append(unitAngle(0.3), unitAngle(-0.4)...)
		for j, v := range pt {
			hx.Set(0, j/2, j%2, v)
		}
		x, dg := testbackend.Upload(t, b, hx), testbackend.Alloc(t, b, 1, 2, 2)
		if err := m.GradU(b, dg, x, 0); err != nil {
			t.Fatal(err)
		}
		g := testbackend.Download(t, b, dg)
		for j := 0; j < 4; j++ {
			const h = 1e-6
			p, q := append([]float64(nil), pt...), append([]float64(nil), pt...)
			p[j] += h
			q[j] -= h
			fd := (m.Potential(p[:2], p[2:]) - m.Potential(q[:2], q[2:])) / (2 * h)
			if an := g.At(0, j/2, j%2); !(math.Abs(fd-an) < 1e-6*math.Max(1, math.Abs(an))) {
				t.Errorf("mean reading %v, coordinate %d: finite difference %.9g, gradient %.9g", mean, j, fd, an)
			}
		}
		full := []float64{g.At(0, 0, 0), g.At(0, 0, 1), g.At(0, 1, 0), g.At(0, 1, 1)}
		m.Batch = 10
		avg := make([]float64, 4)
		const steps = 4000
		for s := uint64(0); s < steps; s++ {
			if err := m.GradU(b, dg, x, s); err != nil {
				t.Fatal(err)
			}
			g := testbackend.Download(t, b, dg)
			for j := range avg {
				avg[j] += g.At(0, j/2, j%2) / steps
			}
		}
		vh := make([]float64, 2)
		if err := m.NoiseVar(vh); err != nil {
			t.Fatal(err)
		}
		// The V̂ estimate bounds the spread of the average: SE per coordinate ≤ √(V̂_max·n/steps) roughly; use 5 SE.
		se := math.Sqrt(m.MeanNoiseVar() * 2 / steps)
		for j := range avg {
			if math.Abs(avg[j]-full[j]) > 5*se {
				t.Errorf("mean reading %v: minibatch mean %.4f, full %.4f (5 SE = %.3f)", mean, avg[j], full[j], 5*se)
			}
		}
	}
	m.MeanReading = true
}

func TestTwoVMFBadInput(t *testing.T) {
	e1 := []float64{1, 0}
	if _, err := NewTwoVMF([][]float64{{1, 1}}, e1, e1, 1, 1, 1); !errors.Is(err, backend.ErrDomain) {
		t.Errorf("point off the circle: %v", err)
	}
	if _, err := NewTwoVMF([][]float64{e1}, e1, e1, 1, 0, 1); !errors.Is(err, backend.ErrDomain) {
		t.Errorf("κ = 0: %v", err)
	}
	if _, err := NewTwoVMF([][]float64{{1, 0, 0}}, e1, e1, 1, 1, 1); !errors.Is(err, backend.ErrShape) {
		t.Errorf("length: %v", err)
	}
}
