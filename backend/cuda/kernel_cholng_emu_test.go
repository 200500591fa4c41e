package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/backend/cuda/internal/cu"
	"github.com/geovb/geovb/tensor"
)

// Thread-by-thread emulations of kernels/cholng.cu. A block runs its threads one after the other between the
// __syncthreads of the source; blocks run in block order, so the last block to take a ticket in cng_finish is the
// last block of the grid. Shared memory starts as NaN, so a read of an entry no thread wrote shows in the results.

func init() {
	emuKernels["cholng.cholng_lower"] = emuCngLower
	emuKernels["cholng.cholng_upper"] = emuCngUpper
	emuKernels["cholng.cholng_rowscan"] = emuCngRowScan
	emuKernels["cholng.cholng_trinorm2"] = emuCngTriNorm2
	emuKernels["cholng.cholng_logabsdiag"] = emuCngLogAbsDiag
	emuKernels["cholng.cholng_draw"] = emuCngDraw
	emuKernels["cholng.cholng_natgrad"] = emuCngNatGrad
}

// emuCngGrid checks the launch shape and dynamic shared memory of a cholng kernel and returns the grid size.
func emuCngGrid(e *emuDev, name string, block [3]uint32, grid [3]uint32, shmem, want int) int {
	if block[0] != hotThreads {
		e.t.Fatalf("%s: block %v, the kernel assumes %d threads", name, block, hotThreads)
	}
	if shmem != want {
		e.t.Fatalf("%s: %d bytes of dynamic shared memory, the kernel uses %d", name, shmem, want)
	}
	return int(grid[0])
}

// emuCngShared returns n doubles of fresh (NaN) shared memory.
func emuCngShared(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}

// emuCngStage is cng_stage called by every thread of the block with values v (one per thread).
func emuCngStage(v, red []float64, a int) {
	for w := 0; w < cngWarps; w++ {
		red[a*cngWarps+w] = emuWarpSum(v[32*w : 32*w+32])
	}
}

// emuCngWarps is cng_warps.
func emuCngWarps(red []float64, a int) float64 {
	var s float64
	for w := 0; w < cngWarps; w++ {
		s += red[a*cngWarps+w]
	}
	return s
}

// emuCngFinish is cng_finish for block blk of a grid of g blocks.
func emuCngFinish(e *emuDev, blk, g int, tot []float64, part, count cu.DevPtr, q int, s cu.DevPtr, srs int,
	beta float64, red []float64) {
	for t := 0; t < q; t++ {
		*e.f(part, blk*q+t) = tot[t]
	}
	c := e.i32(count)
	ticket := uint32(*c)
	*c = int32(ticket + 1)
	if ticket != uint32(g-1) {
		return
	}
	v := make([]float64, hotThreads)
	for a := 0; a < q; a++ {
		for th := range v {
			var x float64
			for b := th; b < g; b += hotThreads {
				x += *e.f(part, b*q+a)
			}
			v[th] = x
		}
		emuCngStage(v, red, a)
	}
	for t := 0; t < q; t++ {
		x := emuCngWarps(red, t)
		p := e.f(s, t*srs)
		if beta == 0 {
			*p = x
		} else {
			*p = x + beta**p
		}
	}
	*c = 0
}

// emuCngCounter checks that a summing launch left its ticket counter at zero (the last block resets it).
func emuCngCounter(e *emuDev, name string, count cu.DevPtr) {
	if c := *e.i32(count); c != 0 {
		e.t.Fatalf("%s: ticket counter left at %d", name, c)
	}
}

// emuCngRegs panics like an out-of-bounds register array would misbehave: the r ≤ CNG_RMAX kernels must not see
// larger blocks.
func emuCngRegs(e *emuDev, name string, r int) {
	if r > cngRMax {
		e.t.Fatalf("%s: r = %d > CNG_RMAX = %d", name, r, cngRMax)
	}
}

func emuCngLower(e *emuDev, grid, block [3]uint32, shmem uint32, a emuArgs) {
	const name = "cholng_lower"
	dst, dbs, drs := a.ptr(0), a.i64(1), a.i64(2)
	l, lbs, lrs := a.ptr(3), a.i64(4), a.i64(5)
	x, xbs, xrs := a.ptr(6), a.i64(7), a.i64(8)
	m, mbs, mrs := a.ptr(9), a.i64(10), a.i64(11)
	s, srs, part, count := a.ptr(12), a.i64(13), a.ptr(14), a.ptr(15)
	n, r, q, solve, beta := a.i64(16), a.i64(17), a.i64(18), a.i32(19) != 0, a.f64(20)
	g := emuCngGrid(e, name, block, grid, int(shmem), 8*(cngWarps+1)*q)
	emuCngRegs(e, name, r)
	if q > cngQMax {
		e.t.Fatalf("%s: q = %d > CNG_QMAX", name, q)
	}
	T := hotThreads
	u, y := make([][]float64, T), make([][]float64, T)
	for th := range u {
		u[th], y[th] = make([]float64, cngRMax), make([]float64, cngRMax)
	}
	v := make([]float64, T)
	for blk := 0; blk < g; blk++ {
		sh := emuCngShared((cngWarps + 1) * q)
		red, tot := sh[:cngWarps*q], sh[cngWarps*q:]
		for t := 0; t < q; t++ {
			tot[t] = 0
		}
		for base := blk * T; base < n; base += g * T {
			for th := 0; th < T; th++ {
				i := base + th
				if i >= n {
					continue
				}
				xi, li, di := i*xbs, i*lbs, i*dbs
				for k := 0; k < r; k++ {
					u[th][k] = *e.f(x, xi+k*xrs)
				}
				for k := 0; k < r; k++ {
					row := li + k*lrs
					var w float64
					if solve {
						w = u[th][k]
						for c := 0; c < k; c++ {
							w -= *e.f(l, row+c) * y[th][c]
						}
						w = w / *e.f(l, row+k)
					} else {
						for c := 0; c <= k; c++ {
							w += *e.f(l, row+c) * u[th][c]
						}
					}
					y[th][k] = w
				}
				for k := 0; k < r; k++ {
					*e.f(dst, di+k*drs) = y[th][k]
				}
			}
			if q == 0 {
				continue
			}
			for aa := 0; aa < q; aa++ {
				for th := 0; th < T; th++ {
					v[th] = 0
					if i := base + th; i < n {
						row := i*mbs + aa*mrs
						src := u[th]
						if solve {
							src = y[th]
						}
						for k := 0; k < r; k++ {
							v[th] += *e.f(m, row+k) * src[k]
						}
					}
				}
				emuCngStage(v, red, aa)
			}
			for t := 0; t < q; t++ {
				tot[t] += emuCngWarps(red, t)
			}
		}
		if q > 0 {
			emuCngFinish(e, blk, g, tot, part, count, q, s, srs, beta, red)
		}
	}
	if q > 0 {
		emuCngCounter(e, name, count)
	}
}

func emuCngUpper(e *emuDev, grid, block [3]uint32, shmem uint32, a emuArgs) {
	const name = "cholng_upper"
	dst, dbs, drs := a.ptr(0), a.i64(1), a.i64(2)
	l, lbs, lrs := a.ptr(3), a.i64(4), a.i64(5)
	x, xbs, xrs := a.ptr(6), a.i64(7), a.i64(8)
	m, mbs, mrs := a.ptr(9), a.i64(10), a.i64(11)
	c, cbs, crs := a.ptr(12), a.i64(13), a.i64(14)
	n, r, q, solve := a.i64(15), a.i64(16), a.i64(17), a.i32(18) != 0
	g := emuCngGrid(e, name, block, grid, int(shmem), 0)
	emuCngRegs(e, name, r)
	u, y := make([]float64, cngRMax), make([]float64, cngRMax)
	for blk := 0; blk < g; blk++ {
		for th := 0; th < hotThreads; th++ {
			for i := blk*hotThreads + th; i < n; i += g * hotThreads {
				xi, li, mi, ci, di := i*xbs, i*lbs, i*mbs, i*cbs, i*dbs
				for k := 0; k < r; k++ {
					u[k] = *e.f(x, xi+k*xrs)
				}
				if solve {
					for k := 0; k < r && q > 0; k++ {
						w := u[k]
						for aa := 0; aa < q; aa++ {
							w -= *e.f(m, mi+aa*mrs+k) * *e.f(c, ci+aa*crs)
						}
						u[k] = w
					}
					for aa := r - 1; aa >= 0; aa-- {
						w := u[aa]
						for k := aa + 1; k < r; k++ {
							w -= *e.f(l, li+k*lrs+aa) * y[k]
						}
						y[aa] = w / *e.f(l, li+aa*lrs+aa)
					}
				} else {
					for aa := 0; aa < r; aa++ {
						var w float64
						for k := aa; k < r; k++ {
							w += *e.f(l, li+k*lrs+aa) * u[k]
						}
						y[aa] = w
					}
					for k := 0; k < r && q > 0; k++ {
						var w float64
						for aa := 0; aa < q; aa++ {
							w += *e.f(m, mi+aa*mrs+k) * *e.f(c, ci+aa*crs)
						}
						y[k] += w
					}
				}
				for k := 0; k < r; k++ {
					*e.f(dst, di+k*drs) = y[k]
				}
			}
		}
	}
}

func emuCngRowScan(e *emuDev, grid, block [3]uint32, shmem uint32, a emuArgs) {
	const name = "cholng_rowscan"
	dst, dbs, drs := a.ptr(0), a.i64(1), a.i64(2)
	m, mbs, mrs := a.ptr(3), a.i64(4), a.i64(5)
	x, xbs, xrs := a.ptr(6), a.i64(7), a.i64(8)
	y, ybs, yrs := a.ptr(9), a.i64(10), a.i64(11)
	qv, qbs, qrs := a.ptr(12), a.i64(13), a.i64(14)
	n, p, r, mode, alpha := a.i64(15), a.i64(16), a.i64(17), a.i32(18), a.f64(19)
	g := emuCngGrid(e, name, block, grid, int(shmem), 0)
	for blk := 0; blk < g; blk++ {
		for th := 0; th < hotThreads; th++ {
			for w := blk*hotThreads + th; w < n*p; w += g * hotThreads {
				i := w / p
				aa := w - i*p
				dr, xi, yi := i*dbs+aa*drs, i*xbs, i*ybs
				top := r - 1
				switch {
				case mode == cngOuter:
					top = aa
					ax := alpha * *e.f(x, xi+aa*xrs)
					for k := 0; k <= aa; k++ {
						*e.f(dst, dr+k) = ax * *e.f(y, yi+k*yrs)
					}
				case m == 0:
					qa := alpha * *e.f(qv, i*qbs+aa*qrs)
					for k := 0; k < r; k++ {
						*e.f(dst, dr+k) = qa * *e.f(y, yi+k*yrs)
					}
				default:
					if mode == cngTri {
						top = aa
					}
					mr := i*mbs + aa*mrs
					var acc float64
					if qv != 0 {
						acc = *e.f(qv, i*qbs+aa*qrs)
					}
					for k := top; k >= 0; k-- {
						t := *e.f(m, mr+k) * *e.f(x, xi+k*xrs)
						acc += t
						*e.f(dst, dr+k) = alpha * *e.f(y, yi+k*yrs) * (acc - 0.5*t)
					}
				}
				for k := top + 1; k < r; k++ {
					*e.f(dst, dr+k) = 0
				}
			}
		}
	}
}

// emuCngScalar runs the common part of cholng_trinorm2 and cholng_logabsdiag: thread th of block blk updates its
// accumulator acc = add(i, acc) over its items i, then the block sum and cng_finish into dst.
func emuCngScalar(e *emuDev, name string, grid, block [3]uint32, shmem uint32, dst, part, count cu.DevPtr, n int,
	add func(i int, acc float64) float64) {
	g := emuCngGrid(e, name, block, grid, int(shmem), 8*(cngWarps+1))
	v := make([]float64, hotThreads)
	for blk := 0; blk < g; blk++ {
		sh := emuCngShared(cngWarps + 1)
		red, tot := sh[:cngWarps], sh[cngWarps:]
		for th := range v {
			var acc float64
			for i := blk*hotThreads + th; i < n; i += g * hotThreads {
				acc = add(i, acc)
			}
			v[th] = acc
		}
		emuCngStage(v, red, 0)
		tot[0] = emuCngWarps(red, 0)
		emuCngFinish(e, blk, g, tot, part, count, 1, dst, 0, 0, red)
	}
	emuCngCounter(e, name, count)
}

func emuCngTriNorm2(e *emuDev, grid, block [3]uint32, shmem uint32, a emuArgs) {
	dst, x, xbs, xrs, y, ybs, yrs := a.ptr(0), a.ptr(1), a.i64(2), a.i64(3), a.ptr(4), a.i64(5), a.i64(6)
	part, count, n, r := a.ptr(7), a.ptr(8), a.i64(9), a.i64(10)
	emuCngScalar(e, "cholng_trinorm2", grid, block, shmem, dst, part, count, n, func(i int, acc float64) float64 {
		var pre, s float64
		for k := 0; k < r; k++ {
			xk, yk := *e.f(x, i*xbs+k*xrs), *e.f(y, i*ybs+k*yrs)
			x2, y2 := xk*xk, yk*yk
			s += x2*pre + 0.5*x2*y2
			pre += y2
		}
		return acc + s
	})
}

func emuCngLogAbsDiag(e *emuDev, grid, block [3]uint32, shmem uint32, a emuArgs) {
	dst, l, lbs, lrs := a.ptr(0), a.ptr(1), a.i64(2), a.i64(3)
	part, count, n, r := a.ptr(4), a.ptr(5), a.i64(6), a.i64(7)
	// One accumulator runs over the items and, inside each, the diagonal entries.
	emuCngScalar(e, "cholng_logabsdiag", grid, block, shmem, dst, part, count, n, func(i int, acc float64) float64 {
		for k := 0; k < r; k++ {
			acc += math.Log(math.Abs(*e.f(l, i*lbs+k*(lrs+1))))
		}
		return acc
	})
}

// emuCngBackSolve is the in-place back substitution of cholng_draw and cholng_natgrad: u ← Λ⁻ᵀu for the block
// at l + li (row stride lrs), r = len(u).
func emuCngBackSolve(e *emuDev, l cu.DevPtr, li, lrs int, u []float64) {
	for a := len(u) - 1; a >= 0; a-- {
		w := u[a]
		for k := a + 1; k < len(u); k++ {
			w -= *e.f(l, li+k*lrs+a) * u[k]
		}
		u[a] = w / *e.f(l, li+a*lrs+a)
	}
}

func emuCngDraw(e *emuDev, grid, block [3]uint32, shmem uint32, a emuArgs) {
	const name = "cholng_draw"
	dst, dbs, drs, ld := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3)
	l, lbs, lrs := a.ptr(4), a.i64(5), a.i64(6)
	x, xbs, xrs := a.ptr(7), a.i64(8), a.i64(9)
	m, mbs, mrs := a.ptr(10), a.i64(11), a.i64(12)
	c, cbs, crs := a.ptr(13), a.i64(14), a.i64(15)
	part, count, n, r, q := a.ptr(16), a.ptr(17), a.i64(18), a.i64(19), a.i64(20)
	emuCngRegs(e, name, r)
	u := make([]float64, r)
	emuCngScalar(e, name, grid, block, shmem, ld, part, count, n, func(i int, acc float64) float64 {
		xi, li, mi, ci, di := i*xbs, i*lbs, i*mbs, i*cbs, i*dbs
		for k := 0; k < r; k++ {
			u[k] = *e.f(x, xi+k*xrs)
		}
		for k := 0; k < r && q > 0; k++ {
			w := u[k]
			for aa := 0; aa < q; aa++ {
				w -= *e.f(m, mi+aa*mrs+k) * *e.f(c, ci+aa*crs)
			}
			u[k] = w
		}
		emuCngBackSolve(e, l, li, lrs, u)
		for k := 0; k < r; k++ {
			*e.f(dst, di+k*drs) = u[k]
		}
		for k := 0; k < r; k++ {
			acc += math.Log(math.Abs(*e.f(l, li+k*(lrs+1))))
		}
		return acc
	})
}

func emuCngNatGrad(e *emuDev, grid, block [3]uint32, shmem uint32, a emuArgs) {
	const name = "cholng_natgrad"
	du, dubs, durs := a.ptr(0), a.i64(1), a.i64(2)
	dl, dlbs, dlrs := a.ptr(3), a.i64(4), a.i64(5)
	dm, dmbs, dmrs := a.ptr(6), a.i64(7), a.i64(8)
	tn := a.ptr(9)
	l, lbs, lrs := a.ptr(10), a.i64(11), a.i64(12)
	m, mbs, mrs := a.ptr(13), a.i64(14), a.i64(15)
	c, cbs, crs := a.ptr(16), a.i64(17), a.i64(18)
	qv, qbs, qrs := a.ptr(19), a.i64(20), a.i64(21)
	z, zbs, zrs := a.ptr(22), a.i64(23), a.i64(24)
	v, vbs, vrs := a.ptr(25), a.i64(26), a.i64(27)
	part, count, n, r, p, alpha := a.ptr(28), a.ptr(29), a.i64(30), a.i64(31), a.i64(32), a.f64(33)
	emuCngRegs(e, name, r)
	zr, vr, u := make([]float64, r), make([]float64, r), make([]float64, r)
	emuCngScalar(e, name, grid, block, shmem, tn, part, count, n, func(i int, acc float64) float64 {
		li, mi, ci := i*lbs, i*mbs, i*cbs
		for k := 0; k < r; k++ {
			zr[k], vr[k] = *e.f(z, i*zbs+k*zrs), *e.f(v, i*vbs+k*vrs)
		}
		for k := 0; k < r; k++ {
			w := vr[k]
			for aa := 0; aa < p; aa++ {
				w -= *e.f(m, mi+aa*mrs+k) * *e.f(c, ci+aa*crs)
			}
			u[k] = w
		}
		emuCngBackSolve(e, l, li, lrs, u)
		for k := 0; k < r; k++ {
			*e.f(du, i*dubs+k*durs) = u[k]
		}
		for aa := 0; aa < r; aa++ {
			lr, dr := li+aa*lrs, i*dlbs+aa*dlrs
			var sum float64
			for k := aa; k >= 0; k-- {
				t := *e.f(l, lr+k) * zr[k]
				sum += t
				*e.f(dl, dr+k) = alpha * vr[k] * (sum - 0.5*t)
			}
			for k := aa + 1; k < r; k++ {
				*e.f(dl, dr+k) = 0
			}
		}
		for aa := 0; aa < p; aa++ {
			mr, dr := mi+aa*mrs, i*dmbs+aa*dmrs
			var sum float64
			if qv != 0 {
				sum = *e.f(qv, i*qbs+aa*qrs)
			}
			for k := r - 1; k >= 0; k-- {
				t := *e.f(m, mr+k) * zr[k]
				sum += t
				*e.f(dm, dr+k) = alpha * vr[k] * (sum - 0.5*t)
			}
		}
		var pre, sum float64
		for k := 0; k < r; k++ {
			x2, y2 := zr[k]*zr[k], vr[k]*vr[k]
			sum += x2*pre + 0.5*x2*y2
			pre += y2
		}
		return acc + sum
	})
}

// TestEmuCholNGConstants checks the limits the Go side assumes against kernels/cholng.cu.
func TestEmuCholNGConstants(t *testing.T) {
	for name, want := range map[string]int{"CNG_THREADS": hotThreads, "CNG_WARPS": cngWarps, "CNG_RMAX": cngRMax,
		"CNG_QMAX": cngQMax} {
		if got := cuDefine(t, "cholng", name); got != fmt.Sprint(want) {
			t.Errorf("kernels/cholng.cu: %s = %s, the Go side assumes %d", name, got, want)
		}
	}
}

// cngOperands are the operands of one block-operation test on one backend.
type cngOperands struct {
	b                      backend.Backend
	l, m, x, y, c, s, lsq  *tensor.Tensor
	dst, dstM, dstSq, scal *tensor.Tensor
}

// newCngOperands puts the host operands on b and allocates the destinations (the coupling sum s starts at s0).
func newCngOperands(t *testing.T, b backend.Backend, h map[string]*tensor.Tensor, n, r, q int) *cngOperands {
	t.Helper()
	put := func(x *tensor.Tensor) *tensor.Tensor {
		d, err := b.Alloc(x.Shape())
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Upload(d, x); err != nil {
			t.Fatal(err)
		}
		return d
	}
	alloc := func(s tensor.Shape) *tensor.Tensor {
		d, err := b.Alloc(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return &cngOperands{b: b, l: put(h["l"]), m: put(h["m"]), x: put(h["x"]), y: put(h["y"]), c: put(h["c"]),
		s: put(h["s0"]), lsq: put(h["l"]),
		dst: alloc(tensor.Shape{Batch: n, Rows: r, Cols: 1}), dstM: alloc(tensor.Shape{Batch: n, Rows: q, Cols: r}),
		dstSq: alloc(tensor.Shape{Batch: n, Rows: r, Cols: r}), scal: alloc(tensor.Shape{Batch: 1, Rows: 1, Cols: 1})}
}

// cngHost returns random host operands: n lower-triangular r×r blocks (|diagonal| in [0.5, 1.5], NaN above the
// diagonal), coupling blocks m (batch bm, q×r), vectors x, y (n×r×1), c (1×q×1) and the initial sum s0 (1×q×1).
func cngHost(rnd *rand.Rand, n, r, q, bm int) map[string]*tensor.Tensor {
	fill := func(batch, rows, cols int) *tensor.Tensor {
		h := tensor.NewHost(batch, rows, cols)
		for i := range h.Storage().Host() {
			h.Storage().Host()[i] = rnd.NormFloat64()
		}
		return h
	}
	l := fill(n, r, r)
	for i := 0; i < n; i++ {
		for a := 0; a < r; a++ {
			for k := a; k < r; k++ {
				v := math.NaN()
				if k == a {
					v = 0.5 + rnd.Float64()
					if rnd.IntN(2) == 0 {
						v = -v
					}
				}
				l.Set(i, a, k, v)
			}
			for k := 0; k < a; k++ {
				l.Set(i, a, k, 0.3*l.At(i, a, k))
			}
		}
	}
	return map[string]*tensor.Tensor{"l": l, "m": fill(bm, q, r), "x": fill(n, r, 1), "y": fill(n, r, 1),
		"c": fill(1, q, 1), "s0": fill(1, q, 1)}
}

func (o *cngOperands) free() {
	for _, d := range []*tensor.Tensor{o.l, o.m, o.x, o.y, o.c, o.s, o.lsq, o.dst, o.dstM, o.dstSq, o.scal} {
		o.b.Free(d)
	}
}

// run applies every block operation (and the small-block CholNGTri and LowerOuter, and the fused BlockDraw and
// BlockNatGrad) through the public entry points and returns the results on the host, named.
func (o *cngOperands) run(t *testing.T) map[string][]float64 {
	t.Helper()
	b := o.b
	out := map[string][]float64{}
	get := func(name string, d *tensor.Tensor) {
		h := tensor.NewHost(d.Batch(), d.Rows(), d.Cols())
		if err := b.Download(h, d); err != nil {
			t.Fatal(err)
		}
		out[name] = slices.Clone(h.Storage().Host())
	}
	check := func(name string, err error) {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, solve := range []bool{false, true} {
		check("lower", backend.BlockLower(b, solve, o.dst, o.s, o.l, o.m, o.x, 0.5))
		get(fmt.Sprintf("lower/solve=%v", solve), o.dst)
		get(fmt.Sprintf("lower/solve=%v/s", solve), o.s)
		check("upper", backend.BlockUpper(b, solve, o.dst, o.l, o.m, o.c, o.x))
		get(fmt.Sprintf("upper/solve=%v", solve), o.dst)
	}
	check("coupled", backend.BlockCoupledTri(b, o.dstM, o.m, o.x, o.y, o.c, -1))
	get("coupled", o.dstM)
	check("trinorm2", backend.BlockTriNorm2(b, o.scal, o.x, o.y))
	get("trinorm2", o.scal)
	check("logabsdiag", backend.BlockLogAbsDiag(b, o.scal, o.l))
	get("logabsdiag", o.scal)
	check("tri", backend.CholNGTri(b, o.dstSq, o.lsq, o.x, o.y, -0.5))
	get("tri", o.dstSq)
	check("lowerouter", backend.LowerOuter(b, o.dstSq, o.x, o.y, 2))
	get("lowerouter", o.dstSq)
	check("draw", backend.BlockDraw(b, o.dst, o.scal, o.l, o.m, o.c, o.x))
	get("draw", o.dst)
	get("draw/ld", o.scal)
	check("natgrad", backend.BlockNatGrad(b, o.dst, o.dstSq, o.dstM, o.scal, o.l, o.m, o.c, o.c, o.x, o.y, -1))
	get("natgrad/dmu", o.dst)
	get("natgrad/dl", o.dstSq)
	get("natgrad/dm", o.dstM)
	get("natgrad/tn", o.scal)
	return out
}

// cngCompare runs the operations on the emulated device and on the CPU backend and compares every result
// (max |a − b| / max(1, max |b|)).
func cngCompare(t *testing.T, eb *Backend, n, r, q, bm int, tol float64) (emu map[string][]float64, launched []string) {
	t.Helper()
	cb, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	h := cngHost(rand.New(rand.NewPCG(uint64(n), uint64(31*r+q))), n, r, q, bm)
	g := eb.gpu.(*emuGPU)
	ops := newCngOperands(t, eb, h, n, r, q)
	g.launched = nil
	emu = ops.run(t)
	launched = g.launched
	want := newCngOperands(t, cb, h, n, r, q).run(t)
	for name, w := range want {
		g := emu[name]
		var num, den float64
		for i := range w {
			num = max(num, math.Abs(g[i]-w[i]))
			den = max(den, math.Abs(w[i]))
			if math.IsNaN(g[i]) != math.IsNaN(w[i]) {
				num = math.Inf(1)
			}
		}
		if e := num / max(1, den); e > tol {
			t.Errorf("n=%d r=%d q=%d %s: emulated device differs from the CPU by %.3g", n, r, q, name, e)
		}
	}
	ops.free()
	return emu, launched
}

// TestEmuCholNGKernels checks the kernels' selection and launch counts and runs them against the CPU backend where
// the conformance suite does not reach: several grid-stride rounds of the summing kernels (cngMaxBlocks lowered),
// and the sizes that fall back to the reference (r > CNG_RMAX, q > CNG_QMAX, CholNGTri above cngTriMax).
func TestEmuCholNGKernels(t *testing.T) {
	b := newEmuBackend(t)
	col := tensor.Shape{Batch: 1000, Rows: 4, Cols: 1}
	for _, c := range []struct{ got, want string }{
		{selName(backend.BlockLowerOp.Select(b, col)), "cuda.cholng.blocks.lower"},
		{selName(backend.BlockUpperOp.Select(b, col)), "cuda.cholng.blocks.upper"},
		{selName(backend.BlockCoupledTriOp.Select(b, tensor.Shape{Batch: 1000, Rows: 9, Cols: 4})), "cuda.cholng.blocks.coupled"},
		{selName(backend.BlockTriNorm2Op.Select(b, col)), "cuda.cholng.blocks.trinorm2"},
		{selName(backend.BlockLogAbsDiagOp.Select(b, tensor.Shape{Batch: 1000, Rows: 4, Cols: 4})), "cuda.cholng.blocks.logabsdiag"},
		{selName(backend.CholNGTriOp.Select(b, tensor.Shape{Batch: 1000, Rows: 4, Cols: 4})), "cuda.cholng.tri.blocks"},
		{selName(backend.LowerOuterOp.Select(b, tensor.Shape{Batch: 1000, Rows: 4, Cols: 4})), "cuda.cholng.lowerouter.blocks"},
		{selName(backend.BlockDrawOp.Select(b, col)), "cuda.cholng.blocks.draw"},
		{selName(backend.BlockNatGradOp.Select(b, col)), "cuda.cholng.blocks.natgrad"},
		{selName(backend.BlockNatGradOp.Select(b, tensor.Shape{Batch: 10, Rows: cngRMax + 1, Cols: 1})), "reference"},
		{selName(backend.BlockDrawOp.Select(b, tensor.Shape{Batch: 10, Rows: cngRMax + 1, Cols: 1})), "reference"},
		{selName(backend.BlockLowerOp.Select(b, tensor.Shape{Batch: 10, Rows: cngRMax + 1, Cols: 1})), "reference"},
		{selName(backend.CholNGTriOp.Select(b, tensor.Shape{Batch: 1, Rows: cngTriMax + 1, Cols: cngTriMax + 1})), "reference"},
	} {
		if c.got != c.want {
			t.Errorf("selected %s, want %s", c.got, c.want)
		}
	}

	const tol = 1e-12
	t.Run("one-launch-each", func(t *testing.T) {
		_, launched := cngCompare(t, b, 600, 3, 4, 600, tol)
		var ops []string
		for _, k := range launched {
			if len(k) > 7 && k[:7] == "cholng_" {
				ops = append(ops, k)
			}
		}
		want := []string{"cholng_lower", "cholng_upper", "cholng_lower", "cholng_upper", "cholng_rowscan",
			"cholng_trinorm2", "cholng_logabsdiag", "cholng_rowscan", "cholng_rowscan", "cholng_draw", "cholng_natgrad"}
		if !slices.Equal(ops, want) {
			t.Errorf("kernel launches %v, want %v", ops, want)
		}
		if len(ops) != len(launched) {
			t.Errorf("launches besides the cholng kernels: %v", launched)
		}
	})
	t.Run("rounds", func(t *testing.T) {
		defer func(v int) { cngMaxBlocks = v }(cngMaxBlocks)
		cngMaxBlocks = 3
		cngCompare(t, b, 2000, 3, 5, 2000, tol) // 8 blocks of items on a grid of 3: three rounds
		cngCompare(t, b, 700, 2, 2, 1, tol)     // m broadcast
	})
	t.Run("fallback", func(t *testing.T) {
		cngCompare(t, b, 5, cngRMax+1, 3, 5, tol)
		cngCompare(t, b, 3, 2, cngQMax+1, 3, tol)
		cngCompare(t, b, 2, cngTriMax+1, 2, 2, tol)
	})
}

func selName[F any](_ F, n string) string { return n }
