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

// Group size G and register depth R of the three variants of kernels/sphere.cu (SPH_R_*).
var sphEmuCfg = map[string][2]int{"thread": {1, 8}, "warp": {32, 16}, "block": {256, 20}}

func init() {
	for v, c := range sphEmuCfg {
		emuKernels["sphere.sphere_flow_"+v] = emuSphereFlow(c[0], c[1])
		emuKernels["sphere.sphere_project_"+v] = emuSphereProject(c[0], c[1])
		emuKernels["sphere.sphere_normalize_"+v] = emuSphereNormalize(c[0], c[1])
	}
}

// emuSphGroups calls f(first, step) for every group of G threads of the grid, as sph_group computes them.
func emuSphGroups(grid, block [3]uint32, G int, f func(first, step int)) {
	gx, bx := int(grid[0]), int(block[0])
	switch G {
	case 1:
		for b := 0; b < gx; b++ {
			for t := 0; t < bx; t++ {
				f(b*bx+t, gx*bx)
			}
		}
	case 32:
		for b := 0; b < gx; b++ {
			for w := 0; w < bx/32; w++ {
				f(b*(bx/32)+w, gx*(bx/32))
			}
		}
	default:
		if bx != G {
			panic("block variant launched with a block that is not the group")
		}
		for b := 0; b < gx; b++ {
			f(b, gx)
		}
	}
}

// emuSphRow is sph_row.
func emuSphRow(r, K, bs, rs int) int {
	b := r / K
	return b*bs + (r-b*K)*rs
}

// emuSphBuffers returns the lanes' register caches of two operands (G × R) and their partial sums, allocated once per
// launch: every row sets what it reads.
func emuSphBuffers(G, R int) (a, b [][]float64, part []float64) {
	a, b = make([][]float64, G), make([][]float64, G)
	for lane := range a {
		a[lane], b[lane] = make([]float64, R), make([]float64, R)
	}
	return a, b, make([]float64, G)
}

// emuSphereFlow is sph_flow<G, R>: phase 1 (every lane: load its cached elements, partial ‖v‖²), the group sum,
// phase 2 (every lane: update).
func emuSphereFlow(G, R int) emuKernel {
	return func(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
		x, xbs, xrs, v, vbs, vrs := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3), a.i64(4), a.i64(5)
		nrows, K, n, h := a.i64(6), a.i64(7), a.i64(8), a.f64(9)
		xc, vc, part := emuSphBuffers(G, R)
		emuSphGroups(grid, block, G, func(first, step int) {
			for r := first; r < nrows; r += step {
				xo, vo := emuSphRow(r, K, xbs, xrs), emuSphRow(r, K, vbs, vrs)
				for lane := 0; lane < G; lane++ {
					var ss float64
					for k := 0; k < R; k++ {
						if j := lane + k*G; j < n {
							xc[lane][k], vc[lane][k] = *e.f(x, xo+j), *e.f(v, vo+j)
							ss += vc[lane][k] * vc[lane][k]
						}
					}
					for j := lane + R*G; j < n; j += G {
						vj := *e.f(v, vo+j)
						ss += vj * vj
					}
					part[lane] = ss
				}
				ss := emuGroupSum(part)
				if ss == 0 {
					continue
				}
				alpha := math.Sqrt(ss)
				s, c := math.Sincos(alpha * h)
				hs, as := s/alpha, alpha*s
				for lane := 0; lane < G; lane++ {
					for k := 0; k < R; k++ {
						if j := lane + k*G; j < n {
							*e.f(x, xo+j) = xc[lane][k]*c + vc[lane][k]*hs
							*e.f(v, vo+j) = vc[lane][k]*c - xc[lane][k]*as
						}
					}
					for j := lane + R*G; j < n; j += G {
						xj, vj := *e.f(x, xo+j), *e.f(v, vo+j)
						*e.f(x, xo+j) = xj*c + vj*hs
						*e.f(v, vo+j) = vj*c - xj*as
					}
				}
			}
		})
	}
}

// emuSphereProject is sph_project<G, R>.
func emuSphereProject(G, R int) emuKernel {
	return func(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
		dst, dbs, drs, x, xbs, xrs := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3), a.i64(4), a.i64(5)
		w, wbs, wrs, nrows, K, n := a.ptr(6), a.i64(7), a.i64(8), a.i64(9), a.i64(10), a.i64(11)
		xc, wc, part := emuSphBuffers(G, R)
		emuSphGroups(grid, block, G, func(first, step int) {
			for r := first; r < nrows; r += step {
				do, xo, wo := emuSphRow(r, K, dbs, drs), emuSphRow(r, K, xbs, xrs), emuSphRow(r, K, wbs, wrs)
				for lane := 0; lane < G; lane++ {
					var d float64
					for k := 0; k < R; k++ {
						if j := lane + k*G; j < n {
							xc[lane][k], wc[lane][k] = *e.f(x, xo+j), *e.f(w, wo+j)
							d += xc[lane][k] * wc[lane][k]
						}
					}
					for j := lane + R*G; j < n; j += G {
						d += *e.f(x, xo+j) * *e.f(w, wo+j)
					}
					part[lane] = d
				}
				d := emuGroupSum(part)
				for lane := 0; lane < G; lane++ {
					for k := 0; k < R; k++ {
						if j := lane + k*G; j < n {
							*e.f(dst, do+j) = wc[lane][k] - d*xc[lane][k]
						}
					}
					for j := lane + R*G; j < n; j += G {
						xj, wj := *e.f(x, xo+j), *e.f(w, wo+j)
						*e.f(dst, do+j) = wj - d*xj
					}
				}
			}
		})
	}
}

// emuSphereNormalize is sph_normalize<G, R>: two reductions, each between two phases over the lanes.
func emuSphereNormalize(G, R int) emuKernel {
	return func(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
		x, xbs, xrs, v, vbs, vrs := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3), a.i64(4), a.i64(5)
		nrows, K, n := a.i64(6), a.i64(7), a.i64(8)
		xc, vc, part := emuSphBuffers(G, R)
		emuSphGroups(grid, block, G, func(first, step int) {
			for r := first; r < nrows; r += step {
				xo := emuSphRow(r, K, xbs, xrs)
				for lane := 0; lane < G; lane++ {
					var nx float64
					for k := 0; k < R; k++ {
						if j := lane + k*G; j < n {
							xc[lane][k] = *e.f(x, xo+j)
							nx += xc[lane][k] * xc[lane][k]
						}
					}
					for j := lane + R*G; j < n; j += G {
						xj := *e.f(x, xo+j)
						nx += xj * xj
					}
					part[lane] = nx
				}
				inv := 1 / math.Sqrt(emuGroupSum(part))
				for lane := 0; lane < G; lane++ {
					for k := 0; k < R; k++ {
						if j := lane + k*G; j < n {
							xc[lane][k] *= inv
							*e.f(x, xo+j) = xc[lane][k]
						}
					}
					for j := lane + R*G; j < n; j += G {
						*e.f(x, xo+j) *= inv
					}
				}
				if v == 0 {
					continue
				}
				vo := emuSphRow(r, K, vbs, vrs)
				for lane := 0; lane < G; lane++ {
					var d float64
					for k := 0; k < R; k++ {
						if j := lane + k*G; j < n {
							vc[lane][k] = *e.f(v, vo+j)
							d += xc[lane][k] * vc[lane][k]
						}
					}
					for j := lane + R*G; j < n; j += G {
						d += *e.f(x, xo+j) * *e.f(v, vo+j)
					}
					part[lane] = d
				}
				d := emuGroupSum(part)
				for lane := 0; lane < G; lane++ {
					for k := 0; k < R; k++ {
						if j := lane + k*G; j < n {
							*e.f(v, vo+j) = vc[lane][k] - d*xc[lane][k]
						}
					}
					for j := lane + R*G; j < n; j += G {
						*e.f(v, vo+j) -= d * *e.f(x, xo+j)
					}
				}
			}
		})
	}
}

// sphEmuState returns a point on a product of spheres (batch×K×n, strided when pad > 0) and a tangent velocity with
// rows of speed about speed; row (0, 1) is at rest.
func sphEmuState(r *rand.Rand, batch, K, n, pad int, speed float64) (x, v *tensor.Tensor) {
	x = stridedHost(batch, K, n, pad, 1, func(_, _, _ int) float64 { return r.NormFloat64() })
	v = stridedHost(batch, K, n, pad+1, 2, func(_, _, _ int) float64 { return speed * r.NormFloat64() / math.Sqrt(float64(n)) })
	for b := 0; b < batch; b++ {
		for i := 0; i < K; i++ {
			var xx, xv float64
			for j := 0; j < n; j++ {
				xx += x.At(b, i, j) * x.At(b, i, j)
			}
			for j := 0; j < n; j++ {
				x.Set(b, i, j, x.At(b, i, j)/math.Sqrt(xx))
			}
			for j := 0; j < n; j++ {
				xv += x.At(b, i, j) * v.At(b, i, j)
			}
			for j := 0; j < n; j++ {
				vj := v.At(b, i, j) - xv*x.At(b, i, j)
				if b == 0 && i == 1 {
					vj = 0
				}
				v.Set(b, i, j, vj)
			}
		}
	}
	return x, v
}

// sphEmuShapes cover every variant on rows shorter than, equal to and longer than its register cache.
var sphEmuShapes = []struct {
	batch, K, n int
	variants    []string
}{
	{3, 5, 3, []string{"", "thread", "warp", "block"}},
	{2, 4, 8, []string{"", "thread"}},
	{2, 3, 11, []string{"thread", "warp"}},
	{2, 4, 40, []string{"", "block"}},
	{1, 3, 600, []string{"", "warp", "block"}},
	{1, 2, 6200, []string{"", "block"}},
}

// TestEmuSphereKernels runs the three sphere kernels, emulated thread by thread, on strided views and compares them
// with the reference implementations on the CPU backend: the flow and the projection to 1e-13 (absolute, on unit
// rows), with the row at rest unchanged bit for bit; renormalisation to 1e-14.
func TestEmuSphereKernels(t *testing.T) {
	cb, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, sh := range sphEmuShapes {
		for _, variant := range sh.variants {
			name := fmt.Sprintf("%d×%d×%d/%s", sh.batch, sh.K, sh.n, variant)
			t.Run("flow/"+name, func(t *testing.T) {
				x, v := sphEmuState(r, sh.batch, sh.K, sh.n, 2, 1.7)
				x0, v0 := cloneHost(x), cloneHost(v)
				xr, vr := cloneHost(x), cloneHost(v)
				const h = 0.37
				if err := backend.SphereFlowOp.Reference()(cb, xr, vr, h); err != nil {
					t.Fatal(err)
				}
				e := newEmuDev(t, 1<<17)
				xv, vv := e.put(x), e.put(v)
				if err := sphFlowRun(e, xv, vv, h, variant); err != nil {
					t.Fatal(err)
				}
				e.get(x, xv)
				e.get(v, vv)
				samePadding(t, "x", x, x0)
				samePadding(t, "v", v, v0)
				if d := maxRelDiff(x, xr, 1); d > 1e-13 {
					t.Errorf("x differs from the reference by %.3g", d)
				}
				if d := maxRelDiff(v, vr, 1); d > 1e-13 {
					t.Errorf("v differs from the reference by %.3g", d)
				}
				for j := 0; j < sh.n; j++ {
					if math.Float64bits(x.At(0, 1, j)) != math.Float64bits(x0.At(0, 1, j)) ||
						math.Float64bits(v.At(0, 1, j)) != math.Float64bits(v0.At(0, 1, j)) {
						t.Fatalf("row at rest changed at column %d", j)
					}
				}
			})
			t.Run("project/"+name, func(t *testing.T) {
				x, w := sphEmuState(r, sh.batch, sh.K, sh.n, 1, 1)
				for b := 0; b < sh.batch; b++ { // w off the tangent space
					for i := 0; i < sh.K; i++ {
						for j := 0; j < sh.n; j++ {
							w.Set(b, i, j, w.At(b, i, j)+0.3*x.At(b, i, j))
						}
					}
				}
				ref := stridedHost(sh.batch, sh.K, sh.n, 0, 0, func(_, _, _ int) float64 { return 0 })
				if err := backend.SphereProjectOp.Reference()(cb, ref, x, w); err != nil {
					t.Fatal(err)
				}
				for _, inPlace := range []bool{false, true} {
					e := newEmuDev(t, 1<<17)
					wc := cloneHost(w)
					xv, wv := e.put(x), e.put(wc)
					dst := stridedHost(sh.batch, sh.K, sh.n, 3, 2, func(_, _, _ int) float64 { return math.NaN() })
					dv := wv
					if !inPlace {
						dv = e.put(dst)
					}
					if err := sphProjectRun(e, dv, xv, wv, variant); err != nil {
						t.Fatal(err)
					}
					if inPlace {
						e.get(wc, wv)
						dst = wc
					} else {
						e.get(dst, dv)
					}
					if d := maxRelDiff(dst, ref, 1); d > 1e-13 {
						t.Errorf("in place %v: differs from the reference by %.3g", inPlace, d)
					}
				}
			})
			t.Run("normalize/"+name, func(t *testing.T) {
				x, v := sphEmuState(r, sh.batch, sh.K, sh.n, 2, 1)
				for b := 0; b < sh.batch; b++ { // drift off the sphere and the tangent space
					for i := 0; i < sh.K; i++ {
						for j := 0; j < sh.n; j++ {
							x.Set(b, i, j, 1.3*x.At(b, i, j)+1e-3*float64(j%3))
						}
					}
				}
				for _, withV := range []bool{false, true} {
					xr, vr := cloneHost(x), cloneHost(v)
					var vrArg *tensor.Tensor
					if withV {
						vrArg = vr
					}
					if err := backend.SphereNormalizeOp.Reference()(cb, xr, vrArg); err != nil {
						t.Fatal(err)
					}
					e := newEmuDev(t, 1<<17)
					xc, vc := cloneHost(x), cloneHost(v)
					xv := e.put(xc)
					var vv hotView
					if withV {
						vv = e.put(vc)
					}
					if err := sphNormalizeRun(e, xv, vv, variant); err != nil {
						t.Fatal(err)
					}
					e.get(xc, xv)
					if withV {
						e.get(vc, vv)
						if d := maxRelDiff(vc, vr, 1); d > 1e-14 {
							t.Errorf("v differs from the reference by %.3g", d)
						}
					}
					if d := maxRelDiff(xc, xr, 1); d > 1e-14 {
						t.Errorf("with v %v: x differs from the reference by %.3g", withV, d)
					}
				}
			})
		}
	}
}
