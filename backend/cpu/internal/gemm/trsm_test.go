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

// triMatrix returns a k×k matrix with stride ld whose ul triangle is well conditioned (diagonal of magnitude 2 to
// 3, off-diagonal entries up to 1/k, so diagonally dominant); the other triangle and the padding hold NaN, and so
// does the diagonal when unit is set.
func triMatrix(rnd *rand.Rand, ul blas.Uplo, k, ld int, unit bool) []float64 {
	a := make([]float64, k*ld)
	for i := range a {
		a[i] = math.NaN()
	}
	for i := 0; i < k; i++ {
		for j := 0; j < k; j++ {
			switch {
			case i == j:
				if !unit {
					a[i*ld+j] = (2 + rnd.Float64()) * float64(1-2*rnd.IntN(2))
				}
			case (ul == blas.Upper) == (j > i):
				a[i*ld+j] = (rnd.Float64()*2 - 1) / float64(k)
			}
		}
	}
	return a
}

// opTri returns op(A) as a dense k×k matrix: the ul triangle of A, the other one zero, ones on the diagonal when
// d is Unit.
func opTri(ul blas.Uplo, tA blas.Transpose, d blas.Diag, k int, a []float64, lda int) []float64 {
	t := make([]float64, k*k)
	for i := 0; i < k; i++ {
		for j := 0; j < k; j++ {
			// A[r][c] is op(A)[i][j].
			r, c := i, j
			if tA != blas.NoTrans {
				r, c = j, i
			}
			switch {
			case r == c && d == blas.Unit:
				t[i*k+j] = 1
			case r == c || (ul == blas.Upper) == (c > r):
				t[i*k+j] = a[r*lda+c]
			}
		}
	}
	return t
}

func sameBits(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) }

var (
	sides = []blas.Side{blas.Left, blas.Right}
	uplos = []blas.Uplo{blas.Upper, blas.Lower}
	diags = []blas.Diag{blas.NonUnit, blas.Unit}
)

// trsmCase runs one Dtrsm and checks the solution by multiplying it back: op(A)·X (or X·op(A)) must equal alpha·B
// to 1e-12 of the sum of the magnitudes of the terms, entry by entry. A and the padding of B must keep their
// values, and alpha = 0 must give exact zeros.
func trsmCase(t *testing.T, rnd *rand.Rand, s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int,
	alpha float64, pad int) bool {
	t.Helper()
	k := n
	if s == blas.Left {
		k = m
	}
	lda, ldb := k+pad, n+pad
	a := triMatrix(rnd, ul, k, lda, d == blas.Unit)
	b := matrix(rnd, m, n, ldb)
	a0, b0 := append([]float64(nil), a...), append([]float64(nil), b...)
	Dtrsm(s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
	name := fmt.Sprintf("Dtrsm(%c%c%s%c m=%d n=%d alpha=%v pad=%d)", s, ul, tname(tA), d, m, n, alpha, pad)
	for i := range a {
		if !sameBits(a[i], a0[i]) {
			t.Errorf("%s: A[%d] written: %v, was %v", name, i, a[i], a0[i])
			return false
		}
	}
	tr := opTri(ul, tA, d, k, a, lda)
	for i := 0; i < m; i++ {
		for j := 0; j < ldb && i*ldb+j < len(b); j++ {
			x := b[i*ldb+j]
			if j >= n {
				if !sameBits(x, b0[i*ldb+j]) {
					t.Errorf("%s: padding B[%d][%d] written: %v", name, i, j, x)
					return false
				}
				continue
			}
			if alpha == 0 {
				if x != 0 || math.Signbit(x) {
					t.Errorf("%s: B[%d][%d] = %v, want 0", name, i, j, x)
					return false
				}
				continue
			}
			want := alpha * b0[i*ldb+j]
			var got, mag float64
			for p := 0; p < k; p++ {
				var v float64
				if s == blas.Left {
					v = tr[i*k+p] * b[p*ldb+j]
				} else {
					v = b[i*ldb+p] * tr[p*k+j]
				}
				got += v
				mag += math.Abs(v)
			}
			mag += math.Abs(want)
			if math.IsNaN(got) || math.Abs(got-want) > 1e-12*mag {
				t.Errorf("%s: residual at [%d][%d]: op(A)·X gives %v, alpha·B is %v (Σ|terms| %v)", name, i, j, got, want, mag)
				return false
			}
		}
	}
	return true
}

// forEachTrsm runs f for each of the 16 combinations of side, triangle, transpose and diagonal.
func forEachTrsm(f func(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag) bool) {
	for _, s := range sides {
		for _, ul := range uplos {
			for _, tA := range trans {
				for _, d := range diags {
					if !f(s, ul, tA, d) {
						return
					}
				}
			}
		}
	}
}

// TestDtrsmSizes runs orders of the triangle across the kernels' row blocks, the leaf size and the split points,
// against B narrower and wider than the kernels' vectors and than a block of rows on the right.
func TestDtrsmSizes(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		rnd := rand.New(rand.NewPCG(21, 22))
		orders := []int{1, 2, 3, 4, 5, 7, 8, 9, trsmLeaf - 1, trsmLeaf, trsmLeaf + 1, 2*trsmLeaf + 3, 100}
		others := []int{1, 3, 8, 13, 33, trsmRows + 5}
		forEachTrsm(func(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag) bool {
			for _, k := range orders {
				for _, o := range others {
					m, n := k, o
					if s == blas.Right {
						m, n = o, k
					}
					if !trsmCase(t, rnd, s, ul, tA, d, m, n, -2.5, 3) {
						return false
					}
				}
			}
			return true
		})
	})
}

func TestDtrsmScalars(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		rnd := rand.New(rand.NewPCG(23, 24))
		forEachTrsm(func(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag) bool {
			for _, alpha := range []float64{0, 1, -2.5} {
				for _, sz := range [][2]int{{70, 45}, {45, 70}, {9, 9}} {
					for _, pad := range []int{0, 2} {
						if !trsmCase(t, rnd, s, ul, tA, d, sz[0], sz[1], alpha, pad) {
							return false
						}
					}
				}
			}
			return true
		})
	})
}

// TestDtrsmBlocks shrinks the leaf, the block of rows and Dgemm's blocks so that the recursion goes several
// levels deep and every loop runs more than once with a remainder.
func TestDtrsmBlocks(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		ks := smallBlocks(t)
		saveLeaf, saveRows := trsmLeaf, trsmRows
		defer func() { trsmLeaf, trsmRows = saveLeaf, saveRows }()
		trsmLeaf, trsmRows = 9, 2*ks.trsmU*ks.vl+3
		rnd := rand.New(rand.NewPCG(25, 26))
		forEachTrsm(func(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag) bool {
			for _, sz := range [][2]int{{ks.kc + 3, ks.nc + 5}, {2*ks.mc + 1, 2*ks.kc + 7}, {77, 5}, {5, 77}} {
				if !trsmCase(t, rnd, s, ul, tA, d, sz[0], sz[1], 0.7, 1) {
					return false
				}
			}
			return true
		})
	})
}

// TestDtrsmRealBlocks runs triangles whose coupling products straddle Dgemm's blocks as tuned.
func TestDtrsmRealBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("large")
	}
	withKernels(t, func(t *testing.T) {
		ks := active()
		if ks == nil {
			t.Skip("no blocking with gonum")
		}
		rnd := rand.New(rand.NewPCG(27, 28))
		forEachTrsm(func(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag) bool {
			if d == blas.Unit {
				return true
			}
			m, n := 2*ks.kc+9, 35
			if s == blas.Right {
				m, n = n, m
			}
			return trsmCase(t, rnd, s, ul, tA, d, m, n, -2.5, 1)
		})
	})
}

// TestDtrsmDefaults runs sizes around the thresholds that send small solves and few right-hand sides to gonum, as
// shipped.
func TestDtrsmDefaults(t *testing.T) {
	rnd := rand.New(rand.NewPCG(29, 30))
	forEachTrsm(func(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag) bool {
		for _, sz := range [][2]int{{1, 600}, {600, 1}, {2, 300}, {300, 2}, {3, 300}, {300, 3}, {4, 4}, {7, 7}, {8, 8},
			{9, 9}, {4, 40}, {40, 4}} {
			if !trsmCase(t, rnd, s, ul, tA, d, sz[0], sz[1], -2.5, 1) {
				return false
			}
		}
		return true
	})
}

// TestDtrsmMatchesGonum compares with gonum's Dtrsm directly, entry by entry, to rounding; ConjTrans is Trans.
func TestDtrsmMatchesGonum(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		rnd := rand.New(rand.NewPCG(31, 32))
		forEachTrsm(func(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag) bool {
			if tA == blas.Trans && rnd.IntN(2) == 0 {
				tA = blas.ConjTrans
			}
			m, n := 67, 53
			k := n
			if s == blas.Left {
				k = m
			}
			a := triMatrix(rnd, ul, k, k+1, d == blas.Unit)
			b := matrix(rnd, m, n, n)
			want := append([]float64(nil), b...)
			Dtrsm(s, ul, tA, d, m, n, 0.3, a, k+1, b, n)
			gonum.Implementation{}.Dtrsm(s, ul, tA, d, m, n, 0.3, a, k+1, want, n)
			for i := range b {
				if math.Abs(b[i]-want[i]) > 1e-13*(1+math.Abs(want[i])) {
					t.Errorf("%c%c%c%c: entry %d is %v, gonum gives %v", s, ul, tA, d, i, b[i], want[i])
					return false
				}
			}
			return true
		})
	})
}

// recovered returns what f panics with, nil if it returns.
func recovered(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// TestDtrsmPanics checks that bad arguments panic as gonum's do, with the same value, and that empty solves with
// short slices do not.
func TestDtrsmPanics(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		a, b := make([]float64, 40*40), make([]float64, 40*40)
		type call struct {
			s       blas.Side
			ul      blas.Uplo
			tA      blas.Transpose
			d       blas.Diag
			m, n    int
			a       []float64
			lda     int
			b       []float64
			ldb     int
			comment string
		}
		L, U, N, T, NU := blas.Left, blas.Upper, blas.NoTrans, blas.Trans, blas.NonUnit
		for _, c := range []call{
			{'x', U, N, NU, 40, 40, a, 40, b, 40, "side"},
			{L, 'x', N, NU, 40, 40, a, 40, b, 40, "uplo"},
			{L, U, 'x', NU, 40, 40, a, 40, b, 40, "trans"},
			{L, U, N, 'x', 40, 40, a, 40, b, 40, "diag"},
			{L, U, N, NU, -1, 40, a, 40, b, 40, "m"},
			{L, U, N, NU, 40, -1, a, 40, b, 40, "n"},
			{L, U, N, NU, 40, 20, a, 39, b, 20, "lda left"},
			{blas.Right, U, N, NU, 20, 40, a, 39, b, 40, "lda right"},
			{L, U, T, NU, 20, 40, a, 20, b, 39, "ldb"},
			{L, U, N, NU, 40, 40, a[1:], 40, b, 40, "short a"},
			{L, U, N, NU, 40, 40, a, 40, b[1:], 40, "short b"},
			{blas.Right, blas.Lower, T, blas.Unit, 40, 40, a, 40, b[:39*40], 40, "short b right"},
			{L, U, N, NU, 0, 40, nil, 1, nil, 40, "m = 0"},
			{L, U, N, NU, 40, 0, nil, 40, nil, 1, "n = 0"},
			{L, U, N, NU, 0, 0, nil, 0, nil, 0, "lda = 0"},
			{L, U, N, NU, 40, 40, a, 40, b, 40, "valid"},
		} {
			run := func(f func(blas.Side, blas.Uplo, blas.Transpose, blas.Diag, int, int, float64, []float64, int, []float64, int)) any {
				return recovered(func() { f(c.s, c.ul, c.tA, c.d, c.m, c.n, 1.5, c.a, c.lda, c.b, c.ldb) })
			}
			if got, want := run(Dtrsm), run(gonum.Implementation{}.Dtrsm); got != want {
				t.Errorf("%s: panic %v, gonum's %v", c.comment, got, want)
			}
		}
	})
}

// TestDtrsmConcurrent runs solves on several goroutines at once, each with its own workspace from the pool.
func TestDtrsmConcurrent(t *testing.T) {
	withKernels(t, func(t *testing.T) {
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rnd := rand.New(rand.NewPCG(33, uint64(g)))
				for i := 0; i < 5; i++ {
					trsmCase(t, rnd, blas.Right, blas.Upper, blas.NoTrans, blas.NonUnit, 150+g, 70+i, 1, 0)
					trsmCase(t, rnd, blas.Left, blas.Lower, blas.Trans, blas.NonUnit, 70+i, 150+g, 1, 0)
				}
			}()
		}
		wg.Wait()
	})
}

func TestDtrsmAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop buffers")
	}
	withKernels(t, func(t *testing.T) {
		if active() == nil {
			t.Skip("gonum")
		}
		rnd := rand.New(rand.NewPCG(35, 36))
		a := triMatrix(rnd, blas.Upper, 200, 200, false)
		b := matrix(rnd, 200, 200, 200)
		run := func() {
			Dtrsm(blas.Right, blas.Upper, blas.NoTrans, blas.NonUnit, 200, 200, 1, a, 200, b, 200)
			Dtrsm(blas.Left, blas.Upper, blas.Trans, blas.NonUnit, 200, 197, 1, a, 200, b, 200)
		}
		run()
		if n := testing.AllocsPerRun(20, run); n != 0 {
			t.Errorf("%v allocations per call", n)
		}
	})
}
