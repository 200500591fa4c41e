package backend

// QRRetractFunc is the signature of the QR retraction on the Stiefel manifold (see QRRetract). Kernels receive
// operands that QRRetract has already checked.
type QRRetractFunc func(b Backend, dst, x, v *T, t float64) error

// QRRetractOp is the batched QR retraction. Kernels are selected on the shape of x (batch × n × p).
var QRRetractOp = NewOp[QRRetractFunc]("stiefel.qr_retract", qrRetractRef)

const opQRRetract = "stiefel.qr_retract"

// QRRetract computes dst = qf(x + t·v) for each batch item: the Q factor of the thin QR factorisation of the n×p
// matrix x + t·v (n ≥ p) whose R has a positive diagonal (paper 000 eq. (3.9); without the sign fix
// qf(W) ≠ W and the retraction is discontinuous). v may be nil, giving dst = qf(x); it may have batch 1 (broadcast
// over x's batch). dst has x's shape and may alias x or v. p > n gives an error wrapping ErrDomain.
func QRRetract(b Backend, dst, x, v *T, t float64) error {
	if err := CheckNotNil(opQRRetract, []string{"dst", "x"}, dst, x); err != nil {
		return err
	}
	n, p := x.Rows(), x.Cols()
	if p > n {
		return Errorf(opQRRetract, "x", ErrDomain, "matrices %d×%d have more columns than rows", n, p)
	}
	if err := CheckSame(opQRRetract, "dst", dst, x.Shape()); err != nil {
		return err
	}
	if v != nil {
		if err := CheckMatrix(opQRRetract, "v", v, x.Batch(), n, p); err != nil {
			return err
		}
	}
	if x.Len() == 0 {
		return nil
	}
	f, _ := QRRetractOp.Select(b, x.Shape())
	return f(b, dst, x, v, t)
}

// qrRetractRef is the reference: the sum into a temporary, then the backend's sign-fixed QR.
func qrRetractRef(b Backend, dst, x, v *T, t float64) error {
	if v == nil {
		// QR allows q to alias a, so no temporary is needed.
		return b.QR(dst, nil, x)
	}
	tmp, err := b.Alloc(x.Shape())
	if err != nil {
		return err
	}
	defer b.Free(tmp)
	if err := b.Axpby(tmp, 1, x, t, v); err != nil {
		return err
	}
	return b.QR(dst, nil, tmp)
}
