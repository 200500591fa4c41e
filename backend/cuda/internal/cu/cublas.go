package cu

import (
	"fmt"
	"math"
	"unsafe"
)

// cublasAPI holds the resolved cuBLAS entry points (cublas_api.h, the v2 API).
type cublasAPI struct {
	cublasCreate, cublasDestroy, cublasSetStream, cublasGetVersion, cublasSetPointerMode uintptr
	cublasDgemm, cublasDgemmStridedBatched, cublasDsyrk, cublasDtrsm, cublasDtrsmBatched uintptr
	cublasDtrmm, cublasDgeam                                                             uintptr
}

func (a *cublasAPI) symbols() []symbol {
	return []symbol{
		{name: "cublasCreate_v2", ptr: &a.cublasCreate},
		{name: "cublasDestroy_v2", ptr: &a.cublasDestroy},
		{name: "cublasSetStream_v2", ptr: &a.cublasSetStream},
		{name: "cublasGetVersion_v2", ptr: &a.cublasGetVersion},
		{name: "cublasSetPointerMode_v2", ptr: &a.cublasSetPointerMode},
		{name: "cublasDgemm_v2", ptr: &a.cublasDgemm},
		{name: "cublasDgemmStridedBatched", ptr: &a.cublasDgemmStridedBatched},
		{name: "cublasDsyrk_v2", ptr: &a.cublasDsyrk},
		{name: "cublasDtrsm_v2", ptr: &a.cublasDtrsm},
		{name: "cublasDtrsmBatched", ptr: &a.cublasDtrsmBatched},
		{name: "cublasDtrmm_v2", ptr: &a.cublasDtrmm},
		{name: "cublasDgeam", ptr: &a.cublasDgeam},
	}
}

// Op says whether a cuBLAS operand is used as stored or transposed (cublasOperation_t).
type Op int

// Operations; the values are cuBLAS's.
const (
	OpN Op = 0 // CUBLAS_OP_N: as stored
	OpT Op = 1 // CUBLAS_OP_T: transposed
)

// Fill says which triangle of a column-major matrix cuBLAS and cuSOLVER read or write (cublasFillMode_t). The
// backend's row-major lower triangle is the column-major Upper one.
type Fill int

// Fill modes; the values are cuBLAS's.
const (
	Lower Fill = 0 // CUBLAS_FILL_MODE_LOWER
	Upper Fill = 1 // CUBLAS_FILL_MODE_UPPER
)

// Side says whether the triangular matrix multiplies from the left or the right (cublasSideMode_t).
type Side int

// Sides; the values are cuBLAS's.
const (
	Left  Side = 0 // CUBLAS_SIDE_LEFT: op(A) X = alpha B
	Right Side = 1 // CUBLAS_SIDE_RIGHT: X op(A) = alpha B
)

// Diag says whether a triangular matrix has an implicit unit diagonal (cublasDiagType_t).
type Diag int

// Diagonal kinds; the values are cuBLAS's.
const (
	NonUnit Diag = 0 // CUBLAS_DIAG_NON_UNIT: the diagonal is read
	Unit    Diag = 1 // CUBLAS_DIAG_UNIT: the diagonal is taken as ones and not read
)

const pointerModeHost = 0 // CUBLAS_POINTER_MODE_HOST

// checkInts rejects sizes that are negative or do not fit the C int the libraries take, instead of letting them
// wrap around.
func checkInts(fn string, v ...int) error {
	for i, x := range v {
		if x < 0 || x > math.MaxInt32 {
			return fmt.Errorf("cu: %s: size argument %d is %d, outside 0..%d", fn, i, x, math.MaxInt32)
		}
	}
	return nil
}

// Dgemm computes C = alpha op(A) op(B) + beta C with op(A) m×k, op(B) k×n and C m×n, column-major
// (cublasDgemm_v2), on the device's stream.
func (d *Device) Dgemm(ta, tb Op, m, n, k int, alpha float64, a DevPtr, lda int, b DevPtr, ldb int, beta float64, c DevPtr, ldc int) error {
	const fn = "cublasDgemm_v2"
	if err := checkInts(fn, m, n, k, lda, ldb, ldc); err != nil {
		return err
	}
	r := call(d.blas.cublasDgemm, d.blasH, uintptr(ta), uintptr(tb), uintptr(m), uintptr(n), uintptr(k),
		uintptr(unsafe.Pointer(&alpha)), uintptr(a), uintptr(lda), uintptr(b), uintptr(ldb), uintptr(unsafe.Pointer(&beta)), uintptr(c), uintptr(ldc))
	return blasError(fn, r)
}

// DgemmStridedBatched computes batch independent products C_i = alpha op(A_i) op(B_i) + beta C_i where
// X_i starts sx elements after X_{i-1} (cublasDgemmStridedBatched); one launch for many small products.
func (d *Device) DgemmStridedBatched(ta, tb Op, m, n, k int, alpha float64, a DevPtr, lda int, sa int64, b DevPtr, ldb int, sb int64, beta float64, c DevPtr, ldc int, sc int64, batch int) error {
	const fn = "cublasDgemmStridedBatched"
	if err := checkInts(fn, m, n, k, lda, ldb, ldc, batch); err != nil {
		return err
	}
	r := call(d.blas.cublasDgemmStridedBatched, d.blasH, uintptr(ta), uintptr(tb), uintptr(m), uintptr(n), uintptr(k),
		uintptr(unsafe.Pointer(&alpha)), uintptr(a), uintptr(lda), uintptr(sa), uintptr(b), uintptr(ldb), uintptr(sb),
		uintptr(unsafe.Pointer(&beta)), uintptr(c), uintptr(ldc), uintptr(sc), uintptr(batch))
	return blasError(fn, r)
}

// Dsyrk computes the uplo triangle of C = alpha op(A) op(A)ᵀ + beta C, C n×n and op(A) n×k (cublasDsyrk_v2): half
// the work of a Dgemm for a symmetric result.
func (d *Device) Dsyrk(uplo Fill, trans Op, n, k int, alpha float64, a DevPtr, lda int, beta float64, c DevPtr, ldc int) error {
	const fn = "cublasDsyrk_v2"
	if err := checkInts(fn, n, k, lda, ldc); err != nil {
		return err
	}
	r := call(d.blas.cublasDsyrk, d.blasH, uintptr(uplo), uintptr(trans), uintptr(n), uintptr(k),
		uintptr(unsafe.Pointer(&alpha)), uintptr(a), uintptr(lda), uintptr(unsafe.Pointer(&beta)), uintptr(c), uintptr(ldc))
	return blasError(fn, r)
}

// Dtrsm solves op(A) X = alpha B (side Left) or X op(A) = alpha B (side Right) for X with A triangular, overwriting
// the m×n matrix B (cublasDtrsm_v2).
func (d *Device) Dtrsm(side Side, uplo Fill, trans Op, diag Diag, m, n int, alpha float64, a DevPtr, lda int, b DevPtr, ldb int) error {
	const fn = "cublasDtrsm_v2"
	if err := checkInts(fn, m, n, lda, ldb); err != nil {
		return err
	}
	r := call(d.blas.cublasDtrsm, d.blasH, uintptr(side), uintptr(uplo), uintptr(trans), uintptr(diag),
		uintptr(m), uintptr(n), uintptr(unsafe.Pointer(&alpha)), uintptr(a), uintptr(lda), uintptr(b), uintptr(ldb))
	return blasError(fn, r)
}

// DtrsmBatched is Dtrsm on batch independent systems (cublasDtrsmBatched). aArray and bArray are device arrays of
// batch device pointers, one per matrix; the caller builds them (cuBLAS reads them on the device).
func (d *Device) DtrsmBatched(side Side, uplo Fill, trans Op, diag Diag, m, n int, alpha float64, aArray DevPtr, lda int, bArray DevPtr, ldb int, batch int) error {
	const fn = "cublasDtrsmBatched"
	if err := checkInts(fn, m, n, lda, ldb, batch); err != nil {
		return err
	}
	r := call(d.blas.cublasDtrsmBatched, d.blasH, uintptr(side), uintptr(uplo), uintptr(trans), uintptr(diag),
		uintptr(m), uintptr(n), uintptr(unsafe.Pointer(&alpha)), uintptr(aArray), uintptr(lda), uintptr(bArray), uintptr(ldb), uintptr(batch))
	return blasError(fn, r)
}

// Dtrmm computes C = alpha op(A) B (side Left) or C = alpha B op(A) (side Right) with A triangular and B, C m×n
// (cublasDtrmm_v2). It is out of place, as in cuBLAS's v2 API; pass c == b to overwrite B.
func (d *Device) Dtrmm(side Side, uplo Fill, trans Op, diag Diag, m, n int, alpha float64, a DevPtr, lda int, b DevPtr, ldb int, c DevPtr, ldc int) error {
	const fn = "cublasDtrmm_v2"
	if err := checkInts(fn, m, n, lda, ldb, ldc); err != nil {
		return err
	}
	r := call(d.blas.cublasDtrmm, d.blasH, uintptr(side), uintptr(uplo), uintptr(trans), uintptr(diag),
		uintptr(m), uintptr(n), uintptr(unsafe.Pointer(&alpha)), uintptr(a), uintptr(lda), uintptr(b), uintptr(ldb), uintptr(c), uintptr(ldc))
	return blasError(fn, r)
}

// Dgeam computes C = alpha op(A) + beta op(B), all m×n after op (cublasDgeam): transposes, copies and scaled sums in
// one call. In place is allowed for C == A with ta == OpN, or C == B with tb == OpN.
func (d *Device) Dgeam(ta, tb Op, m, n int, alpha float64, a DevPtr, lda int, beta float64, b DevPtr, ldb int, c DevPtr, ldc int) error {
	const fn = "cublasDgeam"
	if err := checkInts(fn, m, n, lda, ldb, ldc); err != nil {
		return err
	}
	r := call(d.blas.cublasDgeam, d.blasH, uintptr(ta), uintptr(tb), uintptr(m), uintptr(n),
		uintptr(unsafe.Pointer(&alpha)), uintptr(a), uintptr(lda), uintptr(unsafe.Pointer(&beta)), uintptr(b), uintptr(ldb), uintptr(c), uintptr(ldc))
	return blasError(fn, r)
}
