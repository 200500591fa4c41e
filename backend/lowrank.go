package backend

// Low-rank-plus-diagonal algebra for a precision Λ = W Wᵀ + Ψ, W d×p, Ψ = Diag(ψ) ≻ 0, covariance P = Λ⁻¹
// (paper 002, L-RVGA: Algorithm 1, the Woodbury identity and the ensemble sampler of Prop. 1).
//
// Every routine works in O(dp) memory: no d×d object is ever formed, and no operation allocates more than three
// d×p scratch buffers. The hot operations (capacitance factorisation, Woodbury solve, ensemble sampling and one
// inner iteration of the recursive EM) are Ops with reference implementations written only with Backend primitives;
// backends register faster kernels for them (backend/cpu/kernel_lowrank.go). The kernel is selected with W's shape.
//
// NaN handling: ψ is checked (finite and > 0) where it enters (NewLowRank, Refactor, RecursiveEM) with two O(d)
// reductions; W, g, X and μ are not scanned (scan user data once with CheckFinite where it enters). A NaN in them
// propagates into the results; it is never turned into finite numbers silently.

import (
	"math"
	"reflect"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// CapacitanceFunc writes into l (1×p×p) the lower Cholesky factor of the capacitance M = I_p + Wᵀ Ψ⁻¹ W
// (M ⪰ I_p). w is 1×d×p and psi 1×d×1; shapes are checked by the caller.
type CapacitanceFunc func(b Backend, l, w, psi *T) error

// SolveFunc computes the Woodbury solve dst = (W Wᵀ + Ψ)⁻¹ g right to left, never forming W M⁻¹ Wᵀ: u = Wᵀ(g ⊘ ψ),
// v = M⁻¹ u with l = chol(M), dst = (g − W v) ⊘ ψ. g and dst are 1×d×k; dst may be g itself.
type SolveFunc func(b Backend, dst, w, psi, l, g *T) error

// SampleFunc writes K draws of N(μ, (W Wᵀ + Ψ)⁻¹) into the columns of dst (1×d×K) by Prop. 1 of paper 002 in its
// corrected form (the paper prints L(ε − LWᵀx) for L(ε − Wᵀx)): x = Ψ^{-1/2} z, x⁺ = x + Ψ⁻¹ W M⁻¹ (ε − Wᵀ x),
// θ = μ + x⁺. z (d×K) takes normal draws c.Offset … c.Offset+dK−1 row-major, ε (p×K) the next pK draws row-major, so a
// counter gives the same samples on every backend. mu is 1×d×1 or nil (μ = 0).
type SampleFunc func(b Backend, dst, w, psi, l, mu *T, c rng.Counter) error

// EMStepArgs are the operands of one inner iteration of the recursive EM (Algorithm 1 of paper 002)
// on the fixed target S = α (W₀ W₀ᵀ + Ψ₀) + β X Xᵀ.
type EMStepArgs struct {
	// W (1×d×p) and Psi (1×d×1) are the current iterate, overwritten by the next one.
	W, Psi *T
	// W0, Psi0 are W_{t-1}, ψ_{t-1}. Both nil on the first inner iteration, when the iterate is (W_{t-1}, ψ_{t-1})
	// itself; the step then uses the shortcut W_{t-1}ᵀ Ψ⁻¹ W = M − I, Ψ_{t-1} Ψ⁻¹ W = W.
	W0, Psi0 *T
	// X is 1×d×K_c, or nil for β X Xᵀ = 0.
	X           *T
	Alpha, Beta float64
	// Floor > 0 is the lower bound of ψ_new; Floor ≤ 0 asks for max(tiny, 1e-12·max diag S). ψ_new = diag S −
	// rowdot(G, V) is positive in exact arithmetic but can cancel to ≤ 0.
	Floor float64
}

// EMStepFunc performs one inner iteration of Algorithm 1 in the SPD (M+B) form (A = I + M⁻¹B = M⁻¹(M + B), so
// W_new = V(M+B)⁻¹M) and returns the number of entries of ψ_new raised to the floor.
type EMStepFunc func(b Backend, a EMStepArgs) (clamped int, err error)

// The hot operations of the low-rank algebra. Backends add kernels with Register; Select is given W's shape.
var (
	CapacitanceOp = NewOp[CapacitanceFunc]("lowrank.capacitance", capacitanceRef)
	SolveOp       = NewOp[SolveFunc]("lowrank.solve", solveRef)
	SampleOp      = NewOp[SampleFunc]("lowrank.sample", sampleRef)
	EMStepOp      = NewOp[EMStepFunc]("lowrank.em_step", emStepRef)
)

// tinyPsi is the absolute lower bound of the default ψ floor: the smallest normal float64.
const tinyPsi = 0x1p-1022

// RelPsiFloor is the default ψ floor relative to max diag S.
const RelPsiFloor = 1e-12

// LowRank is a precision Λ = W Wᵀ + Ψ with the Cholesky factor of its capacitance M = I_p + Wᵀ Ψ⁻¹ W cached.
// W and Psi belong to the caller (LowRank reads them and never frees them); call Refactor after changing them.
type LowRank struct {
	W   *T // 1×d×p
	Psi *T // 1×d×1, ψ > 0
	L   *T // 1×p×p, lower Cholesky factor of M, owned by the LowRank

	b Backend
}

// NewLowRank checks the shapes of w (1×d×p) and psi (1×d×1), checks ψ > 0 (ErrDomain naming "psi"), allocates
// L and factors the capacitance.
func NewLowRank(b Backend, w, psi *T) (*LowRank, error) {
	const op = "lowrank"
	if _, _, err := checkFactors(op, w, psi); err != nil {
		return nil, err
	}
	p := w.Cols()
	l, err := b.Alloc(tensor.Shape{Batch: 1, Rows: p, Cols: p})
	if err != nil {
		return nil, err
	}
	lr := &LowRank{W: w, Psi: psi, L: l, b: b}
	if err := lr.Refactor(); err != nil {
		b.Free(l)
		return nil, err
	}
	return lr, nil
}

// Refactor recomputes L after W or ψ changed (checking ψ > 0 again).
func (lr *LowRank) Refactor() error {
	if _, _, err := checkFactors("lowrank", lr.W, lr.Psi); err != nil {
		return err
	}
	if err := checkPsiPositive(lr.b, "lowrank", lr.Psi); err != nil {
		return err
	}
	f, _ := CapacitanceOp.Select(lr.b, lr.W.Shape())
	return f(lr.b, lr.L, lr.W, lr.Psi)
}

// Close frees L. W and Psi are left to the caller.
func (lr *LowRank) Close() {
	if lr.L != nil {
		lr.b.Free(lr.L)
		lr.L = nil
	}
}

// Dims returns d and p.
func (lr *LowRank) Dims() (d, p int) { return lr.W.Rows(), lr.W.Cols() }

// checkRHS checks a d×k right-hand side or destination.
func (lr *LowRank) checkRHS(op string, names []string, ts ...*T) error {
	if err := CheckNotNil(op, names, ts...); err != nil {
		return err
	}
	d := lr.W.Rows()
	k := ts[0].Cols()
	for i, t := range ts {
		if t.Batch() != 1 || t.Rows() != d || t.Cols() != k || k < 1 {
			return shapeErr(op, names[i], "shape %v, want 1×%d×k with k ≥ 1 and all right-hand sides alike", t.Shape(), d)
		}
	}
	return nil
}

// Solve computes dst = Λ⁻¹ g = (W Wᵀ + Ψ)⁻¹ g for the d×k right-hand sides g by Woodbury, right to left.
// dst may be g itself.
func (lr *LowRank) Solve(dst, g *T) error {
	const op = "lowrank.solve"
	if err := lr.checkRHS(op, []string{"dst", "g"}, dst, g); err != nil {
		return err
	}
	f, _ := SolveOp.Select(lr.b, lr.W.Shape())
	return f(lr.b, dst, lr.W, lr.Psi, lr.L, g)
}

// Apply computes dst = Λ g = W (Wᵀ g) + ψ ⊙ g. dst may be g itself.
func (lr *LowRank) Apply(dst, g *T) error {
	const op = "lowrank.apply"
	if err := lr.checkRHS(op, []string{"dst", "g"}, dst, g); err != nil {
		return err
	}
	b := lr.b
	u, err := b.Alloc(tensor.Shape{Batch: 1, Rows: lr.W.Cols(), Cols: g.Cols()})
	if err != nil {
		return err
	}
	defer b.Free(u)
	if err := b.Gemm(blas.Trans, blas.NoTrans, 1, lr.W, g, 0, u); err != nil {
		return err
	}
	if err := b.ScaleRows(dst, g, lr.Psi); err != nil {
		return err
	}
	return b.Gemm(blas.NoTrans, blas.NoTrans, 1, lr.W, u, 1, dst)
}

// LogDet returns log det Λ = Σ log ψ_i + 2 Σ log L_ii (matrix determinant lemma).
func (lr *LowRank) LogDet() (float64, error) {
	b := lr.b
	var s scratch
	defer s.free(b)
	d := lr.W.Rows()
	lg, err := s.get(b, d, 1)
	if err != nil {
		return 0, err
	}
	if err := b.Map(lg, Log, 1, lr.Psi); err != nil {
		return 0, err
	}
	sum, err := reduceScalar(b, &s, ReduceSum, lg)
	if err != nil {
		return 0, err
	}
	p := lr.W.Cols()
	h := tensor.NewHost(1, p, p)
	if err := b.Download(h, lr.L); err != nil {
		return 0, err
	}
	for i := 0; i < p; i++ {
		sum += 2 * math.Log(h.At(0, i, i))
	}
	return sum, nil
}

// Trace returns Tr Λ⁻¹ = Σ 1/ψ_i − Tr(M⁻¹ Cᵀ C), C = Ψ⁻¹ W (Woodbury), computed as Σ 1/ψ_i − ‖C L⁻ᵀ‖²_F.
// It uses one d×p scratch buffer.
func (lr *LowRank) Trace() (float64, error) {
	b := lr.b
	var s scratch
	defer s.free(b)
	d, p := lr.W.Rows(), lr.W.Cols()
	r, err := s.get(b, d, 1)
	if err != nil {
		return 0, err
	}
	if err := b.Map(r, Recip, 1, lr.Psi); err != nil {
		return 0, err
	}
	tr, err := reduceScalar(b, &s, ReduceSum, r)
	if err != nil {
		return 0, err
	}
	c, err := s.get(b, d, p)
	if err != nil {
		return 0, err
	}
	if err := b.ScaleRows(c, lr.W, r); err != nil {
		return 0, err
	}
	if err := b.Trsm(blas.Right, blas.Lower, blas.Trans, blas.NonUnit, 1, lr.L, c); err != nil {
		return 0, err
	}
	q, err := reduceScalar(b, &s, ReduceSumSq, c)
	if err != nil {
		return 0, err
	}
	return tr - q, nil
}

// Sample writes K = dst.Cols() draws of N(μ, Λ⁻¹) into the columns of dst (1×d×K) with the ensemble sampler of
// Prop. 1, corrected as SampleFunc says (see it for the random stream). mu is 1×d×1 or nil.
func (lr *LowRank) Sample(dst, mu *T, c rng.Counter) error {
	const op = "lowrank.sample"
	if err := lr.checkRHS(op, []string{"dst"}, dst); err != nil {
		return err
	}
	if mu != nil {
		if err := CheckSame(op, "mu", mu, tensor.Shape{Batch: 1, Rows: lr.W.Rows(), Cols: 1}); err != nil {
			return err
		}
	}
	f, _ := SampleOp.Select(lr.b, lr.W.Shape())
	return f(lr.b, dst, lr.W, lr.Psi, lr.L, mu, c)
}

// EMOptions configures RecursiveEM.
type EMOptions struct {
	// Inner is the number of inner EM iterations n_in (default 1 when 0).
	Inner int
	// PsiFloor is the lower bound of ψ; 0 means max(tiny, 1e-12·max diag S_t).
	PsiFloor float64
}

// EMStats reports on a RecursiveEM call.
type EMStats struct {
	// Clamped counts the entries of ψ raised to the floor, summed over inner iterations (a health metric).
	Clamped int
}

// RecursiveEM is Algorithm 1 of paper 002 (Sec. 3.2): it replaces (W, ψ) in place by the factor-analysis
// approximation W Wᵀ + Ψ ≈_FA S_t = α (W Wᵀ + Ψ) + β X Xᵀ (28), with opt.Inner iterations of the fixed point
// (20)–(21), warm-started at the old (W, ψ), in the SPD (M+B) form and with the first-iteration shortcut.
// w is 1×d×p, psi 1×d×1 (ψ > 0), x 1×d×K_c or nil. α, β ≥ 0, not both 0. With more than one inner iteration
// it keeps a copy of the old W and ψ (one d×p and one d buffer), since S_t stays fixed over the inner loop; a caller
// that keeps (W_{t-1}, ψ_{t-1}) anyway saves that copy with RecursiveEMFrom.
func RecursiveEM(b Backend, w, psi, x *T, alpha, beta float64, opt EMOptions) (EMStats, error) {
	const op = "lowrank.em"
	var st EMStats
	if err := checkEM(b, op, w, psi, x, alpha, beta, opt); err != nil {
		return st, err
	}
	if opt.Inner <= 1 {
		return emLoop(b, w, psi, nil, nil, x, alpha, beta, opt)
	}
	// Keep (W_{t-1}, ψ_{t-1}): S_t stays fixed over the inner loop.
	var s scratch
	defer s.free(b)
	w0, err := s.get(b, w.Rows(), w.Cols())
	if err != nil {
		return st, err
	}
	psi0, err := s.get(b, psi.Rows(), 1)
	if err != nil {
		return st, err
	}
	if err := b.Copy(w0, w); err != nil {
		return st, err
	}
	if err := b.Copy(psi0, psi); err != nil {
		return st, err
	}
	return emLoop(b, w, psi, w0, psi0, x, alpha, beta, opt)
}

// RecursiveEMFrom is RecursiveEM with the old factors kept apart: it writes into (w, psi) the factor-analysis
// approximation W Wᵀ + Ψ ≈_FA S_t = α (W₀ W₀ᵀ + Ψ₀) + β X Xᵀ (28) after opt.Inner iterations of (20)–(21)
// warm-started at (W₀, ψ₀) = (w0, psi0), and leaves w0 and psi0 unchanged. The iterates, and so the result, are
// bit for bit those of RecursiveEM on a copy of (w0, psi0): the first iteration runs on w = w0 with the first-iteration
// shortcut, the later ones read S_t from (w0, psi0) in place of RecursiveEM's private copy. A caller that keeps
// (W_{t-1}, ψ_{t-1}) anyway (to leave its state unchanged when an update fails) thus needs no d×p buffer beyond w.
// w0, psi0 have the shapes of w, psi and must not share storage with them; checks are made before anything is
// written.
func RecursiveEMFrom(b Backend, w, psi, w0, psi0, x *T, alpha, beta float64, opt EMOptions) (EMStats, error) {
	const op = "lowrank.em"
	var st EMStats
	if err := CheckNotNil(op, []string{"w0", "psi0"}, w0, psi0); err != nil {
		return st, err
	}
	if _, _, err := checkFactors(op, w, psi); err != nil {
		return st, err
	}
	if err := CheckSame(op, "w0", w0, w.Shape()); err != nil {
		return st, err
	}
	if err := CheckSame(op, "psi0", psi0, psi.Shape()); err != nil {
		return st, err
	}
	for _, pr := range []struct {
		name   string
		a, out *T
	}{{"w0", w0, w}, {"w0", w0, psi}, {"psi0", psi0, w}, {"psi0", psi0, psi}} {
		if sameStorage(pr.a, pr.out) {
			return st, shapeErr(op, pr.name, "shares storage with w or psi, which the call overwrites")
		}
	}
	if err := checkEM(b, op, w0, psi0, x, alpha, beta, opt); err != nil {
		return st, err
	}
	if err := b.Copy(w, w0); err != nil {
		return st, err
	}
	if err := b.Copy(psi, psi0); err != nil {
		return st, err
	}
	return emLoop(b, w, psi, w0, psi0, x, alpha, beta, opt)
}

// sameStorage reports whether a and b are views of one storage (false when the storage type cannot be compared).
func sameStorage(a, b *T) bool {
	sa, sb := a.Storage(), b.Storage()
	ta := reflect.TypeOf(sa)
	if ta == nil || ta != reflect.TypeOf(sb) || !ta.Comparable() {
		return false
	}
	return sa == sb
}

// checkEM checks the operands of RecursiveEM and that ψ is finite and > 0.
func checkEM(b Backend, op string, w, psi, x *T, alpha, beta float64, opt EMOptions) error {
	d, _, err := checkFactors(op, w, psi)
	if err != nil {
		return err
	}
	if x != nil {
		if x.Batch() != 1 || x.Rows() != d || x.Cols() < 1 {
			return shapeErr(op, "x", "shape %v, want 1×%d×K_c", x.Shape(), d)
		}
	}
	if !(alpha >= 0) || math.IsInf(alpha, 0) {
		return Errorf(op, "alpha", ErrDomain, "α = %v, want finite α ≥ 0", alpha)
	}
	if !(beta >= 0) || math.IsInf(beta, 0) {
		return Errorf(op, "beta", ErrDomain, "β = %v, want finite β ≥ 0", beta)
	}
	if alpha == 0 && (beta == 0 || x == nil) {
		return Errorf(op, "alpha", ErrDomain, "S_t = 0 (α = 0 and no β X Xᵀ term)")
	}
	if opt.Inner < 0 {
		return Errorf(op, "inner", ErrDomain, "%d inner iterations", opt.Inner)
	}
	if !(opt.PsiFloor >= 0) || math.IsInf(opt.PsiFloor, 0) {
		return Errorf(op, "floor", ErrDomain, "ψ floor %v, want finite ≥ 0", opt.PsiFloor)
	}
	return checkPsiPositive(b, op, psi)
}

// emLoop runs max(opt.Inner, 1) inner iterations of Algorithm 1 on the iterate (w, psi), which holds
// (W_{t-1}, ψ_{t-1}) on entry; (w0, psi0) is a second copy of them, read by the iterations after the first (nil
// when there is one iteration only).
func emLoop(b Backend, w, psi, w0, psi0, x *T, alpha, beta float64, opt EMOptions) (EMStats, error) {
	var st EMStats
	step, _ := EMStepOp.Select(b, w.Shape())
	a := EMStepArgs{W: w, Psi: psi, X: x, Alpha: alpha, Beta: beta, Floor: opt.PsiFloor}
	for it := 0; it < max(opt.Inner, 1); it++ {
		if it > 0 {
			a.W0, a.Psi0 = w0, psi0
		}
		n, err := step(b, a)
		st.Clamped += n
		if err != nil {
			return st, err
		}
	}
	return st, nil
}

// ---- shared helpers ----

// checkFactors checks that w is 1×d×p and psi 1×d×1 with d, p ≥ 1.
func checkFactors(op string, w, psi *T) (d, p int, err error) {
	if err := CheckNotNil(op, []string{"w", "psi"}, w, psi); err != nil {
		return 0, 0, err
	}
	d, p = w.Rows(), w.Cols()
	if w.Batch() != 1 || d < 1 || p < 1 {
		return 0, 0, shapeErr(op, "w", "shape %v, want 1×d×p with d, p ≥ 1", w.Shape())
	}
	if err := CheckSame(op, "psi", psi, tensor.Shape{Batch: 1, Rows: d, Cols: 1}); err != nil {
		return 0, 0, err
	}
	return d, p, nil
}

// checkPsiPositive returns ErrDomain naming "psi" unless every ψ_i is finite and > 0: one min and one sum
// reduction (the sum catches NaN and +Inf whatever the backend's min does with NaN).
func checkPsiPositive(b Backend, op string, psi *T) error {
	var s scratch
	defer s.free(b)
	mn, err := reduceScalar(b, &s, ReduceMin, psi)
	if err != nil {
		return err
	}
	sum, err := reduceScalar(b, &s, ReduceSum, psi)
	if err != nil {
		return err
	}
	if !(mn > 0) || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return Errorf(op, "psi", ErrDomain, "ψ must be finite and > 0 (min %v, sum %v)", mn, sum)
	}
	return nil
}

// scratch tracks temporary tensors allocated on a backend, freed together.
type scratch struct{ ts []*T }

func (s *scratch) get(b Backend, rows, cols int) (*T, error) {
	t, err := b.Alloc(tensor.Shape{Batch: 1, Rows: rows, Cols: cols})
	if err != nil {
		return nil, err
	}
	s.ts = append(s.ts, t)
	return t, nil
}

func (s *scratch) free(b Backend) {
	for i := len(s.ts) - 1; i >= 0; i-- {
		b.Free(s.ts[i])
	}
	s.ts = nil
}

// reduceScalar reduces all of x (batch 1) to a host scalar.
func reduceScalar(b Backend, s *scratch, op ReduceOp, x *T) (float64, error) {
	r, err := s.get(b, 1, 1)
	if err != nil {
		return 0, err
	}
	if err := b.Reduce(r, op, AxisAll, x); err != nil {
		return 0, err
	}
	h := tensor.NewHost(1, 1, 1)
	if err := b.Download(h, r); err != nil {
		return 0, err
	}
	return h.At(0, 0, 0), nil
}

// ---- reference implementations (Backend primitives only) ----

// capacitanceRef: S = Ψ^{-1/2} W (one d×p buffer), L = chol(I + SᵀS).
func capacitanceRef(b Backend, l, w, psi *T) error {
	var s scratch
	defer s.free(b)
	d, p := w.Rows(), w.Cols()
	r, err := s.get(b, d, 1)
	if err != nil {
		return err
	}
	if err := b.Map(r, Sqrt, 1, psi); err != nil {
		return err
	}
	if err := b.Map(r, Recip, 1, r); err != nil {
		return err
	}
	sw, err := s.get(b, d, p)
	if err != nil {
		return err
	}
	if err := b.ScaleRows(sw, w, r); err != nil {
		return err
	}
	if err := b.Syrk(blas.Trans, 1, sw, 0, l); err != nil {
		return err
	}
	if err := b.AddDiag(l, 1); err != nil {
		return err
	}
	return b.Potrf(l)
}

// solveRef: Woodbury right to left with a d×k scratch.
func solveRef(b Backend, dst, w, psi, l, g *T) error {
	var s scratch
	defer s.free(b)
	d, p, k := w.Rows(), w.Cols(), g.Cols()
	r, err := s.get(b, d, 1)
	if err != nil {
		return err
	}
	if err := b.Map(r, Recip, 1, psi); err != nil {
		return err
	}
	t, err := s.get(b, d, k) // t = g ⊘ ψ
	if err != nil {
		return err
	}
	if err := b.ScaleRows(t, g, r); err != nil {
		return err
	}
	u, err := s.get(b, p, k)
	if err != nil {
		return err
	}
	if err := b.Gemm(blas.Trans, blas.NoTrans, 1, w, t, 0, u); err != nil {
		return err
	}
	if err := b.Potrs(l, u); err != nil { // v = M⁻¹ u
		return err
	}
	// dst = t − (W v) ⊘ ψ; g is no longer read, so dst may be g.
	if err := b.Gemm(blas.NoTrans, blas.NoTrans, 1, w, u, 0, dst); err != nil {
		return err
	}
	if err := b.ScaleRows(dst, dst, r); err != nil {
		return err
	}
	return b.Axpby(dst, 1, t, -1, dst)
}

// sampleRef: Prop. 1 corrected with no d×p scratch:
// dst = Z; dst ← Ψ^{-1/2} dst (= x); E ← E − Wᵀ x; E ← M⁻¹ E; dst ← Ψ⁻¹ (Ψ x + W E); dst ← dst + μ 1ᵀ.
func sampleRef(b Backend, dst, w, psi, l, mu *T, c rng.Counter) error {
	var s scratch
	defer s.free(b)
	d, p, k := w.Rows(), w.Cols(), dst.Cols()
	if err := b.FillNormal(dst, c); err != nil {
		return err
	}
	e, err := s.get(b, p, k)
	if err != nil {
		return err
	}
	if err := b.FillNormal(e, c.Advance(d*k)); err != nil {
		return err
	}
	r, err := s.get(b, d, 1)
	if err != nil {
		return err
	}
	if err := b.Map(r, Sqrt, 1, psi); err != nil {
		return err
	}
	if err := b.Map(r, Recip, 1, r); err != nil {
		return err
	}
	if err := b.ScaleRows(dst, dst, r); err != nil { // x = Ψ^{-1/2} z ~ N(0, Ψ⁻¹)
		return err
	}
	if err := b.Gemm(blas.Trans, blas.NoTrans, -1, w, dst, 1, e); err != nil { // ε − Wᵀx
		return err
	}
	if err := b.Potrs(l, e); err != nil { // M⁻¹(ε − Wᵀx)
		return err
	}
	if err := b.ScaleRows(dst, dst, psi); err != nil {
		return err
	}
	if err := b.Gemm(blas.NoTrans, blas.NoTrans, 1, w, e, 1, dst); err != nil {
		return err
	}
	if err := b.Map(r, Recip, 1, psi); err != nil {
		return err
	}
	if err := b.ScaleRows(dst, dst, r); err != nil { // x⁺ = x + Ψ⁻¹ W M⁻¹(ε − Wᵀx)
		return err
	}
	if mu == nil {
		return nil
	}
	ones, err := s.get(b, 1, k)
	if err != nil {
		return err
	}
	if err := b.Fill(ones, 1); err != nil {
		return err
	}
	return b.Gemm(blas.NoTrans, blas.NoTrans, 1, mu, ones, 1, dst) // θ = μ 1ᵀ + x⁺
}

// emStepRef is one inner iteration of Algorithm 1 in the SPD form, with two d×p buffers (C/G, V):
//
//	s = diag S = α(rowsq(W₀) + ψ₀) + β rowsq(X)
//	C = Ψ⁻¹ W,  M = I + Wᵀ C
//	V = S Ψ⁻¹ W = β X (Xᵀ C) + α (W₀ (W₀ᵀ C) + Ψ₀ C)      [first iteration: α W M]
//	B = Cᵀ V,   R = chol(M + B),   G = V (M + B)⁻¹
//	ψ_new = s − rowdot(G, V),   W_new = G M                   ((20)–(21) with A = M⁻¹(M + B))
func emStepRef(b Backend, a EMStepArgs) (int, error) {
	var s scratch
	defer s.free(b)
	w, psi, x := a.W, a.Psi, a.X
	d, p := w.Rows(), w.Cols()
	first := a.W0 == nil
	w0, psi0 := a.W0, a.Psi0
	if first {
		w0, psi0 = w, psi
	}
	useX := x != nil && a.Beta != 0
	sd, err := s.get(b, d, 1)
	if err != nil {
		return 0, err
	}
	tmp, err := s.get(b, d, 1)
	if err != nil {
		return 0, err
	}
	if err := b.RowDots(sd, w0, w0); err != nil {
		return 0, err
	}
	if err := b.Axpby(sd, a.Alpha, sd, a.Alpha, psi0); err != nil {
		return 0, err
	}
	if useX {
		if err := b.RowDots(tmp, x, x); err != nil {
			return 0, err
		}
		if err := b.Axpby(sd, 1, sd, a.Beta, tmp); err != nil {
			return 0, err
		}
	}
	floor := a.Floor
	if floor <= 0 {
		mx, err := reduceScalar(b, &s, ReduceMax, sd)
		if err != nil {
			return 0, err
		}
		floor = max(tinyPsi, RelPsiFloor*mx)
	}
	if err := b.Map(tmp, Recip, 1, psi); err != nil {
		return 0, err
	}
	c, err := s.get(b, d, p)
	if err != nil {
		return 0, err
	}
	if err := b.ScaleRows(c, w, tmp); err != nil { // C = Ψ⁻¹ W
		return 0, err
	}
	m, err := s.get(b, p, p)
	if err != nil {
		return 0, err
	}
	if err := b.Gemm(blas.Trans, blas.NoTrans, 1, w, c, 0, m); err != nil {
		return 0, err
	}
	if err := b.AddDiag(m, 1); err != nil {
		return 0, err
	}
	if err := b.Symmetrize(m); err != nil {
		return 0, err
	}
	v, err := s.get(b, d, p)
	if err != nil {
		return 0, err
	}
	if first {
		// W_{t-1}ᵀ C = M − I and Ψ_{t-1} C = W_{t-1}: α(W₀(W₀ᵀC) + Ψ₀C) = α W M.
		if err := b.Gemm(blas.NoTrans, blas.NoTrans, a.Alpha, w, m, 0, v); err != nil {
			return 0, err
		}
	} else {
		z, err := s.get(b, p, p)
		if err != nil {
			return 0, err
		}
		if err := b.Gemm(blas.Trans, blas.NoTrans, 1, w0, c, 0, z); err != nil {
			return 0, err
		}
		if err := b.ScaleRows(v, c, psi0); err != nil {
			return 0, err
		}
		if err := b.Gemm(blas.NoTrans, blas.NoTrans, a.Alpha, w0, z, a.Alpha, v); err != nil {
			return 0, err
		}
	}
	if useX {
		y, err := s.get(b, x.Cols(), p)
		if err != nil {
			return 0, err
		}
		if err := b.Gemm(blas.Trans, blas.NoTrans, 1, x, c, 0, y); err != nil {
			return 0, err
		}
		if err := b.Gemm(blas.NoTrans, blas.NoTrans, a.Beta, x, y, 1, v); err != nil {
			return 0, err
		}
	}
	mb, err := s.get(b, p, p)
	if err != nil {
		return 0, err
	}
	if err := b.Gemm(blas.Trans, blas.NoTrans, 1, c, v, 0, mb); err != nil { // B = Cᵀ V
		return 0, err
	}
	if err := b.Axpby(mb, 1, mb, 1, m); err != nil {
		return 0, err
	}
	if err := b.Symmetrize(mb); err != nil {
		return 0, err
	}
	if err := b.Potrf(mb); err != nil { // R Rᵀ = M + B ⪰ I
		return 0, err
	}
	g := c // C is dead: G = V R⁻ᵀ R⁻¹
	if err := b.Copy(g, v); err != nil {
		return 0, err
	}
	if err := b.Trsm(blas.Right, blas.Lower, blas.Trans, blas.NonUnit, 1, mb, g); err != nil {
		return 0, err
	}
	if err := b.Trsm(blas.Right, blas.Lower, blas.NoTrans, blas.NonUnit, 1, mb, g); err != nil {
		return 0, err
	}
	if err := b.RowDots(tmp, g, v); err != nil {
		return 0, err
	}
	if err := b.Axpby(psi, 1, sd, -1, tmp); err != nil { // (21): ψ_new = s − rowdot(W_new M⁻¹, V)
		return 0, err
	}
	if err := b.Gemm(blas.NoTrans, blas.NoTrans, 1, g, m, 0, w); err != nil { // (20): W_new = G M
		return 0, err
	}
	return clampPsi(b, &s, psi, floor)
}

// clampPsi raises the entries of psi below floor to floor and counts them. The common case (none) costs one min
// reduction; otherwise ψ goes through the host (O(d), rare: a health event).
func clampPsi(b Backend, s *scratch, psi *T, floor float64) (int, error) {
	mn, err := reduceScalar(b, s, ReduceMin, psi)
	if err != nil {
		return 0, err
	}
	if mn >= floor {
		return 0, nil
	}
	h := tensor.NewHost(1, psi.Rows(), 1)
	if err := b.Download(h, psi); err != nil {
		return 0, err
	}
	n := 0
	for i := 0; i < psi.Rows(); i++ {
		if v := h.At(0, i, 0); v < floor {
			h.Set(0, i, 0, floor)
			n++
		}
	}
	return n, b.Upload(psi, h)
}
