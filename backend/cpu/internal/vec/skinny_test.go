package vec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// AccTN and DotRows against plain float64 loops, for every tile path (p around multiples of 4, 8 and 16 for the
// masked tails, k through the 4/2/1 tiles of the AVX2 kernels and across the 12- and 16-column tiles of the AVX-512
// ones), padded strides (the padding holds NaN and must stay untouched) and one row or many; with the AVX-512
// kernels, the AVX2 kernels and the generic loops in turn. Tolerance 1e-13 relative to Σ|terms|.
func TestSkinny(t *testing.T) {
	defer func(fma, avx512 bool) { UseFMA, UseAVX512 = fma, avx512 }(UseFMA, UseAVX512)
	modes := []struct {
		name        string
		fma, avx512 bool
	}{{"generic", false, false}, {"avx2", UseFMA, false}, {"avx512", UseFMA, UseAVX512}}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			if m.name == "avx512" && !m.avx512 {
				t.Skip("the CPU has no AVX-512F: AVX-512 kernels not tested here")
			}
			UseFMA, UseAVX512 = m.fma, m.avx512
			testSkinny(t)
		})
	}
}

func testSkinny(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	mat := func(rows, cols, ld int) []float64 {
		a := make([]float64, max(rows*ld, 1))
		for i := range a {
			a[i] = math.NaN()
		}
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				a[i*ld+j] = r.NormFloat64()
			}
		}
		return a
	}
	for _, p := range []int{1, 3, 4, 5, 7, 8, 9, 12, 13, 15, 16, 17, 20, 24, 31, 100} {
		for _, k := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 16, 17, 25, 33} {
			for _, rows := range []int{1, 2, 7, 33} {
				pad := (p + k + rows) % 3
				ldw, ldx, ldc, ldt, ldq := p+pad, k+pad, p+2*pad, k+pad, p+pad
				w, x := mat(rows, p, ldw), mat(rows, k, ldx)
				c, q := mat(k, p, ldc), mat(k, p, ldq)
				c0 := append([]float64(nil), c...)
				AccTN(c, ldc, w, ldw, x, ldx, rows, p, k)
				tt := mat(rows, k, ldt)
				DotRows(tt, ldt, w, ldw, q, ldq, rows, p, k)
				for i := 0; i < k; i++ {
					for j := 0; j < ldc; j++ {
						got := c[i*ldc+j]
						if j >= p {
							if !math.IsNaN(got) {
								t.Fatalf("AccTN p=%d k=%d rows=%d: wrote padding (%d,%d)", p, k, rows, i, j)
							}
							continue
						}
						want, mag := c0[i*ldc+j], math.Abs(c0[i*ldc+j])
						for rr := 0; rr < rows; rr++ {
							want += x[rr*ldx+i] * w[rr*ldw+j]
							mag += math.Abs(x[rr*ldx+i] * w[rr*ldw+j])
						}
						if math.Abs(got-want) > 1e-13*mag {
							t.Fatalf("AccTN p=%d k=%d rows=%d: C[%d][%d] = %v, want %v", p, k, rows, i, j, got, want)
						}
					}
				}
				for rr := 0; rr < rows; rr++ {
					for i := 0; i < ldt; i++ {
						got := tt[rr*ldt+i]
						if i >= k {
							if !math.IsNaN(got) {
								t.Fatalf("DotRows p=%d k=%d rows=%d: wrote padding (%d,%d)", p, k, rows, rr, i)
							}
							continue
						}
						want, mag := 0.0, 0.0
						for j := 0; j < p; j++ {
							want += w[rr*ldw+j] * q[i*ldq+j]
							mag += math.Abs(w[rr*ldw+j] * q[i*ldq+j])
						}
						if math.Abs(got-want) > 1e-13*mag {
							t.Fatalf("DotRows p=%d k=%d rows=%d: T[%d][%d] = %v, want %v", p, k, rows, rr, i, got, want)
						}
					}
				}
			}
		}
	}
}

// A short operand is refused with a panic that names it, never read past.
func TestSkinnyBounds(t *testing.T) {
	defer func() {
		if v := recover(); v == nil {
			t.Fatal("AccTN with a short w did not panic")
		}
	}()
	AccTN(make([]float64, 8), 4, make([]float64, 7), 4, make([]float64, 4), 2, 2, 4, 2)
}

// BenchmarkSkinny times AccTN and DotRows as the low-rank sampler at d = 1e6, p = 100, k = 10 calls them, in
// blocks of 512 rows, with each kernel set the CPU has: on one cache-resident block (GFLOP/s counts 2·rows·p·k),
// and over a W of 160 MB, far larger than the caches (GB/s counts the bytes of W).
func BenchmarkSkinny(b *testing.B) {
	b.Run("InCache", func(b *testing.B) { benchSkinny(b, 512, false) })
	b.Run("FromMemory", func(b *testing.B) { benchSkinny(b, 200192, true) })
}

func benchSkinny(b *testing.B, rows int, bytes bool) {
	defer func(fma, avx512 bool) { UseFMA, UseAVX512 = fma, avx512 }(UseFMA, UseAVX512)
	const p, k, nb = 100, 10, 512
	r := rand.New(rand.NewPCG(1, 2))
	fill := func(n int) []float64 {
		a := make([]float64, n)
		for i := range a {
			a[i] = r.NormFloat64()
		}
		return a
	}
	w, x, c, q, tt := fill(rows*p), fill(rows*k), fill(k*p), fill(k*p), fill(nb*k)
	rate := func(b *testing.B) {
		if bytes {
			b.ReportMetric(float64(rows*p*8)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		} else {
			b.ReportMetric(float64(2*rows*p*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		}
	}
	for _, m := range []struct {
		name        string
		fma, avx512 bool
	}{{"generic", false, false}, {"avx2", UseFMA, false}, {"avx512", UseFMA, UseAVX512}} {
		if (m.name == "avx2" && !m.fma) || (m.name == "avx512" && !m.avx512) || (m.name == "generic" && bytes) {
			continue
		}
		UseFMA, UseAVX512 = m.fma, m.avx512
		b.Run("AccTN/"+m.name, func(b *testing.B) {
			for b.Loop() {
				for r0 := 0; r0 < rows; r0 += nb {
					AccTN(c, p, w[r0*p:], p, x[r0*k:], k, nb, p, k)
				}
			}
			rate(b)
		})
		b.Run("DotRows/"+m.name, func(b *testing.B) {
			for b.Loop() {
				for r0 := 0; r0 < rows; r0 += nb {
					DotRows(tt, k, w[r0*p:], p, q, p, nb, p, k)
				}
			}
			rate(b)
		})
	}
}

// BenchmarkReadBandwidth reads 800 MB with one load per cache line (touch), on one goroutine and on two, each
// sweeping its half in blocks of 400 KB as the low-rank kernels do: the read rate the streaming kernels are
// measured against (BenchmarkSkinny/FromMemory).
func BenchmarkReadBandwidth(b *testing.B) {
	w := make([]float64, 100_000_000)
	for i := range w {
		w[i] = 1
	}
	for _, g := range []int{1, 2} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			for b.Loop() {
				var wg sync.WaitGroup
				for t := range g {
					wg.Go(func() {
						part := w[t*len(w)/g : (t+1)*len(w)/g]
						for r0 := 0; r0 < len(part); r0 += 51200 {
							touch(part[r0:min(r0+51200, len(part))])
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(8*float64(len(w))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
