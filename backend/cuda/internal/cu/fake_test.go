package cu

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Fake CUDA libraries, built with gcc, exercise the loader and the calling convention of every wrapper without a
// GPU. "Device memory" is host memory from malloc, so copies and a naive Dgemm really compute; the other entry
// points record their arguments for the test to compare.

const fakeCommon = `
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
static long long rec_i[24];
static double rec_d[4];
static char rec_name[64];
static void rec(const char* name) { memset(rec_i, 0, sizeof rec_i); memset(rec_d, 0, sizeof rec_d); strncpy(rec_name, name, sizeof rec_name - 1); }
void fake_get(long long* ints, double* dbls, char* name) { memcpy(ints, rec_i, sizeof rec_i); memcpy(dbls, rec_d, sizeof rec_d); memcpy(name, rec_name, sizeof rec_name); }
`

const fakeCUDASrc = fakeCommon + `
static int init_rc = 0, ndev = 1, load_rc = 0;
void fake_config(int a, int b, int c) { init_rc = a; ndev = b; load_rc = c; }
int cuInit(unsigned flags) { return init_rc; }
int cuDriverGetVersion(int* v) { *v = 12040; return 0; }
int cuDeviceGetCount(int* n) { *n = ndev; return 0; }
int cuDeviceGet(int* d, int ordinal) { if (ordinal >= ndev) return 101; *d = ordinal; return 0; }
int cuDeviceGetName(char* s, int len, int dev) { strncpy(s, "Fake GPU", len); return 0; }
int cuDeviceGetAttribute(int* v, int attr, int dev) {
	switch (attr) { case 75: *v = 9; break; case 76: *v = 0; break; case 16: *v = 132; break; default: *v = 0; }
	return 0;
}
int cuDeviceTotalMem_v2(size_t* b, int dev) { *b = (size_t)80 << 30; return 0; }
int cuDevicePrimaryCtxRetain(void** c, int dev) { *c = (void*)0xc0; return 0; }
int cuStreamCreate(void** s, unsigned flags) { *s = (void*)0x5e; return 0; }
int cuMemAlloc_v2(unsigned long long* p, size_t n) {
	if (n >= ((size_t)1 << 50)) return 2;
	void* q = calloc(1, n); if (!q) return 2;
	*p = (unsigned long long)q; return 0;
}
int cuMemFree_v2(unsigned long long p) { free((void*)p); return 0; }
int cuMemGetInfo_v2(size_t* f, size_t* t) { *f = 1000; *t = 2000; return 0; }
int cuMemcpyHtoD_v2(unsigned long long dst, const void* src, size_t n) { memcpy((void*)dst, src, n); return 0; }
int cuMemcpyDtoH_v2(void* dst, unsigned long long src, size_t n) { memcpy(dst, (void*)src, n); return 0; }
int cuMemcpyDtoDAsync_v2(unsigned long long dst, unsigned long long src, size_t n, void* s) { memcpy((void*)dst, (void*)src, n); return 0; }
int cuMemsetD8Async(unsigned long long dst, unsigned char c, size_t n, void* s) { memset((void*)dst, c, n); return 0; }
int cuModuleLoadData(void** m, const void* img) {
	if (load_rc) return load_rc;
	if (memcmp(img, "\x7f" "ELF", 4) != 0) return 200;
	*m = (void*)0x3d; return 0;
}
int cuModuleGetFunction(void** f, void* m, const char* name) {
	if (strcmp(name, "missing") == 0) return 500;
	*f = (void*)0xf0; return 0;
}
int cuFuncSetAttribute(void* f, int attr, int v) { rec("cuFuncSetAttribute"); rec_i[0] = (long long)f; rec_i[1] = attr; rec_i[2] = v; return 0; }
/* The test launches with grid x = number of arguments; each argument's 8-byte slot is copied. */
int cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
		unsigned shmem, void* stream, void** params, void** extra) {
	rec("cuLaunchKernel");
	rec_i[0] = (long long)f; rec_i[1] = gx; rec_i[2] = gy; rec_i[3] = gz; rec_i[4] = bx; rec_i[5] = by; rec_i[6] = bz;
	rec_i[7] = shmem; rec_i[8] = (long long)stream; rec_i[9] = extra != 0;
	for (unsigned i = 0; i < gx && i < 14; i++) memcpy(&rec_i[10 + i], params[i], 8);
	return 0;
}
int cuGetErrorName(int e, const char** s) {
	switch (e) {
	case 2: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
	case 100: *s = "CUDA_ERROR_NO_DEVICE"; return 0;
	case 222: *s = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"; return 0;
	}
	*s = 0; return 1;
}
int cuGetErrorString(int e, const char** s) {
	switch (e) {
	case 2: *s = "fake: out of memory"; return 0;
	case 100: *s = "fake: no CUDA-capable device is detected"; return 0;
	}
	*s = 0; return 1;
}
`

const fakeCUBLASSrc = fakeCommon + `
int cublasCreate_v2(void** h) { *h = (void*)0xb1; return 0; }
int cublasGetVersion_v2(void* h, int* v) { *v = 120000; return 0; }
int cublasSetStream_v2(void* h, void* s) { return s == (void*)0x5e ? 0 : 7; }
/* A real (naive, column-major) Dgemm on host memory, so the round trip test checks results. */
static double el(const double* a, int ld, int op, int i, int j) { return op ? a[j + (long)i * ld] : a[i + (long)j * ld]; }
static void gemm(int ta, int tb, int m, int n, int k, double alpha, const double* A, int lda, const double* B, int ldb, double beta, double* C, int ldc) {
	for (int j = 0; j < n; j++) for (int i = 0; i < m; i++) {
		double s = 0; for (int l = 0; l < k; l++) s += el(A, lda, ta, i, l) * el(B, ldb, tb, l, j);
		C[i + (long)j * ldc] = alpha * s + beta * C[i + (long)j * ldc];
	}
}
int cublasDgemm_v2(void* h, int ta, int tb, int m, int n, int k, const double* alpha, const double* A, int lda,
		const double* B, int ldb, const double* beta, double* C, int ldc) {
	if (h != (void*)0xb1) return 1;
	gemm(ta, tb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc);
	return 0;
}
int cublasDgemmStridedBatched(void* h, int ta, int tb, int m, int n, int k, const double* alpha, const double* A, int lda,
		long long sa, const double* B, int ldb, long long sb, const double* beta, double* C, int ldc, long long sc, int batch) {
	if (h != (void*)0xb1) return 1;
	for (int i = 0; i < batch; i++) gemm(ta, tb, m, n, k, *alpha, A + i * sa, lda, B + i * sb, ldb, *beta, C + i * sc, ldc);
	rec("cublasDgemmStridedBatched"); rec_i[0] = sa; rec_i[1] = sb; rec_i[2] = sc; rec_i[3] = batch;
	return 0;
}
int cublasDsyrk_v2(void* h, int uplo, int trans, int n, int k, const double* alpha, const double* A, int lda,
		const double* beta, double* C, int ldc) {
	rec("cublasDsyrk_v2");
	rec_i[0] = (long long)h; rec_i[1] = uplo; rec_i[2] = trans; rec_i[3] = n; rec_i[4] = k; rec_i[5] = (long long)A;
	rec_i[6] = lda; rec_i[7] = (long long)C; rec_i[8] = ldc; rec_d[0] = *alpha; rec_d[1] = *beta;
	return 0;
}
int cublasDtrsm_v2(void* h, int side, int uplo, int trans, int diag, int m, int n, const double* alpha,
		const double* A, int lda, double* B, int ldb) {
	rec("cublasDtrsm_v2");
	rec_i[0] = (long long)h; rec_i[1] = side; rec_i[2] = uplo; rec_i[3] = trans; rec_i[4] = diag; rec_i[5] = m;
	rec_i[6] = n; rec_i[7] = (long long)A; rec_i[8] = lda; rec_i[9] = (long long)B; rec_i[10] = ldb; rec_d[0] = *alpha;
	return 0;
}
int cublasDtrsmBatched(void* h, int side, int uplo, int trans, int diag, int m, int n, const double* alpha,
		const double* const A[], int lda, double* const B[], int ldb, int batch) {
	rec("cublasDtrsmBatched");
	rec_i[0] = (long long)h; rec_i[1] = side; rec_i[2] = uplo; rec_i[3] = trans; rec_i[4] = diag; rec_i[5] = m;
	rec_i[6] = n; rec_i[7] = (long long)A; rec_i[8] = lda; rec_i[9] = (long long)B; rec_i[10] = ldb; rec_i[11] = batch;
	rec_d[0] = *alpha;
	return 0;
}
int cublasDtrmm_v2(void* h, int side, int uplo, int trans, int diag, int m, int n, const double* alpha,
		const double* A, int lda, const double* B, int ldb, double* C, int ldc) {
	rec("cublasDtrmm_v2");
	rec_i[0] = (long long)h; rec_i[1] = side; rec_i[2] = uplo; rec_i[3] = trans; rec_i[4] = diag; rec_i[5] = m;
	rec_i[6] = n; rec_i[7] = (long long)A; rec_i[8] = lda; rec_i[9] = (long long)B; rec_i[10] = ldb;
	rec_i[11] = (long long)C; rec_i[12] = ldc; rec_d[0] = *alpha;
	return 0;
}
int cublasDgeam(void* h, int ta, int tb, int m, int n, const double* alpha, const double* A, int lda,
		const double* beta, const double* B, int ldb, double* C, int ldc) {
	rec("cublasDgeam");
	rec_i[0] = (long long)h; rec_i[1] = ta; rec_i[2] = tb; rec_i[3] = m; rec_i[4] = n; rec_i[5] = (long long)A;
	rec_i[6] = lda; rec_i[7] = (long long)B; rec_i[8] = ldb; rec_i[9] = (long long)C; rec_i[10] = ldc;
	rec_d[0] = *alpha; rec_d[1] = *beta;
	return m == 99 ? 3 : 0; /* m = 99 simulates CUBLAS_STATUS_ALLOC_FAILED */
}
`

const fakeCUSOLVERSrc = fakeCommon + `
int cusolverDnCreate(void** h) { *h = (void*)0x51; return 0; }
int cusolverGetVersion(int* v) { *v = 11500; return 0; }
int cusolverDnSetStream(void* h, void* s) { return s == (void*)0x5e ? 0 : 3; }
int cusolverDnDpotrfBatched(void* h, int uplo, int n, double* A[], int lda, int* info, int batch) {
	rec("cusolverDnDpotrfBatched");
	rec_i[0] = (long long)h; rec_i[1] = uplo; rec_i[2] = n; rec_i[3] = (long long)A; rec_i[4] = lda;
	rec_i[5] = (long long)info; rec_i[6] = batch;
	return 0;
}
int cusolverDnDpotrf_bufferSize(void* h, int uplo, int n, double* A, int lda, int* lwork) { *lwork = 1000 + n; return 0; }
int cusolverDnDpotrf(void* h, int uplo, int n, double* A, int lda, double* work, int lwork, int* info) {
	rec("cusolverDnDpotrf");
	rec_i[0] = (long long)h; rec_i[1] = uplo; rec_i[2] = n; rec_i[3] = (long long)A; rec_i[4] = lda;
	rec_i[5] = (long long)work; rec_i[6] = lwork; rec_i[7] = (long long)info;
	work[lwork - 1] = 1; /* the workspace must hold lwork doubles */
	return 0;
}
int cusolverDnDgeqrf_bufferSize(void* h, int m, int n, double* A, int lda, int* lwork) { *lwork = 2000 + m; return 0; }
int cusolverDnDgeqrf(void* h, int m, int n, double* A, int lda, double* tau, double* work, int lwork, int* info) {
	rec("cusolverDnDgeqrf");
	rec_i[0] = (long long)h; rec_i[1] = m; rec_i[2] = n; rec_i[3] = (long long)A; rec_i[4] = lda;
	rec_i[5] = (long long)tau; rec_i[6] = (long long)work; rec_i[7] = lwork; rec_i[8] = (long long)info;
	work[lwork - 1] = 1;
	return 0;
}
int cusolverDnDorgqr_bufferSize(void* h, int m, int n, int k, const double* A, int lda, const double* tau, int* lwork) { *lwork = 3000 + k; return 0; }
int cusolverDnDorgqr(void* h, int m, int n, int k, double* A, int lda, const double* tau, double* work, int lwork, int* info) {
	rec("cusolverDnDorgqr");
	rec_i[0] = (long long)h; rec_i[1] = m; rec_i[2] = n; rec_i[3] = k; rec_i[4] = (long long)A; rec_i[5] = lda;
	rec_i[6] = (long long)tau; rec_i[7] = (long long)work; rec_i[8] = lwork; rec_i[9] = (long long)info;
	work[lwork - 1] = 1;
	return 0;
}
int cusolverDnDsyevd_bufferSize(void* h, int jobz, int uplo, int n, const double* A, int lda, const double* W, int* lwork) { *lwork = 4000 + n; return 0; }
int cusolverDnDsyevd(void* h, int jobz, int uplo, int n, double* A, int lda, double* W, double* work, int lwork, int* info) {
	rec("cusolverDnDsyevd");
	rec_i[0] = (long long)h; rec_i[1] = jobz; rec_i[2] = uplo; rec_i[3] = n; rec_i[4] = (long long)A; rec_i[5] = lda;
	rec_i[6] = (long long)W; rec_i[7] = (long long)work; rec_i[8] = lwork; rec_i[9] = (long long)info;
	work[lwork - 1] = 1;
	return 0;
}
static double tol; static int sweeps = -1, sorted = -1, live_infos = 0;
int cusolverDnCreateSyevjInfo(void** p) { *p = malloc(8); live_infos++; return 0; }
int cusolverDnDestroySyevjInfo(void* p) { free(p); live_infos--; return 0; }
int cusolverDnXsyevjSetTolerance(void* p, double t) { tol = t; return 0; }
int cusolverDnXsyevjSetMaxSweeps(void* p, int s) { sweeps = s; return 0; }
int cusolverDnXsyevjSetSortEig(void* p, int s) { sorted = s; return 0; }
int cusolverDnDsyevjBatched_bufferSize(void* h, int jobz, int uplo, int n, const double* A, int lda, const double* W,
		int* lwork, void* params, int batch) { *lwork = 5000 + batch; return 0; }
int cusolverDnDsyevjBatched(void* h, int jobz, int uplo, int n, double* A, int lda, double* W, double* work, int lwork,
		int* info, void* params, int batch) {
	rec("cusolverDnDsyevjBatched");
	rec_i[0] = (long long)h; rec_i[1] = jobz; rec_i[2] = uplo; rec_i[3] = n; rec_i[4] = (long long)A; rec_i[5] = lda;
	rec_i[6] = (long long)W; rec_i[7] = (long long)work; rec_i[8] = lwork; rec_i[9] = (long long)info;
	rec_i[10] = params != 0; rec_i[11] = batch; rec_i[12] = sweeps; rec_i[13] = sorted; rec_i[14] = live_infos;
	rec_d[0] = tol;
	work[lwork - 1] = 1;
	return 0;
}
int fake_live_infos(void) { return live_infos; }
`

const fakeNVRTCSrc = fakeCommon + `
int nvrtcVersion(int* major, int* minor) { *major = 12; *minor = 8; return 0; }
const char* nvrtcGetErrorString(int r) { return r == 6 ? "NVRTC_ERROR_COMPILATION" : "NVRTC_ERROR_OTHER"; }
static const int archs[] = {75, 80, 86, 89, 90};
int nvrtcGetNumSupportedArchs(int* n) { *n = 5; return 0; }
int nvrtcGetSupportedArchs(int* a) { memcpy(a, archs, sizeof archs); return 0; }
int nvrtcCreateProgram(void** p, const char* src, const char* name, int nh, const char* const* h, const char* const* in) {
	*p = strstr(src, "#error") ? (void*)2 : (void*)1; return 0;
}
int nvrtcCompileProgram(void* p, int n, const char* const* opts) {
	rec("nvrtcCompileProgram"); rec_i[0] = n;
	for (int i = 0; i < n && i < 8; i++) rec_i[1 + i] = (long long)strlen(opts[i]);
	return p == (void*)2 ? 6 : 0;
}
int nvrtcGetProgramLogSize(void* p, size_t* n) { *n = p == (void*)2 ? 32 : 1; return 0; }
int nvrtcGetProgramLog(void* p, char* log) { strcpy(log, p == (void*)2 ? "k.cu(3): error: fake" : ""); return 0; }
int nvrtcGetCUBINSize(void* p, size_t* n) { *n = 16; return 0; }
int nvrtcGetCUBIN(void* p, char* out) { memcpy(out, "\x7f" "ELFfakecubin...", 16); return 0; }
int nvrtcGetPTXSize(void* p, size_t* n) { *n = 14; return 0; }
int nvrtcGetPTX(void* p, char* out) { memcpy(out, ".version 8.0\n", 14); return 0; }
`

// fakeLibs are the built fakes: paths by name.
type fakeLibs struct {
	dir                                 string
	cuda, cudaMissing, cublas, cusolver string
	nvrtc                               string
	err                                 error
}

var (
	fakeOnce  sync.Once
	fakeBuilt fakeLibs
)

// TestMain removes the fake libraries' folder after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if fakeBuilt.dir != "" {
		os.RemoveAll(fakeBuilt.dir)
	}
	os.Exit(code)
}

// requireGCC skips the test when gcc is missing, except in CI, where the fakes must run.
func requireGCC(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("gcc not found (needed for the fake CUDA libraries; CI=true): %v", err)
		}
		t.Skipf("gcc not found, cannot build the fake CUDA libraries: %v", err)
	}
}

// buildFakes compiles the fake libraries once per test binary. Each C file gets, after its hand-written functions,
// a stub returning 0 for every other symbol of the binding's tables, so the fakes follow the tables.
func buildFakes(t *testing.T) fakeLibs {
	t.Helper()
	requireGCC(t)
	fakeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "geovb-cu-fakes-")
		if err != nil {
			fakeBuilt.err = err
			return
		}
		fakeBuilt.dir = dir
		var drv driverAPI
		var blas cublasAPI
		var sol cusolverAPI
		var nv nvrtcAPI
		build := func(name, src string, syms []symbol, omit string) string {
			if fakeBuilt.err != nil {
				return ""
			}
			var b strings.Builder
			b.WriteString(src)
			for _, s := range syms {
				if s.name == omit || regexp.MustCompile(`\b`+s.name+`\(`).MatchString(src) {
					continue
				}
				fmt.Fprintf(&b, "int %s() { return 0; }\n", s.name)
			}
			c := filepath.Join(dir, name+".c")
			so := filepath.Join(dir, name+".so")
			if err := os.WriteFile(c, []byte(b.String()), 0o644); err != nil {
				fakeBuilt.err = err
				return ""
			}
			out, err := exec.Command("gcc", "-shared", "-fPIC", "-O1", "-o", so, c).CombinedOutput()
			if err != nil {
				fakeBuilt.err = fmt.Errorf("gcc %s: %v\n%s", name, err, out)
			}
			return so
		}
		fakeBuilt.cuda = build("fakecuda", fakeCUDASrc, drv.symbols(), "")
		fakeBuilt.cudaMissing = build("fakecuda_missing", fakeCUDASrc, drv.symbols(), "cuStreamSynchronize")
		fakeBuilt.cublas = build("fakecublas", fakeCUBLASSrc, blas.symbols(), "")
		fakeBuilt.cusolver = build("fakecusolver", fakeCUSOLVERSrc, sol.symbols(), "")
		fakeBuilt.nvrtc = build("fakenvrtc", fakeNVRTCSrc, nv.symbols(), "")
	})
	if fakeBuilt.err != nil {
		t.Fatalf("building fake libraries: %v", fakeBuilt.err)
	}
	return fakeBuilt
}

// useFakes points the loader at the fakes (and the kernel cache at a temporary folder) for this test, with the fake
// driver configured by cuInit's status, the device count and cuModuleLoadData's status.
func useFakes(t *testing.T, initRC, ndev, loadRC int) fakeLibs {
	t.Helper()
	f := buildFakes(t)
	t.Setenv("GEOVB_LIBCUDA", f.cuda)
	t.Setenv("GEOVB_LIBCUBLAS", f.cublas)
	t.Setenv("GEOVB_LIBCUSOLVER", f.cusolver)
	t.Setenv("GEOVB_LIBNVRTC", f.nvrtc)
	t.Setenv("GEOVB_KERNEL_CACHE", t.TempDir())
	fakeCall(t, f.cuda, "fake_config", uintptr(initRC), uintptr(ndev), uintptr(loadRC))
	return f
}

// fakeCall calls a helper function of a fake library; uintptrescapes keeps pointer arguments valid for the call.
//
//go:uintptrescapes
func fakeCall(t *testing.T, lib, name string, args ...uintptr) uintptr {
	t.Helper()
	h, err := purego.Dlopen(lib, dlopenMode)
	if err != nil {
		t.Fatal(err)
	}
	fn, err := purego.Dlsym(h, name)
	if err != nil {
		t.Fatal(err)
	}
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

// fakeRecord is what a fake entry point recorded about its last call.
type fakeRecord struct {
	name string
	i    [24]int64
	f    [4]float64
}

func fakeLast(t *testing.T, lib string) fakeRecord {
	t.Helper()
	var r fakeRecord
	var name [64]byte
	fakeCall(t, lib, "fake_get", uintptr(unsafe.Pointer(&r.i[0])), uintptr(unsafe.Pointer(&r.f[0])), uintptr(unsafe.Pointer(&name[0])))
	r.name = goString(&name[0])
	return r
}
