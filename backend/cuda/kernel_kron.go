package cuda

import (
	"unsafe"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cuda/internal/cu"
	"github.com/geovb/geovb/tensor"
)

// The damped K-FAC solve (B + γI)⁻¹ G (A + γI)⁻¹ (backend/kron.go, paper 000 eqs. (5.7)–(5.8)) in one launch for
// the whole batch when A, B and G fit in shared memory together (kernels/spd.cu kron_solve: both factors and the
// four triangular solves in one block per item, the result in scratch, spd_commit to dst unless a factor was not
// SPD, so that dst is untouched on that error as with the reference). Larger layers of batches up to
// kronMaxFactored take cuda.kron.solve.factored: each distinct damped factor (a broadcast one once) packed and
// factored by cuSOLVER's blocked Cholesky — not its batched one, which is made for small orders — all the factors'
// status read back at once, then dst = G and four cuBLAS triangular solves per item in place. Larger batches of
// large layers run the reference.

// kronMaxFactored is the largest batch of the factored path, which issues four triangular solves per item.
const kronMaxFactored = 64

func init() {
	backend.KronSolveOp.Register(backend.Kernel[backend.KronSolveFunc]{
		Name: "cuda.kron.solve.block", Backend: Name, Priority: 10,
		Applies: func(b backend.Backend, s tensor.Shape) bool {
			_, ok := b.(*Backend)
			return ok && s.Rows >= 1 && s.Cols >= 1 && kronBytes(s.Rows, s.Cols) <= spdMaxBytes
		},
		Fn: kronSolveCUDA,
	})
	backend.KronSolveOp.Register(backend.Kernel[backend.KronSolveFunc]{
		Name: "cuda.kron.solve.factored", Backend: Name, Priority: 5,
		Applies: func(b backend.Backend, s tensor.Shape) bool {
			_, ok := b.(*Backend)
			return ok && s.Batch <= kronMaxFactored
		},
		Fn: kronFactoredCUDA,
	})
}

// kronBytes is the shared memory of kron_solve for G m×n: A, B and G with odd leading dimensions.
func kronBytes(m, n int) int { return 8 * (n*(n|1) + m*(m|1) + m*(n|1)) }

// kronSolveCUDA is the one-launch solve; KronSolve has checked the operands.
func kronSolveCUDA(be backend.Backend, dst, a, bm, g *tensor.Tensor, damping float64) error {
	b := be.(*Backend)
	const op = "kron.solve"
	if err := b.ownsNamed(op, []string{"dst", "a", "b", "g"}, dst, a, bm, g); err != nil {
		return err
	}
	dv, av, bv, gv := hotViewOf(b, dst), spdView(b, a), spdView(b, bm), spdView(b, g)
	var st spdStatus
	if err := b.do(func() error {
		var err error
		st, err = kronSolveRun(b.hot(), dv, av, bv, gv, damping)
		return err
	}); err != nil {
		return err
	}
	return kronError(st)
}

// kronError is the operation's error for the status of its two factors (A's failure first), nil when both are SPD.
func kronError(st spdStatus) error {
	const op = "kron.solve"
	switch {
	case st[0] >= 0:
		return backend.BatchErrorf(op, "a", st[0], backend.ErrNotPositiveDefinite, "Cholesky factorisation failed")
	case st[1] >= 0:
		return backend.BatchErrorf(op, "b", st[1], backend.ErrNotPositiveDefinite, "Cholesky factorisation failed")
	}
	return nil
}

// kronFactoredCUDA is the factored path; KronSolve has checked the operands. A destination whose rows overlap is
// no cuBLAS matrix and runs the reference.
func kronFactoredCUDA(be backend.Backend, dst, a, bm, g *tensor.Tensor, damping float64) error {
	b := be.(*Backend)
	const op = "kron.solve"
	if err := b.ownsNamed(op, []string{"dst", "a", "b", "g"}, dst, a, bm, g); err != nil {
		return err
	}
	dv, av, bv, gv := hotViewOf(b, dst), spdView(b, a), spdView(b, bm), spdView(b, g)
	if _, ok := dv.ld(); !ok {
		return backend.KronSolveOp.Reference()(be, dst, a, bm, g, damping)
	}
	var st spdStatus
	if err := b.do(func() error {
		var err error
		st, err = kronFactoredRun(b.hot(), dv, av, bv, gv, damping)
		return err
	}); err != nil {
		return err
	}
	return kronError(st)
}

// kronFactoredRun factors the damped A and B (packed column-major by pack_sym, both triangles from the lower one,
// γ added by add_diag, cuSOLVER's potrf, chol_check for a factor that is not finite), reads every status back, and
// when both factors are good sets dst = G and solves in place. The row-major m×n item X with row stride ld is the
// column-major n×m Xᶜ = Xᵀ, so B⁻¹ X A⁻¹ is Xᶜ ← A⁻¹ Xᶜ B⁻¹ = L_A⁻ᵀ L_A⁻¹ Xᶜ L_B⁻ᵀ L_B⁻¹ (A, B symmetric, L the
// column-major lower factors): two left and two right TRSMs.
func kronFactoredRun(d hotDev, dst, a, bm, g hotView, damping float64) (spdStatus, error) {
	batch, m, n := dst.batch, dst.rows, dst.cols
	ca, cb := kronFactors(a), kronFactors(bm)
	buf, err := d.Scratch(hotSlotA, int64(8*(ca*n*n+cb*m*m)+4*(ca+cb)))
	if err != nil {
		return spdStatus{}, err
	}
	fa := buf
	fb := fa + cu.DevPtr(8*ca*n*n)
	info := fb + cu.DevPtr(8*cb*m*m)
	for _, f := range []struct {
		p     cu.DevPtr
		v     hotView
		count int
		n     int
		info  cu.DevPtr
	}{{fa, a, ca, n, info}, {fb, bm, cb, m, info + cu.DevPtr(4*ca)}} {
		nn := f.n * f.n
		if err := d.launch("core", "pack_sym", hotGrid(f.count*nn, hotThreads), hotBlock(hotThreads), 0, f.p, f.v.p,
			f.v.bs, f.v.rs, f.count, f.n); err != nil {
			return spdStatus{}, err
		}
		if damping != 0 {
			if err := d.launch("core", "add_diag", hotGrid(f.count*f.n, hotThreads), hotBlock(hotThreads), 0, f.p,
				nn, f.n, f.count, f.n, damping); err != nil {
				return spdStatus{}, err
			}
		}
		for i := 0; i < f.count; i++ {
			if err := d.Dpotrf(cu.Lower, f.n, f.p+cu.DevPtr(8*i*nn), f.n, f.info+cu.DevPtr(4*i)); err != nil {
				return spdStatus{}, err
			}
		}
		if err := d.launch("core", "chol_check", hotGrid(f.count, hotThreads), hotBlock(hotThreads), 0, f.info, f.p,
			nn, f.n, f.count, f.n); err != nil {
			return spdStatus{}, err
		}
	}
	st, err := kronStatus(d, info, ca, cb)
	if err != nil || st != (spdStatus{-1, -1}) {
		return st, err
	}
	if dst.p != g.p {
		if err := d.launch("core", "ew_copy", hotGrid(batch*m*n, hotThreads), hotBlock(hotThreads), 0, dst.p,
			dst.bs, dst.rs, g.p, g.bs, g.rs, batch, m, n); err != nil {
			return spdStatus{}, err
		}
	}
	ldx, _ := dst.ld()
	for it := 0; it < batch; it++ {
		la := fa + cu.DevPtr(8*min(it, ca-1)*n*n)
		lb := fb + cu.DevPtr(8*min(it, cb-1)*m*m)
		x := dst.p + cu.DevPtr(8*it*dst.bs)
		for _, s := range []struct {
			side cu.Side
			op   cu.Op
			l    cu.DevPtr
			ldl  int
		}{{cu.Left, cu.OpN, la, n}, {cu.Left, cu.OpT, la, n}, {cu.Right, cu.OpT, lb, m}, {cu.Right, cu.OpN, lb, m}} {
			if err := d.Dtrsm(s.side, cu.Lower, s.op, cu.NonUnit, n, m, 1, s.l, s.ldl, x, ldx); err != nil {
				return spdStatus{}, err
			}
		}
	}
	return st, nil
}

// kronFactors is the number of distinct factors of a factor operand: 1 when it is broadcast.
func kronFactors(v hotView) int {
	if v.bs == 0 {
		return 1
	}
	return v.batch
}

// kronStatus reads the ca + cb status words of the factors back: the first A that failed, else the first B.
func kronStatus(d hotDev, info cu.DevPtr, ca, cb int) (spdStatus, error) {
	host := make([]int32, ca+cb)
	if err := d.DtoH(unsafe.Pointer(&host[0]), info, int64(4*(ca+cb))); err != nil {
		return spdStatus{}, err
	}
	st := spdStatus{-1, -1}
	for i, v := range host {
		switch {
		case v == 0:
		case i < ca && st[0] < 0:
			st[0] = i
		case i >= ca && st[1] < 0:
			st[1] = i - ca
		}
	}
	return st, nil
}

// kronSolveRun launches kron_solve and spd_commit for dst's batch and reads the status back (word 0: A + γI not
// SPD, word 1: B + γI).
func kronSolveRun(d hotDev, dst, a, bm, g hotView, damping float64) (spdStatus, error) {
	batch, m, n := dst.batch, dst.rows, dst.cols
	out, flag, err := spdScratch(d, batch, m, n)
	if err != nil {
		return spdStatus{}, err
	}
	if err := d.launch("spd", "kron_solve", hotGrid(batch, 1), hotBlock(spdThreads(max(m, n))),
		uint32(kronBytes(m, n)), out, a.p, a.bs, a.rs, bm.p, bm.bs, bm.rs, g.p, g.bs, g.rs, damping, flag, batch, m,
		n); err != nil {
		return spdStatus{}, err
	}
	return spdCommit(d, dst, out, flag)
}
