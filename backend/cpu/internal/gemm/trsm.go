package gemm

import (
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// trsmKernel solves L·X = alpha·W in place for an nb×nb lower triangle L packed by packTri, W nb×n with rows ldw
// elements apart (ldw < 0 walks up from w); n is a positive multiple of the kernel's width.
type trsmKernel func(nb int, t *float64, w *float64, ldw, n int, alpha float64)

var (
	// trsmLeaf is the order up to which a triangle is solved by the substitution kernels rather than split: the
	// kernels run at about Dgemm's rate, and splitting further makes the products thinner.
	trsmLeaf = 64
	// trsmRows is how many rows of B a right-side substitution transposes and solves at a time (the block of B
	// and its transpose stay in L1).
	trsmRows = 32
	// Below these sizes gonum is faster (measured on Zen 5): minTrsmLeft and minTrsmRight bound m·n·k of a left-
	// and a right-side solve, minTrsmRHS the number of right-hand sides (columns of B on the left, rows on the
	// right), which gonum's row-by-row right-side solve handles best.
	minTrsmLeft, minTrsmRight, minTrsmRHS = 512, 64, 3
)

// Dtrsm solves op(A)·X = alpha·B (side Left, A m×m) or X·op(A) = alpha·B (side Right, A n×n) for triangular A,
// overwriting the m×n matrix B with X, exactly as gonum's Dtrsm specifies, including its argument checks and
// panics. The triangle is split in two recursively: the two halves are solved in turn and the block coupling them
// is subtracted by Dgemm; triangles of order up to trsmLeaf are solved by substitution kernels that, like Dgemm's
// micro-kernels, keep a tile of the result in registers.
func Dtrsm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int,
	b []float64, ldb int) {
	left := s == blas.Left
	k, rhs, least := n, m, minTrsmRight
	if left {
		k, rhs, least = m, n, minTrsmLeft
	}
	ks := active()
	if ks == nil || alpha == 0 || m*n*k < least || (!left && rhs < minTrsmRHS) ||
		!trsmArgsOK(s, ul, tA, d, m, n, a, lda, b, ldb) {
		gonum.Implementation{}.Dtrsm(s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
		return
	}
	w := getTrsmWork(ks)
	defer trsmPool.Put(w)
	if rhs < minTrsmRHS {
		// op(A)·X = alpha·B is Xᵀ·op(A)ᵀ = alpha·Bᵀ, solved row by row by gonum with the rows of Bᵀ contiguous
		// in the workspace.
		if len(w.v) < n*m {
			w.v = make([]float64, n*m)
		}
		v := w.v[:n*m]
		transposeGo(v, m, b, ldb, m, n)
		flip := blas.Trans
		if tA != blas.NoTrans {
			flip = blas.NoTrans
		}
		gonum.Implementation{}.Dtrsm(blas.Right, ul, flip, d, n, m, alpha, a, lda, v, m)
		transposeGo(b, ldb, v, m, n, m)
		return
	}
	j := trsmJob{ks: ks, w: w, left: left, tA: tA, trans: tA != blas.NoTrans, unit: d == blas.Unit,
		upper: ul == blas.Upper, lda: lda, ldb: ldb}
	j.upperT = j.upper != j.trans
	j.solve(m, n, alpha, a, b)
}

// trsmArgsOK reports whether gonum's Dtrsm would accept the arguments and do work (m, n > 0).
func trsmArgsOK(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, a []float64, lda int,
	b []float64, ldb int) bool {
	if (s != blas.Left && s != blas.Right) || (ul != blas.Lower && ul != blas.Upper) || !okTrans(tA) ||
		(d != blas.NonUnit && d != blas.Unit) || m <= 0 || n <= 0 {
		return false
	}
	k := n
	if s == blas.Left {
		k = m
	}
	return lda >= k && ldb >= n && len(a) >= lda*(k-1)+k && len(b) >= ldb*(m-1)+n
}

// trsmWork holds a packed triangle and the columns a substitution kernel works on (t, w), or the transpose of a
// narrow B (v).
type trsmWork struct{ t, w, v []float64 }

var trsmPool sync.Pool

func getTrsmWork(ks *kernelSet) *trsmWork {
	w, _ := trsmPool.Get().(*trsmWork)
	if w == nil {
		w = new(trsmWork)
	}
	if n := trsmLeaf * (trsmLeaf + ks.trsmR); len(w.t) < n {
		w.t = make([]float64, n)
	}
	if n := trsmLeaf * roundUp(max(trsmRows, ks.vl), ks.vl); len(w.w) < n {
		w.w = make([]float64, n)
	}
	return w
}

// trsmJob is one Dtrsm call: T = op(A), upperT whether T is upper triangular.
type trsmJob struct {
	ks                               *kernelSet
	w                                *trsmWork
	tA                               blas.Transpose
	left, trans, unit, upper, upperT bool
	lda, ldb                         int
}

// solve solves with the triangle T whose top left corner is at a[0], for the m×n block of B at b[0]. T is split
// at k1 into T11 (k1×k1), T22 and one coupling block, T12 when T is upper, T21 when lower; that block lies in A's
// stored triangle at a[k1] (upper) or a[k1·lda] (lower) and is used transposed when A is. Whichever half of X does
// not depend on the other is solved first with alpha; the coupling update applies alpha to the rest of B as
// Dgemm's beta, and the second half is solved with alpha 1.
func (j *trsmJob) solve(m, n int, alpha float64, a, b []float64) {
	k := n
	if j.left {
		k = m
	}
	if k <= trsmLeaf {
		j.leaf(m, n, alpha, a, b)
		return
	}
	// The half solved second is the one the product updates; a multiple of 8 rows or columns keeps the product's
	// edges on whole tiles and leaves the remainder to the half solved first, down to a leaf.
	h := roundUp(k/2, 8)
	if h >= k {
		h = k / 2
	}
	k1 := k - h
	if j.left == j.upperT {
		k1 = h
	}
	k2 := k - k1
	lda, ldb := j.lda, j.ldb
	a22 := a[k1*lda+k1:]
	coup := a[k1*lda:]
	if j.upper {
		coup = a[k1:]
	}
	switch {
	case j.left && j.upperT: // [T11 T12; 0 T22]·[X1; X2] = alpha·[B1; B2]
		b2 := b[k1*ldb:]
		j.solve(k2, n, alpha, a22, b2)
		Dgemm(j.tA, blas.NoTrans, k1, n, k2, -1, coup, lda, b2, ldb, alpha, b, ldb)
		j.solve(k1, n, 1, a, b)
	case j.left: // [T11 0; T21 T22]·[X1; X2] = alpha·[B1; B2]
		b2 := b[k1*ldb:]
		j.solve(k1, n, alpha, a, b)
		Dgemm(j.tA, blas.NoTrans, k2, n, k1, -1, coup, lda, b, ldb, alpha, b2, ldb)
		j.solve(k2, n, 1, a22, b2)
	case j.upperT: // [X1 X2]·[T11 T12; 0 T22] = alpha·[B1 B2]
		b2 := b[k1:]
		j.solve(m, k1, alpha, a, b)
		Dgemm(blas.NoTrans, j.tA, m, k2, k1, -1, b, ldb, coup, lda, alpha, b2, ldb)
		j.solve(m, k2, 1, a22, b2)
	default: // [X1 X2]·[T11 0; T21 T22] = alpha·[B1 B2]
		b2 := b[k1:]
		j.solve(m, k2, alpha, a22, b2)
		Dgemm(blas.NoTrans, j.tA, m, k1, k2, -1, b2, ldb, coup, lda, alpha, b, ldb)
		j.solve(m, k1, 1, a, b)
	}
}

// leaf solves with a triangle of order at most trsmLeaf. The kernels do forward substitution with a lower
// triangle over rows of W, vectors of columns at a time: on the left W is B itself (its rows bottom up when T is
// upper), on the right Tᵀ·Xᵀ = alpha·Bᵀ is solved on blocks of rows of B transposed into the workspace.
func (j *trsmJob) leaf(m, n int, alpha float64, a, b []float64) {
	ks, vl, ldb, ws := j.ks, j.ks.vl, j.ldb, j.w.w
	if j.left {
		packTri(j.w.t, ks.trsmR, j.upperT, j.trans, j.unit, a, j.lda, m)
		row0, ld := 0, ldb
		if j.upperT {
			row0, ld = (m-1)*ldb, -ldb
		}
		whole := n / vl * vl
		if whole > 0 {
			j.kernels(m, whole, alpha, b, row0, ld)
		}
		if whole == n {
			return
		}
		// The last columns, fewer than a vector, go through the workspace padded with zeros.
		tail := n - whole
		for i := 0; i < m; i++ {
			copy(ws[i*vl:i*vl+tail], b[i*ldb+whole:i*ldb+n])
			clear(ws[i*vl+tail : i*vl+vl])
		}
		row0, ld = 0, vl
		if j.upperT {
			row0, ld = (m-1)*vl, -vl
		}
		j.kernels(m, vl, alpha, ws, row0, ld)
		for i := 0; i < m; i++ {
			copy(b[i*ldb+whole:i*ldb+n], ws[i*vl:i*vl+tail])
		}
		return
	}
	packTri(j.w.t, ks.trsmR, !j.upperT, !j.trans, j.unit, a, j.lda, n)
	for r0 := 0; r0 < m; r0 += trsmRows {
		rc := min(trsmRows, m-r0)
		wc := roundUp(rc, vl)
		bb := b[r0*ldb:]
		transpose(ws, wc, bb, ldb, rc, n)
		if wc > rc {
			for i := 0; i < n; i++ {
				clear(ws[i*wc+rc : i*wc+wc])
			}
		}
		row0, ld := 0, wc
		if !j.upperT {
			row0, ld = (n-1)*wc, -wc
		}
		j.kernels(n, wc, alpha, ws, row0, ld)
		transpose(bb, ldb, ws, wc, n, rc)
	}
}

// kernels runs the substitution on the nb rows of w from row0, ld apart, over cols columns (a multiple of the
// vector length), with the triangle packed in the workspace.
func (j *trsmJob) kernels(nb, cols int, alpha float64, w []float64, row0, ld int) {
	ks := j.ks
	t := j.w.t[:packedLen(nb, ks.trsmR)]
	// The assembly does not check bounds; these do.
	_ = w[row0+min(0, (nb-1)*ld)]
	_ = w[row0+max(0, (nb-1)*ld)+cols-1]
	wide := ks.trsmU * ks.vl
	nw := cols / wide * wide
	if nw > 0 {
		ks.trsm[1](nb, &t[0], &w[row0], ld, nw, alpha)
	}
	if nw < cols {
		ks.trsm[0](nb, &t[0], &w[row0+nw], ld, cols-nw, alpha)
	}
}

// packedLen is the length of an order-nb triangle packed by packTri.
func packedLen(nb, r int) int {
	n, i := 0, 0
	for ; nb-i >= r; i += r {
		n += (i + r) * r
	}
	for ; i < nb; i++ {
		n += i + 1
	}
	return n
}

// packTri packs the order-k triangle T = op(A), A's diagonal block at a, as the lower triangle L the kernels
// solve with: L = T when T is lower, else T with its rows and columns reversed (L[i][p] = T[k−1−i][k−1−p]), so
// that one forward substitution serves every case. Rows go in blocks of r, then singly; a block starting at row i
// holds, for each column p < i+r in turn, L[i..i+r)[p], with zeros above the diagonal and the reciprocal of T's
// diagonal on it (1 for a unit diagonal, which is not read).
func packTri(dst []float64, r int, upper, trans, unit bool, a []float64, lda, k int) {
	// L[i][p] is a[off + i·si + p·sp].
	off, si, sp := 0, lda, 1
	if trans {
		si, sp = 1, lda
	}
	if upper {
		off, si, sp = (k-1)*(lda+1), -si, -sp
	}
	n, i := 0, 0
	for ; i < k; i += r {
		if k-i < r {
			r = 1
		}
		row := off + i*si
		switch r {
		case 4:
			c := row
			for d := dst[n : n+4*i]; len(d) >= 4; d = d[4:] {
				d[0], d[1], d[2], d[3] = a[c], a[c+si], a[c+2*si], a[c+3*si]
				c += sp
			}
		case 2:
			c := row
			for d := dst[n : n+2*i]; len(d) >= 2; d = d[2:] {
				d[0], d[1] = a[c], a[c+si]
				c += sp
			}
		default:
			for p := 0; p < i; p++ {
				for q := 0; q < r; q++ {
					dst[n+p*r+q] = a[row+p*sp+q*si]
				}
			}
		}
		n += r * i
		// The block's own r×r corner: column p = i+c of row i+q at c·r+q.
		blk := dst[n : n+r*r]
		clear(blk)
		for q := 0; q < r; q++ {
			for c := 0; c < q; c++ {
				blk[c*r+q] = a[off+(i+q)*si+(i+c)*sp]
			}
			if unit {
				blk[q*r+q] = 1
			} else {
				blk[q*r+q] = 1 / a[off+(i+q)*(si+sp)]
			}
		}
		n += r * r
	}
}

// transposeGo sets d[q·dw + r] = s[r·ld + q] for r < rows, q < cols.
func transposeGo(d []float64, dw int, s []float64, ld, rows, cols int) {
	for r := 0; r < rows; r++ {
		for q, v := range s[r*ld : r*ld+cols] {
			d[q*dw+r] = v
		}
	}
}
