package cuda

import (
	"unsafe"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cuda/internal/cu"
	"github.com/geovb/geovb/tensor"
)

// The SPD retraction R_Σ(ξ) = sym(Σ + ξ + ½ ξ Σ⁻¹ ξ) and transport E ξ Eᵀ (backend/spd.go, paper 000 section 5.1)
// in one launch each for the whole batch (kernels/spd.cu spd_retract, spd_transport): one block per matrix, the
// Cholesky factor (and for the transport the Jacobi eigen-decomposition of L₁⁻¹S₂L₁⁻ᵀ) in shared memory, the result
// in scratch; spd_commit copies it to dst unless an operand was not SPD, so that dst is untouched on that error, as
// with the reference. Two status words come back. Orders whose matrices do not fit in spdMaxBytes of shared memory
// (the retraction's two: n > 62; the transport's three: n > 51) take cuda.spd.retract.batched (batched cuSOLVER
// and cuBLAS calls into scratch, the same commit, no read-back before the end) or the reference for the transport
// (above order 32 cuSOLVER's eigen-solver one matrix at a time).

const (
	// spdMaxBytes is the dynamic shared memory of one block: 62 KiB, under the 64 KiB that every GPU from compute
	// capability 7.5 grants a block with the function's limit raised, leaving room for the static reduction array.
	spdMaxBytes = 62 << 10
	// spdMaxThreads is SPD_THREADS of kernels/spd.cu.
	spdMaxThreads = 128
)

func init() {
	backend.SPDRetractOp.Register(backend.Kernel[backend.SPDRetractFunc]{
		Name: "cuda.spd.retract.block", Backend: Name, Priority: 10,
		Applies: func(b backend.Backend, s tensor.Shape) bool {
			_, ok := b.(*Backend)
			return ok && s.Rows >= 1 && spdRetractBytes(s.Rows) <= spdMaxBytes
		},
		Fn: spdRetractCUDA,
	})
	backend.SPDRetractOp.Register(backend.Kernel[backend.SPDRetractFunc]{
		Name: "cuda.spd.retract.batched", Backend: Name, Priority: 5,
		Applies: func(b backend.Backend, s tensor.Shape) bool {
			_, ok := b.(*Backend)
			return ok && s.Rows >= 1
		},
		Fn: spdRetractBatchedCUDA,
	})
	backend.SPDTransportOp.Register(backend.Kernel[backend.SPDTransportFunc]{
		Name: "cuda.spd.transport.block", Backend: Name, Priority: 10,
		Applies: func(b backend.Backend, s tensor.Shape) bool {
			_, ok := b.(*Backend)
			return ok && s.Rows >= 1 && spdTransportBytes(s.Rows) <= spdMaxBytes
		},
		Fn: spdTransportCUDA,
	})
}

// spdTransportBytes is the shared memory of spd_transport for order n: three matrices with leading dimension n | 1
// and the rotations of one Jacobi step.
func spdTransportBytes(n int) int { return 8 * (3*n*(n|1) + n + n&1) }

// spdRetractBytes is the shared memory of spd_retract for order n: L and Y with leading dimension n | 1.
func spdRetractBytes(n int) int { return 2 * 8 * n * (n | 1) }

// spdThreads is the block size for order n: a warp for n ≤ 8, up to SPD_THREADS, about one thread per column and
// a few elements of the trailing update each.
func spdThreads(n int) int {
	switch {
	case n <= 8:
		return 32
	case n <= 16:
		return 64
	}
	return spdMaxThreads
}

// spdView returns t's view with batch stride 0 when it is broadcast.
func spdView(b *Backend, t *tensor.Tensor) hotView {
	v := hotViewOf(b, t)
	if t.Batch() == 1 {
		v.bs = 0
	}
	return v
}

// spdRetractCUDA is the one-launch retraction; SPDRetract has checked the operands.
func spdRetractCUDA(be backend.Backend, dst, sigma, xi *tensor.Tensor) error {
	return spdRetractVia(be, dst, sigma, xi, func(b *Backend, dv, sv, xv hotView) (spdStatus, error) {
		return spdRetractRun(b.hot(), dv, sv, xv)
	})
}

// spdRetractBatchedCUDA is the retraction on batched cuSOLVER and cuBLAS calls, for the orders spd_retract does
// not take; SPDRetract has checked the operands.
func spdRetractBatchedCUDA(be backend.Backend, dst, sigma, xi *tensor.Tensor) error {
	return spdRetractVia(be, dst, sigma, xi, spdRetractBatchedRun)
}

// spdRetractVia checks that the operands are the backend's, runs run on the device thread and turns its status
// into the operation's error.
func spdRetractVia(be backend.Backend, dst, sigma, xi *tensor.Tensor,
	run func(b *Backend, dv, sv, xv hotView) (spdStatus, error)) error {
	b := be.(*Backend)
	const op = "spd.retract"
	if err := b.ownsNamed(op, []string{"dst", "sigma", "xi"}, dst, sigma, xi); err != nil {
		return err
	}
	dv, sv, xv := hotViewOf(b, dst), spdView(b, sigma), spdView(b, xi)
	var st spdStatus
	if err := b.do(func() error {
		var err error
		st, err = run(b, dv, sv, xv)
		return err
	}); err != nil {
		return err
	}
	if st[0] >= 0 {
		return backend.BatchErrorf(op, "sigma", st[0], backend.ErrNotPositiveDefinite, "Cholesky factorisation failed")
	}
	return nil
}

// spdTransportCUDA is the one-launch transport; SPDTransport has checked the operands.
func spdTransportCUDA(be backend.Backend, dst, s1, s2, xi *tensor.Tensor) error {
	b := be.(*Backend)
	const op = "spd.transport"
	if err := b.ownsNamed(op, []string{"dst", "s1", "s2", "xi"}, dst, s1, s2, xi); err != nil {
		return err
	}
	dv, av, bv, xv := hotViewOf(b, dst), spdView(b, s1), spdView(b, s2), spdView(b, xi)
	var st spdStatus
	if err := b.do(func() error {
		var err error
		st, err = spdTransportRun(b.hot(), dv, av, bv, xv)
		return err
	}); err != nil {
		return err
	}
	switch {
	case st[0] >= 0:
		return backend.BatchErrorf(op, "s1", st[0], backend.ErrNotPositiveDefinite, "Cholesky factorisation failed")
	case st[1] >= 0:
		return backend.BatchErrorf(op, "s2", st[1], backend.ErrNotPositiveDefinite,
			"an eigenvalue of L₁⁻¹S₂L₁⁻ᵀ is not positive")
	}
	return nil
}

// spdStatus is what the SPD kernels report: per status word, the first batch item that failed, or −1.
type spdStatus [2]int

// spdRetractRun launches spd_retract and spd_commit for dst's batch and reads the status back (word 0: Σ not SPD).
func spdRetractRun(d hotDev, dst, sigma, xi hotView) (spdStatus, error) {
	batch, n := dst.batch, dst.rows
	out, flag, err := spdScratch(d, batch, n, n)
	if err != nil {
		return spdStatus{}, err
	}
	if err := d.launch("spd", "spd_retract", hotGrid(batch, 1), hotBlock(spdThreads(n)),
		uint32(spdRetractBytes(n)), out, sigma.p, sigma.bs, sigma.rs, xi.p, xi.bs, xi.rs, flag, batch,
		n); err != nil {
		return spdStatus{}, err
	}
	return spdCommit(d, dst, out, flag)
}

// spdRetractBatchedRun is the retraction as batched library calls with no read-back before the end: Σ packed
// column-major (pack_sym; a broadcast Σ once), L = chol(Σ) by cuSOLVER's batched Cholesky, chol_check and
// spd_info_flag turning its status into the commit's status word, Y = L⁻¹ξ by a batched TRSM and ½YᵀY by a
// strided-batched GEMM, spd_retract_finish and spd_commit. A contiguous copy Xᶜ of ξ read column-major is ξᵀ, so
// the row-major Y = L⁻¹ξ is Yᶜ = Xᶜ L⁻ᵀ (TRSM from the right, L transposed) and YᵀY = Yᶜ Yᶜᵀ.
func spdRetractBatchedRun(b *Backend, dst, sigma, xi hotView) (spdStatus, error) {
	d := b.gpu
	batch, n := dst.batch, dst.rows
	nn, cs := n*n, kronFactors(sigma)
	out, flag, err := spdScratch(d, batch, n, n)
	if err != nil {
		return spdStatus{}, err
	}
	buf, err := d.Scratch(hotSlotB, int64(8*(cs+2*batch)*nn+4*cs))
	if err != nil {
		return spdStatus{}, err
	}
	l := buf
	y := l + cu.DevPtr(8*cs*nn)
	q := y + cu.DevPtr(8*batch*nn)
	info := q + cu.DevPtr(8*batch*nn)
	ptrs := make([]uint64, 0, cs+2*batch)
	for i := 0; i < cs; i++ {
		ptrs = append(ptrs, uint64(l)+uint64(8*i*nn))
	}
	for i := 0; i < batch; i++ {
		ptrs = append(ptrs, uint64(l)+uint64(8*min(i, cs-1)*nn))
	}
	for i := 0; i < batch; i++ {
		ptrs = append(ptrs, uint64(y)+uint64(8*i*nn))
	}
	grid := func(items int) [3]uint32 { return hotGrid(items, hotThreads) }
	blk := hotBlock(hotThreads)
	if err := d.launch("core", "pack_sym", grid(cs*nn), blk, 0, l, sigma.p, sigma.bs, sigma.rs, cs, n); err != nil {
		return spdStatus{}, err
	}
	arr, err := b.uploadPointers(ptrs)
	if err != nil {
		return spdStatus{}, err
	}
	steps := []func() error{
		func() error { return d.DpotrfBatched(cu.Lower, n, arr, n, info, cs) },
		func() error { return d.launch("core", "chol_check", grid(cs), blk, 0, info, l, nn, n, cs, n) },
		func() error { return d.launch("spd", "spd_info_flag", hotGrid(1, 1), blk, 0, info, cs, flag, batch) },
		func() error {
			return d.launch("core", "ew_copy", grid(batch*nn), blk, 0, y, nn, n, xi.p, xi.bs, xi.rs, batch, n, n)
		},
		func() error {
			return d.DtrsmBatched(cu.Right, cu.Lower, cu.OpT, cu.NonUnit, n, n, 1, arr+cu.DevPtr(8*cs), n,
				arr+cu.DevPtr(8*(cs+batch)), n, batch)
		},
		func() error {
			return d.DgemmStridedBatched(cu.OpN, cu.OpT, n, n, n, 0.5, y, n, int64(nn), y, n, int64(nn), 0, q, n,
				int64(nn), batch)
		},
		func() error {
			return d.launch("spd", "spd_retract_finish", grid(batch*nn), blk, 0, out, q, sigma.p, sigma.bs,
				sigma.rs, xi.p, xi.bs, xi.rs, batch, n)
		},
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return spdStatus{}, err
		}
	}
	return spdCommit(d, dst, out, flag)
}

// spdTransportRun launches spd_transport and spd_commit for dst's batch and reads the status back (word 0: S₁ not
// SPD, word 1: S₂).
func spdTransportRun(d hotDev, dst, s1, s2, xi hotView) (spdStatus, error) {
	batch, n := dst.batch, dst.rows
	out, flag, err := spdScratch(d, batch, n, n)
	if err != nil {
		return spdStatus{}, err
	}
	if err := d.launch("spd", "spd_transport", hotGrid(batch, 1), hotBlock(spdThreads(n)),
		uint32(spdTransportBytes(n)), out, s1.p, s1.bs, s1.rs, s2.p, s2.bs, s2.rs, xi.p, xi.bs, xi.rs, flag,
		batch, n); err != nil {
		return spdStatus{}, err
	}
	return spdCommit(d, dst, out, flag)
}

// spdScratch returns the contiguous batch × rows × cols result buffer of the kernels of kernels/spd.cu and their
// two zeroed status words.
func spdScratch(d hotDev, batch, rows, cols int) (out, flag cu.DevPtr, err error) {
	words := batch * rows * cols
	out, err = d.Scratch(hotSlotA, int64(8*words+8))
	if err != nil {
		return 0, 0, err
	}
	flag = out + cu.DevPtr(8*words)
	return out, flag, d.Memset0(flag, 8)
}

// spdCommit copies out into dst unless a status word says a matrix failed, and returns the status.
func spdCommit(d hotDev, dst hotView, out, flag cu.DevPtr) (spdStatus, error) {
	batch, rows, cols := dst.batch, dst.rows, dst.cols
	if err := d.launch("spd", "spd_commit", hotGrid(batch*rows*cols, hotThreads), hotBlock(hotThreads), 0, dst.p,
		dst.bs, dst.rs, out, flag, batch, rows, cols); err != nil {
		return spdStatus{}, err
	}
	var fl [2]int32
	if err := d.DtoH(unsafe.Pointer(&fl[0]), flag, 8); err != nil {
		return spdStatus{}, err
	}
	st := spdStatus{-1, -1}
	for i, f := range fl {
		if f != 0 {
			st[i] = batch - int(f)
		}
	}
	return st, nil
}
