package gemm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

func randSlice(n int) []float64 {
	rnd := rand.New(rand.NewPCG(1, uint64(n)))
	s := make([]float64, n)
	for i := range s {
		s[i] = rnd.Float64()*2 - 1
	}
	return s
}

// BenchmarkKernel measures the widest micro-kernel of each set alone, on panels that stay in L1.
func BenchmarkKernel(b *testing.B) {
	for _, s := range []struct {
		name string
		ks   *kernelSet
		has  bool
	}{{"avx512", avx512Set, useAVX512}, {"avx2", avx2Set, useAVX2}} {
		b.Run(s.name, func(b *testing.B) {
			if !s.has {
				b.Skipf("the CPU lacks the %s kernel", s.name)
			}
			const k = 128
			ks, nr := s.ks, s.ks.nr()
			a, bp, c := randSlice(ks.mr*k), randSlice(k*nr), randSlice(ks.mr*nr)
			fn := ks.fn[ks.nv]
			for b.Loop() {
				fn(k, &a[0], ks.mr, &bp[0], nr, &c[0], nr, 1, 1)
			}
			b.ReportMetric(float64(2*ks.mr*nr*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

type (
	dgemmFunc func(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int)
	dsyrkFunc func(ul blas.Uplo, tA blas.Transpose, n, k int, alpha float64, a []float64, lda int, beta float64, c []float64, ldc int)
)

var impls = []struct {
	name string
	gemm dgemmFunc
	syrk dsyrkFunc
}{
	{"fast", Dgemm, Dsyrk},
	{"avx2", avx2Dgemm, avx2Dsyrk},
	{"gonum", gonum.Implementation{}.Dgemm, gonum.Implementation{}.Dsyrk},
}

// avx2Dgemm and avx2Dsyrk run with the AVX-512 kernels off: the AVX2 kernels where the CPU has both.
func avx2Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	save := useAVX512
	useAVX512 = false
	defer func() { useAVX512 = save }()
	Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func avx2Dsyrk(ul blas.Uplo, tA blas.Transpose, n, k int, alpha float64, a []float64, lda int, beta float64, c []float64, ldc int) {
	save := useAVX512
	useAVX512 = false
	defer func() { useAVX512 = save }()
	Dsyrk(ul, tA, n, k, alpha, a, lda, beta, c, ldc)
}

func BenchmarkDgemm(b *testing.B) {
	for _, sz := range [][3]int{{256, 256, 256}, {1280, 1280, 1280}, {100000, 100, 100}, {100, 100, 100000}} {
		m, n, k := sz[0], sz[1], sz[2]
		for _, tA := range trans {
			ar, ac := m, k
			if tA == blas.Trans {
				ar, ac = k, m
			}
			a, bb, c := randSlice(ar*ac), randSlice(k*n), randSlice(m*n)
			for _, im := range impls {
				b.Run(fmt.Sprintf("%sN/m=%d,n=%d,k=%d/%s", tname(tA), m, n, k, im.name), func(b *testing.B) {
					for b.Loop() {
						im.gemm(tA, blas.NoTrans, m, n, k, 1, a, ac, bb, n, 0, c, n)
					}
					b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// BenchmarkDsyrk runs a long product and the block the low-rank capacitance accumulates (Σ SᵀS over blocks of
// 512 rows with p = 100: lower triangle, beta = 1).
func BenchmarkDsyrk(b *testing.B) {
	for _, cs := range []struct {
		n, k int
		ul   blas.Uplo
		beta float64
	}{{100, 100000, blas.Upper, 0}, {100, 512, blas.Lower, 1}} {
		n, k := cs.n, cs.k
		for _, tA := range trans {
			a, c := randSlice(n*k), randSlice(n*n)
			lda := k
			if tA == blas.Trans {
				lda = n
			}
			for _, im := range impls {
				b.Run(fmt.Sprintf("%s/n=%d,k=%d,%c,beta=%v/%s", tname(tA), n, k, cs.ul, cs.beta, im.name), func(b *testing.B) {
					for b.Loop() {
						im.syrk(cs.ul, tA, n, k, 1, a, lda, cs.beta, c, n)
					}
					// Flops of the triangle, as BLAS counts them.
					b.ReportMetric(float64(n)*float64(n+1)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// BenchmarkDtrsm runs the block solve of the tall QR (X·R = B, R upper 100×100, 256 rows), a Cholesky solve with
// many right-hand sides (L·X = B, 1024×1024) and the panel solve of a blocked lower Cholesky factorisation
// (X·Lᵀ = B, L 64×64, 960 rows). Flops as BLAS counts them: m·n² on the right, m²·n on the left.
func BenchmarkDtrsm(b *testing.B) {
	for _, cs := range []struct {
		name string
		s    blas.Side
		ul   blas.Uplo
		tA   blas.Transpose
		m, n int
	}{
		{"RUN", blas.Right, blas.Upper, blas.NoTrans, 256, 100},
		{"LLN", blas.Left, blas.Lower, blas.NoTrans, 1024, 1024},
		{"RLT", blas.Right, blas.Lower, blas.Trans, 960, 64},
	} {
		k := cs.n
		if cs.s == blas.Left {
			k = cs.m
		}
		a := triMatrix(rand.New(rand.NewPCG(1, 2)), cs.ul, k, k, false)
		b0 := randSlice(cs.m * cs.n)
		bb := make([]float64, len(b0))
		flops := float64(cs.m) * float64(cs.n) * float64(k)
		for _, im := range []struct {
			name string
			f    func(blas.Side, blas.Uplo, blas.Transpose, blas.Diag, int, int, float64, []float64, int, []float64, int)
		}{{"fast", Dtrsm}, {"gonum", gonum.Implementation{}.Dtrsm}} {
			b.Run(fmt.Sprintf("%s/m=%d,n=%d/%s", cs.name, cs.m, cs.n, im.name), func(b *testing.B) {
				for b.Loop() {
					copy(bb, b0)
					im.f(cs.s, cs.ul, cs.tA, blas.NonUnit, cs.m, cs.n, 1, a, k, bb, cs.n)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
