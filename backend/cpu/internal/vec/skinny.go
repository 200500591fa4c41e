package vec

import (
	"fmt"
	"math"
	"sync/atomic"
)

// The skinny products of the low-rank operations: a tall block W (rows×p, p up to a few hundred) against a thin
// operand with k ≤ 16 columns. A general GEMM packs its operands, which costs about one more pass over W than the
// arithmetic needs when k is this small. With AVX2 these loops read each element of W once from cache and keep a
// tile of the result in registers (skinny_amd64.s, written by gen_skinny.go: 8 or 4 columns of W times up to 4
// columns of the thin operand); with AVX-512 they stream W from memory four rows a step instead (skinny512.go and
// gen_skinny512.go), since there the arithmetic outruns memory.
//
//go:generate go run gen_skinny.go
//go:generate go run gen_skinny512.go

// AccTN adds Xᵀ·W to C: C[i][j] += Σ_r X[r][i]·W[r][j] for i < k, j < p, r < rows. C is k×p (row stride ldc),
// W rows×p (ldw), X rows×k (ldx).
func AccTN(c []float64, ldc int, w []float64, ldw int, x []float64, ldx int, rows, p, k int) {
	if rows <= 0 || p <= 0 || k <= 0 {
		return
	}
	need("AccTN", "c", c, k, ldc, p)
	need("AccTN", "w", w, rows, ldw, p)
	need("AccTN", "x", x, rows, ldx, k)
	if UseFMA && UseAVX512 {
		accTN512(c, ldc, w, ldw, x, ldx, rows, p, k)
		return
	}
	if UseFMA && p >= 8 {
		touch(w[:(rows-1)*ldw+p])
	}
	for i0 := 0; i0 < k; {
		nc := tileCols(k - i0)
		j := 0
		if UseFMA {
			for ; j+8 <= p; j += 8 {
				accTN(8, nc, &c[i0*ldc+j], ldc, &w[j], ldw, &x[i0], ldx, rows)
			}
			if j+4 <= p {
				accTN(4, nc, &c[i0*ldc+j], ldc, &w[j], ldw, &x[i0], ldx, rows)
				j += 4
			}
		}
		for ; j < p; j++ {
			for i := i0; i < i0+nc; i++ {
				s := 0.0
				for r := 0; r < rows; r++ {
					s += x[r*ldx+i] * w[r*ldw+j]
				}
				c[i*ldc+j] += s
			}
		}
		i0 += nc
	}
}

// DotRows sets T = W·Qᵀ: T[r][i] = Σ_j W[r][j]·Q[i][j] for r < rows, i < k, j < p. T is rows×k (ldt), W rows×p
// (ldw), Q k×p (ldq): each output is the dot product of a row of W with a row of Q.
func DotRows(t []float64, ldt int, w []float64, ldw int, q []float64, ldq int, rows, p, k int) {
	if rows <= 0 || k <= 0 {
		return
	}
	need("DotRows", "t", t, rows, ldt, k)
	if p <= 0 {
		for r := 0; r < rows; r++ {
			clear(t[r*ldt : r*ldt+k])
		}
		return
	}
	need("DotRows", "w", w, rows, ldw, p)
	need("DotRows", "q", q, k, ldq, p)
	if UseFMA && UseAVX512 {
		dotRows512(t, ldt, w, ldw, q, ldq, rows, p, k)
		return
	}
	n4 := 0
	if UseFMA {
		n4 = p &^ 3
	}
	for i0 := 0; i0 < k; {
		nc := tileCols(k - i0)
		if n4 > 0 {
			dotRows(nc, &t[i0], ldt, &w[0], ldw, &q[i0*ldq], ldq, n4, rows)
		} else {
			for r := 0; r < rows; r++ {
				clear(t[r*ldt+i0 : r*ldt+i0+nc])
			}
		}
		for r := 0; r < rows; r++ {
			for i := i0; i < i0+nc; i++ {
				s := t[r*ldt+i]
				for j := n4; j < p; j++ {
					s += w[r*ldw+j] * q[i*ldq+j]
				}
				t[r*ldt+i] = s
			}
		}
		i0 += nc
	}
}

// touch reads one element per cache line of a, front to back. The tiles of AccTN walk W down a few columns at a
// time, a stride the hardware prefetchers follow poorly when the block comes from memory; one sequential pass
// first brings the block into cache at full bandwidth, and the tiles then read it from there.
func touch(a []float64) {
	var s float64
	for i := 0; i < len(a); i += 8 {
		s += a[i]
	}
	touchSink.Store(math.Float64bits(s)) // keeps the loads; atomic, as AccTN runs on several workers at once
}

var touchSink atomic.Uint64

// tileCols is the width of the next tile of thin-operand columns: 4, then 2, then 1.
func tileCols(left int) int {
	switch {
	case left >= 4:
		return 4
	case left >= 2:
		return 2
	}
	return 1
}

// need panics unless a holds a rows×cols matrix with row stride ld: the kernels read and write through pointers.
func need(fn, name string, a []float64, rows, ld, cols int) {
	if ld < cols || len(a) < (rows-1)*ld+cols {
		panic(fmt.Sprintf("vec.%s: %s has %d elements, stride %d: too short for %d×%d", fn, name, len(a), ld, rows, cols))
	}
}
