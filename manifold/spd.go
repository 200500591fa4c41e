package manifold

import (
	"fmt"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// SPD is the manifold of d×d symmetric positive definite matrices with the affine-invariant metric
//
//	⟨U, V⟩_Σ = tr(Σ⁻¹ U Σ⁻¹ V),
//
// the affine-invariant metric that paper 000 Section 5.1 (MGVB) uses. Tangent vectors are
// symmetric d×d matrices. Under this metric the Riemannian gradient of f is Σ sym(∇f) Σ, which is the natural
// gradient of MGVB for the covariance block (paper 000 eq. (5.2); the exact Fisher natural gradient is twice that, since the Fisher on
// symmetric directions is ½(Σ⁻¹ ⊗ Σ⁻¹)).
//
// Retraction: SecondOrderRetraction, Σ + ξ + ½ξΣ⁻¹ξ (paper 000 Section 5.1, the SPD retraction of Manopt), which stays SPD for any
// symmetric ξ. Transports: ParallelTransport (default), EξEᵀ with E = (Σ₂Σ₁⁻¹)^{1/2}, an isometry of the metric;
// ProjectionTransport, sym(ξ), which keeps ξ unchanged (every symmetric matrix is tangent) and is not an isometry.
type SPD struct {
	d   int
	opt options
	ws  workspace
}

// Close frees the scratch tensors the operations keep between calls.
func (m *SPD) Close() { m.ws.Close() }

// NewSPD returns the manifold of d×d SPD matrices (d ≥ 1).
func NewSPD(d int, opts ...Option) (*SPD, error) {
	if d < 1 {
		return nil, backend.Errorf("manifold.spd", "", backend.ErrDomain, "dimension %d", d)
	}
	o, err := resolve("spd", opts, []RetractionMethod{SecondOrderRetraction}, []TransportMethod{ParallelTransport, ProjectionTransport})
	if err != nil {
		return nil, err
	}
	return &SPD{d: d, opt: o}, nil
}

func (m *SPD) Name() string { return fmt.Sprintf("SPD(%d)", m.d) }
func (m *SPD) PointShape(batch int) tensor.Shape {
	return tensor.Shape{Batch: batch, Rows: m.d, Cols: m.d}
}

// Dim is d(d+1)/2.
func (m *SPD) Dim() int                           { return m.d * (m.d + 1) / 2 }
func (m *SPD) RetractionMethod() RetractionMethod { return m.opt.retraction }
func (m *SPD) TransportMethod() TransportMethod   { return m.opt.transport }

// sym writes (u + uᵀ)/2.
func (m *SPD) sym(b backend.Backend, dst, u *T) error {
	if err := copyTo(b, dst, u); err != nil {
		return err
	}
	return b.Symmetrize(dst)
}

// Project writes sym(u) = (u + uᵀ)/2, the orthogonal projection onto the symmetric matrices in the metric
// (whitening by Σ^{-1/2} commutes with transposition).
func (m *SPD) Project(b backend.Backend, dst, x, u *T) error {
	if err := checkPoints(m, "manifold.spd.project", []string{"dst", "x", "u"}, dst, x, u); err != nil {
		return err
	}
	return m.sym(b, dst, u)
}

// RiemannianGrad writes Σ sym(G) Σ: then ⟨Σ sym(G) Σ, ξ⟩_Σ = tr(sym(G) ξ) = ⟨G, ξ⟩ for symmetric ξ.
func (m *SPD) RiemannianGrad(b backend.Backend, dst, x, egrad *T) error {
	if err := checkPoints(m, "manifold.spd.rgrad", []string{"dst", "x", "egrad"}, dst, x, egrad); err != nil {
		return err
	}
	ts, err := m.ws.get(b, "rgrad", x.Shape(), 2)
	if err != nil {
		return err
	}
	s, gs := ts[0], ts[1]
	if err := m.sym(b, s, egrad); err != nil {
		return err
	}
	if err := b.Gemm(blas.NoTrans, blas.NoTrans, 1, x, s, 0, gs); err != nil { // Σ sym(G)
		return err
	}
	if err := b.Gemm(blas.NoTrans, blas.NoTrans, 1, gs, x, 0, s); err != nil { // Σ sym(G) Σ
		return err
	}
	if err := b.Symmetrize(s); err != nil {
		return err
	}
	return b.Copy(dst, s)
}

// Retract writes Σ + tξ + ½(tξ)Σ⁻¹(tξ), symmetrised (backend.SPDRetract).
func (m *SPD) Retract(b backend.Backend, dst, x, v *T, t float64) error {
	if err := checkPoints(m, "manifold.spd.retract", []string{"dst", "x", "v"}, dst, x, v); err != nil {
		return err
	}
	ts, err := m.ws.get(b, "retract", v.Shape(), 1)
	if err != nil {
		return err
	}
	tv := ts[0]
	if err := b.Axpby(tv, t, v, 0, nil); err != nil {
		return err
	}
	return backend.SPDRetract(b, dst, x, tv)
}

// Transport writes EvEᵀ, E = (Σ_y Σ_x⁻¹)^{1/2} (ParallelTransport, backend.SPDTransport), or sym(v)
// (ProjectionTransport).
func (m *SPD) Transport(b backend.Backend, dst, x, y, v *T) error {
	if err := checkPoints(m, "manifold.spd.transport", []string{"dst", "x", "y", "v"}, dst, x, y, v); err != nil {
		return err
	}
	if m.opt.transport == ProjectionTransport {
		return m.sym(b, dst, v)
	}
	return backend.SPDTransport(b, dst, x, y, v)
}

// Inner writes tr(Σ⁻¹UΣ⁻¹V) = Σ_ij A_ij B_ij with A = L⁻¹UL⁻ᵀ, B = L⁻¹VL⁻ᵀ and Σ = LLᵀ (Cholesky, no inverse).
// U and V must be symmetric. A Σ that is not SPD gives an error wrapping backend.ErrNotPositiveDefinite.
func (m *SPD) Inner(b backend.Backend, dst, x, u, v *T) error {
	if err := checkInner(m, "manifold.spd.inner", dst, x, u, v); err != nil {
		return err
	}
	ts, err := m.ws.get(b, "inner", x.Shape(), 3)
	if err != nil {
		return err
	}
	l, a, c := ts[0], ts[1], ts[2]
	if err := b.Copy(l, x); err != nil {
		return err
	}
	if err := b.Potrf(l); err != nil {
		return err
	}
	whiten := func(dst, u *T) error { // dst = L⁻¹ u L⁻ᵀ
		if err := b.Copy(dst, u); err != nil {
			return err
		}
		if err := b.Trsm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, l, dst); err != nil {
			return err
		}
		return b.Trsm(blas.Right, blas.Lower, blas.Trans, blas.NonUnit, 1, l, dst)
	}
	if err := whiten(a, u); err != nil {
		return err
	}
	if err := whiten(c, v); err != nil {
		return err
	}
	if err := b.Mul(a, a, c); err != nil {
		return err
	}
	return b.Reduce(dst, backend.ReduceSum, backend.AxisAll, a)
}

// RandomPoint draws Σ = AAᵀ/d + I/2 with A standard normal d×d: a Wishart draw scaled to mean I, shifted so that
// the eigenvalues stay above ½ (condition numbers of order ten).
func (m *SPD) RandomPoint(b backend.Backend, dst *T, c rng.Counter) error {
	if err := checkPoints(m, "manifold.spd.random", []string{"dst"}, dst); err != nil {
		return err
	}
	ts, err := m.ws.get(b, "random", dst.Shape(), 1)
	if err != nil {
		return err
	}
	a := ts[0]
	if err := b.FillNormal(a, c); err != nil {
		return err
	}
	if err := b.Syrk(blas.NoTrans, 1/float64(m.d), a, 0, dst); err != nil {
		return err
	}
	return b.AddDiag(dst, 0.5)
}

// RandomTangent draws sym(Z) with Z standard normal.
func (m *SPD) RandomTangent(b backend.Backend, dst, x *T, c rng.Counter) error {
	if err := checkPoints(m, "manifold.spd.random_tangent", []string{"dst", "x"}, dst, x); err != nil {
		return err
	}
	if err := b.FillNormal(dst, c); err != nil {
		return err
	}
	return b.Symmetrize(dst)
}

var _ Manifold = (*SPD)(nil)
