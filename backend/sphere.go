package backend

import (
	"math"

	"github.com/geovb/geovb/tensor"
)

// Hot operations on a product of spheres (paper 001, Section 3.1–3.3: the geodesic flow (7) and the tangent
// projection). A batch of points of a product of K spheres S^{n-1} ⊂ Rⁿ is a tensor batch×K×n whose rows are unit
// vectors; a velocity (tangent vector) has the same shape with each row orthogonal to the matching row of the point.
// Every operation works row by row, each row with its own norms: using one global ‖v‖ for a product of spheres is
// wrong.
//
// Operands of the sphere operations must have exactly the same shape (no broadcasting), and an operand written in
// place may not be a broadcast view (batch stride 0 with batch > 1). The kernel shape passed to Applies is x's shape.

// SphereFlowFunc is the signature of the sphere.flow operation and its kernels; see SphereFlow.
type SphereFlowFunc func(b Backend, x, v *T, h float64) error

// SphereProjectFunc is the signature of the sphere.project operation and its kernels; see SphereProject.
type SphereProjectFunc func(b Backend, dst, x, w *T) error

// SphereNormalizeFunc is the signature of the sphere.normalize operation and its kernels; see SphereNormalize.
type SphereNormalizeFunc func(b Backend, x, v *T) error

var (
	// SphereFlowOp is the geodesic flow on a product of spheres.
	SphereFlowOp = NewOp[SphereFlowFunc]("sphere.flow", sphereFlowRef)
	// SphereProjectOp is the row-wise tangent projection onto a product of spheres.
	SphereProjectOp = NewOp[SphereProjectFunc]("sphere.project", sphereProjectRef)
	// SphereNormalizeOp renormalises points and re-projects velocities on a product of spheres.
	SphereNormalizeOp = NewOp[SphereNormalizeFunc]("sphere.normalize", sphereNormalizeRef)
)

// SphereFlow advances the state (x, v) on a product of spheres along the exact geodesic flow for time h, in place,
// each row with its own speed α = ‖v_row‖ (paper 001 eq. (7)):
//
//	x ← x cos(αh) + v·h·sinc(αh),   v ← −α sin(αh) x + v cos(αh).
//
// The rotation keeps ‖x‖ = 1, xᵀv = 0 and ‖v‖ = α up to rounding, provided the input satisfies them. A row with
// v = 0 is left unchanged: x bit-identical and v the same zero vector (registered kernels skip such rows and keep
// every bit; the reference may flip the sign of a zero). α is the square root of the row's sum of squares, so row
// speeds must lie within about 1e-150 … 1e150: below, a row counts as at rest; above, it overflows. h may be negative (the flow backwards); it must be finite (ErrDomain otherwise).
// x and v are batch×K×n with the same shape; neither is modified when an error is returned.
func SphereFlow(b Backend, x, v *T, h float64) error {
	if err := CheckSphereFlow(x, v, h); err != nil {
		return err
	}
	f, _ := SphereFlowOp.Select(b, x.Shape())
	return f(b, x, v, h)
}

// SphereProject computes the tangent projection dst = w − (x·w) x of each row of w at the matching row of x, that
// is Λ(x)w with Λ(x) = I − xxᵀ (paper 001 Section 3.1). x must have unit rows. dst may alias w (or x).
func SphereProject(b Backend, dst, x, w *T) error {
	if err := CheckSphereProject(dst, x, w); err != nil {
		return err
	}
	f, _ := SphereProjectOp.Select(b, x.Shape())
	return f(b, dst, x, w)
}

// SphereNormalize rescales each row of x to unit norm and, when v is not nil, re-projects each row of v onto the
// tangent space at the new x: v ← v − (x·v)x (drift control: the flow keeps the constraints only to rounding). A zero
// row of x becomes NaN.
func SphereNormalize(b Backend, x, v *T) error {
	if err := CheckSphereNormalize(x, v); err != nil {
		return err
	}
	f, _ := SphereNormalizeOp.Select(b, x.Shape())
	return f(b, x, v)
}

// sphCheckInPlace rejects a broadcast view as a destination: its batch items share memory.
func sphCheckInPlace(op, name string, x *T) error {
	if x.Batch() > 1 && x.BatchStride() == 0 && x.Rows()*x.Cols() > 0 {
		return shapeErr(op, name, "destination is a broadcast view (batch stride 0)")
	}
	return nil
}

// CheckSphereFlow checks the operands of SphereFlow. Kernels call it too.
func CheckSphereFlow(x, v *T, h float64) error {
	const op = "sphere.flow"
	if err := CheckNotNil(op, []string{"x", "v"}, x, v); err != nil {
		return err
	}
	if err := CheckSame(op, "v", v, x.Shape()); err != nil {
		return err
	}
	if err := sphCheckInPlace(op, "x", x); err != nil {
		return err
	}
	if err := sphCheckInPlace(op, "v", v); err != nil {
		return err
	}
	if math.IsNaN(h) || math.IsInf(h, 0) {
		return Errorf(op, "h", ErrDomain, "step %v is not finite", h)
	}
	return nil
}

// CheckSphereProject checks the operands of SphereProject. Kernels call it too.
func CheckSphereProject(dst, x, w *T) error {
	const op = "sphere.project"
	if err := CheckNotNil(op, []string{"dst", "x", "w"}, dst, x, w); err != nil {
		return err
	}
	if err := CheckSame(op, "w", w, x.Shape()); err != nil {
		return err
	}
	if err := CheckSame(op, "dst", dst, x.Shape()); err != nil {
		return err
	}
	return sphCheckInPlace(op, "dst", dst)
}

// CheckSphereNormalize checks the operands of SphereNormalize (v may be nil). Kernels call it too.
func CheckSphereNormalize(x, v *T) error {
	const op = "sphere.normalize"
	if err := CheckNotNil(op, []string{"x"}, x); err != nil {
		return err
	}
	if err := sphCheckInPlace(op, "x", x); err != nil {
		return err
	}
	if v == nil {
		return nil
	}
	if err := CheckSame(op, "v", v, x.Shape()); err != nil {
		return err
	}
	return sphCheckInPlace(op, "v", v)
}

// sphTemps allocates tensors of the given shapes, freeing them all if one fails. free releases them.
type sphTemps struct {
	b  Backend
	ts []*T
}

func (tm *sphTemps) alloc(s tensor.Shape) (*T, error) {
	t, err := tm.b.Alloc(s)
	if err != nil {
		return nil, err
	}
	tm.ts = append(tm.ts, t)
	return t, nil
}

func (tm *sphTemps) free() {
	for _, t := range tm.ts {
		tm.b.Free(t)
	}
	tm.ts = nil
}

// sphRowShape is the batch×K×1 shape of per-row scalars of x.
func sphRowShape(x *T) tensor.Shape { return tensor.Shape{Batch: x.Batch(), Rows: x.Rows(), Cols: 1} }

// sphereFlowRef is the reference geodesic flow written with the primitives (paper 001 eq. (7)).
func sphereFlowRef(b Backend, x, v *T, h float64) error {
	if err := CheckSphereFlow(x, v, h); err != nil {
		return err
	}
	if x.Len() == 0 {
		return nil
	}
	tm := sphTemps{b: b}
	defer tm.free()
	var alpha, c, s, sc, xs, vs *T
	var err error
	for _, p := range []**T{&alpha, &c, &s, &sc} {
		if *p, err = tm.alloc(sphRowShape(x)); err != nil {
			return err
		}
	}
	for _, p := range []**T{&xs, &vs} {
		if *p, err = tm.alloc(x.Shape()); err != nil {
			return err
		}
	}
	steps := []func() error{
		func() error { return b.RowDots(alpha, v, v) },
		func() error { return b.Map(alpha, Sqrt, 1, alpha) }, // α = ‖v‖ per row
		func() error { return b.Map(c, Cos, h, alpha) },      // cos(αh)
		func() error { return b.Map(s, Sin, h, alpha) },      // sin(αh)
		func() error { return b.Mul(s, s, alpha) },           // α sin(αh)
		func() error { return b.Map(sc, Sinc, h, alpha) },    // sinc(αh)
		func() error { return b.ScaleRows(xs, x, s) },        // α sin(αh) x   (old x)
		func() error { return b.ScaleRows(vs, v, sc) },       // sinc(αh) v    (old v)
		func() error { return b.ScaleRows(x, x, c) },         // x cos(αh)
		func() error { return b.Axpby(x, 1, x, h, vs) },      // + h sinc(αh) v
		func() error { return b.ScaleRows(v, v, c) },         // v cos(αh)
		func() error { return b.Axpby(v, 1, v, -1, xs) },     // − α sin(αh) x
	}
	for _, f := range steps {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// sphereProjectRef is the reference tangent projection dst = w − (x·w)x written with the primitives.
func sphereProjectRef(b Backend, dst, x, w *T) error {
	if err := CheckSphereProject(dst, x, w); err != nil {
		return err
	}
	if x.Len() == 0 {
		return nil
	}
	tm := sphTemps{b: b}
	defer tm.free()
	d, err := tm.alloc(sphRowShape(x))
	if err != nil {
		return err
	}
	xd, err := tm.alloc(x.Shape())
	if err != nil {
		return err
	}
	if err := b.RowDots(d, x, w); err != nil {
		return err
	}
	if err := b.ScaleRows(xd, x, d); err != nil {
		return err
	}
	return b.Axpby(dst, 1, w, -1, xd)
}

// sphereNormalizeRef is the reference renormalisation written with the primitives.
func sphereNormalizeRef(b Backend, x, v *T) error {
	if err := CheckSphereNormalize(x, v); err != nil {
		return err
	}
	if x.Len() == 0 {
		return nil
	}
	tm := sphTemps{b: b}
	defer tm.free()
	n, err := tm.alloc(sphRowShape(x))
	if err != nil {
		return err
	}
	if err := b.RowDots(n, x, x); err != nil {
		return err
	}
	if err := b.Map(n, Sqrt, 1, n); err != nil {
		return err
	}
	if err := b.Map(n, Recip, 1, n); err != nil {
		return err
	}
	if err := b.ScaleRows(x, x, n); err != nil {
		return err
	}
	if v == nil {
		return nil
	}
	return sphereProjectRef(b, v, x, v)
}
