package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/tensor"
)

func init() {
	emuKernels["spd.kron_solve"] = emuKronSolve
}

// emuKronSolve is kron_solve, phase by phase (the helpers are those of the SPD kernels).
func emuKronSolve(e *emuDev, grid, block [3]uint32, shmem uint32, a emuArgs) {
	out, av, abs, ars, bv, bbs, brs := a.ptr(0), a.ptr(1), a.i64(2), a.i64(3), a.ptr(4), a.i64(5), a.i64(6)
	g, gbs, grs, damping, flag, batch, m, n := a.ptr(7), a.i64(8), a.i64(9), a.f64(10), a.ptr(11), a.i64(12),
		a.i64(13), a.i64(14)
	nt := int(block[0])
	if nt > spdMaxThreads || nt%32 != 0 {
		e.t.Fatalf("kron_solve: block of %d threads", nt)
	}
	ldn, ldm := n|1, m|1
	if int(shmem) < kronBytes(m, n) {
		e.t.Fatalf("kron_solve: %d bytes of shared memory for %d×%d", shmem, m, n)
	}
	for bx := 0; bx < int(grid[0]); bx++ {
		smem := make([]float64, shmem/8)
		for i := range smem {
			smem[i] = math.NaN()
		}
		A, B, G := smem[:n*ldn], smem[n*ldn:n*ldn+m*ldm], smem[n*ldn+m*ldm:]
		for it := bx; it < batch; it += int(grid[0]) {
			emuSPDLoad(e, A, ldn, av, abs, ars, it, n, n, damping)
			emuSPDLoad(e, B, ldm, bv, bbs, brs, it, m, m, damping)
			emuSPDLoad(e, G, ldn, g, gbs, grs, it, m, n, 0)
			if !emuSPDChol(A, ldn, n, nt) {
				*e.i32(flag) = max(*e.i32(flag), int32(batch-it))
				continue
			}
			if !emuSPDChol(B, ldm, m, nt) {
				*e.i32(flag + 4) = max(*e.i32(flag + 4), int32(batch-it))
				continue
			}
			emuSPDSolveCols(B, ldm, G, ldn, m, n, false, nt)
			emuSPDSolveCols(B, ldm, G, ldn, m, n, true, nt)
			emuSPDSolveRows(A, ldn, G, ldn, m, n, false, nt)
			emuSPDSolveRows(A, ldn, G, ldn, m, n, true, nt)
			for el := 0; el < m*n; el++ {
				*e.f(out, it*m*n+el) = G[(el/n)*ldn+el%n]
			}
		}
	}
}

// TestEmuKronSolve runs the K-FAC solve kernels (the block kernel emulated thread by thread; the factored path's
// cuBLAS/cuSOLVER calls and core kernels emulated, with dst apart and dst = G), with the factors per item and
// broadcast, square and rectangular G, with and without damping, at the block-size steps and near the shared-memory limit,
// and compares with the reference on the CPU backend (1e-12 of the largest element); it checks which shapes the
// block kernel takes, and that a factor that is not SPD after damping names its operand and item, A's first, with
// dst untouched, on both paths.
func TestEmuKronSolve(t *testing.T) {
	cb, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct {
		batch, m, n, fBatch int
		damping             float64
	}{{1, 1, 1, 1, 0}, {3, 4, 6, 3, 1e-3}, {5, 10, 10, 1, 0.1}, {2, 33, 9, 2, 1e-3}, {2, 7, 40, 1, 0}, {1, 40, 40, 1, 1e-2}} {
		t.Run(fmt.Sprintf("%dx%dx%d/factor-batch=%d/damping=%g", c.batch, c.m, c.n, c.fBatch, c.damping), func(t *testing.T) {
			a, bm, g, want := kronEmuCase(t, cb, r, c.batch, c.m, c.n, c.fBatch, c.damping)
			e := newEmuDev(t, 1<<18)
			av, bv, gv := e.put(a), e.put(bm), e.put(g)
			if c.fBatch == 1 {
				av.bs, bv.bs = 0, 0
			}
			got := stridedHost(c.batch, c.m, c.n, 1, 2, func(_, _, _ int) float64 { return math.NaN() })
			gotRef := cloneHost(got)
			dv := e.put(got)
			st, err := kronSolveRun(e, dv, av, bv, gv, c.damping)
			if err != nil || st != (spdStatus{-1, -1}) {
				t.Fatalf("status %v, err = %v", st, err)
			}
			e.get(got, dv)
			samePadding(t, "dst", got, gotRef)
			spdEmuCompare(t, got, want, 1e-12)
		})
	}
	for _, c := range []struct {
		batch, m, n, fBatch int
		damping             float64
	}{{1, 1, 1, 1, 0}, {3, 4, 6, 3, 1e-3}, {2, 33, 9, 1, 0}, {2, 60, 70, 2, 1e-2}} {
		t.Run(fmt.Sprintf("factored/%dx%dx%d/factor-batch=%d/damping=%g", c.batch, c.m, c.n, c.fBatch, c.damping), func(t *testing.T) {
			a, bm, g, want := kronEmuCase(t, cb, r, c.batch, c.m, c.n, c.fBatch, c.damping)
			for _, inPlace := range []bool{false, true} {
				e := newEmuDev(t, 1<<18)
				av, bv, gv := e.put(a), e.put(bm), e.put(cloneHost(g))
				if c.fBatch == 1 {
					av.bs, bv.bs = 0, 0
				}
				got := stridedHost(c.batch, c.m, c.n, 1, 2, func(_, _, _ int) float64 { return math.NaN() })
				dv := gv
				if !inPlace {
					dv = e.put(got)
				}
				st, err := kronFactoredRun(e, dv, av, bv, gv, c.damping)
				if err != nil || st != (spdStatus{-1, -1}) {
					t.Fatalf("status %v, err = %v", st, err)
				}
				if inPlace {
					got = cloneHost(g)
				}
				e.get(got, dv)
				spdEmuCompare(t, got, want, 1e-12)
			}
		})
	}
	for _, c := range []struct {
		m, n int
		want bool
	}{{1, 1, true}, {32, 32, true}, {40, 40, true}, {51, 51, true}, {52, 52, false}, {16, 32, true}, {64, 128, false}} {
		if got := kronBytes(c.m, c.n) <= spdMaxBytes; got != c.want {
			t.Errorf("%d×%d: kernel applies %v, want %v", c.m, c.n, got, c.want)
		}
	}

	// B of item 0 and A of item 2 indefinite: A's failure is reported, then (A repaired) B's; dst untouched.
	a, _ := spdEmuInput(r, 3, 4, 10)
	bm, _ := spdEmuInput(r, 3, 5, 10)
	g := stridedHost(3, 5, 4, 0, 0, func(_, _, _ int) float64 { return r.NormFloat64() })
	good := cloneHost(a)
	a.Set(2, 1, 1, -2)
	bm.Set(0, 3, 3, -4)
	for _, c := range []struct {
		a    *tensor.Tensor
		want spdStatus
	}{{a, spdStatus{2, 0}}, {good, spdStatus{-1, 0}}} {
		e := newEmuDev(t, 1<<16)
		av, bv, gv := e.put(c.a), e.put(bm), e.put(g)
		spdEmuUntouched(t, e, 3, 5, 4, c.want, func(dv hotView) (spdStatus, error) {
			return kronSolveRun(e, dv, av, bv, gv, 1e-3)
		})
		spdEmuUntouched(t, e, 3, 5, 4, c.want, func(dv hotView) (spdStatus, error) {
			return kronFactoredRun(e, dv, av, bv, gv, 1e-3)
		})
	}
	b := newEmuBackend(t)
	if _, name := backend.KronSolveOp.Select(b, tensor.Shape{Batch: 2, Rows: 16, Cols: 32}); name != "cuda.kron.solve.block" {
		t.Errorf("selected %s", name)
	}
	put := spdEmuPut(t, b)
	da, db, dg, out := put(good), put(bm), put(g), put(g)
	spdEmuWantNPD(t, backend.KronSolve(b, out, da, db, dg, 1e-3), "b", 0)
}

// kronEmuCase returns factors A (n×n) and B (m×m) with fBatch items (cond 100), a strided G (batch × m × n) and the
// reference's solve on the CPU backend.
func kronEmuCase(t *testing.T, cb *cpu.Backend, r *rand.Rand, batch, m, n, fBatch int,
	damping float64) (a, bm, g, want *tensor.Tensor) {
	t.Helper()
	a, _ = spdEmuInput(r, fBatch, n, 100)
	bm, _ = spdEmuInput(r, fBatch, m, 100)
	g = stridedHost(batch, m, n, 2, 1, func(_, _, _ int) float64 { return r.NormFloat64() })
	want = stridedHost(batch, m, n, 0, 0, func(_, _, _ int) float64 { return 0 })
	if err := backend.KronSolveOp.Reference()(cb, want, a, bm, g, damping); err != nil {
		t.Fatal(err)
	}
	return a, bm, g, want
}
