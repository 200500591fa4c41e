package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"gonum.org/v1/gonum/blas"
)

// withKernels runs f once per kernel set (AVX-512, AVX2, gonum), with the size threshold off so that every size
// reaches the micro-kernel.
func withKernels(t *testing.T, f func(t *testing.T)) {
	save512, save2, saveWork, saveRows, saveN := useAVX512, useAVX2, minWork, minRows, minSyrkN
	defer func() { useAVX512, useAVX2, minWork, minRows, minSyrkN = save512, save2, saveWork, saveRows, saveN }()
	minWork, minRows, minSyrkN = 0, 0, 0
	saveL, saveR, saveRHS := minTrsmLeft, minTrsmRight, minTrsmRHS
	defer func() { minTrsmLeft, minTrsmRight, minTrsmRHS = saveL, saveR, saveRHS }()
	minTrsmLeft, minTrsmRight, minTrsmRHS = 0, 0, 0
	for _, kc := range []struct {
		name       string
		avx512, v2 bool
		set        *kernelSet
		has        bool
	}{
		{"avx512", true, false, avx512Set, save512},
		{"avx2", false, true, avx2Set, save2},
		{"gonum", false, false, nil, true},
	} {
		t.Run(kc.name, func(t *testing.T) {
			if !kc.has {
				t.Skipf("the CPU lacks the %s kernel", kc.name)
			}
			useAVX512, useAVX2 = kc.avx512, kc.v2
			if active() != kc.set {
				t.Fatalf("kernel set %q is not active", kc.name)
			}
			f(t)
		})
	}
}

// matrix returns rows×cols random values in a slice with stride ld ≥ cols, NaN in the padding.
func matrix(rnd *rand.Rand, rows, cols, ld int) []float64 {
	s := make([]float64, rows*ld)
	for i := range s {
		s[i] = math.NaN()
	}
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			s[i*ld+j] = rnd.Float64()*2 - 1
		}
	}
	return s
}

// at returns op(X)[i][j] for X stored with stride ld.
func at(x []float64, ld int, trans bool, i, j int) float64 {
	if trans {
		return x[j*ld+i]
	}
	return x[i*ld+j]
}

// refEntry returns alpha·Σ_p op(A)[i][p]·op(B)[p][j] + beta·c and Σ|terms| for the tolerance.
func refEntry(tA, tB bool, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta, c float64, i, j int) (v, mag float64) {
	var s, sa float64
	for p := 0; p < k; p++ {
		t := at(a, lda, tA, i, p) * at(b, ldb, tB, p, j)
		s += t
		sa += math.Abs(t)
	}
	v, mag = alpha*s, math.Abs(alpha)*sa
	if beta != 0 {
		v += beta * c
		mag += math.Abs(beta * c)
	}
	return v, mag
}

func checkClose(t *testing.T, what string, got, want, mag float64) bool {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > 1e-13*mag+1e-300 {
		t.Errorf("%s: got %v, want %v (Σ|terms| %v)", what, got, want, mag)
		return false
	}
	return true
}

var trans = []blas.Transpose{blas.NoTrans, blas.Trans}

func tname(t blas.Transpose) string {
	if t == blas.NoTrans {
		return "N"
	}
	return "T"
}

// gemmCase runs one Dgemm and compares every element of C, padding included, with the reference.
func gemmCase(t *testing.T, rnd *rand.Rand, tA, tB blas.Transpose, m, n, k int, alpha, beta float64, pad int) bool {
	t.Helper()
	at, bt := tA == blas.Trans, tB == blas.Trans
	ar, ac := m, k
	if at {
		ar, ac = k, m
	}
	br, bc := k, n
	if bt {
		br, bc = n, k
	}
	lda, ldb, ldc := ac+pad, bc+pad, n+pad
	a := matrix(rnd, ar, ac, lda)
	b := matrix(rnd, br, bc, ldb)
	c := matrix(rnd, m, n, ldc)
	if beta == 0 {
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				c[i*ldc+j] = math.NaN()
			}
		}
	}
	c0 := append([]float64(nil), c...)
	Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	name := fmt.Sprintf("Dgemm(%s%s m=%d n=%d k=%d alpha=%v beta=%v pad=%d)", tname(tA), tname(tB), m, n, k, alpha, beta, pad)
	for i := 0; i < m; i++ {
		for j := 0; j < ldc && i*ldc+j < len(c); j++ {
			if j >= n {
				if !math.IsNaN(c[i*ldc+j]) {
					t.Errorf("%s: padding C[%d][%d] written: %v", name, i, j, c[i*ldc+j])
					return false
				}
				continue
			}
			want, mag := refEntry(at, bt, k, alpha, a, lda, b, ldb, beta, c0[i*ldc+j], i, j)
			if !checkClose(t, fmt.Sprintf("%s C[%d][%d]", name, i, j), c[i*ldc+j], want, mag) {
				return false
			}
		}
	}
	return true
}

var edgeSizes = []int{1, 2, 7, 8, 15, 16, 17, 23, 24, 25, 31, 33, 100, 257}

// sweepSizes are the sizes the size sweeps run: edgeSizes, or under the race detector a subset that still covers
// one element, a whole kernel tile, a partial tile past it and several tiles (the runs without the detector check
// every size; under it the sweeps are there for the concurrent paths, and its instrumented references are slow).
func sweepSizes() []int {
	if raceEnabled {
		return []int{1, 8, 17, 33, 257}
	}
	return edgeSizes
}

func TestDgemmSizes(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		rnd := rand.New(rand.NewPCG(1, 2))
		for _, tA := range trans {
			for _, tB := range trans {
				for _, m := range sweepSizes() {
					for _, n := range sweepSizes() {
						// k sweeps the sizes on the diagonal of (m, n) and a fixed pair elsewhere, to keep the
						// reference affordable.
						ks := []int{7, 33}
						if m == n {
							ks = sweepSizes()
						}
						for _, k := range ks {
							if !gemmCase(t, rnd, tA, tB, m, n, k, -0.7, 0.3, 3) {
								return
							}
						}
					}
				}
			}
		}
	})
}

func TestDgemmScalars(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		rnd := rand.New(rand.NewPCG(3, 4))
		for _, tA := range trans {
			for _, tB := range trans {
				for _, alpha := range []float64{0, 1, -0.7} {
					for _, beta := range []float64{0, 1, 0.3} {
						for _, sz := range [][3]int{{17, 25, 9}, {33, 31, 40}, {64, 48, 300}, {9, 10, 0}, {1, 25, 9},
							{17, 1, 9}, {1, 1, 40}} {
							if !gemmCase(t, rnd, tA, tB, sz[0], sz[1], sz[2], alpha, beta, 2) {
								return
							}
						}
					}
				}
			}
		}
	})
}

// smallBlocks shrinks the active kernel set's blocks until t ends (skipping t under gonum), so that every loop of
// the driver runs more than once with a remainder.
func smallBlocks(t *testing.T) *kernelSet {
	ks := active()
	if ks == nil {
		t.Skip("no blocking with gonum")
	}
	save := *ks
	t.Cleanup(func() { *ks = save })
	ks.kc, ks.mc, ks.nc = 20, 3*ks.mr, 2*ks.nr()
	return ks
}

// TestDgemmBlocks straddles kc, mc and nc of the active kernel set with small blocks, so that every loop of the
// driver runs more than once with a remainder.
func TestDgemmBlocks(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		ks := smallBlocks(t)
		rnd := rand.New(rand.NewPCG(5, 6))
		for _, tA := range trans {
			for _, tB := range trans {
				for _, sz := range [][3]int{{ks.mc - 1, ks.nc - 1, ks.kc - 1}, {ks.mc, ks.nc, ks.kc}, {ks.mc + 1, ks.nc + 1, ks.kc + 1},
					{2*ks.mc + 5, 2*ks.nc + 7, 2*ks.kc + 3}, {100, 100, 257}} {
					for _, beta := range []float64{0, 0.3} {
						if !gemmCase(t, rnd, tA, tB, sz[0], sz[1], sz[2], -0.7, beta, 1) {
							return
						}
					}
				}
			}
		}
	})
}

// TestDgemmRealBlocks straddles the block sizes as tuned.
func TestDgemmRealBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("large")
	}
	withKernels(t, func(t *testing.T) {
		ks := active()
		if ks == nil {
			t.Skip("no blocking with gonum")
		}
		rnd := rand.New(rand.NewPCG(7, 8))
		for _, tA := range trans {
			for _, tB := range trans {
				for _, sz := range [][3]int{{ks.mc + 1, 30, ks.kc + 1}, {ks.mc - 1, ks.nr() + 1, ks.kc - 1}, {9, ks.nc + 1, 5}} {
					if !gemmCase(t, rnd, tA, tB, sz[0], sz[1], sz[2], -0.7, 0.3, 1) {
						return
					}
				}
			}
		}
	})
}

// syrkCase runs one Dsyrk and compares the uplo triangle with the reference; the other triangle and the padding
// must keep their values.
func syrkCase(t *testing.T, rnd *rand.Rand, ul blas.Uplo, tA blas.Transpose, n, k int, alpha, beta float64, pad int) bool {
	t.Helper()
	tr := tA == blas.Trans
	ar, ac := n, k
	if tr {
		ar, ac = k, n
	}
	lda, ldc := ac+pad, n+pad
	a := matrix(rnd, ar, ac, lda)
	c := matrix(rnd, n, n, ldc)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if beta == 0 && ((ul == blas.Upper && j >= i) || (ul == blas.Lower && j <= i)) {
				c[i*ldc+j] = math.NaN()
			}
		}
	}
	c0 := append([]float64(nil), c...)
	Dsyrk(ul, tA, n, k, alpha, a, lda, beta, c, ldc)
	name := fmt.Sprintf("Dsyrk(%c%s n=%d k=%d alpha=%v beta=%v pad=%d)", ul, tname(tA), n, k, alpha, beta, pad)
	for i := 0; i < n; i++ {
		for j := 0; j < ldc && i*ldc+j < len(c); j++ {
			in := j < n && ((ul == blas.Upper && j >= i) || (ul == blas.Lower && j <= i))
			if !in {
				if g, w := c[i*ldc+j], c0[i*ldc+j]; g != w && !(math.IsNaN(g) && math.IsNaN(w)) {
					t.Errorf("%s: C[%d][%d] outside the triangle written: %v, was %v", name, i, j, g, w)
					return false
				}
				continue
			}
			// op(A)·op(A)ᵀ: B = A transposed the other way.
			want, mag := refEntry(tr, !tr, k, alpha, a, lda, a, lda, beta, c0[i*ldc+j], i, j)
			if !checkClose(t, fmt.Sprintf("%s C[%d][%d]", name, i, j), c[i*ldc+j], want, mag) {
				return false
			}
		}
	}
	return true
}

func TestDsyrk(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		rnd := rand.New(rand.NewPCG(9, 10))
		for _, ul := range []blas.Uplo{blas.Upper, blas.Lower} {
			for _, tA := range trans {
				for _, n := range sweepSizes() {
					for _, k := range []int{1, 7, 24, 33, 257} {
						if !syrkCase(t, rnd, ul, tA, n, k, -0.7, 0.3, 3) {
							return
						}
					}
				}
				for _, alpha := range []float64{0, 1, -0.7} {
					for _, beta := range []float64{0, 1, 0.3} {
						for _, k := range []int{19, 0} {
							if !syrkCase(t, rnd, ul, tA, 41, k, alpha, beta, 2) {
								return
							}
						}
					}
				}
			}
		}
	})
}

func TestDsyrkBlocks(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		ks := smallBlocks(t)
		rnd := rand.New(rand.NewPCG(11, 12))
		for _, ul := range []blas.Uplo{blas.Upper, blas.Lower} {
			for _, tA := range trans {
				for _, n := range []int{ks.mc - 1, ks.mc + 1, ks.nc + 1, 2*ks.nc + 5, 100} {
					for _, beta := range []float64{0, 0.3} {
						if !syrkCase(t, rnd, ul, tA, n, 45, -0.7, beta, 1) {
							return
						}
					}
				}
			}
		}
	})
}

// TestDsyrkRealBlocks runs Dsyrk past nc as tuned, where Ã is packed on its own rather than read from B̃.
func TestDsyrkRealBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("large")
	}
	withKernels(t, func(t *testing.T) {
		ks := active()
		if ks == nil {
			t.Skip("no blocking with gonum")
		}
		rnd := rand.New(rand.NewPCG(15, 16))
		for _, ul := range []blas.Uplo{blas.Upper, blas.Lower} {
			for _, tA := range trans {
				if !syrkCase(t, rnd, ul, tA, ks.nc+3, 5, -0.7, 0, 1) {
					return
				}
			}
		}
	})
}

// TestConcurrent runs products on several goroutines at once, each with its own buffers from the pool.
func TestConcurrent(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rnd := rand.New(rand.NewPCG(17, uint64(g)))
				for i := 0; i < 5; i++ {
					gemmCase(t, rnd, blas.Trans, blas.NoTrans, 37+g, 29+i, 300, -0.7, 0.3, 1)
					syrkCase(t, rnd, blas.Lower, blas.Trans, 33+g, 300, -0.7, 0, 1)
				}
			}()
		}
		wg.Wait()
	})
}

// TestArgPanics checks that bad arguments panic as gonum's do.
func TestArgPanics(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		a := make([]float64, 100)
		for _, tc := range []struct {
			name string
			f    func()
			want string
		}{
			{"lda", func() { Dgemm(blas.NoTrans, blas.NoTrans, 4, 4, 4, 1, a, 3, a, 4, 0, a, 4) }, "blas: bad leading dimension of A"},
			{"shortC", func() {
				Dgemm(blas.NoTrans, blas.NoTrans, 40, 40, 40, 1, make([]float64, 1600), 40, make([]float64, 1600), 40, 0, a, 40)
			}, "blas: insufficient length of c"},
			{"m", func() { Dgemm(blas.NoTrans, blas.NoTrans, -1, 4, 4, 1, a, 4, a, 4, 0, a, 4) }, "blas: m < 0"},
			{"trans", func() { Dgemm('x', blas.NoTrans, 4, 4, 4, 1, a, 4, a, 4, 0, a, 4) }, "blas: illegal transpose"},
			{"uplo", func() { Dsyrk('x', blas.NoTrans, 4, 4, 1, a, 4, 0, a, 4) }, "blas: illegal triangle"},
			{"syrkA", func() { Dsyrk(blas.Upper, blas.Trans, 40, 40, 1, a, 40, 0, make([]float64, 1600), 40) }, "blas: insufficient length of a"},
		} {
			func() {
				defer func() {
					if r := recover(); r != tc.want {
						t.Errorf("%s: panic %v, want %q", tc.name, r, tc.want)
					}
				}()
				tc.f()
			}()
		}
	})
}

func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers")
	}
	withKernels(t, func(t *testing.T) {
		a, b, c := make([]float64, 64*64), make([]float64, 64*64), make([]float64, 64*64)
		Dgemm(blas.NoTrans, blas.NoTrans, 64, 64, 64, 1, a, 64, b, 64, 0, c, 64)
		if active() == nil {
			return
		}
		if n := testing.AllocsPerRun(20, func() {
			Dgemm(blas.Trans, blas.NoTrans, 64, 64, 64, 1, a, 64, b, 64, 0.5, c, 64)
			Dsyrk(blas.Lower, blas.NoTrans, 64, 64, 1, a, 64, 0, c, 64)
		}); n != 0 {
			t.Errorf("%v allocations per call", n)
		}
	})
}

// TestDefaults runs sizes around the thresholds that send small products to gonum, as shipped.
func TestDefaults(t *testing.T) {
	rnd := rand.New(rand.NewPCG(13, 14))
	for _, tA := range trans {
		for _, tB := range trans {
			for _, sz := range [][3]int{{1, 40, 30}, {2, 40, 30}, {4, 4, 4}, {8, 8, 8}, {9, 9, 9}, {30, 1, 20}} {
				if !gemmCase(t, rnd, tA, tB, sz[0], sz[1], sz[2], -0.7, 0, 1) {
					return
				}
			}
		}
	}
	for _, ul := range []blas.Uplo{blas.Upper, blas.Lower} {
		for _, tA := range trans {
			for _, nk := range [][2]int{{4, 30}, {7, 30}, {8, 8}, {8, 30}, {9, 3}} {
				if !syrkCase(t, rnd, ul, tA, nk[0], nk[1], -0.7, 0, 1) {
					return
				}
			}
		}
	}
}

// Every entry is rounded the same way wherever it falls in the grid of tiles: A·Aᵀ is bitwise symmetric, and a
// product computed whole equals the same product computed as two blocks of rows, for alpha and beta that do not
// round exactly and a depth past one block of k.
func TestRoundingIndependentOfTiles(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		rnd := rand.New(rand.NewPCG(11, 12))
		for _, k := range []int{30, 300} {
			for _, beta := range []float64{0, 0.3} {
				const n = 44
				a := matrix(rnd, n, k, k)
				c := make([]float64, n*n)
				for i := 0; i < n; i++ {
					for j := 0; j <= i; j++ {
						v := rnd.NormFloat64()
						c[i*n+j], c[j*n+i] = v, v
					}
				}
				Dgemm(blas.NoTrans, blas.Trans, n, n, k, 0.7, a, k, a, k, beta, c, n)
				for i := 0; i < n; i++ {
					for j := 0; j < i; j++ {
						if c[i*n+j] != c[j*n+i] {
							t.Fatalf("k=%d beta=%v: C[%d][%d] = %v but C[%d][%d] = %v", k, beta, i, j, c[i*n+j], j, i, c[j*n+i])
						}
					}
				}
				const m, nn = 37, 29
				b := matrix(rnd, k, nn, nn)
				whole := matrix(rnd, m, nn, nn)
				split := append([]float64(nil), whole...)
				Dgemm(blas.NoTrans, blas.NoTrans, m, nn, k, 0.7, a, k, b, nn, beta, whole, nn)
				Dgemm(blas.NoTrans, blas.NoTrans, 20, nn, k, 0.7, a, k, b, nn, beta, split, nn)
				Dgemm(blas.NoTrans, blas.NoTrans, m-20, nn, k, 0.7, a[20*k:], k, b, nn, beta, split[20*nn:], nn)
				for i := range whole {
					if whole[i] != split[i] {
						t.Fatalf("k=%d beta=%v: entry %d is %v whole, %v split by rows", k, beta, i, whole[i], split[i])
					}
				}
			}
		}
	})
}
