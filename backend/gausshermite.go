package backend

import "github.com/geovb/geovb/tensor"

// GHTanhFunc is the signature of the gh.tanh operation and its kernels; see GHTanh. Kernels receive checked
// operands.
type GHTanhFunc func(b Backend, m1, m2, u, y, sd, zw *T) error

// GHTanhOp is the Gauss–Hermite moments of tanh; kernels are selected on the shape of y.
var GHTanhOp = NewOp[GHTanhFunc]("gh.tanh", ghTanhRef)

// GHTanhBackFunc is the signature of the gh.tanh_back operation and its kernels; see GHTanhBack.
type GHTanhBackFunc func(b Backend, gy, gsum, u, gk, gm, zw *T) error

// GHTanhBackOp is the reverse pass of GHTanh through its nodes; kernels are selected on the shape of gy.
var GHTanhBackOp = NewOp[GHTanhBackFunc]("gh.tanh_back", ghTanhBackRef)

const (
	opGHTanh     = "gh.tanh"
	opGHTanhBack = "gh.tanh_back"
)

// GHTanh propagates Gaussian pre-activations N(y, sd²) (y, sd: batch × R × H, element-wise) through tanh with a
// Q-node Gauss–Hermite rule whose nodes z_q and weights w_q are the rows of zw (1 × 2 × Q, on the backend): it
// writes the node values u_q = tanh(y + z_q·sd) into rows [qR, (q+1)R) of u (batch × QR × H), and
// m1 = Σ_q w_q u_q ≈ E tanh and m2 = Σ_q w_q u_q² ≈ E tanh² (the moment propagation of Honkela & Valpola 2005 that
// paper 004 uses), the sums taken in node order. It is the loop of the batched NFA/NSSM's layer (models/nfa) in one
// call: the reference runs it as 5Q element-wise primitives. No operand may overlap another.
func GHTanh(b Backend, m1, m2, u, y, sd, zw *T) error {
	if err := CheckNotNil(opGHTanh, []string{"m1", "m2", "u", "y", "sd", "zw"}, m1, m2, u, y, sd, zw); err != nil {
		return err
	}
	s := y.Shape()
	for i, x := range []*T{m1, m2, sd} {
		if err := CheckSame(opGHTanh, []string{"m1", "m2", "sd"}[i], x, s); err != nil {
			return err
		}
	}
	q, err := ghNodes(opGHTanh, zw)
	if err != nil {
		return err
	}
	if err := CheckSame(opGHTanh, "u", u, tensor.Shape{Batch: s.Batch, Rows: q * s.Rows, Cols: s.Cols}); err != nil {
		return err
	}
	if s.Len() == 0 {
		return nil
	}
	f, _ := GHTanhOp.Select(b, s)
	return f(b, m1, m2, u, y, sd, zw)
}

// GHTanhBack is GHTanh's reverse pass through its nodes: with GHTanh's node values u and two upstream factors gk
// and gm per element (batch × R × H), it writes gy = Σ_q w_q (1 − u_q²)(gk·u_q + gm) and
// gsum = Σ_q w_q z_q (1 − u_q²)(gk·u_q + gm), in node order. Since ∂u_q/∂y = 1 − u_q² and ∂u_q/∂sd = z_q(1 − u_q²),
// these are ∂/∂y and ∂/∂sd of Σ_q w_q (gm·u_q + gk·u_q²/2) (models/nfa's prop.nonlinBack forms gk and gm from the
// gradients of the moments). No operand may overlap another.
func GHTanhBack(b Backend, gy, gsum, u, gk, gm, zw *T) error {
	if err := CheckNotNil(opGHTanhBack, []string{"gy", "gsum", "u", "gk", "gm", "zw"}, gy, gsum, u, gk, gm, zw); err != nil {
		return err
	}
	s := gy.Shape()
	for i, x := range []*T{gsum, gk, gm} {
		if err := CheckSame(opGHTanhBack, []string{"gsum", "gk", "gm"}[i], x, s); err != nil {
			return err
		}
	}
	q, err := ghNodes(opGHTanhBack, zw)
	if err != nil {
		return err
	}
	if err := CheckSame(opGHTanhBack, "u", u, tensor.Shape{Batch: s.Batch, Rows: q * s.Rows, Cols: s.Cols}); err != nil {
		return err
	}
	if s.Len() == 0 {
		return nil
	}
	f, _ := GHTanhBackOp.Select(b, s)
	return f(b, gy, gsum, u, gk, gm, zw)
}

// ghNodes checks the rule's tensor (1 × 2 × Q, Q ≥ 1) and returns Q.
func ghNodes(op string, zw *T) (int, error) {
	if zw.Batch() != 1 || zw.Rows() != 2 || zw.Cols() < 1 {
		return 0, shapeErr(op, "zw", "shape %v, want 1×2×Q (nodes, weights) with Q ≥ 1", zw.Shape())
	}
	return zw.Cols(), nil
}

// ghRule downloads the nodes and weights of zw.
func ghRule(b Backend, zw *T) (z, w []float64, err error) {
	h := tensor.NewHost(1, 2, zw.Cols())
	if err := b.Download(h, zw); err != nil {
		return nil, nil, err
	}
	z, w = make([]float64, zw.Cols()), make([]float64, zw.Cols())
	for q := range z {
		z[q], w[q] = h.At(0, 0, q), h.At(0, 1, q)
	}
	return z, w, nil
}

// ghNode is the view of node q's values in u.
func ghNode(u *T, q, rows int) *T { return u.Slice(q*rows, (q+1)*rows, 0, u.Cols()) }

func ghTanhRef(b Backend, m1, m2, u, y, sd, zw *T) error {
	z, w, err := ghRule(b, zw)
	if err != nil {
		return err
	}
	tmp, err := b.Alloc(y.Shape())
	if err != nil {
		return err
	}
	defer b.Free(tmp)
	if err := b.Fill(m1, 0); err != nil {
		return err
	}
	if err := b.Fill(m2, 0); err != nil {
		return err
	}
	for q := range z {
		uq := ghNode(u, q, y.Rows())
		for _, f := range []func() error{
			func() error { return b.Axpby(uq, 1, y, z[q], sd) },
			func() error { return b.Map(uq, Tanh, 1, uq) },
			func() error { return b.Axpby(m1, w[q], uq, 1, m1) },
			func() error { return b.Mul(tmp, uq, uq) },
			func() error { return b.Axpby(m2, w[q], tmp, 1, m2) },
		} {
			if err := f(); err != nil {
				return err
			}
		}
	}
	return nil
}

func ghTanhBackRef(b Backend, gy, gsum, u, gk, gm, zw *T) error {
	z, w, err := ghRule(b, zw)
	if err != nil {
		return err
	}
	var tmp [3]*T
	for i := range tmp {
		t, err := b.Alloc(gy.Shape())
		if err != nil {
			return err
		}
		defer b.Free(t)
		tmp[i] = t
	}
	w1, w2, ones := tmp[0], tmp[1], tmp[2]
	if err := b.Fill(ones, 1); err != nil {
		return err
	}
	if err := b.Fill(gy, 0); err != nil {
		return err
	}
	if err := b.Fill(gsum, 0); err != nil {
		return err
	}
	for q := range z {
		uq := ghNode(u, q, gy.Rows())
		for _, f := range []func() error{
			func() error { return b.Mul(w1, uq, uq) },
			func() error { return b.Axpby(w1, 1, ones, -1, w1) },
			func() error { return b.Mul(w2, gk, uq) },
			func() error { return b.Axpby(w2, 1, w2, 1, gm) },
			func() error { return b.Mul(w1, w1, w2) },
			func() error { return b.Axpby(gy, w[q], w1, 1, gy) },
			func() error { return b.Axpby(gsum, w[q]*z[q], w1, 1, gsum) },
		} {
			if err := f(); err != nil {
				return err
			}
		}
	}
	return nil
}
