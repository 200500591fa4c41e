package cuda

import (
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// The damped K-FAC solve (B + γI)⁻¹ G (A + γI)⁻¹ (backend/kron.go, paper 000 eqs. (5.7)–(5.8)) in one launch for
// the whole batch when A, B and G fit in shared memory together (kernels/spd.cu kron_solve: both factors and the
// four triangular solves in one block per item, the result in scratch, spd_commit to dst unless a factor was not
// SPD, so that dst is untouched on that error as with the reference). Larger layers run the reference (batched
// cuSOLVER Cholesky and cuBLAS triangular solves).

func init() {
	backend.KronSolveOp.Register(backend.Kernel[backend.KronSolveFunc]{
		Name: "cuda.kron.solve.block", Backend: Name, Priority: 10,
		Applies: func(b backend.Backend, s tensor.Shape) bool {
			_, ok := b.(*Backend)
			return ok && s.Rows >= 1 && s.Cols >= 1 && kronBytes(s.Rows, s.Cols) <= spdMaxBytes
		},
		Fn: kronSolveCUDA,
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
	switch {
	case st[0] >= 0:
		return backend.BatchErrorf(op, "a", st[0], backend.ErrNotPositiveDefinite, "Cholesky factorisation failed")
	case st[1] >= 0:
		return backend.BatchErrorf(op, "b", st[1], backend.ErrNotPositiveDefinite, "Cholesky factorisation failed")
	}
	return nil
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
