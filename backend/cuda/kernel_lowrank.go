package cuda

import (
	"unsafe"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cuda/internal/cu"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// Kernels for the low-rank-plus-diagonal algebra of paper 002 (backend/lowrank.go): the d×p by p×k products on
// cuBLAS, the diagonal scalings, the random draws and the ψ update fused into element-wise kernels
// (kernels/lowrank.cu, kernels/philox.cu) placed around them, so that W (d×p, d up to 1e6) is read the fewest times
// the algebra allows:
//   - solve (Woodbury): W read twice (Wᵀ(g ⊘ ψ) must be complete before W v can start).
//   - sample (Prop. 1 of paper 002 in its corrected form): W read twice; the draws z are written once,
//     already scaled by Ψ^{-1/2}, by the random fill itself.
//   - capacitance chol(I + WᵀΨ⁻¹W): W read once, a row chunk at a time scaled into an L2-sized buffer
//     that a SYRK adds to M, then cuSOLVER's Cholesky; no d×p temporary, no allocation, one status word back.
//   - EM step, first inner iteration (Algorithm 1): W read once, the scaled copy A = Ψ^{-1/2}[W | X]
//     written once and read twice, W_new written once; no d×p temporary beyond A.
// The second sweep of each op goes over row chunks of lrChunkBytes, so that the d×k (or d×p) product of a chunk
// is written by cuBLAS and read back by the epilogue while it is still in the GPU's L2 cache. Later inner EM
// iterations (W₀ ≠ nil) and unusual layouts run the reference, which is built on the same cuBLAS primitives.

// lrChunkBytes is the size of the product buffer of one chunk of the second sweeps (a variable so that tests can
// run several chunks on small matrices).
var lrChunkBytes = 32 << 20

// lrEMMaxGrid bounds the blocks of lr_em_pass1, whose per-block maxima of diag S_t give the default ψ floor.
const lrEMMaxGrid = 1024

// lrTinyPsi is the absolute lower bound of the default ψ floor, the smallest normal float64 (backend/lowrank.go).
const lrTinyPsi = 0x1p-1022

func init() {
	applies := func(b backend.Backend, s tensor.Shape) bool { _, ok := b.(*Backend); return ok && s.Batch == 1 }
	backend.SolveOp.Register(backend.Kernel[backend.SolveFunc]{
		Name: "cuda.lowrank.solve", Backend: Name, Priority: 10, Applies: applies, Fn: lrSolveCUDA,
	})
	backend.SampleOp.Register(backend.Kernel[backend.SampleFunc]{
		Name: "cuda.lowrank.sample", Backend: Name, Priority: 10, Applies: applies, Fn: lrSampleCUDA,
	})
	backend.EMStepOp.Register(backend.Kernel[backend.EMStepFunc]{
		Name: "cuda.lowrank.em_step", Backend: Name, Priority: 10, Applies: applies, Fn: lrEMStepCUDA,
	})
	backend.CapacitanceOp.Register(backend.Kernel[backend.CapacitanceFunc]{
		Name: "cuda.lowrank.capacitance", Backend: Name, Priority: 10, Applies: applies, Fn: lrCapacitanceCUDA,
	})
}

// lrChunkRows is the number of rows of a chunk whose product buffer has cols columns.
func lrChunkRows(d, cols int) int { return min(d, max(lrChunkBytes/(8*max(cols, 1)), 1)) }

// lrRow returns the address of row i of a vector or matrix view, 0 for an absent one.
func lrRow(v hotView, i int) cu.DevPtr {
	if v.p == 0 {
		return 0
	}
	return v.row(i)
}

// lrBLAS reports whether the views cuBLAS reads can be passed as they are (row strides at least the row length).
func lrBLAS(vs ...hotView) bool {
	for _, v := range vs {
		if _, ok := v.ld(); !ok {
			return false
		}
	}
	return true
}

// lrSolveCUDA is the Woodbury solve dst = (W Wᵀ + Ψ)⁻¹ g; LowRank.Solve has checked the shapes.
func lrSolveCUDA(be backend.Backend, dst, w, psi, l, g *tensor.Tensor) error {
	const op = "lowrank.solve"
	b := be.(*Backend)
	if err := b.ownsNamed(op, []string{"dst", "w", "psi", "l", "g"}, dst, w, psi, l, g); err != nil {
		return err
	}
	dv, wv, pv, lv, gv := hotViewOf(b, dst), hotViewOf(b, w), hotViewOf(b, psi), hotViewOf(b, l), hotViewOf(b, g)
	if !lrBLAS(wv, lv) {
		return backend.SolveOp.Reference()(be, dst, w, psi, l, g)
	}
	return b.queue(op, func() error { return lrSolveRun(b.hot(), dv, wv, pv, lv, gv) })
}

// lrSolveRun: T = g ⊘ ψ (lr_scale_rows), U = Wᵀ T (GEMM, first read of W), V = L⁻ᵀ L⁻¹ U (two TRSMs with the
// Cholesky factor L of the capacitance M = I + WᵀΨ⁻¹W), then per chunk S = W V (GEMM, second read of W) and
// dst = (g − S) ⊘ ψ (lr_solve_epilogue). dst may be g: g is read only by the epilogue, element by element.
//
// Column-major bookkeeping: the row-major d×k matrix T (contiguous) is the column-major k×d Tᶜ; W with row stride
// ldw is Wᶜ (p×d); U (p×k) is kept as Uᶜ (k×p, ld k), so U = WᵀT is Uᶜ = Tᶜ Wᶜᵀ. The row-major lower L is the
// column-major upper Lᶜ = Lᵀ, so L Y = U is Yᶜ Lᶜ = Uᶜ and Lᵀ V = Y is Vᶜ Lᶜᵀ = Yᶜ (TRSMs from the right).
// S = W V is Sᶜ = Vᶜ Wᶜ.
func lrSolveRun(d hotDev, dst, w, psi, l, g hotView) error {
	dd, p, k := w.rows, w.cols, g.cols
	ldw, _ := w.ld()
	ldl, _ := l.ld()
	tb, err := d.Scratch(hotSlotA, int64(8*dd*k))
	if err != nil {
		return err
	}
	ub, err := d.Scratch(hotSlotB, int64(8*p*k))
	if err != nil {
		return err
	}
	if err := d.launch("lowrank", "lr_scale_rows", hotGrid(dd*k, hotThreads), hotBlock(hotThreads), 0,
		tb, k, g.p, g.rs, psi.p, psi.rs, dd, k); err != nil {
		return err
	}
	if err := d.Dgemm(cu.OpN, cu.OpT, k, p, dd, 1, tb, k, w.p, ldw, 0, ub, k); err != nil {
		return err
	}
	if err := d.Dtrsm(cu.Right, cu.Upper, cu.OpN, cu.NonUnit, k, p, 1, l.p, ldl, ub, k); err != nil {
		return err
	}
	if err := d.Dtrsm(cu.Right, cu.Upper, cu.OpT, cu.NonUnit, k, p, 1, l.p, ldl, ub, k); err != nil {
		return err
	}
	rc := lrChunkRows(dd, k)
	for r0 := 0; r0 < dd; r0 += rc {
		rows := min(rc, dd-r0)
		if err := d.Dgemm(cu.OpN, cu.OpN, k, rows, p, 1, ub, k, w.row(r0), ldw, 0, tb, k); err != nil {
			return err
		}
		if err := d.launch("lowrank", "lr_solve_epilogue", hotGrid(rows*k, hotThreads), hotBlock(hotThreads), 0,
			dst.row(r0), dst.rs, g.row(r0), g.rs, tb, k, psi.row(r0), psi.rs, rows, k); err != nil {
			return err
		}
	}
	return nil
}

// lrSampleCUDA writes K draws of N(μ, (W Wᵀ + Ψ)⁻¹) into the columns of dst (paper 002 Prop. 1 corrected,
// numbered as backend.SampleFunc says); LowRank.Sample has checked the shapes.
func lrSampleCUDA(be backend.Backend, dst, w, psi, l, mu *tensor.Tensor, c rng.Counter) error {
	const op = "lowrank.sample"
	b := be.(*Backend)
	if err := b.ownsNamed(op, []string{"dst", "w", "psi", "l", "mu"}, dst, w, psi, l, mu); err != nil {
		return err
	}
	dv, wv, pv, lv, mv := hotViewOf(b, dst), hotViewOf(b, w), hotViewOf(b, psi), hotViewOf(b, l), hotViewOf(b, mu)
	if !lrBLAS(dv, wv, lv) {
		return backend.SampleOp.Reference()(be, dst, w, psi, l, mu, c)
	}
	return b.queue(op, func() error { return lrSampleRun(b.hot(), dv, wv, pv, lv, mv, c) })
}

// lrSampleRun: x = Ψ^{-1/2} z written into dst by the random fill (z: draws c.Offset + i·K + j), ε (p×K) the next
// pK draws, E = ε − Wᵀx (GEMM, first read of W), Q = M⁻¹E (two TRSMs, as in lrSolveRun), then per chunk S = W Q
// (GEMM, second read of W) and dst += S ⊘ ψ + μ (lr_sample_epilogue): x⁺ = x + Ψ⁻¹ W M⁻¹(ε − Wᵀx), θ = μ + x⁺.
// E (p×K row-major, contiguous) is Eᶜ (K×p, ld K); Wᵀx is then xᶜ Wᶜᵀ with xᶜ the column-major K×d view of dst.
func lrSampleRun(d hotDev, dst, w, psi, l, mu hotView, c rng.Counter) error {
	dd, p, k := w.rows, w.cols, dst.cols
	ldw, _ := w.ld()
	ldd, _ := dst.ld()
	ldl, _ := l.ld()
	rc := lrChunkRows(dd, k)
	sb, err := d.Scratch(hotSlotA, int64(8*rc*k))
	if err != nil {
		return err
	}
	eb, err := d.Scratch(hotSlotB, int64(8*p*k))
	if err != nil {
		return err
	}
	if err := rndFill(d, dst, c, true, psi.p, psi.rs); err != nil {
		return err
	}
	ev := hotView{p: eb, batch: 1, rows: p, cols: k, bs: p * k, rs: k}
	if err := rndFill(d, ev, c.Advance(dd*k), true, 0, 0); err != nil {
		return err
	}
	if err := d.Dgemm(cu.OpN, cu.OpT, k, p, dd, -1, dst.p, ldd, w.p, ldw, 1, eb, k); err != nil {
		return err
	}
	if err := d.Dtrsm(cu.Right, cu.Upper, cu.OpN, cu.NonUnit, k, p, 1, l.p, ldl, eb, k); err != nil {
		return err
	}
	if err := d.Dtrsm(cu.Right, cu.Upper, cu.OpT, cu.NonUnit, k, p, 1, l.p, ldl, eb, k); err != nil {
		return err
	}
	for r0 := 0; r0 < dd; r0 += rc {
		rows := min(rc, dd-r0)
		if err := d.Dgemm(cu.OpN, cu.OpN, k, rows, p, 1, eb, k, w.row(r0), ldw, 0, sb, k); err != nil {
			return err
		}
		if err := d.launch("lowrank", "lr_sample_epilogue", hotGrid(rows*k, hotThreads), hotBlock(hotThreads), 0,
			dst.row(r0), dst.rs, sb, k, psi.row(r0), psi.rs, lrRow(mu, r0), mu.rs, rows, k); err != nil {
			return err
		}
	}
	return nil
}

// lrEMStepCUDA is the first inner iteration of Algorithm 1 in the form of lrEMRun; later iterations
// (W₀ given) and a wide X (K_c > p, whose scaled copy would outgrow W's) run the reference.
func lrEMStepCUDA(be backend.Backend, a backend.EMStepArgs) (int, error) {
	const op = "lowrank.em_step"
	b := be.(*Backend)
	if err := b.ownsNamed(op, []string{"w", "psi", "w0", "psi0", "x"}, a.W, a.Psi, a.W0, a.Psi0, a.X); err != nil {
		return 0, err
	}
	wv, pv := hotViewOf(b, a.W), hotViewOf(b, a.Psi)
	var xv hotView
	kc := 0
	if a.X != nil && a.Beta != 0 {
		xv, kc = hotViewOf(b, a.X), a.X.Cols()
	}
	if a.W0 != nil || kc > wv.cols || !lrBLAS(wv) {
		return backend.EMStepOp.Reference()(be, a)
	}
	var clamped int
	var notPD bool
	err := b.do(func() error {
		var err error
		clamped, notPD, err = lrEMRun(b.hot(), wv, pv, xv, kc, a.Alpha, a.Beta, a.Floor)
		return err
	})
	if err != nil {
		return 0, err
	}
	if notPD {
		return 0, backend.Errorf(op, "", backend.ErrNotPositiveDefinite,
			"M + B is not positive definite (NaN in W, ψ or X?)")
	}
	return clamped, nil
}

// lrEMRun is the first inner iteration of Algorithm 1, SPD (M+B) form, written as in backend/cpu
// lrEMStep: with C = Ψ⁻¹W, Y = XᵀC, M = I + WᵀC, B = β YᵀY + α(M − I)M, R Rᵀ = M + B,
//
//	H = X (β Y R⁻ᵀ) + W (α M R⁻ᵀ),  ψ_new = s − ‖h_i‖²  ((21)),  W_new = H (R⁻¹ M)  ((20)),
//
// with s = diag S_t = α(rowsq(W) + ψ) + β rowsq(X). On the device:
//
//	pass 1:  A = Ψ^{-1/2}[W | X] and s (lr_em_pass1, one read of W and X);
//	         G = AᵀA (one GEMM): its blocks are M − I and Y;
//	p × p:   B, M + B, R (POTRF), and one TRSM giving [K₂ | K₁ᵀ | Y₁ᵀ] = R⁻¹[M | αM | βYᵀ];
//	pass 2:  per chunk of rows, Ĥ = A [K₁; Y₁] = Ψ^{-1/2}H (GEMM), then h = √ψ ĥ and ψ_new (lr_em_epilogue),
//	         then W_new = H K₂ (GEMM into W).
//
// kc is the number of columns of X that enter (0: no β X Xᵀ term). It returns the number of ψ entries raised to the
// floor, and notPD when M + B could not be factored; W and ψ are then unchanged. Two values come back to the host:
// the factorisation status (before anything is written) and the clamp count.
//
// Column-major bookkeeping: A (d × na, na = p + kc, contiguous) is Aᶜ (na × d, ld na), so G = Aᶜ Aᶜᵀ, G(i, j) at
// G[i + j·na], and Y (kc × p) is the block of G below row p (address G + 8p, ld na). The small matrices are
// column-major with ld p. The chunk's Ĥ (rows × p, contiguous) is Ĥᶜ = P₂ Aᶜ with P₂ = [K₁ᵀ | Y₁ᵀ] (p × na, the
// columns p … 2p + kc − 1 of the TRSM result), and W_new's chunk (ld ldw) is Wᶜ = K₂ᵀ Hᶜ.
func lrEMRun(d hotDev, w, psi, x hotView, kc int, alpha, beta, floor float64) (clamped int, notPD bool, err error) {
	dd, p := w.rows, w.cols
	na := p + kc
	ldw, _ := w.ld()
	nb := min((dd+hotThreads/32-1)/(hotThreads/32), lrEMMaxGrid)
	rc := lrChunkRows(dd, p)
	ab, err := d.Scratch(hotSlotA, int64(8*dd*na))
	if err != nil {
		return 0, false, err
	}
	hb, err := d.Scratch(hotSlotB, int64(8*rc*p))
	if err != nil {
		return 0, false, err
	}
	// Small buffers, in doubles: s (d), G (na²), M − I, B, M + B / R (p² each), the right-hand sides (p(2p + kc)),
	// the block maxima (nb), the floor (1), then three ints (POTRF info, status, clamp count).
	words := []int{dd, na * na, p * p, p * p, p * p, p * (2*p + kc), nb, 1, 2}
	total := 0
	for _, n := range words {
		total += n
	}
	sc, err := d.Scratch(hotSlotC, int64(8*total))
	if err != nil {
		return 0, false, err
	}
	ptrs := make([]cu.DevPtr, len(words))
	off := sc
	for i, n := range words {
		ptrs[i] = off
		off += cu.DevPtr(8 * n)
	}
	sd, g, mi, mb, r, nrhs, bmax, floorp, ints := ptrs[0], ptrs[1], ptrs[2], ptrs[3], ptrs[4], ptrs[5], ptrs[6],
		ptrs[7], ptrs[8]
	info, status, clampp := ints, ints+4, ints+8

	if err := d.launch("lowrank", "lr_em_pass1", [3]uint32{uint32(nb), 1, 1}, hotBlock(hotThreads), 0,
		ab, na, w.p, w.rs, x.p, x.rs, psi.p, psi.rs, sd, bmax, alpha, beta, dd, p, kc); err != nil {
		return 0, false, err
	}
	if err := d.Dgemm(cu.OpN, cu.OpT, na, na, dd, 1, ab, na, ab, na, 0, g, na); err != nil {
		return 0, false, err
	}
	if err := d.launch("lowrank", "lr_em_prep", hotGrid(p*p, hotThreads), hotBlock(hotThreads), 0,
		g, na, mi, mb, p, alpha); err != nil {
		return 0, false, err
	}
	// B = α(M − I)(M − I) + α(M − I) = α(M − I)M (first-iteration shortcut), + β YᵀY.
	if err := d.Dgemm(cu.OpN, cu.OpN, p, p, p, alpha, mi, p, mi, p, 1, mb, p); err != nil {
		return 0, false, err
	}
	if kc > 0 {
		y := g + cu.DevPtr(8*p)
		if err := d.Dgemm(cu.OpT, cu.OpN, p, p, kc, beta, y, na, y, na, 1, mb, p); err != nil {
			return 0, false, err
		}
	}
	if err := d.launch("lowrank", "lr_em_prep2", hotGrid(p*(2*p+kc), hotThreads), hotBlock(hotThreads), 0,
		mi, mb, g, na, r, nrhs, p, kc, alpha, beta); err != nil {
		return 0, false, err
	}
	if err := d.Dpotrf(cu.Lower, p, r, p, info); err != nil {
		return 0, false, err
	}
	if err := d.launch("lowrank", "lr_em_check", hotGrid(1, 1), hotBlock(1), 0, r, p, info, status); err != nil {
		return 0, false, err
	}
	var st int32
	if err := d.DtoH(unsafe.Pointer(&st), status, 4); err != nil {
		return 0, false, err
	}
	if st != 0 {
		return 0, true, nil
	}
	if err := d.Dtrsm(cu.Left, cu.Lower, cu.OpN, cu.NonUnit, p, 2*p+kc, 1, r, p, nrhs, p); err != nil {
		return 0, false, err
	}
	if err := d.launch("lowrank", "lr_em_floor", hotGrid(1, 1), hotBlock(1), 0,
		bmax, nb, floor, backend.RelPsiFloor, lrTinyPsi, floorp); err != nil {
		return 0, false, err
	}
	if err := d.Memset0(clampp, 4); err != nil {
		return 0, false, err
	}
	p2 := nrhs + cu.DevPtr(8*p*p) // [K₁ᵀ | Y₁ᵀ]
	for r0 := 0; r0 < dd; r0 += rc {
		rows := min(rc, dd-r0)
		if err := d.Dgemm(cu.OpN, cu.OpN, p, rows, na, 1, p2, p, ab+cu.DevPtr(8*r0*na), na, 0, hb, p); err != nil {
			return 0, false, err
		}
		if err := d.launch("lowrank", "lr_em_epilogue", hotGrid(rows, hotThreads/32), hotBlock(hotThreads), 0,
			hb, p, psi.row(r0), psi.rs, sd+cu.DevPtr(8*r0), floorp, clampp, rows); err != nil {
			return 0, false, err
		}
		if err := d.Dgemm(cu.OpT, cu.OpN, p, rows, p, 1, nrhs, p, hb, p, 0, w.row(r0), ldw); err != nil {
			return 0, false, err
		}
	}
	var cl int32
	if err := d.DtoH(unsafe.Pointer(&cl), clampp, 4); err != nil {
		return 0, false, err
	}
	return int(cl), false, nil
}

// lrCapacitanceCUDA writes into l the lower Cholesky factor of M = I + WᵀΨ⁻¹W; LowRank.Refactor has checked the
// shapes and ψ > 0.
func lrCapacitanceCUDA(be backend.Backend, l, w, psi *tensor.Tensor) error {
	const op = "lowrank.capacitance"
	b := be.(*Backend)
	if err := b.ownsNamed(op, []string{"l", "w", "psi"}, l, w, psi); err != nil {
		return err
	}
	lv, wv, pv := hotViewOf(b, l), hotViewOf(b, w), hotViewOf(b, psi)
	var bad bool
	if err := b.do(func() error {
		var err error
		bad, err = lrCapacitanceRun(b.hot(), lv, wv, pv)
		return err
	}); err != nil {
		return err
	}
	if bad {
		return backend.Errorf(op, "w", backend.ErrNotPositiveDefinite,
			"I + WᵀΨ⁻¹W is not positive definite (W or ψ not finite?)")
	}
	return nil
}

// lrCapacitanceRun: G = I (lr_cap_init), then per chunk of rows S = Ψ^{-1/2}W (lr_cap_scale) and G += SᵀS (SYRK,
// lower triangle of the column-major p×p G, from the L2-resident S), G = LLᵀ (cuSOLVER), the status of the factor
// (lr_em_check) and l from G unless it failed (lr_cap_out). A contiguous row-major chunk S (rows × p) is the
// column-major Sᶜ (p × rows, ld p), so SᵀS = Sᶜ Sᶜᵀ (SYRK without transpose); the column-major lower factor is
// the row-major lower L read transposed, which lr_cap_out undoes. bad reports a failed factorisation.
func lrCapacitanceRun(d hotDev, l, w, psi hotView) (bad bool, err error) {
	dd, p := w.rows, w.cols
	rc := lrChunkRows(dd, p)
	sb, err := d.Scratch(hotSlotA, int64(8*rc*p))
	if err != nil {
		return false, err
	}
	g, err := d.Scratch(hotSlotB, int64(8*p*p+8))
	if err != nil {
		return false, err
	}
	info := g + cu.DevPtr(8*p*p)
	status := info + 4
	pp := hotGrid(p*p, hotThreads)
	if err := d.launch("lowrank", "lr_cap_init", pp, hotBlock(hotThreads), 0, g, p); err != nil {
		return false, err
	}
	for r0 := 0; r0 < dd; r0 += rc {
		rows := min(rc, dd-r0)
		if err := d.launch("lowrank", "lr_cap_scale", hotGrid(rows*p, hotThreads), hotBlock(hotThreads), 0,
			sb, w.row(r0), w.rs, psi.row(r0), psi.rs, rows, p); err != nil {
			return false, err
		}
		if err := d.Dsyrk(cu.Lower, cu.OpN, p, rows, 1, sb, p, 1, g, p); err != nil {
			return false, err
		}
	}
	if err := d.Dpotrf(cu.Lower, p, g, p, info); err != nil {
		return false, err
	}
	if err := d.launch("lowrank", "lr_em_check", hotGrid(1, 1), hotBlock(1), 0, g, p, info, status); err != nil {
		return false, err
	}
	if err := d.launch("lowrank", "lr_cap_out", pp, hotBlock(hotThreads), 0, l.p, l.rs, g, p, status); err != nil {
		return false, err
	}
	var st int32
	if err := d.DtoH(unsafe.Pointer(&st), status, 4); err != nil {
		return false, err
	}
	return st != 0, nil
}
