package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// AccTN and DotRows against plain float64 loops, for every tile path (p around multiples of 4 and 8, k through the
// 4/2/1 tiles), padded strides (the padding holds NaN and must stay untouched) and one row or many; then the same
// with the generic loops alone. Tolerance 1e-13 relative to Σ|terms|.
func TestSkinny(t *testing.T) {
	defer func(v bool) { UseFMA = v }(UseFMA)
	for _, fma := range []bool{false, UseFMA} {
		UseFMA = fma
		testSkinny(t)
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
	for _, p := range []int{1, 3, 4, 5, 7, 8, 9, 12, 13, 16, 20, 100} {
		for _, k := range []int{1, 2, 3, 4, 5, 6, 7, 10, 16} {
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
							t.Fatalf("AccTN fma=%v p=%d k=%d rows=%d: C[%d][%d] = %v, want %v", UseFMA, p, k, rows, i, j, got, want)
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
							t.Fatalf("DotRows fma=%v p=%d k=%d rows=%d: T[%d][%d] = %v, want %v", UseFMA, p, k, rows, rr, i, got, want)
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
