package cuda

import (
	"unsafe"

	"github.com/geovb/geovb/backend/cuda/internal/cu"
	"github.com/geovb/geovb/tensor"
)

// The hot-operation kernels (random fills, sphere, QR retraction, low-rank algebra) are written in two layers: a
// registered function that checks its operands and turns tensors into hotViews, and a run function that issues the
// launches and library calls through hotDev. On a GPU hotDev is the backend's device; the tests implement it on the
// host, with each CUDA kernel emulated thread by thread and the cuBLAS/cuSOLVER calls done by host routines, so the
// index arithmetic, the launch arguments and the column-major bookkeeping are checked without a GPU.

// hotDev is what the run functions need from a device. Every method is called inside Backend.do.
type hotDev interface {
	// launch runs kernel name of kernels/<module>.cu (see cu.Device.Launch for the argument types).
	launch(module, name string, grid, block [3]uint32, shmem uint32, args ...any) error
	Scratch(slot int, bytes int64) (cu.DevPtr, error)
	Memset0(dst cu.DevPtr, bytes int64) error
	DtoH(dst unsafe.Pointer, src cu.DevPtr, bytes int64) error
	Dgemm(ta, tb cu.Op, m, n, k int, alpha float64, a cu.DevPtr, lda int, b cu.DevPtr, ldb int, beta float64,
		c cu.DevPtr, ldc int) error
	Dsyrk(uplo cu.Fill, trans cu.Op, n, k int, alpha float64, a cu.DevPtr, lda int, beta float64, c cu.DevPtr,
		ldc int) error
	Dtrsm(side cu.Side, uplo cu.Fill, trans cu.Op, diag cu.Diag, m, n int, alpha float64, a cu.DevPtr, lda int,
		b cu.DevPtr, ldb int) error
	Dpotrf(uplo cu.Fill, n int, a cu.DevPtr, lda int, info cu.DevPtr) error
}

// Scratch slots of the hot-operation kernels (0–2 are the core's, 6–7 cuSOLVER's workspaces).
const (
	hotSlotA = 3
	hotSlotB = 4
	hotSlotC = 5
)

// hotThreads is the block size of every hot kernel except the small QR warp variant.
const hotThreads = 256

// hotMaxGrid caps one-dimensional grids; the kernels loop over the rest (grid-stride).
const hotMaxGrid = 1 << 20

// hotShmemDefault is the dynamic shared memory a launch gets without raising the function's limit.
const hotShmemDefault = 48 << 10

// hotRun is hotDev on the binding's device, with the kernels of the embedded modules (the backend's gpu on
// hardware).
type hotRun struct {
	*cu.Device
	b *Backend
}

// hot returns the device the hot-operation kernels issue work to (the emulation in tests).
func (b *Backend) hot() hotDev { return b.gpu }

func (h hotRun) launch(module, name string, grid, block [3]uint32, shmem uint32, args ...any) error {
	fn, err := h.b.kernel(module, name)
	if err != nil {
		return err
	}
	if shmem > hotShmemDefault {
		if err := fn.SetMaxDynamicShared(int(shmem)); err != nil {
			return err
		}
	}
	return h.Launch(fn, grid, block, shmem, args...)
}

// hotView is a tensor as the hot kernels see it: the address of element (0, 0, 0) and the strides in elements.
type hotView struct {
	p                 cu.DevPtr
	batch, rows, cols int
	bs, rs            int
}

// hotViewOf returns t's view (the zero view for nil).
func hotViewOf(b *Backend, t *tensor.Tensor) hotView {
	if t == nil {
		return hotView{}
	}
	return hotView{p: b.ptr(t), batch: t.Batch(), rows: t.Rows(), cols: t.Cols(), bs: t.BatchStride(),
		rs: t.RowStride()}
}

// row returns the address of row i of the first matrix.
func (v hotView) row(i int) cu.DevPtr { return v.p + cu.DevPtr(8*i*v.rs) }

// contiguous reports whether element (b, i, j) sits at (b·rows + i)·cols + j.
func (v hotView) contiguous() bool {
	return (v.rows <= 1 || v.rs == v.cols) && (v.batch <= 1 || v.bs == v.rows*v.cols)
}

// ld returns the leading dimension of the first matrix read column-major by cuBLAS (its transpose, cols × rows) and
// whether cuBLAS can take it: the row stride must be at least the row length unless there is one row.
func (v hotView) ld() (int, bool) {
	if v.rows <= 1 {
		return max(v.rs, v.cols, 1), true
	}
	return v.rs, v.rs >= v.cols && v.rs >= 1
}

// hotGrid returns the grid for n work items with per items per block, at least 1 and at most hotMaxGrid.
func hotGrid(n, per int) [3]uint32 {
	g := (n + per - 1) / per
	return [3]uint32{uint32(min(max(g, 1), hotMaxGrid)), 1, 1}
}

// hotBlock is a one-dimensional block of n threads.
func hotBlock(n int) [3]uint32 { return [3]uint32{uint32(n), 1, 1} }

// hotBool is the int argument of a kernel flag.
func hotBool(v bool) int32 {
	if v {
		return 1
	}
	return 0
}
