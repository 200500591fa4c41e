package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ScaleRows and AddScaledRows against plain loops, with the AVX-512 kernels and the generic loops, for k across
// the two masked registers (and past them), one row or several, a shift or none; the padding of each row holds NaN
// and must stay untouched. Both paths round t·s + m once, as the reference does: equal bits.
func TestRows(t *testing.T) {
	have := UseAVX512
	defer func() { UseAVX512 = have }()
	for _, avx512 := range []bool{false, true} {
		if avx512 && !have {
			t.Log("the CPU has no AVX-512F: AVX-512 row kernels not tested here")
			continue
		}
		UseAVX512 = avx512
		r := rand.New(rand.NewPCG(3, 4))
		for _, k := range []int{1, 2, 7, 8, 9, 10, 15, 16, 17, 20} {
			for _, rows := range []int{1, 3, 8} {
				for _, shift := range []bool{false, true} {
					ld := k + 3
					mat := func() []float64 {
						a := make([]float64, rows*ld)
						for i := range a {
							a[i] = math.NaN()
							if i%ld < k {
								a[i] = r.NormFloat64()
							}
						}
						return a
					}
					x, d, tt := mat(), mat(), mat()
					s, m := make([]float64, rows), []float64(nil)
					for i := range s {
						s[i] = r.NormFloat64()
					}
					if shift {
						m = make([]float64, rows)
						for i := range m {
							m[i] = r.NormFloat64()
						}
					}
					x0, d0 := append([]float64(nil), x...), append([]float64(nil), d...)
					ScaleRows(x, ld, s, rows, k)
					AddScaledRows(d, ld, tt, ld, s, m, rows, k)
					for i := range x {
						row, j := i/ld, i%ld
						if j >= k {
							if !math.IsNaN(x[i]) || !math.IsNaN(d[i]) {
								t.Fatalf("avx512=%v k=%d rows=%d: padding (%d,%d) written", avx512, k, rows, row, j)
							}
							continue
						}
						if want := x0[i] * s[row]; x[i] != want {
							t.Fatalf("avx512=%v ScaleRows k=%d rows=%d: (%d,%d) = %v, want %v", avx512, k, rows, row, j, x[i], want)
						}
						c := 0.0
						if m != nil {
							c = m[row]
						}
						if want := d0[i] + math.FMA(tt[i], s[row], c); d[i] != want {
							t.Fatalf("avx512=%v AddScaledRows k=%d rows=%d: (%d,%d) = %v, want %v", avx512, k, rows, row, j, d[i], want)
						}
					}
				}
			}
		}
	}
}
