package manifold_test

import (
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/manifold"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// The manifold properties are checked on the test backend (the CPU unless $GEOVB_BACKEND names another) against independent float64 code written with gonum on
// the host (explicit formulas, mat.Inverse instead of Cholesky solves). Tolerances are stated at each check.

// newBackend is the test backend (internal/testbackend: $GEOVB_BACKEND, else the CPU), so that a GPU run checks
// the manifolds there.
func newBackend(t testing.TB) backend.Backend { return testbackend.Open(t) }

type fixture struct {
	name string
	m    manifold.Manifold
}

func must[M any](m M, err error) M {
	if err != nil {
		panic(err)
	}
	return m
}

func fixtures() []fixture {
	return []fixture{
		{"euclidean", must(manifold.NewEuclidean(4, 3))},
		{"sphere-exp", must(manifold.NewSphere(5, 3))},
		{"sphere-proj", must(manifold.NewSphere(3, 10, manifold.WithRetraction(manifold.ProjectionRetraction)))},
		{"sphere-S1", must(manifold.NewSphere(1, 2))},
		{"stiefel-6x3", must(manifold.NewStiefel(6, 3))},
		{"stiefel-4x4", must(manifold.NewStiefel(4, 4))},
		{"stiefel-7x1", must(manifold.NewStiefel(7, 1))},
		{"spd-4", must(manifold.NewSPD(4))},
		{"spd-1", must(manifold.NewSPD(1))},
		{"spd-5-proj", must(manifold.NewSPD(5, manifold.WithTransport(manifold.ProjectionTransport)))},
	}
}

// --- host helpers ---------------------------------------------------------------------------------------------

func alloc(t testing.TB, b backend.Backend, s tensor.Shape) *tensor.Tensor {
	t.Helper()
	return testbackend.Alloc(t, b, s.Batch, s.Rows, s.Cols)
}

func down(t testing.TB, b backend.Backend, x *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	return testbackend.Download(t, b, x)
}

func ok(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// frob returns ‖a‖_F of batch item k.
func frob(a *tensor.Tensor, k int) float64 { return mat.Norm(a.Dense(k), 2) }

// diffNorm returns ‖a − b‖_F of batch item k.
func diffNorm(a, b *tensor.Tensor, k int) float64 {
	var d mat.Dense
	d.Sub(a.Dense(k), b.Dense(k))
	return mat.Norm(&d, 2)
}

func frobDot(a, b mat.Matrix) float64 {
	r, c := a.Dims()
	s := 0.0
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			s += a.At(i, j) * b.At(i, j)
		}
	}
	return s
}

// pointErr measures how far batch item k of x is from the manifold.
func pointErr(m manifold.Manifold, x *tensor.Tensor, k int) float64 {
	X := x.Dense(k)
	r, c := X.Dims()
	switch m.(type) {
	case *manifold.Sphere:
		e := 0.0
		for i := 0; i < r; i++ {
			e = max(e, math.Abs(mat.Norm(X.RowView(i), 2)-1))
		}
		return e
	case *manifold.Stiefel:
		var g mat.Dense
		g.Mul(X.T(), X)
		e := 0.0
		for i := 0; i < c; i++ {
			for j := 0; j < c; j++ {
				want := 0.0
				if i == j {
					want = 1
				}
				e = max(e, math.Abs(g.At(i, j)-want))
			}
		}
		return e
	case *manifold.SPD:
		e := 0.0
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				e = max(e, math.Abs(X.At(i, j)-X.At(j, i)))
			}
		}
		var ch mat.Cholesky
		if !ch.Factorize(mat.NewSymDense(r, mat.DenseCopyOf(X).RawMatrix().Data)) {
			return math.Inf(1)
		}
		return e
	}
	return 0
}

// tangentErr measures how far batch item k of v is from the tangent space at x, relative to ‖v‖.
func tangentErr(m manifold.Manifold, x, v *tensor.Tensor, k int) float64 {
	X, V := x.Dense(k), v.Dense(k)
	r, c := X.Dims()
	nv := max(frob(v, k), 1e-300)
	e := 0.0
	switch m.(type) {
	case *manifold.Sphere:
		for i := 0; i < r; i++ {
			e = max(e, math.Abs(mat.Dot(X.RowView(i), V.RowView(i))))
		}
	case *manifold.Stiefel:
		var a mat.Dense
		a.Mul(X.T(), V) // XᵀV + VᵀX = A + Aᵀ
		for i := 0; i < c; i++ {
			for j := 0; j < c; j++ {
				e = max(e, math.Abs(a.At(i, j)+a.At(j, i)))
			}
		}
	case *manifold.SPD:
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				e = max(e, math.Abs(V.At(i, j)-V.At(j, i)))
			}
		}
	}
	return e / nv
}

// rgradRef is the Riemannian gradient from the explicit formulas.
func rgradRef(m manifold.Manifold, x, g *tensor.Tensor, k int) *mat.Dense {
	X, G := x.Dense(k), g.Dense(k)
	r, c := X.Dims()
	out := mat.NewDense(r, c, nil)
	switch m.(type) {
	case *manifold.Euclidean:
		out.Copy(G)
	case *manifold.Sphere: // Λ(x)g row by row
		for i := 0; i < r; i++ {
			d := mat.Dot(X.RowView(i), G.RowView(i))
			for j := 0; j < c; j++ {
				out.Set(i, j, G.At(i, j)-d*X.At(i, j))
			}
		}
	case *manifold.Stiefel: // (I − XXᵀ)G + X skew(XᵀG), paper 000 eq. (3.5)
		var xxt, p, xtg, sk, xs mat.Dense
		xxt.Mul(X, X.T())
		id := mat.NewDiagDense(r, nil)
		for i := 0; i < r; i++ {
			id.SetDiag(i, 1)
		}
		p.Sub(id, &xxt)
		out.Mul(&p, G)
		xtg.Mul(X.T(), G)
		sk.Sub(&xtg, xtg.T())
		sk.Scale(0.5, &sk)
		xs.Mul(X, &sk)
		out.Add(out, &xs)
	case *manifold.SPD: // Σ sym(G) Σ
		var s, t mat.Dense
		s.Add(G, G.T())
		s.Scale(0.5, &s)
		t.Mul(X, &s)
		out.Mul(&t, X)
	}
	return out
}

// innerRef is the metric from its definition; for SPD with an explicit inverse: tr(Σ⁻¹UΣ⁻¹V).
func innerRef(t testing.TB, m manifold.Manifold, x, u, v *tensor.Tensor, k int) float64 {
	if _, ok := m.(*manifold.SPD); !ok {
		return frobDot(u.Dense(k), v.Dense(k))
	}
	var si, a, c, p mat.Dense
	if err := si.Inverse(x.Dense(k)); err != nil {
		t.Fatal(err)
	}
	a.Mul(&si, u.Dense(k))
	c.Mul(&si, v.Dense(k))
	p.Mul(&a, &c)
	return mat.Trace(&p)
}

// --- properties -------------------------------------------------------------------------------------------------

type state struct {
	b       backend.Backend
	m       manifold.Manifold
	s       tensor.Shape
	x, xi   *tensor.Tensor // device point and unit tangent vector (‖ξ‖_F = 1 per batch item)
	xh, xih *tensor.Tensor // host copies
}

func newState(t *testing.T, b backend.Backend, m manifold.Manifold, batch int, seed uint64) *state {
	s := m.PointShape(batch)
	st := &state{b: b, m: m, s: s, x: alloc(t, b, s), xi: alloc(t, b, s)}
	ok(t, m.RandomPoint(b, st.x, rng.Counter{Seed: seed, Stream: 1}))
	ok(t, m.RandomTangent(b, st.xi, st.x, rng.Counter{Seed: seed, Stream: 2}))
	st.xh = down(t, b, st.x)
	xih := down(t, b, st.xi)
	for k := 0; k < batch; k++ { // unit Frobenius norm
		d := xih.Dense(k)
		d.Scale(1/frob(xih, k), d)
	}
	ok(t, b.Upload(st.xi, xih))
	st.xih = xih
	return st
}

func TestDims(t *testing.T) {
	want := map[string]int{"euclidean": 12, "sphere-exp": 10, "sphere-proj": 27, "sphere-S1": 1, "stiefel-6x3": 12,
		"stiefel-4x4": 6, "stiefel-7x1": 6, "spd-4": 10, "spd-1": 1, "spd-5-proj": 15}
	for _, f := range fixtures() {
		if f.m.Dim() != want[f.name] {
			t.Errorf("%s: Dim %d, want %d", f.m.Name(), f.m.Dim(), want[f.name])
		}
	}
}

// TestRandom: random points lie on the manifold, random tangents in the tangent space (1e-14).
func TestRandom(t *testing.T) {
	b := newBackend(t)
	for _, f := range fixtures() {
		st := newState(t, b, f.m, 4, 11)
		v := alloc(t, b, st.s)
		ok(t, f.m.RandomTangent(b, v, st.x, rng.Counter{Seed: 3}))
		vh := down(t, b, v)
		for k := 0; k < 4; k++ {
			if e := pointErr(f.m, st.xh, k); e > 1e-14 {
				t.Errorf("%s: random point %d off the manifold by %.2e (tol 1e-14)", f.name, k, e)
			}
			if e := tangentErr(f.m, st.xh, vh, k); e > 1e-14 {
				t.Errorf("%s: random tangent %d not tangent: %.2e (tol 1e-14)", f.name, k, e)
			}
		}
		if diffNorm(st.xh, down(t, b, st.x), 0) != 0 {
			t.Errorf("%s: RandomTangent changed x", f.name)
		}
	}
}

// TestProject: Project lands in the tangent space, is idempotent, fixes tangent vectors and matches the explicit
// formula (1e-14 relative to ‖u‖).
func TestProject(t *testing.T) {
	b := newBackend(t)
	for _, f := range fixtures() {
		st := newState(t, b, f.m, 3, 21)
		u, p, pp, q := alloc(t, b, st.s), alloc(t, b, st.s), alloc(t, b, st.s), alloc(t, b, st.s)
		ok(t, b.FillNormal(u, rng.Counter{Seed: 22}))
		ok(t, f.m.Project(b, p, st.x, u))
		ok(t, f.m.Project(b, pp, st.x, p))
		ok(t, f.m.Project(b, q, st.x, st.xi))
		uh, ph, pph, qh := down(t, b, u), down(t, b, p), down(t, b, pp), down(t, b, q)
		for k := 0; k < 3; k++ {
			nu := frob(uh, k)
			eTan := tangentErr(f.m, st.xh, ph, k)
			eIdem := diffNorm(pph, ph, k) / nu
			eFix := diffNorm(qh, st.xih, k)
			var ref *mat.Dense
			if _, isSPD := f.m.(*manifold.SPD); isSPD { // the projection onto symmetric matrices
				ref = mat.NewDense(st.s.Rows, st.s.Cols, nil)
				ref.Add(uh.Dense(k), uh.Dense(k).T())
				ref.Scale(0.5, ref)
			} else {
				ref = rgradRef(f.m, st.xh, uh, k)
			}
			var d mat.Dense
			d.Sub(ph.Dense(k), ref)
			eRef := mat.Norm(&d, 2) / nu
			if k == 0 {
				t.Logf("%s: tangency %.2e, idempotence %.2e, tangent fixed %.2e, vs formula %.2e", f.name, eTan, eIdem, eFix, eRef)
			}
			if eTan > 1e-14 || eIdem > 1e-14 || eFix > 1e-14 || eRef > 1e-14 {
				t.Errorf("%s item %d: tangency %.2e, idempotence %.2e, tangent fixed %.2e, vs formula %.2e (tol 1e-14)",
					f.name, k, eTan, eIdem, eFix, eRef)
			}
		}
		// in place (dst aliasing u)
		ok(t, f.m.Project(b, u, st.x, u))
		if e := diffNorm(down(t, b, u), ph, 0); e > 1e-15*frob(uh, 0) {
			t.Errorf("%s: in-place projection differs by %.2e", f.name, e)
		}
	}
}

// TestRiemannianGrad: the gradient matches the explicit formula and satisfies ⟨rgrad, ξ⟩_x = ⟨egrad, ξ⟩_F for
// tangent ξ (paper 000 Lemma 3.2), both to 1e-12 relative.
func TestRiemannianGrad(t *testing.T) {
	b := newBackend(t)
	for _, f := range fixtures() {
		const batch = 3
		st := newState(t, b, f.m, batch, 31)
		g, rg, ip := alloc(t, b, st.s), alloc(t, b, st.s), alloc(t, b, tensor.Shape{Batch: batch, Rows: 1, Cols: 1})
		ok(t, b.FillNormal(g, rng.Counter{Seed: 32}))
		ok(t, f.m.RiemannianGrad(b, rg, st.x, g))
		ok(t, f.m.Inner(b, ip, st.x, rg, st.xi))
		gh, rgh, iph := down(t, b, g), down(t, b, rg), down(t, b, ip)
		for k := 0; k < batch; k++ {
			ref := rgradRef(f.m, st.xh, gh, k)
			var d mat.Dense
			d.Sub(rgh.Dense(k), ref)
			eForm := mat.Norm(&d, 2) / mat.Norm(ref, 2)
			euclid := frobDot(gh.Dense(k), st.xih.Dense(k))
			eLemma := math.Abs(iph.At(k, 0, 0)-euclid) / (frob(gh, k) * frob(st.xih, k))
			eTan := tangentErr(f.m, st.xh, rgh, k)
			if k == 0 {
				t.Logf("%s: rgrad vs formula %.2e, Lemma 3.2 %.2e, tangency %.2e", f.name, eForm, eLemma, eTan)
			}
			if eForm > 1e-12 || eLemma > 1e-12 || eTan > 1e-13 {
				t.Errorf("%s item %d: vs formula %.2e, |⟨rgrad,ξ⟩_x − ⟨g,ξ⟩|/(‖g‖‖ξ‖) %.2e (tol 1e-12), tangency %.2e",
					f.name, k, eForm, eLemma, eTan)
			}
		}
	}
}

// TestRetract: R_x(0) = x, R_x(tξ) on the manifold, first order (‖R_x(tξ) − x − tξ‖ = O(t²), ratio 4 when t
// halves: the retractions are first order) and the central difference of t ↦ R_x(tξ) at 0 equal to ξ.
func TestRetract(t *testing.T) {
	b := newBackend(t)
	for _, f := range fixtures() {
		const batch = 2
		st := newState(t, b, f.m, batch, 41)
		r := alloc(t, b, st.s)
		ok(t, f.m.Retract(b, r, st.x, st.xi, 0))
		r0 := down(t, b, r)
		ok(t, f.m.Retract(b, r, st.x, st.xi, 0.7))
		r1 := down(t, b, r)
		ts := []float64{2e-2, 1e-2, 5e-3, 2.5e-3}
		errs := make([][]float64, batch)
		for _, tt := range ts {
			ok(t, f.m.Retract(b, r, st.x, st.xi, tt))
			rh := down(t, b, r)
			for k := 0; k < batch; k++ {
				var d mat.Dense
				d.Sub(rh.Dense(k), st.xh.Dense(k))
				d.Sub(&d, scaled(tt, st.xih.Dense(k)))
				errs[k] = append(errs[k], mat.Norm(&d, 2))
			}
		}
		const h = 1e-4
		ok(t, f.m.Retract(b, r, st.x, st.xi, h))
		rp := down(t, b, r)
		ok(t, f.m.Retract(b, r, st.x, st.xi, -h))
		rm := down(t, b, r)
		for k := 0; k < batch; k++ {
			scale := max(1, frob(st.xh, k))
			if e := diffNorm(r0, st.xh, k); e > 1e-14*scale {
				t.Errorf("%s item %d: ‖R_x(0) − x‖ = %.2e (tol 1e-14·max(1,‖x‖))", f.name, k, e)
			}
			if e := pointErr(f.m, r1, k); e > 1e-13 {
				t.Errorf("%s item %d: R_x(0.7ξ) off the manifold by %.2e (tol 1e-13)", f.name, k, e)
			}
			var cd mat.Dense
			cd.Sub(rp.Dense(k), rm.Dense(k))
			cd.Scale(1/(2*h), &cd)
			cd.Sub(&cd, st.xih.Dense(k))
			if e := mat.Norm(&cd, 2); e > 1e-7 {
				t.Errorf("%s item %d: central difference of R_x(tξ) at 0 differs from ξ by %.2e (tol 1e-7)", f.name, k, e)
			}
			if _, eu := f.m.(*manifold.Euclidean); eu {
				if errs[k][0] > 1e-15 {
					t.Errorf("%s: x + tξ retraction off by %.2e", f.name, errs[k][0])
				}
				continue
			}
			if k == 0 {
				t.Logf("%s: ‖R_x(0)−x‖ %.2e, e(t) for t=%v: %.3e, central difference %.2e", f.name,
					diffNorm(r0, st.xh, k), ts, errs[k], mat.Norm(&cd, 2))
			}
			for i := 0; i+1 < len(ts); i++ {
				ratio := errs[k][i] / errs[k][i+1]
				if ratio < 3.8 || ratio > 4.2 {
					t.Errorf("%s item %d: e(%g)/e(%g) = %.3f, want 4 ± 0.2 (second-order contact); e = %v",
						f.name, k, ts[i], ts[i+1], ratio, errs[k])
				}
			}
		}
		// dst aliasing x and v
		v2 := alloc(t, b, st.s)
		ok(t, b.Copy(v2, st.xi))
		ok(t, f.m.Retract(b, v2, st.x, v2, 0.7))
		x2 := alloc(t, b, st.s)
		ok(t, b.Copy(x2, st.x))
		ok(t, f.m.Retract(b, x2, x2, st.xi, 0.7))
		if e1, e2 := diffNorm(down(t, b, v2), r1, 0), diffNorm(down(t, b, x2), r1, 0); e1 != 0 || e2 != 0 {
			t.Errorf("%s: aliased retraction differs: %.2e, %.2e", f.name, e1, e2)
		}
	}
}

func scaled(a float64, m mat.Matrix) *mat.Dense {
	var d mat.Dense
	d.Scale(a, m)
	return &d
}

// TestTransport: the transported vector is tangent at y, transport to the same point is the identity, and the
// SPD parallel transport is an isometry of the affine-invariant metric (1e-10 relative).
func TestTransport(t *testing.T) {
	b := newBackend(t)
	for _, f := range fixtures() {
		const batch = 3
		st := newState(t, b, f.m, batch, 51)
		y, w, w2, gw, gw2, sw := alloc(t, b, st.s), alloc(t, b, st.s), alloc(t, b, st.s), alloc(t, b, st.s),
			alloc(t, b, st.s), alloc(t, b, st.s)
		ok(t, f.m.Retract(b, y, st.x, st.xi, 0.5))
		ok(t, f.m.RandomTangent(b, w, st.x, rng.Counter{Seed: 52}))
		ok(t, f.m.RandomTangent(b, w2, st.x, rng.Counter{Seed: 53}))
		ok(t, f.m.Transport(b, gw, st.x, y, w))
		ok(t, f.m.Transport(b, gw2, st.x, y, w2))
		ok(t, f.m.Transport(b, sw, st.x, st.x, w))
		yh, wh, gwh, swh := down(t, b, y), down(t, b, w), down(t, b, gw), down(t, b, sw)
		sh := tensor.Shape{Batch: batch, Rows: 1, Cols: 1}
		ix, iy := alloc(t, b, sh), alloc(t, b, sh)
		ok(t, f.m.Inner(b, ix, st.x, w, w2))
		ok(t, f.m.Inner(b, iy, y, gw, gw2))
		ixh, iyh := down(t, b, ix), down(t, b, iy)
		for k := 0; k < batch; k++ {
			if e := tangentErr(f.m, yh, gwh, k); e > 1e-14 {
				t.Errorf("%s item %d: transported vector not tangent at y: %.2e (tol 1e-14)", f.name, k, e)
			}
			if e := diffNorm(swh, wh, k) / frob(wh, k); e > 1e-13 {
				t.Errorf("%s item %d: Γ_{x→x}(w) − w = %.2e (tol 1e-13)", f.name, k, e)
			}
			if f.m.TransportMethod() == manifold.ParallelTransport {
				a, c := ixh.At(k, 0, 0), iyh.At(k, 0, 0)
				t.Logf("%s item %d: isometry relative error %.2e", f.name, k, math.Abs(a-c)/math.Abs(a))
				if e := math.Abs(a-c) / math.Abs(a); e > 1e-10 {
					t.Errorf("%s item %d: ⟨Γa, Γb⟩_y = %.15g, ⟨a, b⟩_x = %.15g, relative %.2e (tol 1e-10)", f.name, k, c, a, e)
				}
			}
		}
	}
}

// TestInner: the metric matches its definition (SPD: explicit inverse) to 1e-12 relative and is symmetric.
func TestInner(t *testing.T) {
	b := newBackend(t)
	for _, f := range fixtures() {
		const batch = 3
		st := newState(t, b, f.m, batch, 61)
		u, v := alloc(t, b, st.s), alloc(t, b, st.s)
		ok(t, f.m.RandomTangent(b, u, st.x, rng.Counter{Seed: 62}))
		ok(t, f.m.RandomTangent(b, v, st.x, rng.Counter{Seed: 63}))
		sh := tensor.Shape{Batch: batch, Rows: 1, Cols: 1}
		uv, vu, uu := alloc(t, b, sh), alloc(t, b, sh), alloc(t, b, sh)
		ok(t, f.m.Inner(b, uv, st.x, u, v))
		ok(t, f.m.Inner(b, vu, st.x, v, u))
		ok(t, f.m.Inner(b, uu, st.x, u, u))
		uh, vh := down(t, b, u), down(t, b, v)
		uvh, vuh, uuh := down(t, b, uv), down(t, b, vu), down(t, b, uu)
		for k := 0; k < batch; k++ {
			ref := innerRef(t, f.m, st.xh, uh, vh, k)
			scale := math.Sqrt(innerRef(t, f.m, st.xh, uh, uh, k) * innerRef(t, f.m, st.xh, vh, vh, k))
			if e := math.Abs(uvh.At(k, 0, 0)-ref) / scale; e > 1e-12 {
				t.Errorf("%s item %d: ⟨u,v⟩ = %.15g, reference %.15g, relative %.2e (tol 1e-12)", f.name, k, uvh.At(k, 0, 0), ref, e)
			}
			if e := math.Abs(uvh.At(k, 0, 0)-vuh.At(k, 0, 0)) / scale; e > 1e-14 {
				t.Errorf("%s item %d: inner product not symmetric: %.2e", f.name, k, e)
			}
			if uuh.At(k, 0, 0) <= 0 {
				t.Errorf("%s item %d: ⟨u,u⟩ = %g ≤ 0", f.name, k, uuh.At(k, 0, 0))
			}
		}
	}
}

// TestSphereRetractions checks both sphere retractions against float64 formulas: the geodesic of paper 001
// eq. (7) with one speed per row, and the normalisation of x + tv.
func TestSphereRetractions(t *testing.T) {
	b := newBackend(t)
	for _, r := range []manifold.RetractionMethod{manifold.ExponentialRetraction, manifold.ProjectionRetraction} {
		m := must(manifold.NewSphere(6, 4, manifold.WithRetraction(r)))
		st := newState(t, b, m, 2, 71)
		// rows with very different speeds: scale row i of ξ by 10^(i−3)
		for k := 0; k < 2; k++ {
			d := st.xih.Dense(k)
			for i := 0; i < 6; i++ {
				row := d.RawRowView(i)
				for j := range row {
					row[j] *= math.Pow(10, float64(i-3))
				}
			}
		}
		ok(t, b.Upload(st.xi, st.xih))
		const tt = 0.9
		y := alloc(t, b, st.s)
		ok(t, m.Retract(b, y, st.x, st.xi, tt))
		yh := down(t, b, y)
		worst := 0.0
		for k := 0; k < 2; k++ {
			for i := 0; i < 6; i++ {
				x, v := st.xh.Dense(k).RawRowView(i), st.xih.Dense(k).RawRowView(i)
				got := yh.Dense(k).RawRowView(i)
				want := make([]float64, len(x))
				if r == manifold.ExponentialRetraction {
					a := math.Sqrt(dot(v, v))
					for j := range want {
						want[j] = x[j]*math.Cos(a*tt) + v[j]/a*math.Sin(a*tt)
					}
				} else {
					for j := range want {
						want[j] = x[j] + tt*v[j]
					}
					nw := math.Sqrt(dot(want, want))
					for j := range want {
						want[j] /= nw
					}
				}
				for j := range want {
					worst = max(worst, math.Abs(got[j]-want[j]))
				}
			}
		}
		if worst > 1e-13 {
			t.Errorf("sphere %v retraction: max error %.2e vs float64 formula (tol 1e-13)", r, worst)
		}
		if e := diffNorm(down(t, b, st.xi), st.xih, 0); e != 0 {
			t.Errorf("sphere %v retraction modified v", r)
		}
	}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// TestErrors: bad dimensions and unsupported choices are ErrDomain; mismatched operands are ErrShape and leave
// the destination untouched.
func TestErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
	}{
		{"stiefel p>n", func() error { _, err := manifold.NewStiefel(3, 4); return err }()},
		{"stiefel p=0", func() error { _, err := manifold.NewStiefel(3, 0); return err }()},
		{"sphere k=0", func() error { _, err := manifold.NewSphere(0, 3); return err }()},
		{"spd d=0", func() error { _, err := manifold.NewSPD(0); return err }()},
		{"euclidean 0", func() error { _, err := manifold.NewEuclidean(0, 3); return err }()},
		{"sphere qr", func() error {
			_, err := manifold.NewSphere(2, 3, manifold.WithRetraction(manifold.QRRetraction))
			return err
		}()},
		{"stiefel parallel", func() error {
			_, err := manifold.NewStiefel(3, 2, manifold.WithTransport(manifold.ParallelTransport))
			return err
		}()},
		{"spd projection retraction", func() error {
			_, err := manifold.NewSPD(3, manifold.WithRetraction(manifold.ProjectionRetraction))
			return err
		}()},
	} {
		if !errors.Is(c.err, backend.ErrDomain) {
			t.Errorf("%s: error %v, want ErrDomain", c.name, c.err)
		}
	}
	b := newBackend(t)
	for _, f := range fixtures() {
		s := f.m.PointShape(2)
		x, dst := alloc(t, b, s), alloc(t, b, s)
		ok(t, f.m.RandomPoint(b, x, rng.Counter{Seed: 81}))
		ok(t, b.Fill(dst, 7))
		wrong := alloc(t, b, tensor.Shape{Batch: 2, Rows: s.Rows + 1, Cols: s.Cols})
		wrongB := alloc(t, b, tensor.Shape{Batch: 3, Rows: s.Rows, Cols: s.Cols})
		ip := alloc(t, b, tensor.Shape{Batch: 2, Rows: 1, Cols: 1})
		calls := map[string]error{
			"project":          f.m.Project(b, dst, x, wrong),
			"rgrad":            f.m.RiemannianGrad(b, dst, wrongB, x),
			"retract":          f.m.Retract(b, dst, x, wrong, 1),
			"retract nil":      f.m.Retract(b, dst, x, nil, 1),
			"transport":        f.m.Transport(b, dst, x, wrongB, x),
			"inner dst":        f.m.Inner(b, wrong, x, x, x),
			"inner":            f.m.Inner(b, ip, x, x, wrongB),
			"random point":     f.m.RandomPoint(b, wrong, rng.Counter{}),
			"random tangent":   f.m.RandomTangent(b, dst, wrong, rng.Counter{}),
			"random tangent 2": f.m.RandomTangent(b, wrongB, x, rng.Counter{}),
		}
		for name, err := range calls {
			if !errors.Is(err, backend.ErrShape) {
				t.Errorf("%s %s: error %v, want ErrShape", f.name, name, err)
			}
		}
		dh := down(t, b, dst)
		for _, e := range dh.Storage().Host() {
			if e != 7 {
				t.Fatalf("%s: destination modified by a failed call", f.name)
			}
		}
	}
}
