package cpu

import (
	"math"
	"sync/atomic"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// One-pass kernels for the batched block operations of the sparse Cholesky-factor families (backend/cholng_blocks.go;
// paper 003 Algs 1c and 2c). The blocks are tiny (r = 1 … 4 for GLMMs) and there are up to 1e6 of
// them, so the references — a chain of batched primitives with one library call per block and per primitive, plus
// scratch tensors — spend their time on per-block overhead. These loops visit each block once, read its operands
// straight from the strided storage, and reduce over the batch with per-chunk partial sums added in chunk order: the
// chunks depend on the batch size only, so results do not depend on the number of workers or on scheduling.

func init() {
	backend.BlockLowerOp.Register(backend.Kernel[backend.BlockLowerFunc]{
		Name: "cpu.cholng.blocks.lower.loop", Backend: Name, Priority: 10, Applies: isCPU, Fn: blockLowerLoop})
	backend.BlockUpperOp.Register(backend.Kernel[backend.BlockUpperFunc]{
		Name: "cpu.cholng.blocks.upper.loop", Backend: Name, Priority: 10, Applies: isCPU, Fn: blockUpperLoop})
	backend.BlockCoupledTriOp.Register(backend.Kernel[backend.BlockCoupledTriFunc]{
		Name: "cpu.cholng.blocks.coupled.scan", Backend: Name, Priority: 10, Applies: isCPU, Fn: blockCoupledScan})
	backend.BlockTriNorm2Op.Register(backend.Kernel[backend.BlockTriNorm2Func]{
		Name: "cpu.cholng.blocks.trinorm2.loop", Backend: Name, Priority: 10, Applies: isCPU, Fn: blockTriNorm2Loop})
	backend.BlockLogAbsDiagOp.Register(backend.Kernel[backend.BlockLogAbsDiagFunc]{
		Name: "cpu.cholng.blocks.logabsdiag.loop", Backend: Name, Priority: 10, Applies: isCPU, Fn: blockLogAbsDiagLoop})
	backend.BlockDrawOp.Register(backend.Kernel[backend.BlockDrawFunc]{
		Name: "cpu.cholng.blocks.draw.loop", Backend: Name, Priority: 10, Applies: isCPU, Fn: blockDrawLoop})
	backend.BlockNatGradOp.Register(backend.Kernel[backend.BlockNatGradFunc]{
		Name: "cpu.cholng.blocks.natgrad.loop", Backend: Name, Priority: 10, Applies: isCPU, Fn: blockNatGradLoop})
	// Many tiny blocks (the diagonal blocks T_i H̿_i of Alg 2c, C_k H̿_k of Alg 1c): the same scans as
	// cpu.cholng.tri.scan and cpu.cholng.lowerouter.loop without the per-item set-up.
	smallBatch := func(b backend.Backend, s tensor.Shape) bool {
		return isCPU(b, s) && s.Rows <= blkSmall && s.Batch >= 64
	}
	backend.CholNGTriOp.Register(backend.Kernel[backend.CholNGTriFunc]{
		Name: "cpu.cholng.tri.blocks", Backend: Name, Priority: 20, Applies: smallBatch, Fn: cholNGTriBlocks})
	backend.LowerOuterOp.Register(backend.Kernel[backend.LowerOuterFunc]{
		Name: "cpu.cholng.lowerouter.blocks", Backend: Name, Priority: 20, Applies: smallBatch, Fn: lowerOuterBlocks})
}

// blkSmall is the largest block order the batched small-block kernels of CholNGTri and LowerOuter take.
const blkSmall = 16

// blk is a strided batched view: element (i, a, c) at off + i·bs + a·rs + c (bs = 0 for a broadcast operand).
type blk struct {
	d           []float64
	off, bs, rs int
}

func blkOf(t *tensor.Tensor) blk {
	if t == nil {
		return blk{}
	}
	bs := t.BatchStride()
	if t.Batch() == 1 {
		bs = 0
	}
	return blk{d: hostData(t), off: t.Offset(), bs: bs, rs: t.RowStride()}
}

// item returns the storage index of element (i, 0, 0).
func (v blk) item(i int) int { return v.off + i*v.bs }

// blkChunk is the number of blocks per chunk of a sweep (and per partial sum of a reduction).
const blkChunk = 2048

// blkSweep runs f(c, lo, hi) for the chunks c of [0, n) (blocks [lo, hi)), in parallel when the work (cost flops per
// block) is large enough, handing chunks out dynamically. It returns the number of chunks.
func (b *Backend) blkSweep(n int, cost float64, f func(c, lo, hi int)) int {
	nc := (n + blkChunk - 1) / blkChunk
	run := func(c int) { f(c, c*blkChunk, min(n, (c+1)*blkChunk)) }
	if nc <= 1 || b.workers <= 1 || float64(n)*cost < 65536 {
		for c := 0; c < nc; c++ {
			run(c)
		}
		return nc
	}
	var next atomic.Int64
	b.parallelFor(min(b.workers, nc), func(lo, hi int) {
		for g := lo; g < hi; g++ {
			for {
				c := int(next.Add(1)) - 1
				if c >= nc {
					return
				}
				run(c)
			}
		}
	})
	return nc
}

// sumParts adds the per-chunk partial sums part[c·q + a] in chunk order into out[a].
func sumParts(part []float64, nc, q int, out []float64) {
	for a := 0; a < q; a++ {
		var t float64
		for c := 0; c < nc; c++ {
			t += part[c*q+a]
		}
		out[a] = t
	}
}

// blockLowerLoop: dst_i = Λ_i x_i or Λ_i⁻¹ x_i (forward substitution), s = β·s + Σ_i M_i (x_i or dst_i).
func blockLowerLoop(be backend.Backend, solve bool, dst, s, l, m, x *tensor.Tensor, beta float64) error {
	b := be.(*Backend)
	if err := checkHost("cholng.blocks.lower", []string{"dst", "s", "l", "m", "x"}, dst, s, l, m, x); err != nil {
		return err
	}
	n, r := dst.Batch(), dst.Rows()
	q := 0
	if m != nil {
		q = m.Rows()
	}
	D, L, M, X := blkOf(dst), blkOf(l), blkOf(m), blkOf(x)
	nc := (n + blkChunk - 1) / blkChunk
	part := make([]float64, nc*q)
	b.blkSweep(n, float64(r*r+2*q*r), func(c, lo, hi int) {
		u, y := make([]float64, r), make([]float64, r)
		pc := part[c*q : (c+1)*q]
		for i := lo; i < hi; i++ {
			xo, lb, do := X.item(i), L.item(i), D.item(i)
			for a := range u {
				u[a] = X.d[xo+a*X.rs]
			}
			if solve {
				for a := 0; a < r; a++ {
					row := L.d[lb+a*L.rs:]
					v := u[a]
					for k := 0; k < a; k++ {
						v -= row[k] * y[k]
					}
					y[a] = v / row[a]
				}
			} else {
				for a := 0; a < r; a++ {
					row := L.d[lb+a*L.rs:]
					var v float64
					for k := 0; k <= a; k++ {
						v += row[k] * u[k]
					}
					y[a] = v
				}
			}
			for a, v := range y {
				D.d[do+a*D.rs] = v
			}
			if q > 0 {
				src := u
				if solve {
					src = y
				}
				mo := M.item(i)
				for a := 0; a < q; a++ {
					row := M.d[mo+a*M.rs : mo+a*M.rs+r]
					var v float64
					for k, w := range row {
						v += w * src[k]
					}
					pc[a] += v
				}
			}
		}
	})
	if q > 0 {
		sum := make([]float64, q)
		sumParts(part, nc, q, sum)
		S := blkOf(s)
		for a, v := range sum {
			k := S.off + a*S.rs
			if beta == 0 {
				S.d[k] = v
			} else {
				S.d[k] = v + beta*S.d[k]
			}
		}
	}
	return nil
}

// blockUpperLoop: dst_i = Λ_iᵀ x_i + M_iᵀ c, or Λ_i⁻ᵀ(x_i − M_iᵀ c) by back substitution.
func blockUpperLoop(be backend.Backend, solve bool, dst, l, m, c, x *tensor.Tensor) error {
	b := be.(*Backend)
	if err := checkHost("cholng.blocks.upper", []string{"dst", "l", "m", "c", "x"}, dst, l, m, c, x); err != nil {
		return err
	}
	n, r := dst.Batch(), dst.Rows()
	q := 0
	if m != nil {
		q = m.Rows()
	}
	D, L, M, C, X := blkOf(dst), blkOf(l), blkOf(m), blkOf(c), blkOf(x)
	b.blkSweep(n, float64(r*r+2*q*r), func(_, lo, hi int) {
		u, y, cv := make([]float64, r), make([]float64, r), make([]float64, q)
		for i := lo; i < hi; i++ {
			xo, lb, do := X.item(i), L.item(i), D.item(i)
			for a := range u {
				u[a] = X.d[xo+a*X.rs]
			}
			if q > 0 && (i == lo || C.bs != 0) { // c is usually one vector broadcast over the batch
				co := C.item(i)
				for a := range cv {
					cv[a] = C.d[co+a*C.rs]
				}
			}
			if solve {
				upperSolveItem(L, M, lb, M.item(i), cv, u, y)
			} else {
				for a := 0; a < r; a++ {
					var v float64
					for k := a; k < r; k++ {
						v += L.d[lb+k*L.rs+a] * u[k]
					}
					y[a] = v
				}
				if q > 0 {
					mo := M.item(i)
					for k := 0; k < r; k++ {
						var v float64
						for a, ca := range cv {
							v += M.d[mo+a*M.rs+k] * ca
						}
						y[k] += v
					}
				}
			}
			for a, v := range y {
				D.d[do+a*D.rs] = v
			}
		}
	})
	return nil
}

// blockCoupledScan: dst_i(a, b) = α·y_b(Σ_{c≥b} M_ac x_c − ½M_ab x_b + q_a) by a reverse scan along each row of M_i;
// with m nil, dst_i = α·q y_iᵀ.
func blockCoupledScan(be backend.Backend, dst, m, x, y, q *tensor.Tensor, alpha float64) error {
	b := be.(*Backend)
	if err := checkHost("cholng.blocks.coupled", []string{"dst", "m", "x", "y", "q"}, dst, m, x, y, q); err != nil {
		return err
	}
	n, p, r := dst.Batch(), dst.Rows(), dst.Cols()
	D, M, X, Y, Q := blkOf(dst), blkOf(m), blkOf(x), blkOf(y), blkOf(q)
	b.blkSweep(n, float64(3*p*r), func(_, lo, hi int) {
		xv, yv, qv := make([]float64, r), make([]float64, r), make([]float64, p)
		for i := lo; i < hi; i++ {
			yo, do := Y.item(i), D.item(i)
			for k := range yv {
				yv[k] = Y.d[yo+k*Y.rs]
			}
			if q != nil {
				qo := Q.item(i)
				for a := range qv {
					qv[a] = Q.d[qo+a*Q.rs]
				}
			}
			if m == nil {
				for a := 0; a < p; a++ {
					qa := alpha * qv[a]
					dr := D.d[do+a*D.rs : do+a*D.rs+r]
					for k, v := range yv {
						dr[k] = qa * v
					}
				}
				continue
			}
			xo, mo := X.item(i), M.item(i)
			for k := range xv {
				xv[k] = X.d[xo+k*X.rs]
			}
			coupledScanItem(M, D, mo, do, xv, yv, qv, alpha)
		}
	})
	return nil
}

// blockTriNorm2Loop: Σ_i Σ_k x_ik²(Σ_{l<k} y_il² + ½y_ik²) with a running prefix sum of y².
func blockTriNorm2Loop(be backend.Backend, dst, x, y *tensor.Tensor, n int) error {
	b := be.(*Backend)
	if err := checkHost("cholng.blocks.trinorm2", []string{"dst", "x", "y"}, dst, x, y); err != nil {
		return err
	}
	r := x.Rows()
	X, Y := blkOf(x), blkOf(y)
	nc := (n + blkChunk - 1) / blkChunk
	part := make([]float64, nc)
	b.blkSweep(n, float64(6*r), func(c, lo, hi int) {
		var acc float64
		for i := lo; i < hi; i++ {
			xo, yo := X.item(i), Y.item(i)
			var pre, s float64
			for k := 0; k < r; k++ {
				xk, yk := X.d[xo+k*X.rs], Y.d[yo+k*Y.rs]
				x2, y2 := xk*xk, yk*yk
				s += x2*pre + 0.5*x2*y2
				pre += y2
			}
			acc += s
		}
		part[c] = acc
	})
	sumParts(part, nc, 1, part[:1])
	D := blkOf(dst)
	D.d[D.off] = part[0]
	return nil
}

// blockLogAbsDiagLoop: Σ_i Σ_a log|(Λ_i)_aa|.
func blockLogAbsDiagLoop(be backend.Backend, dst, l *tensor.Tensor) error {
	b := be.(*Backend)
	if err := checkHost("cholng.blocks.logabsdiag", []string{"dst", "l"}, dst, l); err != nil {
		return err
	}
	n, r := l.Batch(), l.Rows()
	L := blkOf(l)
	nc := (n + blkChunk - 1) / blkChunk
	part := make([]float64, nc)
	b.blkSweep(n, float64(20*r), func(c, lo, hi int) {
		var acc float64
		for i := lo; i < hi; i++ {
			o := L.item(i)
			for a := 0; a < r; a++ {
				acc += math.Log(math.Abs(L.d[o+a*(L.rs+1)]))
			}
		}
		part[c] = acc
	})
	sumParts(part, nc, 1, part[:1])
	D := blkOf(dst)
	D.d[D.off] = part[0]
	return nil
}

// cholNGTriBlocks is CholNGTri for a batch of small blocks: entry (a, b ≤ a) of dst_i is
// α·y_b(Σ_{c=b}^{a} Λ_ac x_c − ½Λ_ab x_b) by a reverse scan along row a, strict upper triangle 0.
func cholNGTriBlocks(be backend.Backend, dst, l, x, y *tensor.Tensor, alpha float64) error {
	b := be.(*Backend)
	if err := checkHost("cholng.tri", []string{"dst", "l", "x", "y"}, dst, l, x, y); err != nil {
		return err
	}
	n, r := dst.Batch(), dst.Rows()
	D, L, X, Y := blkOf(dst), blkOf(l), blkOf(x), blkOf(y)
	b.blkSweep(n, float64(3*r*r), func(_, lo, hi int) {
		xv, yv := make([]float64, r), make([]float64, r)
		for i := lo; i < hi; i++ {
			xo, yo, lb, do := X.item(i), Y.item(i), L.item(i), D.item(i)
			for k := 0; k < r; k++ {
				xv[k], yv[k] = X.d[xo+k*X.rs], Y.d[yo+k*Y.rs]
			}
			triScanItem(L, D, lb, do, xv, yv, alpha)
		}
	})
	return nil
}

// lowerOuterBlocks is LowerOuter for a batch of small blocks: dst_i = α·lower(x_i y_iᵀ).
func lowerOuterBlocks(be backend.Backend, dst, x, y *tensor.Tensor, alpha float64) error {
	b := be.(*Backend)
	if err := checkHost("cholng.lowerouter", []string{"dst", "x", "y"}, dst, x, y); err != nil {
		return err
	}
	n, r := dst.Batch(), dst.Rows()
	D, X, Y := blkOf(dst), blkOf(x), blkOf(y)
	b.blkSweep(n, float64(r*r), func(_, lo, hi int) {
		yv := make([]float64, r)
		for i := lo; i < hi; i++ {
			xo, yo, do := X.item(i), Y.item(i), D.item(i)
			for k := 0; k < r; k++ {
				yv[k] = Y.d[yo+k*Y.rs]
			}
			for a := 0; a < r; a++ {
				dr := D.d[do+a*D.rs : do+a*D.rs+r]
				ax := alpha * X.d[xo+a*X.rs]
				for k := 0; k <= a; k++ {
					dr[k] = ax * yv[k]
				}
				clear(dr[a+1:])
			}
		}
	})
	return nil
}

// upperSolveItem sets y = Λ⁻ᵀ(u − Mᵀc) for the item whose Λ starts at L.d[lb] and M at M.d[mo] (q = len(cv) rows;
// u is overwritten): the solve branch of blockUpperLoop, in the same order of operations.
func upperSolveItem(L, M blk, lb, mo int, cv, u, y []float64) {
	r := len(u)
	if len(cv) > 0 {
		for k := 0; k < r; k++ {
			v := u[k]
			for a, ca := range cv {
				v -= M.d[mo+a*M.rs+k] * ca
			}
			u[k] = v
		}
	}
	for a := r - 1; a >= 0; a-- {
		v := u[a]
		for k := a + 1; k < r; k++ {
			v -= L.d[lb+k*L.rs+a] * y[k]
		}
		y[a] = v / L.d[lb+a*L.rs+a]
	}
}

// blockDrawLoop is BlockDraw in one pass: per item the back substitution of blockUpperLoop and the log|diagonal|
// terms of blockLogAbsDiagLoop, summed per chunk as there (so the results are those of the two loops, bit for bit).
func blockDrawLoop(be backend.Backend, dst, ld, l, m, c, x *tensor.Tensor) error {
	b := be.(*Backend)
	if err := checkHost("cholng.blocks.draw", []string{"dst", "ld", "l", "m", "c", "x"}, dst, ld, l, m, c, x); err != nil {
		return err
	}
	n, r := dst.Batch(), dst.Rows()
	q := 0
	if m != nil {
		q = m.Rows()
	}
	D, L, M, C, X := blkOf(dst), blkOf(l), blkOf(m), blkOf(c), blkOf(x)
	nc := (n + blkChunk - 1) / blkChunk
	part := make([]float64, nc)
	b.blkSweep(n, float64(r*r+2*q*r+20*r), func(ch, lo, hi int) {
		u, y, cv := make([]float64, r), make([]float64, r), make([]float64, q)
		var acc float64
		for i := lo; i < hi; i++ {
			xo, lb, do := X.item(i), L.item(i), D.item(i)
			for a := range u {
				u[a] = X.d[xo+a*X.rs]
			}
			if q > 0 && (i == lo || C.bs != 0) {
				co := C.item(i)
				for a := range cv {
					cv[a] = C.d[co+a*C.rs]
				}
			}
			upperSolveItem(L, M, lb, M.item(i), cv, u, y)
			for a, v := range y {
				D.d[do+a*D.rs] = v
			}
			for a := 0; a < r; a++ {
				acc += math.Log(math.Abs(L.d[lb+a*(L.rs+1)]))
			}
		}
		part[ch] = acc
	})
	sumParts(part, nc, 1, part[:1])
	LD := blkOf(ld)
	LD.d[LD.off] = part[0]
	return nil
}

// blockNatGradLoop is BlockNatGrad in one pass: per item the back substitution of blockUpperLoop, the row scans of
// cholNGTriBlocks and blockCoupledScan and the terms of blockTriNorm2Loop, each in the same order of operations and
// the sum in the same chunks (so the results are those of the four loops, bit for bit).
func blockNatGradLoop(be backend.Backend, dmu, dl, dm, tn, l, m, c, q, z, v *tensor.Tensor, alpha float64) error {
	b := be.(*Backend)
	if err := checkHost("cholng.blocks.natgrad", []string{"dmu", "dl", "dm", "tn", "l", "m", "c", "q", "z", "v"},
		dmu, dl, dm, tn, l, m, c, q, z, v); err != nil {
		return err
	}
	n, r, p := dmu.Batch(), dmu.Rows(), m.Rows()
	DU, DL, DM, L, M, C, Q, Z, V := blkOf(dmu), blkOf(dl), blkOf(dm), blkOf(l), blkOf(m), blkOf(c), blkOf(q), blkOf(z), blkOf(v)
	nc := (n + blkChunk - 1) / blkChunk
	part := make([]float64, nc)
	b.blkSweep(n, float64(4*r*r+5*p*r), func(ch, lo, hi int) {
		u, y, zv, vv := make([]float64, r), make([]float64, r), make([]float64, r), make([]float64, r)
		cv, qv := make([]float64, p), make([]float64, p)
		var acc float64
		for i := lo; i < hi; i++ {
			zo, vo, lb, mo := Z.item(i), V.item(i), L.item(i), M.item(i)
			for k := 0; k < r; k++ {
				zv[k], vv[k] = Z.d[zo+k*Z.rs], V.d[vo+k*V.rs]
			}
			if i == lo || C.bs != 0 {
				co := C.item(i)
				for a := range cv {
					cv[a] = C.d[co+a*C.rs]
				}
			}
			if q != nil && (i == lo || Q.bs != 0) {
				qo := Q.item(i)
				for a := range qv {
					qv[a] = Q.d[qo+a*Q.rs]
				}
			}
			// μ part: Λ⁻ᵀ(v − Mᵀc).
			copy(u, vv)
			upperSolveItem(L, M, lb, mo, cv, u, y)
			do := DU.item(i)
			for a, w := range y {
				DU.d[do+a*DU.rs] = w
			}
			// Λ part: α·y_k(Σ_{c=k}^{a} Λ_ac z_c − ½Λ_ak z_k), 0 above the diagonal.
			triScanItem(L, DL, lb, DL.item(i), zv, vv, alpha)
			// Coupling part: α·v_k(Σ_{c≥k} M_ac z_c − ½M_ak z_k + q_a).
			coupledScanItem(M, DM, mo, DM.item(i), zv, vv, qv, alpha)
			// Pattern part of the Riemannian norm.
			var pre, s float64
			for k := 0; k < r; k++ {
				x2, y2 := zv[k]*zv[k], vv[k]*vv[k]
				s += x2*pre + 0.5*x2*y2
				pre += y2
			}
			acc += s
		}
		part[ch] = acc
	})
	sumParts(part, nc, 1, part[:1])
	TN := blkOf(tn)
	TN.d[TN.off] = part[0]
	return nil
}

// triScanItem writes α·Λ·dbar(lower(x yᵀ)) for one item (Λ at L.d[lb], dst at D.d[do], r = len(x)): entry (a, k ≤ a)
// = α·y_k(Σ_{c=k}^{a} Λ_ac x_c − ½Λ_ak x_k) by a reverse scan along row a, 0 above the diagonal.
func triScanItem(L, D blk, lb, do int, xv, yv []float64, alpha float64) {
	r := len(xv)
	for a := 0; a < r; a++ {
		lr := L.d[lb+a*L.rs : lb+a*L.rs+r]
		dr := D.d[do+a*D.rs : do+a*D.rs+r]
		var s float64
		for k := a; k >= 0; k-- {
			t := lr[k] * xv[k]
			s += t
			dr[k] = alpha * yv[k] * (s - 0.5*t)
		}
		clear(dr[a+1:])
	}
}

// coupledScanItem writes α·(M·dbar(lower(x yᵀ)) + q yᵀ) for one item (M at M.d[mo], p = len(qv) rows, dst at
// D.d[do]): entry (a, k) = α·y_k(Σ_{c≥k} M_ac x_c − ½M_ak x_k + q_a) by a reverse scan along row a.
func coupledScanItem(M, D blk, mo, do int, xv, yv, qv []float64, alpha float64) {
	r := len(xv)
	for a := range qv {
		mr := M.d[mo+a*M.rs : mo+a*M.rs+r]
		dr := D.d[do+a*D.rs : do+a*D.rs+r]
		acc := qv[a]
		for k := r - 1; k >= 0; k-- {
			t := mr[k] * xv[k]
			acc += t
			dr[k] = alpha * yv[k] * (acc - 0.5*t)
		}
	}
}
