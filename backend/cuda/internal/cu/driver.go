package cu

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"
)

// DevPtr is a device address (CUdeviceptr). It is an integer, not a Go pointer: the garbage collector never sees
// device memory.
type DevPtr uintptr

// driverAPI holds the resolved driver entry points (cuda.h). The _v2 names are the ABI that the cuda.h macros
// (cuMemAlloc -> cuMemAlloc_v2, ...) have selected since CUDA 4 and that CUDA 13 still exports.
type driverAPI struct {
	lib *library

	cuInit, cuDriverGetVersion, cuDeviceGetCount, cuDeviceGet, cuDeviceGetName, cuDeviceGetAttribute          uintptr
	cuDeviceTotalMem, cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRelease, cuCtxSetCurrent                    uintptr
	cuStreamCreate, cuStreamSynchronize, cuStreamDestroy                                                      uintptr
	cuMemAlloc, cuMemFree, cuMemGetInfo, cuMemcpyHtoD, cuMemcpyDtoH, cuMemcpyDtoDAsync, cuMemsetD8Async       uintptr
	cuModuleLoadData, cuModuleUnload, cuModuleGetFunction, cuFuncSetAttribute, cuLaunchKernel, cuGetErrorName uintptr
	cuGetErrorString                                                                                          uintptr
}

func (a *driverAPI) symbols() []symbol {
	return []symbol{
		{name: "cuInit", ptr: &a.cuInit},
		{name: "cuDriverGetVersion", ptr: &a.cuDriverGetVersion},
		{name: "cuDeviceGetCount", ptr: &a.cuDeviceGetCount},
		{name: "cuDeviceGet", ptr: &a.cuDeviceGet},
		{name: "cuDeviceGetName", ptr: &a.cuDeviceGetName},
		{name: "cuDeviceGetAttribute", ptr: &a.cuDeviceGetAttribute},
		{name: "cuDeviceTotalMem_v2", ptr: &a.cuDeviceTotalMem},
		{name: "cuDevicePrimaryCtxRetain", ptr: &a.cuDevicePrimaryCtxRetain},
		{name: "cuDevicePrimaryCtxRelease_v2", ptr: &a.cuDevicePrimaryCtxRelease},
		{name: "cuCtxSetCurrent", ptr: &a.cuCtxSetCurrent},
		{name: "cuStreamCreate", ptr: &a.cuStreamCreate},
		{name: "cuStreamSynchronize", ptr: &a.cuStreamSynchronize},
		{name: "cuStreamDestroy_v2", ptr: &a.cuStreamDestroy},
		{name: "cuMemAlloc_v2", ptr: &a.cuMemAlloc},
		{name: "cuMemFree_v2", ptr: &a.cuMemFree},
		{name: "cuMemGetInfo_v2", ptr: &a.cuMemGetInfo},
		{name: "cuMemcpyHtoD_v2", ptr: &a.cuMemcpyHtoD},
		{name: "cuMemcpyDtoH_v2", ptr: &a.cuMemcpyDtoH},
		{name: "cuMemcpyDtoDAsync_v2", ptr: &a.cuMemcpyDtoDAsync},
		{name: "cuMemsetD8Async", ptr: &a.cuMemsetD8Async},
		{name: "cuModuleLoadData", ptr: &a.cuModuleLoadData},
		{name: "cuModuleUnload", ptr: &a.cuModuleUnload},
		{name: "cuModuleGetFunction", ptr: &a.cuModuleGetFunction},
		{name: "cuFuncSetAttribute", ptr: &a.cuFuncSetAttribute},
		{name: "cuLaunchKernel", ptr: &a.cuLaunchKernel},
		{name: "cuGetErrorName", ptr: &a.cuGetErrorName},
		{name: "cuGetErrorString", ptr: &a.cuGetErrorString},
	}
}

// Driver enumerations used here (cuda.h).
const (
	attrMultiprocessorCount      = 16 // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	attrComputeCapabilityMajor   = 75 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	attrComputeCapabilityMinor   = 76 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	funcAttrMaxDynamicSharedSize = 8  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
	streamDefault                = 0  // CU_STREAM_DEFAULT: ordered with the legacy NULL stream the synchronous copies use
)

// check turns a CUresult into an error (nil for CUDA_SUCCESS), asking the driver for the code's name and text.
func (a *driverAPI) check(fn string, r int32) error {
	if r == 0 {
		return nil
	}
	return a.newError(fn, int(r))
}

func (a *driverAPI) newError(fn string, code int) *Error {
	e := &Error{Lib: "cuda", Call: fn, Code: code}
	var p *byte
	if a.cuGetErrorName != 0 && call(a.cuGetErrorName, uintptr(code), uintptr(unsafe.Pointer(&p))) == 0 && p != nil {
		e.Name = goString(p)
	}
	p = nil
	if a.cuGetErrorString != 0 && call(a.cuGetErrorString, uintptr(code), uintptr(unsafe.Pointer(&p))) == 0 && p != nil {
		e.Msg = goString(p)
	}
	fb := statusOf("cuda", code)
	if e.Name == "" {
		e.Name = fb.name
	}
	if e.Msg == "" {
		e.Msg = fb.desc
	}
	return e
}

// MemAlloc allocates bytes of device memory (cuMemAlloc_v2). When the device is out of memory the error is an
// *Error for which IsOutOfMemory is true, so callers can release cached buffers and retry.
func (d *Device) MemAlloc(bytes int64) (DevPtr, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("cu: MemAlloc of %d bytes", bytes)
	}
	var p DevPtr
	if err := d.drv.check("cuMemAlloc_v2", call(d.drv.cuMemAlloc, uintptr(unsafe.Pointer(&p)), uintptr(bytes))); err != nil {
		return 0, err
	}
	return p, nil
}

// MemFree frees memory from MemAlloc (cuMemFree_v2); freeing 0 does nothing. The driver waits for work still using
// the memory.
func (d *Device) MemFree(p DevPtr) error {
	if p == 0 {
		return nil
	}
	return d.drv.check("cuMemFree_v2", call(d.drv.cuMemFree, uintptr(p)))
}

// MemGetInfo reports free and total device memory in bytes (cuMemGetInfo_v2), for sizing batches.
func (d *Device) MemGetInfo() (free, total int64, err error) {
	var f, t uint64
	if err := d.drv.check("cuMemGetInfo_v2", call(d.drv.cuMemGetInfo, uintptr(unsafe.Pointer(&f)), uintptr(unsafe.Pointer(&t)))); err != nil {
		return 0, 0, err
	}
	return int64(f), int64(t), nil
}

// HtoD copies bytes from host memory src to device memory dst (cuMemcpyHtoD_v2). It is synchronous and ordered after
// the work already queued on the device's stream (the stream synchronises with the legacy NULL stream), so src may be
// reused as soon as it returns. src is pinned for the call.
func (d *Device) HtoD(dst DevPtr, src unsafe.Pointer, bytes int64) error {
	if bytes <= 0 {
		return checkBytes("HtoD", bytes)
	}
	d.pin.Pin(src)
	defer d.pin.Unpin()
	return d.drv.check("cuMemcpyHtoD_v2", call(d.drv.cuMemcpyHtoD, uintptr(dst), uintptr(src), uintptr(bytes)))
}

// DtoH copies bytes from device memory src to host memory dst (cuMemcpyDtoH_v2) after waiting for the device's
// stream, so the result of every queued kernel is visible. dst is pinned for the call.
func (d *Device) DtoH(dst unsafe.Pointer, src DevPtr, bytes int64) error {
	if bytes <= 0 {
		return checkBytes("DtoH", bytes)
	}
	if err := d.Sync(); err != nil {
		return err
	}
	d.pin.Pin(dst)
	defer d.pin.Unpin()
	return d.drv.check("cuMemcpyDtoH_v2", call(d.drv.cuMemcpyDtoH, uintptr(dst), uintptr(src), uintptr(bytes)))
}

// DtoD queues a copy of bytes from src to dst on the device's stream (cuMemcpyDtoDAsync_v2).
func (d *Device) DtoD(dst, src DevPtr, bytes int64) error {
	if bytes <= 0 {
		return checkBytes("DtoD", bytes)
	}
	return d.drv.check("cuMemcpyDtoDAsync_v2", call(d.drv.cuMemcpyDtoDAsync, uintptr(dst), uintptr(src), uintptr(bytes), d.stream))
}

// Memset0 queues a zero fill of bytes at dst on the device's stream (cuMemsetD8Async).
func (d *Device) Memset0(dst DevPtr, bytes int64) error {
	if bytes <= 0 {
		return checkBytes("Memset0", bytes)
	}
	return d.drv.check("cuMemsetD8Async", call(d.drv.cuMemsetD8Async, uintptr(dst), 0, uintptr(bytes), d.stream))
}

// checkBytes accepts a zero byte count (nothing to do) and rejects a negative one.
func checkBytes(op string, bytes int64) error {
	if bytes < 0 {
		return fmt.Errorf("cu: %s of %d bytes", op, bytes)
	}
	return nil
}

// Sync waits until all work queued on the device's stream has finished (cuStreamSynchronize); errors of
// asynchronous work surface here.
func (d *Device) Sync() error {
	return d.drv.check("cuStreamSynchronize", call(d.drv.cuStreamSynchronize, d.stream))
}

// Module is a loaded CUDA module: kernels compiled together from one source.
type Module struct {
	d      *Device
	h      uintptr
	name   string
	src    string
	extra  []string
	funcs  map[string]*Function
	cached bool // the image came from the disk cache
}

// Function is one kernel of a Module, ready to Launch.
type Function struct {
	m    *Module
	h    uintptr
	name string
}

// Module compiles src with NVRTC for the device (Arch, or PTX for the newest architecture NVRTC knows when it does
// not know the device's), caches the image on disk and loads it. Modules are memoised by name, so hot paths can
// call Module every time; asking for a loaded name with another source or options is an error.
//
// The disk cache lives in UserCacheDir/geovb/kernels, one file per image named by the SHA-256 of name, source,
// options, architecture and NVRTC version; GEOVB_KERNEL_CACHE=dir moves it and GEOVB_KERNEL_CACHE=off disables it.
// Entries are written atomically (temporary file, then rename); an unreadable or corrupt entry is recompiled. When
// the driver rejects the image because it is older than the NVRTC that built it, the error says so with both
// versions. Call it inside Do.
func (d *Device) Module(name, src string, extra ...string) (*Module, error) {
	if m := d.modules[name]; m != nil {
		if m.src != src || !slices.Equal(m.extra, extra) {
			return nil, fmt.Errorf("cu: module %q is already loaded from another source or with other options", name)
		}
		return m, nil
	}
	opts := compileOptions(d.compileArch, extra)
	img, cached, err := d.nvrtc.compileCached(d.cacheDir, name, src, d.compileArch, opts, false)
	if err != nil {
		return nil, err
	}
	h, err := d.loadModule(img)
	if err != nil && cached {
		// A cache entry that passed the header check but does not load: rebuild it once.
		if img, _, err2 := d.nvrtc.compileCached(d.cacheDir, name, src, d.compileArch, opts, true); err2 == nil {
			cached = false
			h, err = d.loadModule(img)
		}
	}
	if err != nil {
		return nil, d.moduleLoadError(name, err)
	}
	m := &Module{d: d, h: h, name: name, src: src, extra: slices.Clone(extra), funcs: map[string]*Function{}, cached: cached}
	d.modules[name] = m
	return m, nil
}

// loadModule hands a CUBIN or NUL-terminated PTX image to cuModuleLoadData (which copies it).
func (d *Device) loadModule(img []byte) (uintptr, error) {
	if len(img) == 0 {
		return 0, errors.New("cu: empty module image")
	}
	var h uintptr
	d.pin.Pin(&img[0])
	defer d.pin.Unpin()
	if err := d.drv.check("cuModuleLoadData", call(d.drv.cuModuleLoadData, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&img[0])))); err != nil {
		return 0, err
	}
	return h, nil
}

// moduleLoadError explains a failed module load; the codes by which a driver rejects an image built by a newer
// toolkit get a message naming both versions.
func (d *Device) moduleLoadError(name string, err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return fmt.Errorf("cu: module %q: %w", name, err)
	}
	nv := versionString(d.nvrtc.major*1000 + d.nvrtc.minor*10)
	drv := versionString(d.info.DriverVersion)
	newer := d.nvrtc.major*1000+d.nvrtc.minor*10 > d.info.DriverVersion
	switch {
	case e.Code == cudaErrorUnsupportedPTXVersion || e.Code == cudaErrorInsufficientDriver ||
		(e.Code == cudaErrorNoBinaryForGPU && newer):
		return fmt.Errorf("cu: module %q: the CUDA driver (CUDA %s, %d) is too old for the toolkit: NVRTC %s built the kernel image for %s; update the driver to CUDA %s or later, or point GEOVB_LIBNVRTC at an NVRTC no newer than CUDA %s: %w",
			name, drv, d.info.DriverVersion, nv, d.compileArch, nv, drv, err)
	}
	return fmt.Errorf("cu: module %q (%s, NVRTC %s, driver CUDA %s): %w", name, d.compileArch, nv, drv, err)
}

// Func returns the kernel called name (an extern "C" name) in m, memoised. The error names the missing kernel. Call
// it inside Do.
func (m *Module) Func(name string) (*Function, error) {
	if f := m.funcs[name]; f != nil {
		return f, nil
	}
	cname := cBytes(name)
	var h uintptr
	r := call(m.d.drv.cuModuleGetFunction, uintptr(unsafe.Pointer(&h)), m.h, uintptr(unsafe.Pointer(&cname[0])))
	if err := m.d.drv.check("cuModuleGetFunction", r); err != nil {
		return nil, fmt.Errorf("cu: module %q has no kernel %q (declare it extern \"C\"): %w", m.name, name, err)
	}
	f := &Function{m: m, h: h, name: name}
	m.funcs[name] = f
	return f, nil
}

// SetMaxDynamicShared allows f to be launched with up to bytes of dynamic shared memory
// (cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)); launches asking for more than 48 KiB need it.
// Call it inside Do.
func (f *Function) SetMaxDynamicShared(bytes int) error {
	if bytes < 0 || bytes > math.MaxInt32 {
		return fmt.Errorf("cu: SetMaxDynamicShared(%d) for kernel %q", bytes, f.name)
	}
	r := call(f.m.d.drv.cuFuncSetAttribute, f.h, funcAttrMaxDynamicSharedSize, uintptr(bytes))
	if err := f.m.d.drv.check("cuFuncSetAttribute", r); err != nil {
		return fmt.Errorf("cu: kernel %q: %w", f.name, err)
	}
	return nil
}

// maxKernelArgs bounds the arguments of one launch.
const maxKernelArgs = 64

// launchArgs is the kernelParams block of cuLaunchKernel: ptrs[i] points at vals[i]. One block per Device, pinned
// for the Device's life, so a launch neither allocates nor pins.
type launchArgs struct {
	vals [maxKernelArgs]uint64
	ptrs [maxKernelArgs]unsafe.Pointer
}

// Launch queues kernel f on the device's stream (cuLaunchKernel) with grid × block threads and shmem bytes of
// dynamic shared memory. args are passed by value, in order, each as the C type of the same size: DevPtr (a
// pointer), int and int64 (long long), int32 (int), uint32 (unsigned), uint64, float64 (double), float32 (float).
// A grid with a zero dimension launches nothing, so empty inputs need no special case. Errors of the kernel itself
// surface at the next Sync or DtoH.
func (d *Device) Launch(f *Function, grid, block [3]uint32, shmem uint32, args ...any) error {
	if grid[0] == 0 || grid[1] == 0 || grid[2] == 0 {
		return nil
	}
	if len(args) > maxKernelArgs {
		return fmt.Errorf("cu: kernel %q: %d arguments, at most %d", f.name, len(args), maxKernelArgs)
	}
	la := d.launch
	for i, a := range args {
		var v uint64
		switch x := a.(type) {
		case DevPtr:
			v = uint64(x)
		case int:
			v = uint64(int64(x))
		case int64:
			v = uint64(x)
		case int32:
			v = uint64(uint32(x))
		case uint32:
			v = uint64(x)
		case uint64:
			v = x
		case float64:
			v = math.Float64bits(x)
		case float32:
			v = uint64(math.Float32bits(x))
		default:
			return fmt.Errorf("cu: kernel %q: argument %d has unsupported type %T", f.name, i, a)
		}
		la.vals[i] = v
		la.ptrs[i] = unsafe.Pointer(&la.vals[i])
	}
	var params uintptr
	if len(args) > 0 {
		params = uintptr(unsafe.Pointer(&la.ptrs[0]))
	}
	r := call(d.drv.cuLaunchKernel, f.h,
		uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]),
		uintptr(block[0]), uintptr(block[1]), uintptr(block[2]),
		uintptr(shmem), d.stream, params, 0)
	if err := d.drv.check("cuLaunchKernel", r); err != nil {
		return fmt.Errorf("cu: kernel %q grid %v block %v shmem %d: %w", f.name, grid, block, shmem, err)
	}
	return nil
}
