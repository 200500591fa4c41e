package cuda

import (
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
	emuKernels["qr.qr_small_warp"] = emuQRSmall(32)
	emuKernels["qr.qr_small_block"] = emuQRSmall(256)
	emuKernels["qr.qr_axpy"] = emuQRAxpy
	emuKernels["qr.qr_tall_check"] = emuQRTallCheck
}

// emuQRFallbacks counts the matrices the emulated small kernel sent to its Householder path.
var emuQRFallbacks int

// emuQRGroup is the state of one group of qr_small<G>: its lanes' view of shared memory and of the operands.
type emuQRGroup struct {
	e        *emuDev
	G        int
	A, rb    []float64 // A (ld·p), the CGS coefficients
	tau, sg  []float64
	ld, n, p int
	partial  []float64 // one partial sum per lane
}

// sum runs body(lane) for every lane to fill the partial sums and returns qr_sum of them.
func (g *emuQRGroup) sum(body func(lane int) float64) float64 {
	for lane := 0; lane < g.G; lane++ {
		g.partial[lane] = body(lane)
	}
	return emuGroupSum(g.partial)
}

// rows calls f for the rows i ≡ lane (mod G).
func (g *emuQRGroup) rows(lane int, f func(i int)) {
	for i := lane; i < g.n; i += g.G {
		f(i)
	}
}

// load is qr_load.
func (g *emuQRGroup) load(x, v cu.DevPtr, xbs, xrs, vbs, vrs, m int, t float64) {
	for lane := 0; lane < g.G; lane++ {
		for e := lane; e < g.n*g.p; e += g.G {
			i := e / g.p
			j := e - i*g.p
			a := *g.e.f(x, m*xbs+i*xrs+j)
			if v != 0 {
				a += t * *g.e.f(v, m*vbs+i*vrs+j)
			}
			g.A[j*g.ld+i] = a
		}
	}
}

// cgs2 is qr_cgs2: each "for lane" loop is the code between two synchronisation points of the group.
func (g *emuQRGroup) cgs2() bool {
	A, ld, p := g.A, g.ld, g.p
	for j := 0; j < p; j++ {
		aj := A[j*ld:]
		n0 := g.sum(func(lane int) float64 {
			var s float64
			g.rows(lane, func(i int) { s += aj[i] * aj[i] })
			return s
		})
		nj := n0
		for pass := 0; pass < 2 && j > 0; pass++ {
			for k := 0; k < j; k++ {
				ak := A[k*ld:]
				g.rb[k] = g.sum(func(lane int) float64 {
					var s float64
					g.rows(lane, func(i int) { s += ak[i] * aj[i] })
					return s
				})
			}
			for lane := 0; lane < g.G; lane++ {
				g.rows(lane, func(i int) {
					a := aj[i]
					for k := 0; k < j; k++ {
						a -= g.rb[k] * A[k*ld+i]
					}
					aj[i] = a
				})
			}
			prev := nj
			nj = g.sum(func(lane int) float64 {
				var s float64
				g.rows(lane, func(i int) { s += aj[i] * aj[i] })
				return s
			})
			if nj >= 0.5*prev {
				break
			}
		}
		if !(nj > 1e-8*n0) || math.IsInf(nj, 0) {
			return false
		}
		s := 1 / math.Sqrt(nj)
		for lane := 0; lane < g.G; lane++ {
			g.rows(lane, func(i int) { aj[i] *= s })
		}
	}
	return true
}

// householder is qr_householder, Q formed in matrix dm of the destination (row stride drs).
func (g *emuQRGroup) householder(dst cu.DevPtr, dm, drs int) {
	A, ld, p := g.A, g.ld, g.p
	q := func(i, j int) *float64 { return g.e.f(dst, dm+i*drs+j) }
	for k := 0; k < p; k++ {
		ak := A[k*ld:]
		alpha := ak[k]
		xx := g.sum(func(lane int) float64 {
			var s float64
			g.rows(lane, func(i int) {
				if i > k {
					s += ak[i] * ak[i]
				}
			})
			return s
		})
		var tk, sk float64
		if xx == 0 {
			tk, sk = 0, 1
			if alpha < 0 {
				sk = -1
			}
		} else {
			beta := -math.Copysign(math.Hypot(alpha, math.Sqrt(xx)), alpha)
			tk = (beta - alpha) / beta
			sc := 1 / (alpha - beta)
			for lane := 0; lane < g.G; lane++ {
				g.rows(lane, func(i int) {
					if i > k {
						ak[i] *= sc
					} else if i == k {
						ak[i] = beta
					}
				})
			}
			sk = 1
			if beta < 0 {
				sk = -1
			}
		}
		g.tau[k], g.sg[k] = tk, sk
		if tk == 0 {
			continue
		}
		for j := k + 1; j < p; j++ {
			aj := A[j*ld:]
			w := tk * g.sum(func(lane int) float64 {
				var s float64
				g.rows(lane, func(i int) {
					if i > k {
						s += ak[i] * aj[i]
					} else if i == k {
						s += aj[i]
					}
				})
				return s
			})
			for lane := 0; lane < g.G; lane++ {
				g.rows(lane, func(i int) {
					if i > k {
						aj[i] -= w * ak[i]
					} else if i == k {
						aj[i] -= w
					}
				})
			}
		}
	}
	for lane := 0; lane < g.G; lane++ {
		g.rows(lane, func(i int) {
			for j := 0; j < p; j++ {
				*q(i, j) = 0
				if i == j {
					*q(i, j) = 1
				}
			}
		})
	}
	for k := p - 1; k >= 0; k-- {
		tk := g.tau[k]
		if tk == 0 {
			continue
		}
		ak := A[k*ld:]
		for j := k; j < p; j++ {
			w := tk * g.sum(func(lane int) float64 {
				var s float64
				g.rows(lane, func(i int) {
					if i > k {
						s += ak[i] * *q(i, j)
					} else if i == k {
						s += *q(i, j)
					}
				})
				return s
			})
			for lane := 0; lane < g.G; lane++ {
				g.rows(lane, func(i int) {
					if i > k {
						*q(i, j) -= w * ak[i]
					} else if i == k {
						*q(i, j) -= w
					}
				})
			}
		}
	}
	for lane := 0; lane < g.G; lane++ {
		g.rows(lane, func(i int) {
			for j := 0; j < p; j++ {
				*q(i, j) *= g.sg[j]
			}
		})
	}
}

// emuQRForceHouse makes the emulated small kernel skip Gram–Schmidt (tests of the Householder path).
var emuQRForceHouse bool

// emuQRSmall is qr_small<G>: the groups of a block work on disjoint parts of shared memory and disjoint matrices,
// so they are emulated one after the other.
func emuQRSmall(G int) emuKernel {
	return func(e *emuDev, grid, block [3]uint32, shmem uint32, a emuArgs) {
		dst, dbs, drs, x, xbs, xrs := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3), a.i64(4), a.i64(5)
		v, vbs, vrs, t, batch, n, p := a.ptr(6), a.i64(7), a.i64(8), a.f64(9), a.i64(10), a.i64(11), a.i64(12)
		ld := n | 1
		groups := int(block[0]) / G
		per := ld*p + 3*p
		if int(shmem) < 8*groups*per {
			e.t.Fatalf("qr_small: %d bytes of shared memory for %d groups of %d doubles", shmem, groups, per)
		}
		for bx := 0; bx < int(grid[0]); bx++ {
			smem := make([]float64, shmem/8)
			for i := range smem {
				smem[i] = math.NaN()
			}
			for gl := 0; gl < groups; gl++ {
				A := smem[gl*per : gl*per+per]
				g := &emuQRGroup{e: e, G: G, A: A, rb: A[ld*p:], tau: A[ld*p+p:], sg: A[ld*p+2*p:], ld: ld, n: n, p: p,
					partial: make([]float64, G)}
				for m := bx*groups + gl; m < batch; m += int(grid[0]) * groups {
					g.load(x, v, xbs, xrs, vbs, vrs, m, t)
					if !emuQRForceHouse && g.cgs2() {
						for lane := 0; lane < G; lane++ {
							for el := lane; el < n*p; el += G {
								i := el / p
								j := el - i*p
								*e.f(dst, m*dbs+i*drs+j) = A[j*ld+i]
							}
						}
						continue
					}
					emuQRFallbacks++
					g.load(x, v, xbs, xrs, vbs, vrs, m, t)
					g.householder(dst, m*dbs, drs)
				}
			}
		}
	}
}

// emuQRAxpy is qr_axpy.
func emuQRAxpy(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
	dst, drs, x, xrs, v, vrs := a.ptr(0), a.i64(1), a.ptr(2), a.i64(3), a.ptr(4), a.i64(5)
	t, n, p := a.f64(6), a.i64(7), a.i64(8)
	step := int(grid[0]) * int(block[0])
	for bx := 0; bx < int(grid[0]); bx++ {
		for tx := 0; tx < int(block[0]); tx++ {
			for el := bx*int(block[0]) + tx; el < n*p; el += step {
				i := el / p
				j := el - i*p
				val := *e.f(x, i*xrs+j)
				if v != 0 {
					val += t * *e.f(v, i*vrs+j)
				}
				*e.f(dst, i*drs+j) = val
			}
		}
	}
}

// emuQRTallCheck is qr_tall_check: thread 0's checks, the strided stage-2 scan, __syncthreads_or, the identity.
func emuQRTallCheck(e *emuDev, _, block [3]uint32, _ uint32, a emuArgs) {
	r, info, flag, p, stage := a.ptr(0), a.ptr(1), a.ptr(2), a.i64(3), a.i32(4)
	nt := int(block[0])
	bad := make([]bool, nt)
	bad[0] = *e.i32(flag) != 0
	if stage == 1 || stage == 3 {
		bad[0] = bad[0] || *e.i32(info) != 0
		lo, hi := *e.f(r, 0), *e.f(r, 0)
		for i := 0; i < p; i++ {
			d := *e.f(r, i*p+i)
			if !(d > 0) || math.IsInf(d, 0) {
				bad[0] = true
			}
			lo, hi = math.Min(lo, d), math.Max(hi, d)
		}
		if stage == 1 && !(lo > 0 && hi/lo < 1e7) {
			bad[0] = true
		}
	}
	if stage == 2 {
		for tx := 0; tx < nt; tx++ {
			for el := tx; el < p*p; el += nt {
				j := el / p
				i := el - j*p
				want := 0.0
				if i == j {
					want = 1
				}
				if i <= j && math.Abs(*e.f(r, el)-want) > 0.5 {
					bad[tx] = true
				}
			}
		}
	}
	any := false
	for _, b := range bad {
		any = any || b
	}
	if !any {
		return
	}
	for el := 0; el < p*p; el++ {
		j := el / p
		*e.f(r, el) = 0
		if el-j*p == j {
			*e.f(r, el) = 1
		}
	}
	*e.i32(flag) = 1
}

// qrEmuInput returns a batch of n×p matrices X with orthonormal columns (strided) and a velocity V.
func qrEmuInput(cb *cpu.Backend, r *rand.Rand, batch, n, p, pad int, vBatch int) (x, v *tensor.Tensor) {
	a := stridedHost(batch, n, p, 0, 0, func(_, _, _ int) float64 { return r.NormFloat64() })
	x = stridedHost(batch, n, p, pad, 1, func(_, _, _ int) float64 { return 0 })
	if err := cb.QR(x, nil, a); err != nil {
		panic(err)
	}
	v = stridedHost(vBatch, n, p, pad+1, 2, func(_, _, _ int) float64 { return r.NormFloat64() })
	return x, v
}

// qrOrth returns max |QᵀQ − I| over the batch of host tensor q.
func qrOrth(q *tensor.Tensor) float64 {
	var m float64
	for b := 0; b < q.Batch(); b++ {
		for k := 0; k < q.Cols(); k++ {
			for l := 0; l < q.Cols(); l++ {
				var s float64
				for i := 0; i < q.Rows(); i++ {
					s += q.At(b, i, k) * q.At(b, i, l)
				}
				if k == l {
					s--
				}
				m = math.Max(m, math.Abs(s))
			}
		}
	}
	return m
}

// TestEmuQRSmall runs the small-matrix QR retraction, emulated thread by thread, in both variants on strided views
// with V per matrix, V broadcast and no V, in place and not, and compares with the reference (the CPU backend's
// sign-fixed Householder QR of X + tV): to 1e-13 on well-conditioned inputs, through Gram–Schmidt and through the
// Householder path (forced).
func TestEmuQRSmall(t *testing.T) {
	cb, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, sh := range []struct{ batch, n, p int }{{5, 64, 8}, {3, 17, 5}, {2, 300, 4}, {3, 12, 12}, {4, 7, 1}, {9, 33, 2}} {
		for _, variant := range []string{"", "warp", "block"} {
			for _, vmode := range []string{"batch", "broadcast", "none", "in place"} {
				for _, house := range []bool{false, true} {
					name := fmt.Sprintf("%d×%d×%d/%s/%s/householder=%v", sh.batch, sh.n, sh.p, variant, vmode, house)
					vb := sh.batch
					if vmode == "broadcast" {
						vb = 1
					}
					x, v := qrEmuInput(cb, r, sh.batch, sh.n, sh.p, 2, vb)
					const step = 0.3
					var vArg *tensor.Tensor
					if vmode != "none" {
						vArg = v
					}
					want := stridedHost(sh.batch, sh.n, sh.p, 0, 0, func(_, _, _ int) float64 { return 0 })
					if err := backend.QRRetractOp.Reference()(cb, want, x, vArg, step); err != nil {
						t.Fatal(err)
					}
					e := newEmuDev(t, 1<<18)
					xc := cloneHost(x)
					xv := e.put(xc)
					var vv hotView
					if vArg != nil {
						vv = e.put(v)
						if vb == 1 {
							vv.bs = 0
						}
					}
					got := stridedHost(sh.batch, sh.n, sh.p, 1, 3, func(_, _, _ int) float64 { return math.NaN() })
					gotRef := cloneHost(got)
					dv := xv
					if vmode != "in place" {
						dv = e.put(got)
					}
					emuQRForceHouse, emuQRFallbacks = house, 0
					err := qrSmallRun(e, dv, xv, vv, step, variant)
					emuQRForceHouse = false
					if err != nil {
						t.Fatal(err)
					}
					if vmode == "in place" {
						e.get(xc, xv)
						got = xc
					} else {
						e.get(got, dv)
						samePadding(t, name, got, gotRef)
					}
					if house && emuQRFallbacks != sh.batch {
						t.Errorf("%s: %d matrices through Householder, want %d", name, emuQRFallbacks, sh.batch)
					}
					if !house && emuQRFallbacks != 0 {
						t.Errorf("%s: %d well-conditioned matrices fell back to Householder", name, emuQRFallbacks)
					}
					if d := maxRelDiff(got, want, 1); d > 1e-13 {
						t.Errorf("%s: differs from the reference by %.3g", name, d)
					}
				}
			}
		}
	}
}

// TestEmuQRSmallFallback feeds the small kernel matrices whose columns are nearly parallel (κ ≈ 1e6), which
// Gram–Schmidt refuses: the Householder path must give an orthonormal Q (to 1e-14) equal to the reference's to
// κ·1e-15.
func TestEmuQRSmallFallback(t *testing.T) {
	cb, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 10))
	const batch, n, p, spread = 4, 40, 5, 1e-6
	base := make([]float64, batch*n)
	for i := range base {
		base[i] = r.NormFloat64()
	}
	x := stridedHost(batch, n, p, 1, 0, func(b, i, j int) float64 {
		if j == 0 {
			return base[b*n+i]
		}
		return base[b*n+i] + spread*r.NormFloat64()
	})
	want := stridedHost(batch, n, p, 0, 0, func(_, _, _ int) float64 { return 0 })
	if err := backend.QRRetractOp.Reference()(cb, want, x, nil, 0); err != nil {
		t.Fatal(err)
	}
	for _, variant := range []string{"warp", "block"} {
		e := newEmuDev(t, 1<<16)
		xv := e.put(x)
		got := stridedHost(batch, n, p, 0, 0, func(_, _, _ int) float64 { return 0 })
		dv := e.put(got)
		emuQRFallbacks = 0
		if err := qrSmallRun(e, dv, xv, hotView{}, 0, variant); err != nil {
			t.Fatal(err)
		}
		e.get(got, dv)
		if emuQRFallbacks != batch {
			t.Errorf("%s: %d of %d matrices through Householder", variant, emuQRFallbacks, batch)
		}
		if o := qrOrth(got); o > 1e-14 {
			t.Errorf("%s: ‖QᵀQ − I‖max = %.3g", variant, o)
		}
		if d := maxRelDiff(got, want, 1); d > 1e-15/spread {
			t.Errorf("%s: differs from the reference by %.3g", variant, d)
		}
	}
}

// TestEmuQRTall runs CholeskyQR2 through the emulated cuBLAS/cuSOLVER calls and kernels, finishing with the
// reference QR when the run reports a fallback as qrRetractTallCUDA does: well-conditioned inputs (to 1e-13 of the
// reference, no fallback), in place, and inputs the Gram matrix cannot handle (κ ≈ 1e9, NaN: fallback).
func TestEmuQRTall(t *testing.T) {
	cb, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		name         string
		n, p         int
		kappa        float64 // 0: orthonormal X plus tV
		nan, inPlace bool
		wantFallback bool
	}{
		{name: "retraction", n: 500, p: 6},
		{name: "one column", n: 300, p: 1},
		{name: "in place", n: 400, p: 9, inPlace: true},
		{name: "kappa 1e3", n: 400, p: 5, kappa: 1e3},
		{name: "kappa 1e9", n: 400, p: 5, kappa: 1e9, wantFallback: true},
		{name: "NaN", n: 200, p: 3, nan: true, wantFallback: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			x, v := qrEmuInput(cb, r, 1, c.n, c.p, 3, 1)
			step := 0.2
			if c.kappa > 0 { // columns scaled over [1, κ] and mixed: κ(X) ≈ κ
				step = 0
				for i := 0; i < c.n; i++ {
					for j := 0; j < c.p; j++ {
						x.Set(0, i, j, x.At(0, i, j)*math.Pow(c.kappa, float64(j)/float64(c.p-1))+0.5*x.At(0, i, 0))
					}
				}
			}
			if c.nan {
				x.Set(0, 3, 1, math.NaN())
			}
			want := stridedHost(1, c.n, c.p, 0, 0, func(_, _, _ int) float64 { return 0 })
			if err := backend.QRRetractOp.Reference()(cb, want, x, v, step); err != nil {
				t.Fatal(err)
			}
			e := newEmuDev(t, 1<<17)
			xc := cloneHost(x)
			xv, vv := e.put(xc), e.put(v)
			vv.bs = 0
			got := stridedHost(1, c.n, c.p, 2, 1, func(_, _, _ int) float64 { return math.NaN() })
			dv := xv
			if !c.inPlace {
				dv = e.put(got)
			}
			fb, err := qrTallRun(e, dv, xv, vv, step)
			if err != nil {
				t.Fatal(err)
			}
			if c.inPlace {
				e.get(xc, xv)
				got = xc
			} else {
				e.get(got, dv)
			}
			if fb != c.wantFallback {
				t.Fatalf("fallback = %v, want %v", fb, c.wantFallback)
			}
			if fb {
				if err := cb.QR(got, nil, got); err != nil {
					t.Fatal(err)
				}
			}
			if c.nan {
				if !math.IsNaN(got.At(0, 3, 1)) {
					t.Errorf("NaN input gave %v", got.At(0, 3, 1))
				}
				return
			}
			tol := 1e-13
			if c.kappa > 0 {
				tol = 1e-15 * c.kappa * 10
			}
			if d := maxRelDiff(got, want, 1); d > tol {
				t.Errorf("differs from the reference by %.3g (tolerance %.3g)", d, tol)
			}
			if o := qrOrth(got); o > 1e-14 {
				t.Errorf("‖QᵀQ − I‖max = %.3g", o)
			}
		})
	}
}
