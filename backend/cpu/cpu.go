// Package cpu is the CPU backend: tensors live in host memory, level-3 BLAS and LAPACK come from gonum (pure Go)
// or, when built with the tag netlib, from OpenBLAS and LAPACKE through gonum/netlib. Batches and large operations
// are split over a pool of worker goroutines sized from the CPU (and capped by GOMAXPROCS).
//
// Importing the package registers the "cpu" backend with backend.Open.
package cpu

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/klauspost/cpuid/v2"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// Name is the backend's name for backend.Open.
const Name = "cpu"

// isCPU is the Applies predicate of the kernels that take every shape on this backend.
func isCPU(b backend.Backend, _ tensor.Shape) bool { _, ok := b.(*Backend); return ok }

func init() {
	backend.RegisterFactory(Name, 0, func() (backend.Backend, error) { return New() })
}

// library names the BLAS/LAPACK in use; netlib.go and fastblas.go replace it.
var library = "gonum (pure Go)"

// Backend is the CPU backend. It is safe for concurrent use.
type Backend struct {
	workers int
	mem     atomic.Int64
	owner   *int // identity token stored in the storage of tensors this backend allocates
	closed  atomic.Bool
}

// New returns a CPU backend with one worker per core available to the Go scheduler.
func New() (*Backend, error) {
	return NewWithWorkers(0)
}

// NewWithWorkers returns a CPU backend with n workers; n ≤ 0 picks the number of physical cores reported by the
// CPU, capped by GOMAXPROCS.
func NewWithWorkers(n int) (*Backend, error) {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
		if pc := cpuid.CPU.PhysicalCores; pc > 0 && pc < n {
			n = pc
		}
		if n < 1 {
			n = 1
		}
	}
	libraryOnce.Do(startLibrary)
	return &Backend{workers: n, owner: new(int)}, nil
}

// libraryOnce runs startLibrary (netlib.go, fastblas.go) when the first backend starts rather than at import.
var libraryOnce sync.Once

// Name returns "cpu".
func (b *Backend) Name() string { return Name }

// Workers returns the size of the worker pool.
func (b *Backend) Workers() int { return b.workers }

// Info describes the CPU and the library.
func (b *Backend) Info() backend.Info {
	var feats []string
	for _, f := range []cpuid.FeatureID{cpuid.SSE2, cpuid.AVX, cpuid.AVX2, cpuid.FMA3, cpuid.AVX512F, cpuid.AVX512DQ,
		cpuid.AVX512VL, cpuid.AMXTILE, cpuid.ASIMD, cpuid.SVE} {
		if cpuid.CPU.Supports(f) {
			feats = append(feats, f.String())
		}
	}
	c := cpuid.CPU
	return backend.Info{
		Name:     Name,
		Library:  library,
		Device:   c.BrandName,
		Cores:    b.workers,
		Features: feats,
		Extra: map[string]string{
			"physical_cores": fmt.Sprint(c.PhysicalCores),
			"logical_cores":  fmt.Sprint(c.LogicalCores),
			"gomaxprocs":     fmt.Sprint(runtime.GOMAXPROCS(0)),
			"x64_level":      fmt.Sprint(c.X64Level()),
			"l2_bytes":       fmt.Sprint(c.Cache.L2),
			"l3_bytes":       fmt.Sprint(c.Cache.L3),
		},
	}
}

// Close marks the backend closed. Host tensors stay readable.
func (b *Backend) Close() error {
	b.closed.Store(true)
	return nil
}

// hostStorage is host memory allocated by a CPU backend, tracked for MemInUse.
type hostStorage struct {
	tensor.HostStorage
	freed atomic.Bool
}

// Host returns the slice, or nil in strict mode, where the backend's memory is as opaque to other code as a GPU's
// (element access panics, backend.CheckFinite passes over it); the backend itself reads it through hostData.
func (s *hostStorage) Host() []float64 {
	if strict {
		return nil
	}
	return s.Data
}

// hostData returns the host slice behind t: the backend's own memory in any mode, or plain host memory.
func hostData(t *tensor.Tensor) []float64 {
	if st, ok := t.Storage().(*hostStorage); ok {
		return st.Data
	}
	return t.Storage().Host()
}

// matrix is tensor.Matrix through hostData.
func matrix(t *tensor.Tensor, b int) (data []float64, stride, rows, cols int) {
	return t.MatrixIn(hostData(t), b)
}

// Alloc returns a zeroed contiguous host tensor and counts its bytes in MemInUse.
func (b *Backend) Alloc(s tensor.Shape) (*tensor.Tensor, error) {
	if s.Batch < 0 || s.Rows < 0 || s.Cols < 0 {
		return nil, backend.Errorf("alloc", "", backend.ErrShape, "negative dimension in %v", s)
	}
	n := s.Len()
	if n < 0 || n > 1<<40 {
		return nil, backend.Errorf("alloc", "", backend.ErrOutOfMemory, "%v elements", s)
	}
	st := &hostStorage{HostStorage: *tensor.NewHostStorage(make([]float64, n), b.owner)}
	b.mem.Add(int64(n) * 8)
	return tensor.New(st, 0, s, s.Rows*s.Cols, s.Cols)
}

// Free returns the bytes of a tensor from Alloc to the MemInUse count. The memory itself is left to the garbage
// collector. Freeing a view, a tensor from elsewhere or the same tensor twice is harmless.
func (b *Backend) Free(t *tensor.Tensor) {
	if t == nil {
		return
	}
	if st, ok := t.Storage().(*hostStorage); ok && st.Owner() == any(b.owner) && st.freed.CompareAndSwap(false, true) {
		b.mem.Add(-int64(st.Len()) * 8)
	}
}

// MemInUse returns the bytes allocated with Alloc and not yet freed.
func (b *Backend) MemInUse() int64 { return b.mem.Load() }

// StrictEnv names the environment variable that, set to 1 when the package is loaded, makes every CPU backend
// behave as a GPU towards other code: operations refuse plain host tensors (tensor.NewHost, tensor.FromSlice) and
// tensors already freed as operands, only Upload's source and Download's destination may be plain host memory, and
// the backend's own tensors expose no host slice (Storage().Host() is nil, so At, Set and Matrix panic on them and
// backend.CheckFinite passes over them, as for device memory). The CPU can address any host slice, so without it
// code that forgets an upload or a download passes every test on the CPU and fails on the first GPU; the method and
// model tests run under it in CI.
const StrictEnv = "GEOVB_CPU_STRICT"

// strict is StrictEnv's setting; tests of this package change it.
var strict = os.Getenv(StrictEnv) == "1"

// checkHost rejects tensors whose memory the CPU cannot address and, in strict mode, tensors that no CPU backend
// allocated or that were freed.
func checkHost(op string, names []string, ts ...*tensor.Tensor) error {
	if err := checkAddressable(op, names, ts...); err != nil || !strict {
		return err
	}
	for i, t := range ts {
		if t == nil {
			continue
		}
		st, ok := t.Storage().(*hostStorage)
		if !ok {
			return backend.Errorf(op, names[i], backend.ErrForeign,
				"plain host memory, not from a backend's Alloc; a GPU refuses it too (%s=1): upload it", StrictEnv)
		}
		if st.freed.Load() {
			return backend.Errorf(op, names[i], backend.ErrForeign, "tensor was freed (%s=1)", StrictEnv)
		}
	}
	return nil
}

// checkAddressable rejects tensors whose memory the CPU cannot address.
func checkAddressable(op string, names []string, ts ...*tensor.Tensor) error {
	for i, t := range ts {
		if t == nil {
			continue
		}
		if _, own := t.Storage().(*hostStorage); !own && !t.IsHost() {
			return backend.Errorf(op, names[i], backend.ErrForeign, "tensor is not in host memory")
		}
	}
	return nil
}

// Upload copies a host tensor into a CPU tensor.
func (b *Backend) Upload(dst, src *tensor.Tensor) error { return b.copyOp("upload", dst, src) }

// Download copies a CPU tensor into a host tensor.
func (b *Backend) Download(dst, src *tensor.Tensor) error { return b.copyOp("download", dst, src) }

// Copy copies src into dst (src may have batch 1).
func (b *Backend) Copy(dst, src *tensor.Tensor) error { return b.copyOp("copy", dst, src) }

func (b *Backend) copyOp(op string, dst, src *tensor.Tensor) error {
	if err := backend.CheckNotNil(op, []string{"dst", "src"}, dst, src); err != nil {
		return err
	}
	// Upload reads, and Download writes, plain host memory; the other operand is the backend's.
	var err error
	switch op {
	case "upload":
		if err = checkHost(op, []string{"dst"}, dst); err == nil {
			err = checkAddressable(op, []string{"src"}, src)
		}
	case "download":
		if err = checkHost(op, []string{"src"}, src); err == nil {
			err = checkAddressable(op, []string{"dst"}, dst)
		}
	default:
		err = checkHost(op, []string{"dst", "src"}, dst, src)
	}
	if err != nil {
		return err
	}
	if op != "copy" && src.Batch() != dst.Batch() {
		return backend.Errorf(op, "src", backend.ErrShape, "shape %v, want %v", src.Shape(), dst.Shape())
	}
	if err := backend.CheckMatrix(op, "src", src, dst.Batch(), dst.Rows(), dst.Cols()); err != nil {
		return err
	}
	b.eachSpan(dst, 0.5, []*tensor.Tensor{src}, func(bb, lo, hi int) { copy(span(dst, bb, lo, hi), span(src, bb, lo, hi)) })
	return nil
}

// Sync returns at once: CPU work is synchronous.
func (b *Backend) Sync() error { return nil }

// parallelFor splits [0, n) into at most Workers() contiguous chunks and runs f on each, in parallel when there is
// more than one chunk. It returns when all chunks are done.
func (b *Backend) parallelFor(n int, f func(lo, hi int)) {
	w := min(b.workers, n)
	if w <= 1 {
		if n > 0 {
			f(0, n)
		}
		return
	}
	var wg sync.WaitGroup
	for k := 0; k < w; k++ {
		lo, hi := k*n/w, (k+1)*n/w
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}

// parallelWork is parallelFor for n items of about cost flops each: below a threshold the loop runs on the calling
// goroutine, where starting workers would cost more than it saves.
func (b *Backend) parallelWork(n int, cost float64, f func(lo, hi int)) {
	if float64(n)*cost < 32768 {
		if n > 0 {
			f(0, n)
		}
		return
	}
	b.parallelFor(n, f)
}

// bi maps a destination batch index to an operand's batch index (0 for a broadcast operand of batch 1).
func bi(x *tensor.Tensor, b int) int {
	if x.Batch() == 1 {
		return 0
	}
	return b
}

// row returns row i of matrix bb of a host tensor.
func row(t *tensor.Tensor, bb, i int) []float64 {
	return rowsOf(t).at(bb, i)
}

// hostRows finds the rows of a host tensor with row's lookups (storage, offset, strides, broadcast) done once, for
// loops over many short rows.
type hostRows struct {
	h                 []float64
	off, bs, rs, cols int
}

// rowsOf returns the row finder of a host tensor.
func rowsOf(t *tensor.Tensor) hostRows {
	bs := t.BatchStride()
	if t.Batch() == 1 {
		bs = 0 // a single matrix serves every batch index (bi)
	}
	return hostRows{hostData(t), t.Offset(), bs, t.RowStride(), t.Cols()}
}

// at is row(t, bb, i).
func (r hostRows) at(bb, i int) []float64 {
	start := r.off + bb*r.bs + i*r.rs
	return r.h[start : start+r.cols]
}

// elem is element (i, j) of matrix bb.
func (r hostRows) elem(bb, i, j int) *float64 {
	return &r.h[r.off+bb*r.bs+i*r.rs+j]
}

var _ backend.Backend = (*Backend)(nil)
