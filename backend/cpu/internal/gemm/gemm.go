// Package gemm is a packed, register-blocked float64 Dgemm and Dsyrk for row-major matrices (gonum's blas64
// convention), and a Dtrsm and a Dsyr2k built on them. Panels of op(A) and op(B) are copied into contiguous, zero-padded buffers
// sized for the caches, and a micro-kernel in assembly (AVX-512 or AVX2+FMA) keeps a whole tile of C in registers
// while it sweeps k. CPUs with neither, other architectures, small products and degenerate or invalid arguments go
// to gonum. Calls are single-threaded and, once the buffer pools are warm, allocation-free.
package gemm

import (
	"math"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// microKernel sets the mr×(nv·vl) tile at c to alpha·Ã·B̃ + beta·C, C not read when beta is 0, from a packed
// panel of op(A) (mr values per step of k, as elements apart) and one of op(B) (nv·vl values per step, bs apart);
// k ≥ 1.
type microKernel func(k int, a *float64, as int, b *float64, bs int, c *float64, ldc int, alpha, beta float64)

// kernelSet is one instruction set's micro-kernels and the block sizes that suit them.
type kernelSet struct {
	name string
	mr   int            // rows of a tile
	vl   int            // doubles per vector
	nv   int            // vectors per row of the widest tile; nr = nv·vl
	fn   [4]microKernel // fn[v]: tile v·vl wide
	kc   int            // steps of k per packed block
	mc   int            // rows of Ã per block (multiple of mr): mc×kc stays in L2
	nc   int            // columns of B̃ per block (multiple of nr): kc×nc stays in L3
	// Dtrsm's small triangles: trsm[0] solves one vector of columns at a time, trsm[1] trsmU vectors; both finish
	// trsmR rows together.
	trsm         [2]trsmKernel
	trsmR, trsmU int
}

func (ks *kernelSet) nr() int { return ks.nv * ks.vl }

var (
	// useAVX512 and useAVX2 select the micro-kernels; they are set from the CPU at init.
	useAVX512, useAVX2 bool
	// Below these sizes packing costs more than it saves and gonum is faster (measured on Zen 5): minWork
	// bounds m·n·k, minRows the m and n of Dgemm (one row or column is a matrix-vector product), minSyrkN the n of
	// Dsyrk.
	minWork  = 8 * 8 * 8
	minRows  = 2
	minSyrkN = 8
)

// active returns the kernel set in use, nil for gonum.
func active() *kernelSet {
	switch {
	case useAVX512 && avx512Set != nil:
		return avx512Set
	case useAVX2 && avx2Set != nil:
		return avx2Set
	}
	return nil
}

// Kernel names the micro-kernel in use, "" when every call goes to gonum.
func Kernel() string {
	if ks := active(); ks != nil {
		return ks.name
	}
	return ""
}

// Dgemm computes C = alpha·op(A)·op(B) + beta·C for row-major A, B, C exactly as gonum's Dgemm specifies,
// including its argument checks and panics.
func Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int,
	beta float64, c []float64, ldc int) {
	ks := active()
	if ks != nil && alpha != 0 && k > 0 && (m == 1 || n == 1) && gemmArgsOK(tA, tB, m, n, k, a, lda, b, ldb, c, ldc) {
		gemv(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if ks == nil || alpha == 0 || k == 0 || m < minRows || n < minRows || m*n*k < minWork ||
		!gemmArgsOK(tA, tB, m, n, k, a, lda, b, ldb, c, ldc) {
		gonum.Implementation{}.Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	drive(ks, tA != blas.NoTrans, tB != blas.NoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, full)
}

// gemv computes a product with one row or one column of C as the matrix-vector product it is: gonum's Dgemm takes
// 25–30 times as long as its Dgemv for n = 1 (measured at m = k = 1000 on Zen 5).
func gemv(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int,
	beta float64, c []float64, ldc int) {
	var g gonum.Implementation
	if n == 1 {
		// C (m×1, stride ldc) = op(A)·x with x the single column of op(B).
		incx := ldb
		if tB != blas.NoTrans {
			incx = 1
		}
		if tA == blas.NoTrans {
			g.Dgemv(blas.NoTrans, m, k, alpha, a, lda, b, incx, beta, c, ldc)
		} else {
			g.Dgemv(blas.Trans, k, m, alpha, a, lda, b, incx, beta, c, ldc)
		}
		return
	}
	// m = 1: Cᵀ (n) = op(B)ᵀ·x with x the single row of op(A).
	incx := 1
	if tA != blas.NoTrans {
		incx = lda
	}
	if tB == blas.NoTrans {
		g.Dgemv(blas.Trans, k, n, alpha, b, ldb, a, incx, beta, c, 1)
	} else {
		g.Dgemv(blas.NoTrans, n, k, alpha, b, ldb, a, incx, beta, c, 1)
	}
}

// Dsyrk computes the uplo triangle of C = alpha·A·Aᵀ + beta·C (tA = NoTrans, A n×k) or alpha·Aᵀ·A + beta·C
// (A k×n) exactly as gonum's Dsyrk specifies; the other triangle is not touched.
func Dsyrk(ul blas.Uplo, tA blas.Transpose, n, k int, alpha float64, a []float64, lda int, beta float64,
	c []float64, ldc int) {
	ks := active()
	valid := syrkArgsOK(ul, tA, n, k, a, lda, c, ldc)
	if ks == nil || alpha == 0 || k == 0 || n < minSyrkN || n*n*k < minWork || !valid {
		if valid && beta == 0 && alpha != 0 && ul == blas.Lower && tA != blas.NoTrans {
			// gonum scales this triangle by beta instead of overwriting it, which keeps NaN.
			for i := 0; i < n; i++ {
				clear(c[i*ldc : i*ldc+i+1])
			}
		}
		gonum.Implementation{}.Dsyrk(ul, tA, n, k, alpha, a, lda, beta, c, ldc)
		return
	}
	tri := upper
	if ul == blas.Lower {
		tri = lower
	}
	// op(A)·op(A)ᵀ is a product of A with itself, transposed on one side.
	trans := tA != blas.NoTrans
	drive(ks, trans, !trans, n, n, k, alpha, a, lda, a, lda, beta, c, ldc, tri)
}

func okTrans(t blas.Transpose) bool {
	return t == blas.NoTrans || t == blas.Trans || t == blas.ConjTrans
}

// gemmArgsOK reports whether gonum's Dgemm would accept the arguments and do work (m, n > 0).
func gemmArgsOK(tA, tB blas.Transpose, m, n, k int, a []float64, lda int, b []float64, ldb int, c []float64,
	ldc int) bool {
	if !okTrans(tA) || !okTrans(tB) || m <= 0 || n <= 0 || k <= 0 || ldc < max(1, n) || len(c) < (m-1)*ldc+n {
		return false
	}
	if tA != blas.NoTrans {
		if lda < max(1, m) || len(a) < (k-1)*lda+m {
			return false
		}
	} else if lda < max(1, k) || len(a) < (m-1)*lda+k {
		return false
	}
	if tB != blas.NoTrans {
		return ldb >= max(1, k) && len(b) >= (n-1)*ldb+k
	}
	return ldb >= max(1, n) && len(b) >= (k-1)*ldb+n
}

// syrkArgsOK reports whether gonum's Dsyrk would accept the arguments and do work (n > 0).
func syrkArgsOK(ul blas.Uplo, tA blas.Transpose, n, k int, a []float64, lda int, c []float64, ldc int) bool {
	if (ul != blas.Lower && ul != blas.Upper) || !okTrans(tA) || n <= 0 || k < 0 || ldc < max(1, n) {
		return false
	}
	row, col := k, n
	if tA == blas.NoTrans {
		row, col = n, k
	}
	return lda >= max(1, col) && len(a) >= lda*(row-1)+col && len(c) >= ldc*(n-1)+n
}

// triangle restricts which elements of C are written.
type triangle int

const (
	full  triangle = iota
	upper          // j ≥ i
	lower          // j ≤ i
)

// workspace holds the packed panels and a tile for the edges of C.
type workspace struct {
	a, b, tile []float64
}

var pool sync.Pool

func getWorkspace(ks *kernelSet, m, n, k int) *workspace {
	w, _ := pool.Get().(*workspace)
	if w == nil {
		w = new(workspace)
	}
	kb := min(ks.kc, k)
	if na := min(ks.mc, roundUp(m, ks.mr)) * kb; len(w.a) < na {
		w.a = make([]float64, na)
	}
	if nb := kb * min(ks.nc, roundUp(n, ks.nr())); len(w.b) < nb {
		w.b = make([]float64, nb)
	}
	if nt := ks.mr * ks.nr(); len(w.tile) < nt {
		w.tile = make([]float64, nt)
	}
	return w
}

func roundUp(x, q int) int { return (x + q - 1) / q * q }

// drive runs the blocked product C = alpha·op(A)·op(B) + beta·C over the tri part of C. Loops from the outside
// in: nc columns of C, kc of the depth (B̃ packed), mc rows (Ã packed), then nr×mr tiles: a kc×nr panel of B̃
// serves every tile of its column while the mr×kc panels of Ã stream from L2.
func drive(ks *kernelSet, tA, tB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int,
	beta float64, c []float64, ldc int, tri triangle) {
	w := getWorkspace(ks, m, n, k)
	defer pool.Put(w)
	mr, nr, vl := ks.mr, ks.nr(), ks.vl
	// In Dsyrk op(A) is op(B)ᵀ, so when B̃ holds all of op(B) (one block of columns) the panels of Ã are
	// already in it: mr columns of a panel of B̃, read with that panel's stride. This needs mr = vl, so that a
	// panel of Ã never straddles two of B̃.
	alias := tri != full && n <= ks.nc && mr == vl
	for jc := 0; jc < n; jc += ks.nc {
		nb := min(ks.nc, n-jc)
		for pc := 0; pc < k; pc += ks.kc {
			kb := min(ks.kc, k-pc)
			bt := beta
			if pc > 0 {
				bt = 1
			}
			packB(w.b, tB, b, ldb, pc, kb, jc, nb, nr, vl)
			for ic := 0; ic < m; ic += ks.mc {
				mb := min(ks.mc, m-ic)
				if (tri == upper && jc+nb-1 < ic) || (tri == lower && jc > ic+mb-1) {
					continue
				}
				if !alias {
					packA(w.a, tA, a, lda, ic, mb, pc, kb, mr)
				}
				// While the tiles of this block run, the sources of the next blocks to pack are fetched, so
				// that packing them does not wait on memory.
				var f fetcher
				switch {
				case alias:
				case ic+ks.mc < m:
					f.add(opBlock(tA, a, lda, ic+ks.mc, min(ks.mc, m-ic-ks.mc), pc, kb))
				case pc+ks.kc < k:
					f.add(opBlock(tA, a, lda, 0, min(ks.mc, m), pc+ks.kc, min(ks.kc, k-pc-ks.kc)))
				}
				if ic+ks.mc >= m {
					switch {
					case pc+ks.kc < k:
						f.add(opBlock(tB, b, ldb, pc+ks.kc, min(ks.kc, k-pc-ks.kc), jc, nb))
					case jc+ks.nc < n:
						f.add(opBlock(tB, b, ldb, 0, kb, jc+ks.nc, min(ks.nc, n-jc-ks.nc)))
					}
				}
				f.spread((mb + mr - 1) / mr * ((nb + nr - 1) / nr))
				for jr := 0; jr < nb; jr += nr {
					wd := min(nr, nb-jr)
					nv := (wd + vl - 1) / vl
					wv := nv * vl
					j0 := jc + jr
					for ir := 0; ir < mb; ir += mr {
						h := min(mr, mb-ir)
						i0 := ic + ir
						var ap *float64
						as := mr
						if alias {
							q := i0 / nr
							ap, as = &w.b[q*nr*kb+i0%nr], min(nr, roundUp(n-q*nr, vl))
						} else {
							ap = &w.a[ir*kb]
						}
						f.step()
						switch classify(tri, i0, h, j0, wd) {
						case outside:
							continue
						case inside:
							t := tileJob{kb: kb, a: ap, as: as, bs: wv, i0: i0, h: h, alpha: alpha, beta: bt}
							t.run(ks, w, c, ldc, &w.b[jr*kb], j0, wd, nv, full)
							continue
						}
						// A tile across the diagonal goes by vectors of columns: those past the diagonal are
						// skipped, runs of those within the triangle computed in place.
						t := tileJob{kb: kb, a: ap, as: as, bs: wv, i0: i0, h: h, alpha: alpha, beta: bt}
						for v := 0; v < nv; {
							js, sw := j0+v*vl, min(vl, wd-v*vl)
							switch classify(tri, i0, h, js, sw) {
							case outside:
								v++
							case inside:
								e := v + 1
								for e < nv && classify(tri, i0, h, j0+e*vl, min(vl, wd-e*vl)) == inside {
									e++
								}
								t.run(ks, w, c, ldc, &w.b[jr*kb+v*vl], js, min(wd, e*vl)-v*vl, e-v, full)
								v = e
							default:
								t.run(ks, w, c, ldc, &w.b[jr*kb+v*vl], js, sw, 1, tri)
								v++
							}
						}
					}
				}
			}
		}
	}
}

// block is rows × cols of a matrix at s with stride ld.
type block struct {
	s              []float64
	ld, rows, cols int
}

// opBlock returns where rows [r0, r0+nr) × columns [c0, c0+nc) of op(X) lie in X.
func opBlock(trans bool, x []float64, ld, r0, nr, c0, nc int) block {
	if trans {
		return block{s: x[c0*ld+r0:], ld: ld, rows: nc, cols: nr}
	}
	return block{s: x[r0*ld+c0:], ld: ld, rows: nr, cols: nc}
}

// fetcher prefetches up to two blocks, a few rows per step.
type fetcher struct {
	b        [2]block
	n        int // blocks in b
	cur, row int // next row to fetch
	per      int // rows per step
}

func (f *fetcher) add(b block) {
	if b.rows > 0 && b.cols > 0 {
		f.b[f.n] = b
		f.n++
	}
}

// spread sets the rows per step so that steps calls cover all blocks.
func (f *fetcher) spread(steps int) {
	rows := 0
	for _, b := range f.b[:f.n] {
		rows += b.rows
	}
	f.per = (rows + steps - 1) / max(steps, 1)
}

func (f *fetcher) step() {
	for left := f.per; left > 0 && f.cur < f.n; {
		b := &f.b[f.cur]
		r := min(left, b.rows-f.row)
		_ = b.s[(f.row+r-1)*b.ld+b.cols-1]
		prefetchRows(&b.s[f.row*b.ld], b.ld, r, b.cols)
		left -= r
		f.row += r
		if f.row == b.rows {
			f.cur++
			f.row = 0
		}
	}
}

// Where a block of C lies relative to the triangle being written.
const (
	inside = iota
	outside
	across
)

// classify places rows [i0, i0+h) × columns [j0, j0+w) of C relative to tri.
func classify(tri triangle, i0, h, j0, w int) int {
	switch tri {
	case upper: // j ≥ i
		if j0+w-1 < i0 {
			return outside
		}
		if j0 < i0+h-1 {
			return across
		}
	case lower: // j ≤ i
		if j0 > i0+h-1 {
			return outside
		}
		if j0+w-1 > i0 {
			return across
		}
	}
	return inside
}

// tileJob is one tile's share of the product: kb steps of k from Ã at a (stride as) and B̃ (stride bs) into rows
// [i0, i0+h) of C.
type tileJob struct {
	kb          int
	a           *float64
	as, bs      int
	i0, h       int
	alpha, beta float64
}

// run computes columns [j0, j0+wd) of the tile with the nv-vector kernel, within tri: in place when the tile is
// whole, else into the workspace tile and merged.
func (t *tileJob) run(ks *kernelSet, w *workspace, c []float64, ldc int, bp *float64, j0, wd, nv int, tri triangle) {
	fn := ks.fn[nv]
	if tri == full && t.h == ks.mr && wd == nv*ks.vl {
		fn(t.kb, t.a, t.as, bp, t.bs, &c[t.i0*ldc+j0], ldc, t.alpha, t.beta)
		return
	}
	nr := ks.nr()
	fn(t.kb, t.a, t.as, bp, t.bs, &w.tile[0], nr, 1, 0)
	merge(c[t.i0*ldc+j0:], ldc, w.tile, nr, t.h, wd, t.alpha, t.beta, tri, j0-t.i0)
}

// merge sets C = alpha·T + beta·C on the h×wd corner of a tile, within tri; d = j0 − i0 places the tile
// relative to the diagonal.
func merge(c []float64, ldc int, t []float64, ldt, h, wd int, alpha, beta float64, tri triangle, d int) {
	for r := 0; r < h; r++ {
		lo, hi := 0, wd
		switch tri {
		case upper: // j ≥ i: col ≥ r − d
			lo = max(0, r-d)
		case lower: // j ≤ i: col ≤ r − d
			hi = min(wd, r-d+1)
		}
		if lo >= hi {
			continue
		}
		cr := c[r*ldc+lo : r*ldc+hi]
		tr := t[r*ldt+lo : r*ldt+hi]
		if beta == 0 {
			for j, v := range tr {
				cr[j] = alpha * v
			}
			continue
		}
		for j, v := range tr { // the kernel's rounding (one FMA on beta·C), so no entry depends on its tile
			cr[j] = math.FMA(alpha, v, beta*cr[j])
		}
	}
}
