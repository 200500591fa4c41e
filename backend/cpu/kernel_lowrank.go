package cpu

import (
	"math"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cpu/internal/vec"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// Fused kernels for the low-rank-plus-diagonal algebra of paper 002 (backend/lowrank.go). Each kernel sweeps the
// tall d×p factor W by row blocks of lrBlockRows(p) rows, one contiguous range of rows per worker; the per-block
// products are small level-3 BLAS calls (gonum, or OpenBLAS single-threaded under -tags netlib, so the workers do
// not oversubscribe the cores), and each worker keeps its own p×p / K×p partial sums, added in worker order at the
// end (the result does not depend on scheduling).
//
// Scratch (Go heap, not counted by MemInUse): per worker at most three blocks (five in the EM step) of
// lrBlockRows(w) or lrGemmRows(w) rows by w = max(p, K) columns (about 400 KiB or 3.2 MiB each, never longer than a
// chunk), and per chunk one partial sum of at most p×w; nothing proportional to d. So no kernel needs any d×p
// buffer, and a wide right-hand side (K in the tens of thousands) does not inflate the scratch.
//
// Passes over W (reads of W, the bytes that bound the bandwidth-bound kernels):
//   - capacitance: 1 pass (SYRK of Ψ^{-1/2}W).
//   - solve, sample: 2 passes (Wᵀ(·) needs all rows before W(·) can start).
//   - EM step, first inner iteration: 2 passes, 2.5·dp² + 2·dp·K_c multiply-adds, no d×p temporary: the algebra
//     of Algorithm 1 rewritten so that V, G and C are never stored (see lrEMStep).

func init() {
	applies := func(be backend.Backend, s tensor.Shape) bool { return isCPU(be, s) && s.Batch == 1 }
	backend.CapacitanceOp.Register(backend.Kernel[backend.CapacitanceFunc]{
		Name: "cpu.lowrank.capacitance.fused", Backend: Name, Priority: 10, Applies: applies, Fn: lrCapacitance,
	})
	backend.SolveOp.Register(backend.Kernel[backend.SolveFunc]{
		Name: "cpu.lowrank.solve.fused", Backend: Name, Priority: 10, Applies: applies, Fn: lrSolve,
	})
	backend.SampleOp.Register(backend.Kernel[backend.SampleFunc]{
		Name: "cpu.lowrank.sample.fused", Backend: Name, Priority: 10, Applies: applies, Fn: lrSample,
	})
	backend.EMStepOp.Register(backend.Kernel[backend.EMStepFunc]{
		Name: "cpu.lowrank.em_step.fused", Backend: Name, Priority: 10, Applies: applies, Fn: lrEMStep,
	})
}

// lrBlockRows is the number of rows per block for blocks w wide: about 400 KiB, so a block and its product stay in
// L2 (w = max(p, k), so that a wide right-hand side shrinks the blocks instead of growing the scratch).
func lrBlockRows(p int) int { return min(max(51200/max(p, 1), 32), 2048) }

// lrGemmRows is the number of rows per block of the kernels whose block work is GEMM and SYRK against the p×p
// operand (capacitance, EM step): about 3.2 MiB, eight times lrBlockRows. Longer calls cost less per multiply-add
// in both builds, most with OpenBLAS (docs/benchmarks.md, the EM step's row).
func lrGemmRows(w int) int { return min(max(409600/max(w, 1), 32), 16384) }

// lrGemmBlock is lrGemmRows(w) capped by the longest chunk of a sweep over d rows, so that a small d does not get
// scratch blocks longer than any block it will use.
func (b *Backend) lrGemmBlock(d, w int) int {
	nc := b.lrChunks(d, w)
	return max(min(lrGemmRows(w), (d+nc-1)/nc), 1)
}

// lrGen returns the single matrix of a batch-1 host tensor.
func lrGen(t *tensor.Tensor) blas64.General {
	data, stride, r, c := matrix(t, 0)
	return blas64.General{Rows: r, Cols: c, Stride: stride, Data: data}
}

// lrVec returns a d×1 host tensor as a slice and increment: element i is v[i*inc].
func lrVec(t *tensor.Tensor) ([]float64, int) {
	data, stride, _, _ := matrix(t, 0)
	return data, stride
}

// lrRows returns rows [lo, hi) of g (hi > lo).
func lrRows(g blas64.General, lo, hi int) blas64.General {
	return blas64.General{Rows: hi - lo, Cols: g.Cols, Stride: g.Stride, Data: g.Data[lo*g.Stride : (hi-1)*g.Stride+g.Cols]}
}

// lrBlock returns the first r rows of a scratch matrix allocated by scratch.dense.
func lrBlock(g blas64.General, r int) blas64.General {
	return blas64.General{Rows: r, Cols: g.Cols, Stride: g.Stride, Data: g.Data[:r*g.Stride]}
}

// lrChunks is the number of contiguous row ranges ("chunks") a sweep over d rows is cut into when the per-chunk
// partial sums and the row blocks are at most w wide (w = max(p, k) for a d×p factor and d×k right-hand sides): up
// to 64, a function of d and w only (and of the worker count only when w is so large that 64 w×w partial sums would
// not fit in 32 MiB), so the partial sums and hence the results do not depend on the scheduling.
func (b *Backend) lrChunks(d, w int) int {
	nb := lrBlockRows(w)
	nc := min(64, (d+nb-1)/nb)
	if lim := (1 << 22) / max(w*w, 1); nc > lim {
		nc = max(lim, min(b.workers, nc))
	}
	return max(nc, 1)
}

// lrSweep runs f(g, c, lo, hi) for every chunk c of [0, d) (rows [lo, hi)), handing chunks out dynamically to the
// goroutines g = 0 … workers−1 of the pool, so that a core slowed by other work does not hold the others back.
// g indexes per-goroutine scratch; c indexes per-chunk partial sums.
func (b *Backend) lrSweep(d, w int, f func(g, c, lo, hi int)) {
	nc := b.lrChunks(d, w)
	var next atomic.Int64
	b.parallelFor(min(b.workers, nc), func(lo, hi int) {
		for g := lo; g < hi; g++ {
			for {
				c := int(next.Add(1)) - 1
				if c >= nc {
					break
				}
				f(g, c, c*d/nc, (c+1)*d/nc)
			}
		}
	})
}

// lrPer holds one lazily made value per goroutine of a sweep (scratch blocks).
type lrPer[T any] struct {
	v  []T
	ok []bool
	mk func() T
}

func newLRPer[T any](n int, mk func() T) *lrPer[T] {
	return &lrPer[T]{v: make([]T, n), ok: make([]bool, n), mk: mk}
}

func (q *lrPer[T]) get(g int) T {
	if !q.ok[g] {
		q.v[g], q.ok[g] = q.mk(), true
	}
	return q.v[g]
}

// lrAddParts returns Σ_c parts[c] in chunk order.
func lrAddParts(parts []blas64.General) blas64.General {
	s := parts[0]
	for _, q := range parts[1:] {
		for i := range s.Data {
			s.Data[i] += q.Data[i]
		}
	}
	return s
}

// lrSym copies the lower triangle of a onto its upper triangle.
func lrSym(a blas64.General) {
	for i := 0; i < a.Rows; i++ {
		for j := 0; j < i; j++ {
			a.Data[j*a.Stride+i] = a.Data[i*a.Stride+j]
		}
	}
}

// lrTri views the lower triangle of a square matrix.
func lrTri(a blas64.General) blas64.Triangular {
	return blas64.Triangular{Uplo: blas.Lower, Diag: blas.NonUnit, N: a.Rows, Stride: a.Stride, Data: a.Data}
}

// lrSymL views the lower triangle of a square matrix as symmetric.
func lrSymL(a blas64.General) blas64.Symmetric {
	return blas64.Symmetric{Uplo: blas.Lower, N: a.Rows, Stride: a.Stride, Data: a.Data}
}

// lrSkinny says whether the products with a thin p×k operand use the register-tiled loops of vec (AccTN, DotRows)
// instead of a GEMM: with k ≤ 16 columns a GEMM's packing costs about another pass over the W block.
func lrSkinny(p, k int) bool { return vec.UseFMA && k <= 16 && p >= 4 }

// lrAcc accumulates Σ W_blkᵀ X_blk (p×k) over the blocks of a chunk: by GEMM, or transposed (k×p) by vec.AccTN.
type lrAcc struct {
	tmp    *scratch
	p, k   int
	skinny bool
	a, at  blas64.General // the p×k sum (GEMM path, or the result) and its k×p transpose (vec path)
}

func (a *lrAcc) add(wb, xb blas64.General) {
	if !a.skinny {
		blasGemm(blas.Trans, blas.NoTrans, 1, wb, xb, 1, a.sum())
		return
	}
	if a.at.Data == nil {
		a.at = a.tmp.dense(a.k, a.p)
	}
	vec.AccTN(a.at.Data, a.at.Stride, wb.Data, wb.Stride, xb.Data, xb.Stride, wb.Rows, a.p, a.k)
}

// sum returns the p×k sum so far.
func (a *lrAcc) sum() blas64.General {
	if a.a.Data == nil {
		a.a = a.tmp.dense(a.p, a.k)
	}
	if a.at.Data != nil {
		for i := 0; i < a.k; i++ {
			for j := 0; j < a.p; j++ {
				a.a.Data[j*a.a.Stride+i] += a.at.Data[i*a.at.Stride+j]
			}
		}
		clear(a.at.Data)
	}
	return a.a
}

// lrThinOp multiplies W blocks by a fixed p×k operand v: T_blk = W_blk v, by GEMM or by vec.DotRows on vᵀ.
type lrThinOp struct {
	v, vt blas64.General
}

func lrThin(tmp *scratch, v blas64.General, skinny bool) lrThinOp {
	if !skinny {
		return lrThinOp{v: v}
	}
	vt := tmp.dense(v.Cols, v.Rows)
	for j := 0; j < v.Rows; j++ {
		for i := 0; i < v.Cols; i++ {
			vt.Data[i*vt.Stride+j] = v.Data[j*v.Stride+i]
		}
	}
	return lrThinOp{v: v, vt: vt}
}

func (o lrThinOp) mul(tb, wb blas64.General) {
	if o.vt.Data == nil {
		blasGemm(blas.NoTrans, blas.NoTrans, 1, wb, o.v, 0, tb)
		return
	}
	vec.DotRows(tb.Data, tb.Stride, wb.Data, wb.Stride, o.vt.Data, o.vt.Stride, wb.Rows, wb.Cols, o.vt.Rows)
}

// lrStack stacks matrices of equal column count vertically into a scratch matrix.
func lrStack(tmp *scratch, parts []blas64.General) blas64.General {
	rows := 0
	for _, m := range parts {
		rows += m.Rows
	}
	st := tmp.dense(rows, parts[0].Cols)
	r := 0
	for _, m := range parts {
		for i := 0; i < m.Rows; i++ {
			copy(st.Data[(r+i)*st.Stride:(r+i)*st.Stride+st.Cols], m.Data[i*m.Stride:i*m.Stride+m.Cols])
		}
		r += m.Rows
	}
	return st
}

// lrCopyL copies the host tensor l (p×p) into a scratch matrix.
func lrCopyL(tmp *scratch, l *tensor.Tensor) blas64.General {
	src := lrGen(l)
	g := tmp.dense(src.Rows, src.Cols)
	for i := 0; i < src.Rows; i++ {
		copy(g.Data[i*g.Stride:i*g.Stride+g.Cols], src.Data[i*src.Stride:i*src.Stride+src.Cols])
	}
	return g
}

// lrGram accumulates c += aᵀa (lower triangle) for a block a.
func lrGram(a blas64.General, c blas64.General) {
	blasSyrk(blas.Trans, 1, a, 1, lrSymL(c))
}

// lrGramAcc accumulates Σ SᵀS over the blocks of a chunk: the lower triangle by SYRK, or the whole matrix by the
// skinny loops when p ≤ 16 (the SYRK's packing is then another pass over the block for little arithmetic).
type lrGramAcc struct{ lrAcc }

func newLRGram(tmp *scratch, p int) *lrGramAcc {
	return &lrGramAcc{lrAcc{tmp: tmp, p: p, k: p, skinny: lrSkinny(p, p)}}
}

func (g *lrGramAcc) add(s blas64.General) {
	if g.skinny {
		g.lrAcc.add(s, s)
		return
	}
	lrGram(s, g.sum())
}

// lrCapacitance: one pass, L = chol(I + Σ_blocks SᵀS), S = Ψ^{-1/2} W_blk.
func lrCapacitance(be backend.Backend, l, w, psi *tensor.Tensor) error {
	const op = "lowrank.capacitance"
	if err := checkHost(op, []string{"l", "w", "psi"}, l, w, psi); err != nil {
		return err
	}
	b := be.(*Backend)
	tmp := new(scratch)
	defer tmp.release()
	W := lrGen(w)
	ps, pinc := lrVec(psi)
	d, p := W.Rows, W.Cols
	nb := b.lrGemmBlock(d, p)
	scr := newLRPer(b.workers, func() blas64.General { return tmp.dense(nb, p) })
	parts := make([]blas64.General, b.lrChunks(d, p))
	b.lrSweep(d, p, func(g, c, lo, hi int) {
		acc := newLRGram(tmp, p)
		s := scr.get(g)
		for r0 := lo; r0 < hi; r0 += nb {
			r1 := min(r0+nb, hi)
			sb := lrBlock(s, r1-r0)
			for i := r0; i < r1; i++ {
				f := 1 / math.Sqrt(ps[i*pinc])
				wr := W.Data[i*W.Stride : i*W.Stride+p]
				sr := sb.Data[(i-r0)*p : (i-r0+1)*p]
				for j, v := range wr {
					sr[j] = v * f
				}
			}
			acc.add(sb)
		}
		parts[c] = acc.sum()
	})
	m := lrAddParts(parts)
	for i := 0; i < p; i++ {
		m.Data[i*p+i]++
	}
	lrSym(m)
	L := lrGen(l)
	for i := 0; i < p; i++ {
		copy(L.Data[i*L.Stride:i*L.Stride+p], m.Data[i*p:(i+1)*p])
	}
	return b.Potrf(l)
}

// lrSolve: pass 1 U = Σ W_blkᵀ (g_blk ⊘ ψ); V = M⁻¹ U; pass 2 dst_blk = (g_blk − W_blk V) ⊘ ψ (Woodbury).
// dst may be g: pass 2 reads g_ij just before writing dst_ij.
func lrSolve(be backend.Backend, dst, w, psi, l, g *tensor.Tensor) error {
	const op = "lowrank.solve"
	if err := checkHost(op, []string{"dst", "w", "psi", "l", "g"}, dst, w, psi, l, g); err != nil {
		return err
	}
	b := be.(*Backend)
	tmp := new(scratch)
	defer tmp.release()
	W, G, D := lrGen(w), lrGen(g), lrGen(dst)
	ps, pinc := lrVec(psi)
	d, p, k := W.Rows, W.Cols, G.Cols
	nb := lrBlockRows(max(p, k))
	scr := newLRPer(b.workers, func() blas64.General { return tmp.dense(nb, k) })
	parts := make([]blas64.General, b.lrChunks(d, max(p, k)))
	skinny := lrSkinny(p, k) && k > 1
	b.lrSweep(d, max(p, k), func(g, c, lo, hi int) {
		acc := lrAcc{tmp: tmp, p: p, k: k, skinny: skinny}
		t := scr.get(g)
		for r0 := lo; r0 < hi; r0 += nb {
			r1 := min(r0+nb, hi)
			tb := lrBlock(t, r1-r0)
			for i := r0; i < r1; i++ {
				f := 1 / ps[i*pinc]
				gr := G.Data[i*G.Stride : i*G.Stride+k]
				tr := tb.Data[(i-r0)*k : (i-r0+1)*k]
				for j, v := range gr {
					tr[j] = v * f
				}
			}
			wb := lrRows(W, r0, r1)
			if k == 1 {
				blasGemv(blas.Trans, 1, wb, blas64.Vector{N: r1 - r0, Inc: 1, Data: tb.Data}, 1,
					blas64.Vector{N: p, Inc: 1, Data: acc.sum().Data})
			} else {
				acc.add(wb, tb)
			}
		}
		parts[c] = acc.sum()
	})
	v := lrAddParts(parts)
	lapackPotrs(lrTri(lrCopyL(tmp, l)), v)
	vt := lrThin(tmp, v, skinny)
	b.lrSweep(d, max(p, k), func(g, _, lo, hi int) {
		t := scr.get(g)
		for r0 := lo; r0 < hi; r0 += nb {
			r1 := min(r0+nb, hi)
			tb := lrBlock(t, r1-r0)
			wb := lrRows(W, r0, r1)
			if k == 1 {
				blasGemv(blas.NoTrans, 1, wb, blas64.Vector{N: p, Inc: 1, Data: v.Data}, 0,
					blas64.Vector{N: r1 - r0, Inc: 1, Data: tb.Data})
			} else {
				vt.mul(tb, wb)
			}
			for i := r0; i < r1; i++ {
				f := 1 / ps[i*pinc]
				gr := G.Data[i*G.Stride : i*G.Stride+k]
				dr := D.Data[i*D.Stride : i*D.Stride+k]
				tr := tb.Data[(i-r0)*k : (i-r0+1)*k]
				for j := range dr {
					dr[j] = (gr[j] - tr[j]) * f
				}
			}
		}
	})
	return nil
}

// lrSample: Prop. 1 corrected. Pass 1 draws z row by row (draw c.Offset + i·K + j), x = z/√ψ into dst,
// U = Σ W_blkᵀ x_blk; then Q = M⁻¹(ε − U) with ε the next pK draws; pass 2 dst_blk += (W_blk Q) ⊘ ψ + μ.
func lrSample(be backend.Backend, dst, w, psi, l, mu *tensor.Tensor, cnt rng.Counter) error {
	const op = "lowrank.sample"
	if err := checkHost(op, []string{"dst", "w", "psi", "l", "mu"}, dst, w, psi, l, mu); err != nil {
		return err
	}
	b := be.(*Backend)
	tmp := new(scratch)
	defer tmp.release()
	W, D := lrGen(w), lrGen(dst)
	ps, pinc := lrVec(psi)
	var mv []float64
	minc := 0
	if mu != nil {
		mv, minc = lrVec(mu)
	}
	d, p, k := W.Rows, W.Cols, D.Cols
	nb := lrBlockRows(max(p, k))
	scr := newLRPer(b.workers, func() blas64.General { return tmp.dense(nb, k) })
	rowv := newLRPer(b.workers, func() blas64.General { return tmp.dense(2, nb) }) // per-row scale and shift
	parts := make([]blas64.General, b.lrChunks(d, max(p, k)))
	skinny := lrSkinny(p, k)
	b.lrSweep(d, max(p, k), func(g, c, lo, hi int) {
		acc := lrAcc{tmp: tmp, p: p, k: k, skinny: skinny}
		sv := rowv.get(g).Data[:nb]
		for r0 := lo; r0 < hi; r0 += nb {
			r1 := min(r0+nb, hi)
			if D.Stride == k {
				cnt.Advance(r0 * k).FillNormal(D.Data[r0*k : r1*k])
			} else {
				for i := r0; i < r1; i++ {
					cnt.Advance(i * k).FillNormal(D.Data[i*D.Stride : i*D.Stride+k])
				}
			}
			for i := r0; i < r1; i++ {
				sv[i-r0] = 1 / math.Sqrt(ps[i*pinc])
			}
			db := lrRows(D, r0, r1)
			vec.ScaleRows(db.Data, db.Stride, sv, r1-r0, k)
			acc.add(lrRows(W, r0, r1), db)
		}
		parts[c] = acc.sum()
	})
	u := lrAddParts(parts)
	q := tmp.dense(p, k)
	cnt.Advance(d * k).FillNormal(q.Data)
	for i := range q.Data {
		q.Data[i] -= u.Data[i]
	}
	lapackPotrs(lrTri(lrCopyL(tmp, l)), q)
	qt := lrThin(tmp, q, skinny)
	b.lrSweep(d, max(p, k), func(g, _, lo, hi int) {
		t := scr.get(g)
		v := rowv.get(g).Data
		sv, shift := v[:nb], []float64(nil)
		if mv != nil {
			shift = v[nb:]
		}
		for r0 := lo; r0 < hi; r0 += nb {
			r1 := min(r0+nb, hi)
			tb := lrBlock(t, r1-r0)
			qt.mul(tb, lrRows(W, r0, r1))
			for i := r0; i < r1; i++ {
				sv[i-r0] = 1 / ps[i*pinc]
				if shift != nil {
					shift[i-r0] = mv[i*minc]
				}
			}
			db := lrRows(D, r0, r1)
			vec.AddScaledRows(db.Data, db.Stride, tb.Data, tb.Stride, sv, shift, r1-r0, k)
		}
	})
	return nil
}

// lrEMStep is one inner iteration of Algorithm 1, SPD form, rewritten so that no d×p temporary is
// stored. With C = Ψ⁻¹W, Y = XᵀC (K_c×p), Z = W₀ᵀC, E = CᵀΨ₀C and R Rᵀ = M + B:
//
//	V = β X Y + α (W₀ Z + Ψ₀ C),  B = Cᵀ V = β YᵀY + α (ZᵀZ + E)      [first iteration: Z = E = M − I]
//	H = V R⁻ᵀ = X (β Y R⁻ᵀ) + W₀ (α Z R⁻ᵀ) + (α Ψ₀ Ψ⁻¹ W) R⁻ᵀ           [first: X (β Y R⁻ᵀ) + W (α M R⁻ᵀ)]
//	W_new = G M = H (R⁻¹ M),   ψ_new = s − rowdot(G, V) = s − ‖h_i‖²      (G = V (M+B)⁻¹ = H R⁻¹, V = H Rᵀ)
//
// Pass 1 sums the p×p Gram matrices (M by SYRK, and Z, E after the first iteration) and Y; pass 2 forms H block by
// block, ψ_new from it, and overwrites the block of W with H (R⁻¹ M). M + B ⪰ I, so ‖R⁻¹‖ ≤ 1 and the explicit
// triangular inverse is well conditioned. Multiply-adds, first iteration: dp²/2 (M) + dp·K_c (Y) + dp(p + K_c) (H)
// + dp² (W_new) ≈ 2.5·dp² + 2·dp·K_c; later iterations add dp² (Z) + dp²/2 (E) + dp² (the Ψ₀C term of H).
func lrEMStep(be backend.Backend, a backend.EMStepArgs) (int, error) {
	const op = "lowrank.em_step"
	if err := checkHost(op, []string{"w", "psi", "w0", "psi0", "x"}, a.W, a.Psi, a.W0, a.Psi0, a.X); err != nil {
		return 0, err
	}
	b := be.(*Backend)
	tmp := new(scratch)
	defer tmp.release()
	e := newLREM(b, tmp, a)
	ms, ys, zs, es := e.gramPass()
	if err := e.factors(op, ms, ys, zs, es); err != nil {
		return 0, err
	}
	smax, pmin := e.updatePass()
	floor := a.Floor
	if floor <= 0 {
		floor = max(0x1p-1022, backend.RelPsiFloor*smax)
	}
	if !(pmin < floor) {
		return 0, nil
	}
	return e.clampPsi(floor), nil
}

// lrEM holds the operands and sizes shared by the phases of lrEMStep: W (d×p) and ψ, updated in place; W₀, ψ₀ (W
// and ψ themselves in the first iteration); X (d×K_c, used when β ≠ 0); nb rows per block and nc chunks per sweep.
type lrEM struct {
	b                *Backend
	tmp              *scratch
	W, W0, X         blas64.General
	ps, ps0          []float64
	pinc, p0inc      int
	d, p, kc, nb, nc int
	first, useX      bool
	alpha, beta      float64
	f                lrEMFactors // set by factors
	th               lrEMThin    // set by updatePass
}

// newLREM reads the host operands of a.
func newLREM(b *Backend, tmp *scratch, a backend.EMStepArgs) *lrEM {
	e := &lrEM{b: b, tmp: tmp, alpha: a.Alpha, beta: a.Beta}
	e.W = lrGen(a.W)
	e.ps, e.pinc = lrVec(a.Psi)
	e.d, e.p = e.W.Rows, e.W.Cols
	e.first = a.W0 == nil
	e.W0, e.ps0, e.p0inc = e.W, e.ps, e.pinc
	if !e.first {
		e.W0 = lrGen(a.W0)
		e.ps0, e.p0inc = lrVec(a.Psi0)
	}
	e.useX = a.X != nil && a.Beta != 0
	if e.useX {
		e.X = lrGen(a.X)
		e.kc = e.X.Cols
	}
	e.nb = b.lrGemmBlock(e.d, max(e.p, e.kc))
	e.nc = b.lrChunks(e.d, max(e.p, e.kc))
	return e
}

// sdiag returns s_i = α(‖w₀_i‖² + ψ₀_i) + β‖x_i‖², diag S_t.
func (e *lrEM) sdiag(i int) float64 {
	p, W0 := e.p, e.W0
	w0r := W0.Data[i*W0.Stride : i*W0.Stride+p]
	s := e.alpha * (vec.Dot(w0r, w0r) + e.ps0[i*e.p0inc])
	if e.useX {
		kc, X := e.kc, e.X
		xr := X.Data[i*X.Stride : i*X.Stride+kc]
		s += e.beta * vec.Dot(xr, xr)
	}
	return s
}

// gramPass is pass 1 over W: per chunk, M − I = WᵀΨ⁻¹W (lower triangle), Yᵀ = WᵀΨ⁻¹X and (later iterations)
// Z = W₀ᵀC, E = CᵀΨ₀C (lower triangle). Yᵀ = Σ SᵀXs by GEMV (K_c = 1) or lrAcc, not by a GEMM with one row, for
// which OpenBLAS packs the whole block. It returns the per-chunk partial sums in chunk order (ys, zs, es hold
// empty matrices where unused).
func (e *lrEM) gramPass() (ms, ys, zs, es []blas64.General) {
	tmp, W, W0, X, ps, ps0 := e.tmp, e.W, e.W0, e.X, e.ps, e.ps0
	pinc, p0inc, d, p, kc, nb, nc := e.pinc, e.p0inc, e.d, e.p, e.kc, e.nb, e.nc
	first, useX := e.first, e.useX
	type acc struct{ m, yt, z, e blas64.General }
	type scratch1 struct{ s, xs, cb blas64.General }
	scr1 := newLRPer(e.b.workers, func() scratch1 {
		sc := scratch1{s: tmp.dense(nb, p)}
		if useX {
			sc.xs = tmp.dense(nb, kc)
		}
		if !first {
			sc.cb = tmp.dense(nb, p)
		}
		return sc
	})
	parts := make([]acc, nc)
	e.b.lrSweep(d, max(p, kc), func(g, c, lo, hi int) {
		var ac acc
		sc := scr1.get(g)
		s, xs, cb := sc.s, sc.xs, sc.cb
		ya := lrAcc{tmp: tmp, p: p, k: kc, skinny: lrSkinny(p, kc) && kc > 1}
		gm, ge := newLRGram(tmp, p), newLRGram(tmp, p)
		za := lrAcc{tmp: tmp, p: p, k: p, skinny: lrSkinny(p, p)}
		for r0 := lo; r0 < hi; r0 += nb {
			r1 := min(r0+nb, hi)
			sb := lrBlock(s, r1-r0)
			for i := r0; i < r1; i++ {
				f := 1 / math.Sqrt(ps[i*pinc])
				lrScaleTo(sb.Data[(i-r0)*p:(i-r0+1)*p], W.Data[i*W.Stride:i*W.Stride+p], f)
				if useX {
					lrScaleTo(xs.Data[(i-r0)*kc:(i-r0+1)*kc], X.Data[i*X.Stride:i*X.Stride+kc], f)
				}
			}
			gm.add(sb) // WᵀΨ⁻¹W
			// Yᵀ = WᵀΨ⁻¹X
			if useX && kc == 1 {
				blasGemv(blas.Trans, 1, sb, blas64.Vector{N: r1 - r0, Inc: 1, Data: xs.Data}, 1,
					blas64.Vector{N: p, Inc: 1, Data: ya.sum().Data})
			} else if useX {
				ya.add(sb, lrBlock(xs, r1-r0))
			}
			if !first {
				cbb := lrBlock(cb, r1-r0)
				for i := r0; i < r1; i++ {
					f := 1 / ps[i*pinc]
					lrScaleTo(cbb.Data[(i-r0)*p:(i-r0+1)*p], W.Data[i*W.Stride:i*W.Stride+p], f)
				}
				za.add(lrRows(W0, r0, r1), cbb) // Z = W₀ᵀC
				for i := r0; i < r1; i++ {
					f := math.Sqrt(ps0[i*p0inc]) / ps[i*pinc]
					lrScaleTo(sb.Data[(i-r0)*p:(i-r0+1)*p], W.Data[i*W.Stride:i*W.Stride+p], f)
				}
				ge.add(sb) // E = CᵀΨ₀C
			}
		}
		ac.m = gm.sum()
		if useX {
			ac.yt = ya.sum()
		}
		if !first {
			ac.z, ac.e = za.sum(), ge.sum()
		}
		parts[c] = ac
	})
	ms, ys, zs, es = make([]blas64.General, nc), make([]blas64.General, nc), make([]blas64.General, nc), make([]blas64.General, nc)
	for i := range nc {
		ms[i], ys[i], zs[i], es[i] = parts[i].m, parts[i].yt, parts[i].z, parts[i].e
	}
	return ms, ys, zs, es
}

// lrEMFactors holds the p×p (and K_c×p) operands of pass 2: M, R⁻¹ and R⁻ᵀ (R Rᵀ = M + B), K₁ (first: α M R⁻ᵀ;
// later: α Z R⁻ᵀ), K₂ = R⁻¹ M and Y₁ = β Y R⁻ᵀ.
type lrEMFactors struct {
	mm, rinv, rinvT, k1, k2, y1 blas64.General
}

// factors sums the chunks' partial sums of pass 1 and does the p×p algebra: M + B, its Cholesky factor R and
// the operands of pass 2, into e.f. It fails when M + B is not positive definite.
func (e *lrEM) factors(op string, ms, ys, zs, es []blas64.General) error {
	tmp, p, kc, alpha, beta := e.tmp, e.p, e.kc, e.alpha, e.beta
	first, useX := e.first, e.useX
	mm := lrAddParts(ms) // M − I (lower)
	lrSym(mm)
	var y, z blas64.General
	if useX {
		yt := lrAddParts(ys)
		y = tmp.dense(kc, p)
		for i := 0; i < p; i++ {
			for j := 0; j < kc; j++ {
				y.Data[j*p+i] = yt.Data[i*yt.Stride+j]
			}
		}
	}
	mb := tmp.dense(p, p) // M + B
	if first {
		// B = β YᵀY + α (M − I) M
		blasGemm(blas.NoTrans, blas.NoTrans, alpha, mm, mm, 0, mb)
		for i := 0; i < p; i++ {
			for j := 0; j < p; j++ {
				mb.Data[i*p+j] += alpha * mm.Data[i*p+j]
			}
		}
	} else {
		// B = β YᵀY + α (ZᵀZ + E)
		z = lrAddParts(zs)
		e := lrAddParts(es)
		lrSym(e)
		blasGemm(blas.Trans, blas.NoTrans, alpha, z, z, 0, mb)
		for i := range mb.Data {
			mb.Data[i] += alpha * e.Data[i]
		}
	}
	if useX {
		blasGemm(blas.Trans, blas.NoTrans, beta, y, y, 1, mb)
	}
	for i := 0; i < p; i++ {
		mm.Data[i*p+i]++ // mm = M
	}
	for i := range mb.Data {
		mb.Data[i] += mm.Data[i]
	}
	for i := 0; i < p; i++ { // symmetrise, keep lower
		for j := 0; j < i; j++ {
			v := 0.5 * (mb.Data[i*p+j] + mb.Data[j*p+i])
			mb.Data[i*p+j], mb.Data[j*p+i] = v, v
		}
	}
	if _, ok := lapackPotrf(lrSymL(mb)); !ok {
		return backend.Errorf(op, "", backend.ErrNotPositiveDefinite, "M + B is not positive definite (NaN in W, ψ or X?)")
	}
	for i := 0; i < p; i++ {
		clear(mb.Data[i*p+i+1 : (i+1)*p])
	}
	e.f = lrEMFactors{mm: mm, rinv: mb} // R⁻¹ (lower)
	if ok := lapackTrtri(lrTri(e.f.rinv)); !ok {
		return backend.Errorf(op, "", backend.ErrNotPositiveDefinite, "singular Cholesky factor of M + B")
	}
	e.passOperands(&e.f, y, z)
	return nil
}

// passOperands sets K₂, K₁, R⁻ᵀ (later iterations) and Y₁ (when X is used) from M, R⁻¹, Y and Z.
func (e *lrEM) passOperands(f *lrEMFactors, y, z blas64.General) {
	tmp, p, kc, alpha, beta := e.tmp, e.p, e.kc, e.alpha, e.beta
	f.k2 = tmp.dense(p, p) // R⁻¹ M
	blasGemm(blas.NoTrans, blas.NoTrans, 1, f.rinv, f.mm, 0, f.k2)
	f.k1 = tmp.dense(p, p) // first: α M R⁻ᵀ; later: α Z R⁻ᵀ
	if e.first {
		blasGemm(blas.NoTrans, blas.Trans, alpha, f.mm, f.rinv, 0, f.k1)
	} else {
		blasGemm(blas.NoTrans, blas.Trans, alpha, z, f.rinv, 0, f.k1)
	}
	if !e.first { // R⁻ᵀ for the Ψ₀C term
		f.rinvT = tmp.dense(p, p)
		for i := 0; i < p; i++ {
			for j := 0; j < p; j++ {
				f.rinvT.Data[i*p+j] = f.rinv.Data[j*p+i]
			}
		}
	}
	if e.useX { // β Y R⁻ᵀ
		f.y1 = tmp.dense(kc, p)
		blasGemm(blas.NoTrans, blas.Trans, beta, y, f.rinv, 0, f.y1)
	}
}

// lrEMThin is the skinny form of pass 2 (p ≤ 16): the products with p inner terms go to the skinny loops, H's
// terms as one product: the left blocks side by side in a row block A (the scaled W or W itself, W₀, and X when
// K_c ≤ 16) against the stacked right factors.
type lrEMThin struct {
	skinny, xIn bool     // skinny loops in use; X Y₁ folded into H's product
	hOp, k2Op   lrThinOp // the stacked right factors of H, and K₂
	aw          int      // width of A; 0: A is W's block itself
}

// thin sets up the skinny form of pass 2 where p ≤ 16.
func (e *lrEM) thin(f *lrEMFactors) lrEMThin {
	var th lrEMThin
	th.skinny = lrSkinny(e.p, e.p)
	th.xIn = th.skinny && e.useX && e.kc > 1 && lrSkinny(e.p, e.kc)
	if th.skinny {
		parts := []blas64.General{f.k1} // first: H = W K₁ (+ X Y₁)
		if !e.first {
			parts = []blas64.General{f.rinvT, f.k1} // H = T R⁻ᵀ + W₀ K₁ (+ X Y₁)
		}
		if th.xIn {
			parts = append(parts, f.y1)
		}
		v := lrStack(e.tmp, parts)
		if len(parts) > 1 {
			th.aw = v.Rows
		}
		th.hOp, th.k2Op = lrThin(e.tmp, v, true), lrThin(e.tmp, f.k2, true)
	}
	return th
}

// updatePass is pass 2 over W: per block, H, ψ_new = s − ‖h_i‖² (21) written over ψ, and W_new = H K₂ (20) over
// the block of W. ψ_new does not feed W_new, so the floor (which needs max s) is applied after the pass, and only
// when some ψ_new is below the largest floor it could be: updatePass returns max s and min ψ_new.
func (e *lrEM) updatePass() (smax, pmin float64) {
	e.th = e.thin(&e.f)
	f, th := &e.f, &e.th
	tmp, W, ps, pinc, d, p, kc, nb := e.tmp, e.W, e.ps, e.pinc, e.d, e.p, e.kc, e.nb
	first, useX, X := e.first, e.useX, e.X
	type stat struct{ smax, pmin float64 }
	stats := make([]stat, e.nc)
	type scratch2 struct{ h, t blas64.General }
	scr2 := newLRPer(e.b.workers, func() scratch2 {
		sc := scratch2{h: tmp.dense(nb, p)}
		if th.aw > 0 {
			sc.t = tmp.dense(nb, th.aw)
		} else if !first && !th.skinny {
			sc.t = tmp.dense(nb, p)
		}
		return sc
	})
	e.b.lrSweep(d, max(p, kc), func(g, c, lo, hi int) {
		st := stat{pmin: math.Inf(1)}
		sc := scr2.get(g)
		h, t := sc.h, sc.t
		for r0 := lo; r0 < hi; r0 += nb {
			r1 := min(r0+nb, hi)
			hb := lrBlock(h, r1-r0)
			wb := lrRows(W, r0, r1)
			e.hBlock(hb, t, r0, r1)
			for i := r0; i < r1; i++ {
				hr := hb.Data[(i-r0)*p : (i-r0+1)*p]
				s := e.sdiag(i)
				var hh float64
				if useX && kc == 1 {
					hh = lrAxpyDot(X.Data[i*X.Stride], f.y1.Data, hr) // h_i += x_i Y1, ‖h_i‖²
				} else {
					hh = vec.Dot(hr, hr)
				}
				v := s - hh // (21)
				st.smax = max(st.smax, s)
				st.pmin = min(st.pmin, v)
				ps[i*pinc] = v
			}
			if th.skinny {
				th.k2Op.mul(wb, hb) // (20)
			} else {
				blasGemm(blas.NoTrans, blas.NoTrans, 1, hb, f.k2, 0, wb) // (20)
			}
		}
		stats[c] = st
	})
	smax, pmin = 0.0, math.Inf(1)
	for _, st := range stats {
		smax, pmin = max(smax, st.smax), min(pmin, st.pmin)
	}
	return smax, pmin
}

// hBlock sets hb to rows [r0, r1) of H, but for the X Y₁ term when K_c = 1 (added in updatePass with ‖h_i‖²);
// t is the goroutine's scratch block for A (skinny form) or for α Ψ₀Ψ⁻¹W (later iterations).
func (e *lrEM) hBlock(hb, t blas64.General, r0, r1 int) {
	f, th := &e.f, &e.th
	W, W0, X, ps, ps0, pinc, p0inc, p, kc := e.W, e.W0, e.X, e.ps, e.ps0, e.pinc, e.p0inc, e.p, e.kc
	first, alpha, aw := e.first, e.alpha, th.aw
	wb := lrRows(W, r0, r1)
	if th.skinny {
		ab := wb
		if aw > 0 {
			ab = lrBlock(t, r1-r0)
			for i := r0; i < r1; i++ {
				ar := ab.Data[(i-r0)*aw : (i-r0+1)*aw]
				wr := W.Data[i*W.Stride : i*W.Stride+p]
				j := p
				if first {
					copy(ar, wr)
				} else {
					lrScaleTo(ar[:p], wr, alpha*ps0[i*p0inc]/ps[i*pinc])
					copy(ar[p:2*p], W0.Data[i*W0.Stride:i*W0.Stride+p])
					j = 2 * p
				}
				if th.xIn {
					copy(ar[j:j+kc], X.Data[i*X.Stride:i*X.Stride+kc])
				}
			}
		}
		th.hOp.mul(hb, ab)
	} else if first {
		blasGemm(blas.NoTrans, blas.NoTrans, 1, wb, f.k1, 0, hb)
	} else {
		tb := lrBlock(t, r1-r0)
		for i := r0; i < r1; i++ {
			fi := alpha * ps0[i*p0inc] / ps[i*pinc]
			lrScaleTo(tb.Data[(i-r0)*p:(i-r0+1)*p], W.Data[i*W.Stride:i*W.Stride+p], fi)
		}
		blasGemm(blas.NoTrans, blas.NoTrans, 1, tb, f.rinvT, 0, hb)
		blasGemm(blas.NoTrans, blas.NoTrans, 1, lrRows(W0, r0, r1), f.k1, 1, hb)
	}
	if e.useX && kc > 1 && !th.xIn {
		blasGemm(blas.NoTrans, blas.NoTrans, 1, lrRows(X, r0, r1), f.y1, 1, hb)
	}
}

// clampPsi raises every ψ_i below floor to floor, in b.workers contiguous ranges, and returns how many it raised.
func (e *lrEM) clampPsi(floor float64) int {
	b, ps, pinc, d := e.b, e.ps, e.pinc, e.d
	clamps := make([]int, b.workers)
	b.parallelFor(b.workers, func(lo, hi int) {
		for wk := lo; wk < hi; wk++ {
			for i := wk * d / b.workers; i < (wk+1)*d/b.workers; i++ {
				if ps[i*pinc] < floor {
					ps[i*pinc] = floor
					clamps[wk]++
				}
			}
		}
	})
	total := 0
	for _, c := range clamps {
		total += c
	}
	return total
}

// lrAxpyDot sets h += a·y and returns ‖h‖².
func lrAxpyDot(a float64, y, h []float64) float64 {
	y = y[:len(h)]
	if vec.UseFMA && len(h) >= 16 { // two vector passes over a row in L1 beat one scalar pass
		vec.Axpy(a, y, h)
		return vec.Dot(h, h)
	}
	var s0, s1 float64
	j := 0
	for ; j+2 <= len(h); j += 2 {
		v0, v1 := h[j]+a*y[j], h[j+1]+a*y[j+1]
		h[j], h[j+1] = v0, v1
		s0 += v0 * v0
		s1 += v1 * v1
	}
	for ; j < len(h); j++ {
		v := h[j] + a*y[j]
		h[j] = v
		s0 += v * v
	}
	return s0 + s1
}

// lrScaleTo sets dst = f·src.
func lrScaleTo(dst, src []float64, f float64) {
	dst = dst[:len(src)]
	if vec.UseFMA && len(src) >= 16 { // 0 + f·v is f·v rounded once, as in the loop
		clear(dst)
		vec.Axpy(f, src, dst)
		return
	}
	for j, v := range src {
		dst[j] = v * f
	}
}
