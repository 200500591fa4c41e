package cu

import (
	"debug/elf"
	"os"
	"path/filepath"
	"testing"
)

// TestRealLibrarySymbols checks every entry point of the binding's tables against real CUDA libraries in
// GEOVB_CUDA_LIB_DIR: with dlopen and dlsym when the library loads, else (a dependency such as libcublasLt missing
// on a machine that only has headers and some libraries) by reading the library's dynamic symbol table.
func TestRealLibrarySymbols(t *testing.T) {
	if os.Getenv("GEOVB_CUDA_LIB_DIR") == "" {
		t.Skip("GEOVB_CUDA_LIB_DIR not set: no real CUDA libraries to check the symbol tables against")
	}
	dirs := filepath.SplitList(os.Getenv("GEOVB_CUDA_LIB_DIR"))
	var drv driverAPI
	var blas cublasAPI
	var sol cusolverAPI
	var nv nvrtcAPI
	checked := 0
	for _, c := range []struct {
		spec libSpec
		syms []symbol
	}{
		{specCUDA, drv.symbols()},
		{specCUBLAS, blas.symbols()},
		{specCUSOLVER, sol.symbols()},
		{specNVRTC, nv.symbols()},
	} {
		var path string
		if found := candidates(c.spec, dirs); len(found) > len(c.spec.sonames) {
			path = found[0] // the first file found in the folders (the rest are bare sonames)
		}
		if path == "" {
			t.Logf("%s: none of %v in %v", c.spec.title, c.spec.sonames, dirs)
			continue
		}
		checked++
		h, err := dlopen(path, dirs)
		if err == nil {
			l := &library{path: path, handle: h}
			for _, s := range c.syms {
				var p uintptr
				if err := l.resolve([]symbol{{name: s.name, ptr: &p, optional: s.optional}}); err != nil {
					t.Errorf("%s: %v", path, err)
				} else if p == 0 {
					t.Logf("%s: optional %s absent", path, s.name)
				}
			}
			t.Logf("%s: all %d symbols resolve with dlsym", path, len(c.syms))
			continue
		}
		t.Logf("%s does not load here (%v); checking its dynamic symbol table instead", path, err)
		checkExports(t, path, c.syms)
	}
	// Without a driver, the toolkit's link stub (stubs/libcuda.so) exports the same entry points.
	for _, d := range dirs {
		if p := filepath.Join(d, "stubs", "libcuda.so"); fileExists(p) {
			checked++
			t.Logf("checking the driver's entry points against the link stub %s", p)
			checkExports(t, p, drv.symbols())
			break
		}
	}
	if checked == 0 {
		t.Skipf("no CUDA library found in %v", dirs)
	}
}

// checkExports reads path's dynamic symbol table and reports every required symbol of syms it does not define.
func checkExports(t *testing.T, path string, syms []symbol) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	dyn, err := f.DynamicSymbols()
	f.Close()
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	exported := map[string]bool{}
	for _, s := range dyn {
		if s.Section != elf.SHN_UNDEF && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			exported[s.Name] = true
		}
	}
	missing := 0
	for _, s := range syms {
		if exported[s.name] {
			continue
		}
		if s.optional {
			t.Logf("%s: optional %s absent", path, s.name)
			continue
		}
		t.Errorf("%s does not export %s", path, s.name)
		missing++
	}
	if missing == 0 {
		t.Logf("%s: all %d symbols exported", path, len(syms))
	}
}
