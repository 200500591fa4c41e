package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

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

// Softplus, Sigmoid and Tanh against the 256-bit references of internal/bigref: the lanes the kernel computes within
// 2 ulps (tanh: 4) of the correctly rounded value, and every other element (tails, |x| > 708 (tanh: 354), ±Inf, NaN)
// equal to what the scalar function passed in gives, over arguments from −800 to 800 (every binade of e^{−|x|} the
// kernel reduces, tiny arguments, ±0, both sides of tanh's switch at |x| = ½), scaled by alpha, for row lengths that
// leave every tail length, with and without the kernel.
func TestSpecial(t *testing.T) {
	defer func(v bool) { UseFMA = v }(UseFMA)
	r := rand.New(rand.NewPCG(7, 8))
	xs := []float64{0, math.Copysign(0, -1), 1e-300, -1e-300, 1e-9, -1e-9, 707.9, 708, 708.1, -707.9, -708, -708.1,
		-745, -746, 800, -800, 36, -36, math.Inf(1), math.Inf(-1), math.NaN(), 0.5, -0.5, 1, -1}
	xs = append(xs, 354, -354, 354.1, -354.1, 0.25, -0.25, 0.49999999999999994, 0.5000000000000001, 1e-5, -3e-7)
	for i := 0; i < 4000; i++ {
		xs = append(xs, (r.Float64()*2-1)*math.Pow(10, r.Float64()*5-2), 3*r.Float64()-1.5)
	}
	type fn struct {
		name        string
		f           func(dst, src []float64, alpha float64, scalar func(float64) float64)
		scalar      func(float64) float64
		exact       func(float64) float64
		limit, ulps float64 // the kernel takes |x| ≤ limit, within ulps
	}
	fns := []fn{{"softplus", Softplus, refSoftplus, bigref.Log1pExp, 708, 2},
		{"sigmoid", Sigmoid, refSigmoid, bigref.Sigmoid, 708, 2}, {"tanh", Tanh, math.Tanh, bigref.Tanh, 354, 4}}
	worst := map[string]float64{}
	for _, alpha := range []float64{1, -2.5} {
		for _, c := range fns {
			want := make([]float64, len(xs)) // correctly rounded, for the arguments the kernel takes
			for i, v := range xs {
				if x := alpha * v; math.Abs(x) <= c.limit {
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
						if !fma || i >= n&^3 || !(math.Abs(x) <= c.limit) {
							if s := c.scalar(x); got != s && !(math.IsNaN(got) && math.IsNaN(s)) {
								t.Fatalf("fma=%v %s(%v) = %v on the scalar path, scalar function %v", fma, c.name, x, got, s)
							}
							continue
						}
						d := bigref.Ulps(got, want[i])
						worst[c.name] = math.Max(worst[c.name], d)
						if d > c.ulps {
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
		}{{"softplus", Softplus, refSoftplus}, {"sigmoid", Sigmoid, refSigmoid}, {"tanh", Tanh, math.Tanh}} {
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

// The scalar function is called with x = alpha·src[i] itself for every lane the kernel hands over and for the tail:
// with a scalar function that is not the kernel's (x ↦ −x − 1) those lanes must hold exactly its value, in place and
// out of place. (With the true function a wrong argument can go unseen: tanh(2x) = tanh(x) = ±1 beyond 354.)
func TestSpecialScalarArgument(t *testing.T) {
	src := []float64{math.NaN(), -1000, 350, 1, -3, 800, 0.5, 400, 2, -360, 1e300}
	mark := func(x float64) float64 { return -x - 1 }
	for _, alpha := range []float64{1, 2} {
		for _, c := range []struct {
			name  string
			f     func(dst, src []float64, alpha float64, scalar func(float64) float64)
			limit float64
		}{{"softplus", Softplus, 708}, {"sigmoid", Sigmoid, 708}, {"tanh", Tanh, 354}} {
			for _, inPlace := range []bool{false, true} {
				dst := make([]float64, len(src))
				if inPlace {
					copy(dst, src)
					c.f(dst, dst, alpha, mark)
				} else {
					c.f(dst, src, alpha, mark)
				}
				n4 := len(src) &^ 3
				if !UseFMA {
					n4 = 0
				}
				for i, v := range src {
					x := alpha * v
					if i < n4 && math.Abs(x) <= c.limit {
						continue // a lane the kernel computed (TestSpecial checks its value)
					}
					if want := mark(x); dst[i] != want && !(math.IsNaN(dst[i]) && math.IsNaN(want)) {
						t.Fatalf("%s, alpha %v, in place %v: element %d (x = %v) = %v, want scalar(x) = %v",
							c.name, alpha, inPlace, i, x, dst[i], want)
					}
				}
			}
		}
	}
}

// BenchmarkSpecial times each function over a row of 4096 arguments in [−4, 4] (in L1) against its scalar function
// over the same row, measured in the same op: ns per element of both and their ratio.
func BenchmarkSpecial(b *testing.B) {
	src, dst := make([]float64, 4096), make([]float64, 4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range src {
		src[i] = 8*r.Float64() - 4
	}
	for _, c := range []struct {
		name   string
		f      func(dst, src []float64, alpha float64, scalar func(float64) float64)
		scalar func(float64) float64
	}{{"softplus", Softplus, refSoftplus}, {"sigmoid", Sigmoid, refSigmoid}, {"tanh", Tanh, math.Tanh}} {
		b.Run(c.name, func(b *testing.B) {
			var vec, scalar time.Duration
			for b.Loop() {
				t0 := time.Now()
				c.f(dst, src, 1, c.scalar)
				t1 := time.Now()
				for i, x := range src {
					dst[i] = c.scalar(x)
				}
				vec, scalar = vec+t1.Sub(t0), scalar+time.Since(t1)
			}
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N*len(src)) }
			b.ReportMetric(per(vec), "ns/elem")
			b.ReportMetric(per(scalar), "scalar-ns/elem")
			b.ReportMetric(scalar.Seconds()/vec.Seconds(), "scalar/kernel")
		})
	}
}
