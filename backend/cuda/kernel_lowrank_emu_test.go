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
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

func init() {
	emuKernels["lowrank.lr_scale_rows"] = emuLRScaleRows
	emuKernels["lowrank.lr_solve_epilogue"] = emuLRSolveEpilogue
	emuKernels["lowrank.lr_sample_epilogue"] = emuLRSampleEpilogue
	emuKernels["lowrank.lr_em_pass1"] = emuLREMPass1
	emuKernels["lowrank.lr_em_floor"] = emuLREMFloor
	emuKernels["lowrank.lr_em_prep"] = emuLREMPrep
	emuKernels["lowrank.lr_em_prep2"] = emuLREMPrep2
	emuKernels["lowrank.lr_em_check"] = emuLREMCheck
	emuKernels["lowrank.lr_em_epilogue"] = emuLREMEpilogue
	emuKernels["lowrank.lr_cap_scale"] = emuLRCapScale
	emuKernels["lowrank.lr_cap_init"] = emuLRCapInit
	emuKernels["lowrank.lr_cap_out"] = emuLRCapOut
}

// emuThreads calls f(e, step) for every global thread of a grid-stride kernel: e its first item, step the stride.
func emuThreads(grid, block [3]uint32, f func(first, step int)) {
	step := int(grid[0]) * int(block[0])
	for bx := 0; bx < int(grid[0]); bx++ {
		for tx := 0; tx < int(block[0]); tx++ {
			f(bx*int(block[0])+tx, step)
		}
	}
}

// emuLRScaleRows is lr_scale_rows.
func emuLRScaleRows(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
	out, ors, in, irs, psi, pinc, rows, k := a.ptr(0), a.i64(1), a.ptr(2), a.i64(3), a.ptr(4), a.i64(5), a.i64(6), a.i64(7)
	emuThreads(grid, block, func(first, step int) {
		for el := first; el < rows*k; el += step {
			i := el / k
			c := el - i*k
			f := 1 / *e.f(psi, i*pinc)
			*e.f(out, i*ors+c) = *e.f(in, i*irs+c) * f
		}
	})
}

// emuLRCapScale is lr_cap_scale.
func emuLRCapScale(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
	s, w, wrs, psi, pinc, rows, p := a.ptr(0), a.ptr(1), a.i64(2), a.ptr(3), a.i64(4), a.i64(5), a.i64(6)
	emuThreads(grid, block, func(first, step int) {
		for el := first; el < rows*p; el += step {
			i := el / p
			f := 1 / math.Sqrt(*e.f(psi, i*pinc))
			*e.f(s, el) = *e.f(w, i*wrs+el-i*p) * f
		}
	})
}

// emuLRCapInit is lr_cap_init.
func emuLRCapInit(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
	g, p := a.ptr(0), a.i64(1)
	emuThreads(grid, block, func(first, step int) {
		for el := first; el < p*p; el += step {
			*e.f(g, el) = 0
			if el%(p+1) == 0 {
				*e.f(g, el) = 1
			}
		}
	})
}

// emuLRCapOut is lr_cap_out.
func emuLRCapOut(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
	l, lrs, g, p, status := a.ptr(0), a.i64(1), a.ptr(2), a.i64(3), a.ptr(4)
	if *e.i32(status) != 0 {
		return
	}
	emuThreads(grid, block, func(first, step int) {
		for el := first; el < p*p; el += step {
			i, j := el/p, el%p
			*e.f(l, i*lrs+j) = 0
			if j <= i {
				*e.f(l, i*lrs+j) = *e.f(g, i+j*p)
			}
		}
	})
}

// emuLRSolveEpilogue is lr_solve_epilogue.
func emuLRSolveEpilogue(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
	dst, drs, g, grs, s, srs := a.ptr(0), a.i64(1), a.ptr(2), a.i64(3), a.ptr(4), a.i64(5)
	psi, pinc, rows, k := a.ptr(6), a.i64(7), a.i64(8), a.i64(9)
	emuThreads(grid, block, func(first, step int) {
		for el := first; el < rows*k; el += step {
			i := el / k
			c := el - i*k
			f := 1 / *e.f(psi, i*pinc)
			*e.f(dst, i*drs+c) = (*e.f(g, i*grs+c) - *e.f(s, i*srs+c)) * f
		}
	})
}

// emuLRSampleEpilogue is lr_sample_epilogue.
func emuLRSampleEpilogue(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
	dst, drs, s, srs, psi, pinc := a.ptr(0), a.i64(1), a.ptr(2), a.i64(3), a.ptr(4), a.i64(5)
	mu, minc, rows, k := a.ptr(6), a.i64(7), a.i64(8), a.i64(9)
	emuThreads(grid, block, func(first, step int) {
		for el := first; el < rows*k; el += step {
			i := el / k
			c := el - i*k
			f := 1 / *e.f(psi, i*pinc)
			m := 0.0
			if mu != 0 {
				m = *e.f(mu, i*minc)
			}
			*e.f(dst, i*drs+c) += *e.f(s, i*srs+c)*f + m
		}
	})
}

// emuLREMPass1 is lr_em_pass1: per block, per warp, the lanes' loops, the two warp sums, lane 0's store; then the
// block's maximum over the warps.
func emuLREMPass1(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
	A, lda, W, wrs, X, xrs := a.ptr(0), a.i64(1), a.ptr(2), a.i64(3), a.ptr(4), a.i64(5)
	psi, pinc, sd, bmax := a.ptr(6), a.i64(7), a.ptr(8), a.ptr(9)
	alpha, beta, d, p, kc := a.f64(10), a.f64(11), a.i64(12), a.i64(13), a.i64(14)
	warps := int(block[0]) / 32
	step := int(grid[0]) * warps
	for bx := 0; bx < int(grid[0]); bx++ {
		wmax := make([]float64, warps)
		for warp := 0; warp < warps; warp++ {
			mx := 0.0
			for i := bx*warps + warp; i < d; i += step {
				ps := *e.f(psi, i*pinc)
				f := 1 / math.Sqrt(ps)
				var ww, xx [32]float64
				for lane := 0; lane < 32; lane++ {
					for j := lane; j < p; j += 32 {
						w := *e.f(W, i*wrs+j)
						*e.f(A, i*lda+j) = w * f
						ww[lane] += w * w
					}
					for c := lane; c < kc; c += 32 {
						x := *e.f(X, i*xrs+c)
						*e.f(A, i*lda+p+c) = x * f
						xx[lane] += x * x
					}
				}
				s := alpha * (emuWarpSum(ww[:]) + ps)
				if kc > 0 {
					s += beta * emuWarpSum(xx[:])
				}
				*e.f(sd, i) = s
				mx = math.Max(mx, s)
			}
			wmax[warp] = mx
		}
		m := wmax[0]
		for _, v := range wmax[1:] {
			m = math.Max(m, v)
		}
		*e.f(bmax, bx) = m
	}
}

// emuLREMFloor is lr_em_floor.
func emuLREMFloor(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	bmax, nb, given, rel, tiny, out := a.ptr(0), a.i64(1), a.f64(2), a.f64(3), a.f64(4), a.ptr(5)
	if given > 0 {
		*e.f(out, 0) = given
		return
	}
	m := 0.0
	for b := 0; b < nb; b++ {
		m = math.Max(m, *e.f(bmax, b))
	}
	*e.f(out, 0) = math.Max(tiny, rel*m)
}

// emuLREMPrep is lr_em_prep (grid-stride).
func emuLREMPrep(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
	G, lg, mi, mb, p, alpha := a.ptr(0), a.i64(1), a.ptr(2), a.ptr(3), a.i64(4), a.f64(5)
	emuThreads(grid, block, func(first, step int) {
		for el := first; el < p*p; el += step {
			emuLREMPrepItem(e, G, lg, mi, mb, p, alpha, el)
		}
	})
}

// emuLREMPrepItem is the body of lr_em_prep's loop for element el.
func emuLREMPrepItem(e *emuDev, G cu.DevPtr, lg int, mi, mb cu.DevPtr, p int, alpha float64, el int) {
	j := el / p
	i := el - j*p
	var g float64
	if i >= j {
		g = *e.f(G, j*lg+i)
	} else {
		g = *e.f(G, i*lg+j)
	}
	*e.f(mi, el) = g
	*e.f(mb, el) = alpha * g
}

// emuLREMPrep2 is lr_em_prep2 (grid-stride).
func emuLREMPrep2(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
	mi, mb, G, lg, r, nrhs := a.ptr(0), a.ptr(1), a.ptr(2), a.i64(3), a.ptr(4), a.ptr(5)
	p, kc, alpha, beta := a.i64(6), a.i64(7), a.f64(8), a.f64(9)
	emuThreads(grid, block, func(first, step int) {
		for el := first; el < p*(2*p+kc); el += step {
			emuLREMPrep2Item(e, mi, mb, G, lg, r, nrhs, p, kc, alpha, beta, el)
		}
	})
}

// emuLREMPrep2Item is the body of lr_em_prep2's loop for element el.
func emuLREMPrep2Item(e *emuDev, mi, mb, G cu.DevPtr, lg int, r, nrhs cu.DevPtr, p, kc int, alpha, beta float64,
	el int) {
	delta := func(i, j int) float64 {
		if i == j {
			return 1
		}
		return 0
	}
	j := el / p // column of nrhs
	i := el - j*p
	switch {
	case j < p:
		mij := *e.f(mi, j*p+i) + delta(i, j)
		mji := *e.f(mi, i*p+j) + delta(i, j)
		*e.f(r, el) = 0.5 * ((*e.f(mb, j*p+i) + mij) + (*e.f(mb, i*p+j) + mji))
		*e.f(nrhs, el) = mij
	case j < 2*p:
		jj := j - p
		*e.f(nrhs, el) = alpha * (*e.f(mi, jj*p+i) + delta(i, jj))
	default:
		c := j - 2*p
		*e.f(nrhs, el) = beta * *e.f(G, i*lg+p+c)
	}
}

// emuLREMCheck is lr_em_check.
func emuLREMCheck(e *emuDev, _, _ [3]uint32, _ uint32, a emuArgs) {
	r, p, info, status := a.ptr(0), a.i64(1), a.ptr(2), a.ptr(3)
	bad := *e.i32(info) != 0
	for i := 0; i < p; i++ {
		if d := *e.f(r, i*p+i); !(d > 0) || math.IsInf(d, 0) {
			bad = true
		}
	}
	*e.i32(status) = 0
	if bad {
		*e.i32(status) = 1
	}
}

// emuLREMEpilogue is lr_em_epilogue: per warp and row, the lanes' loop, the warp sum, lane 0's ψ update.
func emuLREMEpilogue(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
	h, p, psi, pinc, sd, floorp, clamped, rows := a.ptr(0), a.i64(1), a.ptr(2), a.i64(3), a.ptr(4), a.ptr(5),
		a.ptr(6), a.i64(7)
	warps := int(block[0]) / 32
	step := int(grid[0]) * warps
	floor := *e.f(floorp, 0)
	for bx := 0; bx < int(grid[0]); bx++ {
		for warp := 0; warp < warps; warp++ {
			for i := bx*warps + warp; i < rows; i += step {
				sq := math.Sqrt(*e.f(psi, i*pinc))
				var ss [32]float64
				for lane := 0; lane < 32; lane++ {
					for j := lane; j < p; j += 32 {
						v := *e.f(h, i*p+j) * sq
						*e.f(h, i*p+j) = v
						ss[lane] += v * v
					}
				}
				v := *e.f(sd, i) - emuWarpSum(ss[:])
				if v < floor {
					v = floor
					*e.i32(clamped)++
				}
				*e.f(psi, i*pinc) = v
			}
		}
	}
}

// lrEmuFactors returns W (d×p, row stride p + pad), ψ (d×1 with row stride 2) and the Cholesky factor L of the
// capacitance, computed by the reference on the CPU backend.
func lrEmuFactors(t *testing.T, cb *cpu.Backend, r *rand.Rand, d, p, pad int) (w, psi, l *tensor.Tensor) {
	w = stridedHost(1, d, p, pad, 1, func(_, _, _ int) float64 { return r.NormFloat64() / math.Sqrt(float64(p)) })
	psi = stridedHost(1, d, 1, 1, 0, func(_, _, _ int) float64 { return 0.5 + 1.5*r.Float64() })
	l = stridedHost(1, p, p, 3, 2, func(_, _, _ int) float64 { return 0 })
	if err := backend.CapacitanceOp.Reference()(cb, l, w, psi); err != nil {
		t.Fatal(err)
	}
	return w, psi, l
}

// withChunks runs f with the chunk size set so that the second sweeps take chunks of rows rows of cols columns.
func withChunks(rows, cols int, f func()) {
	old := lrChunkBytes
	lrChunkBytes = 8 * rows * cols
	defer func() { lrChunkBytes = old }()
	f()
}

// TestEmuLowRankCapacitance runs the capacitance factorisation on the emulated device (one and several chunks,
// strided W, ψ and L) and compares it with the reference on the CPU backend to 1e-12; a W with a NaN gives
// ErrNotPositiveDefinite and leaves L untouched.
func TestEmuLowRankCapacitance(t *testing.T) {
	cb, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct{ d, p, chunk int }{{300, 7, 37}, {250, 5, 250}, {40, 12, 1000}, {1, 1, 1}, {64, 33, 9}} {
		t.Run(fmt.Sprintf("d%d p%d chunk %d", c.d, c.p, c.chunk), func(t *testing.T) {
			w, psi, want := lrEmuFactors(t, cb, r, c.d, c.p, 2)
			e := newEmuDev(t, 1<<18)
			got := stridedHost(1, c.p, c.p, 1, 1, func(_, _, _ int) float64 { return math.NaN() })
			gotRef := cloneHost(got)
			wv, pv, lv := e.put(w), e.put(psi), e.put(got)
			var bad bool
			withChunks(c.chunk, c.p, func() { bad, err = lrCapacitanceRun(e, lv, wv, pv) })
			if err != nil || bad {
				t.Fatalf("bad %v, err %v", bad, err)
			}
			e.get(got, lv)
			samePadding(t, "l", got, gotRef)
			if d := maxRelDiff(got, want, 1e-3); d > 1e-12 {
				t.Errorf("differs from the reference by %.3g", d)
			}
		})
	}
	w, psi, _ := lrEmuFactors(t, cb, r, 20, 3, 0)
	w.Set(0, 5, 1, math.NaN())
	b := newEmuBackend(t)
	put := spdEmuPut(t, b)
	l := stridedHost(1, 3, 3, 0, 0, func(_, i, j int) float64 { return float64(i + j) })
	wd, pd, ld := put(w), put(psi), put(l)
	err = backend.CapacitanceOp.Kernels(b, wd.Shape())[0].Fn(b, ld, wd, pd)
	if !errors.Is(err, backend.ErrNotPositiveDefinite) {
		t.Errorf("W with a NaN: error %v, want ErrNotPositiveDefinite", err)
	}
	back := tensor.NewHost(1, 3, 3)
	if err := b.Download(back, ld); err != nil {
		t.Fatal(err)
	}
	if d := maxRelDiff(back, l, 1); d != 0 {
		t.Errorf("L written although the factorisation failed (changed by %.3g)", d)
	}
}

// TestEmuLowRankSolve runs the Woodbury solve on the emulated device (several chunks, strided W, ψ and g, dst = g
// and dst apart) and compares it with the reference on the CPU backend to 1e-12.
func TestEmuLowRankSolve(t *testing.T) {
	cb, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(13, 14))
	for _, c := range []struct{ d, p, k, chunk int }{{300, 7, 1, 37}, {250, 5, 3, 64}, {40, 12, 2, 1000}, {1, 1, 1, 1}} {
		for _, inPlace := range []bool{false, true} {
			t.Run(fmt.Sprintf("d%d p%d k%d in place %v", c.d, c.p, c.k, inPlace), func(t *testing.T) {
				w, psi, l := lrEmuFactors(t, cb, r, c.d, c.p, 2)
				g := stridedHost(1, c.d, c.k, 1, 1, func(_, _, _ int) float64 { return r.NormFloat64() })
				want := stridedHost(1, c.d, c.k, 0, 0, func(_, _, _ int) float64 { return 0 })
				if err := backend.SolveOp.Reference()(cb, want, w, psi, l, g); err != nil {
					t.Fatal(err)
				}
				e := newEmuDev(t, 1<<18)
				gc := cloneHost(g)
				wv, pv, lv, gv := e.put(w), e.put(psi), e.put(l), e.put(gc)
				got := stridedHost(1, c.d, c.k, 2, 0, func(_, _, _ int) float64 { return math.NaN() })
				dv := gv
				if !inPlace {
					dv = e.put(got)
				}
				withChunks(c.chunk, c.k, func() { err = lrSolveRun(e, dv, wv, pv, lv, gv) })
				if err != nil {
					t.Fatal(err)
				}
				if inPlace {
					e.get(gc, gv)
					got = gc
				} else {
					e.get(got, dv)
				}
				if d := maxRelDiff(got, want, 1e-3); d > 1e-12 {
					t.Errorf("differs from the reference by %.3g", d)
				}
			})
		}
	}
}

// TestEmuLowRankSample runs the ensemble sampler on the emulated device (with and without μ, several chunks) and
// compares it with the reference on the CPU backend for the same counter to 1e-12: the same draws, the same
// corrected Prop. 1.
func TestEmuLowRankSample(t *testing.T) {
	cb, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(15, 16))
	for _, c := range []struct {
		d, p, k, chunk int
		withMu         bool
	}{{200, 6, 5, 33, true}, {150, 4, 1, 150, false}, {90, 9, 12, 20, true}} {
		t.Run(fmt.Sprintf("d%d p%d k%d mu %v", c.d, c.p, c.k, c.withMu), func(t *testing.T) {
			w, psi, l := lrEmuFactors(t, cb, r, c.d, c.p, 1)
			var mu *tensor.Tensor
			if c.withMu {
				mu = stridedHost(1, c.d, 1, 2, 1, func(_, _, _ int) float64 { return r.NormFloat64() })
			}
			cnt := rng.Counter{Seed: 21, Stream: 2, Offset: 7}
			want := stridedHost(1, c.d, c.k, 0, 0, func(_, _, _ int) float64 { return 0 })
			if err := backend.SampleOp.Reference()(cb, want, w, psi, l, mu, cnt); err != nil {
				t.Fatal(err)
			}
			e := newEmuDev(t, 1<<18)
			wv, pv, lv := e.put(w), e.put(psi), e.put(l)
			var mv hotView
			if mu != nil {
				mv = e.put(mu)
			}
			got := stridedHost(1, c.d, c.k, 3, 2, func(_, _, _ int) float64 { return math.NaN() })
			dv := e.put(got)
			withChunks(c.chunk, c.k, func() { err = lrSampleRun(e, dv, wv, pv, lv, mv, cnt) })
			if err != nil {
				t.Fatal(err)
			}
			e.get(got, dv)
			if d := maxRelDiff(got, want, 1e-2); d > 1e-12 {
				t.Errorf("differs from the reference by %.3g", d)
			}
		})
	}
}

// TestEmuLowRankEMStep runs the first inner EM iteration on the emulated device and compares W_new, ψ_new and the
// clamp count with the reference (backend/lowrank.go emStepRef) on the CPU backend: to 1e-11 relative, with and
// without X, β = 0, α = 0, a floor that clamps, the default floor, several chunks; and a NaN in W must give
// ErrNotPositiveDefinite's status before anything is written.
func TestEmuLowRankEMStep(t *testing.T) {
	cb, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(17, 18))
	for _, c := range []struct {
		name              string
		d, p, kc, chunk   int
		alpha, beta, flr  float64
		nan               bool
		wantClamp, wantPD bool
	}{
		{name: "with X", d: 300, p: 7, kc: 3, chunk: 41, alpha: 0.9, beta: 0.5, wantPD: true},
		{name: "no X", d: 200, p: 5, chunk: 200, alpha: 1, wantPD: true},
		{name: "beta 0", d: 120, p: 4, kc: 2, chunk: 50, alpha: 0.7, beta: 0, wantPD: true},
		{name: "alpha 0", d: 150, p: 3, kc: 4, chunk: 33, alpha: 0, beta: 1.3, wantPD: true},
		{name: "floor clamps", d: 160, p: 6, kc: 2, chunk: 70, alpha: 1, beta: 0.2, flr: 0.8, wantClamp: true, wantPD: true},
		{name: "wide", d: 64, p: 40, kc: 40, chunk: 10, alpha: 0.95, beta: 0.3, wantPD: true},
		{name: "NaN", d: 80, p: 4, kc: 1, chunk: 80, alpha: 1, beta: 1, nan: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, psi, _ := lrEmuFactors(t, cb, r, c.d, c.p, 2)
			var x *tensor.Tensor
			if c.kc > 0 {
				x = stridedHost(1, c.d, c.kc, 1, 0, func(_, _, _ int) float64 { return r.NormFloat64() })
			}
			if c.nan {
				w.Set(0, 5, 1, math.NaN())
			}
			wr, pr := cloneHost(w), cloneHost(psi)
			args := backend.EMStepArgs{W: wr, Psi: pr, X: x, Alpha: c.alpha, Beta: c.beta, Floor: c.flr}
			wantN, refErr := backend.EMStepOp.Reference()(cb, args)
			if c.wantPD != (refErr == nil) {
				t.Fatalf("reference error %v", refErr)
			}
			if refErr != nil && !errors.Is(refErr, backend.ErrNotPositiveDefinite) {
				t.Fatalf("reference error %v", refErr)
			}
			e := newEmuDev(t, 1<<18)
			wc, pc := cloneHost(w), cloneHost(psi)
			wv, pv := e.put(wc), e.put(pc)
			var xv hotView
			kc := 0
			if x != nil && c.beta != 0 {
				xv, kc = e.put(x), c.kc
			}
			var n int
			var notPD bool
			withChunks(c.chunk, c.p, func() { n, notPD, err = lrEMRun(e, wv, pv, xv, kc, c.alpha, c.beta, c.flr) })
			if err != nil {
				t.Fatal(err)
			}
			e.get(wc, wv)
			e.get(pc, pv)
			if notPD == c.wantPD {
				t.Fatalf("not positive definite = %v", notPD)
			}
			if notPD {
				samePadding(t, "w", wc, w)
				if !sameBits(wc, w) || !sameBits(pc, psi) {
					t.Errorf("W or ψ written although M + B was not factored")
				}
				return
			}
			if n != wantN || (n > 0) != c.wantClamp {
				t.Errorf("clamped %d, reference %d", n, wantN)
			}
			if d := maxRelDiff(wc, wr, 1e-3); d > 1e-11 {
				t.Errorf("W differs from the reference by %.3g", d)
			}
			if d := maxRelDiff(pc, pr, 1e-3); d > 1e-11 {
				t.Errorf("ψ differs from the reference by %.3g", d)
			}
		})
	}
}
