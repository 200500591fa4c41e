package cu

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadRealNVRTC loads NVRTC from the environment (GEOVB_LIBNVRTC, GEOVB_CUDA_LIB_DIR, the usual folders) or skips.
func loadRealNVRTC(t *testing.T) *NVRTC {
	t.Helper()
	n, err := LoadNVRTC()
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("NVRTC not found (set GEOVB_LIBNVRTC or GEOVB_CUDA_LIB_DIR to run this test): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	maj, min := n.Version()
	t.Logf("NVRTC %d.%d from %s", maj, min, n.Path())
	return n
}

const testKernel = `
extern "C" __global__ void axpy(double a, const double* x, double* y, long long n) {
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] += a * x[i];
}
`

func TestNVRTCCompile(t *testing.T) {
	n := loadRealNVRTC(t)
	img, err := n.Compile("axpy.cu", testKernel, "sm_90", "-lineinfo")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(img, []byte("\x7fELF")) {
		t.Fatalf("sm_90 image does not start with the ELF magic: % x", img[:min(len(img), 16)])
	}
	t.Logf("CUBIN for sm_90: %d bytes", len(img))

	ptx, err := n.Compile("axpy.cu", testKernel, "compute_90")
	if err != nil {
		t.Fatal(err)
	}
	if !validImage(ptx, false) || !bytes.Contains(ptx, []byte(".entry axpy")) {
		t.Fatalf("compute_90 output is not PTX with the kernel: %.200q", ptx)
	}
	if _, err := n.Compile("axpy.cu", testKernel, "gfx90a"); err == nil {
		t.Error("Compile accepted an unknown target")
	}
}

func TestNVRTCSyntaxError(t *testing.T) {
	n := loadRealNVRTC(t)
	src := "extern \"C\" __global__ void k(double* x) {\n\tx[0] = 1;\n\tthis is not C++;\n}\n"
	_, err := n.Compile("broken.cu", src, "sm_90")
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("syntax error gave %v, want *Error", err)
	}
	if e.Lib != "nvrtc" || e.Call != "nvrtcCompileProgram" || e.Name != "NVRTC_ERROR_COMPILATION" || !strings.Contains(e.Msg, "broken.cu(3)") {
		t.Fatalf("syntax error: %v", err)
	}
	t.Logf("%v", err)
}

func TestNVRTCCache(t *testing.T) {
	n := loadRealNVRTC(t)
	dir := t.TempDir()
	opts := compileOptions("sm_90", nil)
	before := nvrtcCompiles.Load()
	img1, cached, err := n.compileCached(dir, "axpy.cu", testKernel, "sm_90", opts, false)
	if err != nil || cached {
		t.Fatalf("first compile: cached %v, err %v", cached, err)
	}
	img2, cached, err := n.compileCached(dir, "axpy.cu", testKernel, "sm_90", opts, false)
	if err != nil || !cached || !bytes.Equal(img1, img2) {
		t.Fatalf("second compile: cached %v, err %v, same image %v", cached, err, bytes.Equal(img1, img2))
	}
	if c := nvrtcCompiles.Load() - before; c != 1 {
		t.Fatalf("%d compilations for two requests, want 1", c)
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(entries) != 1 || !strings.HasSuffix(entries[0], ".cubin") {
		t.Fatalf("cache folder holds %v, want one .cubin (no temporary files)", entries)
	}
	// Another option is another entry; a corrupt entry is recompiled.
	if _, cached, err := n.compileCached(dir, "axpy.cu", testKernel, "sm_90", compileOptions("sm_90", []string{"-lineinfo"}), false); err != nil || cached {
		t.Fatalf("other options: cached %v, err %v", cached, err)
	}
	if err := os.WriteFile(entries[0], []byte("corrupt"), 0o644); err != nil {
		t.Fatal(err)
	}
	img3, cached, err := n.compileCached(dir, "axpy.cu", testKernel, "sm_90", opts, false)
	if err != nil || cached || !bytes.Equal(img3, img1) {
		t.Fatalf("corrupt entry: cached %v, err %v", cached, err)
	}
	// An unwritable cache folder is not an error.
	if _, _, err := n.compileCached(filepath.Join(entries[0], "not-a-dir"), "axpy.cu", testKernel, "sm_90", opts, false); err != nil {
		t.Fatalf("unwritable cache: %v", err)
	}
}

func TestCacheKey(t *testing.T) {
	n := &NVRTC{major: 12, minor: 4}
	base := n.cacheKey("a", "src", "sm_90", []string{"-x"})
	for _, k := range []string{
		n.cacheKey("b", "src", "sm_90", []string{"-x"}),
		n.cacheKey("a", "src2", "sm_90", []string{"-x"}),
		n.cacheKey("a", "src", "sm_80", []string{"-x"}),
		n.cacheKey("a", "src", "sm_90", []string{"-y"}),
		n.cacheKey("a", "src", "sm_90", nil),
		n.cacheKey("as", "rc", "sm_90", []string{"-x"}),
		(&NVRTC{major: 12, minor: 5}).cacheKey("a", "src", "sm_90", []string{"-x"}),
	} {
		if k == base {
			t.Errorf("cache key does not depend on an input")
		}
	}
	if n.cacheKey("a", "src", "sm_90", []string{"-x"}) != base {
		t.Error("cache key is not deterministic")
	}
}

func TestKernelCacheDir(t *testing.T) {
	t.Setenv("GEOVB_KERNEL_CACHE", "off")
	if d := kernelCacheDir(); d != "" {
		t.Errorf("off: %q", d)
	}
	t.Setenv("GEOVB_KERNEL_CACHE", "/some/dir")
	if d := kernelCacheDir(); d != "/some/dir" {
		t.Errorf("override: %q", d)
	}
	t.Setenv("GEOVB_KERNEL_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if d := kernelCacheDir(); d != "/xdg/geovb/kernels" {
		t.Errorf("default: %q", d)
	}
}

func TestCompileArch(t *testing.T) {
	n := &NVRTC{archs: []int{75, 80, 86, 89, 90}}
	for cc, want := range map[int]string{90: "sm_90", 80: "sm_80", 100: "compute_90", 87: "compute_86", 50: "sm_50"} {
		if got := n.compileArch(cc); got != want {
			t.Errorf("compileArch(%d) = %q, want %q", cc, got, want)
		}
	}
	if got := (&NVRTC{}).compileArch(120); got != "sm_120" {
		t.Errorf("without a supported list: %q", got)
	}
}

func TestFakeNVRTCCompile(t *testing.T) {
	useFakes(t, 0, 1, 0)
	n, err := LoadNVRTC()
	if err != nil {
		t.Fatal(err)
	}
	if a := n.SupportedArchs(); len(a) != 5 || a[4] != 90 {
		t.Errorf("SupportedArchs = %v", a)
	}
	img, err := n.Compile("k.cu", "x", "compute_80")
	if err != nil || !validImage(img, false) {
		t.Errorf("PTX: %q, %v", img, err)
	}
	_, err = n.Compile("k.cu", "#error", "sm_90")
	var e *Error
	if !errors.As(err, &e) || e.Code != 6 || !strings.Contains(e.Msg, "k.cu(3): error: fake") || !strings.Contains(e.Msg, "--std=c++17") {
		t.Errorf("compile error: %v", err)
	}
}
