package cuda

import (
	"fmt"
	"math/bits"
	"sync"
	"unsafe"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cuda/internal/cu"
	"github.com/geovb/geovb/tensor"
)

// Scratch slots of the backend core (see cu.Device.Scratch): 0 staging for copies between host and strided views,
// 1 and 2 pointer arrays and packed blocks of the factorisations.
const (
	slotStage = 0
	slotPtrs  = 1
	slotPack  = 2
)

// Alloc returns a zeroed contiguous tensor in device memory. A request that does not fit gives an error wrapping
// backend.ErrOutOfMemory with the size asked for and the free memory.
func (b *Backend) Alloc(s tensor.Shape) (*tensor.Tensor, error) {
	if s.Batch < 0 || s.Rows < 0 || s.Cols < 0 {
		return nil, backend.Errorf("alloc", "", backend.ErrShape, "negative dimension in %v", s)
	}
	n := s.Len()
	if n < 0 || n > 1<<40 {
		return nil, backend.Errorf("alloc", "", backend.ErrOutOfMemory, "%v elements", s)
	}
	st := &storage{n: n, owner: b}
	if n > 0 {
		bytes := int64(n) * 8
		err := b.do(func() error {
			p, err := b.gpu.MemAlloc(bytes)
			if err != nil {
				return err
			}
			st.ptr = p
			return b.gpu.Memset0(p, bytes)
		})
		if err != nil {
			if cu.IsOutOfMemory(err) {
				var free, total int64
				_ = b.do(func() error { var e error; free, total, e = b.gpu.MemGetInfo(); return e })
				return nil, backend.Errorf("alloc", "", backend.ErrOutOfMemory,
					"%v float64 = %s requested, %s free of %s on %s", s, fmtBytes(bytes), fmtBytes(free), fmtBytes(total), b.info.Device)
			}
			return nil, backend.Errorf("alloc", "", err, "%v", s)
		}
		b.mem.Add(bytes)
	}
	b.mu.Lock()
	if b.live != nil {
		b.live[st] = struct{}{}
	}
	b.mu.Unlock()
	return tensor.New(st, 0, s, s.Rows*s.Cols, s.Cols)
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d B", n)
}

// Free releases a tensor from Alloc. Freeing a view, a foreign tensor or the same tensor twice is harmless.
func (b *Backend) Free(t *tensor.Tensor) {
	if t == nil {
		return
	}
	st, ok := t.Storage().(*storage)
	if !ok || st.owner != b || !st.freed.CompareAndSwap(false, true) {
		return
	}
	b.mu.Lock()
	if b.live != nil {
		delete(b.live, st)
	}
	b.mu.Unlock()
	if st.n > 0 && !b.closed.Load() {
		// Queued: the frees after a batch's last launches need not wait for them. Posted directly, not through
		// queue, so that the memory goes back after a failure too.
		_ = b.post(func() { _ = b.gpu.MemFree(st.ptr) })
		b.mem.Add(-int64(st.n) * 8)
	}
}

// MemInUse returns the bytes allocated with Alloc and not freed.
func (b *Backend) MemInUse() int64 { return b.mem.Load() }

// Sync waits for the queued calls and the stream and reports an asynchronous failure (a failed queued call, a
// faulting kernel) if there was one.
func (b *Backend) Sync() error {
	return b.do(func() error { return b.gpu.Sync() })
}

// checkHostOperand rejects a host operand that is not host memory.
func checkHostOperand(op, name string, t *tensor.Tensor) error {
	if !t.IsHost() {
		return backend.Errorf(op, name, backend.ErrForeign, "tensor is not in host memory")
	}
	return nil
}

// denseSpan reports whether a view covers one contiguous block in batch-major, row-major order.
func denseSpan(t *tensor.Tensor) bool {
	return t.Contiguous()
}

// uploadQueued is the largest upload (in elements) that is queued rather than waited for: the caller copies src
// first, so that it may change src at once, and copying 256 KiB costs about what one waited hand-over to the device
// thread does (cu.BenchmarkThreadDo).
const (
	uploadQueued    = 1 << uploadQueuedLog
	uploadQueuedLog = 15
)

// uploadBuffers holds the host copies of queued uploads for reuse, by size class: class c holds buffers of 2^c
// elements, up to uploadQueued. A buffer goes back once its transfer has returned: a synchronous copy from pageable
// memory has read the host buffer by then (CUDA's API synchronisation rules), though the device may still be writing.
var uploadBuffers [uploadQueuedLog + 1]sync.Pool

// uploadBuffer returns a buffer of at least n ≤ uploadQueued elements and its class.
func uploadBuffer(n int) (*[]float64, int) {
	c := bits.Len(uint(n - 1))
	if buf, ok := uploadBuffers[c].Get().(*[]float64); ok {
		return buf, c
	}
	buf := make([]float64, 1<<c)
	return &buf, c
}

// Upload copies the host tensor src into dst. A contiguous pair is one transfer; otherwise src is packed on the
// host, sent to a staging buffer and scattered into dst's layout by a kernel. Small uploads are queued from a copy
// of src in a reused buffer; larger ones wait for the transfer.
func (b *Backend) Upload(dst, src *tensor.Tensor) error {
	const op = "upload"
	if err := backend.CheckNotNil(op, []string{"dst", "src"}, dst, src); err != nil {
		return err
	}
	if err := b.ownsNamed(op, []string{"dst"}, dst); err != nil {
		return err
	}
	if err := checkHostOperand(op, "src", src); err != nil {
		return err
	}
	if err := backend.CheckSame(op, "src", src, dst.Shape()); err != nil {
		return err
	}
	n := dst.Len()
	if n == 0 {
		return nil
	}
	var host []float64
	send := b.do
	release := func() {}
	if n <= uploadQueued {
		buf, c := uploadBuffer(n)
		host = packInto((*buf)[:n], src)
		release = func() { uploadBuffers[c].Put(buf) }
		send = func(f func() error) error { return b.queue(op, f) }
	} else {
		host = packHost(src)
	}
	return send(func() error {
		defer release()
		if denseSpan(dst) {
			return b.gpu.HtoD(b.ptr(dst), unsafe.Pointer(&host[0]), int64(n)*8)
		}
		stage, err := b.gpu.Scratch(slotStage, int64(n)*8)
		if err != nil {
			return err
		}
		if err := b.gpu.HtoD(stage, unsafe.Pointer(&host[0]), int64(n)*8); err != nil {
			return err
		}
		s := dst.Shape()
		d := b.viewOf(dst)
		return b.launch1D("core", "ew_copy", int64(n), d.p, d.bs, d.rs, stage, int64(s.Rows*s.Cols), int64(s.Cols),
			int64(s.Batch), int64(s.Rows), int64(s.Cols))
	})
}

// packHost returns the elements of a host view in batch-major, row-major order, without copying when the view is
// already contiguous.
func packHost(t *tensor.Tensor) []float64 {
	if t.Contiguous() {
		data := t.Storage().Host()
		return data[t.Offset() : t.Offset()+t.Len()]
	}
	return packInto(make([]float64, t.Len()), t)
}

// packInto copies the elements of a host view into dst (of the view's length) in batch-major, row-major order and
// returns dst.
func packInto(dst []float64, t *tensor.Tensor) []float64 {
	if t.Contiguous() {
		copy(dst, t.Storage().Host()[t.Offset():])
		return dst
	}
	at := 0
	for bb := 0; bb < t.Batch(); bb++ {
		m, stride, rows, cols := t.Matrix(bb)
		for i := 0; i < rows; i++ {
			at += copy(dst[at:], m[i*stride:i*stride+cols])
		}
	}
	return dst
}

// Download copies src (device) into the host tensor dst after the queued work is done.
func (b *Backend) Download(dst, src *tensor.Tensor) error {
	const op = "download"
	if err := backend.CheckNotNil(op, []string{"dst", "src"}, dst, src); err != nil {
		return err
	}
	if err := b.ownsNamed(op, []string{"src"}, src); err != nil {
		return err
	}
	if err := checkHostOperand(op, "dst", dst); err != nil {
		return err
	}
	if err := backend.CheckSame(op, "src", src, dst.Shape()); err != nil {
		return err
	}
	n := src.Len()
	if n == 0 {
		return nil
	}
	var host []float64
	if dst.Contiguous() {
		data := dst.Storage().Host()
		host = data[dst.Offset() : dst.Offset()+n]
	} else {
		host = make([]float64, n)
	}
	err := b.do(func() error {
		from := b.ptr(src)
		if !denseSpan(src) {
			stage, err := b.gpu.Scratch(slotStage, int64(n)*8)
			if err != nil {
				return err
			}
			s := src.Shape()
			v := b.viewOf(src)
			if err := b.launch1D("core", "ew_copy", int64(n), stage, int64(s.Rows*s.Cols), int64(s.Cols), v.p, v.bs, v.rs,
				int64(s.Batch), int64(s.Rows), int64(s.Cols)); err != nil {
				return err
			}
			from = stage
		}
		return b.gpu.DtoH(unsafe.Pointer(&host[0]), from, int64(n)*8)
	})
	if err != nil {
		return backend.Errorf(op, "", err, "%v", src.Shape())
	}
	if !dst.Contiguous() {
		k := 0
		for bb := 0; bb < dst.Batch(); bb++ {
			m, stride, rows, cols := dst.Matrix(bb)
			for i := 0; i < rows; i++ {
				copy(m[i*stride:i*stride+cols], host[k:k+cols])
				k += cols
			}
		}
	}
	return nil
}

// Copy copies src into dst on the device; a src of batch 1 is broadcast.
func (b *Backend) Copy(dst, src *tensor.Tensor) error {
	const op = "copy"
	if err := backend.CheckNotNil(op, []string{"dst", "src"}, dst, src); err != nil {
		return err
	}
	if err := b.ownsNamed(op, []string{"dst", "src"}, dst, src); err != nil {
		return err
	}
	if err := backend.CheckMatrix(op, "src", src, dst.Batch(), dst.Rows(), dst.Cols()); err != nil {
		return err
	}
	n := dst.Len()
	if n == 0 {
		return nil
	}
	return b.queue(op, func() error {
		if denseSpan(dst) && denseSpan(src) && src.Batch() == dst.Batch() {
			return b.gpu.DtoD(b.ptr(dst), b.ptr(src), int64(n)*8)
		}
		s := dst.Shape()
		d, x := b.viewOf(dst), b.viewOf(src)
		return b.launch1D("core", "ew_copy", int64(n), d.p, d.bs, d.rs, x.p, x.bs, x.rs,
			int64(s.Batch), int64(s.Rows), int64(s.Cols))
	})
}
