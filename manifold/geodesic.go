package manifold

import (
	"math"

	"github.com/geovb/geovb/backend"
)

// Geodesic is a manifold whose geodesic flow is known in closed form: the exact solution of the geodesic equation
// for a position x and a velocity v, the sub-dynamics "A" of the stochastic-gradient geodesic samplers (paper 001
// Section 3.2, eq. (7)). Euclidean space (the straight line x + hv, for SGHMC and SGNHT) and products of spheres
// (great circles) implement it.
type Geodesic interface {
	Manifold
	// Flow moves every (x, v) of the batch along its geodesic for time h, in place: x becomes the point at time h
	// and v the velocity there. v must be tangent at x.
	Flow(b backend.Backend, x, v *T, h float64) error
	// Normalize puts x back on the manifold and v back in the tangent space at x after rounding drift (a no-op
	// where every point is on the manifold). v may be nil.
	Normalize(b backend.Backend, x, v *T) error
	// CheckPoint reports an error wrapping backend.ErrDomain when a batch item of the host tensor x is not a
	// finite point of the manifold within tol.
	CheckPoint(x *T, tol float64) error
}

// Flow is the exact geodesic flow of paper 001 eq. (7), each sphere of the product rotating with its own speed ‖v_k‖.
func (m *Sphere) Flow(b backend.Backend, x, v *T, h float64) error {
	if err := checkPoints(m, "manifold.sphere.flow", []string{"x", "v"}, x, v); err != nil {
		return err
	}
	return backend.SphereFlow(b, x, v, h)
}

// Normalize rescales each row of x to unit length and projects v onto the tangent space at x.
func (m *Sphere) Normalize(b backend.Backend, x, v *T) error {
	return backend.SphereNormalize(b, x, v)
}

// CheckPoint checks that every row of every batch item of x is finite with |‖x_k‖ − 1| ≤ tol.
func (m *Sphere) CheckPoint(x *T, tol float64) error {
	return checkHostPoints(m, x, func(bb, i int, row []float64) error {
		ss := 0.0
		for _, v := range row {
			ss += v * v
		}
		if d := math.Abs(math.Sqrt(ss) - 1); !(d <= tol) {
			return backend.BatchErrorf("manifold.sphere", "x", bb, backend.ErrDomain,
				"row %d is not on the sphere: |‖x‖ − 1| = %.3g", i, d)
		}
		return nil
	})
}

// Flow is x ← x + h v; v does not change.
func (m *Euclidean) Flow(b backend.Backend, x, v *T, h float64) error {
	if err := checkPoints(m, "manifold.euclidean.flow", []string{"x", "v"}, x, v); err != nil {
		return err
	}
	return b.Axpby(x, 1, x, h, v)
}

// Normalize does nothing: every point and every vector is in the space.
func (m *Euclidean) Normalize(b backend.Backend, x, v *T) error { return nil }

// CheckPoint checks that x has the point shape and finite entries.
func (m *Euclidean) CheckPoint(x *T, tol float64) error {
	return checkHostPoints(m, x, func(int, int, []float64) error { return nil })
}

// checkHostPoints checks x's shape against m and calls row for every row of every batch item after checking that
// its entries are finite.
func checkHostPoints(m Manifold, x *T, row func(bb, i int, r []float64) error) error {
	if x == nil || x.Batch() < 1 || !x.IsHost() {
		return backend.Errorf("manifold", "x", backend.ErrShape, "want a host tensor with at least one point")
	}
	if err := backend.CheckSame("manifold", "x", x, m.PointShape(x.Batch())); err != nil {
		return err
	}
	r := make([]float64, x.Cols())
	for bb := 0; bb < x.Batch(); bb++ {
		for i := 0; i < x.Rows(); i++ {
			for j := range r {
				r[j] = x.At(bb, i, j)
				if math.IsNaN(r[j]) || math.IsInf(r[j], 0) {
					return backend.BatchErrorf("manifold", "x", bb, backend.ErrDomain, "row %d: non-finite entry", i)
				}
			}
			if err := row(bb, i, r); err != nil {
				return err
			}
		}
	}
	return nil
}

var (
	_ Geodesic = (*Sphere)(nil)
	_ Geodesic = (*Euclidean)(nil)
)
