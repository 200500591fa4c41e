package cu

import (
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego"
)

// cusolverAPI holds the resolved cuSOLVER dense entry points (cusolverDn.h, cusolver_common.h).
type cusolverAPI struct {
	cusolverDnCreate, cusolverDnDestroy, cusolverDnSetStream, cusolverGetVersion                uintptr
	cusolverDnDpotrfBatched, cusolverDnDpotrfBufferSize, cusolverDnDpotrf                       uintptr
	cusolverDnDgeqrfBufferSize, cusolverDnDgeqrf, cusolverDnDorgqrBufferSize, cusolverDnDorgqr  uintptr
	cusolverDnDsyevdBufferSize, cusolverDnDsyevd                                                uintptr
	cusolverDnCreateSyevjInfo, cusolverDnDestroySyevjInfo, cusolverDnXsyevjSetTolerance         uintptr
	cusolverDnXsyevjSetMaxSweeps, cusolverDnXsyevjSetSortEig, cusolverDnDsyevjBatchedBufferSize uintptr
	cusolverDnDsyevjBatched                                                                     uintptr
	setTolerance                                                                                func(info uintptr, tol float64) int32 // takes a double by value
}

func (a *cusolverAPI) symbols() []symbol {
	return []symbol{
		{name: "cusolverDnCreate", ptr: &a.cusolverDnCreate},
		{name: "cusolverDnDestroy", ptr: &a.cusolverDnDestroy},
		{name: "cusolverDnSetStream", ptr: &a.cusolverDnSetStream},
		{name: "cusolverGetVersion", ptr: &a.cusolverGetVersion},
		{name: "cusolverDnDpotrfBatched", ptr: &a.cusolverDnDpotrfBatched},
		{name: "cusolverDnDpotrf_bufferSize", ptr: &a.cusolverDnDpotrfBufferSize},
		{name: "cusolverDnDpotrf", ptr: &a.cusolverDnDpotrf},
		{name: "cusolverDnDgeqrf_bufferSize", ptr: &a.cusolverDnDgeqrfBufferSize},
		{name: "cusolverDnDgeqrf", ptr: &a.cusolverDnDgeqrf},
		{name: "cusolverDnDorgqr_bufferSize", ptr: &a.cusolverDnDorgqrBufferSize},
		{name: "cusolverDnDorgqr", ptr: &a.cusolverDnDorgqr},
		{name: "cusolverDnDsyevd_bufferSize", ptr: &a.cusolverDnDsyevdBufferSize},
		{name: "cusolverDnDsyevd", ptr: &a.cusolverDnDsyevd},
		{name: "cusolverDnCreateSyevjInfo", ptr: &a.cusolverDnCreateSyevjInfo},
		{name: "cusolverDnDestroySyevjInfo", ptr: &a.cusolverDnDestroySyevjInfo},
		{name: "cusolverDnXsyevjSetTolerance", ptr: &a.cusolverDnXsyevjSetTolerance},
		{name: "cusolverDnXsyevjSetMaxSweeps", ptr: &a.cusolverDnXsyevjSetMaxSweeps},
		{name: "cusolverDnXsyevjSetSortEig", ptr: &a.cusolverDnXsyevjSetSortEig},
		{name: "cusolverDnDsyevjBatched_bufferSize", ptr: &a.cusolverDnDsyevjBatchedBufferSize},
		{name: "cusolverDnDsyevjBatched", ptr: &a.cusolverDnDsyevjBatched},
	}
}

// bind finishes the table after resolve: cusolverDnXsyevjSetTolerance takes a double by value, which SyscallN
// cannot pass (it fills integer registers only), so it gets a typed purego function.
func (a *cusolverAPI) bind() {
	purego.RegisterFunc(&a.setTolerance, a.cusolverDnXsyevjSetTolerance)
}

// Scratch slots of the cuSOLVER workspaces (slots 0..5 belong to the backend).
const (
	slotFactor = 6 // Dpotrf, Dgeqrf, Dorgqr
	slotEigen  = 7 // Dsyevd, DsyevjBatched
)

// Parameters of DsyevjBatched.
const (
	syevjTolerance = 1e-14
	syevjMaxSweeps = 100
	syevjMaxN      = 32 // cusolverDnDsyevjBatched handles n ≤ 32
)

// eigMode is cusolverEigMode_t.
func eigMode(vectors bool) uintptr {
	if vectors {
		return 1 // CUSOLVER_EIG_MODE_VECTOR
	}
	return 0 // CUSOLVER_EIG_MODE_NOVECTOR
}

// workspace returns a device buffer of lwork doubles from Scratch slot (at least one element, so the pointer is
// never null).
func (d *Device) workspace(slot int, lwork int32) (DevPtr, error) {
	n := int64(lwork)
	if n < 1 {
		n = 1
	}
	return d.Scratch(slot, 8*n)
}

// DpotrfBatched computes the Cholesky factors of batch n×n symmetric positive definite matrices in place
// (cusolverDnDpotrfBatched); aArray is a device array of batch device pointers. info is a device array of batch
// ints: 0, or i > 0 when the leading minor of order i of that matrix is not positive definite.
func (d *Device) DpotrfBatched(uplo Fill, n int, aArray DevPtr, lda int, info DevPtr, batch int) error {
	const fn = "cusolverDnDpotrfBatched"
	if err := checkInts(fn, n, lda, batch); err != nil {
		return err
	}
	r := call(d.sol.cusolverDnDpotrfBatched, d.solH, uintptr(uplo), uintptr(n), uintptr(aArray), uintptr(lda), uintptr(info), uintptr(batch))
	return solverError(fn, r)
}

// Dpotrf computes the Cholesky factor of an n×n symmetric positive definite matrix in place (cusolverDnDpotrf),
// with its workspace from Scratch slot 6. info is a device int: 0, or i > 0 when the leading minor of order i is
// not positive definite.
func (d *Device) Dpotrf(uplo Fill, n int, a DevPtr, lda int, info DevPtr) error {
	const fn = "cusolverDnDpotrf"
	if err := checkInts(fn, n, lda); err != nil {
		return err
	}
	var lwork int32
	r := call(d.sol.cusolverDnDpotrfBufferSize, d.solH, uintptr(uplo), uintptr(n), uintptr(a), uintptr(lda), uintptr(unsafe.Pointer(&lwork)))
	if err := solverError("cusolverDnDpotrf_bufferSize", r); err != nil {
		return err
	}
	ws, err := d.workspace(slotFactor, lwork)
	if err != nil {
		return err
	}
	r = call(d.sol.cusolverDnDpotrf, d.solH, uintptr(uplo), uintptr(n), uintptr(a), uintptr(lda), uintptr(ws), uintptr(lwork), uintptr(info))
	return solverError(fn, r)
}

// Dgeqrf computes the QR factorisation of an m×n matrix in place (cusolverDnDgeqrf): R in the upper triangle,
// Householder vectors below it and their scalars in tau (min(m, n) doubles), as LAPACK. Workspace from Scratch slot
// 6; info is a device int (0, or -i for a bad argument i).
func (d *Device) Dgeqrf(m, n int, a DevPtr, lda int, tau DevPtr, info DevPtr) error {
	const fn = "cusolverDnDgeqrf"
	if err := checkInts(fn, m, n, lda); err != nil {
		return err
	}
	var lwork int32
	r := call(d.sol.cusolverDnDgeqrfBufferSize, d.solH, uintptr(m), uintptr(n), uintptr(a), uintptr(lda), uintptr(unsafe.Pointer(&lwork)))
	if err := solverError("cusolverDnDgeqrf_bufferSize", r); err != nil {
		return err
	}
	ws, err := d.workspace(slotFactor, lwork)
	if err != nil {
		return err
	}
	r = call(d.sol.cusolverDnDgeqrf, d.solH, uintptr(m), uintptr(n), uintptr(a), uintptr(lda), uintptr(tau), uintptr(ws), uintptr(lwork), uintptr(info))
	return solverError(fn, r)
}

// Dorgqr overwrites the output of Dgeqrf with the first n columns of Q, m×n with k reflectors (cusolverDnDorgqr),
// as LAPACK. Workspace from Scratch slot 6; info is a device int.
func (d *Device) Dorgqr(m, n, k int, a DevPtr, lda int, tau DevPtr, info DevPtr) error {
	const fn = "cusolverDnDorgqr"
	if err := checkInts(fn, m, n, k, lda); err != nil {
		return err
	}
	var lwork int32
	r := call(d.sol.cusolverDnDorgqrBufferSize, d.solH, uintptr(m), uintptr(n), uintptr(k), uintptr(a), uintptr(lda), uintptr(tau), uintptr(unsafe.Pointer(&lwork)))
	if err := solverError("cusolverDnDorgqr_bufferSize", r); err != nil {
		return err
	}
	ws, err := d.workspace(slotFactor, lwork)
	if err != nil {
		return err
	}
	r = call(d.sol.cusolverDnDorgqr, d.solH, uintptr(m), uintptr(n), uintptr(k), uintptr(a), uintptr(lda), uintptr(tau), uintptr(ws), uintptr(lwork), uintptr(info))
	return solverError(fn, r)
}

// Dsyevd computes the eigenvalues of an n×n symmetric matrix, ascending into w, and with vectors the orthonormal
// eigenvectors into the columns of a (cusolverDnDsyevd, divide and conquer). Workspace from Scratch slot 7; info is a
// device int (i > 0: i off-diagonal elements did not converge).
func (d *Device) Dsyevd(vectors bool, uplo Fill, n int, a DevPtr, lda int, w DevPtr, info DevPtr) error {
	const fn = "cusolverDnDsyevd"
	if err := checkInts(fn, n, lda); err != nil {
		return err
	}
	var lwork int32
	r := call(d.sol.cusolverDnDsyevdBufferSize, d.solH, eigMode(vectors), uintptr(uplo), uintptr(n), uintptr(a), uintptr(lda), uintptr(w), uintptr(unsafe.Pointer(&lwork)))
	if err := solverError("cusolverDnDsyevd_bufferSize", r); err != nil {
		return err
	}
	ws, err := d.workspace(slotEigen, lwork)
	if err != nil {
		return err
	}
	r = call(d.sol.cusolverDnDsyevd, d.solH, eigMode(vectors), uintptr(uplo), uintptr(n), uintptr(a), uintptr(lda), uintptr(w), uintptr(ws), uintptr(lwork), uintptr(info))
	return solverError(fn, r)
}

// DsyevjBatched computes the eigen decompositions of batch n×n symmetric matrices, n ≤ 32, stored contiguously
// (matrix i at a + i·lda·n) with the eigenvalues of matrix i at w + i·n (cusolverDnDsyevjBatched, Jacobi: one
// launch for many small matrices). The Jacobi method runs to a tolerance of 1e-14 relative, at most 100 sweeps, and
// sorts the eigenvalues ascending (with their vectors). Workspace from Scratch slot 7; info is a device array of
// batch ints (0, or > 0 when that matrix did not converge).
func (d *Device) DsyevjBatched(vectors bool, uplo Fill, n int, a DevPtr, lda int, w DevPtr, info DevPtr, batch int) error {
	const fn = "cusolverDnDsyevjBatched"
	if err := checkInts(fn, n, lda, batch); err != nil {
		return err
	}
	if n > syevjMaxN {
		return fmt.Errorf("cu: %s: n = %d, the batched Jacobi solver handles n ≤ %d", fn, n, syevjMaxN)
	}
	var params uintptr
	if err := solverError("cusolverDnCreateSyevjInfo", call(d.sol.cusolverDnCreateSyevjInfo, uintptr(unsafe.Pointer(&params)))); err != nil {
		return err
	}
	defer call(d.sol.cusolverDnDestroySyevjInfo, params)
	if err := solverError("cusolverDnXsyevjSetTolerance", d.sol.setTolerance(params, syevjTolerance)); err != nil {
		return err
	}
	if err := solverError("cusolverDnXsyevjSetMaxSweeps", call(d.sol.cusolverDnXsyevjSetMaxSweeps, params, syevjMaxSweeps)); err != nil {
		return err
	}
	if err := solverError("cusolverDnXsyevjSetSortEig", call(d.sol.cusolverDnXsyevjSetSortEig, params, 1)); err != nil {
		return err
	}
	var lwork int32
	r := call(d.sol.cusolverDnDsyevjBatchedBufferSize, d.solH, eigMode(vectors), uintptr(uplo), uintptr(n), uintptr(a), uintptr(lda), uintptr(w), uintptr(unsafe.Pointer(&lwork)), params, uintptr(batch))
	if err := solverError("cusolverDnDsyevjBatched_bufferSize", r); err != nil {
		return err
	}
	ws, err := d.workspace(slotEigen, lwork)
	if err != nil {
		return err
	}
	r = call(d.sol.cusolverDnDsyevjBatched, d.solH, eigMode(vectors), uintptr(uplo), uintptr(n), uintptr(a), uintptr(lda), uintptr(w), uintptr(ws), uintptr(lwork), uintptr(info), params, uintptr(batch))
	return solverError(fn, r)
}
