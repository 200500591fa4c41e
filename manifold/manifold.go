// Package manifold holds the Riemannian manifolds the geovb methods optimise and sample on: Euclidean space,
// products of spheres, the Stiefel manifold and the manifold of symmetric positive definite matrices. A manifold is
// a value carrying its operations (tangent projection, Riemannian gradient, metric, retraction, vector transport,
// random points), and the retraction and the vector transport are named choices made when the value is built.
//
// Every operation is batched: a point argument is a tensor of PointShape(batch), that is batch points at once, and a
// tangent vector has the same shape as its point. All the work goes through the backend.Backend contract and its
// hot operations (backend.SphereFlow, backend.QRRetract, backend.SPDRetract, backend.SPDTransport, …), so the same
// code runs on the CPU and on a GPU, with the data staying in the backend's memory.
//
// Conventions: the destination comes first; operands of one call have the same batch (no broadcasting); a shape
// mismatch is a *backend.OpError wrapping backend.ErrShape returned before anything is written; an unsupported
// choice or dimension is an error wrapping backend.ErrDomain. Unless a method says otherwise dst may alias its
// inputs.
//
// Example (see Example in example_test.go):
//
//	b, _ := backend.Open("cpu")
//	m, _ := manifold.NewSphere(2, 3)                // S² × S², rows of 1×2×3 tensors
//	x, _ := b.Alloc(m.PointShape(1))
//	v, _ := b.Alloc(m.PointShape(1))
//	_ = m.RandomPoint(b, x, rng.Counter{Seed: 1})
//	_ = m.RandomTangent(b, v, x, rng.Counter{Seed: 2})
//	_ = m.Retract(b, x, x, v, 0.1)                  // move along the geodesic for time 0.1
package manifold

import (
	"fmt"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// T is short for *tensor.Tensor in signatures.
type T = tensor.Tensor

// Manifold is a Riemannian manifold with its chosen retraction and vector transport, acting on batches of points.
type Manifold interface {
	// Name describes the manifold and its choices, e.g. "Stiefel(5, 3)".
	Name() string
	// PointShape is the shape of a batch of points (and of tangent vectors).
	PointShape(batch int) tensor.Shape
	// Dim is the intrinsic dimension of one point.
	Dim() int
	// RetractionMethod and TransportMethod report the named choices in use.
	RetractionMethod() RetractionMethod
	TransportMethod() TransportMethod

	// Project writes the orthogonal projection (in the manifold's metric) of the ambient vector u onto the tangent
	// space at x.
	Project(b backend.Backend, dst, x, u *T) error
	// RiemannianGrad converts the Euclidean gradient egrad of a function (of any smooth extension of it to the
	// ambient space) into its Riemannian gradient at x, the tangent vector g with ⟨g, ξ⟩_x = ⟨egrad, ξ⟩ for every
	// tangent ξ (paper 000 Lemma 3.2; ⟨·,·⟩ the Euclidean inner product).
	RiemannianGrad(b backend.Backend, dst, x, egrad *T) error
	// Retract writes R_x(t·v) for the tangent vector v at x.
	Retract(b backend.Backend, dst, x, v *T, t float64) error
	// Transport carries the tangent vector v at x to the tangent space at y.
	Transport(b backend.Backend, dst, x, y, v *T) error
	// Inner writes the Riemannian inner product ⟨u, v⟩_x of each batch item into dst (batch×1×1).
	Inner(b backend.Backend, dst, x, u, v *T) error
	// RandomPoint fills dst with random points drawn with the counter-based stream c.
	RandomPoint(b backend.Backend, dst *T, c rng.Counter) error
	// RandomTangent fills dst with random tangent vectors at x (standard normal in the ambient space, projected).
	// dst must not alias x.
	RandomTangent(b backend.Backend, dst, x *T, c rng.Counter) error
	// Close frees the scratch tensors that the operations keep between calls (each operation allocates backend
	// memory on its first call only). A manifold value is not safe for concurrent use.
	Close()
}

// RetractionMethod names a retraction.
type RetractionMethod int

// Retractions. DefaultRetraction picks the manifold's default, given with each constructor.
const (
	DefaultRetraction     RetractionMethod = iota
	ExponentialRetraction                  // the exponential map: x + tv (Euclidean), the geodesic flow (Sphere)
	ProjectionRetraction                   // the metric projection of x + tv: (x + tv)/‖x + tv‖ row-wise (Sphere)
	QRRetraction                           // qf(x + tv), sign-fixed thin QR (Stiefel; paper 000 eq. (3.9))
	SecondOrderRetraction                  // Σ + ξ + ½ξΣ⁻¹ξ (SPD; paper 000 section 5.1)
)

func (r RetractionMethod) String() string {
	switch r {
	case DefaultRetraction:
		return "default"
	case ExponentialRetraction:
		return "exponential"
	case ProjectionRetraction:
		return "projection"
	case QRRetraction:
		return "qr"
	case SecondOrderRetraction:
		return "second-order"
	}
	return fmt.Sprintf("RetractionMethod(%d)", int(r))
}

// TransportMethod names a vector transport.
type TransportMethod int

// Vector transports. DefaultTransport picks the manifold's default, given with each constructor.
const (
	DefaultTransport    TransportMethod = iota
	ProjectionTransport                 // the tangent projection at the new point (paper 000 section 3.4)
	ParallelTransport                   // parallel transport along the geodesic (SPD: EξEᵀ, E = (S₂S₁⁻¹)^{1/2})
)

func (t TransportMethod) String() string {
	switch t {
	case DefaultTransport:
		return "default"
	case ProjectionTransport:
		return "projection"
	case ParallelTransport:
		return "parallel"
	}
	return fmt.Sprintf("TransportMethod(%d)", int(t))
}

// Option chooses a retraction or a transport in a constructor.
type Option func(*options)

type options struct {
	retraction RetractionMethod
	transport  TransportMethod
}

// WithRetraction selects the retraction; a manifold that does not offer it returns an ErrDomain error.
func WithRetraction(r RetractionMethod) Option { return func(o *options) { o.retraction = r } }

// WithTransport selects the vector transport; a manifold that does not offer it returns an ErrDomain error.
func WithTransport(t TransportMethod) Option { return func(o *options) { o.transport = t } }

// resolve applies opts over the defaults and checks the choices against the supported ones (the first is the
// default).
func resolve(name string, opts []Option, retractions []RetractionMethod, transports []TransportMethod) (options, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	if o.retraction == DefaultRetraction {
		o.retraction = retractions[0]
	}
	if o.transport == DefaultTransport {
		o.transport = transports[0]
	}
	if !contains(retractions, o.retraction) {
		return o, backend.Errorf("manifold."+name, "retraction", backend.ErrDomain, "%v retraction not offered (have %v)", o.retraction, retractions)
	}
	if !contains(transports, o.transport) {
		return o, backend.Errorf("manifold."+name, "transport", backend.ErrDomain, "%v transport not offered (have %v)", o.transport, transports)
	}
	return o, nil
}

func contains[E comparable](s []E, e E) bool {
	for _, x := range s {
		if x == e {
			return true
		}
	}
	return false
}

// checkPoints checks that every operand is non-nil with shape m.PointShape(batch) of the first operand's batch.
func checkPoints(m Manifold, op string, names []string, ts ...*T) error {
	if err := backend.CheckNotNil(op, names, ts...); err != nil {
		return err
	}
	want := m.PointShape(ts[0].Batch())
	for i, t := range ts {
		if err := backend.CheckSame(op, names[i], t, want); err != nil {
			return err
		}
	}
	return nil
}

// checkInner checks the operands of Inner: dst is batch×1×1 for the batch of x, u and v.
func checkInner(m Manifold, op string, dst, x, u, v *T) error {
	if err := checkPoints(m, op, []string{"x", "u", "v"}, x, u, v); err != nil {
		return err
	}
	if err := backend.CheckNotNil(op, []string{"dst"}, dst); err != nil {
		return err
	}
	return backend.CheckSame(op, "dst", dst, tensor.Shape{Batch: x.Batch(), Rows: 1, Cols: 1})
}

// frobInner writes Σ_ij u_ij v_ij of each batch item into dst (batch×1×1): the Euclidean (embedded) metric.
func frobInner(b backend.Backend, ws *workspace, dst, u, v *T) error {
	ts, err := ws.get(b, "inner", u.Shape(), 1)
	if err != nil {
		return err
	}
	tmp := ts[0]
	if err := b.Mul(tmp, u, v); err != nil {
		return err
	}
	return b.Reduce(dst, backend.ReduceSum, backend.AxisAll, tmp)
}

// copyTo copies src into dst unless they are the same view.
func copyTo(b backend.Backend, dst, src *T) error {
	if dst == src {
		return nil
	}
	return b.Copy(dst, src)
}
