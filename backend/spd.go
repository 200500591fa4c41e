package backend

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/tensor"
)

// SPDRetractFunc is the signature of the SPD retraction (see SPDRetract). Kernels receive checked operands.
type SPDRetractFunc func(b Backend, dst, sigma, xi *T) error

// SPDTransportFunc is the signature of the SPD vector transport (see SPDTransport). Kernels receive checked operands.
type SPDTransportFunc func(b Backend, dst, s1, s2, xi *T) error

// SPDRetractOp is the batched SPD retraction; kernels are selected on the shape of dst (batch × d × d).
var SPDRetractOp = NewOp[SPDRetractFunc]("spd.retract", spdRetractRef)

// SPDTransportOp is the batched SPD transport; kernels are selected on the shape of dst (batch × d × d).
var SPDTransportOp = NewOp[SPDTransportFunc]("spd.transport", spdTransportRef)

const (
	opSPDRetract   = "spd.retract"
	opSPDTransport = "spd.transport"
)

// checkSPDOperands checks that dst is batch × d × d and that every operand is d × d with batch 1 or dst's batch.
func checkSPDOperands(op string, dst *T, names []string, xs ...*T) error {
	if err := CheckNotNil(op, append([]string{"dst"}, names...), append([]*T{dst}, xs...)...); err != nil {
		return err
	}
	if err := CheckSquare(op, "dst", dst); err != nil {
		return err
	}
	return CheckElementwise(op, dst, names, xs...)
}

// SPDRetract computes dst = sym(Σ + ξ + ½ ξ Σ⁻¹ ξ) for each batch item, the retraction on the SPD manifold of
// paper 000 section 5.1. For symmetric ξ the result is ⪰ ½Σ (R = Σ^{1/2}(I + X + X²/2)Σ^{1/2} with
// X = Σ^{-1/2}ξΣ^{-1/2}, and 1 + x + x²/2 ≥ ½), so it stays SPD for any step. sigma and xi may have batch 1; dst may
// alias either. Σ⁻¹ is applied through a Cholesky factor, never an inverse. A Σ that is not SPD gives an error wrapping
// ErrNotPositiveDefinite naming "sigma" and the batch item.
func SPDRetract(b Backend, dst, sigma, xi *T) error {
	if err := checkSPDOperands(opSPDRetract, dst, []string{"sigma", "xi"}, sigma, xi); err != nil {
		return err
	}
	if dst.Len() == 0 {
		return nil
	}
	f, _ := SPDRetractOp.Select(b, dst.Shape())
	return f(b, dst, sigma, xi)
}

// renameNPD turns a Potrf failure into one that names the operand of the calling operation.
func renameNPD(op, operand string, err error) error {
	var oe *OpError
	if errors.As(err, &oe) && errors.Is(err, ErrNotPositiveDefinite) {
		return BatchErrorf(op, operand, oe.Batch, ErrNotPositiveDefinite, "Cholesky factorisation failed")
	}
	return err
}

// cholCopy returns the lower Cholesky factor of a copy of x, with damping added to the diagonal first.
func cholCopy(b Backend, op, operand string, x *T, damping float64) (*T, error) {
	l, err := b.Alloc(x.Shape())
	if err != nil {
		return nil, err
	}
	if err := b.Copy(l, x); err != nil {
		b.Free(l)
		return nil, err
	}
	if damping != 0 {
		if err := b.AddDiag(l, damping); err != nil {
			b.Free(l)
			return nil, err
		}
	}
	if err := b.Potrf(l); err != nil {
		b.Free(l)
		return nil, renameNPD(op, operand, err)
	}
	return l, nil
}

func spdRetractRef(b Backend, dst, sigma, xi *T) error {
	l, err := cholCopy(b, opSPDRetract, "sigma", sigma, 0)
	if err != nil {
		return err
	}
	defer b.Free(l)
	s := dst.Shape()
	y, err := b.Alloc(s)
	if err != nil {
		return err
	}
	defer b.Free(y)
	// Y = L⁻¹ξ, so ½ YᵀY = ½ ξᵀ Σ⁻¹ ξ, computed by Syrk and therefore exactly symmetric.
	if err := b.Copy(y, xi); err != nil {
		return err
	}
	if err := b.Trsm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, l, y); err != nil {
		return err
	}
	q, err := b.Alloc(s)
	if err != nil {
		return err
	}
	defer b.Free(q)
	if err := b.Syrk(blas.Trans, 0.5, y, 0, q); err != nil {
		return err
	}
	if err := b.Axpby(q, 1, q, 1, sigma); err != nil {
		return err
	}
	if err := b.Axpby(q, 1, q, 1, xi); err != nil {
		return err
	}
	// dst is written only now, after every read of sigma and xi: a broadcast operand may be a matrix of dst.
	if err := b.Copy(dst, q); err != nil {
		return err
	}
	return b.Symmetrize(dst)
}

// SPDTransport computes dst = E ξ Eᵀ with E = (S₂S₁⁻¹)^{1/2}, the principal square root, for each batch item: the
// vector transport of paper 000 section 5.1, which is parallel transport for the affine-invariant
// metric. It is evaluated without a non-symmetric square root as
//
//	L₁ = chol(S₁), N = L₁⁻¹S₂L₁⁻ᵀ = VνVᵀ, N^{1/2} = V ν^{1/2} Vᵀ, E ξ Eᵀ = L₁ N^{1/2} (L₁⁻¹ξL₁⁻ᵀ) N^{1/2} L₁ᵀ,
//
// and the result is symmetrised (E has positive real eigenvalues, so it is the principal root). s1, s2 and xi may have
// batch 1; dst may alias any of them. A non-SPD S₁ or S₂ gives an error wrapping ErrNotPositiveDefinite naming "s1" or
// "s2" and the batch item.
func SPDTransport(b Backend, dst, s1, s2, xi *T) error {
	if err := checkSPDOperands(opSPDTransport, dst, []string{"s1", "s2", "xi"}, s1, s2, xi); err != nil {
		return err
	}
	if dst.Len() == 0 {
		return nil
	}
	f, _ := SPDTransportOp.Select(b, dst.Shape())
	return f(b, dst, s1, s2, xi)
}

func spdTransportRef(b Backend, dst, s1, s2, xi *T) (err error) {
	l1, err := cholCopy(b, opSPDTransport, "s1", s1, 0)
	if err != nil {
		return err
	}
	defer b.Free(l1)
	s := dst.Shape()
	var temps []*T
	defer func() {
		for _, t := range temps {
			b.Free(t)
		}
	}()
	alloc := func(s tensor.Shape) *T {
		if err != nil {
			return nil
		}
		var t *T
		t, err = b.Alloc(s)
		if err == nil {
			temps = append(temps, t)
		}
		return t
	}
	nm, m, p := alloc(s), alloc(s), alloc(s)
	w := alloc(tensor.Shape{Batch: s.Batch, Rows: s.Rows, Cols: 1})
	wmin := alloc(tensor.Shape{Batch: s.Batch, Rows: 1, Cols: 1})
	if err != nil {
		return err
	}
	lower := func(side blas.Side, tA blas.Transpose, x *T) error {
		return b.Trsm(side, blas.Lower, tA, blas.NonUnit, 1, l1, x)
	}
	// N = L₁⁻¹ S₂ L₁⁻ᵀ, symmetrised before the eigen-solver.
	if err = b.Copy(nm, s2); err != nil {
		return err
	}
	if err = lower(blas.Left, blas.NoTrans, nm); err != nil {
		return err
	}
	if err = lower(blas.Right, blas.Trans, nm); err != nil {
		return err
	}
	if err = b.Symmetrize(nm); err != nil {
		return err
	}
	if err = b.Syev(w, nm, nm); err != nil {
		return err
	}
	// N is congruent to S₂, so S₂ is SPD exactly when min ν > 0. The scan costs one value per batch item.
	if err = b.Reduce(wmin, ReduceMin, AxisAll, w); err != nil {
		return err
	}
	hmin := tensor.NewHost(s.Batch, 1, 1)
	if err = b.Download(hmin, wmin); err != nil {
		return err
	}
	for i := 0; i < s.Batch; i++ {
		if v := hmin.At(i, 0, 0); !(v > 0) || math.IsInf(v, 0) {
			return BatchErrorf(opSPDTransport, "s2", i, ErrNotPositiveDefinite, "eigenvalue %g of L₁⁻¹S₂L₁⁻ᵀ", v)
		}
	}
	// U = V diag(ν^{1/4}); N^{1/2} = U Uᵀ by Syrk, exactly symmetric.
	if err = b.Map(w, Sqrt, 1, w); err != nil {
		return err
	}
	if err = b.Map(w, Sqrt, 1, w); err != nil {
		return err
	}
	wr, rerr := w.Reshape(s.Batch, 1, s.Rows)
	if rerr != nil {
		return rerr
	}
	if err = b.ScaleCols(nm, nm, wr); err != nil {
		return err
	}
	if err = b.Syrk(blas.NoTrans, 1, nm, 0, m); err != nil { // m = N^{1/2}
		return err
	}
	// P = L₁⁻¹ ξ L₁⁻ᵀ.
	if err = b.Copy(p, xi); err != nil {
		return err
	}
	if err = lower(blas.Left, blas.NoTrans, p); err != nil {
		return err
	}
	if err = lower(blas.Right, blas.Trans, p); err != nil {
		return err
	}
	// nm = N^{1/2} P N^{1/2}.
	if err = b.Gemm(blas.NoTrans, blas.NoTrans, 1, m, p, 0, nm); err != nil {
		return err
	}
	if err = b.Gemm(blas.NoTrans, blas.NoTrans, 1, nm, m, 0, p); err != nil {
		return err
	}
	// L₁ (·) L₁ᵀ, then symmetrise.
	if err = b.Trmm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, l1, p); err != nil {
		return err
	}
	if err = b.Trmm(blas.Right, blas.Lower, blas.Trans, blas.NonUnit, 1, l1, p); err != nil {
		return err
	}
	if err = b.Symmetrize(p); err != nil {
		return err
	}
	err = b.Copy(dst, p)
	return err
}
