package backend

// ChainNatGradFunc is the signature of the chain.natgrad operation and its kernels; see ChainNatGrad. Kernels
// receive checked operands.
type ChainNatGradFunc func(b Backend, dst, g, breve, ring *T) error

// ChainNatGradOp is the natural gradient of the means of scalar Gaussian Markov chains; kernels are selected on the
// shape of g (batch × chains × steps).
var ChainNatGradOp = NewOp[ChainNatGradFunc]("chain.natgrad", chainNatGradRef)

const opChainNatGrad = "chain.natgrad"

// ChainNatGrad writes Σg = L⁻¹DL⁻ᵀg into dst for every row of g (batch × rows × n). Each row is one scalar Gaussian
// Markov chain q(s_t | s_{t−1}) = N(s̄_t + s̆_t(s_{t−1} − s̄_{t−1}), s̊_t) over n steps, with s̆ and s̊ the matching
// rows of breve (column 0 unused) and ring (paper 004 eq. 20): the natural gradient of the chain's
// means, as two linear recurrences, backward y_t = g_t + s̆_{t+1}y_{t+1} and forward g̃_t = s̊_t y_t + s̆_t g̃_{t−1}.
// The reference runs each recurrence as a recursive-doubling scan, ⌈log₂ n⌉ passes of element-wise primitives on
// shifted column views, each pass data-parallel over all chains and steps (the GPU form; models/fisher has the
// sequential scans); it agrees with the sequential recurrences to rounding. All operands have g's shape (no
// broadcasting); dst may be any of them (the same view), not a partly overlapping one.
func ChainNatGrad(b Backend, dst, g, breve, ring *T) error {
	if err := CheckNotNil(opChainNatGrad, []string{"dst", "g", "breve", "ring"}, dst, g, breve, ring); err != nil {
		return err
	}
	for i, x := range []*T{dst, breve, ring} {
		if err := CheckSame(opChainNatGrad, []string{"dst", "breve", "ring"}[i], x, g.Shape()); err != nil {
			return err
		}
	}
	if dst.Batch() > 1 && dst.BatchStride() == 0 && dst.Rows()*dst.Cols() > 0 {
		return shapeErr(opChainNatGrad, "dst", "destination is a broadcast view (batch stride 0)")
	}
	if g.Len() == 0 {
		return nil
	}
	f, _ := ChainNatGradOp.Select(b, g.Shape())
	return f(b, dst, g, breve, ring)
}

func chainNatGradRef(b Backend, dst, g, breve, ring *T) error {
	n, rows := g.Cols(), g.Rows()
	var scratch [3]*T
	for i := range scratch {
		t, err := b.Alloc(g.Shape())
		if err != nil {
			return err
		}
		defer b.Free(t)
		scratch[i] = t
	}
	a, y, tmp := scratch[0], scratch[1], scratch[2]
	cols := func(t *T, lo, hi int) *T { return t.Slice(0, rows, lo, hi) }
	// Backward: y_t = g_t + a_t·y_{t+1} with a_t = s̆_{t+1}, a_{n−1} = 0.
	if err := b.Copy(y, g); err != nil {
		return err
	}
	if err := b.Copy(cols(a, 0, n-1), cols(breve, 1, n)); err != nil {
		return err
	}
	if err := b.Fill(cols(a, n-1, n), 0); err != nil {
		return err
	}
	if err := chainScan(b, a, y, tmp, true); err != nil {
		return err
	}
	// Forward: g̃_t = s̊_t·y_t + a_t·g̃_{t−1} with a_t = s̆_t, a_0 = 0.
	if err := b.Mul(y, ring, y); err != nil {
		return err
	}
	if err := b.Copy(cols(a, 1, n), cols(breve, 1, n)); err != nil {
		return err
	}
	if err := b.Fill(cols(a, 0, 1), 0); err != nil {
		return err
	}
	if err := chainScan(b, a, y, tmp, false); err != nil {
		return err
	}
	return b.Copy(dst, y)
}

// chainScan solves y_t ← y_t + a_t·y_{t+1} (backward, y_n = 0) or y_t ← y_t + a_t·y_{t−1} (forward, y_{−1} = 0)
// along the columns of every row, in place in y, by recursive doubling: after the pass with shift s, (a_t, y_t) is
// the composition of the affine maps z ↦ a_u z + y_u of the 2s steps from t on (backward) or back (forward), so
// ⌈log₂ n⌉ passes solve the recurrence. A pass updates the columns that have a partner s away, y first (from the
// old a and y), then a; tmp is scratch. a is overwritten.
func chainScan(b Backend, a, y, tmp *T, backward bool) error {
	n, rows := y.Cols(), y.Rows()
	cols := func(t *T, lo, hi int) *T { return t.Slice(0, rows, lo, hi) }
	for s := 1; s < n; s *= 2 {
		m := n - s
		lo, hi := s, 0 // forward: columns [s, n) take their partners s back
		if backward {
			lo, hi = 0, s
		}
		at, ap, yt, yp, tm := cols(a, lo, lo+m), cols(a, hi, hi+m), cols(y, lo, lo+m), cols(y, hi, hi+m), cols(tmp, 0, m)
		if err := b.Mul(tm, at, yp); err != nil {
			return err
		}
		if err := b.Axpby(yt, 1, yt, 1, tm); err != nil {
			return err
		}
		if 2*s >= n {
			break // a is not read again
		}
		if err := b.Mul(tm, at, ap); err != nil {
			return err
		}
		if err := b.Copy(at, tm); err != nil {
			return err
		}
	}
	return nil
}
