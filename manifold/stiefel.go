package manifold

import (
	"fmt"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// Stiefel is the manifold St(n, p) = {X ∈ R^{n×p} : XᵀX = I_p} (paper 000 eq. (2.7)) with the Euclidean metric
// tr(UᵀV) it inherits from R^{n×p} (paper 000 Section 3.1). The tangent space at X is {Z : XᵀZ + ZᵀX = 0}.
//
// Retraction: QRRetraction, qf(X + tV) with diag(R) > 0 (paper 000 eq. (3.9); without the sign fix qf(X) ≠ X and the
// retraction is discontinuous). Transport:
// ProjectionTransport, the projection onto the tangent space at the new point (paper 000 §5.3).
type Stiefel struct {
	n, p int
	opt  options
	ws   workspace
}

// Close frees the scratch tensors the operations keep between calls.
func (m *Stiefel) Close() { m.ws.Close() }

// NewStiefel returns St(n, p); p > n (or a non-positive dimension) is an error wrapping backend.ErrDomain.
func NewStiefel(n, p int, opts ...Option) (*Stiefel, error) {
	if p < 1 || n < 1 || p > n {
		return nil, backend.Errorf("manifold.stiefel", "", backend.ErrDomain, "St(%d, %d) needs 1 ≤ p ≤ n", n, p)
	}
	o, err := resolve("stiefel", opts, []RetractionMethod{QRRetraction}, []TransportMethod{ProjectionTransport})
	if err != nil {
		return nil, err
	}
	return &Stiefel{n: n, p: p, opt: o}, nil
}

func (m *Stiefel) Name() string { return fmt.Sprintf("Stiefel(%d, %d)", m.n, m.p) }
func (m *Stiefel) PointShape(batch int) tensor.Shape {
	return tensor.Shape{Batch: batch, Rows: m.n, Cols: m.p}
}

// Dim is np − p(p+1)/2.
func (m *Stiefel) Dim() int                           { return m.n*m.p - m.p*(m.p+1)/2 }
func (m *Stiefel) RetractionMethod() RetractionMethod { return m.opt.retraction }
func (m *Stiefel) TransportMethod() TransportMethod   { return m.opt.transport }

// project writes Z − X sym(XᵀZ) (paper 000 eq. (3.5)).
func (m *Stiefel) project(b backend.Backend, dst, x, z *T) error {
	batch := x.Batch()
	ss, err := m.ws.get(b, "project.s", tensor.Shape{Batch: batch, Rows: m.p, Cols: m.p}, 1)
	if err != nil {
		return err
	}
	xss, err := m.ws.get(b, "project.xs", x.Shape(), 1)
	if err != nil {
		return err
	}
	s, xs := ss[0], xss[0]
	if err := b.Gemm(blas.Trans, blas.NoTrans, 1, x, z, 0, s); err != nil { // XᵀZ
		return err
	}
	if err := b.Symmetrize(s); err != nil {
		return err
	}
	if err := b.Gemm(blas.NoTrans, blas.NoTrans, 1, x, s, 0, xs); err != nil { // X sym(XᵀZ)
		return err
	}
	return b.Axpby(dst, 1, z, -1, xs)
}

// Project writes u − X sym(Xᵀu), the Euclidean orthogonal projection onto the tangent space at X.
func (m *Stiefel) Project(b backend.Backend, dst, x, u *T) error {
	if err := checkPoints(m, "manifold.stiefel.project", []string{"dst", "x", "u"}, dst, x, u); err != nil {
		return err
	}
	return m.project(b, dst, x, u)
}

// RiemannianGrad writes (I − XXᵀ)G + X skew(XᵀG) (paper 000 Lemma 3.2, eq. (3.5)). For XᵀX = I this equals
// G − X sym(XᵀG), the tangent projection of G, which is how it is computed.
func (m *Stiefel) RiemannianGrad(b backend.Backend, dst, x, egrad *T) error {
	if err := checkPoints(m, "manifold.stiefel.rgrad", []string{"dst", "x", "egrad"}, dst, x, egrad); err != nil {
		return err
	}
	return m.project(b, dst, x, egrad)
}

// Retract writes qf(X + tV), the sign-fixed thin QR factor (paper 000 eq. (3.9)).
func (m *Stiefel) Retract(b backend.Backend, dst, x, v *T, t float64) error {
	if err := checkPoints(m, "manifold.stiefel.retract", []string{"dst", "x", "v"}, dst, x, v); err != nil {
		return err
	}
	return backend.QRRetract(b, dst, x, v, t)
}

// Transport writes the projection of v onto the tangent space at y (not an isometry: the momentum norm can shrink).
func (m *Stiefel) Transport(b backend.Backend, dst, x, y, v *T) error {
	if err := checkPoints(m, "manifold.stiefel.transport", []string{"dst", "x", "y", "v"}, dst, x, y, v); err != nil {
		return err
	}
	return m.project(b, dst, y, v)
}

// Inner writes tr(UᵀV).
func (m *Stiefel) Inner(b backend.Backend, dst, x, u, v *T) error {
	if err := checkInner(m, "manifold.stiefel.inner", dst, x, u, v); err != nil {
		return err
	}
	return frobInner(b, &m.ws, dst, u, v)
}

// RandomPoint draws Haar-distributed points: qf of a standard normal n×p matrix.
func (m *Stiefel) RandomPoint(b backend.Backend, dst *T, c rng.Counter) error {
	if err := checkPoints(m, "manifold.stiefel.random", []string{"dst"}, dst); err != nil {
		return err
	}
	if err := b.FillNormal(dst, c); err != nil {
		return err
	}
	return backend.QRRetract(b, dst, dst, nil, 0)
}

// RandomTangent draws the tangent projection of a standard normal n×p matrix.
func (m *Stiefel) RandomTangent(b backend.Backend, dst, x *T, c rng.Counter) error {
	if err := checkPoints(m, "manifold.stiefel.random_tangent", []string{"dst", "x"}, dst, x); err != nil {
		return err
	}
	if err := b.FillNormal(dst, c); err != nil {
		return err
	}
	return m.project(b, dst, x, dst)
}

var _ Manifold = (*Stiefel)(nil)
