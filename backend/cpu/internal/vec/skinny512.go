//go:build amd64

package vec

import "sync"

// packPool holds the buffers the AVX-512 paths pack their small operands into.
var packPool = sync.Pool{New: func() any { return new([]float64) }}

// getPacked returns a pooled buffer of n elements (contents undefined) and the handle to put back.
func getPacked(n int) ([]float64, *[]float64) {
	b := packPool.Get().(*[]float64)
	if cap(*b) < n {
		*b = make([]float64, n)
	}
	return (*b)[:n], b
}

// accTN512 is AccTN on the streaming AVX-512 kernels (gen_skinny512.go), for each tile of up to maxCols512 columns
// of X: C's rows are packed by chunks of 8 columns (the columns past p zero) and X's columns densely unless they
// already are, W is read once, four rows a step, and the sums are copied back to C.
func accTN512(c []float64, ldc int, w []float64, ldw int, x []float64, ldx int, rows, p, k int) {
	full, tail := p/8, p%8
	chunks := (p + 7) / 8
	tiles := (k + maxCols512 - 1) / maxCols512
	for i0 := 0; i0 < k; tiles-- {
		nc := (k - i0 + tiles - 1) / tiles
		u, ub := getPacked(chunks * nc * 8)
		for i := 0; i < nc; i++ {
			row := c[(i0+i)*ldc : (i0+i)*ldc+p]
			for ch := 0; ch < chunks; ch++ {
				dst := u[(ch*nc+i)*8 : (ch*nc+i)*8+8]
				clear(dst[copy(dst, row[ch*8:]):])
			}
		}
		xs := x[i0:]
		var xb *[]float64
		if ldx != nc {
			xs, xb = getPacked(rows * nc)
			for r := 0; r < rows; r++ {
				copy(xs[r*nc:(r+1)*nc], x[r*ldx+i0:r*ldx+i0+nc])
			}
		}
		if groups := rows / 4; groups > 0 {
			accTNz4[nc](&u[0], &w[0], ldw, &xs[0], groups, full, 1<<tail-1)
		}
		if r0 := rows &^ 3; r0 < rows {
			accTNz1[nc](&u[0], &w[r0*ldw], ldw, &xs[r0*nc], rows-r0, full, 1<<tail-1)
		}
		for i := 0; i < nc; i++ {
			row := c[(i0+i)*ldc : (i0+i)*ldc+p]
			for ch := 0; ch < chunks; ch++ {
				copy(row[ch*8:], u[(ch*nc+i)*8:(ch*nc+i)*8+8])
			}
		}
		packPool.Put(ub)
		if xb != nil {
			packPool.Put(xb)
		}
		i0 += nc
	}
}

// dotRows512 is DotRows on the streaming AVX-512 kernels, for each tile of up to maxCols512 rows of Q: Qᵀ is packed
// with its rows padded to whole registers (8 or 16 doubles), and W is read once, four rows a step.
func dotRows512(t []float64, ldt int, w []float64, ldw int, q []float64, ldq int, rows, p, k int) {
	tiles := (k + maxCols512 - 1) / maxCols512
	for i0 := 0; i0 < k; tiles-- {
		nc := (k - i0 + tiles - 1) / tiles
		width := (nc + 7) &^ 7
		qt, qb := getPacked(p * width)
		clear(qt)
		for i := 0; i < nc; i++ {
			for j, v := range q[(i0+i)*ldq : (i0+i)*ldq+p] {
				qt[j*width+i] = v
			}
		}
		if groups := rows / 4; groups > 0 {
			dotRowsz4[nc](&t[i0], ldt, &w[0], ldw, &qt[0], p, groups)
		}
		if r0 := rows &^ 3; r0 < rows {
			dotRowsz1[nc](&t[r0*ldt+i0], ldt, &w[r0*ldw], ldw, &qt[0], p, rows-r0)
		}
		packPool.Put(qb)
		i0 += nc
	}
}
