package cu

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrUnavailable is wrapped by every error that means "CUDA cannot be used here": a library or one of its symbols
// is missing, the driver does not initialise, or there is no device. Callers test for it with errors.Is to fall back
// to another backend instead of failing.
var ErrUnavailable = errors.New("cuda: not available")

// Error is a failed CUDA driver, cuBLAS, cuSOLVER or NVRTC call. It keeps the library's status code so callers can
// react to particular failures (see [IsOutOfMemory]) and the call's name so a log line says where it happened.
type Error struct {
	Lib  string // "cuda", "cublas", "cusolver" or "nvrtc"
	Call string // entry point, e.g. "cuMemAlloc_v2"
	Code int    // the status code the call returned
	// Msg is the description: cuGetErrorString's text for the driver, the status's meaning for cuBLAS and
	// cuSOLVER, and for NVRTC the compile log.
	Msg string
	// Name is the status's symbolic name, e.g. "CUDA_ERROR_OUT_OF_MEMORY" (from cuGetErrorName for the driver,
	// nvrtcGetErrorString for NVRTC, and the headers' enumerations for cuBLAS and cuSOLVER).
	Name string
}

// Error formats the error as "call: NAME (code): description", e.g.
// "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory".
func (e *Error) Error() string {
	name := e.Name
	if name == "" {
		name = statusName(e.Lib, e.Code)
	}
	s := e.Call + ": " + name + " (" + strconv.Itoa(e.Code) + ")"
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// Status codes that callers of this package react to (values from cuda.h, cublas_api.h, cusolver_common.h).
const (
	cudaErrorOutOfMemory           = 2
	cudaErrorStubLibrary           = 34
	cudaErrorInsufficientDriver    = 35 // the runtime's cudaErrorInsufficientDriver; kept for libraries that pass it on
	cudaErrorNoDevice              = 100
	cudaErrorInvalidDevice         = 101
	cudaErrorInvalidImage          = 200
	cudaErrorNoBinaryForGPU        = 209
	cudaErrorInvalidPTX            = 218
	cudaErrorUnsupportedPTXVersion = 222
	cudaErrorNotFound              = 500
	cudaErrorSystemDriverMismatch  = 803
	cudaErrorCompatNotSupported    = 804

	cublasStatusAllocFailed   = 3
	cusolverStatusAllocFailed = 2
)

// IsOutOfMemory reports whether err is, or wraps, an allocation failure of the device or of cuBLAS/cuSOLVER
// (CUDA_ERROR_OUT_OF_MEMORY, CUBLAS_STATUS_ALLOC_FAILED, CUSOLVER_STATUS_ALLOC_FAILED), so a caller can free cached
// buffers and retry, or split the work.
func IsOutOfMemory(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Lib {
	case "cuda":
		return e.Code == cudaErrorOutOfMemory
	case "cublas":
		return e.Code == cublasStatusAllocFailed
	case "cusolver":
		return e.Code == cusolverStatusAllocFailed
	}
	return false
}

// status describes one library status: its header name and a short meaning.
type status struct{ name, desc string }

// cudaFallbackStatus names the driver codes this package reacts to, for when cuGetErrorName does not know a code
// (or the driver could not be asked).
var cudaFallbackStatus = map[int]status{
	0:                              {"CUDA_SUCCESS", "no error"},
	1:                              {"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	cudaErrorOutOfMemory:           {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	3:                              {"CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	cudaErrorStubLibrary:           {"CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
	cudaErrorInsufficientDriver:    {"CUDA_ERROR_INSUFFICIENT_DRIVER", "CUDA driver version is insufficient for CUDA runtime version"},
	cudaErrorNoDevice:              {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	cudaErrorInvalidDevice:         {"CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	cudaErrorInvalidImage:          {"CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
	cudaErrorNoBinaryForGPU:        {"CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
	cudaErrorInvalidPTX:            {"CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	cudaErrorUnsupportedPTXVersion: {"CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain"},
	cudaErrorNotFound:              {"CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	cudaErrorSystemDriverMismatch:  {"CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination"},
	cudaErrorCompatNotSupported:    {"CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward compatibility was attempted on non supported HW"},
}

// cublasStatus is cublasStatus_t (cublas_api.h).
var cublasStatus = map[int]status{
	0:  {"CUBLAS_STATUS_SUCCESS", "success"},
	1:  {"CUBLAS_STATUS_NOT_INITIALIZED", "the cuBLAS library was not initialized"},
	3:  {"CUBLAS_STATUS_ALLOC_FAILED", "resource allocation failed inside cuBLAS"},
	7:  {"CUBLAS_STATUS_INVALID_VALUE", "an unsupported value or parameter was passed"},
	8:  {"CUBLAS_STATUS_ARCH_MISMATCH", "the function requires a feature absent from the device architecture"},
	11: {"CUBLAS_STATUS_MAPPING_ERROR", "an access to GPU memory space failed"},
	13: {"CUBLAS_STATUS_EXECUTION_FAILED", "the GPU program failed to execute"},
	14: {"CUBLAS_STATUS_INTERNAL_ERROR", "an internal cuBLAS operation failed"},
	15: {"CUBLAS_STATUS_NOT_SUPPORTED", "the functionality requested is not supported"},
	16: {"CUBLAS_STATUS_LICENSE_ERROR", "the functionality requested requires a license"},
}

// cusolverStatus is cusolverStatus_t (cusolver_common.h).
var cusolverStatus = map[int]status{
	0:  {"CUSOLVER_STATUS_SUCCESS", "success"},
	1:  {"CUSOLVER_STATUS_NOT_INITIALIZED", "the cuSOLVER library was not initialized"},
	2:  {"CUSOLVER_STATUS_ALLOC_FAILED", "resource allocation failed inside cuSOLVER"},
	3:  {"CUSOLVER_STATUS_INVALID_VALUE", "an unsupported value or parameter was passed"},
	4:  {"CUSOLVER_STATUS_ARCH_MISMATCH", "the function requires a feature absent from the device architecture"},
	5:  {"CUSOLVER_STATUS_MAPPING_ERROR", "an access to GPU memory space failed"},
	6:  {"CUSOLVER_STATUS_EXECUTION_FAILED", "the GPU program failed to execute"},
	7:  {"CUSOLVER_STATUS_INTERNAL_ERROR", "an internal cuSOLVER operation failed"},
	8:  {"CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED", "the matrix type is not supported"},
	9:  {"CUSOLVER_STATUS_NOT_SUPPORTED", "the functionality requested is not supported"},
	10: {"CUSOLVER_STATUS_ZERO_PIVOT", "zero pivot"},
	11: {"CUSOLVER_STATUS_INVALID_LICENSE", "invalid license"},
	12: {"CUSOLVER_STATUS_IRS_PARAMS_NOT_INITIALIZED", "iterative refinement parameters not initialized"},
	13: {"CUSOLVER_STATUS_IRS_PARAMS_INVALID", "invalid iterative refinement parameters"},
	14: {"CUSOLVER_STATUS_IRS_PARAMS_INVALID_PREC", "invalid iterative refinement precision"},
	15: {"CUSOLVER_STATUS_IRS_PARAMS_INVALID_REFINE", "invalid iterative refinement solver"},
	16: {"CUSOLVER_STATUS_IRS_PARAMS_INVALID_MAXITER", "invalid iterative refinement iteration count"},
	20: {"CUSOLVER_STATUS_IRS_INTERNAL_ERROR", "iterative refinement internal error"},
	21: {"CUSOLVER_STATUS_IRS_NOT_SUPPORTED", "iterative refinement not supported"},
	22: {"CUSOLVER_STATUS_IRS_OUT_OF_RANGE", "iterative refinement out of range"},
	23: {"CUSOLVER_STATUS_IRS_NRHS_NOT_SUPPORTED_FOR_REFINE_GMRES", "several right-hand sides not supported with GMRES refinement"},
	25: {"CUSOLVER_STATUS_IRS_INFOS_NOT_INITIALIZED", "iterative refinement infos not initialized"},
	26: {"CUSOLVER_STATUS_IRS_INFOS_NOT_DESTROYED", "iterative refinement infos not destroyed"},
	30: {"CUSOLVER_STATUS_IRS_MATRIX_SINGULAR", "matrix singular in iterative refinement"},
	31: {"CUSOLVER_STATUS_INVALID_WORKSPACE", "invalid workspace"},
}

// nvrtcStatus is nvrtcResult (nvrtc.h), used when nvrtcGetErrorString cannot be asked.
var nvrtcStatus = map[int]status{
	0:  {"NVRTC_SUCCESS", ""},
	1:  {"NVRTC_ERROR_OUT_OF_MEMORY", ""},
	2:  {"NVRTC_ERROR_PROGRAM_CREATION_FAILURE", ""},
	3:  {"NVRTC_ERROR_INVALID_INPUT", ""},
	4:  {"NVRTC_ERROR_INVALID_PROGRAM", ""},
	5:  {"NVRTC_ERROR_INVALID_OPTION", ""},
	6:  {"NVRTC_ERROR_COMPILATION", ""},
	7:  {"NVRTC_ERROR_BUILTIN_OPERATION_FAILURE", ""},
	8:  {"NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION", ""},
	9:  {"NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION", ""},
	10: {"NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID", ""},
	11: {"NVRTC_ERROR_INTERNAL_ERROR", ""},
}

// statusOf looks code up in lib's table; unknown codes get a synthetic name so messages stay readable.
func statusOf(lib string, code int) status {
	var t map[int]status
	prefix := ""
	switch lib {
	case "cuda":
		t, prefix = cudaFallbackStatus, "CUDA_ERROR_"
	case "cublas":
		t, prefix = cublasStatus, "CUBLAS_STATUS_"
	case "cusolver":
		t, prefix = cusolverStatus, "CUSOLVER_STATUS_"
	case "nvrtc":
		t, prefix = nvrtcStatus, "NVRTC_ERROR_"
	}
	if s, ok := t[code]; ok {
		return s
	}
	return status{name: prefix + "UNKNOWN_" + strconv.Itoa(code)}
}

// statusName is the symbolic name of code in lib, from this package's tables.
func statusName(lib string, code int) string { return statusOf(lib, code).name }

// blasError turns a cuBLAS status into an error (nil for CUBLAS_STATUS_SUCCESS).
func blasError(call string, code int32) error {
	if code == 0 {
		return nil
	}
	s := statusOf("cublas", int(code))
	return &Error{Lib: "cublas", Call: call, Code: int(code), Name: s.name, Msg: s.desc}
}

// solverError turns a cuSOLVER status into an error (nil for CUSOLVER_STATUS_SUCCESS).
func solverError(call string, code int32) error {
	if code == 0 {
		return nil
	}
	s := statusOf("cusolver", int(code))
	return &Error{Lib: "cusolver", Call: call, Code: int(code), Name: s.name, Msg: s.desc}
}

// unavailable builds an error that wraps ErrUnavailable, and cause too when it is not nil, so that both
// errors.Is(err, ErrUnavailable) and errors.As(err, **Error) work.
func unavailable(cause error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if cause != nil {
		return fmt.Errorf("%s: %w (%w)", msg, cause, ErrUnavailable)
	}
	return fmt.Errorf("%s: %w", msg, ErrUnavailable)
}

// versionString formats a CUDA version integer (1000*major + 10*minor, e.g. 12040) as "12.4".
func versionString(v int) string {
	return strconv.Itoa(v/1000) + "." + strconv.Itoa(v%1000/10)
}
