package vec

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geovb/geovb/internal/bigref"
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

// Softplus and Sigmoid against the 256-bit references of internal/bigref: the lanes the kernel computes within
// 2 ulps of the correctly rounded value, and every other element (tails, |x| > 708, ±Inf, NaN) equal to what the
// scalar function passed in gives, over arguments from −800 to 800 (every binade of e^{−|x|} the kernel reduces,
// tiny arguments, ±0), scaled by alpha, for row lengths that leave every tail length, with and without the kernel.
func TestSpecial(t *testing.T) {
	defer func(v bool) { UseFMA = v }(UseFMA)
	r := rand.New(rand.NewPCG(7, 8))
	xs := []float64{0, math.Copysign(0, -1), 1e-300, -1e-300, 1e-9, -1e-9, 707.9, 708, 708.1, -707.9, -708, -708.1,
		-745, -746, 800, -800, 36, -36, math.Inf(1), math.Inf(-1), math.NaN(), 0.5, -0.5, 1, -1}
	for i := 0; i < 4000; i++ {
		xs = append(xs, (r.Float64()*2-1)*math.Pow(10, r.Float64()*5-2))
	}
	type fn struct {
		name   string
		f      func(dst, src []float64, alpha float64, scalar func(float64) float64)
		scalar func(float64) float64
		exact  func(float64) float64
	}
	fns := []fn{{"softplus", Softplus, refSoftplus, bigref.Log1pExp}, {"sigmoid", Sigmoid, refSigmoid, bigref.Sigmoid}}
	worst := map[string]float64{}
	for _, alpha := range []float64{1, -2.5} {
		for _, c := range fns {
			want := make([]float64, len(xs)) // correctly rounded, for the arguments the kernel takes
			for i, v := range xs {
				if x := alpha * v; math.Abs(x) <= 708 {
					want[i] = c.exact(x)
				}
			}
			for _, fma := range []bool{false, UseFMA} {
				UseFMA = fma
				for _, n := range []int{len(xs), len(xs) - 1, len(xs) - 2, len(xs) - 3, 3} {
					dst := make([]float64, n)
					c.f(dst, xs[:n], alpha, c.scalar)
					for i, v := range xs[:n] {
						x, got := alpha*v, dst[i]
						if !fma || i >= n&^3 || !(math.Abs(x) <= 708) {
							if s := c.scalar(x); got != s && !(math.IsNaN(got) && math.IsNaN(s)) {
								t.Fatalf("fma=%v %s(%v) = %v on the scalar path, scalar function %v", fma, c.name, x, got, s)
							}
							continue
						}
						d := bigref.Ulps(got, want[i])
						worst[c.name] = math.Max(worst[c.name], d)
						if d > 2 {
							t.Fatalf("%s(%v) = %v, correctly rounded %v: %.1f ulp", c.name, x, got, want[i], d)
						}
					}
				}
			}
		}
	}
	t.Logf("worst error of the kernel lanes (ulp): %v", worst)
}

// In place (dst and src the same slice), as Map allows: bit for bit what the out-of-place call gives, with
// arguments the kernel hands to the scalar path (NaN, ±800) next to ones it takes, and alpha ≠ 1 (a lane at
// 350·2 = 700 must not be mistaken for one to redo).
func TestSpecialInPlace(t *testing.T) {
	src := []float64{math.NaN(), -1000, 350, 1, -3, 800, 0.5, -0.25, 2}
	for _, alpha := range []float64{1, 2} {
		for _, c := range []struct {
			name string
			f    func(dst, src []float64, alpha float64, scalar func(float64) float64)
			ref  func(float64) float64
		}{{"softplus", Softplus, refSoftplus}, {"sigmoid", Sigmoid, refSigmoid}} {
			want := make([]float64, len(src))
			c.f(want, src, alpha, c.ref) // out of place (TestSpecial checks these values)
			x := append([]float64(nil), src...)
			c.f(x, x, alpha, c.ref)
			for i, v := range src {
				if x[i] != want[i] && !(math.IsNaN(x[i]) && math.IsNaN(want[i])) {
					t.Fatalf("%s in place, alpha %v: element %d (%v) = %v, out of place %v", c.name, alpha, i, v, x[i], want[i])
				}
			}
		}
	}
}
