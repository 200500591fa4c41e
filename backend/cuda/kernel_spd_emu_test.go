package cuda

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/backend/cuda/internal/cu"
	"github.com/geovb/geovb/tensor"
)

func init() {
	emuKernels["spd.spd_retract"] = emuSPDRetract
	emuKernels["spd.spd_commit"] = emuSPDCommit
	emuKernels["spd.spd_transport"] = emuSPDTransport
	emuKernels["spd.spd_retract_finish"] = emuSPDRetractFinish
	emuKernels["spd.spd_info_flag"] = emuSPDInfoFlag
}

// emuSPDRetractFinish is spd_retract_finish (one thread per element, no element read after another's write).
func emuSPDRetractFinish(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	out, q, sigma, sbs, srs, xi, xbs, xrs := a.ptr(0), a.ptr(1), a.ptr(2), a.i64(3), a.i64(4), a.ptr(5), a.i64(6),
		a.i64(7)
	batch, n := a.i64(8), a.i64(9)
	for el := 0; el < batch*n*n; el++ {
		b, r := el/(n*n), el%(n*n)
		i, j := r/n, r%n
		u := (*e.f(q, b*n*n+i+j*n) + *e.f(sigma, b*sbs+i*srs+j)) + *e.f(xi, b*xbs+i*xrs+j)
		w := (*e.f(q, b*n*n+j+i*n) + *e.f(sigma, b*sbs+j*srs+i)) + *e.f(xi, b*xbs+j*xrs+i)
		*e.f(out, el) = 0.5 * (u + w)
	}
}

// emuSPDInfoFlag is spd_info_flag.
func emuSPDInfoFlag(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	info, count, flag, batch := a.ptr(0), a.i64(1), a.ptr(2), a.i64(3)
	for i := 0; i < count; i++ {
		if *e.i32(info + cu.DevPtr(4*i)) != 0 {
			*e.i32(flag) = max(*e.i32(flag), int32(batch-i))
		}
	}
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
			emuSPDLoad(e, L, ld, sigma, sbs, srs, m, n, n, 0)
			emuSPDLoad(e, Y, ld, xi, xbs, xrs, m, n, n, 0)
			if !emuSPDChol(L, ld, n, nt) {
				*e.i32(flag) = max(*e.i32(flag), int32(batch-m))
				continue
			}
			emuSPDSolveCols(L, ld, Y, ld, n, n, false, nt)
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

// emuSPDLoad is spd_load (every element is one thread's, so the order of the threads does not matter).
func emuSPDLoad(e *emuDev, D []float64, ld int, src cu.DevPtr, bs, rs, m, rows, cols int, shift float64) {
	for el := 0; el < rows*cols; el++ {
		i, j := el/cols, el%cols
		D[i*ld+j] = *e.f(src, m*bs+i*rs+j)
		if i == j {
			D[i*ld+j] += shift
		}
	}
}

// emuSPDSolveCols is spd_solve_cols: X ← L⁻¹X (L⁻ᵀX when tr), thread j its columns.
func emuSPDSolveCols(L []float64, ldl int, X []float64, ldx, n, cols int, tr bool, nt int) {
	for tid := 0; tid < nt; tid++ {
		for j := tid; j < cols; j += nt {
			for s := 0; s < n; s++ {
				i := s
				if tr {
					i = n - 1 - s
				}
				y := X[i*ldx+j]
				if tr {
					for k := i + 1; k < n; k++ {
						y -= L[k*ldl+i] * X[k*ldx+j]
					}
				} else {
					for k := 0; k < i; k++ {
						y -= L[i*ldl+k] * X[k*ldx+j]
					}
				}
				X[i*ldx+j] = y / L[i*ldl+i]
			}
		}
	}
}

// emuSPDSolveRows is spd_solve_rows: X ← X L⁻ᵀ (X L⁻¹ when tr), thread i its rows.
func emuSPDSolveRows(L []float64, ldl int, X []float64, ldx, rows, n int, tr bool, nt int) {
	for tid := 0; tid < nt; tid++ {
		for i := tid; i < rows; i += nt {
			for s := 0; s < n; s++ {
				j := s
				if tr {
					j = n - 1 - s
				}
				z := X[i*ldx+j]
				if tr {
					for k := j + 1; k < n; k++ {
						z -= L[k*ldl+j] * X[i*ldx+k]
					}
				} else {
					for k := 0; k < j; k++ {
						z -= L[j*ldl+k] * X[i*ldx+k]
					}
				}
				X[i*ldx+j] = z / L[j*ldl+j]
			}
		}
	}
}

// emuSPDSum is spd_sum over the partial sums of the block's threads.
func emuSPDSum(partial []float64) float64 { return emuGroupSum(partial) }

// emuSPDPair is spd_pair.
func emuSPDPair(k, s, nn int) (p, q int) {
	a := 0
	if k != 0 {
		a = 1 + (k-1+s)%(nn-1)
	}
	b := 1 + (nn-2-k+s)%(nn-1)
	return min(a, b), max(a, b)
}

// SPD_SWEEPS and SPD_JACOBI_TOL of kernels/spd.cu.
const (
	spdEmuSweeps    = 20
	spdEmuJacobiTol = 1e-30
)

// emuSPDJacobi is spd_jacobi: the angles, the row phase (rows of A, columns of V), the column phase, per step.
func emuSPDJacobi(A, V []float64, ld, n, nt int) {
	nn := n + n&1
	np := nn / 2
	rot := make([]float64, nn)
	off, dg := make([]float64, nt), make([]float64, nt)
	for sweep := 0; ; sweep++ {
		for tid := 0; tid < nt; tid++ {
			off[tid], dg[tid] = 0, 0
			for el := tid; el < n*n; el += nt {
				i, j := el/n, el%n
				a := A[i*ld+j]
				if i == j {
					dg[tid] += a * a
				} else {
					off[tid] += a * a
				}
			}
		}
		if emuSPDSum(off) <= spdEmuJacobiTol*emuSPDSum(dg) || sweep == spdEmuSweeps {
			return
		}
		for st := 0; st < nn-1; st++ {
			for k := 0; k < np; k++ {
				p, q := emuSPDPair(k, st, nn)
				c, sn := 1.0, 0.0
				if q < n && A[p*ld+q] != 0 {
					apq := A[p*ld+q]
					th := (A[q*ld+q] - A[p*ld+p]) / (2 * apq)
					var t float64
					if math.Abs(th) > 1e150 {
						t = 0.5 / th
					} else {
						sign := 1.0
						if !(th >= 0) {
							sign = -1
						}
						t = sign / (math.Abs(th) + math.Sqrt(th*th+1))
					}
					c = 1 / math.Sqrt(t*t+1)
					sn = t * c
				}
				rot[2*k], rot[2*k+1] = c, sn
			}
			for el := 0; el < np*n; el++ {
				k, j := el/n, el%n
				if p, q := emuSPDPair(k, st, nn); q < n {
					c, sn := rot[2*k], rot[2*k+1]
					ap, aq := A[p*ld+j], A[q*ld+j]
					A[p*ld+j], A[q*ld+j] = c*ap-sn*aq, sn*ap+c*aq
					vp, vq := V[j*ld+p], V[j*ld+q]
					V[j*ld+p], V[j*ld+q] = c*vp-sn*vq, sn*vp+c*vq
				}
			}
			for el := 0; el < np*n; el++ {
				k, i := el/n, el%n
				if p, q := emuSPDPair(k, st, nn); q < n {
					c, sn := rot[2*k], rot[2*k+1]
					ap, aq := A[i*ld+p], A[i*ld+q]
					A[i*ld+p], A[i*ld+q] = c*ap-sn*aq, sn*ap+c*aq
					if i == q {
						A[i*ld+p] = 0
					}
					if i == p {
						A[i*ld+q] = 0
					}
				}
			}
		}
	}
}

// emuSPDMul is spd_mul: C = A·op(B), A lower triangular when lower.
func emuSPDMul(C, A, B []float64, bt, lower bool, ld, n int) {
	for el := 0; el < n*n; el++ {
		i, j := el/n, el%n
		kn := n
		if lower {
			kn = i + 1
		}
		var s float64
		for k := 0; k < kn; k++ {
			if bt {
				s += A[i*ld+k] * B[j*ld+k]
			} else {
				s += A[i*ld+k] * B[k*ld+j]
			}
		}
		C[i*ld+j] = s
	}
}

// emuSPDTransport is spd_transport, phase by phase.
func emuSPDTransport(e *emuDev, grid, block [3]uint32, shmem uint32, a emuArgs) {
	out, s1, abs, ars, s2, bbs, brs := a.ptr(0), a.ptr(1), a.i64(2), a.i64(3), a.ptr(4), a.i64(5), a.i64(6)
	xi, xbs, xrs, flag, batch, n := a.ptr(7), a.i64(8), a.i64(9), a.ptr(10), a.i64(11), a.i64(12)
	nt := int(block[0])
	if nt > spdMaxThreads || nt%32 != 0 {
		e.t.Fatalf("spd_transport: block of %d threads", nt)
	}
	ld := n | 1
	if int(shmem) < 8*(3*n*ld+n+n&1) {
		e.t.Fatalf("spd_transport: %d bytes of shared memory for n = %d", shmem, n)
	}
	for bx := 0; bx < int(grid[0]); bx++ {
		smem := make([]float64, shmem/8)
		for i := range smem {
			smem[i] = math.NaN()
		}
		A, V, P := smem[:n*ld], smem[n*ld:2*n*ld], smem[2*n*ld:3*n*ld]
		for m := bx; m < batch; m += int(grid[0]) {
			om := m * n * n
			emuSPDLoad(e, V, ld, s1, abs, ars, m, n, n, 0)
			emuSPDLoad(e, A, ld, s2, bbs, brs, m, n, n, 0)
			emuSPDLoad(e, P, ld, xi, xbs, xrs, m, n, n, 0)
			if !emuSPDChol(V, ld, n, nt) {
				*e.i32(flag) = max(*e.i32(flag), int32(batch-m))
				continue
			}
			for el := 0; el < n*n; el++ {
				i, j := el/n, el%n
				*e.f(out, om+el) = 0
				if j <= i {
					*e.f(out, om+el) = V[i*ld+j]
				}
			}
			emuSPDSolveCols(V, ld, A, ld, n, n, false, nt)
			emuSPDSolveCols(V, ld, P, ld, n, n, false, nt)
			emuSPDSolveRows(V, ld, A, ld, n, n, false, nt)
			emuSPDSolveRows(V, ld, P, ld, n, n, false, nt)
			for el := 0; el < n*n; el++ {
				i, j := el/n, el%n
				if i > j {
					v := 0.5 * (A[i*ld+j] + A[j*ld+i])
					A[i*ld+j], A[j*ld+i] = v, v
				}
				V[i*ld+j] = 0
				if i == j {
					V[i*ld+j] = 1
				}
			}
			emuSPDJacobi(A, V, ld, n, nt)
			ok := true
			for j := 0; j < n; j++ {
				nu := A[j*ld+j]
				ok = ok && nu > 0 && !math.IsInf(nu, 0)
			}
			if !ok {
				*e.i32(flag + 4) = max(*e.i32(flag + 4), int32(batch-m))
				continue
			}
			for el := 0; el < n*n; el++ {
				i, j := el/n, el%n
				V[i*ld+j] *= math.Sqrt(math.Sqrt(A[j*ld+j]))
			}
			emuSPDMul(A, V, V, true, false, ld, n)
			emuSPDMul(V, A, P, false, false, ld, n)
			emuSPDMul(P, V, A, false, false, ld, n)
			emuSPDLoad(e, A, ld, out+cu.DevPtr(8*om), 0, n, 0, n, n, 0)
			emuSPDMul(V, A, P, false, true, ld, n)
			for el := 0; el < n*n; el++ {
				i, j := el/n, el%n
				var x, y float64
				for k := 0; k <= j; k++ {
					x += V[i*ld+k] * A[j*ld+k]
				}
				for k := 0; k <= i; k++ {
					y += V[j*ld+k] * A[i*ld+k]
				}
				*e.f(out, om+el) = 0.5 * (x + y)
			}
		}
	}
}

// emuSPDCommit is spd_commit.
func emuSPDCommit(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
	dst, dbs, drs, src, flag := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3), a.ptr(4)
	batch, rows, cols := a.i64(5), a.i64(6), a.i64(7)
	if *e.i32(flag) != 0 || *e.i32(flag + 4) != 0 {
		return
	}
	step := int(grid[0]) * int(block[0])
	rc := rows * cols
	for bx := 0; bx < int(grid[0]); bx++ {
		for tx := 0; tx < int(block[0]); tx++ {
			for el := bx*int(block[0]) + tx; el < batch*rc; el += step {
				b, r := el/rc, el%rc
				*e.f(dst, b*dbs+(r/cols)*drs+r%cols) = *e.f(src, el)
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
// compares with the reference on the CPU backend (1e-12 of the largest element); it checks that the kernel covers
// n ≤ 62 and leaves n = 63 to the batched-library path (spdEmuBatchedRetract), and that a Σ that is not SPD names
// its batch item and leaves dst untouched.
func TestEmuSPDRetract(t *testing.T) {
	cb, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, sh := range []struct{ batch, n, sigmaBatch int }{{3, 1, 3}, {4, 8, 1}, {2, 9, 2}, {5, 17, 5}, {2, 32, 2},
		{3, 33, 1}, {1, 62, 1}} {
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
			st, err := spdRetractRun(e, dv, sv, xv)
			if err != nil || st != (spdStatus{-1, -1}) {
				t.Fatalf("status %v, err = %v", st, err)
			}
			e.get(got, dv)
			samePadding(t, "dst", got, gotRef)
			spdEmuCompare(t, got, want, 1e-12)
		})
	}
	spdEmuBatchedRetract(t, r)
	for n, want := range map[int]bool{1: true, 32: true, 33: true, 62: true, 63: false} {
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
	spdEmuUntouched(t, e, 4, 5, 5, spdStatus{1, -1}, func(dv hotView) (spdStatus, error) {
		return spdRetractRun(e, dv, sv, xv)
	})

	// Through the backend: the kernel is selected and the error is the operation's.
	b := newEmuBackend(t)
	if _, name := backend.SPDRetractOp.Select(b, tensor.Shape{Batch: 2, Rows: 40, Cols: 40}); name != "cuda.spd.retract.block" {
		t.Errorf("selected %s", name)
	}
	put := spdEmuPut(t, b)
	sd, xd, out := put(sigma), put(xi), put(xi)
	spdEmuWantNPD(t, backend.SPDRetract(b, out, sd, xd), "sigma", 1)
}

// spdEmuCompare fails t when got differs from want by more than tol times want's largest element.
func spdEmuCompare(t *testing.T, got, want *tensor.Tensor, tol float64) {
	t.Helper()
	var scale float64
	for b := 0; b < want.Batch(); b++ {
		for i := 0; i < want.Rows(); i++ {
			for j := 0; j < want.Cols(); j++ {
				scale = max(scale, math.Abs(want.At(b, i, j)))
			}
		}
	}
	if d := maxRelDiff(got, want, scale); d > tol {
		t.Errorf("max difference %.3g of the largest element from the reference (tol %.1g)", d, tol)
	}
}

// spdEmuPut returns a function that puts a host tensor on b.
func spdEmuPut(t *testing.T, b *Backend) func(x *tensor.Tensor) *tensor.Tensor {
	return func(x *tensor.Tensor) *tensor.Tensor {
		d, err := b.Alloc(x.Shape())
		if err == nil {
			err = b.Upload(d, x)
		}
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
}

// TestEmuSPDTransport runs the transport kernel, emulated thread by thread, with S₁ and S₂ per matrix and
// broadcast, at the orders around the block-size steps and the shared-memory limit (n ≤ 51 taken, 52 left to the
// reference), and compares with the reference on the CPU backend (1e-11 of the largest element, cond(S) = 100);
// an S₁ or S₂ that is not SPD names its operand and batch item, S₁'s failure first, and leaves dst untouched.
func TestEmuSPDTransport(t *testing.T) {
	cb, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, sh := range []struct{ batch, n, sBatch int }{{3, 1, 3}, {2, 2, 1}, {4, 7, 4}, {3, 16, 1}, {2, 32, 2},
		{2, 33, 2}, {1, 51, 1}} {
		t.Run(fmt.Sprintf("%dx%d/s-batch=%d", sh.batch, sh.n, sh.sBatch), func(t *testing.T) {
			s1, _ := spdEmuInput(r, sh.sBatch, sh.n, 100)
			s2, xi := spdEmuInput(r, sh.batch, sh.n, 100)
			want := stridedHost(sh.batch, sh.n, sh.n, 0, 0, func(_, _, _ int) float64 { return 0 })
			if err := backend.SPDTransportOp.Reference()(cb, want, s1, s2, xi); err != nil {
				t.Fatal(err)
			}
			e := newEmuDev(t, 1<<18)
			av, bv, xv := e.put(s1), e.put(s2), e.put(xi)
			if sh.sBatch == 1 {
				av.bs = 0
			}
			got := stridedHost(sh.batch, sh.n, sh.n, 1, 2, func(_, _, _ int) float64 { return math.NaN() })
			gotRef := cloneHost(got)
			dv := e.put(got)
			st, err := spdTransportRun(e, dv, av, bv, xv)
			if err != nil || st != (spdStatus{-1, -1}) {
				t.Fatalf("status %v, err = %v", st, err)
			}
			e.get(got, dv)
			samePadding(t, "dst", got, gotRef)
			spdEmuCompare(t, got, want, 1e-11)
		})
	}
	for n, want := range map[int]bool{1: true, 32: true, 33: true, 51: true, 52: false} {
		if got := spdTransportBytes(n) <= spdMaxBytes; got != want {
			t.Errorf("n = %d: kernel applies %v, want %v", n, got, want)
		}
	}

	// S₂ of item 0 and S₁ of item 2 indefinite: S₁'s failure is reported, then (S₁ repaired) S₂'s.
	s1, xi := spdEmuInput(r, 3, 4, 10)
	s2, _ := spdEmuInput(r, 3, 4, 10)
	good := cloneHost(s1)
	s1.Set(2, 1, 1, -2)
	s2.Set(0, 3, 3, -4)
	for _, c := range []struct {
		s1   *tensor.Tensor
		want spdStatus
	}{{s1, spdStatus{2, 0}}, {good, spdStatus{-1, 0}}} {
		e := newEmuDev(t, 1<<16)
		av, bv, xv := e.put(c.s1), e.put(s2), e.put(xi)
		spdEmuUntouched(t, e, 3, 4, 4, c.want, func(dv hotView) (spdStatus, error) {
			return spdTransportRun(e, dv, av, bv, xv)
		})
	}
	b := newEmuBackend(t)
	if _, name := backend.SPDTransportOp.Select(b, tensor.Shape{Batch: 2, Rows: 40, Cols: 40}); name != "cuda.spd.transport.block" {
		t.Errorf("selected %s", name)
	}
	put := spdEmuPut(t, b)
	d1, d2, dx, out := put(good), put(s2), put(xi), put(xi)
	spdEmuWantNPD(t, backend.SPDTransport(b, out, d1, d2, dx), "s2", 0)
}

// spdEmuUntouched runs run on a fresh batch × rows × cols destination holding a pattern and checks that it returns
// status want and leaves the destination as it was.
func spdEmuUntouched(t *testing.T, e *emuDev, batch, rows, cols int, want spdStatus,
	run func(dv hotView) (spdStatus, error)) {
	t.Helper()
	dst := stridedHost(batch, rows, cols, 1, 1, func(b, i, j int) float64 { return float64(b - i + j) })
	before := cloneHost(dst)
	dv := e.put(dst)
	st, err := run(dv)
	if err != nil || st != want {
		t.Fatalf("not SPD: status %v, err = %v; want %v", st, err, want)
	}
	e.get(dst, dv)
	if !sameBits(dst, before) {
		t.Error("dst written although an operand was not SPD")
	}
}

// spdEmuWantNPD checks that err wraps ErrNotPositiveDefinite and names operand and batch item.
func spdEmuWantNPD(t *testing.T, err error, operand string, batch int) {
	t.Helper()
	var oe *backend.OpError
	if !errors.Is(err, backend.ErrNotPositiveDefinite) || !errors.As(err, &oe) || oe.Batch != batch || oe.Operand != operand {
		t.Errorf("error %v, want ErrNotPositiveDefinite for %s, batch %d", err, operand, batch)
	}
}

// spdEmuBatchedRetract runs the batched-library retraction through the emulated backend, with Σ per item and
// broadcast, dst apart, dst = ξ and ξ broadcast from dst's first item, and compares with the reference on the CPU
// backend (1e-12 of the largest element); a Σ that is not SPD names its item and leaves dst untouched.
func spdEmuBatchedRetract(t *testing.T, r *rand.Rand) {
	t.Helper()
	cb, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	b := newEmuBackend(t)
	put := spdEmuPut(t, b)
	run := backend.SPDRetractOp.Kernels(b, tensor.Shape{Batch: 3, Rows: 64, Cols: 64})
	if len(run) != 1 || run[0].Name != "cuda.spd.retract.batched" {
		t.Fatalf("kernels for order 64: %v", run)
	}
	for _, c := range []struct {
		sb    int
		alias string
	}{{3, ""}, {1, ""}, {3, "xi"}, {1, "xi0"}} {
		sigma, _ := spdEmuInput(r, c.sb, 64, 100)
		_, xi := spdEmuInput(r, 3, 64, 1)
		sd, xd := put(sigma), put(xi)
		dst := put(xi)
		xarg, xref := xd, xi
		switch c.alias {
		case "xi":
			dst = xd
		case "xi0":
			xarg, xref, dst = xd.Item(0), xi.Item(0), xd
		}
		want := tensor.NewHost(3, 64, 64)
		if err := backend.SPDRetractOp.Reference()(cb, want, sigma, xref); err != nil {
			t.Fatal(err)
		}
		if err := run[0].Fn(b, dst, sd, xarg); err != nil {
			t.Fatalf("Σ batch %d, alias %q: %v", c.sb, c.alias, err)
		}
		got := tensor.NewHost(3, 64, 64)
		if err := b.Download(got, dst); err != nil {
			t.Fatal(err)
		}
		spdEmuCompare(t, got, want, 1e-12)
	}
	sigma, xi := spdEmuInput(r, 3, 64, 10)
	sigma.Set(2, 40, 40, -3)
	sd, xd := put(sigma), put(xi)
	dst := put(xi)
	spdEmuWantNPD(t, run[0].Fn(b, dst, sd, xd), "sigma", 2)
	got := tensor.NewHost(3, 64, 64)
	if err := b.Download(got, dst); err != nil {
		t.Fatal(err)
	}
	if d := maxRelDiff(got, xi, 1); d != 0 {
		t.Errorf("dst written although a Σ was not SPD (changed by %.3g)", d)
	}
}
