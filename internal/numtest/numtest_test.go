package numtest

import (
	"math"
	"testing"
)

func TestMaxRel(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		a, b  []float64
		floor float64
		want  float64
	}{
		{[]float64{1, 2.5, -4}, []float64{1, 2, -4}, 0, 0.5 / 4}, // the largest error over the largest reference
		{[]float64{1, 2.5, -4}, []float64{1, 2, -4}, 10, 0.5 / 10},
		{[]float64{0.1}, []float64{0}, 1, 0.1},
		{[]float64{0, 0}, []float64{0, 0}, 0, 0},
		{[]float64{1e-300}, []float64{0}, 0, inf}, // any error against an all-zero reference without a floor
		{nil, nil, 0, 0},
		{[]float64{nan}, []float64{1}, 0, inf},
		{[]float64{1}, []float64{nan}, 0, inf},
		{[]float64{nan}, []float64{nan}, 0, inf},
		{[]float64{inf}, []float64{inf}, 0, inf},
		{[]float64{1, 2}, []float64{1}, 0, inf},
	} {
		if got := MaxRel(c.a, c.b, c.floor); got != c.want {
			t.Errorf("MaxRel(%v, %v, %v) = %v, want %v", c.a, c.b, c.floor, got, c.want)
		}
	}
}
