package manifold

import (
	"fmt"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// Sphere is the product of K unit spheres S^{n−1} ⊂ Rⁿ with the metric inherited from R^{K×n}. A point is a K×n
// matrix whose rows are unit vectors (a batch of points is batch×K×n), a tangent vector a K×n matrix whose rows are
// orthogonal to the point's rows: the layout of the backend's sphere operations (paper 001 Section 3.1).
//
// Retractions: ExponentialRetraction (default), the exact geodesic flow of paper 001 eq. (7), each row with its
// own speed; ProjectionRetraction, (x + tv)/‖x + tv‖ row-wise. Transport: ProjectionTransport, Λ(y)v.
type Sphere struct {
	k, n int
	opt  options
	ws   workspace
}

// Close frees the scratch tensors the operations keep between calls.
func (m *Sphere) Close() { m.ws.Close() }

// NewSphere returns the product of k spheres S^{n−1} ⊂ Rⁿ (k ≥ 1, n ≥ 1).
func NewSphere(k, n int, opts ...Option) (*Sphere, error) {
	if k < 1 || n < 1 {
		return nil, backend.Errorf("manifold.sphere", "", backend.ErrDomain, "%d spheres in R^%d", k, n)
	}
	o, err := resolve("sphere", opts, []RetractionMethod{ExponentialRetraction, ProjectionRetraction},
		[]TransportMethod{ProjectionTransport})
	if err != nil {
		return nil, err
	}
	return &Sphere{k: k, n: n, opt: o}, nil
}

func (m *Sphere) Name() string {
	if m.k == 1 {
		return fmt.Sprintf("Sphere(S^%d)", m.n-1)
	}
	return fmt.Sprintf("Sphere(%d × S^%d)", m.k, m.n-1)
}

func (m *Sphere) PointShape(batch int) tensor.Shape {
	return tensor.Shape{Batch: batch, Rows: m.k, Cols: m.n}
}

// Dim is K(n−1).
func (m *Sphere) Dim() int                           { return m.k * (m.n - 1) }
func (m *Sphere) RetractionMethod() RetractionMethod { return m.opt.retraction }
func (m *Sphere) TransportMethod() TransportMethod   { return m.opt.transport }

// Project writes Λ(x)u = u − (x·u)x row by row (paper 001 Section 3.1).
func (m *Sphere) Project(b backend.Backend, dst, x, u *T) error {
	if err := checkPoints(m, "manifold.sphere.project", []string{"dst", "x", "u"}, dst, x, u); err != nil {
		return err
	}
	return backend.SphereProject(b, dst, x, u)
}

// RiemannianGrad is the projection of egrad: with the embedded metric the Riemannian gradient is Λ(x)∇U
// (paper 001 Section 3.2, "∇_x U_H of any smooth extension").
func (m *Sphere) RiemannianGrad(b backend.Backend, dst, x, egrad *T) error {
	if err := checkPoints(m, "manifold.sphere.rgrad", []string{"dst", "x", "egrad"}, dst, x, egrad); err != nil {
		return err
	}
	return backend.SphereProject(b, dst, x, egrad)
}

// Retract writes R_x(t·v): the geodesic through x with initial velocity v at time t (ExponentialRetraction, paper
// 001 eq. (7)) or the row-wise normalisation of x + t·v (ProjectionRetraction). v must be tangent at x.
func (m *Sphere) Retract(b backend.Backend, dst, x, v *T, t float64) error {
	if err := checkPoints(m, "manifold.sphere.retract", []string{"dst", "x", "v"}, dst, x, v); err != nil {
		return err
	}
	if m.opt.retraction == ProjectionRetraction {
		if err := b.Axpby(dst, 1, x, t, v); err != nil {
			return err
		}
		return backend.SphereNormalize(b, dst, nil)
	}
	// the flow works in place on (x, v): run it on copies (v first, as dst may alias v)
	vcs, err := m.ws.get(b, "retract", v.Shape(), 1)
	if err != nil {
		return err
	}
	vc := vcs[0]
	if err := b.Copy(vc, v); err != nil {
		return err
	}
	if err := copyTo(b, dst, x); err != nil {
		return err
	}
	return backend.SphereFlow(b, dst, vc, t)
}

// Transport writes Λ(y)v, the projection of v onto the tangent space at y (paper 000 Section 3.4).
func (m *Sphere) Transport(b backend.Backend, dst, x, y, v *T) error {
	if err := checkPoints(m, "manifold.sphere.transport", []string{"dst", "x", "y", "v"}, dst, x, y, v); err != nil {
		return err
	}
	return backend.SphereProject(b, dst, y, v)
}

// Inner writes Σ_k u_k·v_k, the embedded metric summed over the K spheres.
func (m *Sphere) Inner(b backend.Backend, dst, x, u, v *T) error {
	if err := checkInner(m, "manifold.sphere.inner", dst, x, u, v); err != nil {
		return err
	}
	return frobInner(b, &m.ws, dst, u, v)
}

// RandomPoint draws uniform points: normalised standard normal rows.
func (m *Sphere) RandomPoint(b backend.Backend, dst *T, c rng.Counter) error {
	if err := checkPoints(m, "manifold.sphere.random", []string{"dst"}, dst); err != nil {
		return err
	}
	if err := b.FillNormal(dst, c); err != nil {
		return err
	}
	return backend.SphereNormalize(b, dst, nil)
}

// RandomTangent draws Λ(x)z with z standard normal.
func (m *Sphere) RandomTangent(b backend.Backend, dst, x *T, c rng.Counter) error {
	if err := checkPoints(m, "manifold.sphere.random_tangent", []string{"dst", "x"}, dst, x); err != nil {
		return err
	}
	if err := b.FillNormal(dst, c); err != nil {
		return err
	}
	return backend.SphereProject(b, dst, x, dst)
}

var _ Manifold = (*Sphere)(nil)
