package cuda

import (
	"math"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/backend/cuda/internal/cu"
)

// Emulations of kernels/core.cu. The grid-stride kernels are emulated as one loop over their work items (each item
// is independent, so the order does not matter); the warp and block reductions follow the kernels' lane and warp
// structure so that the emulated sums are the same doubles the GPU adds.

func init() {
	emuKernels["core.ew_fill"] = emuEwFill
	emuKernels["core.ew_copy"] = emuEwCopy
	emuKernels["core.ew_axpby"] = emuEwAxpby
	emuKernels["core.ew_muldiv"] = emuEwMulDiv
	emuKernels["core.ew_map"] = emuEwMap
	emuKernels["core.ew_scale"] = emuEwScale
	emuKernels["core.reduce_row"] = emuReduceRow
	emuKernels["core.reduce_col"] = emuReduceCol
	emuKernels["core.reduce_all"] = emuReduceAll
	emuKernels["core.add_diag"] = emuAddDiag
	emuKernels["core.symmetrize"] = emuSymmetrize
	emuKernels["core.transpose"] = emuTranspose
	emuKernels["core.tri_mirror_lower"] = emuTriMirrorLower
	emuKernels["core.tri_upper_to_lower"] = emuTriUpperToLower
	emuKernels["core.pack_sym"] = emuPackSym
	emuKernels["core.unpack_eig"] = emuUnpackEig
	emuKernels["core.qr_r_sign"] = emuQRRSign
	emuKernels["core.qr_q_out"] = emuQRQOut
	emuKernels["core.pack_colmajor"] = emuPackColMajor
	emuKernels["core.chol_check"] = emuCholCheck
}

// emuAt is at() of core.cu: the offset of element k = (b·rows + i)·cols + j of a view.
func emuAt(k, rows, cols, bs, rs int) int {
	j := k % cols
	r := k / cols
	i := r % rows
	b := r / rows
	return b*bs + i*rs + j
}

func emuEwFill(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	d, dbs, drs, B, R, C, v := a.ptr(0), a.i64(1), a.i64(2), a.i64(3), a.i64(4), a.i64(5), a.f64(6)
	for k := 0; k < B*R*C; k++ {
		*e.f(d, emuAt(k, R, C, dbs, drs)) = v
	}
}

func emuEwCopy(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	d, dbs, drs, x, xbs, xrs := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3), a.i64(4), a.i64(5)
	B, R, C := a.i64(6), a.i64(7), a.i64(8)
	for k := 0; k < B*R*C; k++ {
		*e.f(d, emuAt(k, R, C, dbs, drs)) = *e.f(x, emuAt(k, R, C, xbs, xrs))
	}
}

func emuEwAxpby(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	d, dbs, drs, x, xbs, xrs, y, ybs, yrs := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3), a.i64(4), a.i64(5), a.ptr(6),
		a.i64(7), a.i64(8)
	B, R, C, alpha, beta, hasY := a.i64(9), a.i64(10), a.i64(11), a.f64(12), a.f64(13), a.i32(14)
	for k := 0; k < B*R*C; k++ {
		v := alpha * *e.f(x, emuAt(k, R, C, xbs, xrs))
		if hasY != 0 {
			v += beta * *e.f(y, emuAt(k, R, C, ybs, yrs))
		}
		*e.f(d, emuAt(k, R, C, dbs, drs)) = v
	}
}

func emuEwMulDiv(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	d, dbs, drs, x, xbs, xrs, y, ybs, yrs := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3), a.i64(4), a.i64(5), a.ptr(6),
		a.i64(7), a.i64(8)
	B, R, C, div := a.i64(9), a.i64(10), a.i64(11), a.i32(12)
	for k := 0; k < B*R*C; k++ {
		p, q := *e.f(x, emuAt(k, R, C, xbs, xrs)), *e.f(y, emuAt(k, R, C, ybs, yrs))
		v := p * q
		if div != 0 {
			v = p / q
		}
		*e.f(d, emuAt(k, R, C, dbs, drs)) = v
	}
}

// emuEwMap uses the CPU backend's Unary, which core.cu's unary() transcribes case by case.
func emuEwMap(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	d, dbs, drs, x, xbs, xrs := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3), a.i64(4), a.i64(5)
	B, R, C, f, alpha := a.i64(6), a.i64(7), a.i64(8), a.i32(9), a.f64(10)
	for k := 0; k < B*R*C; k++ {
		*e.f(d, emuAt(k, R, C, dbs, drs)) = cpu.Unary(backend.UnaryOp(f), alpha**e.f(x, emuAt(k, R, C, xbs, xrs)))
	}
}

func emuEwScale(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	d, dbs, drs, x, xbs, xrs, vec, vbs, vrs := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3), a.i64(4), a.i64(5), a.ptr(6),
		a.i64(7), a.i64(8)
	B, R, C, byCol := a.i64(9), a.i64(10), a.i64(11), a.i32(12)
	for k := 0; k < B*R*C; k++ {
		j, r := k%C, k/C
		i, b := r%R, r/R
		var v float64
		if byCol != 0 {
			v = *e.f(vec, b*vbs+j)
		} else {
			v = *e.f(vec, b*vbs+i*vrs)
		}
		*e.f(d, b*dbs+i*drs+j) = *e.f(x, b*xbs+i*xrs+j) * v
	}
}

// Reductions of core.cu: rinit, rstep, rjoin.
func emuRInit(op int32) float64 {
	switch op {
	case 1:
		return math.Inf(-1)
	case 2:
		return math.Inf(1)
	}
	return 0
}

func emuRStep(op int32, acc, v float64) float64 {
	switch op {
	case 1:
		if (v > acc || v != v) && acc == acc {
			return v
		}
		return acc
	case 2:
		if (v < acc || v != v) && acc == acc {
			return v
		}
		return acc
	case 3:
		return acc + v*v
	}
	return acc + v
}

func emuRJoin(op int32, x, y float64) float64 {
	if op == 1 || op == 2 {
		return emuRStep(op, x, y)
	}
	return x + y
}

// emuWarpJoin is warp_join: the xor butterfly over 32 lanes; it returns lane 0's value.
func emuWarpJoin(op int32, v []float64) float64 {
	w := append([]float64(nil), v...)
	for o := 16; o > 0; o >>= 1 {
		nw := make([]float64, 32)
		for l := range nw {
			nw[l] = emuRJoin(op, w[l], w[l^o])
		}
		w = nw
	}
	return w[0]
}

// emuReduceRow is reduce_row: warp r of the grid takes rows r, r + nwarps, …; lane l accumulates columns
// l, l + 32, …; the butterfly joins the lanes.
func emuReduceRow(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
	d, dbs, drs, x, xbs, xrs, y, ybs, yrs := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3), a.i64(4), a.i64(5), a.ptr(6),
		a.i64(7), a.i64(8)
	B, R, C, op := a.i64(9), a.i64(10), a.i64(11), a.i32(12)
	if block[0]%32 != 0 {
		e.t.Fatalf("reduce_row: block %d is not whole warps", block[0])
	}
	nwarps := int(grid[0]) * int(block[0]) / 32
	lanes := make([]float64, 32)
	for w := 0; w < nwarps; w++ {
		for r := w; r < B*R; r += nwarps {
			b, i := r/R, r%R
			for l := 0; l < 32; l++ {
				acc := emuRInit(op)
				for j := l; j < C; j += 32 {
					if y != cuNil {
						acc += *e.f(x, b*xbs+i*xrs+j) * *e.f(y, b*ybs+i*yrs+j)
					} else {
						acc = emuRStep(op, acc, *e.f(x, b*xbs+i*xrs+j))
					}
				}
				lanes[l] = acc
			}
			*e.f(d, b*dbs+i*drs) = emuWarpJoin(op, lanes)
		}
	}
}

func emuReduceCol(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	d, dbs, x, xbs, xrs := a.ptr(0), a.i64(1), a.ptr(2), a.i64(3), a.i64(4)
	B, R, C, op := a.i64(5), a.i64(6), a.i64(7), a.i32(8)
	for k := 0; k < B*C; k++ {
		b, j := k/C, k%C
		acc := emuRInit(op)
		for i := 0; i < R; i++ {
			acc = emuRStep(op, acc, *e.f(x, b*xbs+j+i*xrs))
		}
		*e.f(d, b*dbs+j) = acc
	}
}

// emuReduceAll is reduce_all: block b, thread t strides over the elements; warp butterflies; warp 0 joins the
// per-warp results (lanes past the warp count hold rinit).
func emuReduceAll(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
	d, dbs, x, xbs, xrs, R, C, op := a.ptr(0), a.i64(1), a.ptr(2), a.i64(3), a.i64(4), a.i64(5), a.i64(6), a.i32(7)
	nt := int(block[0])
	if nt%32 != 0 || nt > 256 {
		e.t.Fatalf("reduce_all: block %d (shared part[] holds 8 warps)", nt)
	}
	for b := 0; b < int(grid[0]); b++ {
		thr := make([]float64, nt)
		for t := 0; t < nt; t++ {
			acc := emuRInit(op)
			for k := t; k < R*C; k += nt {
				acc = emuRStep(op, acc, *e.f(x, b*xbs+(k/C)*xrs+k%C))
			}
			thr[t] = acc
		}
		part := make([]float64, 32)
		for l := range part {
			part[l] = emuRInit(op)
		}
		for w := 0; w < nt/32; w++ {
			part[w] = emuWarpJoin(op, thr[32*w:32*w+32])
		}
		*e.f(d, b*dbs) = emuWarpJoin(op, part)
	}
}

func emuAddDiag(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	d, dbs, drs, B, n, alpha := a.ptr(0), a.i64(1), a.i64(2), a.i64(3), a.i64(4), a.f64(5)
	for k := 0; k < B*n; k++ {
		b, i := k/n, k%n
		*e.f(d, b*dbs+i*drs+i) += alpha
	}
}

// emuSquare calls f(b, i, j) for every element of B n×n matrices, as the n·n grid-stride kernels enumerate them.
func emuSquare(B, n int, f func(b, i, j int)) {
	for k := 0; k < B*n*n; k++ {
		j, r := k%n, k/n
		f(r/n, r%n, j)
	}
}

func emuSymmetrize(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	d, dbs, drs, B, n := a.ptr(0), a.i64(1), a.i64(2), a.i64(3), a.i64(4)
	emuSquare(B, n, func(b, i, j int) {
		if i > j {
			v := 0.5 * (*e.f(d, b*dbs+i*drs+j) + *e.f(d, b*dbs+j*drs+i))
			*e.f(d, b*dbs+i*drs+j), *e.f(d, b*dbs+j*drs+i) = v, v
		}
	})
}

func emuTranspose(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	d, dbs, drs, x, xbs, xrs := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3), a.i64(4), a.i64(5)
	B, R, C := a.i64(6), a.i64(7), a.i64(8)
	for k := 0; k < B*R*C; k++ {
		j, r := k%C, k/C
		i, b := r%R, r/R
		*e.f(d, b*dbs+j*drs+i) = *e.f(x, b*xbs+i*xrs+j)
	}
}

func emuTriMirrorLower(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	d, dbs, drs, B, n := a.ptr(0), a.i64(1), a.i64(2), a.i64(3), a.i64(4)
	emuSquare(B, n, func(b, i, j int) {
		if i > j {
			*e.f(d, b*dbs+j*drs+i) = *e.f(d, b*dbs+i*drs+j)
		}
	})
}

func emuTriUpperToLower(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	d, dbs, drs, B, n := a.ptr(0), a.i64(1), a.i64(2), a.i64(3), a.i64(4)
	emuSquare(B, n, func(b, i, j int) {
		if i > j {
			*e.f(d, b*dbs+i*drs+j) = *e.f(d, b*dbs+j*drs+i)
			*e.f(d, b*dbs+j*drs+i) = 0
		}
	})
}

func emuPackSym(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	p, x, xbs, xrs, B, n := a.ptr(0), a.ptr(1), a.i64(2), a.i64(3), a.i64(4), a.i64(5)
	for k := 0; k < B*n*n; k++ {
		i, r := k%n, k/n
		j, b := r%n, r/n
		hi, lo := max(i, j), min(i, j)
		*e.f(p, k) = *e.f(x, b*xbs+hi*xrs+lo)
	}
}

func emuUnpackEig(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	wv, wbs, wrs, w, v, vbs, vrs, p := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3), a.ptr(4), a.i64(5), a.i64(6), a.ptr(7)
	B, n := a.i64(8), a.i64(9)
	for k := 0; k < B*n*n; k++ {
		i, r := k%n, k/n
		c, b := r%n, r/n
		if v != cuNil {
			*e.f(v, b*vbs+i*vrs+c) = *e.f(p, k)
		}
		if c == 0 {
			*e.f(wv, b*wbs+i*wrs) = *e.f(w, b*n+i)
		}
	}
}

func emuQRRSign(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	r, rrs, s, m, lda, p := a.ptr(0), a.i64(1), a.ptr(2), a.ptr(3), a.i64(4), a.i64(5)
	for k := 0; k < p*p; k++ {
		i, j := k/p, k%p
		sg := 1.0
		if *e.f(m, i+i*lda) < 0 {
			sg = -1
		}
		if j == 0 {
			*e.f(s, i) = sg
		}
		if r != cuNil {
			v := 0.0
			if j >= i {
				v = sg * *e.f(m, i+j*lda)
			}
			*e.f(r, i*rrs+j) = v
		}
	}
}

func emuQRQOut(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	q, qrs, m, lda, s, n, p := a.ptr(0), a.i64(1), a.ptr(2), a.i64(3), a.ptr(4), a.i64(5), a.i64(6)
	for k := 0; k < n*p; k++ {
		i, j := k/p, k%p
		*e.f(q, i*qrs+j) = *e.f(s, j) * *e.f(m, i+j*lda)
	}
}

func emuPackColMajor(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	p, x, xrs, n, cols := a.ptr(0), a.ptr(1), a.i64(2), a.i64(3), a.i64(4)
	for k := 0; k < n*cols; k++ {
		i, j := k%n, k/n
		*e.f(p, k) = *e.f(x, i*xrs+j)
	}
}

func emuCholCheck(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	info, d, dbs, drs, B, n := a.ptr(0), a.ptr(1), a.i64(2), a.i64(3), a.i64(4), a.i64(5)
	for b := 0; b < B; b++ {
		st := e.i32(info + cu.DevPtr(4*b))
		if *st != 0 {
			continue
		}
		for i := 0; i < n; i++ {
			if v := *e.f(d, b*dbs+i*drs+i); !(v > 0) || math.IsInf(v, 1) {
				*st = int32(n + 1)
				break
			}
		}
	}
}
