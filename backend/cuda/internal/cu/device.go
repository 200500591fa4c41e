package cu

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"unsafe"
)

// Device is one GPU with its primary context, one stream, a cuBLAS and a cuSOLVER handle bound to that stream, and
// one goroutine locked to an OS thread (a Thread) through which every call runs (the current context is per OS
// thread). All work queued by the methods runs in order on the one stream.
type Device struct {
	drv   driverAPI
	blas  cublasAPI
	sol   cusolverAPI
	nvrtc *NVRTC

	dev                      int32
	ctx, stream, blasH, solH uintptr

	info        DeviceInfo
	arch        string // sm_XY of the device
	compileArch string // what NVRTC targets: arch, or compute_XY when NVRTC does not know the device
	cacheDir    string

	th *Thread

	scratch [8]scratchBuf
	modules map[string]*Module
	launch  *launchArgs
	pin     runtime.Pinner // per-call pins (HtoD, DtoH, module images)
	keep    runtime.Pinner // launch block, pinned for the Device's life
}

// DeviceInfo describes an opened device and the libraries in use, for logs and benchmark reports.
type DeviceInfo struct {
	Name                   string
	Ordinal                int
	CCMajor, CCMinor       int   // compute capability
	SMs                    int   // streaming multiprocessors
	TotalMem               int64 // bytes
	DriverVersion          int   // cuDriverGetVersion, e.g. 13000
	BLASVersion            int   // cublasGetVersion, e.g. 130000
	SolverVersion          int   // cusolverGetVersion, e.g. 12000
	NVRTCMajor, NVRTCMinor int
	Paths                  map[string]string // "cuda", "cublas", "cusolver", "nvrtc" -> path loaded
}

type scratchBuf struct {
	p    DevPtr
	size int64
}

// Open opens GPU ordinal: it loads the driver, initialises it (cuInit), retains the device's primary context (the
// one the CUDA runtime inside cuBLAS and cuSOLVER also uses), creates a stream, loads cuBLAS, cuSOLVER and NVRTC
// and creates their handles bound to the stream. When CUDA cannot be used (a library or symbol missing, the driver
// failing to initialise, no device, no such ordinal) the error wraps ErrUnavailable; when the driver reports an
// error it also wraps that *Error.
func Open(ordinal int) (*Device, error) {
	d := &Device{
		modules:  map[string]*Module{},
		launch:   new(launchArgs),
		cacheDir: kernelCacheDir(),
	}
	lib, err := loadLibrary(specCUDA, d.drv.symbols())
	if err != nil {
		return nil, err
	}
	d.drv.lib = lib
	d.th, err = NewThread(func() error {
		if err := d.setup(ordinal); err != nil {
			d.teardown()
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	d.keep.Pin(d.launch)
	return d, nil
}

// setup runs on the device thread.
func (d *Device) setup(ordinal int) error {
	drv := &d.drv
	if r := call(drv.cuInit, 0); r != 0 {
		e := drv.newError("cuInit", int(r))
		if r == cudaErrorNoDevice {
			return unavailable(e, "cu: no CUDA device")
		}
		return unavailable(e, "cu: the CUDA driver %s does not initialise", drv.lib.path)
	}
	var ver, count int32
	if err := drv.check("cuDriverGetVersion", call(drv.cuDriverGetVersion, uintptr(unsafe.Pointer(&ver)))); err != nil {
		return unavailable(err, "cu: %s", drv.lib.path)
	}
	if err := drv.check("cuDeviceGetCount", call(drv.cuDeviceGetCount, uintptr(unsafe.Pointer(&count)))); err != nil {
		return unavailable(err, "cu: %s", drv.lib.path)
	}
	if count == 0 {
		return unavailable(nil, "cu: no CUDA device")
	}
	if ordinal < 0 || ordinal >= int(count) {
		return unavailable(nil, "cu: no CUDA device %d (%d present)", ordinal, count)
	}
	if err := drv.check("cuDeviceGet", call(drv.cuDeviceGet, uintptr(unsafe.Pointer(&d.dev)), uintptr(ordinal))); err != nil {
		return unavailable(err, "cu: device %d", ordinal)
	}
	info := DeviceInfo{Ordinal: ordinal, DriverVersion: int(ver), Paths: map[string]string{"cuda": drv.lib.path}}
	var name [256]byte
	if err := drv.check("cuDeviceGetName", call(drv.cuDeviceGetName, uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)-1), uintptr(d.dev))); err != nil {
		return err
	}
	info.Name = goString(&name[0])
	for _, a := range []struct {
		attr int
		dst  *int
	}{{attrComputeCapabilityMajor, &info.CCMajor}, {attrComputeCapabilityMinor, &info.CCMinor}, {attrMultiprocessorCount, &info.SMs}} {
		var v int32
		if err := drv.check("cuDeviceGetAttribute", call(drv.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a.attr), uintptr(d.dev))); err != nil {
			return err
		}
		*a.dst = int(v)
	}
	var total uint64
	if err := drv.check("cuDeviceTotalMem_v2", call(drv.cuDeviceTotalMem, uintptr(unsafe.Pointer(&total)), uintptr(d.dev))); err != nil {
		return err
	}
	info.TotalMem = int64(total)

	// The libraries: a missing one makes the device unusable for the backend, hence ErrUnavailable.
	blasLib, err := loadLibrary(specCUBLAS, d.blas.symbols())
	if err != nil {
		return err
	}
	solLib, err := loadLibrary(specCUSOLVER, d.sol.symbols())
	if err != nil {
		return err
	}
	d.sol.bind()
	if d.nvrtc, err = LoadNVRTC(); err != nil {
		return err
	}
	info.Paths["cublas"], info.Paths["cusolver"], info.Paths["nvrtc"] = blasLib.path, solLib.path, d.nvrtc.Path()
	info.NVRTCMajor, info.NVRTCMinor = d.nvrtc.Version()

	var ctx uintptr
	if err := drv.check("cuDevicePrimaryCtxRetain", call(drv.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&ctx)), uintptr(d.dev))); err != nil {
		return err
	}
	d.ctx = ctx
	if err := drv.check("cuCtxSetCurrent", call(drv.cuCtxSetCurrent, d.ctx)); err != nil {
		return err
	}
	var stream uintptr
	if err := drv.check("cuStreamCreate", call(drv.cuStreamCreate, uintptr(unsafe.Pointer(&stream)), streamDefault)); err != nil {
		return err
	}
	d.stream = stream

	var h uintptr
	if err := blasError("cublasCreate_v2", call(d.blas.cublasCreate, uintptr(unsafe.Pointer(&h)))); err != nil {
		return err
	}
	d.blasH = h
	if err := blasError("cublasSetStream_v2", call(d.blas.cublasSetStream, d.blasH, d.stream)); err != nil {
		return err
	}
	if err := blasError("cublasSetPointerMode_v2", call(d.blas.cublasSetPointerMode, d.blasH, pointerModeHost)); err != nil {
		return err
	}
	var v int32
	if err := blasError("cublasGetVersion_v2", call(d.blas.cublasGetVersion, d.blasH, uintptr(unsafe.Pointer(&v)))); err != nil {
		return err
	}
	info.BLASVersion = int(v)

	h = 0
	if err := solverError("cusolverDnCreate", call(d.sol.cusolverDnCreate, uintptr(unsafe.Pointer(&h)))); err != nil {
		return err
	}
	d.solH = h
	if err := solverError("cusolverDnSetStream", call(d.sol.cusolverDnSetStream, d.solH, d.stream)); err != nil {
		return err
	}
	v = 0
	if err := solverError("cusolverGetVersion", call(d.sol.cusolverGetVersion, uintptr(unsafe.Pointer(&v)))); err != nil {
		return err
	}
	info.SolverVersion = int(v)

	d.info = info
	d.arch = fmt.Sprintf("sm_%d%d", info.CCMajor, info.CCMinor)
	d.compileArch = d.nvrtc.compileArch(info.CCMajor*10 + info.CCMinor)
	return nil
}

// teardown releases, on the device thread, whatever setup created; it returns the first error.
func (d *Device) teardown() error {
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if d.stream != 0 {
		keep(d.Sync())
	}
	for _, m := range d.modules {
		keep(d.drv.check("cuModuleUnload", call(d.drv.cuModuleUnload, m.h)))
	}
	clear(d.modules)
	for i := range d.scratch {
		keep(d.MemFree(d.scratch[i].p))
		d.scratch[i] = scratchBuf{}
	}
	if d.solH != 0 {
		keep(solverError("cusolverDnDestroy", call(d.sol.cusolverDnDestroy, d.solH)))
		d.solH = 0
	}
	if d.blasH != 0 {
		keep(blasError("cublasDestroy_v2", call(d.blas.cublasDestroy, d.blasH)))
		d.blasH = 0
	}
	if d.stream != 0 {
		keep(d.drv.check("cuStreamDestroy_v2", call(d.drv.cuStreamDestroy, d.stream)))
		d.stream = 0
	}
	if d.ctx != 0 {
		keep(d.drv.check("cuDevicePrimaryCtxRelease_v2", call(d.drv.cuDevicePrimaryCtxRelease, uintptr(d.dev))))
		d.ctx = 0
	}
	return errors.Join(errs...)
}

// Close waits for queued work, frees the scratch buffers and modules, destroys the handles and the stream, releases
// the primary context and ends the device goroutine. Device memory from MemAlloc that is still allocated is the
// caller's to free before. Close is idempotent; it must not be called inside Do.
func (d *Device) Close() error {
	err := d.th.Close(d.teardown)
	d.keep.Unpin()
	return err
}

// Info describes the device and the libraries loaded. It may be called outside Do.
func (d *Device) Info() DeviceInfo {
	i := d.info
	i.Paths = maps.Clone(d.info.Paths)
	return i
}

// Arch is the device's architecture as NVRTC names it, e.g. "sm_90". It may be called outside Do.
func (d *Device) Arch() string { return d.arch }

// Do runs f on the device's OS thread, where the device's context is current, after every function queued
// before it; every other method except Info, Arch and Close must be called inside f (or a function given to
// Post), and they do not lock on their own. Do may be called from any goroutine; calls are serialised, so a whole
// sequence of calls in one f runs without interleaving. Do must not be called inside f (it would deadlock). A
// panic in f is re-raised in the caller of Do.
func (d *Device) Do(f func() error) error { return d.th.Do(f) }

// Post queues f to run on the device's OS thread like Do's functions, in the same order, and returns without
// waiting (see Thread.Post): f reports nothing back and must not panic.
func (d *Device) Post(f func()) error { return d.th.Post(f) }

// Scratch returns a device buffer of at least bytes for slot (0..7), reused across calls so hot paths do not
// allocate: it grows when asked for more (by at least a quarter, to avoid regrowing step by step) and is valid until
// the next Scratch call on the same slot with a larger size. Growing waits for the stream first, since queued work
// may still use the old buffer. Slots are independent; 6 and 7 hold the cuSOLVER workspaces. Call it inside Do.
func (d *Device) Scratch(slot int, bytes int64) (DevPtr, error) {
	if slot < 0 || slot >= len(d.scratch) {
		return 0, fmt.Errorf("cu: scratch slot %d, want 0..%d", slot, len(d.scratch)-1)
	}
	s := &d.scratch[slot]
	if bytes <= s.size && s.p != 0 {
		return s.p, nil
	}
	if bytes <= 0 {
		bytes = 1
	}
	want := max(bytes, s.size+s.size/4)
	want = (want + 255) &^ 255
	if s.p != 0 {
		if err := d.Sync(); err != nil {
			return 0, err
		}
		if err := d.MemFree(s.p); err != nil {
			return 0, err
		}
		*s = scratchBuf{}
	}
	p, err := d.MemAlloc(want)
	if err != nil && want > bytes {
		p, err = d.MemAlloc(bytes)
		want = bytes
	}
	if err != nil {
		return 0, err
	}
	*s = scratchBuf{p: p, size: want}
	return p, nil
}
