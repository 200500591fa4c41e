package mog

import (
	"math"
	"runtime"
	"testing"
)

// TestParallelSameBits checks that the point-parallel passes (Step, the exponentials of the statistics, φ, the
// VB-E step) give the same bits on one goroutine and on four: F, the gradient, the natural gradient, a step and an
// E-step of a 6000-point, 8-component mixture (48000 pairs, so that the passes split).
func TestParallelSameBits(t *testing.T) {
	const N, K = 6000, 8
	m, err := New(Synthetic(0.3, N, 0.03, 3), N, 2, K, DefaultPrior(2), Options{})
	if err != nil {
		t.Fatal(err)
	}
	x, err := Init(m, 4)
	if err != nil {
		t.Fatal(err)
	}
	eval := func(procs int) [][]float64 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		c := NewCollapsed(m)
		g, ng, st := make([]float64, c.Dim()), make([]float64, c.Dim()), make([]float64, c.Dim())
		F := c.Grad(g, x)
		c.NatGrad(ng, g, x)
		c.Step(st, x, ng, -0.3)
		logr := append([]float64(nil), x[:N*K]...)
		if err := m.EStep(logr, x[N*K:], c.Post()); err != nil {
			t.Fatal(err)
		}
		return [][]float64{{F, c.Value(st)}, g, ng, st, logr}
	}
	one, four := eval(1), eval(4)
	names := []string{"F", "gradient", "natural gradient", "step", "E-step"}
	for i := range one {
		for j := range one[i] {
			if math.Float64bits(one[i][j]) != math.Float64bits(four[i][j]) {
				t.Fatalf("%s[%d]: %v on one goroutine, %v on four", names[i], j, one[i][j], four[i][j])
			}
		}
	}
	if math.IsNaN(one[0][0]) || math.IsNaN(one[0][1]) {
		t.Fatalf("F %v, after the step %v", one[0][0], one[0][1])
	}
}

// TestStepFloorAndNaN checks Step's comparisons against math.Max's rules: entries more than 700 below the row's
// maximum are raised to it before the renormalisation, and a NaN in a row makes the whole row NaN.
func TestStepFloorAndNaN(t *testing.T) {
	m, err := New([]float64{0, 0, 1, 1, 2, 2}, 3, 2, 3, DefaultPrior(2), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := NewCollapsed(m)
	x := make([]float64, c.Dim())
	p := make([]float64, c.Dim())
	copy(p, []float64{0, -1000, 5, 1, math.NaN(), 2, 0, 0, 0})
	dst := make([]float64, c.Dim())
	c.Step(dst, x, p, 1)
	// Row 0: (0, −1000, 5) → (0, −695, 5) renormalised.
	lse := 5 + math.Log(math.Exp(-5)+math.Exp(-700)+1)
	for k, want := range []float64{0 - lse, -695 - lse, 5 - lse} {
		if math.Abs(dst[k]-want) > 1e-12 {
			t.Errorf("row 0 entry %d: %v, want %v", k, dst[k], want)
		}
	}
	for k := 3; k < 6; k++ {
		if !math.IsNaN(dst[k]) {
			t.Errorf("row 1 entry %d: %v, want NaN", k-3, dst[k])
		}
	}
	for k := 6; k < 9; k++ {
		if math.Abs(dst[k]+math.Log(3)) > 1e-15 {
			t.Errorf("row 2 entry %d: %v, want −log 3", k-6, dst[k])
		}
	}
}
