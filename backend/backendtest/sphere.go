package backendtest

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// Conformance of the sphere hot operations (backend/sphere.go) against plain float64 code, for the public entry
// points, the references and every kernel the backend registers: the invariants of the flow (7) of paper
// 001, its group property and period, the projection Λ(x), and the long-run invariant ‖x‖ = 1, xᵀv = 0.

func init() {
	register("sphere", testSphere)
	registerBench("sphere", benchSphere)
}

func testSphere(t *testing.T, b backend.Backend) {
	t.Run("flow/invariants", func(t *testing.T) { sphTestFlowInvariants(t, b) })
	t.Run("flow/group", func(t *testing.T) { sphTestFlowGroup(t, b) })
	t.Run("flow/period", func(t *testing.T) { sphTestFlowPeriod(t, b) })
	t.Run("flow/batches", func(t *testing.T) { sphTestFlowBatches(t, b) })
	t.Run("flow/longrun", func(t *testing.T) { sphTestFlowLongRun(t, b) })
	t.Run("project", func(t *testing.T) { sphTestProject(t, b) })
	t.Run("normalize", func(t *testing.T) { sphTestNormalize(t, b) })
	t.Run("strided", func(t *testing.T) { sphTestStrided(t, b) })
	t.Run("badinput", func(t *testing.T) { sphTestBadInput(t, b) })
}

// sphImpls lists the public entry point, the reference and every kernel registered for b at shape s.
func sphImpls[F any](op *backend.Op[F], public F, b backend.Backend, s tensor.Shape) []impl[F] {
	return append([]impl[F]{{"public", public}}, implsOf(op, b, s)...)
}

// --- host helpers -----------------------------------------------------------------------------------------------

// sphRow returns row r (over batch and K) of a contiguous host tensor.
func sphRow(t *tensor.Tensor, r int) []float64 {
	n := t.Cols()
	return t.Storage().Host()[t.Offset()+r*n : t.Offset()+(r+1)*n]
}

func sphNrows(t *tensor.Tensor) int { return t.Batch() * t.Rows() }

func sphDotH(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func sphNormH(a []float64) float64 {
	// scaled, so that tiny and huge rows do not under- or overflow
	m := 0.0
	for _, e := range a {
		m = max(m, math.Abs(e))
	}
	if m == 0 {
		return 0
	}
	var s float64
	for _, e := range a {
		s += (e / m) * (e / m)
	}
	return m * math.Sqrt(s)
}

// sphProjectH sets w ← w − (x·w)x.
func sphProjectH(x, w []float64) {
	d := sphDotH(x, w)
	for j := range w {
		w[j] -= d * x[j]
	}
}

// sphState returns a host state on a product of spheres: x with unit rows, v with rows tangent to x (Gram–Schmidt
// twice, |xᵀv| ≲ 1e-16‖v‖) and norm speed(r) for row r.
func sphState(c rng.Counter, batch, k, n int, speed func(r int) float64) (x, v *tensor.Tensor) {
	x, v = tensor.NewHost(batch, k, n), tensor.NewHost(batch, k, n)
	c.FillNormal(x.Storage().Host())
	c.Advance(x.Len()).FillNormal(v.Storage().Host())
	for r := 0; r < sphNrows(x); r++ {
		xr, vr := sphRow(x, r), sphRow(v, r)
		for range 2 {
			nx := sphNormH(xr)
			for j := range xr {
				xr[j] /= nx
			}
		}
		sphProjectH(xr, vr)
		sphProjectH(xr, vr)
		s := speed(r)
		nv := sphNormH(vr)
		for j := range vr {
			vr[j] *= s / nv
		}
	}
	return x, v
}

// sphFlowH is the float64 geodesic flow of one row (paper 001 eq. (7)), written as a rotation in span{x, v}.
func sphFlowH(x, v []float64, h float64) {
	a := sphNormH(v)
	if a == 0 {
		return
	}
	c, s := math.Cos(a*h), math.Sin(a*h)
	for j := range x {
		e1, e2 := x[j], v[j]/a // orthonormal basis of the plane
		x[j] = c*e1 + s*e2
		v[j] = a * (c*e2 - s*e1)
	}
}

// sphStill reports whether a flow left a zero-velocity state unchanged: x bit-identical, and v the same zero
// vector (the reference, built from primitives, may flip the sign of a zero entry of v; a fused kernel skips the
// row and keeps all bits).
func sphStill(x0, v0, x1, v1 *tensor.Tensor) bool {
	if !sphBitsEqual(x1, x0) {
		return false
	}
	vh := v1.Storage().Host()
	for i, e := range v0.Storage().Host() {
		if e != vh[i] {
			return false
		}
	}
	return true
}

func sphBitsEqual(a, b *tensor.Tensor) bool {
	ah, bh := a.Storage().Host(), b.Storage().Host()
	if len(ah) != len(bh) {
		return false
	}
	for i := range ah {
		if math.Float64bits(ah[i]) != math.Float64bits(bh[i]) {
			return false
		}
	}
	return true
}

// sphMaxErr tracks the worst value of a named error measure and its tolerance ratio.
type sphMaxErr struct {
	names []string
	vals  map[string]float64
}

func (m *sphMaxErr) add(name string, v float64) {
	if m.vals == nil {
		m.vals = map[string]float64{}
	}
	if _, ok := m.vals[name]; !ok {
		m.names = append(m.names, name)
	}
	m.vals[name] = max(m.vals[name], v)
}

func (m *sphMaxErr) String() string {
	s := ""
	for _, n := range m.names {
		s += fmt.Sprintf(" %s=%.2e", n, m.vals[n])
	}
	return s
}

// --- flow -------------------------------------------------------------------------------------------------------

// sphTestFlowInvariants: one flow (7) keeps ‖x‖ = 1, xᵀv = 0, ‖v‖, stays in span{x, v}, matches
// the float64 rotation, and leaves a zero-velocity state bit-identical.
func sphTestFlowInvariants(t *testing.T, b backend.Backend) {
	c := rng.Counter{Seed: 1, Stream: 100}
	for _, n := range []int{2, 3, 100, 5000} {
		k := max(2, min(64, 20000/n))
		shape := tensor.Shape{Batch: 2, Rows: k, Cols: n}
		for _, impl := range sphImpls(backend.SphereFlowOp, backend.SphereFlow, b, shape) {
			var me sphMaxErr
			for _, speed := range []float64{0, 1e-12, 1, 1e3} {
				for _, h := range []float64{1e-6, 1e-2, 1, 50} {
					c = c.Advance(1 << 20)
					x0, v0 := sphState(c, 2, k, n, func(int) float64 { return speed })
					x, v := upload(t, b, x0), upload(t, b, v0)
					if err := impl.fn(b, x, v, h); err != nil {
						t.Fatalf("%s n=%d: %v", impl.name, n, err)
					}
					x1, v1 := download(t, b, x), download(t, b, v)
					b.Free(x)
					b.Free(v)
					if speed == 0 {
						// v0 holds zeros of both signs; see sphStill
						if !sphStill(x0, v0, x1, v1) {
							t.Errorf("%s n=%d h=%g: zero velocity changed the state", impl.name, n, h)
						}
						continue
					}
					for r := 0; r < sphNrows(x0); r++ {
						xa, va := sphRow(x0, r), sphRow(v0, r)
						xb, vb := sphRow(x1, r), sphRow(v1, r)
						a := sphNormH(va)
						// tolerances: 2e-14 for the norms and tangency, 1e-13 for the span residual
						eNorm := math.Abs(sphNormH(xb) - 1)
						eTan := math.Abs(sphDotH(xb, vb)) / max(1, a)
						eSpeed := math.Abs(sphNormH(vb)-a) / a
						// span residual: components orthogonal to the basis {x, v/α}
						eSpan := 0.0
						for _, ws := range []struct {
							w     []float64
							scale float64
						}{{xb, 1}, {vb, max(1, a)}} {
							p, q := sphDotH(xa, ws.w), sphDotH(va, ws.w)/a
							res := make([]float64, n)
							for j := range res {
								res[j] = ws.w[j] - p*xa[j] - q*va[j]/a
							}
							eSpan = max(eSpan, sphNormH(res)/ws.scale)
						}
						// against the float64 rotation: the phase αh carries a relative error of a few ulps of α
						xr, vr := append([]float64(nil), xa...), append([]float64(nil), va...)
						sphFlowH(xr, vr, h)
						dx, dv := 0.0, 0.0
						for j := range xr {
							dx = max(dx, math.Abs(xb[j]-xr[j]))
							dv = max(dv, math.Abs(vb[j]-vr[j]))
						}
						eRef := max(dx, dv/a) / (1 + a*math.Abs(h))
						me.add("norm", eNorm)
						me.add("tangent", eTan)
						me.add("speed", eSpeed)
						me.add("span", eSpan)
						me.add("vsref/(1+αh)", eRef)
						if eNorm > 2e-14 || eTan > 2e-14 || eSpeed > 2e-14 || eSpan > 1e-13 || eRef > 1e-13 {
							t.Errorf("%s n=%d ‖v‖=%g h=%g row %d: |‖x‖−1|=%.2e |xᵀv|/max(1,α)=%.2e |Δ‖v‖|/α=%.2e "+
								"span=%.2e vs float64 %.2e", impl.name, n, speed, h, r, eNorm, eTan, eSpeed, eSpan, eRef)
							return
						}
					}
				}
			}
			t.Logf("%s n=%d max:%v", impl.name, n, &me)
		}
	}
}

// sphFlowOnce runs impl on host copies of (x, v) and returns the result.
func sphFlowOnce(t *testing.T, b backend.Backend, fn backend.SphereFlowFunc, x0, v0 *tensor.Tensor, hs ...float64) (x1, v1 *tensor.Tensor) {
	t.Helper()
	x, v := upload(t, b, x0), upload(t, b, v0)
	defer b.Free(x)
	defer b.Free(v)
	for _, h := range hs {
		if err := fn(b, x, v, h); err != nil {
			t.Fatal(err)
		}
	}
	return download(t, b, x), download(t, b, v)
}

// sphMaxDiff returns max |a−b| over x and over v/scale.
func sphMaxDiff(xa, va, xb, vb *tensor.Tensor, scale float64) float64 {
	d := 0.0
	xah, xbh, vah, vbh := xa.Storage().Host(), xb.Storage().Host(), va.Storage().Host(), vb.Storage().Host()
	for i := range xah {
		d = max(d, math.Abs(xah[i]-xbh[i]), math.Abs(vah[i]-vbh[i])/scale)
	}
	return d
}

// sphTestFlowGroup: Flow(h₁)∘Flow(h₂) = Flow(h₁+h₂) and Flow(−h)∘Flow(h) = id.
func sphTestFlowGroup(t *testing.T, b backend.Backend) {
	c := rng.Counter{Seed: 2, Stream: 100}
	for _, n := range []int{3, 100} {
		shape := tensor.Shape{Batch: 2, Rows: 8, Cols: n}
		for _, impl := range sphImpls(backend.SphereFlowOp, backend.SphereFlow, b, shape) {
			var me sphMaxErr
			for _, speed := range []float64{1e-12, 1, 1e3} {
				// (θ₁, θ₂) are the rotation angles αh₁, αh₂; the last pair is a long, backwards-and-forwards run
				for _, th := range [][2]float64{{0.37, 1.21}, {-2.5, 0.8}, {50, -20}} {
					c = c.Advance(1 << 20)
					x0, v0 := sphState(c, 2, 8, n, func(int) float64 { return speed })
					h1, h2 := th[0]/speed, th[1]/speed
					xa, va := sphFlowOnce(t, b, impl.fn, x0, v0, h1, h2)
					xb, vb := sphFlowOnce(t, b, impl.fn, x0, v0, h1+h2)
					xc, vc := sphFlowOnce(t, b, impl.fn, x0, v0, h1, -h1)
					// 1e-12 for angles of order one; the phase error grows like ulp·α(|h₁|+|h₂|)
					tol := 1e-12 * max(1, (math.Abs(th[0])+math.Abs(th[1]))/4)
					eComp := sphMaxDiff(xa, va, xb, vb, speed)
					eInv := sphMaxDiff(xc, vc, x0, v0, speed)
					me.add("compose", eComp)
					me.add("inverse", eInv)
					if eComp > tol || eInv > tol {
						t.Errorf("%s n=%d ‖v‖=%g θ=%v: |Flow(h1)Flow(h2)−Flow(h1+h2)|=%.2e |Flow(−h)Flow(h)−id|=%.2e, tol %.0e",
							impl.name, n, speed, th, eComp, eInv, tol)
					}
				}
			}
			t.Logf("%s n=%d max:%v", impl.name, n, &me)
		}
	}
}

// sphTestFlowPeriod: Flow(2π/‖v‖) returns the state to itself within 1e-12.
func sphTestFlowPeriod(t *testing.T, b backend.Backend) {
	c := rng.Counter{Seed: 3, Stream: 100}
	for _, n := range []int{2, 3, 100, 5000} {
		k := max(1, min(16, 20000/n))
		shape := tensor.Shape{Batch: 1, Rows: k, Cols: n}
		for _, impl := range sphImpls(backend.SphereFlowOp, backend.SphereFlow, b, shape) {
			for _, speed := range []float64{1e-12, 1, 1e3} {
				c = c.Advance(1 << 20)
				x0, v0 := sphState(c, 1, k, n, func(int) float64 { return speed })
				x1, v1 := sphFlowOnce(t, b, impl.fn, x0, v0, 2*math.Pi/speed)
				// the half period flips the state: Flow(π/α)(x, v) = (−x, −v)
				x2, v2 := sphFlowOnce(t, b, impl.fn, x0, v0, math.Pi/speed)
				for _, h := range []*tensor.Tensor{x2, v2} {
					for i, e := range h.Storage().Host() {
						h.Storage().Host()[i] = -e
					}
				}
				if e, e2 := sphMaxDiff(x1, v1, x0, v0, speed), sphMaxDiff(x2, v2, x0, v0, speed); e > 1e-12 || e2 > 1e-12 {
					t.Errorf("%s n=%d ‖v‖=%g: period error %.2e, half-period error %.2e (tol 1e-12)", impl.name, n, speed, e, e2)
				}
			}
		}
	}
}

// sphTestFlowBatches runs many points at once, each row with its own speed (one α = ‖v_k‖ per sphere).
func sphTestFlowBatches(t *testing.T, b backend.Backend) {
	c := rng.Counter{Seed: 4, Stream: 100}
	for _, s := range []tensor.Shape{{Batch: 1, Rows: 10000, Cols: 3}, {Batch: 100, Rows: 50, Cols: 20}} {
		for _, impl := range sphImpls(backend.SphereFlowOp, backend.SphereFlow, b, s) {
			c = c.Advance(1 << 24)
			// speeds from 1e-3 to 1e3, and every 7th row at rest
			speed := func(r int) float64 {
				if r%7 == 0 {
					return 0
				}
				return math.Pow(10, float64(r%13)/2-3)
			}
			x0, v0 := sphState(c, s.Batch, s.Rows, s.Cols, speed)
			const h = 0.7
			x1, v1 := sphFlowOnce(t, b, impl.fn, x0, v0, h)
			worst, worstNorm := 0.0, 0.0
			for r := 0; r < sphNrows(x0); r++ {
				xr, vr := append([]float64(nil), sphRow(x0, r)...), append([]float64(nil), sphRow(v0, r)...)
				a := sphNormH(vr)
				sphFlowH(xr, vr, h)
				xb, vb := sphRow(x1, r), sphRow(v1, r)
				for j := range xr {
					d := math.Abs(xb[j] - xr[j])
					if a > 0 {
						d = max(d, math.Abs(vb[j]-vr[j])/a)
					} else if math.Float64bits(xb[j]) != math.Float64bits(xr[j]) || vb[j] != vr[j] {
						d = math.Inf(1)
					}
					worst = max(worst, d/(1+a*h))
				}
				worstNorm = max(worstNorm, math.Abs(sphNormH(xb)-1))
			}
			if worst > 1e-13 || worstNorm > 2e-14 {
				t.Errorf("%s %v: worst error vs float64 flow %.2e (tol 1e-13·(1+αh)), |‖x‖−1| %.2e (tol 2e-14)",
					impl.name, s, worst, worstNorm)
			}
			t.Logf("%s %v: worst error vs float64 flow %.2e·(1+αh), |‖x‖−1| %.2e", impl.name, s, worst, worstNorm)
		}
	}
}

// sphTestFlowLongRun is the long-run invariant: ‖x‖ = 1 and xᵀv = 0 after 1e6 flow steps of random length on a
// few points, with the backend's best implementation. With SphereNormalize every 100 steps the
// deviation stays at rounding level; without it the drift is reported and must stay ≤ 1e-11.
func sphTestFlowLongRun(t *testing.T, b backend.Backend) {
	const k, n = 4, 3
	s := tensor.Shape{Batch: 1, Rows: k, Cols: n}
	fn, name := backend.SphereFlowOp.Select(b, s)
	steps := 1000000
	if name == "reference" || testing.Short() {
		steps = 10000 // the reference makes a dozen primitive calls per step
	}
	hs := make([]float64, 997)
	rng.Counter{Seed: 5, Stream: 200}.FillUniform(hs)
	for i := range hs {
		hs[i] = 0.02 + 0.2*hs[i] // angles 0.02–0.22 rad at speed 1
	}
	speed := func(r int) float64 { return 0.5 + float64(r)/2 }
	x0, v0 := sphState(rng.Counter{Seed: 5, Stream: 201}, 1, k, n, speed)
	dev := func(x, v *tensor.Tensor) (eNorm, eTan, eSpeed float64) {
		for r := 0; r < k; r++ {
			xr, vr := sphRow(x, r), sphRow(v, r)
			a := speed(r)
			eNorm = max(eNorm, math.Abs(sphNormH(xr)-1))
			eTan = max(eTan, math.Abs(sphDotH(xr, vr))/a)
			eSpeed = max(eSpeed, math.Abs(sphNormH(vr)-a)/a)
		}
		return
	}
	for _, renorm := range []bool{true, false} {
		x, v := upload(t, b, x0), upload(t, b, v0)
		var wn, wt, ws float64
		for i := 0; i < steps; i++ {
			if err := fn(b, x, v, hs[i%len(hs)]); err != nil {
				t.Fatal(err)
			}
			if (i+1)%100 == 0 && (renorm || (i+1)%10000 == 0) {
				en, et, es := dev(download(t, b, x), download(t, b, v)) // worst point: just before renormalising
				wn, wt, ws = max(wn, en), max(wt, et), max(ws, es)
				if renorm {
					if err := backend.SphereNormalize(b, x, v); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		en, et, es := dev(download(t, b, x), download(t, b, v))
		wn, wt, ws = max(wn, en), max(wt, et), max(ws, es)
		b.Free(x)
		b.Free(v)
		t.Logf("%s, %d steps, renormalise every 100: %v: max |‖x‖−1| %.2e, |xᵀv|/‖v‖ %.2e, |Δ‖v‖|/‖v‖ %.2e; final %.2e %.2e %.2e",
			name, steps, renorm, wn, wt, ws, en, et, es)
		tol := 1e-11
		if renorm {
			tol = 1e-14 // 100 steps of rounding at most
		}
		if wn > tol || wt > tol {
			t.Errorf("%s renormalise=%v: drift |‖x‖−1| %.2e, |xᵀv|/‖v‖ %.2e over %d steps, tol %.0e", name, renorm, wn, wt, steps, tol)
		}
		if ws > 1e-11 {
			t.Errorf("%s renormalise=%v: speed drift %.2e, tol 1e-11", name, renorm, ws)
		}
	}
}

// --- projection and normalisation ---------------------------------------------------------------------------------

// sphTestProject: Λ(x)Λ(x)w = Λ(x)w and xᵀΛ(x)w = 0 per row, against the float64 projection,
// with dst separate from w and aliasing it.
func sphTestProject(t *testing.T, b backend.Backend) {
	c := rng.Counter{Seed: 6, Stream: 100}
	for _, n := range []int{2, 3, 100, 5000} {
		k := max(2, min(64, 20000/n))
		shape := tensor.Shape{Batch: 3, Rows: k, Cols: n}
		for _, impl := range sphImpls(backend.SphereProjectOp, backend.SphereProject, b, shape) {
			var me sphMaxErr
			c = c.Advance(1 << 22)
			x0, _ := sphState(c, 3, k, n, func(int) float64 { return 0 })
			w0 := tensor.NewHost(3, k, n)
			c.Advance(1 << 21).FillNormal(w0.Storage().Host())
			for r := 0; r < sphNrows(w0); r++ { // scales 1e-3 … 1e3, and a component along x
				wr := sphRow(w0, r)
				sc := math.Pow(10, float64(r%7)-3)
				for j := range wr {
					wr[j] = sc * (wr[j] + 3*sphRow(x0, r)[j])
				}
			}
			x, w := upload(t, b, x0), upload(t, b, w0)
			dst, err := b.Alloc(shape)
			if err != nil {
				t.Fatal(err)
			}
			if err := impl.fn(b, dst, x, w); err != nil {
				t.Fatal(err)
			}
			p1 := download(t, b, dst)
			if err := impl.fn(b, dst, x, dst); err != nil { // idempotence, in place
				t.Fatal(err)
			}
			p2 := download(t, b, dst)
			if err := impl.fn(b, w, x, w); err != nil { // dst aliasing w
				t.Fatal(err)
			}
			p3 := download(t, b, w)
			for _, d := range []*tensor.Tensor{x, w, dst} {
				b.Free(d)
			}
			for r := 0; r < sphNrows(w0); r++ {
				xr, wr := sphRow(x0, r), sphRow(w0, r)
				nw := sphNormH(wr)
				ref := append([]float64(nil), wr...)
				sphProjectH(xr, ref)
				a, a2, a3 := sphRow(p1, r), sphRow(p2, r), sphRow(p3, r)
				eTan := math.Abs(sphDotH(xr, a)) / nw
				eIdem, eRef, eAlias := 0.0, 0.0, 0.0
				for j := range a {
					eIdem = max(eIdem, math.Abs(a2[j]-a[j])/nw)
					eRef = max(eRef, math.Abs(a[j]-ref[j])/nw)
					eAlias = max(eAlias, math.Abs(a3[j]-a[j])/nw)
				}
				me.add("tangent", eTan)
				me.add("idempotent", eIdem)
				me.add("vsref", eRef)
				me.add("alias", eAlias)
				// 1e-15·‖w‖ for xᵀΛw; the elementwise checks allow a few ulps of ‖w‖
				if eTan > 1e-15 || eIdem > 1e-15 || eRef > 1e-15 || eAlias > 1e-15 {
					t.Errorf("%s n=%d row %d: |xᵀΛw|/‖w‖=%.2e idempotence %.2e vs float64 %.2e alias %.2e (tol 1e-15)",
						impl.name, n, r, eTan, eIdem, eRef, eAlias)
					break
				}
			}
			t.Logf("%s n=%d max:%v", impl.name, n, &me)
		}
	}
}

// sphTestNormalize checks SphereNormalize: unit rows, re-projected velocity, direction kept; v may be nil.
func sphTestNormalize(t *testing.T, b backend.Backend) {
	c := rng.Counter{Seed: 7, Stream: 100}
	for _, n := range []int{2, 3, 100, 5000} {
		k := max(2, min(64, 20000/n))
		shape := tensor.Shape{Batch: 2, Rows: k, Cols: n}
		for _, impl := range sphImpls(backend.SphereNormalizeOp, backend.SphereNormalize, b, shape) {
			var me sphMaxErr
			c = c.Advance(1 << 22)
			x0, v0 := tensor.NewHost(2, k, n), tensor.NewHost(2, k, n)
			c.FillNormal(x0.Storage().Host())
			c.Advance(1 << 21).FillNormal(v0.Storage().Host())
			for r := 0; r < sphNrows(x0); r++ {
				xr := sphRow(x0, r)
				sc := math.Pow(10, float64(r%9)-4)
				for j := range xr {
					xr[j] *= sc
				}
			}
			for _, withV := range []bool{true, false} {
				x, v := upload(t, b, x0), upload(t, b, v0)
				vv := v
				if !withV {
					vv = nil
				}
				if err := impl.fn(b, x, vv); err != nil {
					t.Fatal(err)
				}
				x1, v1 := download(t, b, x), download(t, b, v)
				b.Free(x)
				b.Free(v)
				for r := 0; r < sphNrows(x0); r++ {
					xr, xa := sphRow(x0, r), sphRow(x1, r)
					nx := sphNormH(xr)
					eNorm := math.Abs(sphNormH(xa) - 1)
					eDir := 0.0
					for j := range xr {
						eDir = max(eDir, math.Abs(xa[j]-xr[j]/nx))
					}
					me.add("norm", eNorm)
					me.add("vsref", eDir)
					bad := eNorm > 1e-15*max(1, math.Sqrt(float64(n))/10) || eDir > 1e-15
					if withV {
						vr, va := sphRow(v0, r), sphRow(v1, r)
						ref := append([]float64(nil), vr...)
						u := make([]float64, n)
						for j := range u {
							u[j] = xr[j] / nx
						}
						sphProjectH(u, ref)
						nv := sphNormH(vr)
						eTan := math.Abs(sphDotH(xa, va)) / nv
						eV := 0.0
						for j := range ref {
							eV = max(eV, math.Abs(va[j]-ref[j])/nv)
						}
						me.add("tangent", eTan)
						me.add("v-vsref", eV)
						bad = bad || eTan > 1e-15 || eV > 1e-15
					} else if !sphBitsEqual(v1, v0) {
						t.Errorf("%s n=%d: v changed with v = nil", impl.name, n)
					}
					if bad {
						t.Errorf("%s n=%d row %d withV=%v: errors%v", impl.name, n, r, withV, &me)
						break
					}
				}
			}
			// |‖x‖−1| ≤ 1e-15·max(1, √n/10): the row sum of squares carries about √n ulps of rounding
			t.Logf("%s n=%d max:%v", impl.name, n, &me)
		}
	}
}

// sphTestStrided runs every implementation on non-contiguous views (padded rows and batches) and checks that the
// padding is not touched and the result matches the contiguous float64 code.
func sphTestStrided(t *testing.T, b backend.Backend) {
	const batch, k, n = 3, 7, 5
	const pad = 777.0
	s := tensor.Shape{Batch: batch, Rows: k, Cols: n}
	x0, v0 := sphState(rng.Counter{Seed: 8, Stream: 100}, batch, k, n, func(r int) float64 { return 0.3 + 0.1*float64(r) })
	w0 := tensor.NewHost(batch, k, n)
	rng.Counter{Seed: 8, Stream: 101}.FillNormal(w0.Storage().Host())
	// view puts h into rows 1…k, columns 2…n+1 of a padded (k+2)×(n+3) allocation filled with pad
	view := func(h *tensor.Tensor) (full, v *tensor.Tensor) {
		ph := tensor.NewHost(batch, k+2, n+3)
		for i := range ph.Storage().Host() {
			ph.Storage().Host()[i] = pad
		}
		full = upload(t, b, ph)
		v = full.Slice(1, k+1, 2, n+2)
		if err := b.Upload(v, h); err != nil {
			t.Fatal(err)
		}
		return full, v
	}
	padOK := func(full *tensor.Tensor) bool {
		h := download(t, b, full)
		for bb := 0; bb < batch; bb++ {
			for i := 0; i < k+2; i++ {
				for j := 0; j < n+3; j++ {
					if (i < 1 || i > k || j < 2 || j > n+1) && h.At(bb, i, j) != pad {
						return false
					}
				}
			}
		}
		return true
	}
	check := func(name string, got, want *tensor.Tensor, scale float64) {
		g := download(t, b, got)
		e := 0.0
		for i, w := range want.Storage().Host() {
			e = max(e, math.Abs(g.Storage().Host()[i]-w)/scale)
		}
		if e > 1e-14 {
			t.Errorf("%s strided: error %.2e vs float64 (tol 1e-14)", name, e)
		}
	}
	// expected results, contiguous float64
	xf, vf := x0.Clone(), v0.Clone()
	wp := w0.Clone()
	for r := 0; r < batch*k; r++ {
		sphFlowH(sphRow(xf, r), sphRow(vf, r), 0.9)
		sphProjectH(sphRow(x0, r), sphRow(wp, r))
	}
	for _, impl := range sphImpls(backend.SphereFlowOp, backend.SphereFlow, b, s) {
		fx, x := view(x0)
		fv, v := view(v0)
		if err := impl.fn(b, x, v, 0.9); err != nil {
			t.Fatalf("%s: %v", impl.name, err)
		}
		check(impl.name+" x", x, xf, 1)
		check(impl.name+" v", v, vf, 1)
		if !padOK(fx) || !padOK(fv) {
			t.Errorf("%s wrote outside the view", impl.name)
		}
	}
	for _, impl := range sphImpls(backend.SphereProjectOp, backend.SphereProject, b, s) {
		_, x := view(x0)
		_, w := view(w0)
		fd, d := view(w0)
		if err := impl.fn(b, d, x, w); err != nil {
			t.Fatalf("%s: %v", impl.name, err)
		}
		check(impl.name, d, wp, 1)
		if !padOK(fd) {
			t.Errorf("%s wrote outside the view", impl.name)
		}
	}
	for _, impl := range sphImpls(backend.SphereNormalizeOp, backend.SphereNormalize, b, s) {
		xs := x0.Clone()
		for i := range xs.Storage().Host() {
			xs.Storage().Host()[i] *= 3
		}
		fx, x := view(xs)
		fw, w := view(w0)
		if err := impl.fn(b, x, w); err != nil {
			t.Fatalf("%s: %v", impl.name, err)
		}
		check(impl.name+" x", x, x0, 1)
		check(impl.name+" v", w, wp, 1)
		if !padOK(fx) || !padOK(fw) {
			t.Errorf("%s wrote outside the view", impl.name)
		}
	}
}

// sphTestBadInput: mismatched, nil and broadcast operands give ErrShape (a non-finite step ErrDomain) from every
// implementation, and leave the outputs untouched.
func sphTestBadInput(t *testing.T, b backend.Backend) {
	s := tensor.Shape{Batch: 2, Rows: 3, Cols: 4}
	x0, v0 := sphState(rng.Counter{Seed: 9, Stream: 100}, 2, 3, 4, func(int) float64 { return 1 })
	alloc := func(s tensor.Shape) *tensor.Tensor {
		d, err := b.Alloc(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	wrongCols, wrongBatch := alloc(tensor.Shape{Batch: 2, Rows: 3, Cols: 5}), alloc(tensor.Shape{Batch: 1, Rows: 3, Cols: 4})
	bcast := alloc(tensor.Shape{Batch: 1, Rows: 3, Cols: 4}).Broadcast(2)
	// expect calls f and checks its error and that the tensors outs are bit-identical before and after.
	expect := func(name string, want error, f func() error, outs ...*tensor.Tensor) {
		t.Helper()
		before := make([]*tensor.Tensor, len(outs))
		for i, o := range outs {
			before[i] = download(t, b, o)
		}
		if err := f(); !errors.Is(err, want) {
			t.Errorf("%s: error %v, want %v", name, err, want)
		}
		for i, o := range outs {
			if !sphBitsEqual(download(t, b, o), before[i]) {
				t.Errorf("%s: operand %d modified on error", name, i)
			}
		}
	}
	for _, impl := range sphImpls(backend.SphereFlowOp, backend.SphereFlow, b, s) {
		x, v := upload(t, b, x0), upload(t, b, v0)
		expect(impl.name+" flow v cols", backend.ErrShape, func() error { return impl.fn(b, x, wrongCols, 1) }, x)
		expect(impl.name+" flow v batch", backend.ErrShape, func() error { return impl.fn(b, x, wrongBatch, 1) }, x)
		expect(impl.name+" flow nil v", backend.ErrShape, func() error { return impl.fn(b, x, nil, 1) }, x)
		expect(impl.name+" flow nil x", backend.ErrShape, func() error { return impl.fn(b, nil, v, 1) }, v)
		expect(impl.name+" flow broadcast x", backend.ErrShape, func() error { return impl.fn(b, bcast, v, 1) }, v)
		expect(impl.name+" flow NaN h", backend.ErrDomain, func() error { return impl.fn(b, x, v, math.NaN()) }, x, v)
		expect(impl.name+" flow Inf h", backend.ErrDomain, func() error { return impl.fn(b, x, v, math.Inf(1)) }, x, v)
	}
	for _, impl := range sphImpls(backend.SphereProjectOp, backend.SphereProject, b, s) {
		x, w := upload(t, b, x0), upload(t, b, v0)
		dst := upload(t, b, v0)
		expect(impl.name+" project dst cols", backend.ErrShape, func() error { return impl.fn(b, wrongCols, x, w) }, x, w)
		expect(impl.name+" project w batch", backend.ErrShape, func() error { return impl.fn(b, dst, x, wrongBatch) }, dst, x)
		expect(impl.name+" project x batch", backend.ErrShape, func() error { return impl.fn(b, dst, wrongBatch, w) }, dst, w)
		expect(impl.name+" project nil x", backend.ErrShape, func() error { return impl.fn(b, dst, nil, w) }, dst, w)
		expect(impl.name+" project broadcast dst", backend.ErrShape, func() error { return impl.fn(b, bcast, x, w) }, x, w)
	}
	for _, impl := range sphImpls(backend.SphereNormalizeOp, backend.SphereNormalize, b, s) {
		x, v := upload(t, b, x0), upload(t, b, v0)
		expect(impl.name+" normalize v cols", backend.ErrShape, func() error { return impl.fn(b, x, wrongCols) }, x)
		expect(impl.name+" normalize nil x", backend.ErrShape, func() error { return impl.fn(b, nil, v) }, v)
		expect(impl.name+" normalize broadcast v", backend.ErrShape, func() error { return impl.fn(b, x, bcast) }, x)
	}
}

// --- benchmarks -----------------------------------------------------------------------------------------------

// benchSphere measures the sphere operations at 1e3, 1e5 and 1e7 elements per operand. GB/s counts the state
// bytes each call must read and write once: flow and normalize (x, v) 4·8N, project (x, w → dst) 3·8N.
func benchSphere(b *testing.B, be backend.Backend) {
	sizes := []struct {
		name string
		s    tensor.Shape
	}{
		{"small", tensor.Shape{Batch: 1, Rows: 100, Cols: 10}},
		{"medium", tensor.Shape{Batch: 10, Rows: 100, Cols: 100}},
		{"large", tensor.Shape{Batch: 10, Rows: 1000, Cols: 1000}},
	}
	state := func(b *testing.B, s tensor.Shape) (x, v *tensor.Tensor) {
		var err error
		if x, err = be.Alloc(s); err != nil {
			b.Skip(err)
		}
		if v, err = be.Alloc(s); err != nil {
			b.Skip(err)
		}
		if err := be.FillNormal(x, rng.Counter{Seed: 1}); err != nil {
			b.Fatal(err)
		}
		if err := be.FillNormal(v, rng.Counter{Seed: 2}); err != nil {
			b.Fatal(err)
		}
		if err := backend.SphereNormalize(be, x, v); err != nil {
			b.Fatal(err)
		}
		return x, v
	}
	report := func(b *testing.B, bytes int) {
		if err := be.Sync(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(bytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	}
	for _, sz := range sizes {
		n := sz.s.Len()
		b.Run("flow/"+sz.name, func(b *testing.B) {
			x, v := state(b, sz.s)
			defer be.Free(x)
			defer be.Free(v)
			b.ResetTimer()
			for range b.N {
				if err := backend.SphereFlow(be, x, v, 1e-3); err != nil {
					b.Fatal(err)
				}
			}
			report(b, 32*n)
		})
		if sz.name != "large" {
			b.Run("flow-reference/"+sz.name, func(b *testing.B) {
				x, v := state(b, sz.s)
				defer be.Free(x)
				defer be.Free(v)
				ref := backend.SphereFlowOp.Reference()
				b.ResetTimer()
				for range b.N {
					if err := ref(be, x, v, 1e-3); err != nil {
						b.Fatal(err)
					}
				}
				report(b, 32*n)
			})
		}
		b.Run("project/"+sz.name, func(b *testing.B) {
			x, w := state(b, sz.s)
			defer be.Free(x)
			defer be.Free(w)
			b.ResetTimer()
			for range b.N {
				if err := backend.SphereProject(be, w, x, w); err != nil {
					b.Fatal(err)
				}
			}
			report(b, 24*n)
		})
		b.Run("normalize/"+sz.name, func(b *testing.B) {
			x, v := state(b, sz.s)
			defer be.Free(x)
			defer be.Free(v)
			b.ResetTimer()
			for range b.N {
				if err := backend.SphereNormalize(be, x, v); err != nil {
					b.Fatal(err)
				}
			}
			report(b, 32*n)
		})
	}
}
