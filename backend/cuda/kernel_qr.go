package cuda

import (
	"unsafe"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cuda/internal/cu"
	"github.com/geovb/geovb/tensor"
)

// Kernels for the Stiefel QR retraction qf(X + tV) with diag(R) > 0 (paper 000 eq. (3.9)), the same
// two as backend/cpu/kernel_qr.go decides between:
//   - cuda.qr_retract.small: every matrix of the batch in one launch (kernels/qr.cu qr_small_warp / qr_small_block),
//     one warp or one block per matrix, the matrix in shared memory, CGS2 in float64 with the Householder fallback
//     and the sign fix inside the kernel. X + tV is formed while loading; V may be broadcast (batch 1).
//   - cuda.qr_retract.tall: one n×p matrix with n ≫ p by CholeskyQR2 on cuBLAS and cuSOLVER (Gram matrix by SYRK,
//     Cholesky, Q = A R⁻¹ by TRSM, twice), falling back to the backend's Householder QR when the Gram matrix is too
//     ill-conditioned, with the tests of the CPU kernel evaluated on the device so that only one flag comes back.

// Shape limits, as the CPU kernels draw them.
const (
	qrTallMinRows = 10000
	qrTallMaxCols = 256
	// qrSmallMaxBytes is the shared memory one matrix may take in the small kernel: 60 KiB, below the 64 KiB that
	// every GPU from compute capability 7.5 grants a block (with the function's limit raised), leaving room for
	// the kernel's static reduction array.
	qrSmallMaxBytes = 60 << 10
	// qrWarpMaxRows is the largest n given to one warp (at most 8 rows per lane); taller matrices get a block.
	qrWarpMaxRows   = 256
	qrWarpsPerBlock = 8
)

func init() {
	backend.QRRetractOp.Register(backend.Kernel[backend.QRRetractFunc]{
		Name: "cuda.qr_retract.small", Backend: Name, Priority: 10,
		Applies: func(b backend.Backend, s tensor.Shape) bool {
			_, ok := b.(*Backend)
			return ok && s.Rows >= s.Cols && s.Cols >= 1 && 8*qrGroupDoubles(s.Rows, s.Cols) <= qrSmallMaxBytes
		},
		Fn: qrRetractSmallCUDA,
	})
	backend.QRRetractOp.Register(backend.Kernel[backend.QRRetractFunc]{
		Name: "cuda.qr_retract.tall", Backend: Name, Priority: 20,
		Applies: func(b backend.Backend, s tensor.Shape) bool {
			_, ok := b.(*Backend)
			return ok && s.Batch == 1 && s.Rows >= qrTallMinRows && s.Cols >= 1 && s.Cols <= qrTallMaxCols
		},
		Fn: qrRetractTallCUDA,
	})
}

// qrLD is the leading dimension of a matrix in shared memory: odd, so that the transposing load and store touch
// distinct banks.
func qrLD(n int) int { return n | 1 }

// qrGroupDoubles is the shared memory of one matrix in the small kernel: A (ld·p), the CGS coefficients, τ and
// the signs (p each).
func qrGroupDoubles(n, p int) int { return qrLD(n)*p + 3*p }

// qrOperands returns the views of dst, x and v, v's batch stride 0 when it is broadcast.
func qrOperands(b *Backend, dst, x, v *tensor.Tensor) (dv, xv, vv hotView) {
	dv, xv, vv = hotViewOf(b, dst), hotViewOf(b, x), hotViewOf(b, v)
	if v != nil && v.Batch() == 1 {
		vv.bs = 0
	}
	return dv, xv, vv
}

// qrRetractSmallCUDA is the batched small-matrix kernel. QRRetract has checked the operands.
func qrRetractSmallCUDA(be backend.Backend, dst, x, v *tensor.Tensor, t float64) error {
	b := be.(*Backend)
	if err := b.ownsNamed("stiefel.qr_retract", []string{"dst", "x", "v"}, dst, x, v); err != nil {
		return err
	}
	if x.Len() == 0 {
		return nil
	}
	dv, xv, vv := qrOperands(b, dst, x, v)
	return b.queue("stiefel.qr_retract", func() error { return qrSmallRun(b.hot(), dv, xv, vv, t, "") })
}

// qrSmallRun launches qr_small_warp (several matrices per block) or qr_small_block (one per block); variant ""
// chooses by shape. vv.p = 0 means no V.
func qrSmallRun(d hotDev, dst, x, v hotView, t float64, variant string) error {
	n, p, batch := x.rows, x.cols, x.batch
	bytes := 8 * qrGroupDoubles(n, p)
	if variant == "" {
		variant = "block"
		if n <= qrWarpMaxRows && bytes <= hotShmemDefault {
			variant = "warp"
		}
	}
	args := []any{dst.p, dst.bs, dst.rs, x.p, x.bs, x.rs, v.p, v.bs, v.rs, t, batch, n, p}
	if variant == "warp" {
		w := min(qrWarpsPerBlock, max(hotShmemDefault/bytes, 1))
		return d.launch("qr", "qr_small_warp", hotGrid(batch, w), hotBlock(32*w), uint32(w*bytes), args...)
	}
	return d.launch("qr", "qr_small_block", hotGrid(batch, 1), hotBlock(hotThreads), uint32(bytes), args...)
}

// qrRetractTallCUDA is CholeskyQR2 for one tall-skinny matrix. QRRetract has checked the operands.
func qrRetractTallCUDA(be backend.Backend, dst, x, v *tensor.Tensor, t float64) error {
	b := be.(*Backend)
	if err := b.ownsNamed("stiefel.qr_retract", []string{"dst", "x", "v"}, dst, x, v); err != nil {
		return err
	}
	dv, xv, vv := qrOperands(b, dst, x, v)
	if _, ok := dv.ld(); !ok {
		// A destination whose rows overlap is no cuBLAS matrix.
		return backend.QRRetractOp.Reference()(be, dst, x, v, t)
	}
	var fallback bool
	err := b.do(func() error {
		var err error
		fallback, err = qrTallRun(b.hot(), dv, xv, vv, t)
		return err
	})
	if err != nil {
		return err
	}
	if fallback {
		// dst holds X + tV or Q₁ = (X + tV)R₁⁻¹, whose sign-fixed Q factor is qf(X + tV) as well.
		return b.QR(dst, nil, dst)
	}
	return nil
}

// qrTallRun computes dst = qf(x + t·v) for one n×p matrix by CholeskyQR2: A = X + tV in dst, G = AᵀA,
// G = R₁ᵀR₁, Q₁ = A R₁⁻¹, then the same on Q₁, Q = Q₁ R₂⁻¹. R = R₂R₁ has a positive diagonal, so Q needs no sign
// fix. It reports fallback when a test of backend/cpu qrRetractTall failed (Cholesky failure, max/min diag(R₁)
// ≥ 1e7, Q₁ᵀQ₁ more than 0.5 from I): dst then holds A or Q₁ and the caller finishes with Householder QR.
//
// A row-major n×p matrix with row stride ld is, column-major, its p×n transpose Aᶜ with leading dimension ld, so
// AᵀA = Aᶜ Aᶜᵀ (SYRK, no transpose, upper triangle of the column-major p×p result), the Cholesky factor R of the
// column-major upper triangle is the R of A = QR, and Q = A R⁻¹ ⇔ Qᶜ = R⁻ᵀ Aᶜ (TRSM from the left, R transposed).
func qrTallRun(d hotDev, dst, x, v hotView, t float64) (fallback bool, err error) {
	n, p := dst.rows, dst.cols
	ldd, _ := dst.ld()
	sc, err := d.Scratch(hotSlotA, int64(8*p*p+16))
	if err != nil {
		return false, err
	}
	g := sc
	info := sc + cu.DevPtr(8*p*p)
	flag := info + 4
	if err := d.Memset0(info, 8); err != nil {
		return false, err
	}
	if v.p != 0 || x.p != dst.p || x.rs != dst.rs {
		if err := d.launch("qr", "qr_axpy", hotGrid(n*p, hotThreads), hotBlock(hotThreads), 0,
			dst.p, dst.rs, x.p, x.rs, v.p, v.rs, t, n, p); err != nil {
			return false, err
		}
	}
	check := func(stage int32) error {
		return d.launch("qr", "qr_tall_check", hotGrid(1, 1), hotBlock(hotThreads), 0, g, info, flag, p, stage)
	}
	steps := []func() error{
		func() error { return d.Dsyrk(cu.Upper, cu.OpN, p, n, 1, dst.p, ldd, 0, g, p) },
		func() error { return d.Dpotrf(cu.Upper, p, g, p, info) },
		func() error { return check(1) },
		func() error { return d.Dtrsm(cu.Left, cu.Upper, cu.OpT, cu.NonUnit, p, n, 1, g, p, dst.p, ldd) },
		func() error { return d.Dsyrk(cu.Upper, cu.OpN, p, n, 1, dst.p, ldd, 0, g, p) },
		func() error { return check(2) },
		func() error { return d.Dpotrf(cu.Upper, p, g, p, info) },
		func() error { return check(3) },
		func() error { return d.Dtrsm(cu.Left, cu.Upper, cu.OpT, cu.NonUnit, p, n, 1, g, p, dst.p, ldd) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return false, err
		}
	}
	var fl int32
	if err := d.DtoH(unsafe.Pointer(&fl), flag, 4); err != nil {
		return false, err
	}
	return fl != 0, nil
}
