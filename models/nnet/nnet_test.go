package nnet

import (
	"math"
	"strings"
	"testing"

	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/datatest"
	"github.com/geovb/geovb/rng"
)

// TestGradFD checks value-consistent gradients against central finite differences (h = 1e-5, relative 1e-6) on
// German credit (p = 24, d = 361) at a random θ, and the dimension.
func TestGradFD(t *testing.T) {
	g, err := datasets.ReadGermanFile(datatest.Require(t, "german-credit", "germancredit_numeric.txt"))
	if err != nil {
		t.Fatal(err)
	}
	x, n, p := g.GermanDesign(false)
	m, err := New(x, g.Y, n, p)
	if err != nil {
		t.Fatal(err)
	}
	if m.Dim() != 361 {
		t.Fatalf("d = %d, want 361", m.Dim())
	}
	th := make([]float64, m.Dim())
	rng.Counter{Seed: 1}.FillNormal(th)
	for i := range th {
		th[i] *= 0.3
	}
	gr := make([]float64, m.Dim())
	m.LogPostGradHost(th, gr)
	worst := 0.0
	for i := 0; i < m.Dim(); i += 7 {
		const h = 1e-5
		o := th[i]
		th[i] = o + h
		up := m.LogPostGradHost(th, nil)
		th[i] = o - h
		dn := m.LogPostGradHost(th, nil)
		th[i] = o
		fd := (up - dn) / (2 * h)
		worst = math.Max(worst, math.Abs(fd-gr[i])/math.Max(1, math.Abs(fd)))
	}
	if worst > 1e-6 {
		t.Fatalf("relative error %.3g", worst)
	}
	// Value: at θ = 0 every logit is 0, so log p = n log ½ + prior.
	zero := make([]float64, m.Dim())
	want := float64(n)*math.Log(0.5) - 0.5*float64(m.Dim())*math.Log(2*math.Pi)
	if v := m.LogPostGradHost(zero, nil); math.Abs(v-want) > 1e-9*math.Abs(want) {
		t.Fatalf("log p(0) = %v, want %v", v, want)
	}
	if _, err := New(x, append(append([]float64(nil), g.Y[:n-1]...), 2), n, p); err == nil {
		t.Fatal("label 2 accepted")
	}
}

// Bad data are refused with the problem named: shapes, labels outside {0, 1}, a NaN input (it would make every
// lower bound NaN).
func TestNewBadData(t *testing.T) {
	x := []float64{1, 2, 3, 4}
	for _, c := range []struct {
		x, y []float64
		want string
	}{
		{x, []float64{0}, "shapes disagree"},
		{x, []float64{0, 2}, "labels must be 0 or 1"},
		{[]float64{1, 2, math.NaN(), 4}, []float64{0, 1}, "X[1, 0] is NaN"},
	} {
		if _, err := New(c.x, c.y, 2, 2); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("x %v, y %v: error %v, want one containing %q", c.x, c.y, err, c.want)
		}
	}
}
