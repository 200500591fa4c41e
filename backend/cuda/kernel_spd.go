package cuda

import (
	"unsafe"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cuda/internal/cu"
	"github.com/geovb/geovb/tensor"
)

// The SPD retraction R_Σ(ξ) = sym(Σ + ξ + ½ ξ Σ⁻¹ ξ) (backend/spd.go, paper 000 section 5.1) in one launch for the
// whole batch (kernels/spd.cu spd_retract): one block per matrix, Σ factored in shared memory, L⁻¹ξ and ½ YᵀY in the
// same block, the result in scratch; spd_commit copies it to dst unless a Σ was not SPD, so that dst is untouched on
// that error, as with the reference. One status word comes back. Orders whose two matrices do not fit in
// spdMaxBytes of shared memory (n > 61) run the reference (batched cuSOLVER and cuBLAS calls).

const (
	// spdMaxBytes is the shared memory of one block: 60 KiB, as for the small QR kernel.
	spdMaxBytes = 60 << 10
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
}

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
	b := be.(*Backend)
	const op = "spd.retract"
	if err := b.ownsNamed(op, []string{"dst", "sigma", "xi"}, dst, sigma, xi); err != nil {
		return err
	}
	dv, sv, xv := hotViewOf(b, dst), spdView(b, sigma), spdView(b, xi)
	var bad int
	if err := b.do(func() error {
		var err error
		bad, err = spdRetractRun(b.hot(), dv, sv, xv)
		return err
	}); err != nil {
		return err
	}
	if bad >= 0 {
		return backend.BatchErrorf(op, "sigma", bad, backend.ErrNotPositiveDefinite, "Cholesky factorisation failed")
	}
	return nil
}

// spdRetractRun launches spd_retract and spd_commit for dst's batch and reads the status back: the first batch
// item whose Σ is not SPD, or −1.
func spdRetractRun(d hotDev, dst, sigma, xi hotView) (bad int, err error) {
	batch, n := dst.batch, dst.rows
	out, flag, err := spdScratch(d, batch, n)
	if err != nil {
		return 0, err
	}
	if err := d.launch("spd", "spd_retract", hotGrid(batch, 1), hotBlock(spdThreads(n)),
		uint32(spdRetractBytes(n)), out, sigma.p, sigma.bs, sigma.rs, xi.p, xi.bs, xi.rs, flag, batch,
		n); err != nil {
		return 0, err
	}
	return spdCommit(d, dst, out, flag)
}

// spdScratch returns the contiguous batch × n × n result buffer of the SPD kernels and their zeroed status word.
func spdScratch(d hotDev, batch, n int) (out, flag cu.DevPtr, err error) {
	words := batch * n * n
	out, err = d.Scratch(hotSlotA, int64(8*words+8))
	if err != nil {
		return 0, 0, err
	}
	flag = out + cu.DevPtr(8*words)
	return out, flag, d.Memset0(flag, 4)
}

// spdCommit copies out into dst unless the status word flag says a matrix failed, and returns that matrix (or −1).
func spdCommit(d hotDev, dst hotView, out, flag cu.DevPtr) (int, error) {
	batch, n := dst.batch, dst.rows
	if err := d.launch("spd", "spd_commit", hotGrid(batch*n*n, hotThreads), hotBlock(hotThreads), 0, dst.p, dst.bs,
		dst.rs, out, flag, batch, n); err != nil {
		return 0, err
	}
	var fl int32
	if err := d.DtoH(unsafe.Pointer(&fl), flag, 4); err != nil {
		return 0, err
	}
	if fl == 0 {
		return -1, nil
	}
	return batch - int(fl), nil
}
