package cuda

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/tensor"
)

func init() {
	emuKernels["spd.spd_retract"] = emuSPDRetract
	emuKernels["spd.spd_commit"] = emuSPDCommit
}

// emuSPDRetract is spd_retract: each "for tid" loop is the code between two barriers of the block; the threads of
// one phase write disjoint elements and read none that the phase writes.
func emuSPDRetract(e *emuDev, grid, block [3]uint32, shmem uint32, a emuArgs) {
	out, sigma, sbs, srs, xi, xbs, xrs := a.ptr(0), a.ptr(1), a.i64(2), a.i64(3), a.ptr(4), a.i64(5), a.i64(6)
	flag, batch, n := a.ptr(7), a.i64(8), a.i64(9)
	nt := int(block[0])
	if nt > spdMaxThreads || nt%32 != 0 {
		e.t.Fatalf("spd_retract: block of %d threads", nt)
	}
	ld := n | 1
	if int(shmem) < 8*2*n*ld {
		e.t.Fatalf("spd_retract: %d bytes of shared memory for n = %d", shmem, n)
	}
	for bx := 0; bx < int(grid[0]); bx++ {
		smem := make([]float64, shmem/8)
		for i := range smem {
			smem[i] = math.NaN()
		}
		L, Y := smem[:n*ld], smem[n*ld:2*n*ld]
		for m := bx; m < batch; m += int(grid[0]) {
			sm := func(i, j int) float64 { return *e.f(sigma, m*sbs+i*srs+j) }
			xm := func(i, j int) float64 { return *e.f(xi, m*xbs+i*xrs+j) }
			for tid := 0; tid < nt; tid++ {
				for el := tid; el < n*n; el += nt {
					i, j := el/n, el%n
					L[i*ld+j], Y[i*ld+j] = sm(i, j), xm(i, j)
				}
			}
			if !emuSPDChol(L, ld, n, nt) {
				*e.i32(flag) = max(*e.i32(flag), int32(batch-m))
				continue
			}
			for tid := 0; tid < nt; tid++ {
				for j := tid; j < n; j += nt {
					for i := 0; i < n; i++ {
						y := Y[i*ld+j]
						for k := 0; k < i; k++ {
							y -= L[i*ld+k] * Y[k*ld+j]
						}
						Y[i*ld+j] = y / L[i*ld+i]
					}
				}
			}
			for tid := 0; tid < nt; tid++ {
				for el := tid; el < n*n; el += nt {
					i, j := el/n, el%n
					var q float64
					for k := 0; k < n; k++ {
						q += Y[k*ld+i] * Y[k*ld+j]
					}
					q *= 0.5
					u := (q + sm(i, j)) + xm(i, j)
					w := (q + sm(j, i)) + xm(j, i)
					*e.f(out, m*n*n+el) = 0.5 * (u + w)
				}
			}
		}
	}
}

// emuSPDChol is the in-place right-looking Cholesky factorisation of spd_retract (row-major L, leading dimension
// ld) by a block of nt threads; false when a pivot is not a finite positive number.
func emuSPDChol(L []float64, ld, n, nt int) bool {
	for k := 0; k < n; k++ {
		d := L[k*ld+k]
		if !(d > 0) || math.IsInf(d, 0) {
			return false
		}
		s := math.Sqrt(d)
		for tid := 0; tid < nt; tid++ {
			for i := k + tid; i < n; i += nt {
				if i == k {
					L[i*ld+k] = s
				} else {
					L[i*ld+k] /= s
				}
			}
		}
		r := n - k - 1
		for tid := 0; tid < nt; tid++ {
			for el := tid; el < r*r; el += nt {
				i, j := k+1+el/r, k+1+el%r
				if j <= i {
					L[i*ld+j] -= L[i*ld+k] * L[j*ld+k]
				}
			}
		}
	}
	return true
}

// emuSPDCommit is spd_commit.
func emuSPDCommit(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
	dst, dbs, drs, src, flag, batch, n := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3), a.ptr(4), a.i64(5), a.i64(6)
	if *e.i32(flag) != 0 {
		return
	}
	step := int(grid[0]) * int(block[0])
	for bx := 0; bx < int(grid[0]); bx++ {
		for tx := 0; tx < int(block[0]); tx++ {
			for el := bx*int(block[0]) + tx; el < batch*n*n; el += step {
				b, r := el/(n*n), el%(n*n)
				*e.f(dst, b*dbs+(r/n)*drs+r%n) = *e.f(src, el)
			}
		}
	}
}

// spdEmuInput returns batch SPD matrices Q diag(λ) Qᵀ (λ from 1 to cond) and symmetric ξ, on strided host views.
func spdEmuInput(r *rand.Rand, batch, n int, cond float64) (sigma, xi *tensor.Tensor) {
	sigma = stridedHost(batch, n, n, 1, 1, func(_, _, _ int) float64 { return 0 })
	xi = stridedHost(batch, n, n, 2, 3, func(_, _, _ int) float64 { return 0 })
	for b := 0; b < batch; b++ {
		q := make([]float64, n*n)
		for i := range q {
			q[i] = r.NormFloat64()
		}
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				var s float64
				for k := 0; k < n; k++ {
					lam := math.Pow(cond, -float64(k)/float64(max(n-1, 1)))
					s += q[i*n+k] * lam * q[j*n+k] / float64(n)
				}
				if i == j {
					s += 1e-3
				}
				x := r.NormFloat64()
				sigma.Set(b, i, j, s)
				sigma.Set(b, j, i, s)
				xi.Set(b, i, j, x)
				xi.Set(b, j, i, x)
			}
		}
	}
	return sigma, xi
}

// TestEmuSPDRetract runs the retraction kernel, emulated thread by thread, on strided views with Σ per matrix and
// broadcast, at the orders around the block-size steps and the shared-memory limit, over grid-stride rounds, and
// compares with the reference on the CPU backend (1e-12 of the largest element); it checks that the kernel covers n ≤ 61 and
// leaves n = 62 to the reference, and that a Σ that is not SPD names its batch item and leaves dst untouched.
func TestEmuSPDRetract(t *testing.T) {
	cb, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, sh := range []struct{ batch, n, sigmaBatch int }{{3, 1, 3}, {4, 8, 1}, {2, 9, 2}, {5, 17, 5}, {2, 32, 2},
		{3, 33, 1}, {1, 61, 1}} {
		t.Run(fmt.Sprintf("%dx%d/sigma-batch=%d", sh.batch, sh.n, sh.sigmaBatch), func(t *testing.T) {
			sigma, _ := spdEmuInput(r, sh.sigmaBatch, sh.n, 100)
			_, xi := spdEmuInput(r, sh.batch, sh.n, 1)
			want := stridedHost(sh.batch, sh.n, sh.n, 0, 0, func(_, _, _ int) float64 { return 0 })
			if err := backend.SPDRetractOp.Reference()(cb, want, sigma, xi); err != nil {
				t.Fatal(err)
			}
			e := newEmuDev(t, 1<<18)
			sv, xv := e.put(sigma), e.put(xi)
			if sh.sigmaBatch == 1 {
				sv.bs = 0
			}
			got := stridedHost(sh.batch, sh.n, sh.n, 1, 2, func(_, _, _ int) float64 { return math.NaN() })
			gotRef := cloneHost(got)
			dv := e.put(got)
			bad, err := spdRetractRun(e, dv, sv, xv)
			if err != nil || bad != -1 {
				t.Fatalf("bad = %d, err = %v", bad, err)
			}
			e.get(got, dv)
			samePadding(t, "dst", got, gotRef)
			var scale float64
			for b := 0; b < sh.batch; b++ {
				for i := 0; i < sh.n; i++ {
					for j := 0; j < sh.n; j++ {
						scale = max(scale, math.Abs(want.At(b, i, j)))
					}
				}
			}
			if d := maxRelDiff(got, want, scale); d > 1e-12 {
				t.Errorf("max difference %.3g of the largest element from the reference", d)
			}
		})
	}
	for n, want := range map[int]bool{1: true, 32: true, 33: true, 61: true, 62: false} {
		if got := spdRetractBytes(n) <= spdMaxBytes; got != want {
			t.Errorf("n = %d: kernel applies %v, want %v", n, got, want)
		}
	}

	// Σ of items 1 and 3 indefinite: the status names item 1 and dst keeps its contents.
	sigma, xi := spdEmuInput(r, 4, 5, 10)
	for _, b := range []int{1, 3} {
		sigma.Set(b, 2, 2, -1)
	}
	e := newEmuDev(t, 1<<16)
	sv, xv := e.put(sigma), e.put(xi)
	dst := stridedHost(4, 5, 5, 1, 1, func(b, i, j int) float64 { return float64(b + i + j) })
	dv := e.put(dst)
	bad, err := spdRetractRun(e, dv, sv, xv)
	if err != nil || bad != 1 {
		t.Fatalf("not SPD: bad = %d, err = %v; want item 1", bad, err)
	}
	before := cloneHost(dst)
	e.get(dst, dv)
	if !sameBits(dst, before) {
		t.Error("dst written although a Σ was not SPD")
	}

	// Through the backend: the kernel is selected and the error is the operation's.
	b := newEmuBackend(t)
	if _, name := backend.SPDRetractOp.Select(b, tensor.Shape{Batch: 2, Rows: 40, Cols: 40}); name != "cuda.spd.retract.block" {
		t.Errorf("selected %s", name)
	}
	put := func(x *tensor.Tensor) *tensor.Tensor {
		d, err := b.Alloc(x.Shape())
		if err == nil {
			err = b.Upload(d, x)
		}
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	sd, xd, out := put(sigma), put(xi), put(xi)
	err = backend.SPDRetract(b, out, sd, xd)
	var oe *backend.OpError
	if !errors.Is(err, backend.ErrNotPositiveDefinite) || !errors.As(err, &oe) || oe.Batch != 1 || oe.Operand != "sigma" {
		t.Errorf("error %v, want ErrNotPositiveDefinite for sigma, batch 1", err)
	}
}
