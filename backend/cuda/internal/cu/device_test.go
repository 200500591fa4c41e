package cu

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

// openFake opens device 0 of the fake libraries.
func openFake(t *testing.T, loadRC int) (*Device, fakeLibs) {
	t.Helper()
	f := useFakes(t, 0, 1, loadRC)
	d, err := Open(0)
	if err != nil {
		t.Fatalf("Open on the fakes: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d, f
}

func TestFakeOpenInfo(t *testing.T) {
	d, f := openFake(t, 0)
	i := d.Info()
	if i.Name != "Fake GPU" || i.CCMajor != 9 || i.CCMinor != 0 || i.SMs != 132 || i.TotalMem != 80<<30 ||
		i.DriverVersion != 12040 || i.BLASVersion != 120000 || i.SolverVersion != 11500 || i.NVRTCMajor != 12 || i.NVRTCMinor != 8 {
		t.Errorf("Info = %+v", i)
	}
	want := map[string]string{"cuda": f.cuda, "cublas": f.cublas, "cusolver": f.cusolver, "nvrtc": f.nvrtc}
	for k, v := range want {
		if i.Paths[k] != v {
			t.Errorf("Paths[%q] = %q, want %q", k, i.Paths[k], v)
		}
	}
	if d.Arch() != "sm_90" || d.compileArch != "sm_90" {
		t.Errorf("Arch %q, compile arch %q; want sm_90", d.Arch(), d.compileArch)
	}
	i.Paths["cuda"] = "changed"
	if d.Info().Paths["cuda"] != f.cuda {
		t.Error("Info shares its Paths map with the device")
	}
}

func TestFakeMemAllocError(t *testing.T) {
	d, _ := openFake(t, 0)
	err := d.Do(func() error {
		_, err := d.MemAlloc(1 << 50)
		return err
	})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("MemAlloc(1<<50) = %v, want *Error", err)
	}
	if e.Lib != "cuda" || e.Call != "cuMemAlloc_v2" || e.Code != 2 || e.Name != "CUDA_ERROR_OUT_OF_MEMORY" || e.Msg != "fake: out of memory" {
		t.Errorf("error %#v", e)
	}
	if got, want := err.Error(), "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): fake: out of memory"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !IsOutOfMemory(err) {
		t.Error("IsOutOfMemory = false")
	}
}

// TestFakeRoundTripAndDgemm runs the smoke sequence of the GPU test on the fakes, whose memory is host memory and
// whose Dgemm computes: this checks the copies and every argument of Dgemm and DgemmStridedBatched, alpha and beta
// by pointer included, through the real calling convention.
func TestFakeRoundTripAndDgemm(t *testing.T) {
	d, f := openFake(t, 0)
	smoke(t, d)
	r := fakeLast(t, f.cublas)
	if r.name != "cublasDgemmStridedBatched" || r.i[0] != 6 || r.i[1] != 12 || r.i[2] != 4 || r.i[3] != 2 {
		t.Errorf("strided batched recorded %+v", r)
	}
}

// smoke allocates, copies, multiplies and checks the results against host arithmetic.
func smoke(t *testing.T, d *Device) {
	t.Helper()
	// A is 2×3, B is 3×2, column-major.
	a := []float64{1, 4, 2, 5, 3, 6}
	b := []float64{7, 9, 11, 8, 10, 12}
	c := []float64{1, 1, 1, 1}
	want := make([]float64, 4)
	for i := range 2 {
		for j := range 2 {
			s := 0.0
			for l := range 3 {
				s += a[i+2*l] * b[l+3*j]
			}
			want[i+2*j] = 2*s + 0.5*c[i+2*j]
		}
	}
	got := make([]float64, 4)
	back := make([]float64, 6)
	err := d.Do(func() error {
		pa, err := d.MemAlloc(8 * 6)
		if err != nil {
			return err
		}
		defer d.MemFree(pa)
		pb, err := d.MemAlloc(8 * 6)
		if err != nil {
			return err
		}
		defer d.MemFree(pb)
		pc, err := d.MemAlloc(8 * 4)
		if err != nil {
			return err
		}
		defer d.MemFree(pc)
		if err := d.HtoD(pa, unsafe.Pointer(&a[0]), 8*6); err != nil {
			return err
		}
		if err := d.DtoH(unsafe.Pointer(&back[0]), pa, 8*6); err != nil {
			return err
		}
		if err := d.HtoD(pb, unsafe.Pointer(&b[0]), 8*6); err != nil {
			return err
		}
		if err := d.HtoD(pc, unsafe.Pointer(&c[0]), 8*4); err != nil {
			return err
		}
		if err := d.Dgemm(OpN, OpN, 2, 2, 3, 2, pa, 2, pb, 3, 0.5, pc, 2); err != nil {
			return err
		}
		if err := d.DtoH(unsafe.Pointer(&got[0]), pc, 8*4); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if back[i] != a[i] {
			t.Fatalf("HtoD/DtoH round trip: got %v, want %v", back, a)
		}
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12*math.Abs(want[i]) {
			t.Fatalf("Dgemm: got %v, want %v", got, want)
		}
	}

	// Two batches of C_i = Aᵢᵀ Bᵢ with A_i 3×2 (stride 6), B_i 3×2 (stride 12, padded), C_i 2×2 (stride 4).
	as := []float64{1, 2, 3, 4, 5, 6, -1, 0, 2, 1, 1, 1}
	bs := make([]float64, 24)
	for i := range bs {
		bs[i] = float64(i%7) - 2
	}
	cs := make([]float64, 8)
	wantS := make([]float64, 8)
	for bt := range 2 {
		for i := range 2 {
			for j := range 2 {
				s := 0.0
				for l := range 3 {
					s += as[6*bt+l+3*i] * bs[12*bt+l+3*j]
				}
				wantS[4*bt+i+2*j] = s
			}
		}
	}
	err = d.Do(func() error {
		pa, err := d.Scratch(0, 8*12)
		if err != nil {
			return err
		}
		pb, err := d.Scratch(1, 8*24)
		if err != nil {
			return err
		}
		pc, err := d.Scratch(2, 8*8)
		if err != nil {
			return err
		}
		if err := d.HtoD(pa, unsafe.Pointer(&as[0]), 8*12); err != nil {
			return err
		}
		if err := d.HtoD(pb, unsafe.Pointer(&bs[0]), 8*24); err != nil {
			return err
		}
		if err := d.Memset0(pc, 8*8); err != nil {
			return err
		}
		if err := d.DgemmStridedBatched(OpT, OpN, 2, 2, 3, 1, pa, 3, 6, pb, 3, 12, 0, pc, 2, 4, 2); err != nil {
			return err
		}
		return d.DtoH(unsafe.Pointer(&cs[0]), pc, 8*8)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range wantS {
		if math.Abs(cs[i]-wantS[i]) > 1e-12*(1+math.Abs(wantS[i])) {
			t.Fatalf("DgemmStridedBatched: got %v, want %v", cs, wantS)
		}
	}
}

func TestFakeCopiesAndScratch(t *testing.T) {
	d, _ := openFake(t, 0)
	src := []byte("0123456789abcdef")
	got := make([]byte, 16)
	err := d.Do(func() error {
		p, err := d.Scratch(3, 16)
		if err != nil {
			return err
		}
		if q, err := d.Scratch(3, 8); err != nil || q != p {
			t.Errorf("Scratch with a smaller size: %#x, %v; want the same buffer %#x", q, err, p)
		}
		q, err := d.Scratch(4, 16)
		if err != nil {
			return err
		}
		if err := d.HtoD(p, unsafe.Pointer(&src[0]), 16); err != nil {
			return err
		}
		if err := d.DtoD(q, p, 16); err != nil {
			return err
		}
		if err := d.Memset0(q+4, 4); err != nil {
			return err
		}
		if err := d.DtoH(unsafe.Pointer(&got[0]), q, 16); err != nil {
			return err
		}
		if err := d.HtoD(p, nil, 0); err != nil { // zero bytes: nothing to do
			return err
		}
		big, err := d.Scratch(3, 1<<20)
		if err != nil {
			return err
		}
		if d.scratch[3].size < 1<<20 || big == 0 {
			t.Errorf("Scratch grew to %d bytes", d.scratch[3].size)
		}
		if _, err := d.Scratch(8, 1); err == nil {
			t.Error("Scratch slot 8 accepted")
		}
		free, total, err := d.MemGetInfo()
		if err != nil || free != 1000 || total != 2000 {
			t.Errorf("MemGetInfo = %d, %d, %v", free, total, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "0123\x00\x00\x00\x0089abcdef"; string(got) != want {
		t.Errorf("copies: got %q, want %q", got, want)
	}
}

func TestFakeModuleLaunch(t *testing.T) {
	d, f := openFake(t, 0)
	const src = `extern "C" __global__ void k(double* x, int n) {}`
	before := nvrtcCompiles.Load()
	err := d.Do(func() error {
		m, err := d.Module("k.cu", src)
		if err != nil {
			return err
		}
		if m2, err := d.Module("k.cu", src); err != nil || m2 != m {
			t.Errorf("Module is not memoised: %p %p %v", m, m2, err)
		}
		if _, err := d.Module("k.cu", src+" "); err == nil {
			t.Error("Module accepted another source under a loaded name")
		}
		fn, err := m.Func("k")
		if err != nil {
			return err
		}
		if fn2, _ := m.Func("k"); fn2 != fn {
			t.Error("Func is not memoised")
		}
		if _, err := m.Func("missing"); err == nil || !strings.Contains(err.Error(), `"missing"`) || !strings.Contains(err.Error(), "CUDA_ERROR_NOT_FOUND") {
			t.Errorf("missing kernel: %v", err)
		}
		if err := fn.SetMaxDynamicShared(65536); err != nil {
			return err
		}
		if r := fakeLast(t, f.cuda); r.name != "cuFuncSetAttribute" || r.i[0] != 0xf0 || r.i[1] != 8 || r.i[2] != 65536 {
			t.Errorf("cuFuncSetAttribute recorded %+v", r)
		}
		args := []any{DevPtr(0xdead0000), int(-5), int32(-7), int64(1 << 40), uint32(0xfffffff0), uint64(1 << 63), 2.5, float32(-1.5)}
		if err := d.Launch(fn, [3]uint32{uint32(len(args)), 2, 3}, [3]uint32{128, 1, 1}, 4096, args...); err != nil {
			return err
		}
		r := fakeLast(t, f.cuda)
		want := []int64{0xdead0000, -5, int64(uint32(0xfffffff9)), 1 << 40, 0xfffffff0, math.MinInt64, int64(math.Float64bits(2.5)), int64(math.Float32bits(-1.5))}
		if r.name != "cuLaunchKernel" || r.i[0] != 0xf0 || r.i[1] != 8 || r.i[2] != 2 || r.i[3] != 3 || r.i[4] != 128 ||
			r.i[5] != 1 || r.i[6] != 1 || r.i[7] != 4096 || r.i[8] != 0x5e || r.i[9] != 0 {
			t.Errorf("launch configuration recorded %+v", r.i[:10])
		}
		for i, w := range want {
			g := r.i[10+i]
			switch args[i].(type) {
			case int32, uint32, float32: // 4-byte arguments: the kernel reads the low half
				g, w = int64(uint32(g)), int64(uint32(w))
			}
			if g != w {
				t.Errorf("argument %d (%T): kernel sees %#x, want %#x", i, args[i], g, w)
			}
		}
		if err := d.Launch(fn, [3]uint32{0, 1, 1}, [3]uint32{1, 1, 1}, 0, DevPtr(1)); err != nil {
			t.Errorf("empty grid: %v", err)
		}
		if err := d.Launch(fn, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, "bad"); err == nil {
			t.Error("Launch accepted a string argument")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := nvrtcCompiles.Load() - before; n != 1 {
		t.Errorf("%d compilations, want 1", n)
	}
	if r := fakeLast(t, f.nvrtc); r.name != "nvrtcCompileProgram" || r.i[0] != 3 ||
		r.i[1] != int64(len("--gpu-architecture=sm_90")) || r.i[2] != int64(len("--std=c++17")) || r.i[3] != int64(len("-default-device")) {
		t.Errorf("NVRTC options recorded %+v", r.i[:4])
	}

	// A second device compiles nothing: the image comes from the disk cache.
	d2, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	before = nvrtcCompiles.Load()
	err = d2.Do(func() error {
		m, err := d2.Module("k.cu", src)
		if err == nil && !m.cached {
			t.Error("second device did not use the cache")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := nvrtcCompiles.Load() - before; n != 0 {
		t.Errorf("%d compilations with a warm cache, want 0", n)
	}
	entries, _ := filepath.Glob(filepath.Join(os.Getenv("GEOVB_KERNEL_CACHE"), "*.cubin"))
	if len(entries) != 1 {
		t.Errorf("cache holds %v, want one .cubin", entries)
	}
}

func TestFakeDriverTooOld(t *testing.T) {
	d, _ := openFake(t, cudaErrorUnsupportedPTXVersion)
	err := d.Do(func() error {
		_, err := d.Module("old.cu", `extern "C" __global__ void k() {}`)
		return err
	})
	var e *Error
	if !errors.As(err, &e) || e.Code != cudaErrorUnsupportedPTXVersion {
		t.Fatalf("load with 222: %v", err)
	}
	for _, s := range []string{"too old", "12.4", "12040", "NVRTC 12.8", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
}

func TestFakeCorruptCacheEntry(t *testing.T) {
	d, _ := openFake(t, 0)
	dir := os.Getenv("GEOVB_KERNEL_CACHE")
	const src = `extern "C" __global__ void c() {}`
	key := d.nvrtc.cacheKey("c.cu", src, "sm_90", compileOptions("sm_90", nil))
	path := filepath.Join(dir, key+".cubin")
	if err := os.WriteFile(path, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := nvrtcCompiles.Load()
	err := d.Do(func() error {
		_, err := d.Module("c.cu", src)
		return err
	})
	if err != nil {
		t.Fatalf("Module with a corrupt cache entry: %v", err)
	}
	if n := nvrtcCompiles.Load() - before; n != 1 {
		t.Errorf("%d compilations, want 1 (recompiled)", n)
	}
	if b, _ := os.ReadFile(path); !validImage(b, true) {
		t.Errorf("cache entry not rewritten: %q", b)
	}
	// An entry that passes the header check but does not load is rebuilt too.
	const src2 = `extern "C" __global__ void c2() {}`
	path2 := filepath.Join(dir, d.nvrtc.cacheKey("c2.cu", src2, "sm_90", compileOptions("sm_90", nil))+".cubin")
	if err := os.WriteFile(path2, []byte("\x7fELF but broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	fakeCall(t, fakeBuilt.cuda, "fake_config", 0, 1, cudaErrorInvalidImage)
	before = nvrtcCompiles.Load()
	err = d.Do(func() error {
		_, err := d.Module("c2.cu", src2)
		return err
	})
	if err == nil || nvrtcCompiles.Load()-before != 1 {
		t.Errorf("unloadable cached image: err %v, %d compilations (want an error after 1 recompilation)", err, nvrtcCompiles.Load()-before)
	}
}

func TestFakeCompileError(t *testing.T) {
	d, _ := openFake(t, 0)
	err := d.Do(func() error {
		_, err := d.Module("bad.cu", "#error nope")
		return err
	})
	var e *Error
	if !errors.As(err, &e) || e.Lib != "nvrtc" || e.Name != "NVRTC_ERROR_COMPILATION" || !strings.Contains(e.Msg, "k.cu(3): error: fake") {
		t.Fatalf("compile error: %#v", err)
	}
}

// TestFakeBLASArguments checks that every cuBLAS wrapper passes each argument in its place.
func TestFakeBLASArguments(t *testing.T) {
	d, f := openFake(t, 0)
	check := func(name string, ints []int64, dbls ...float64) {
		t.Helper()
		r := fakeLast(t, f.cublas)
		if r.name != name {
			t.Errorf("last call %q, want %q", r.name, name)
			return
		}
		for i, w := range ints {
			if r.i[i] != w {
				t.Errorf("%s: integer argument %d = %d, want %d", name, i, r.i[i], w)
			}
		}
		for i, w := range dbls {
			if r.f[i] != w {
				t.Errorf("%s: double %d = %g, want %g", name, i, r.f[i], w)
			}
		}
	}
	err := d.Do(func() error {
		if err := d.Dsyrk(Upper, OpT, 5, 7, 1.5, 0xa0, 11, -2, 0xc0, 13); err != nil {
			return err
		}
		check("cublasDsyrk_v2", []int64{0xb1, 1, 1, 5, 7, 0xa0, 11, 0xc0, 13}, 1.5, -2)
		if err := d.Dtrsm(Right, Lower, OpT, Unit, 3, 4, 0.25, 0xa0, 5, 0xb0, 6); err != nil {
			return err
		}
		check("cublasDtrsm_v2", []int64{0xb1, 1, 0, 1, 1, 3, 4, 0xa0, 5, 0xb0, 6}, 0.25)
		if err := d.DtrsmBatched(Left, Upper, OpN, NonUnit, 8, 9, -1, 0xa8, 10, 0xb8, 11, 12); err != nil {
			return err
		}
		check("cublasDtrsmBatched", []int64{0xb1, 0, 1, 0, 0, 8, 9, 0xa8, 10, 0xb8, 11, 12}, -1)
		if err := d.Dtrmm(Right, Upper, OpN, Unit, 2, 3, 3.5, 0xa0, 4, 0xb0, 5, 0xc0, 6); err != nil {
			return err
		}
		check("cublasDtrmm_v2", []int64{0xb1, 1, 1, 0, 1, 2, 3, 0xa0, 4, 0xb0, 5, 0xc0, 6}, 3.5)
		if err := d.Dgeam(OpT, OpN, 7, 8, 0.5, 0xa0, 9, 0.75, 0xb0, 10, 0xc0, 11); err != nil {
			return err
		}
		check("cublasDgeam", []int64{0xb1, 1, 0, 7, 8, 0xa0, 9, 0xb0, 10, 0xc0, 11}, 0.5, 0.75)
		err := d.Dgeam(OpN, OpN, 99, 1, 1, 0, 99, 0, 0, 99, 0, 99)
		var e *Error
		if !errors.As(err, &e) || e.Lib != "cublas" || e.Name != "CUBLAS_STATUS_ALLOC_FAILED" || !IsOutOfMemory(err) {
			t.Errorf("cuBLAS alloc failure: %v", err)
		}
		if err := d.Dgemm(OpN, OpN, -1, 1, 1, 1, 0, 1, 0, 1, 0, 0, 1); err == nil {
			t.Error("Dgemm accepted m = -1")
		}
		if err := d.Dgemm(OpN, OpN, 1<<31, 1, 1, 1, 0, 1<<31, 0, 1, 0, 0, 1<<31); err == nil {
			t.Error("Dgemm accepted m = 2^31")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFakeSolverArguments checks the cuSOLVER wrappers' arguments, workspaces and the Jacobi parameters.
func TestFakeSolverArguments(t *testing.T) {
	d, f := openFake(t, 0)
	last := func(name string) fakeRecord {
		t.Helper()
		r := fakeLast(t, f.cusolver)
		if r.name != name {
			t.Fatalf("last call %q, want %q", r.name, name)
		}
		return r
	}
	eq := func(what string, got, want int64) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %d (%#x), want %d (%#x)", what, got, got, want, want)
		}
	}
	err := d.Do(func() error {
		if err := d.DpotrfBatched(Upper, 6, 0xa0, 7, 0x1f0, 9); err != nil {
			return err
		}
		r := last("cusolverDnDpotrfBatched")
		for i, w := range []int64{0x51, 1, 6, 0xa0, 7, 0x1f0, 9} {
			eq("DpotrfBatched argument", r.i[i], w)
		}

		a, err := d.MemAlloc(8)
		if err != nil {
			return err
		}
		defer d.MemFree(a)
		if err := d.Dpotrf(Lower, 10, a, 11, 0x1f0); err != nil {
			return err
		}
		r = last("cusolverDnDpotrf")
		ws6 := d.scratch[slotFactor]
		eq("Dpotrf workspace", r.i[5], int64(ws6.p))
		eq("Dpotrf lwork", r.i[6], 1010)
		for i, w := range []int64{0x51, 0, 10, int64(a), 11} {
			eq("Dpotrf argument", r.i[i], w)
		}
		eq("Dpotrf info", r.i[7], 0x1f0)
		if ws6.size < 8*1010 {
			t.Errorf("slot 6 holds %d bytes, want ≥ %d", ws6.size, 8*1010)
		}

		if err := d.Dgeqrf(12, 5, a, 12, 0x7a0, 0x1f0); err != nil {
			return err
		}
		r = last("cusolverDnDgeqrf")
		for i, w := range []int64{0x51, 12, 5, int64(a), 12, 0x7a0, int64(d.scratch[slotFactor].p), 2012, 0x1f0} {
			eq("Dgeqrf argument", r.i[i], w)
		}
		if err := d.Dorgqr(12, 5, 4, a, 12, 0x7a0, 0x1f0); err != nil {
			return err
		}
		r = last("cusolverDnDorgqr")
		for i, w := range []int64{0x51, 12, 5, 4, int64(a), 12, 0x7a0, int64(d.scratch[slotFactor].p), 3004, 0x1f0} {
			eq("Dorgqr argument", r.i[i], w)
		}
		if err := d.Dsyevd(true, Upper, 20, a, 21, 0xe0, 0x1f0); err != nil {
			return err
		}
		r = last("cusolverDnDsyevd")
		for i, w := range []int64{0x51, 1, 1, 20, int64(a), 21, 0xe0, int64(d.scratch[slotEigen].p), 4020, 0x1f0} {
			eq("Dsyevd argument", r.i[i], w)
		}
		if err := d.DsyevjBatched(false, Lower, 32, a, 32, 0xe0, 0x1f0, 77); err != nil {
			return err
		}
		r = last("cusolverDnDsyevjBatched")
		for i, w := range []int64{0x51, 0, 0, 32, int64(a), 32, 0xe0, int64(d.scratch[slotEigen].p), 5077, 0x1f0, 1, 77, 100, 1, 1} {
			eq("DsyevjBatched argument", r.i[i], w)
		}
		if r.f[0] != 1e-14 {
			t.Errorf("syevj tolerance %g, want 1e-14", r.f[0])
		}
		if n := fakeCall(t, f.cusolver, "fake_live_infos"); n != 0 {
			t.Errorf("%d syevjInfo left undestroyed", n)
		}
		if err := d.DsyevjBatched(true, Lower, 33, a, 33, 0xe0, 0x1f0, 1); err == nil {
			t.Error("DsyevjBatched accepted n = 33")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFakeDoPanicAndClose(t *testing.T) {
	useFakes(t, 0, 1, 0)
	d, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want the panic of f", p)
			}
		}()
		d.Do(func() error { panic("boom") })
	}()
	want := errors.New("mine")
	if err := d.Do(func() error { return want }); err != want {
		t.Errorf("Do returned %v, want f's error", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := d.Do(func() error { return nil }); !errors.Is(err, errClosed) {
		t.Errorf("Do after Close: %v", err)
	}
}
