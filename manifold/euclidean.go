package manifold

import (
	"fmt"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// Euclidean is the space of rows×cols real matrices with the Frobenius inner product. Its only retraction is the
// exponential map x + tv and its transport is the identity (ExponentialRetraction, ProjectionTransport).
type Euclidean struct {
	rows, cols int
	opt        options
	ws         workspace
}

// Close frees the scratch tensors the operations keep between calls.
func (m *Euclidean) Close() { m.ws.Close() }

// NewEuclidean returns the Euclidean space of rows×cols matrices (rows×1 for vectors).
func NewEuclidean(rows, cols int, opts ...Option) (*Euclidean, error) {
	if rows < 1 || cols < 1 {
		return nil, backend.Errorf("manifold.euclidean", "", backend.ErrDomain, "dimensions %d×%d", rows, cols)
	}
	o, err := resolve("euclidean", opts, []RetractionMethod{ExponentialRetraction}, []TransportMethod{ProjectionTransport})
	if err != nil {
		return nil, err
	}
	return &Euclidean{rows: rows, cols: cols, opt: o}, nil
}

func (m *Euclidean) Name() string { return fmt.Sprintf("Euclidean(%d, %d)", m.rows, m.cols) }

func (m *Euclidean) PointShape(batch int) tensor.Shape {
	return tensor.Shape{Batch: batch, Rows: m.rows, Cols: m.cols}
}

func (m *Euclidean) Dim() int                           { return m.rows * m.cols }
func (m *Euclidean) RetractionMethod() RetractionMethod { return m.opt.retraction }
func (m *Euclidean) TransportMethod() TransportMethod   { return m.opt.transport }

// Project copies u: every vector is tangent.
func (m *Euclidean) Project(b backend.Backend, dst, x, u *T) error {
	if err := checkPoints(m, "manifold.euclidean.project", []string{"dst", "x", "u"}, dst, x, u); err != nil {
		return err
	}
	return copyTo(b, dst, u)
}

// RiemannianGrad copies egrad.
func (m *Euclidean) RiemannianGrad(b backend.Backend, dst, x, egrad *T) error {
	if err := checkPoints(m, "manifold.euclidean.rgrad", []string{"dst", "x", "egrad"}, dst, x, egrad); err != nil {
		return err
	}
	return copyTo(b, dst, egrad)
}

// Retract writes x + t·v.
func (m *Euclidean) Retract(b backend.Backend, dst, x, v *T, t float64) error {
	if err := checkPoints(m, "manifold.euclidean.retract", []string{"dst", "x", "v"}, dst, x, v); err != nil {
		return err
	}
	return b.Axpby(dst, 1, x, t, v)
}

// Transport copies v.
func (m *Euclidean) Transport(b backend.Backend, dst, x, y, v *T) error {
	if err := checkPoints(m, "manifold.euclidean.transport", []string{"dst", "x", "y", "v"}, dst, x, y, v); err != nil {
		return err
	}
	return copyTo(b, dst, v)
}

// Inner writes the Frobenius inner product Σ u_ij v_ij.
func (m *Euclidean) Inner(b backend.Backend, dst, x, u, v *T) error {
	if err := checkInner(m, "manifold.euclidean.inner", dst, x, u, v); err != nil {
		return err
	}
	return frobInner(b, &m.ws, dst, u, v)
}

// RandomPoint fills dst with standard normal entries.
func (m *Euclidean) RandomPoint(b backend.Backend, dst *T, c rng.Counter) error {
	if err := checkPoints(m, "manifold.euclidean.random", []string{"dst"}, dst); err != nil {
		return err
	}
	return b.FillNormal(dst, c)
}

// RandomTangent fills dst with standard normal entries.
func (m *Euclidean) RandomTangent(b backend.Backend, dst, x *T, c rng.Counter) error {
	if err := checkPoints(m, "manifold.euclidean.random_tangent", []string{"dst", "x"}, dst, x); err != nil {
		return err
	}
	return b.FillNormal(dst, c)
}

var _ Manifold = (*Euclidean)(nil)
