package backend

import (
	"math"

	"gonum.org/v1/gonum/blas"
)

// KronSolveFunc is the signature of the damped Kronecker-factored solve (see KronSolve). Kernels receive checked
// operands.
type KronSolveFunc func(b Backend, dst, a, bm, g *T, damping float64) error

// KronSolveOp is the batched K-FAC solve; kernels are selected on the shape of g (batch × m × n).
var KronSolveOp = NewOp[KronSolveFunc]("kron.solve", kronSolveRef)

const opKronSolve = "kron.solve"

// KronSolve computes dst = (B + γI)⁻¹ G (A + γI)⁻¹ for each batch item, that is
// vec(dst) = ((A + γI) ⊗ (B + γI))⁻¹ vec(G) with the column-major vec, the K-FAC natural gradient of paper 000
// eqs. (5.7)–(5.8) with the damping γ that rank-deficient Fisher factors need (S < d samples give singular factors).
// A is n×n and B is m×m, both symmetric positive definite (lower triangles read), each with batch 1 (shared) or
// G's batch; G and dst are m×n. dst may alias g. damping < 0 gives ErrDomain; a factor that is not SPD after
// damping gives an error wrapping ErrNotPositiveDefinite naming "a" or "b" and the batch item, with dst untouched.
func KronSolve(b Backend, dst, a, bm, g *T, damping float64) error {
	if err := CheckNotNil(opKronSolve, []string{"dst", "a", "b", "g"}, dst, a, bm, g); err != nil {
		return err
	}
	if !(damping >= 0) || math.IsInf(damping, 1) {
		return Errorf(opKronSolve, "damping", ErrDomain, "damping %g, want a finite value ≥ 0", damping)
	}
	m, n := g.Rows(), g.Cols()
	if err := CheckSame(opKronSolve, "dst", dst, g.Shape()); err != nil {
		return err
	}
	if err := CheckMatrix(opKronSolve, "a", a, g.Batch(), n, n); err != nil {
		return err
	}
	if err := CheckMatrix(opKronSolve, "b", bm, g.Batch(), m, m); err != nil {
		return err
	}
	if g.Len() == 0 {
		return nil
	}
	f, _ := KronSolveOp.Select(b, g.Shape())
	return f(b, dst, a, bm, g, damping)
}

func kronSolveRef(b Backend, dst, a, bm, g *T, damping float64) error {
	// Both factors first, so that a failure leaves dst untouched.
	la, err := cholCopy(b, opKronSolve, "a", a, damping)
	if err != nil {
		return err
	}
	defer b.Free(la)
	lb, err := cholCopy(b, opKronSolve, "b", bm, damping)
	if err != nil {
		return err
	}
	defer b.Free(lb)
	if err := b.Copy(dst, g); err != nil {
		return err
	}
	// dst ← B⁻¹G, then dst ← dst·L_A⁻ᵀ·L_A⁻¹ = dst·A⁻¹ (A symmetric, so the right solve needs no transpose of G).
	if err := b.Potrs(lb, dst); err != nil {
		return err
	}
	if err := b.Trsm(blas.Right, blas.Lower, blas.Trans, blas.NonUnit, 1, la, dst); err != nil {
		return err
	}
	return b.Trsm(blas.Right, blas.Lower, blas.NoTrans, blas.NonUnit, 1, la, dst)
}
