package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Log gives math.Log's bits for every argument: log-uniform over the whole positive range, near 1, around √2/2·2^k
// (where the kernel's branch turns), subnormals, zeros, negatives, ±Inf and NaN; rows of every length mod 4, at
// every offset, and in place.
func TestLogBits(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var xs []float64
	for range 200000 {
		xs = append(xs, math.Exp((r.Float64()*2-1)*709))
	}
	h := 7.07106781186547524401e-01
	for range 20000 {
		k := float64(r.IntN(200) - 100)
		xs = append(xs, 1+(r.Float64()*2-1)*1e-6, r.Float64()*8, math.Ldexp(h, int(k)),
			math.Nextafter(math.Ldexp(h, int(k)), 0), math.Nextafter(math.Ldexp(h, int(k)), 2),
			r.Float64()*2.2250738585072014e-308, -r.Float64())
	}
	for _, v := range []float64{0, math.Copysign(0, -1), 1, 2, 0.5, h, math.MaxFloat64, math.SmallestNonzeroFloat64,
		2.2250738585072014e-308, math.Inf(1), math.Inf(-1), math.NaN(), -1} {
		xs = append(xs, v)
	}
	r.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	checkExact(t, Log, math.Log, xs)
}

func BenchmarkLog(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	src := make([]float64, 4096)
	for i := range src {
		src[i] = 1 + r.Float64()*7
	}
	dst := make([]float64, len(src))
	b.Run("kernel", func(b *testing.B) {
		b.SetBytes(8 * int64(len(src)))
		for i := 0; i < b.N; i++ {
			Log(dst, src)
		}
	})
	b.Run("math.Log", func(b *testing.B) {
		b.SetBytes(8 * int64(len(src)))
		for i := 0; i < b.N; i++ {
			for j, x := range src {
				dst[j] = math.Log(x)
			}
		}
	})
}
