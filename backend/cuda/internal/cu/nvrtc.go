package cu

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
)

// nvrtcAPI holds the resolved NVRTC entry points (nvrtc.h).
type nvrtcAPI struct {
	nvrtcVersion, nvrtcGetErrorString, nvrtcCreateProgram, nvrtcDestroyProgram, nvrtcCompileProgram uintptr
	nvrtcGetProgramLogSize, nvrtcGetProgramLog, nvrtcGetPTXSize, nvrtcGetPTX, nvrtcGetCUBINSize     uintptr
	nvrtcGetCUBIN, nvrtcGetNumSupportedArchs, nvrtcGetSupportedArchs                                uintptr
}

func (a *nvrtcAPI) symbols() []symbol {
	return []symbol{
		{name: "nvrtcVersion", ptr: &a.nvrtcVersion},
		{name: "nvrtcGetErrorString", ptr: &a.nvrtcGetErrorString},
		{name: "nvrtcCreateProgram", ptr: &a.nvrtcCreateProgram},
		{name: "nvrtcDestroyProgram", ptr: &a.nvrtcDestroyProgram},
		{name: "nvrtcCompileProgram", ptr: &a.nvrtcCompileProgram},
		{name: "nvrtcGetProgramLogSize", ptr: &a.nvrtcGetProgramLogSize},
		{name: "nvrtcGetProgramLog", ptr: &a.nvrtcGetProgramLog},
		{name: "nvrtcGetPTXSize", ptr: &a.nvrtcGetPTXSize},
		{name: "nvrtcGetPTX", ptr: &a.nvrtcGetPTX},
		{name: "nvrtcGetCUBINSize", ptr: &a.nvrtcGetCUBINSize},
		{name: "nvrtcGetCUBIN", ptr: &a.nvrtcGetCUBIN},
		{name: "nvrtcGetNumSupportedArchs", ptr: &a.nvrtcGetNumSupportedArchs, optional: true},
		{name: "nvrtcGetSupportedArchs", ptr: &a.nvrtcGetSupportedArchs, optional: true},
	}
}

// NVRTC is the CUDA runtime compiler on its own. It needs no device, so kernels can be compiled, and their compile
// errors caught, on machines without a GPU. Its methods may be called from any goroutine.
type NVRTC struct {
	api          nvrtcAPI
	lib          *library
	major, minor int
	archs        []int // supported architectures as 10*major+minor, ascending; nil when NVRTC cannot say
}

// LoadNVRTC loads NVRTC (see SearchDirs and GEOVB_LIBNVRTC). The error wraps ErrUnavailable when the library is not
// found or lacks an entry point.
//
// NVRTC loads its builtins library (libnvrtc-builtins.so.M.m) by soname when it compiles; when that file sits next
// to the NVRTC found, it is loaded first so compiling works without LD_LIBRARY_PATH.
func LoadNVRTC() (*NVRTC, error) {
	n := &NVRTC{}
	lib, err := loadLibrary(specNVRTC, n.api.symbols())
	if err != nil {
		return nil, err
	}
	n.lib = lib
	var major, minor int32
	if r := call(n.api.nvrtcVersion, uintptr(unsafe.Pointer(&major)), uintptr(unsafe.Pointer(&minor))); r != 0 {
		return nil, unavailable(n.newError("nvrtcVersion", r, ""), "cu: %s does not work", lib.path)
	}
	n.major, n.minor = int(major), int(minor)
	if n.api.nvrtcGetNumSupportedArchs != 0 && n.api.nvrtcGetSupportedArchs != 0 {
		var cnt int32
		if call(n.api.nvrtcGetNumSupportedArchs, uintptr(unsafe.Pointer(&cnt))) == 0 && cnt > 0 && cnt < 1000 {
			a := make([]int32, cnt)
			if call(n.api.nvrtcGetSupportedArchs, uintptr(unsafe.Pointer(&a[0]))) == 0 {
				for _, v := range a {
					n.archs = append(n.archs, int(v))
				}
				slices.Sort(n.archs)
			}
		}
	}
	n.preloadBuiltins()
	return n, nil
}

// preloadBuiltins loads libnvrtc-builtins.so.M.m from NVRTC's folder (also the folder of the file a symlink points
// to) or a search folder, so that NVRTC's own dlopen of it by soname finds it already loaded.
func (n *NVRTC) preloadBuiltins() {
	var dirs []string
	if strings.Contains(n.lib.path, "/") {
		dirs = append(dirs, filepath.Dir(n.lib.path))
		if real, err := filepath.EvalSymlinks(n.lib.path); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
	}
	dirs = append(dirs, SearchDirs()...)
	name := fmt.Sprintf("libnvrtc-builtins.so.%d.%d", n.major, n.minor)
	for _, d := range dirs {
		if b := filepath.Join(d, name); fileExists(b) {
			if _, err := dlopen(b, nil); err == nil {
				return
			}
		}
	}
}

// Version is NVRTC's version (nvrtcVersion), e.g. 12, 4. It is part of the kernel cache key.
func (n *NVRTC) Version() (major, minor int) { return n.major, n.minor }

// Path is the file NVRTC was loaded from (or the bare soname the dynamic linker resolved).
func (n *NVRTC) Path() string { return n.lib.path }

// SupportedArchs lists the architectures NVRTC can compile for, as 10*major+minor (e.g. 90 for sm_90), ascending;
// nil when this NVRTC cannot say.
func (n *NVRTC) SupportedArchs() []int { return slices.Clone(n.archs) }

// compileArch picks the target for a device of compute capability cc (10*major+minor): sm_cc when NVRTC knows it,
// otherwise PTX for the newest architecture below it, which the driver compiles for the device when loading.
func (n *NVRTC) compileArch(cc int) string {
	if n.archs == nil || slices.Contains(n.archs, cc) {
		return fmt.Sprintf("sm_%d", cc)
	}
	best := 0
	for _, a := range n.archs {
		if a < cc && a > best {
			best = a
		}
	}
	if best == 0 {
		return fmt.Sprintf("sm_%d", cc)
	}
	return fmt.Sprintf("compute_%d", best)
}

// compileOptions are the NVRTC options for arch: the architecture, C++17, device code by default, then extra.
func compileOptions(arch string, extra []string) []string {
	return append([]string{"--gpu-architecture=" + arch, "--std=c++17", "-default-device"}, extra...)
}

// nvrtcCompiles counts programs actually compiled (not served from the cache); tests read it.
var nvrtcCompiles atomic.Int64

// Compile compiles the CUDA C source src, named name in messages, for arch: "sm_XY" returns a CUBIN (nvrtcGetCUBIN),
// "compute_XY" returns NUL-terminated PTX (nvrtcGetPTX), either ready for cuModuleLoadData. The options are
// --gpu-architecture=arch, --std=c++17 and -default-device, then extra. A compile error is an *Error whose Msg
// holds NVRTC's log, with the file name and line of each diagnostic.
func (n *NVRTC) Compile(name, src, arch string, extra ...string) ([]byte, error) {
	return n.compile(name, src, arch, compileOptions(arch, extra))
}

func (n *NVRTC) newError(fn string, r int32, log string) *Error {
	e := &Error{Lib: "nvrtc", Call: fn, Code: int(r), Msg: log}
	if n.api.nvrtcGetErrorString != 0 {
		if p, _, _ := purego.SyscallN(n.api.nvrtcGetErrorString, uintptr(r)); p != 0 {
			e.Name = goStringAt(p)
		}
	}
	if e.Name == "" {
		e.Name = statusName("nvrtc", int(r))
	}
	return e
}

func (n *NVRTC) compile(name, src, arch string, opts []string) ([]byte, error) {
	cubin := strings.HasPrefix(arch, "sm_")
	if !cubin && !strings.HasPrefix(arch, "compute_") {
		return nil, fmt.Errorf("cu: NVRTC target %q: want sm_XY (CUBIN) or compute_XY (PTX)", arch)
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	csrc, cname := cBytes(src), cBytes(name)
	pin.Pin(&csrc[0])
	pin.Pin(&cname[0])
	copts := make([]*byte, len(opts))
	for i, o := range opts {
		b := cBytes(o)
		pin.Pin(&b[0])
		copts[i] = &b[0]
	}

	var prog uintptr
	r := call(n.api.nvrtcCreateProgram, uintptr(unsafe.Pointer(&prog)), uintptr(unsafe.Pointer(&csrc[0])),
		uintptr(unsafe.Pointer(&cname[0])), 0, 0, 0)
	if r != 0 {
		return nil, n.newError("nvrtcCreateProgram", r, "program "+name)
	}
	defer func() { call(n.api.nvrtcDestroyProgram, uintptr(unsafe.Pointer(&prog))) }()

	var optp uintptr
	if len(copts) > 0 {
		pin.Pin(&copts[0])
		optp = uintptr(unsafe.Pointer(&copts[0]))
	}
	nvrtcCompiles.Add(1)
	r = call(n.api.nvrtcCompileProgram, prog, uintptr(len(copts)), optp)
	if r != 0 {
		log := n.programLog(prog)
		return nil, n.newError("nvrtcCompileProgram", r,
			fmt.Sprintf("compiling %s for %s (options %s):\n%s", name, arch, strings.Join(opts, " "), log))
	}

	sizeFn, getFn, sizeName, getName := n.api.nvrtcGetCUBINSize, n.api.nvrtcGetCUBIN, "nvrtcGetCUBINSize", "nvrtcGetCUBIN"
	if !cubin {
		sizeFn, getFn, sizeName, getName = n.api.nvrtcGetPTXSize, n.api.nvrtcGetPTX, "nvrtcGetPTXSize", "nvrtcGetPTX"
	}
	var size uintptr
	if r := call(sizeFn, prog, uintptr(unsafe.Pointer(&size))); r != 0 {
		return nil, n.newError(sizeName, r, "program "+name)
	}
	if size == 0 {
		return nil, &Error{Lib: "nvrtc", Call: sizeName, Name: "NVRTC_SUCCESS", Msg: "program " + name + ": empty image for " + arch}
	}
	img := make([]byte, size)
	if r := call(getFn, prog, uintptr(unsafe.Pointer(&img[0]))); r != 0 {
		return nil, n.newError(getName, r, "program "+name)
	}
	return img, nil
}

// programLog returns NVRTC's log for prog (warnings and errors), trimmed.
func (n *NVRTC) programLog(prog uintptr) string {
	var size uintptr
	if call(n.api.nvrtcGetProgramLogSize, prog, uintptr(unsafe.Pointer(&size))) != 0 || size <= 1 {
		return ""
	}
	b := make([]byte, size)
	if call(n.api.nvrtcGetProgramLog, prog, uintptr(unsafe.Pointer(&b[0]))) != 0 {
		return ""
	}
	return strings.TrimSpace(string(bytes.TrimRight(b, "\x00")))
}

// kernelCacheDir is where compiled kernels are kept: GEOVB_KERNEL_CACHE when set ("off" disables the cache and gives
// ""), else UserCacheDir/geovb/kernels, else "" (no cache) when there is no user cache folder.
func kernelCacheDir() string {
	switch v := os.Getenv("GEOVB_KERNEL_CACHE"); v {
	case "off":
		return ""
	case "":
	default:
		return v
	}
	d, err := os.UserCacheDir()
	if err != nil || d == "" {
		return ""
	}
	return filepath.Join(d, "geovb", "kernels")
}

// cacheKey hashes everything that determines the image: name, source, options (which hold the architecture),
// architecture and NVRTC version. Fields are length-prefixed so no two inputs collide by concatenation.
func (n *NVRTC) cacheKey(name, src, arch string, opts []string) string {
	h := sha256.New()
	put := func(s string) {
		var l [8]byte
		binary.LittleEndian.PutUint64(l[:], uint64(len(s)))
		h.Write(l[:])
		h.Write([]byte(s))
	}
	put("geovb kernel cache v1")
	put(name)
	put(src)
	put(arch)
	put(fmt.Sprintf("nvrtc %d.%d", n.major, n.minor))
	for _, o := range opts {
		put(o)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// validImage is a cheap check of a cache entry: a CUBIN is an ELF file, PTX is NUL-terminated text with a .version
// directive. It catches truncated or foreign files; an entry that passes but does not load is rebuilt by Module.
func validImage(img []byte, cubin bool) bool {
	if cubin {
		return len(img) > 4 && string(img[:4]) == "\x7fELF"
	}
	return len(img) > 1 && img[len(img)-1] == 0 && bytes.Contains(img, []byte(".version"))
}

// compileCached is Compile through the disk cache in dir ("" disables it). refresh skips reading the cache (the
// entry is rewritten). cached reports whether the image came from the cache. Cache failures are never fatal: an
// unreadable or corrupt entry is recompiled, a failed write is ignored.
func (n *NVRTC) compileCached(dir, name, src, arch string, opts []string, refresh bool) (img []byte, cached bool, err error) {
	cubin := strings.HasPrefix(arch, "sm_")
	var path string
	if dir != "" {
		ext := ".ptx"
		if cubin {
			ext = ".cubin"
		}
		path = filepath.Join(dir, n.cacheKey(name, src, arch, opts)+ext)
		if !refresh {
			if b, err := os.ReadFile(path); err == nil && validImage(b, cubin) {
				return b, true, nil
			}
		}
	}
	img, err = n.compile(name, src, arch, opts)
	if err != nil {
		return nil, false, err
	}
	if path != "" {
		_ = writeFileAtomic(path, img)
	}
	return img, false, nil
}

// writeFileAtomic writes b to path through a temporary file in the same folder and a rename, so concurrent readers
// (other processes) see either no file or the whole file.
func writeFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	cerr := f.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp)
		if werr != nil {
			return werr
		}
		return cerr
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
