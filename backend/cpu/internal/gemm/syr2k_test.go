package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// syr2kCase runs one Dsyr2k and compares the ul triangle with the reference, entry by entry, to 1e-13 of the sum of
// the magnitudes of the terms; the other triangle and the padding must keep their values, and with beta = 0 the NaN
// that C starts with must not survive.
func syr2kCase(t *testing.T, rnd *rand.Rand, ul blas.Uplo, tA blas.Transpose, n, k int, alpha, beta float64, pad int) bool {
	t.Helper()
	tr := tA != blas.NoTrans
	ar, ac := n, k
	if tr {
		ar, ac = k, n
	}
	lda, ldb, ldc := ac+pad, ac+2*pad, n+pad
	a := matrix(rnd, ar, ac, lda)
	b := matrix(rnd, ar, ac, ldb)
	c := matrix(rnd, n, n, ldc)
	in := func(i, j int) bool { return j < n && ((ul == blas.Upper && j >= i) || (ul == blas.Lower && j <= i)) }
	if beta == 0 {
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if in(i, j) {
					c[i*ldc+j] = math.NaN()
				}
			}
		}
	}
	a0, b0, c0 := append([]float64(nil), a...), append([]float64(nil), b...), append([]float64(nil), c...)
	Dsyr2k(ul, tA, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	name := fmt.Sprintf("Dsyr2k(%c%s n=%d k=%d alpha=%v beta=%v pad=%d)", ul, tname(tA), n, k, alpha, beta, pad)
	for i := range a {
		if !sameBits(a[i], a0[i]) {
			t.Errorf("%s: A[%d] written", name, i)
			return false
		}
	}
	for i := range b {
		if !sameBits(b[i], b0[i]) {
			t.Errorf("%s: B[%d] written", name, i)
			return false
		}
	}
	for i := 0; i < n; i++ {
		for j := 0; j < ldc && i*ldc+j < len(c); j++ {
			if !in(i, j) {
				if !sameBits(c[i*ldc+j], c0[i*ldc+j]) {
					t.Errorf("%s: C[%d][%d] outside the triangle written: %v, was %v", name, i, j, c[i*ldc+j], c0[i*ldc+j])
					return false
				}
				continue
			}
			// op(A)·op(B)ᵀ + op(B)·op(A)ᵀ, with op(B)ᵀ the other transpose of B.
			w1, m1 := refEntry(tr, !tr, k, alpha, a, lda, b, ldb, beta, c0[i*ldc+j], i, j)
			w2, m2 := refEntry(tr, !tr, k, alpha, b, ldb, a, lda, 0, 0, i, j)
			if !checkClose(t, fmt.Sprintf("%s C[%d][%d]", name, i, j), c[i*ldc+j], w1+w2, m1+m2) {
				return false
			}
		}
	}
	return true
}

func TestDsyr2k(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		rnd := rand.New(rand.NewPCG(41, 42))
		for _, ul := range []blas.Uplo{blas.Upper, blas.Lower} {
			for _, tA := range []blas.Transpose{blas.NoTrans, blas.Trans, blas.ConjTrans} {
				for _, n := range sweepSizes() {
					for _, k := range []int{1, 7, 32, 257} {
						if !syr2kCase(t, rnd, ul, tA, n, k, -0.7, 0.3, 3) {
							return
						}
					}
				}
				for _, alpha := range []float64{0, 1, -0.7} {
					for _, beta := range []float64{0, 1, 0.3} {
						for _, k := range []int{19, 0} {
							if !syr2kCase(t, rnd, ul, tA, 41, k, alpha, beta, 2) {
								return
							}
						}
					}
				}
			}
		}
	})
}

// TestDsyr2kTiles runs orders that take several tiles, the last one partial, with small tiles and as shipped.
func TestDsyr2kTiles(t *testing.T) {
	save := syr2kBlock
	defer func() { syr2kBlock = save }()
	withKernels(t, func(t *testing.T) {
		rnd := rand.New(rand.NewPCG(43, 44))
		for _, blk := range []int{16, 256} {
			syr2kBlock = blk
			for _, ul := range []blas.Uplo{blas.Upper, blas.Lower} {
				for _, tA := range trans {
					for _, n := range []int{blk - 1, blk, blk + 1, 2*blk + 7} {
						for _, beta := range []float64{0, 0.3} {
							if !syr2kCase(t, rnd, ul, tA, n, 33, -0.7, beta, 1) {
								return
							}
						}
					}
				}
			}
		}
	})
}

// TestDsyr2kDefaults runs orders around the thresholds that send small updates to gonum, as shipped.
func TestDsyr2kDefaults(t *testing.T) {
	rnd := rand.New(rand.NewPCG(45, 46))
	for _, ul := range []blas.Uplo{blas.Upper, blas.Lower} {
		for _, tA := range trans {
			for _, nk := range [][2]int{{4, 30}, {7, 30}, {8, 8}, {8, 30}, {9, 3}, {200, 32}} {
				if !syr2kCase(t, rnd, ul, tA, nk[0], nk[1], -0.7, 0, 1) {
					return
				}
			}
		}
	}
}

// TestDsyr2kMatchesGonum compares with gonum's Dsyr2k directly, to rounding, in the shape Dsytrd calls it with.
func TestDsyr2kMatchesGonum(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		rnd := rand.New(rand.NewPCG(47, 48))
		for _, ul := range []blas.Uplo{blas.Upper, blas.Lower} {
			for _, tA := range trans {
				const n, k = 168, 32
				a, b := matrix(rnd, n, n, n), matrix(rnd, n, n, n)
				c := matrix(rnd, n, n, n)
				want := append([]float64(nil), c...)
				Dsyr2k(ul, tA, n, k, -1, a, n, b, n, 1, c, n)
				gonum.Implementation{}.Dsyr2k(ul, tA, n, k, -1, a, n, b, n, 1, want, n)
				for i := range c {
					if math.Abs(c[i]-want[i]) > 1e-13*(1+math.Abs(want[i])) {
						t.Errorf("%c%s: entry %d is %v, gonum gives %v", ul, tname(tA), i, c[i], want[i])
						return
					}
				}
			}
		}
	})
}

// TestDsyr2kPanics checks that bad arguments panic as gonum's do, with the same value, and that empty updates with
// short slices do not.
func TestDsyr2kPanics(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		a, b, c := make([]float64, 40*40), make([]float64, 40*40), make([]float64, 40*40)
		type call struct {
			ul      blas.Uplo
			tA      blas.Transpose
			n, k    int
			a       []float64
			lda     int
			b       []float64
			ldb     int
			c       []float64
			ldc     int
			comment string
		}
		U, L, N, T := blas.Upper, blas.Lower, blas.NoTrans, blas.Trans
		for _, cl := range []call{
			{'x', N, 40, 40, a, 40, b, 40, c, 40, "uplo"},
			{U, 'x', 40, 40, a, 40, b, 40, c, 40, "trans"},
			{U, N, -1, 40, a, 40, b, 40, c, 40, "n"},
			{U, N, 40, -1, a, 40, b, 40, c, 40, "k"},
			{U, N, 40, 40, a, 39, b, 40, c, 40, "lda"},
			{U, T, 40, 40, a, 40, b, 39, c, 40, "ldb"},
			{L, N, 40, 40, a, 40, b, 40, c, 39, "ldc"},
			{U, N, 40, 40, a[1:], 40, b, 40, c, 40, "short a"},
			{L, T, 40, 40, a, 40, b[1:], 40, c, 40, "short b"},
			{L, N, 40, 40, a, 40, b, 40, c[1:], 40, "short c"},
			{U, N, 0, 40, nil, 40, nil, 40, nil, 1, "n = 0"},
			{L, N, 40, 0, a, 1, b, 1, c, 40, "k = 0"},
			{L, T, 40, 40, a, 40, b, 40, c, 40, "valid"},
		} {
			run := func(f func(blas.Uplo, blas.Transpose, int, int, float64, []float64, int, []float64, int, float64, []float64, int)) any {
				return recovered(func() { f(cl.ul, cl.tA, cl.n, cl.k, 1.5, cl.a, cl.lda, cl.b, cl.ldb, 0.5, cl.c, cl.ldc) })
			}
			if got, want := run(Dsyr2k), run(gonum.Implementation{}.Dsyr2k); got != want {
				t.Errorf("%s: panic %v, gonum's %v", cl.comment, got, want)
			}
		}
	})
}

// TestDsyr2kConcurrent runs updates on several goroutines at once, each with its own tile buffer from the pool.
func TestDsyr2kConcurrent(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rnd := rand.New(rand.NewPCG(49, uint64(g)))
				for i := 0; i < 3; i++ {
					syr2kCase(t, rnd, blas.Lower, blas.NoTrans, 90+g, 20+i, 1, 0.5, 0)
					syr2kCase(t, rnd, blas.Upper, blas.Trans, 70+i, 30+g, -1, 0, 1)
				}
			}()
		}
		wg.Wait()
	})
}

func TestDsyr2kAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers")
	}
	withKernels(t, func(t *testing.T) {
		if active() == nil {
			t.Skip("gonum")
		}
		const n, k = 300, 32
		a, b, c := make([]float64, n*k), make([]float64, n*k), make([]float64, n*n)
		run := func() {
			Dsyr2k(blas.Lower, blas.NoTrans, n, k, -1, a, k, b, k, 1, c, n)
			Dsyr2k(blas.Upper, blas.Trans, k, n, 1, a, k, b, k, 0, c, n)
		}
		run()
		if got := testing.AllocsPerRun(20, run); got != 0 {
			t.Errorf("%v allocations per call", got)
		}
	})
}

// BenchmarkDsyr2k runs the update of LAPACK's blocked tridiagonal reduction (lower, no transpose, k = 32, alpha =
// −1, beta = 1) on the trailing matrices of orders 200 and 1000. Flops as BLAS counts them: 2·n·(n+1)·k.
func BenchmarkDsyr2k(b *testing.B) {
	for _, n := range []int{168, 968} {
		const k = 32
		a, bm, c := randSlice(n*k), randSlice(n*k), randSlice(n*n)
		for _, im := range []struct {
			name string
			f    func(blas.Uplo, blas.Transpose, int, int, float64, []float64, int, []float64, int, float64, []float64, int)
		}{{"fast", Dsyr2k}, {"gonum", gonum.Implementation{}.Dsyr2k}} {
			b.Run(fmt.Sprintf("n=%d,k=%d/%s", n, k, im.name), func(b *testing.B) {
				for b.Loop() {
					im.f(blas.Lower, blas.NoTrans, n, k, -1, a, k, bm, k, 1, c, n)
				}
				b.ReportMetric(2*float64(n)*float64(n+1)*k*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
