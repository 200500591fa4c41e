package cuda

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/geovb/geovb/backend/cuda/internal/cu"
	"github.com/geovb/geovb/kernels"
	"github.com/geovb/geovb/tensor"
)

// emuDev is a host stand-in for the device behind hotDev: device memory is a float64 slice addressed from emuBase,
// every launch is checked against the kernel's parameter list in kernels/<module>.cu and runs the kernel's
// thread-by-thread emulation (emuKernels), and the cuBLAS/cuSOLVER calls are column-major host routines (gonum on
// the transposed views, checked against plain loops by TestEmuBLAS) that read only what the library reads (the
// named triangle, the leading dimensions; C not at all when β = 0). Fresh memory is NaN, so a kernel or a library
// call that reads what nothing wrote shows up in the results.
type emuDev struct {
	t       testing.TB
	mem     []float64
	used    int
	scratch [8]struct {
		p cu.DevPtr
		n int
	}
	sigs     map[string][]string
	launched []string
	naive    bool // TestEmuBLAS: dgemm, dsyrk and dtrsm take the plain loops
}

// emuBase is the device address of mem[0].
const emuBase = cu.DevPtr(1 << 32)

// emuKernel emulates one CUDA kernel launch.
type emuKernel func(e *emuDev, grid, block [3]uint32, shmem uint32, a emuArgs)

// emuKernels maps "module.name" to the emulation of that kernel; each _emu_test.go file adds its kernels.
var emuKernels = map[string]emuKernel{}

func newEmuDev(t testing.TB, words int) *emuDev {
	return &emuDev{t: t, mem: make([]float64, words), sigs: map[string][]string{}}
}

// alloc returns n fresh (NaN) doubles, 16-byte aligned.
func (e *emuDev) alloc(n int) cu.DevPtr {
	e.used = (e.used + 1) &^ 1
	if e.used+n > len(e.mem) {
		e.t.Fatalf("emulated device out of memory: %d + %d words of %d", e.used, n, len(e.mem))
	}
	p := emuBase + cu.DevPtr(8*e.used)
	for i := e.used; i < e.used+n; i++ {
		e.mem[i] = math.NaN()
	}
	e.used += n
	return p
}

// index returns the word index of p, which must be an aligned address inside the used memory.
func (e *emuDev) index(p cu.DevPtr) int {
	if p < emuBase || (p-emuBase)%8 != 0 || int(p-emuBase)/8 >= e.used {
		e.t.Fatalf("emulated device: bad double address %#x", uint64(p))
	}
	return int(p-emuBase) / 8
}

// f returns the double at p + 8·i.
func (e *emuDev) f(p cu.DevPtr, i int) *float64 { return &e.mem[e.index(p+cu.DevPtr(8*i))] }

// i32 returns the int at p (4-byte aligned).
func (e *emuDev) i32(p cu.DevPtr) *int32 {
	if p < emuBase || (p-emuBase)%4 != 0 || int(p-emuBase)/8 >= e.used {
		e.t.Fatalf("emulated device: bad int address %#x", uint64(p))
	}
	return (*int32)(unsafe.Add(unsafe.Pointer(&e.mem[0]), uintptr(p-emuBase)))
}

// put copies the whole storage of host tensor t into fresh device memory and returns its view there.
func (e *emuDev) put(t *tensor.Tensor) hotView {
	h := t.Storage().Host()
	base := e.alloc(len(h))
	copy(e.mem[e.index(base):], h)
	return hotView{p: base + cu.DevPtr(8*t.Offset()), batch: t.Batch(), rows: t.Rows(), cols: t.Cols(),
		bs: t.BatchStride(), rs: t.RowStride()}
}

// get copies the device copy of t made by put back into t's storage.
func (e *emuDev) get(t *tensor.Tensor, v hotView) {
	h := t.Storage().Host()
	base := v.p - cu.DevPtr(8*t.Offset())
	copy(h, e.mem[e.index(base):e.index(base)+len(h)])
}

func (e *emuDev) Scratch(slot int, bytes int64) (cu.DevPtr, error) {
	if slot < 0 || slot >= len(e.scratch) {
		return 0, fmt.Errorf("scratch slot %d", slot)
	}
	n := int((bytes + 7) / 8)
	if s := &e.scratch[slot]; s.p == 0 || s.n < n {
		s.p, s.n = e.alloc(max(n, 1)), max(n, 1)
	}
	return e.scratch[slot].p, nil
}

func (e *emuDev) Memset0(dst cu.DevPtr, bytes int64) error {
	if bytes%4 != 0 {
		e.t.Fatalf("Memset0 of %d bytes", bytes)
	}
	for o := int64(0); o < bytes; o += 4 {
		*e.i32(dst + cu.DevPtr(o)) = 0
	}
	return nil
}

func (e *emuDev) DtoH(dst unsafe.Pointer, src cu.DevPtr, bytes int64) error {
	if src < emuBase || int(src-emuBase)+int(bytes) > 8*e.used {
		e.t.Fatalf("DtoH past the end of device memory")
	}
	copy(unsafe.Slice((*byte)(dst), bytes), unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(&e.mem[0]),
		uintptr(src-emuBase))), bytes))
	return nil
}

// emuArgs are the arguments of one launch.
type emuArgs []any

func (a emuArgs) ptr(i int) cu.DevPtr { return a[i].(cu.DevPtr) }
func (a emuArgs) i64(i int) int {
	if v, ok := a[i].(int64); ok {
		return int(v)
	}
	return a[i].(int)
}
func (a emuArgs) i32(i int) int32   { return a[i].(int32) }
func (a emuArgs) u64(i int) uint64  { return a[i].(uint64) }
func (a emuArgs) f64(i int) float64 { return a[i].(float64) }

// argKind is the C parameter kind a Go launch argument is passed as (cu.Device.Launch).
func argKind(a any) string {
	switch a.(type) {
	case cu.DevPtr:
		return "ptr"
	case int, int64:
		return "long long"
	case int32:
		return "int"
	case uint32:
		return "unsigned"
	case uint64:
		return "unsigned long long"
	case float64:
		return "double"
	case float32:
		return "float"
	}
	return fmt.Sprintf("unsupported %T", a)
}

var kernelDecl = regexp.MustCompile(`extern "C" __global__ void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(([^)]*)\)`)

// signature returns the parameter kinds of kernel name in kernels/<module>.cu.
func (e *emuDev) signature(module, name string) []string {
	key := module + "." + name
	if s, ok := e.sigs[key]; ok {
		return s
	}
	src, err := kernels.Source(module)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, m := range kernelDecl.FindAllStringSubmatch(src, -1) {
		var kinds []string
		for _, p := range strings.Split(m[2], ",") {
			p = strings.Join(strings.Fields(p), " ")
			switch {
			case p == "":
				continue
			case strings.Contains(p, "*"):
				kinds = append(kinds, "ptr")
			case strings.HasPrefix(p, "unsigned long long "):
				kinds = append(kinds, "unsigned long long")
			case strings.HasPrefix(p, "long long "):
				kinds = append(kinds, "long long")
			case strings.HasPrefix(p, "unsigned "):
				kinds = append(kinds, "unsigned")
			case strings.HasPrefix(p, "int "):
				kinds = append(kinds, "int")
			case strings.HasPrefix(p, "double "):
				kinds = append(kinds, "double")
			case strings.HasPrefix(p, "float "):
				kinds = append(kinds, "float")
			default:
				e.t.Fatalf("%s: parameter %q of %s not understood", module, p, m[1])
			}
		}
		e.sigs[module+"."+m[1]] = kinds
	}
	s, ok := e.sigs[key]
	if !ok {
		e.t.Fatalf("kernel %s not found in kernels/%s.cu", name, module)
	}
	return s
}

func (e *emuDev) launch(module, name string, grid, block [3]uint32, shmem uint32, args ...any) error {
	sig := e.signature(module, name)
	if len(sig) != len(args) {
		e.t.Fatalf("%s.%s: %d arguments for %d parameters", module, name, len(args), len(sig))
	}
	for i, a := range args {
		if k := argKind(a); k != sig[i] {
			e.t.Fatalf("%s.%s: argument %d is %s, parameter is %s", module, name, i, k, sig[i])
		}
	}
	if grid[0] == 0 || grid[1] != 1 || grid[2] != 1 || block[1] != 1 || block[2] != 1 || block[0] == 0 ||
		block[0] > 1024 || grid[0] > hotMaxGrid {
		e.t.Fatalf("%s.%s: grid %v block %v", module, name, grid, block)
	}
	if shmem > 227<<10 {
		e.t.Fatalf("%s.%s: %d bytes of shared memory", module, name, shmem)
	}
	k, ok := emuKernels[module+"."+name]
	if !ok {
		e.t.Fatalf("no emulation of %s.%s", module, name)
	}
	e.launched = append(e.launched, name)
	k(e, grid, block, shmem, emuArgs(args))
	return nil
}

// ---- cuBLAS and cuSOLVER, column-major, reading only what the libraries read ----

// m returns element (i, j) of the column-major matrix at a with leading dimension ld.
func (e *emuDev) m(a cu.DevPtr, ld, i, j int) *float64 { return e.f(a, i+j*ld) }

func (e *emuDev) checkLD(call string, ld, rows int) error {
	if ld < max(1, rows) {
		e.t.Errorf("%s: leading dimension %d < %d", call, ld, rows)
		return fmt.Errorf("%s: CUBLAS_STATUS_INVALID_VALUE", call)
	}
	return nil
}

// span returns the words of the column-major rows×cols matrix at a with leading dimension ld, checked to lie in
// used memory (nil for an empty matrix).
func (e *emuDev) span(a cu.DevPtr, rows, cols, ld int) []float64 {
	if rows == 0 || cols == 0 {
		return nil
	}
	i := e.index(a)
	n := (cols-1)*ld + rows
	if i+n > e.used {
		e.t.Fatalf("emulated device: matrix at %#x (%d×%d, ld %d) runs past used memory", uint64(a), rows, cols, ld)
	}
	return e.mem[i : i+n]
}

// rowMajorT returns the column-major rows×cols matrix at a as the row-major cols×rows matrix gonum works on (the
// same memory, transposed).
func (e *emuDev) rowMajorT(a cu.DevPtr, rows, cols, ld int) blas64.General {
	return blas64.General{Rows: cols, Cols: rows, Stride: ld, Data: e.span(a, rows, cols, ld)}
}

// gonumT is the gonum transpose flag of a cuBLAS operation.
func gonumT(o cu.Op) blas.Transpose {
	if o == cu.OpN {
		return blas.NoTrans
	}
	return blas.Trans
}

// gonumUplo is the row-major triangle that holds the column-major uplo triangle (the same memory).
func gonumUplo(u cu.Fill) blas.Uplo {
	if u == cu.Lower {
		return blas.Upper
	}
	return blas.Lower
}

// Dgemm is cublasDgemm on the emulated device, through gonum: with X' the row-major transpose view of a
// column-major X, C = op(A)·op(B) is C' = op(B)ᵀ·op(A)ᵀ = op(B')·op(A'). naiveDgemm is the same in plain loops
// (TestEmuBLAS checks that they agree).
func (e *emuDev) Dgemm(ta, tb cu.Op, m, n, k int, alpha float64, a cu.DevPtr, lda int, b cu.DevPtr, ldb int,
	beta float64, c cu.DevPtr, ldc int) error {
	ar, ac, br, bc := m, k, k, n
	if ta == cu.OpT {
		ar, ac = k, m
	}
	if tb == cu.OpT {
		br, bc = n, k
	}
	for _, err := range []error{e.checkLD("Dgemm A", lda, ar), e.checkLD("Dgemm B", ldb, br), e.checkLD("Dgemm C", ldc, m)} {
		if err != nil {
			return err
		}
	}
	if m == 0 || n == 0 {
		return nil
	}
	cp := e.rowMajorT(c, m, n, ldc)
	if k == 0 || alpha == 0 {
		for j := 0; j < n; j++ {
			for i := 0; i < m; i++ {
				if beta == 0 {
					cp.Data[j*ldc+i] = 0
				} else {
					cp.Data[j*ldc+i] *= beta
				}
			}
		}
		return nil
	}
	blas64.Gemm(gonumT(tb), gonumT(ta), alpha, e.rowMajorT(b, br, bc, ldb), e.rowMajorT(a, ar, ac, lda), beta, cp)
	return nil
}

// Dsyrk is cublasDsyrk on the emulated device, through gonum (only the uplo triangle of C is written): C' = C, and
// op(A) = A'ᵀ for OpN, A' for OpT.
func (e *emuDev) Dsyrk(uplo cu.Fill, trans cu.Op, n, k int, alpha float64, a cu.DevPtr, lda int, beta float64,
	c cu.DevPtr, ldc int) error {
	ar, ac, gt := n, k, blas.Trans
	if trans == cu.OpT {
		ar, ac, gt = k, n, blas.NoTrans
	}
	if err := e.checkLD("Dsyrk A", lda, ar); err != nil {
		return err
	}
	if err := e.checkLD("Dsyrk C", ldc, n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	cs := blas64.Symmetric{Uplo: gonumUplo(uplo), N: n, Stride: ldc, Data: e.span(c, n, n, ldc)}
	if k == 0 {
		return e.naiveDsyrk(uplo, trans, n, k, alpha, a, lda, beta, c, ldc)
	}
	if beta == 0 {
		// cuBLAS does not read C when β = 0; gonum's Dsyrk (transposed, lower) multiplies it by 0, so a NaN left
		// in C would survive.
		for j := 0; j < n; j++ {
			for i := 0; i < n; i++ {
				if (uplo == cu.Lower && i >= j) || (uplo == cu.Upper && i <= j) {
					cs.Data[i+j*ldc] = 0
				}
			}
		}
	}
	blas64.Syrk(gt, alpha, e.rowMajorT(a, ar, ac, lda), beta, cs)
	return nil
}

// Dtrsm is cublasDtrsm on the emulated device, through gonum: op(A) X = αB is X' op(A') = αB' (a solve from the
// right), X op(A) = αB is op(A') X' = αB' (from the left), with the triangle flipped.
func (e *emuDev) Dtrsm(side cu.Side, uplo cu.Fill, trans cu.Op, diag cu.Diag, m, n int, alpha float64,
	a cu.DevPtr, lda int, b cu.DevPtr, ldb int) error {
	r, gs := m, blas.Right
	if side == cu.Right {
		r, gs = n, blas.Left
	}
	if err := e.checkLD("Dtrsm A", lda, r); err != nil {
		return err
	}
	if err := e.checkLD("Dtrsm B", ldb, m); err != nil {
		return err
	}
	if m == 0 || n == 0 {
		return nil
	}
	gd := blas.NonUnit
	if diag == cu.Unit {
		gd = blas.Unit
	}
	at := blas64.Triangular{Uplo: gonumUplo(uplo), Diag: gd, N: r, Stride: lda, Data: e.span(a, r, r, lda)}
	blas64.Trsm(gs, gonumT(trans), alpha, at, e.rowMajorT(b, m, n, ldb))
	return nil
}

func (e *emuDev) naiveDgemm(ta, tb cu.Op, m, n, k int, alpha float64, a cu.DevPtr, lda int, b cu.DevPtr, ldb int,
	beta float64, c cu.DevPtr, ldc int) error {
	ar, br := m, k
	if ta == cu.OpT {
		ar = k
	}
	if tb == cu.OpT {
		br = n
	}
	for _, err := range []error{e.checkLD("Dgemm A", lda, ar), e.checkLD("Dgemm B", ldb, br), e.checkLD("Dgemm C", ldc, m)} {
		if err != nil {
			return err
		}
	}
	opA := func(i, l int) float64 {
		if ta == cu.OpN {
			return *e.m(a, lda, i, l)
		}
		return *e.m(a, lda, l, i)
	}
	opB := func(l, j int) float64 {
		if tb == cu.OpN {
			return *e.m(b, ldb, l, j)
		}
		return *e.m(b, ldb, j, l)
	}
	out := make([]float64, m*n)
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			var s float64
			for l := 0; l < k; l++ {
				s += opA(i, l) * opB(l, j)
			}
			s *= alpha
			if beta != 0 {
				s += beta * *e.m(c, ldc, i, j)
			}
			out[i+j*m] = s
		}
	}
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			*e.m(c, ldc, i, j) = out[i+j*m]
		}
	}
	return nil
}

func (e *emuDev) naiveDsyrk(uplo cu.Fill, trans cu.Op, n, k int, alpha float64, a cu.DevPtr, lda int, beta float64,
	c cu.DevPtr, ldc int) error {
	ar := n
	if trans == cu.OpT {
		ar = k
	}
	if err := e.checkLD("Dsyrk A", lda, ar); err != nil {
		return err
	}
	if err := e.checkLD("Dsyrk C", ldc, n); err != nil {
		return err
	}
	op := func(i, l int) float64 { // op(A) is n×k
		if trans == cu.OpN {
			return *e.m(a, lda, i, l)
		}
		return *e.m(a, lda, l, i)
	}
	for j := 0; j < n; j++ {
		for i := 0; i < n; i++ {
			if (uplo == cu.Lower && i < j) || (uplo == cu.Upper && i > j) {
				continue
			}
			var s float64
			for l := 0; l < k; l++ {
				s += op(i, l) * op(j, l)
			}
			s *= alpha
			if beta != 0 {
				s += beta * *e.m(c, ldc, i, j)
			}
			*e.m(c, ldc, i, j) = s
		}
	}
	return nil
}

// tri returns the dense op(A) of the triangular r×r matrix at a, built from the named triangle only.
func (e *emuDev) tri(uplo cu.Fill, trans cu.Op, diag cu.Diag, r int, a cu.DevPtr, lda int) []float64 {
	t := make([]float64, r*r) // row-major
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			in := (uplo == cu.Lower && i >= j) || (uplo == cu.Upper && i <= j)
			if !in {
				continue
			}
			v := *e.m(a, lda, i, j)
			if i == j && diag == cu.Unit {
				v = 1
			}
			if trans == cu.OpN {
				t[i*r+j] = v
			} else {
				t[j*r+i] = v
			}
		}
	}
	return t
}

// triSolve solves T y = b in place for the dense r×r triangular (row-major) t, lower or upper.
func triSolve(t []float64, r int, lower bool, y []float64) {
	if lower {
		for i := 0; i < r; i++ {
			s := y[i]
			for j := 0; j < i; j++ {
				s -= t[i*r+j] * y[j]
			}
			y[i] = s / t[i*r+i]
		}
		return
	}
	for i := r - 1; i >= 0; i-- {
		s := y[i]
		for j := i + 1; j < r; j++ {
			s -= t[i*r+j] * y[j]
		}
		y[i] = s / t[i*r+i]
	}
}

func (e *emuDev) naiveDtrsm(side cu.Side, uplo cu.Fill, trans cu.Op, diag cu.Diag, m, n int, alpha float64,
	a cu.DevPtr, lda int, b cu.DevPtr, ldb int) error {
	r := m
	if side == cu.Right {
		r = n
	}
	if err := e.checkLD("Dtrsm A", lda, r); err != nil {
		return err
	}
	if err := e.checkLD("Dtrsm B", ldb, m); err != nil {
		return err
	}
	t := e.tri(uplo, trans, diag, r, a, lda)
	lower := (uplo == cu.Lower) != (trans == cu.OpT) // op(A) is lower triangular
	if side == cu.Left {
		// op(A) X = αB, column by column.
		y := make([]float64, m)
		for j := 0; j < n; j++ {
			for i := 0; i < m; i++ {
				y[i] = alpha * *e.m(b, ldb, i, j)
			}
			triSolve(t, m, lower, y)
			for i := 0; i < m; i++ {
				*e.m(b, ldb, i, j) = y[i]
			}
		}
		return nil
	}
	// X op(A) = αB ⇔ op(A)ᵀ xᵢ = α bᵢ for each row i.
	tt := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			tt[i*n+j] = t[j*n+i]
		}
	}
	y := make([]float64, n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			y[j] = alpha * *e.m(b, ldb, i, j)
		}
		triSolve(tt, n, !lower, y)
		for j := 0; j < n; j++ {
			*e.m(b, ldb, i, j) = y[j]
		}
	}
	return nil
}

func (e *emuDev) Dpotrf(uplo cu.Fill, n int, a cu.DevPtr, lda int, info cu.DevPtr) error {
	if err := e.checkLD("Dpotrf", lda, n); err != nil {
		return err
	}
	// el returns the stored element (i, j), i ≥ j, of the factor's triangle: L(i, j) for Lower, U(j, i) for Upper.
	el := func(i, j int) *float64 {
		if uplo == cu.Lower {
			return e.m(a, lda, i, j)
		}
		return e.m(a, lda, j, i)
	}
	*e.i32(info) = 0
	for j := 0; j < n; j++ {
		s := *el(j, j)
		for k := 0; k < j; k++ {
			s -= *el(j, k) * *el(j, k)
		}
		if !(s > 0) {
			*e.i32(info) = int32(j + 1)
			return nil
		}
		ljj := math.Sqrt(s)
		*el(j, j) = ljj
		for i := j + 1; i < n; i++ {
			s := *el(i, j)
			for k := 0; k < j; k++ {
				s -= *el(i, k) * *el(j, k)
			}
			*el(i, j) = s / ljj
		}
	}
	return nil
}

// ---- emulation helpers shared by the kernels ----

// emuWarpSum is __shfl_xor_sync butterfly summation over 32 lanes: lane l ends with the same sum as every other
// lane (v[l] + v[l^m] is the same double as v[l^m] + v[l]), returned once.
func emuWarpSum(v []float64) float64 {
	var w [32]float64
	copy(w[:], v)
	for m := 16; m >= 1; m >>= 1 {
		var nw [32]float64
		for l := range nw {
			nw[l] = w[l] + w[l^m]
		}
		w = nw
	}
	for l := 1; l < 32; l++ {
		if w[l] != w[0] && !(math.IsNaN(w[l]) && math.IsNaN(w[0])) {
			panic("butterfly sums differ between lanes")
		}
	}
	return w[0]
}

// emuGroupSum is the group reduction of the kernels (sph_sum, qr_sum) for a group of g threads whose partial sums
// are v (len g): the value itself for g = 1, the butterfly for a warp, and for a block the warp butterflies added in
// warp order, starting from 0.
func emuGroupSum(v []float64) float64 {
	switch g := len(v); {
	case g == 1:
		return v[0]
	case g == 32:
		return emuWarpSum(v)
	default:
		var s float64
		for w := 0; w < g/32; w++ {
			s += emuWarpSum(v[32*w : 32*w+32])
		}
		return s
	}
}

// ---- comparisons ----

// maxRelDiff returns max |a − b| / max(|b|, floor) over two host tensors of one shape.
func maxRelDiff(a, b *tensor.Tensor, floor float64) float64 {
	var m float64
	s := a.Shape()
	for bb := 0; bb < s.Batch; bb++ {
		for i := 0; i < s.Rows; i++ {
			for j := 0; j < s.Cols; j++ {
				x, y := a.At(bb, i, j), b.At(bb, i, j)
				d := math.Abs(x-y) / math.Max(math.Abs(y), floor)
				if math.IsNaN(d) && !(math.IsNaN(x) && math.IsNaN(y)) {
					return math.Inf(1)
				}
				m = math.Max(m, d)
			}
		}
	}
	return m
}

// sameBits reports whether the storages of two host tensors are bitwise equal.
func sameBits(a, b *tensor.Tensor) bool {
	ha, hb := a.Storage().Host(), b.Storage().Host()
	if len(ha) != len(hb) {
		return false
	}
	for i := range ha {
		if math.Float64bits(ha[i]) != math.Float64bits(hb[i]) {
			return false
		}
	}
	return true
}

// stridedHost returns a host tensor of shape batch×rows×cols laid out with extra row and batch padding (a strided
// view into a larger storage, offset by off) and filled by f; pad = 0 gives a contiguous tensor.
func stridedHost(batch, rows, cols, pad, off int, f func(b, i, j int) float64) *tensor.Tensor {
	rs := cols + pad
	bs := rows*rs + 3*pad
	data := make([]float64, off+batch*bs+1)
	for i := range data {
		data[i] = -777 // padding that must not change
	}
	t, err := tensor.New(tensor.NewHostStorage(data, nil), off, tensor.Shape{Batch: batch, Rows: rows, Cols: cols}, bs, rs)
	if err != nil {
		panic(err)
	}
	for b := 0; b < batch; b++ {
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				t.Set(b, i, j, f(b, i, j))
			}
		}
	}
	return t
}

// cloneHost returns a copy of host tensor t with the same layout (storage copied).
func cloneHost(t *tensor.Tensor) *tensor.Tensor {
	h := append([]float64(nil), t.Storage().Host()...)
	c, err := tensor.New(tensor.NewHostStorage(h, nil), t.Offset(), t.Shape(), t.BatchStride(), t.RowStride())
	if err != nil {
		panic(err)
	}
	return c
}

// samePadding checks that the storage of a outside its view equals that of b (kernels wrote nothing else).
func samePadding(t *testing.T, name string, a, b *tensor.Tensor) {
	t.Helper()
	ha, hb := a.Storage().Host(), b.Storage().Host()
	inView := make([]bool, len(ha))
	s := a.Shape()
	for bb := 0; bb < s.Batch; bb++ {
		for i := 0; i < s.Rows; i++ {
			for j := 0; j < s.Cols; j++ {
				inView[a.Index(bb, i, j)] = true
			}
		}
	}
	for k := range ha {
		if !inView[k] && math.Float64bits(ha[k]) != math.Float64bits(hb[k]) {
			t.Errorf("%s: storage element %d outside the view changed: %v → %v", name, k, hb[k], ha[k])
			return
		}
	}
}

// cuDefine returns the value of #define name in kernels/<module>.cu.
func cuDefine(t *testing.T, module, name string) string {
	t.Helper()
	src, err := kernels.Source(module)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^#define ` + name + `\s+(\S+)`).FindStringSubmatch(src)
	if m == nil {
		t.Fatalf("kernels/%s.cu: no #define %s", module, name)
	}
	return m[1]
}

// TestEmuConstants checks that the constants the Go side and the emulations assume match the kernels' own.
func TestEmuConstants(t *testing.T) {
	want := map[[2]string]string{
		{"sphere", "SPH_THREADS"}:  fmt.Sprint(hotThreads),
		{"sphere", "SPH_R_THREAD"}: fmt.Sprint(sphEmuCfg["thread"][1]),
		{"sphere", "SPH_R_WARP"}:   fmt.Sprint(sphEmuCfg["warp"][1]),
		{"sphere", "SPH_R_BLOCK"}:  fmt.Sprint(sphEmuCfg["block"][1]),
		{"qr", "QR_THREADS"}:       fmt.Sprint(hotThreads),
		{"qr", "QR_CGS_MIN_RATIO"}: "1e-8",
		{"qr", "QR_CGS_REORTH"}:    "0.5",
		{"lowrank", "LR_THREADS"}:  fmt.Sprint(hotThreads),
		{"spd", "SPD_THREADS"}:     fmt.Sprint(spdMaxThreads),
		{"spd", "SPD_SWEEPS"}:      fmt.Sprint(spdEmuSweeps),
		{"spd", "SPD_JACOBI_TOL"}:  fmt.Sprint(spdEmuJacobiTol),
		{"philox", "PHILOX_M0"}:    "0xD2511F53u",
		{"philox", "PHILOX_M1"}:    "0xCD9E8D57u",
		{"philox", "PHILOX_W0"}:    "0x9E3779B9u",
		{"philox", "PHILOX_W1"}:    "0xBB67AE85u",
	}
	for k, v := range want {
		if got := cuDefine(t, k[0], k[1]); got != v {
			t.Errorf("kernels/%s.cu: %s = %s, the Go side assumes %s", k[0], k[1], got, v)
		}
	}
	// The Go side keeps whole rows in registers: n ≤ G·R of the variant it picks.
	if sphThreadMaxN != 1*sphEmuCfg["thread"][1] || sphWarpMaxN != 32*sphEmuCfg["warp"][1] {
		t.Errorf("sphere variant limits %d, %d do not match the register caches", sphThreadMaxN, sphWarpMaxN)
	}
	// philox.cu repeats the polynomial coefficients of rng/boxmuller.go; each must appear there spelled as in Go.
	goSrc, err := os.ReadFile("../../rng/boxmuller.go")
	if err != nil {
		t.Fatal(err)
	}
	cuSrc, err := kernels.Source("philox")
	if err != nil {
		t.Fatal(err)
	}
	consts := regexp.MustCompile(`(?m)^\t(\w+)\s+= (-?[0-9][0-9a-fx.p+\-e]*)$`).FindAllStringSubmatch(string(goSrc), -1)
	if len(consts) < 25 {
		t.Fatalf("found %d constants in rng/boxmuller.go, expected the 29 coefficients", len(consts))
	}
	for _, c := range consts {
		lit := strings.TrimPrefix(c[2], "-")
		if !regexp.MustCompile(`(^|[^0-9.])` + regexp.QuoteMeta(lit) + `([^0-9]|$)`).MatchString(cuSrc) {
			t.Errorf("kernels/philox.cu does not contain rng constant %s = %s", c[1], c[2])
		}
	}
}

// dgemm, dsyrk and dtrsm call the gonum or the plain-loop version of the library call (e.naive).
func (e *emuDev) dgemm(ta, tb cu.Op, m, n, k int, alpha float64, a cu.DevPtr, lda int, b cu.DevPtr, ldb int,
	beta float64, c cu.DevPtr, ldc int) error {
	if e.naive {
		return e.naiveDgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
	return e.Dgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func (e *emuDev) dsyrk(uplo cu.Fill, trans cu.Op, n, k int, alpha float64, a cu.DevPtr, lda int, beta float64,
	c cu.DevPtr, ldc int) error {
	if e.naive {
		return e.naiveDsyrk(uplo, trans, n, k, alpha, a, lda, beta, c, ldc)
	}
	return e.Dsyrk(uplo, trans, n, k, alpha, a, lda, beta, c, ldc)
}

func (e *emuDev) dtrsm(side cu.Side, uplo cu.Fill, trans cu.Op, diag cu.Diag, m, n int, alpha float64,
	a cu.DevPtr, lda int, b cu.DevPtr, ldb int) error {
	if e.naive {
		return e.naiveDtrsm(side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb)
	}
	return e.Dtrsm(side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb)
}

// TestEmuBLAS checks the emulated cuBLAS calls (through gonum) against their plain-loop versions for every
// operation, triangle and side, with leading dimensions larger than the matrices, and with β = 0 on a destination
// full of NaN (which cuBLAS does not read).
func TestEmuBLAS(t *testing.T) {
	const m, n, k, ld = 5, 4, 3, 7
	const sq = ld * ld
	// run executes call on a fresh device holding three ld×ld blocks (A, B, C) with the gonum or the loop version
	// and returns the memory afterwards; with nanC the C block starts as NaN.
	run := func(naive, nanC bool, call func(e *emuDev, a, b, c cu.DevPtr) error) []float64 {
		e := newEmuDev(t, 4*sq)
		a := e.alloc(3 * sq)
		for i := 0; i < 3*sq; i++ {
			*e.f(a, i) = math.Sin(0.3 + 1.7*float64(i))
			if nanC && i >= 2*sq {
				*e.f(a, i) = math.NaN()
			}
		}
		for i := 0; i < ld; i++ {
			*e.f(a, i*ld+i) += 4 // well-conditioned triangles for the solves
		}
		e.naive = naive
		if err := call(e, a, a+8*sq, a+16*sq); err != nil {
			t.Fatal(err)
		}
		return append([]float64(nil), e.mem[:e.used]...)
	}
	check := func(name string, nanC bool, call func(e *emuDev, a, b, c cu.DevPtr) error) {
		t.Helper()
		g, l := run(false, nanC, call), run(true, nanC, call)
		for i := range g {
			if math.Abs(g[i]-l[i]) > 1e-12 || math.IsNaN(g[i]) != math.IsNaN(l[i]) {
				t.Fatalf("%s: word %d: gonum %v, loops %v", name, i, g[i], l[i])
			}
		}
	}
	for _, ta := range []cu.Op{cu.OpN, cu.OpT} {
		for _, tb := range []cu.Op{cu.OpN, cu.OpT} {
			for _, beta := range []float64{0, 0.5} {
				check(fmt.Sprint("gemm", ta, tb, beta), beta == 0, func(e *emuDev, a, b, c cu.DevPtr) error {
					return e.dgemm(ta, tb, m, n, k, 1.3, a, ld, b, ld, beta, c, ld)
				})
			}
		}
	}
	for _, u := range []cu.Fill{cu.Lower, cu.Upper} {
		for _, tr := range []cu.Op{cu.OpN, cu.OpT} {
			for _, beta := range []float64{0, 0.5} {
				check(fmt.Sprint("syrk", u, tr, beta), beta == 0, func(e *emuDev, a, _, c cu.DevPtr) error {
					return e.dsyrk(u, tr, n, k, 0.7, a, ld, beta, c, ld)
				})
			}
			for _, side := range []cu.Side{cu.Left, cu.Right} {
				for _, dg := range []cu.Diag{cu.NonUnit, cu.Unit} {
					check(fmt.Sprint("trsm", u, tr, side, dg), false, func(e *emuDev, a, b, _ cu.DevPtr) error {
						return e.dtrsm(side, u, tr, dg, m, n, 0.9, a, ld, b, ld)
					})
				}
			}
		}
	}
}
