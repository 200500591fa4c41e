// Package cuda is the NVIDIA GPU backend: tensors live in device memory, level-3 BLAS comes from cuBLAS, the
// factorisations from cuSOLVER, and element-wise maps, reductions, random fills and the hot operations from CUDA C
// kernels of package kernels (the top-level kernels/ folder), compiled by NVRTC for the device on first use and cached on disk.
//
// Nothing of CUDA is needed to build: the libraries are loaded at run time (package internal/cu, no cgo). On a
// machine without a GPU or without the libraries, New returns an error wrapping backend.ErrNoDevice that says what
// is missing, and backend.Open("auto") goes on to the CPU.
//
// Importing the package registers the "cuda" backend with backend.Open, ahead of the CPU.
package cuda

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cuda/internal/cu"
	"github.com/geovb/geovb/kernels"
	"github.com/geovb/geovb/tensor"
)

// Name is the backend's name for backend.Open.
const Name = "cuda"

// DeviceEnv selects the GPU (its ordinal) for New; default 0.
const DeviceEnv = "GEOVB_CUDA_DEVICE"

func init() {
	backend.RegisterFactory(Name, 10, func() (backend.Backend, error) { return New() })
}

// Backend is the CUDA backend for one device. It is safe for concurrent use: every device call goes through the
// device's own OS thread, one call at a time, in submission order on one stream.
//
// Operations that only issue work (launches, cuBLAS calls, frees) are queued to that thread without waiting
// (queue); those that hand memory or a result to the host, allocate, or read a status back wait (do). A queued
// call that fails leaves the backend failed: every later call that waits returns that error and later queued work
// is dropped, since it would compute from the missing result.
type Backend struct {
	dev    *cu.Device // the binding's device; nil when the backend runs on an emulated device (tests)
	gpu    device     // where work is issued: dev with the kernel modules, or the emulation
	run    func(func() error) error
	post   func(func()) error
	failed error // the first failure of a queued call (device thread only)
	info   backend.Info
	mem    atomic.Int64
	closed atomic.Bool

	mu      sync.Mutex // guards live
	live    map[*storage]struct{}
	modules sync.Map // module name → *cu.Module (touched only on the device thread)

	// The pointer arrays last uploaded to scratch slot slotPtrs (device thread only).
	ptrsDev  cu.DevPtr
	ptrsHost []uint64
}

// New starts the backend on the device named by GEOVB_CUDA_DEVICE (default 0).
func New() (*Backend, error) {
	ord := 0
	if s := os.Getenv(DeviceEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("cuda: %s=%q is not a device ordinal: %w", DeviceEnv, s, backend.ErrNoDevice)
		}
		ord = n
	}
	return NewDevice(ord)
}

// NewDevice starts the backend on GPU ordinal.
func NewDevice(ordinal int) (*Backend, error) {
	dev, err := cu.Open(ordinal)
	if err != nil {
		return nil, noDevice{err}
	}
	di := dev.Info()
	b := &Backend{dev: dev, run: dev.Do, post: dev.Post, live: map[*storage]struct{}{}}
	b.gpu = hotRun{Device: dev, b: b}
	b.info = backend.Info{
		Name:     Name,
		Library:  fmt.Sprintf("cuBLAS %s, cuSOLVER %s", blasVersion(di.BLASVersion), solverVersion(di.SolverVersion)),
		Device:   di.Name,
		Cores:    di.SMs,
		Features: []string{dev.Arch()},
		Memory:   di.TotalMem,
		Extra: map[string]string{
			"ordinal":            strconv.Itoa(di.Ordinal),
			"compute_capability": fmt.Sprintf("%d.%d", di.CCMajor, di.CCMinor),
			"driver":             driverVersion(di.DriverVersion),
			"nvrtc":              fmt.Sprintf("%d.%d", di.NVRTCMajor, di.NVRTCMinor),
		},
	}
	for k, v := range di.Paths {
		b.info.Extra["lib_"+k] = v
	}
	return b, nil
}

// noDevice is why the backend cannot start: the binding's error, which also reads as backend.ErrNoDevice.
type noDevice struct{ err error }

func (e noDevice) Error() string   { return e.err.Error() }
func (e noDevice) Unwrap() []error { return []error{e.err, backend.ErrNoDevice} }

// Versions as CUDA reports them: the driver as major·1000 + minor·10 (13000 is 13.0), cuBLAS as
// major·10000 + minor·100 + patch (120804 is 12.8.4), cuSOLVER as major·1000 + minor·100 + patch (11401 is 11.4.1).
func driverVersion(v int) string { return versionString(v, v/1000, v%1000/10, -1) }
func blasVersion(v int) string   { return versionString(v, v/10000, v/100%100, v%100) }
func solverVersion(v int) string { return versionString(v, v/1000, v/100%10, v%100) }

func versionString(v, major, minor, patch int) string {
	switch {
	case v <= 0:
		return "unknown"
	case patch < 0:
		return fmt.Sprintf("%d.%d", major, minor)
	}
	return fmt.Sprintf("%d.%d.%d", major, minor, patch)
}

// Name returns "cuda".
func (b *Backend) Name() string { return Name }

// Info describes the GPU and the libraries.
func (b *Backend) Info() backend.Info {
	in := b.info
	in.Extra = make(map[string]string, len(b.info.Extra)+1)
	for k, v := range b.info.Extra {
		in.Extra[k] = v
	}
	var free int64
	if b.do(func() error { f, _, err := b.gpu.MemGetInfo(); free = f; return err }) == nil {
		in.Extra["free_bytes"] = strconv.FormatInt(free, 10)
	}
	return in
}

// device is what the backend needs from a GPU: memory, copies, the cuBLAS/cuSOLVER calls and kernel launches by
// module and name. On hardware it is the binding's cu.Device with the embedded kernel modules (hotRun); the tests
// run the whole backend on an emulated device, every kernel replaced by a thread-by-thread transcription.
type device interface {
	hotDev
	MemAlloc(bytes int64) (cu.DevPtr, error)
	MemFree(p cu.DevPtr) error
	MemGetInfo() (free, total int64, err error)
	HtoD(dst cu.DevPtr, src unsafe.Pointer, bytes int64) error
	DtoD(dst, src cu.DevPtr, bytes int64) error
	Sync() error
	DgemmStridedBatched(ta, tb cu.Op, m, n, k int, alpha float64, a cu.DevPtr, lda int, sa int64, b cu.DevPtr,
		ldb int, sb int64, beta float64, c cu.DevPtr, ldc int, sc int64, batch int) error
	DtrsmBatched(side cu.Side, uplo cu.Fill, trans cu.Op, diag cu.Diag, m, n int, alpha float64, aArray cu.DevPtr,
		lda int, bArray cu.DevPtr, ldb int, batch int) error
	Dtrmm(side cu.Side, uplo cu.Fill, trans cu.Op, diag cu.Diag, m, n int, alpha float64, a cu.DevPtr, lda int,
		b cu.DevPtr, ldb int, c cu.DevPtr, ldc int) error
	Dgeam(ta, tb cu.Op, m, n int, alpha float64, a cu.DevPtr, lda int, beta float64, b cu.DevPtr, ldb int,
		c cu.DevPtr, ldc int) error
	DpotrfBatched(uplo cu.Fill, n int, aArray cu.DevPtr, lda int, info cu.DevPtr, batch int) error
	Dgeqrf(m, n int, a cu.DevPtr, lda int, tau cu.DevPtr, info cu.DevPtr) error
	Dorgqr(m, n, k int, a cu.DevPtr, lda int, tau cu.DevPtr, info cu.DevPtr) error
	Dsyevd(vectors bool, uplo cu.Fill, n int, a cu.DevPtr, lda int, w cu.DevPtr, info cu.DevPtr) error
	DsyevjBatched(vectors bool, uplo cu.Fill, n int, a cu.DevPtr, lda int, w cu.DevPtr, info cu.DevPtr,
		batch int) error
}

// Device returns the binding's device (nil on an emulated device), for benchmarks that time raw library calls
// next to the backend's.
func (b *Backend) Device() *cu.Device { return b.dev }

// Close frees every tensor still allocated and releases the device. Tensors of the backend become invalid.
func (b *Backend) Close() error {
	if !b.closed.CompareAndSwap(false, true) {
		return nil
	}
	b.mu.Lock()
	live := b.live
	b.live = nil
	b.mu.Unlock()
	_ = b.run(func() error {
		for st := range live {
			_ = b.gpu.MemFree(st.ptr)
		}
		return nil
	})
	if b.dev == nil {
		return nil
	}
	return b.dev.Close()
}

// do runs f on the device thread after the work queued before it and returns its error, or the failure of an
// earlier queued call without running f.
func (b *Backend) do(f func() error) error {
	if b.closed.Load() {
		return fmt.Errorf("cuda: backend is closed: %w", backend.ErrNoDevice)
	}
	return b.run(func() error {
		if b.failed != nil {
			return b.failed
		}
		return f()
	})
}

// queue queues f (the device work of operation op) on the device thread and returns at once. f must not touch
// memory the caller may change or read after queue returns (host operands, results for the host). Its error, or
// a panic, becomes the backend's failure, returned by every later call that waits.
func (b *Backend) queue(op string, f func() error) error {
	if b.closed.Load() {
		return fmt.Errorf("cuda: backend is closed: %w", backend.ErrNoDevice)
	}
	return b.post(func() {
		if b.failed != nil {
			return
		}
		if err := catch(f); err != nil {
			b.failed = fmt.Errorf("cuda: %s, queued, failed (the backend returns this error from now on): %w", op, err)
		}
	})
}

// catch calls f and turns a panic into an error.
func catch(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}

// kernel returns function name of module <module>.cu of package kernels, compiling the module on first use. Call inside do.
func (b *Backend) kernel(module, name string) (*cu.Function, error) {
	m, ok := b.modules.Load(module)
	if !ok {
		src, err := kernels.Source(module)
		if err != nil {
			return nil, fmt.Errorf("cuda: %w", err)
		}
		mod, err := b.dev.Module(module, src)
		if err != nil {
			return nil, err
		}
		b.modules.Store(module, mod)
		m = mod
	}
	return m.(*cu.Module).Func(name)
}

// launch1D runs kernel name of module over n work items (grid-stride kernels: any grid is correct) with 256-thread
// blocks. Call inside do.
func (b *Backend) launch1D(module, name string, n int64, args ...any) error {
	if n <= 0 {
		return nil
	}
	const block = 256
	grid := (n + block - 1) / block
	if max := int64(b.info.Cores) * 32; max > 0 && grid > max {
		grid = max
	}
	return b.gpu.launch(module, name, [3]uint32{uint32(grid), 1, 1}, [3]uint32{block, 1, 1}, 0, args...)
}

// storage is device memory allocated by the backend.
type storage struct {
	ptr   cu.DevPtr
	n     int
	owner *Backend
	freed atomic.Bool
}

func (s *storage) Len() int        { return s.n }
func (s *storage) Host() []float64 { return nil }
func (s *storage) Owner() any      { return s.owner }

// ptr returns the device address of element (0, 0, 0) of a view of the backend's memory.
func (b *Backend) ptr(t *tensor.Tensor) cu.DevPtr {
	if t == nil {
		return 0
	}
	return t.Storage().(*storage).ptr + cu.DevPtr(8*t.Offset())
}

// owns checks that each non-nil tensor is device memory of this backend, naming operands by position.
func (b *Backend) owns(op string, ts ...*tensor.Tensor) error {
	names := make([]string, len(ts))
	for i := range names {
		names[i] = fmt.Sprintf("operand %d", i+1)
	}
	return b.ownsNamed(op, names, ts...)
}

// ownsNamed checks that each non-nil tensor is device memory of this backend.
func (b *Backend) ownsNamed(op string, names []string, ts ...*tensor.Tensor) error {
	for i, t := range ts {
		if t == nil {
			continue
		}
		st, ok := t.Storage().(*storage)
		if !ok || st.owner != b {
			where := "host memory"
			if !t.IsHost() {
				where = "another backend's memory"
			}
			return backend.Errorf(op, names[i], backend.ErrForeign, "tensor is in %s, not on this GPU", where)
		}
		if st.freed.Load() {
			return backend.Errorf(op, names[i], backend.ErrForeign, "tensor was freed")
		}
	}
	return nil
}

// view is the strided layout of an operand as kernel arguments: address, batch stride (0 when broadcast over a
// destination batch) and row stride.
type view struct {
	p      cu.DevPtr
	bs, rs int64
}

// viewOf returns t's layout; a batch-1 operand gets batch stride 0 so that kernels broadcast it.
func (b *Backend) viewOf(t *tensor.Tensor) view {
	if t == nil {
		return view{}
	}
	bs := int64(t.BatchStride())
	if t.Batch() == 1 {
		bs = 0
	}
	return view{b.ptr(t), bs, int64(t.RowStride())}
}
