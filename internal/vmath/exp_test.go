package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Exp gives math.Exp's bits for every argument: uniform over ±750 (beyond the kernel's ±708 too), near 0, around
// the kernel's limit, in the subnormal and overflow ranges, ±0, ±Inf and NaN; rows of every length mod 4, at
// every offset, and in place. Without AVX2/FMA it is math.Exp itself.
func TestExpBits(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var xs []float64
	for range 200000 {
		xs = append(xs, (r.Float64()*2-1)*750)
	}
	for range 20000 {
		xs = append(xs, (r.Float64()*2-1)*1e-3, (r.Float64()*2-1)*20, -708+(r.Float64()*2-1)*1e-9,
			708+(r.Float64()*2-1)*1e-9, -745+r.Float64()*40)
	}
	for _, v := range []float64{0, math.Copysign(0, -1), 708, -708, math.Nextafter(708, 1), math.Nextafter(-708, -1),
		709.78, 710, -745.2, -746, 1e-300, -1e-300, math.Inf(1), math.Inf(-1), math.NaN(), 0.5, -0.5, 1, -1} {
		xs = append(xs, v)
	}
	r.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	checkExact(t, Exp, math.Exp, xs)
	t.Logf("kernel in use: %v", UseFMA)
}

// checkExact compares fn with scalar bit for bit (NaN with NaN) over xs as one row, over short rows at every offset
// and length mod 4, and in place.
func checkExact(t *testing.T, fn func(dst, src []float64), scalar func(float64) float64, xs []float64) {
	t.Helper()
	check := func(name string, got, src []float64) {
		t.Helper()
		bad := 0
		for i, x := range src {
			want := scalar(x)
			if math.Float64bits(got[i]) != math.Float64bits(want) && !(want != want && got[i] != got[i]) {
				if bad < 5 {
					t.Errorf("%s: f(%v) = %v (%#x), scalar %v (%#x)", name, x, got[i], math.Float64bits(got[i]), want,
						math.Float64bits(want))
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d differ", name, bad, len(src))
		}
	}
	dst := make([]float64, len(xs))
	fn(dst, xs)
	check("row", dst, xs)
	for off := 0; off < 4; off++ {
		for n := 0; n < 9; n++ {
			src := xs[off : off+n+100]
			d := make([]float64, len(src))
			fn(d, src)
			check("short row", d, src)
		}
	}
	in := append([]float64(nil), xs...)
	fn(in, in)
	check("in place", in, xs)
}

func BenchmarkExp(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	src := make([]float64, 4096)
	for i := range src {
		src[i] = -r.Float64() * 700
	}
	dst := make([]float64, len(src))
	b.Run("kernel", func(b *testing.B) {
		b.SetBytes(8 * int64(len(src)))
		for i := 0; i < b.N; i++ {
			Exp(dst, src)
		}
	})
	b.Run("math.Exp", func(b *testing.B) {
		b.SetBytes(8 * int64(len(src)))
		for i := 0; i < b.N; i++ {
			for j, x := range src {
				dst[j] = math.Exp(x)
			}
		}
	})
}
