package cuda

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/lapack64"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/backendtest"
	"github.com/geovb/geovb/backend/cuda/internal/cu"
	"github.com/geovb/geovb/tensor"
)

// The whole CUDA backend on an emulated device: the Backend methods, the hot-operation kernels and their Go
// launch code run unchanged; device memory is host memory, each CUDA kernel is its thread-by-thread emulation
// (emuKernels, launch arguments checked against the .cu parameter lists) and cuBLAS/cuSOLVER are column-major
// host routines that read only what the libraries read. The conformance suite then checks the row-major to
// column-major mappings, the strides, the scratch bookkeeping and every kernel's algorithm without a GPU. What it
// cannot check is the CUDA C itself (compiled, not run, by TestKernelsCompile) and the driver.

// emuGPU adds to emuDev what the backend core uses: allocation with reuse, host copies and the batched and
// LAPACK-level library calls.
type emuGPU struct {
	*emuDev
	free  map[int][]cu.DevPtr // freed blocks by size in words
	sizes map[cu.DevPtr]int
}

// emuWords is the emulated device memory (float64 words; host pages are only touched when allocated).
const emuWords = 1 << 27

func newEmuBackend(t testing.TB) *Backend {
	g := &emuGPU{emuDev: newEmuDev(t, emuWords), free: map[int][]cu.DevPtr{}, sizes: map[cu.DevPtr]int{}}
	b := &Backend{gpu: g, run: func(f func() error) error { return f() }, post: func(f func()) error { f(); return nil },
		live: map[*storage]struct{}{}}
	b.info = backend.Info{Name: Name, Library: "emulated cuBLAS/cuSOLVER", Device: "emulated GPU", Cores: 4,
		Features: []string{"sm_90"}, Memory: 8 * emuWords, Extra: map[string]string{}}
	return b
}

func (g *emuGPU) MemAlloc(bytes int64) (cu.DevPtr, error) {
	n := int((bytes + 7) / 8)
	if l := g.free[n]; len(l) > 0 {
		p := l[len(l)-1]
		g.free[n] = l[:len(l)-1]
		for i := 0; i < n; i++ {
			*g.f(p, i) = math.NaN()
		}
		return p, nil
	}
	if g.used+n+2 > len(g.mem) {
		return 0, &cu.Error{Lib: "cuda", Call: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Msg: "out of memory"}
	}
	p := g.alloc(n)
	g.sizes[p] = n
	return p, nil
}

func (g *emuGPU) MemFree(p cu.DevPtr) error {
	n, ok := g.sizes[p]
	if !ok {
		g.t.Fatalf("MemFree of %#x, not an allocation", uint64(p))
	}
	g.free[n] = append(g.free[n], p)
	return nil
}

func (g *emuGPU) MemGetInfo() (int64, int64, error) {
	return 8 * int64(len(g.mem)-g.used), 8 * int64(len(g.mem)), nil
}

// bytesAt is the emulated device memory [p, p+bytes) as a byte slice, checked to lie in allocated memory.
func (g *emuGPU) bytesAt(p cu.DevPtr, bytes int64) []byte {
	if p < emuBase || int64(p-emuBase)+bytes > 8*int64(g.used) {
		g.t.Fatalf("device range %#x + %d outside allocated memory", uint64(p), bytes)
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(&g.mem[0]), uintptr(p-emuBase))), bytes)
}

func (g *emuGPU) HtoD(dst cu.DevPtr, src unsafe.Pointer, bytes int64) error {
	copy(g.bytesAt(dst, bytes), unsafe.Slice((*byte)(src), bytes))
	return nil
}

func (g *emuGPU) DtoD(dst, src cu.DevPtr, bytes int64) error {
	copy(g.bytesAt(dst, bytes), g.bytesAt(src, bytes))
	return nil
}

func (g *emuGPU) Sync() error { return nil }

// Dgemm is the column-major product C = alpha·op(A)·op(B) + beta·C computed by gonum on the row-major views of
// the same memory (a column-major r×c block read row-major is its c×r transpose): Cᵀ = op(B)ᵀ·op(A)ᵀ. It is the
// same function as emuDev's loop, fast enough for the suite's d = 2e5 cases. C is not read when beta = 0.
func (g *emuGPU) Dgemm(ta, tb cu.Op, m, n, k int, alpha float64, a cu.DevPtr, lda int, b cu.DevPtr, ldb int,
	beta float64, c cu.DevPtr, ldc int) error {
	ar, ac := k, m // row-major view of A's memory
	if ta == cu.OpT {
		ar, ac = m, k
	}
	br, bc := n, k
	if tb == cu.OpT {
		br, bc = k, n
	}
	for _, err := range []error{g.checkLD("Dgemm A", lda, ac), g.checkLD("Dgemm B", ldb, bc), g.checkLD("Dgemm C", ldc, m)} {
		if err != nil {
			return err
		}
	}
	if m == 0 || n == 0 {
		return nil
	}
	view := func(p cu.DevPtr, rows, cols, ld int) blas64.General {
		if rows == 0 || cols == 0 {
			return blas64.General{Rows: rows, Cols: cols, Stride: max(ld, 1), Data: []float64{}}
		}
		i := g.index(p)
		return blas64.General{Rows: rows, Cols: cols, Stride: ld, Data: g.mem[i : i+(rows-1)*ld+cols]}
	}
	tr := func(o cu.Op) blas.Transpose {
		if o == cu.OpN {
			return blas.NoTrans
		}
		return blas.Trans
	}
	cv := view(c, n, m, ldc)
	if beta == 0 {
		for r := 0; r < n; r++ {
			clear(cv.Data[r*ldc : r*ldc+m])
		}
	}
	if k == 0 {
		for r := 0; r < n; r++ {
			for j := 0; j < m; j++ {
				cv.Data[r*ldc+j] *= beta
			}
		}
		return nil
	}
	blas64.Gemm(tr(tb), tr(ta), alpha, view(b, br, bc, ldb), view(a, ar, ac, lda), beta, cv)
	return nil
}

func (g *emuGPU) DgemmStridedBatched(ta, tb cu.Op, m, n, k int, alpha float64, a cu.DevPtr, lda int, sa int64,
	b cu.DevPtr, ldb int, sb int64, beta float64, c cu.DevPtr, ldc int, sc int64, batch int) error {
	for i := 0; i < batch; i++ {
		if err := g.Dgemm(ta, tb, m, n, k, alpha, a+cu.DevPtr(8*sa*int64(i)), lda, b+cu.DevPtr(8*sb*int64(i)), ldb,
			beta, c+cu.DevPtr(8*sc*int64(i)), ldc); err != nil {
			return err
		}
	}
	return nil
}

// ptrAt reads entry i of a device array of device pointers.
func (g *emuGPU) ptrAt(arr cu.DevPtr, i int) cu.DevPtr {
	return cu.DevPtr(math.Float64bits(*g.f(arr, i)))
}

func (g *emuGPU) DtrsmBatched(side cu.Side, uplo cu.Fill, trans cu.Op, diag cu.Diag, m, n int, alpha float64,
	aArray cu.DevPtr, lda int, bArray cu.DevPtr, ldb int, batch int) error {
	for i := 0; i < batch; i++ {
		if err := g.Dtrsm(side, uplo, trans, diag, m, n, alpha, g.ptrAt(aArray, i), lda, g.ptrAt(bArray, i), ldb); err != nil {
			return err
		}
	}
	return nil
}

// Dtrmm is C = alpha·op(A)·B (Left) or alpha·B·op(A) (Right) with A triangular, C separate from B.
func (g *emuGPU) Dtrmm(side cu.Side, uplo cu.Fill, trans cu.Op, diag cu.Diag, m, n int, alpha float64,
	a cu.DevPtr, lda int, b cu.DevPtr, ldb int, c cu.DevPtr, ldc int) error {
	r := m
	if side == cu.Right {
		r = n
	}
	if err := g.checkLD("Dtrmm A", lda, r); err != nil {
		return err
	}
	t := g.tri(uplo, trans, diag, r, a, lda) // row-major op(A)
	out := make([]float64, m*n)
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			var s float64
			if side == cu.Left {
				for l := 0; l < m; l++ {
					s += t[i*m+l] * *g.m(b, ldb, l, j)
				}
			} else {
				for l := 0; l < n; l++ {
					s += *g.m(b, ldb, i, l) * t[l*n+j]
				}
			}
			out[i+j*m] = alpha * s
		}
	}
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			*g.m(c, ldc, i, j) = out[i+j*m]
		}
	}
	return nil
}

// Dgeam is C = alpha·op(A) + beta·op(B); B is not read when beta = 0.
func (g *emuGPU) Dgeam(ta, tb cu.Op, m, n int, alpha float64, a cu.DevPtr, lda int, beta float64, b cu.DevPtr,
	ldb int, c cu.DevPtr, ldc int) error {
	out := make([]float64, m*n)
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			av := *g.m(a, lda, i, j)
			if ta == cu.OpT {
				av = *g.m(a, lda, j, i)
			}
			v := alpha * av
			if beta != 0 {
				bv := *g.m(b, ldb, i, j)
				if tb == cu.OpT {
					bv = *g.m(b, ldb, j, i)
				}
				v += beta * bv
			}
			out[i+j*m] = v
		}
	}
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			*g.m(c, ldc, i, j) = out[i+j*m]
		}
	}
	return nil
}

func (g *emuGPU) DpotrfBatched(uplo cu.Fill, n int, aArray cu.DevPtr, lda int, info cu.DevPtr, batch int) error {
	for i := 0; i < batch; i++ {
		if err := g.Dpotrf(uplo, n, g.ptrAt(aArray, i), lda, info+cu.DevPtr(4*i)); err != nil {
			return err
		}
	}
	return nil
}

// general copies the column-major m×n block at a into a row-major gonum matrix.
func (g *emuGPU) general(m, n int, a cu.DevPtr, lda int) blas64.General {
	out := blas64.General{Rows: m, Cols: n, Stride: max(n, 1), Data: make([]float64, m*max(n, 1))}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			out.Data[i*out.Stride+j] = *g.m(a, lda, i, j)
		}
	}
	return out
}

func (g *emuGPU) store(x blas64.General, a cu.DevPtr, lda int) {
	for i := 0; i < x.Rows; i++ {
		for j := 0; j < x.Cols; j++ {
			*g.m(a, lda, i, j) = x.Data[i*x.Stride+j]
		}
	}
}

// Dgeqrf and Dorgqr are LAPACK's Householder QR and explicit Q (gonum on a row-major copy of the same matrix;
// the reflectors and tau mean the same in either storage, so the pair is consistent).
func (g *emuGPU) Dgeqrf(m, n int, a cu.DevPtr, lda int, tau cu.DevPtr, info cu.DevPtr) error {
	if err := g.checkLD("Dgeqrf", lda, m); err != nil {
		return err
	}
	x := g.general(m, n, a, lda)
	t := make([]float64, min(m, n))
	work := make([]float64, max(1, n)*64)
	lapack64.Geqrf(x, t, work, len(work))
	g.store(x, a, lda)
	for i, v := range t {
		*g.f(tau, i) = v
	}
	*g.i32(info) = 0
	return nil
}

func (g *emuGPU) Dorgqr(m, n, k int, a cu.DevPtr, lda int, tau cu.DevPtr, info cu.DevPtr) error {
	if err := g.checkLD("Dorgqr", lda, m); err != nil {
		return err
	}
	x := g.general(m, n, a, lda)
	t := make([]float64, k)
	for i := range t {
		t[i] = *g.f(tau, i)
	}
	work := make([]float64, max(1, n)*64)
	lapack64.Orgqr(x, t, work, len(work))
	g.store(x, a, lda)
	*g.i32(info) = 0
	return nil
}

// syev solves one symmetric eigenproblem from the named triangle of the column-major block at a, leaving the
// eigenvectors (columns) in a when vectors is set and the ascending eigenvalues in w.
func (g *emuGPU) syev(vectors bool, uplo cu.Fill, n int, a cu.DevPtr, lda int, w cu.DevPtr, info cu.DevPtr) {
	s := blas64.Symmetric{N: n, Stride: n, Uplo: blas.Lower, Data: make([]float64, n*n)}
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			v := *g.m(a, lda, i, j) // column-major lower
			if uplo == cu.Upper {
				v = *g.m(a, lda, j, i)
			}
			s.Data[i*n+j] = v
		}
	}
	jobz := lapack.EVNone
	if vectors {
		jobz = lapack.EVCompute
	}
	wv := make([]float64, n)
	q := make([]float64, 1)
	lapack64.Syev(jobz, s, wv, q, -1)
	work := make([]float64, int(q[0]))
	ok := lapack64.Syev(jobz, s, wv, work, len(work))
	*g.i32(info) = 0
	if !ok {
		*g.i32(info) = 1
	}
	for i, v := range wv {
		*g.f(w, i) = v
	}
	if vectors {
		for i := 0; i < n; i++ {
			for k := 0; k < n; k++ {
				*g.m(a, lda, i, k) = s.Data[i*n+k]
			}
		}
	}
}

func (g *emuGPU) Dsyevd(vectors bool, uplo cu.Fill, n int, a cu.DevPtr, lda int, w cu.DevPtr, info cu.DevPtr) error {
	g.syev(vectors, uplo, n, a, lda, w, info)
	return nil
}

func (g *emuGPU) DsyevjBatched(vectors bool, uplo cu.Fill, n int, a cu.DevPtr, lda int, w cu.DevPtr,
	info cu.DevPtr, batch int) error {
	if n > 32 {
		g.t.Fatalf("DsyevjBatched of order %d (cuSOLVER accepts at most 32)", n)
	}
	for i := 0; i < batch; i++ {
		g.syev(vectors, uplo, n, a+cu.DevPtr(8*i*lda*n), lda, w+cu.DevPtr(8*i*n), info+cu.DevPtr(4*i))
	}
	return nil
}

// newEmuThreadBackend is newEmuBackend with the device's calling thread of the hardware backend: every call goes
// through a cu.Thread, waited for (do) or queued (queue) as on a GPU, so what runs on the device thread checks the
// ordering of queued work and that nothing queued reads host memory after its call has returned. The emulation's
// fatal checks panic instead (t.Fatal must not run on another goroutine); the panic reaches the test through Do, or
// through the backend's failure when it was queued.
func newEmuThreadBackend(t testing.TB) *Backend {
	b := newEmuBackend(panicTB{t})
	th, err := cu.NewThread(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = th.Close(nil) })
	b.run, b.post = th.Do, th.Post
	return b
}

// panicTB turns Fatal into a panic, for checks that run on the device thread.
type panicTB struct{ testing.TB }

func (p panicTB) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (p panicTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// TestEmulatedConformance runs the conformance suite on the emulated device, through the device thread.
func TestEmulatedConformance(t *testing.T) {
	backendtest.Run(t, newEmuThreadBackend(t))
}

// TestQueuedUpload checks that a queued upload (up to uploadQueued elements) sends src as it was when Upload
// returned, though the caller overwrites src at once and the device thread copies later: three uploads from one
// src back to back, overwritten after each. Also a strided src and an upload above uploadQueued (waited for).
func TestQueuedUpload(t *testing.T) {
	b := newEmuThreadBackend(t)
	for _, c := range []struct {
		batch, rows, cols int
		strided           bool
	}{{2, 3, 4, false}, {2, 3, 4, true}, {1, 1, uploadQueued, false}, {1, 2, uploadQueued, false}} {
		s := tensor.Shape{Batch: c.batch, Rows: c.rows, Cols: c.cols}
		src := tensor.NewHost(c.batch, c.rows, c.cols)
		if c.strided {
			src = tensor.NewHost(c.batch, c.rows, c.cols+1).Slice(0, c.rows, 0, c.cols)
		}
		value := func(k, bb, i, j int) float64 { return float64(k*1000000 + (bb*c.rows+i)*c.cols + j) }
		fill := func(k int) {
			for bb := 0; bb < c.batch; bb++ {
				for i := 0; i < c.rows; i++ {
					for j := 0; j < c.cols; j++ {
						src.Set(bb, i, j, value(k, bb, i, j))
					}
				}
			}
		}
		xs := make([]*tensor.Tensor, 3)
		for k := range xs {
			var err error
			if xs[k], err = b.Alloc(s); err != nil {
				t.Fatal(err)
			}
		}
		for k, x := range xs {
			fill(k)
			if err := b.Upload(x, src); err != nil {
				t.Fatal(err)
			}
		}
		fill(99)
		got := tensor.NewHost(c.batch, c.rows, c.cols)
		for k, x := range xs {
			if err := b.Download(got, x); err != nil {
				t.Fatal(err)
			}
			bad := 0
			for bb := 0; bb < c.batch; bb++ {
				for i := 0; i < c.rows; i++ {
					for j := 0; j < c.cols; j++ {
						if got.At(bb, i, j) != value(k, bb, i, j) {
							bad++
						}
					}
				}
			}
			if bad > 0 {
				t.Errorf("%v strided %v: upload %d: %d elements differ from src at the call", s, c.strided, k, bad)
			}
			b.Free(x)
		}
	}
}

// TestUploadBufferReuse checks that a queued upload copies src into a buffer that an earlier upload has given back:
// 200 uploads of 8192 elements (64 KiB each), each followed by Sync so that its buffer is back before the next
// call (uploads in flight hold one buffer each), allocate less than an eighth of one copy per call on average,
// where a fresh copy per call allocates 64 KiB each. The uploaded values are checked too.
func TestUploadBufferReuse(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled buffers at random")
	}
	const n, calls = 8192, 200
	b := newEmuThreadBackend(t)
	x, err := b.Alloc(tensor.Shape{Batch: 1, Rows: 1, Cols: n})
	if err != nil {
		t.Fatal(err)
	}
	src := tensor.NewHost(1, 1, n)
	upload := func(k int) {
		for j := range n {
			src.Set(0, 0, j, float64(k*n+j))
		}
		if err := b.Upload(x, src); err != nil {
			t.Fatal(err)
		}
	}
	upload(0) // the first call fills the pool
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for k := 1; k <= calls; k++ {
		upload(k)
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	perCall := float64(after.TotalAlloc-before.TotalAlloc) / calls
	if perCall > n*8/8 {
		t.Errorf("a queued upload of %d elements allocates %.0f bytes on average; want under %d (an eighth of a copy)",
			n, perCall, n*8/8)
	}
	got := tensor.NewHost(1, 1, n)
	if err := b.Download(got, x); err != nil {
		t.Fatal(err)
	}
	for j := range n {
		if got.At(0, 0, j) != float64(calls*n+j) {
			t.Fatalf("element %d is %v after the last upload, want %v", j, got.At(0, 0, j), float64(calls*n+j))
		}
	}
	t.Logf("%.0f bytes allocated per queued upload of %d elements", perCall, n)
}

// TestQueuedFailure checks what a failing queued call does: the call that queued it returns nil, every later call
// that waits returns its error naming the operation, work queued after it is accepted but does not run, and Free
// still gives memory back. A panic in queued work is such a failure too.
func TestQueuedFailure(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func() error
		want string
	}{
		{"error", func() error { return errors.New("launch refused") }, "launch refused"},
		{"panic", func() error { panic("bad view") }, "panic: bad view"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, threaded := range []bool{false, true} {
				b := newEmuBackend(t)
				if threaded {
					b = newEmuThreadBackend(t)
				}
				x, err := b.Alloc(tensor.Shape{Batch: 1, Rows: 2, Cols: 3})
				if err != nil {
					t.Fatal(err)
				}
				if err := b.queue("test.op", c.f); err != nil {
					t.Fatalf("queue: %v", err)
				}
				if err := b.Fill(x, 7); err != nil { // queued behind the failure: accepted, not run
					t.Fatalf("Fill after the failure: %v", err)
				}
				host := tensor.NewHost(1, 2, 3)
				for _, call := range []struct {
					name string
					err  error
				}{{"Download", b.Download(host, x)}, {"Sync", b.Sync()}} {
					if call.err == nil || !strings.Contains(call.err.Error(), "test.op, queued, failed") ||
						!strings.Contains(call.err.Error(), c.want) {
						t.Errorf("threaded %v: %s after a failed queued call: %v", threaded, call.name, call.err)
					}
				}
				if _, err := b.Alloc(tensor.Shape{Batch: 1, Rows: 1, Cols: 1}); err == nil {
					t.Errorf("threaded %v: Alloc after a failed queued call succeeded", threaded)
				}
				g := b.gpu.(*emuGPU)
				if v := *g.f(b.ptr(x), 5); v != 0 {
					t.Errorf("threaded %v: the Fill queued after the failure ran (%v)", threaded, v)
				}
				b.Free(x)
				if err := b.run(func() error { return nil }); err != nil { // wait for the queued free
					t.Fatal(err)
				}
				if b.MemInUse() != 0 || len(g.free[6]) != 1 {
					t.Errorf("threaded %v: after Free, %d bytes in use, %d blocks of 6 words free", threaded,
						b.MemInUse(), len(g.free[6]))
				}
			}
		})
	}
}

// TestEmulatedErrors checks the errors a user meets first: a request larger than the device names its size and the
// free memory; a host tensor handed to a device operation is ErrForeign; nothing is counted as allocated after
// either.
func TestEmulatedErrors(t *testing.T) {
	b := newEmuBackend(t)
	_, err := b.Alloc(tensor.Shape{Batch: 4, Rows: 1 << 20, Cols: 1 << 10}) // 32 GiB
	if !errors.Is(err, backend.ErrOutOfMemory) || !strings.Contains(err.Error(), "32.00 GiB requested") ||
		!strings.Contains(err.Error(), "free of") {
		t.Fatalf("Alloc of 32 GiB: %v", err)
	}
	if n := b.MemInUse(); n != 0 {
		t.Fatalf("MemInUse %d after a failed Alloc", n)
	}
	host := tensor.NewHost(1, 2, 2)
	dev, err := b.Alloc(tensor.Shape{Batch: 1, Rows: 2, Cols: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Axpby(dev, 1, host, 0, nil); !errors.Is(err, backend.ErrForeign) {
		t.Fatalf("Axpby with a host operand: %v, want ErrForeign", err)
	}
	if err := b.Upload(host, host); !errors.Is(err, backend.ErrForeign) {
		t.Fatalf("Upload into a host tensor: %v, want ErrForeign", err)
	}
	b.Free(dev)
	b.Free(dev) // twice is harmless
	if n := b.MemInUse(); n != 0 {
		t.Fatalf("MemInUse %d after Free", n)
	}
}
