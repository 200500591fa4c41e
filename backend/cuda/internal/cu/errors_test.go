package cu

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorFormat(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&Error{Lib: "cuda", Call: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Msg: "out of memory"},
			"cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"},
		{&Error{Lib: "cuda", Call: "cuInit", Code: 100}, "cuInit: CUDA_ERROR_NO_DEVICE (100)"},
		{&Error{Lib: "cuda", Call: "cuInit", Code: 12345}, "cuInit: CUDA_ERROR_UNKNOWN_12345 (12345)"},
		{blasError("cublasDgemm_v2", 3), "cublasDgemm_v2: CUBLAS_STATUS_ALLOC_FAILED (3): resource allocation failed inside cuBLAS"},
		{blasError("cublasDgemm_v2", 7), "cublasDgemm_v2: CUBLAS_STATUS_INVALID_VALUE (7): an unsupported value or parameter was passed"},
		{blasError("cublasDgemm_v2", 42), "cublasDgemm_v2: CUBLAS_STATUS_UNKNOWN_42 (42)"},
		{solverError("cusolverDnDpotrf", 2), "cusolverDnDpotrf: CUSOLVER_STATUS_ALLOC_FAILED (2): resource allocation failed inside cuSOLVER"},
		{solverError("cusolverDnDsyevd", 31), "cusolverDnDsyevd: CUSOLVER_STATUS_INVALID_WORKSPACE (31): invalid workspace"},
		{&Error{Lib: "nvrtc", Call: "nvrtcCompileProgram", Code: 6, Msg: "k.cu(3): error: x"},
			"nvrtcCompileProgram: NVRTC_ERROR_COMPILATION (6): k.cu(3): error: x"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
	if blasError("x", 0) != nil || solverError("x", 0) != nil {
		t.Error("success status gave an error")
	}
}

func TestIsOutOfMemory(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&Error{Lib: "cuda", Code: 2}, true},
		{&Error{Lib: "cuda", Code: 3}, false},
		{blasError("c", 3), true},
		{blasError("c", 2), false},
		{solverError("c", 2), true},
		{solverError("c", 3), false},
		{&Error{Lib: "nvrtc", Code: 1}, false}, // host memory of the compiler, not the device
		{fmt.Errorf("wrapped: %w", &Error{Lib: "cuda", Code: 2}), true},
		{errors.New("out of memory"), false},
		{nil, false},
	} {
		if got := IsOutOfMemory(c.err); got != c.want {
			t.Errorf("IsOutOfMemory(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestUnavailableWrapsBoth(t *testing.T) {
	e := &Error{Lib: "cuda", Call: "cuInit", Code: 100}
	err := unavailable(e, "cu: no CUDA device")
	var got *Error
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &got) || got != e {
		t.Fatalf("%v does not wrap both ErrUnavailable and the *Error", err)
	}
	if err := unavailable(nil, "cu: x %d", 1); !errors.Is(err, ErrUnavailable) || err.Error() != "cu: x 1: cuda: not available" {
		t.Fatalf("unavailable(nil) = %v", err)
	}
}

func TestStatusTables(t *testing.T) {
	// Spot checks against the headers' values.
	for _, c := range []struct {
		lib  string
		code int
		name string
	}{
		{"cuda", 222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"},
		{"cuda", 209, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
		{"cublas", 13, "CUBLAS_STATUS_EXECUTION_FAILED"},
		{"cublas", 16, "CUBLAS_STATUS_LICENSE_ERROR"},
		{"cusolver", 7, "CUSOLVER_STATUS_INTERNAL_ERROR"},
		{"cusolver", 30, "CUSOLVER_STATUS_IRS_MATRIX_SINGULAR"},
		{"nvrtc", 11, "NVRTC_ERROR_INTERNAL_ERROR"},
	} {
		if got := statusName(c.lib, c.code); got != c.name {
			t.Errorf("statusName(%s, %d) = %q, want %q", c.lib, c.code, got, c.name)
		}
	}
	if v := versionString(13000); v != "13.0" {
		t.Errorf("versionString(13000) = %q", v)
	}
	if v := versionString(12040); v != "12.4" {
		t.Errorf("versionString(12040) = %q", v)
	}
}
