package cu

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// mkdirs creates the folders under root and returns their full paths.
func mkdirs(t *testing.T, root string, rel ...string) []string {
	t.Helper()
	var out []string
	for _, r := range rel {
		p := filepath.Join(root, r)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func TestSearchDirsOrder(t *testing.T) {
	root := t.TempDir()
	d := mkdirs(t, root,
		"explicit1", "explicit2", "cudahome/lib64", "cudapath/lib64",
		"home/.local/lib/python3.12/site-packages/nvidia/cublas/lib",
		"home/.local/lib/python3.12/site-packages/nvidia/cusolver/lib",
		"venv/lib/python3.11/site-packages/nvidia/nvrtc/lib",
		"conda/lib/python3.10/dist-packages/nvidia/cu13/lib",
		"conda/lib",
		"venv/lib/python3.11/site-packages/nvidia/nolib", // no lib folder: not listed
	)
	t.Setenv("GEOVB_CUDA_LIB_DIR", d[0]+string(os.PathListSeparator)+filepath.Join(root, "missing")+string(os.PathListSeparator)+d[1]+string(os.PathListSeparator)+d[0])
	t.Setenv("CUDA_HOME", filepath.Join(root, "cudahome"))
	t.Setenv("CUDA_PATH", filepath.Join(root, "cudapath"))
	t.Setenv("HOME", filepath.Join(root, "home"))
	t.Setenv("VIRTUAL_ENV", filepath.Join(root, "venv"))
	t.Setenv("CONDA_PREFIX", filepath.Join(root, "conda"))

	var got []string
	for _, p := range SearchDirs() {
		if strings.HasPrefix(p, root) {
			got = append(got, p)
		}
	}
	want := []string{d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8]}
	if !slices.Equal(got, want) {
		t.Errorf("SearchDirs under the test root:\n got %q\nwant %q", got, want)
	}
}

func TestSearchDirsEmptyEnv(t *testing.T) {
	for _, v := range []string{"GEOVB_CUDA_LIB_DIR", "CUDA_HOME", "CUDA_PATH", "VIRTUAL_ENV", "CONDA_PREFIX"} {
		t.Setenv(v, "")
	}
	t.Setenv("HOME", t.TempDir())
	for _, d := range SearchDirs() {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("SearchDirs lists %q, which is not a folder", d)
		}
	}
}

func TestCandidatesOrder(t *testing.T) {
	root := t.TempDir()
	d := mkdirs(t, root, "a", "b")
	for _, f := range []string{"a/libcublas.so.12", "b/libcublas.so.13", "b/libcublas.so.11"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := candidates(specCUBLAS, d)
	want := []string{
		filepath.Join(d[0], "libcublas.so.12"),
		filepath.Join(d[1], "libcublas.so.13"), filepath.Join(d[1], "libcublas.so.11"),
		"libcublas.so.13", "libcublas.so.12", "libcublas.so.11",
	}
	if !slices.Equal(got, want) {
		t.Errorf("candidates:\n got %q\nwant %q", got, want)
	}
}

func TestMissingLibraryNamesWhatWasTried(t *testing.T) {
	dir := t.TempDir()
	// A file with the right name that is not a shared object: dlopen fails on it and the error says why.
	bogus := filepath.Join(dir, "libgeovb-test-none.so.9")
	if err := os.WriteFile(bogus, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GEOVB_CUDA_LIB_DIR", dir)
	spec := libSpec{"none", "the test library", "GEOVB_LIBNONE_TEST", []string{"libgeovb-test-none.so.9"}}
	t.Setenv(spec.env, "")
	_, err := openLibrary(spec)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("error %v does not wrap ErrUnavailable", err)
	}
	for _, s := range []string{bogus, "searched " + dir, "libgeovb-test-none.so.9: ", "GEOVB_LIBNONE_TEST"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	t.Logf("%v", err)
}

func TestMissingOverride(t *testing.T) {
	p := filepath.Join(t.TempDir(), "libcuda.so.1")
	t.Setenv("GEOVB_LIBCUDA", p)
	_, err := Open(0)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "GEOVB_LIBCUDA") {
		t.Fatalf("Open with a missing GEOVB_LIBCUDA: %v; want ErrUnavailable naming %s", err, p)
	}
	t.Setenv("GEOVB_LIBCUDA", "")
	t.Setenv("GEOVB_LIBNVRTC", p)
	if _, err := LoadNVRTC(); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), p) {
		t.Fatalf("LoadNVRTC with a missing GEOVB_LIBNVRTC: %v", err)
	}
}

func TestFakeMissingSymbol(t *testing.T) {
	f := useFakes(t, 0, 1, 0)
	t.Setenv("GEOVB_LIBCUDA", f.cudaMissing)
	_, err := Open(0)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "cuStreamSynchronize") || !strings.Contains(err.Error(), f.cudaMissing) {
		t.Fatalf("Open with a driver lacking cuStreamSynchronize: %v", err)
	}
}

func TestFakeNoDevice(t *testing.T) {
	useFakes(t, cudaErrorNoDevice, 1, 0)
	_, err := Open(0)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no CUDA device") {
		t.Fatalf("cuInit = 100: %v; want ErrUnavailable, no CUDA device", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Call != "cuInit" || e.Code != 100 || e.Name != "CUDA_ERROR_NO_DEVICE" || e.Msg != "fake: no CUDA-capable device is detected" {
		t.Fatalf("cuInit = 100: %#v; want the fake's *Error", e)
	}

	useFakes(t, 0, 0, 0)
	if _, err := Open(0); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no CUDA device") {
		t.Fatalf("zero devices: %v; want ErrUnavailable, no CUDA device", err)
	}

	useFakes(t, 0, 1, 0)
	if _, err := Open(1); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no CUDA device 1") {
		t.Fatalf("ordinal 1 of 1 device: %v", err)
	}

	useFakes(t, 999, 1, 0)
	if _, err := Open(0); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "CUDA_ERROR_UNKNOWN_999") {
		t.Fatalf("cuInit = 999: %v", err)
	}
}

func TestFakeMissingCUBLAS(t *testing.T) {
	useFakes(t, 0, 1, 0)
	p := filepath.Join(t.TempDir(), "libcublas.so.13")
	t.Setenv("GEOVB_LIBCUBLAS", p)
	if _, err := Open(0); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), p) {
		t.Fatalf("missing cuBLAS: %v", err)
	}
}

// TestPreloadNeeded checks that a library whose dependency lives in a folder the dynamic linker does not search
// (as with Python wheels) loads when that folder is among the search folders.
func TestPreloadNeeded(t *testing.T) {
	requireGCC(t)
	root := t.TempDir()
	d := mkdirs(t, root, "main", "dep")
	gcc := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", args, err, out)
		}
	}
	src := filepath.Join(root, "dep.c")
	os.WriteFile(src, []byte("int geovb_dep_value(void) { return 42; }\n"), 0o644)
	gcc("-shared", "-fPIC", "-Wl,-soname,libcugeovbdep.so", "-o", filepath.Join(d[1], "libcugeovbdep.so"), src)
	msrc := filepath.Join(root, "main.c")
	os.WriteFile(msrc, []byte("int geovb_dep_value(void); int geovb_main_value(void) { return geovb_dep_value() + 1; }\n"), 0o644)
	mainLib := filepath.Join(d[0], "libgeovbmain.so")
	gcc("-shared", "-fPIC", "-o", mainLib, msrc, "-L"+d[1], "-lcugeovbdep")

	if _, err := dlopen(mainLib, nil); err == nil {
		t.Fatal("the main library loaded without its dependency's folder; the test proves nothing")
	}
	h, err := dlopen(mainLib, []string{d[1]})
	if err != nil {
		t.Fatalf("dlopen with the dependency's folder searched: %v", err)
	}
	l := &library{path: mainLib, handle: h}
	var fn uintptr
	if err := l.resolve([]symbol{{name: "geovb_main_value", ptr: &fn}}); err != nil {
		t.Fatal(err)
	}
	if r := call(fn); r != 43 {
		t.Fatalf("geovb_main_value() = %d, want 43", r)
	}
	var opt uintptr = 1
	if err := l.resolve([]symbol{{name: "geovb_absent", ptr: &opt, optional: true}}); err != nil || opt != 0 {
		t.Fatalf("optional absent symbol: err %v, ptr %#x", err, opt)
	}
	if err := l.resolve([]symbol{{name: "geovb_absent", ptr: &opt}}); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "geovb_absent") {
		t.Fatalf("required absent symbol: %v", err)
	}
}
