package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The vector kernels against the generic loops and a compensated reference, for every length up to 70 and
// unaligned starts (the asm paths switch at 16, 8, 4 and 1 elements).
func TestVecKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]float64, 200)
	buf2 := make([]float64, 200)
	for i := range buf {
		buf[i], buf2[i] = 2*r.Float64()-1, 2*r.Float64()-1
	}
	for n := 0; n <= 70; n++ {
		for off := 0; off < 3; off++ {
			x, y := buf[off:off+n], buf2[off+1:off+1+n]
			var ref, abs float64
			for i := range x {
				ref += x[i] * y[i]
				abs += math.Abs(x[i] * y[i])
			}
			dots := []float64{Dot(x, y), dotGeneric(x, y)}
			if UseFMA {
				dots = append(dots, dotFMA(x, y))
			}
			for _, got := range dots {
				if math.Abs(got-ref) > 4e-16*float64(n+1)*abs+1e-300 {
					t.Fatalf("dot n=%d off=%d: %v, want %v", n, off, got, ref)
				}
			}
			want := append([]float64(nil), y...)
			for i := range want {
				want[i] += 0.37 * x[i]
			}
			axpys := map[string]func(float64, []float64, []float64){"Axpy": Axpy, "generic": axpyGeneric}
			if UseFMA {
				axpys["fma"] = axpyFMA
			}
			for name, f := range axpys {
				got := append([]float64(nil), y...)
				guard := append(append([]float64(nil), got...), 12345)
				got = guard[:n]
				f(0.37, x, got)
				if guard[n] != 12345 {
					t.Fatalf("%s n=%d wrote past the end", name, n)
				}
				for i := range got {
					if math.Abs(got[i]-want[i]) > 2e-16*(math.Abs(want[i])+0.37*math.Abs(x[i])) {
						t.Fatalf("%s n=%d off=%d [%d] = %v, want %v", name, n, off, i, got[i], want[i])
					}
				}
			}
		}
	}
	t.Logf("AVX2/FMA kernels in use: %v", UseFMA)
}
