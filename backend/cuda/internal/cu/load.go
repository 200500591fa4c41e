package cu

import (
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// libSpec says how one library is found: the variable that overrides the search and the sonames to try.
type libSpec struct {
	key     string   // key in DeviceInfo.Paths: "cuda", "cublas", "cusolver", "nvrtc"
	title   string   // name for messages
	env     string   // full-path override
	sonames []string // newest first
}

var (
	specCUDA     = libSpec{"cuda", "the CUDA driver", "GEOVB_LIBCUDA", []string{"libcuda.so.1"}}
	specCUBLAS   = libSpec{"cublas", "cuBLAS", "GEOVB_LIBCUBLAS", []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}}
	specCUSOLVER = libSpec{"cusolver", "cuSOLVER", "GEOVB_LIBCUSOLVER", []string{"libcusolver.so.12", "libcusolver.so.11"}}
	specNVRTC    = libSpec{"nvrtc", "NVRTC", "GEOVB_LIBNVRTC", []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"}}
)

// dlopenMode resolves every symbol at load time (a library that cannot be linked fails here, not at a call) and
// keeps the library's symbols out of the global namespace, so a library loaded here never interposes on another.
const dlopenMode = purego.RTLD_NOW | purego.RTLD_LOCAL

// SearchDirs returns the folders searched for the CUDA libraries, in order, keeping only those that exist:
//
//  1. GEOVB_CUDA_LIB_DIR (colon-separated), for an explicit choice;
//  2. $CUDA_HOME/lib64, $CUDA_PATH/lib64 and /usr/local/cuda/lib64, where toolkits install;
//  3. the folders of NVIDIA's Python wheels, site-packages/nvidia/*/lib and dist-packages/nvidia/*/lib under
//     /usr/lib/python3*, /usr/local/lib/python3*, ~/.local/lib/python3*, $VIRTUAL_ENV/lib/python3* and
//     $CONDA_PREFIX/lib/python3*, so a machine with only pip-installed CUDA libraries works;
//  4. $CONDA_PREFIX/lib, where conda's CUDA packages install.
//
// After these, each library is tried by bare soname, which leaves the search to the dynamic linker
// (LD_LIBRARY_PATH, the ld.so cache); that is how the driver, libcuda.so.1, is normally found.
func SearchDirs() []string {
	var dirs []string
	seen := map[string]bool{}
	add := func(d string) {
		if d == "" {
			return
		}
		d = filepath.Clean(d)
		if seen[d] {
			return
		}
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return
		}
		seen[d] = true
		dirs = append(dirs, d)
	}
	for _, d := range filepath.SplitList(os.Getenv("GEOVB_CUDA_LIB_DIR")) {
		add(d)
	}
	for _, v := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if h := os.Getenv(v); h != "" {
			add(filepath.Join(h, "lib64"))
		}
	}
	add("/usr/local/cuda/lib64")

	var roots []string
	roots = append(roots, globSorted("/usr/lib/python3*")...)
	roots = append(roots, globSorted("/usr/local/lib/python3*")...)
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		roots = append(roots, globSorted(filepath.Join(home, ".local/lib/python3*"))...)
	}
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := os.Getenv(v); p != "" {
			roots = append(roots, globSorted(filepath.Join(p, "lib/python3*"))...)
		}
	}
	for _, r := range roots {
		for _, pk := range []string{"site-packages", "dist-packages"} {
			for _, d := range globSorted(filepath.Join(r, pk, "nvidia/*/lib")) {
				add(d)
			}
		}
	}
	if p := os.Getenv("CONDA_PREFIX"); p != "" {
		add(filepath.Join(p, "lib"))
	}
	return dirs
}

// globSorted is filepath.Glob in lexical order, ignoring bad patterns (there are none here).
func globSorted(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	sort.Strings(m)
	return m
}

// candidates lists the paths tried for spec, in order: each existing dir/soname, then the bare sonames.
func candidates(spec libSpec, dirs []string) []string {
	var c []string
	for _, d := range dirs {
		for _, so := range spec.sonames {
			if p := filepath.Join(d, so); fileExists(p) {
				c = append(c, p)
			}
		}
	}
	return append(c, spec.sonames...)
}

// fileExists reports whether p names something that is not a folder (following links).
func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// library is one opened shared object.
type library struct {
	path   string
	handle uintptr
}

// openLibrary finds and opens spec's library: the override variable when set (and nothing else), otherwise the
// first candidate that dlopen accepts. The error wraps ErrUnavailable and lists every path tried with dlopen's
// reason.
func openLibrary(spec libSpec) (*library, error) {
	if p := os.Getenv(spec.env); p != "" {
		h, err := dlopen(p, SearchDirs())
		if err != nil {
			return nil, unavailable(nil, "cu: cannot load %s from %s=%s: %v", spec.title, spec.env, p, err)
		}
		return &library{path: p, handle: h}, nil
	}
	dirs := SearchDirs()
	var tried []string
	for _, p := range candidates(spec, dirs) {
		h, err := dlopen(p, dirs)
		if err == nil {
			return &library{path: p, handle: h}, nil
		}
		if msg := err.Error(); strings.HasPrefix(msg, p+":") {
			tried = append(tried, msg) // dlerror's text starts with the path
		} else {
			tried = append(tried, p+": "+msg)
		}
	}
	where := "no library folder found"
	if len(dirs) > 0 {
		where = "searched " + strings.Join(dirs, ", ")
	}
	return nil, unavailable(nil, "cu: cannot load %s (%s; set GEOVB_CUDA_LIB_DIR or %s): tried %s",
		spec.title, where, spec.env, strings.Join(tried, "; "))
}

// dlopen opens path after preloading the CUDA libraries it depends on that sit in its own folder or in dirs, so a
// library found in a folder the dynamic linker does not search (a Python wheel, a toolkit outside ld.so.conf) still
// links.
func dlopen(path string, dirs []string) (uintptr, error) {
	if strings.Contains(path, "/") {
		preloadNeeded(path, dirs, map[string]bool{}, 0)
	}
	return purego.Dlopen(path, dlopenMode)
}

// preloadNeeded opens, depth first, the DT_NEEDED entries of path that are CUDA libraries (libcu*, libnv*) found
// in path's folder or in dirs. Once loaded, the dynamic linker matches later DT_NEEDED entries against them by
// soname. Failures are ignored: dlopen of path itself then reports what is missing.
func preloadNeeded(path string, dirs []string, seen map[string]bool, depth int) {
	if depth > 4 {
		return
	}
	f, err := elf.Open(path)
	if err != nil {
		return
	}
	needed, err := f.ImportedLibraries()
	f.Close()
	if err != nil {
		return
	}
	search := append([]string{filepath.Dir(path)}, dirs...)
	for _, n := range needed {
		if seen[n] || !(strings.HasPrefix(n, "libcu") || strings.HasPrefix(n, "libnv")) {
			continue
		}
		seen[n] = true
		for _, d := range search {
			p := filepath.Join(d, n)
			if !fileExists(p) {
				continue
			}
			preloadNeeded(p, dirs, seen, depth+1)
			_, _ = purego.Dlopen(p, dlopenMode)
			break
		}
	}
}

// symbol is one entry point to resolve into *ptr.
type symbol struct {
	name     string
	ptr      *uintptr
	optional bool // absent in some supported versions; callers check for 0
}

// resolve looks every symbol up with dlsym. A missing required symbol is an error wrapping ErrUnavailable that
// names it: the library is too old or not the one expected.
func (l *library) resolve(syms []symbol) error {
	for _, s := range syms {
		p, err := purego.Dlsym(l.handle, s.name)
		if err != nil || p == 0 {
			if s.optional {
				*s.ptr = 0
				continue
			}
			return unavailable(nil, "cu: %s has no symbol %s (library too old or not the expected one)", l.path, s.name)
		}
		*s.ptr = p
	}
	return nil
}

// loadLibrary opens spec's library and resolves syms in it.
func loadLibrary(spec libSpec, syms []symbol) (*library, error) {
	l, err := openLibrary(spec)
	if err != nil {
		return nil, err
	}
	if err := l.resolve(syms); err != nil {
		return nil, err
	}
	return l, nil
}

// call invokes the C function fn with args and returns its int status (the low 32 bits of the result register).
// Like purego.SyscallN it is marked uintptrescapes: a uintptr(unsafe.Pointer(&x)) written in the argument list
// keeps x alive, and off the stack, until call returns.
//
//go:uintptrescapes
func call(fn uintptr, args ...uintptr) int32 {
	r, _, _ := purego.SyscallN(fn, args...)
	return int32(r)
}

// goString copies the NUL-terminated C string at p.
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// goStringAt copies the NUL-terminated C string whose address a C function returned.
func goStringAt(addr uintptr) string {
	return goString(*(**byte)(unsafe.Pointer(&addr)))
}

// cBytes returns s as a NUL-terminated byte slice for C.
func cBytes(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// errClosed is returned by Do and Post on a closed Device or Thread.
var errClosed = errors.New("cu: device is closed")
