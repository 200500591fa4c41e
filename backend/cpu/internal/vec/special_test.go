package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

func refSoftplus(x float64) float64 {
	if x > 30 {
		return x + math.Exp(-x)
	}
	return math.Log1p(math.Exp(x))
}

func refSigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// Softplus and Sigmoid against package math: within 1e-15 relative (about 4 ulps; the reference has its own ulp
// or two) over arguments from −800 to 800 (every binade of e^{−|x|} the kernel reduces, the ±708 switch to the
// scalar path, tiny arguments, ±0, ±Inf and NaN), scaled by alpha, for row lengths that leave every tail length.
func TestSpecial(t *testing.T) {
	defer func(v bool) { UseFMA = v }(UseFMA)
	r := rand.New(rand.NewPCG(7, 8))
	xs := []float64{0, math.Copysign(0, -1), 1e-300, -1e-300, 1e-9, -1e-9, 707.9, 708, 708.1, -707.9, -708, -708.1,
		-745, -746, 800, -800, 36, -36, math.Inf(1), math.Inf(-1), math.NaN(), 0.5, -0.5, 1, -1}
	for i := 0; i < 20000; i++ {
		xs = append(xs, (r.Float64()*2-1)*math.Pow(10, r.Float64()*5-2))
	}
	worst := map[string]float64{}
	for _, fma := range []bool{false, UseFMA} {
		UseFMA = fma
		for _, alpha := range []float64{1, -2.5} {
			for _, n := range []int{len(xs), len(xs) - 1, len(xs) - 2, len(xs) - 3, 3} {
				src := xs[:n]
				for _, c := range []struct {
					name string
					f    func(dst, src []float64, alpha float64, scalar func(float64) float64)
					ref  func(float64) float64
				}{{"softplus", Softplus, refSoftplus}, {"sigmoid", Sigmoid, refSigmoid}} {
					dst := make([]float64, n)
					c.f(dst, src, alpha, c.ref)
					for i, v := range src {
						want := c.ref(alpha * v)
						got := dst[i]
						if math.IsNaN(want) {
							if !math.IsNaN(got) {
								t.Fatalf("%s(%v) = %v, want NaN", c.name, alpha*v, got)
							}
							continue
						}
						rel := math.Abs(got-want) / math.Abs(want)
						if got == want {
							rel = 0
						}
						worst[c.name] = math.Max(worst[c.name], rel)
						if rel > 1e-15 {
							t.Fatalf("fma=%v %s(%v) = %v, want %v (rel %.2g)", fma, c.name, alpha*v, got, want,
								math.Abs(got-want)/math.Abs(want))
						}
					}
				}
			}
		}
	}
	t.Logf("worst relative error: %v", worst)
}

// In place (dst and src the same slice), as Map allows, with arguments the kernel hands to the scalar path (NaN,
// ±800) next to ones it takes, and alpha ≠ 1 (a lane at 350·2 = 700 must not be mistaken for one to redo).
func TestSpecialInPlace(t *testing.T) {
	src := []float64{math.NaN(), -1000, 350, 1, -3, 800, 0.5, -0.25, 2}
	for _, alpha := range []float64{1, 2} {
		for _, c := range []struct {
			name string
			f    func(dst, src []float64, alpha float64, scalar func(float64) float64)
			ref  func(float64) float64
		}{{"softplus", Softplus, refSoftplus}, {"sigmoid", Sigmoid, refSigmoid}} {
			x := append([]float64(nil), src...)
			c.f(x, x, alpha, c.ref)
			for i, v := range src {
				want := c.ref(alpha * v)
				if math.IsNaN(want) != math.IsNaN(x[i]) || math.Abs(x[i]-want) > 1e-15*math.Abs(want) {
					t.Fatalf("%s in place, alpha %v: element %d (%v) = %v, want %v", c.name, alpha, i, v, x[i], want)
				}
			}
		}
	}
}
