// Package cholng is Gaussian variational approximation with natural gradients of the Cholesky factor (paper 003,
// Tan, "Natural gradient updates for Gaussian variational approximation", arXiv:2109.00375v7).
//
// The family is q = N(μ, Σ) with Σ = CCᵀ (parametrisation 1, Covariance) or Σ⁻¹ = TTᵀ (parametrisation 2,
// Precision), C and T dense lower triangular (Algs 1a/1b/2a/2b). One draw z ~ N(0, I) per iteration, the
// reparameterisation gradient with the stick-the-landing form of ∇_θ h (§5: ∇log p − ∇log q at fixed λ),
// first derivatives of log p only. Natural gradients use Lemma 1 / Theorem 2 in fused O(d²) forms — with
// a = Cᵀ∇log p + z the lower triangle of H = CᵀḠ₁ is lower(a zᵀ), with v = T⁻¹∇log p + z that of H = TᵀḠ₂ is
// −lower(z vᵀ), so (ΛH̿)_ij is a reverse cumulative sum along row i: no d³ work and no symmetrisation; the triangular kernel is backend.CholNGTri. The sparse families — Block
// (block-diagonal C, Alg 1c) and Arrow (the GLMM local–global sparse precision, Alg 2c, eq. (11)–(12)) — keep their
// state in backend buffers and run on the batched block operations of backend/cholng_blocks.go (sparse.go). The
// optimisers are Snngm (Table 4, with the square roots the printed norms lack: ‖g̃‖ must be a norm) and Adam on Euclidean or natural
// gradients, with the stopping rule of §8; their updates run on the backend too.
package cholng

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// T is short for *tensor.Tensor.
type T = tensor.Tensor

// Param selects the Cholesky parametrisation.
type Param int

const (
	// Covariance is parametrisation 1: Σ = CCᵀ, θ = μ + Cz (Algs 1a/1b).
	Covariance Param = iota + 1
	// Precision is parametrisation 2: Σ⁻¹ = TTᵀ, θ = μ + T⁻ᵀz (Algs 2a/2b).
	Precision
)

func (p Param) String() string {
	switch p {
	case Covariance:
		return "cov"
	case Precision:
		return "prec"
	}
	return fmt.Sprintf("Param(%d)", int(p))
}

// ErrFactor is the cause of errors about a Cholesky factor handed in by the caller.
var ErrFactor = errors.New("cholng: bad Cholesky factor")

// Dense is a Gaussian family with a dense lower-triangular factor L (C or T) held on a backend.
type Dense struct {
	b     backend.Backend
	d     int
	param Param

	Mu, L *T // 1×d×1 and 1×d×d (strict upper triangle kept at 0)
	// Gradient buffers (written by Gradient): μ part and factor part.
	GMu, GL *T

	z, th, gr, a, w *T // 1×d×1 work vectors
	diagV, diagW    *T // 1×d×1 view of L's diagonal; work
	one             *T // 1×1×1

	hz, hth, hgr, hv []float64 // host copies
}

// NewDense makes the family with mean mu0 (nil: 0) and factor l0 (d×d row-major, read lower triangle; nil:
// diag0·I). The factor must have no zero or non-finite diagonal entry, and nothing above its diagonal (a
// non-lower-triangular factor is an error: it would silently change the family).
func NewDense(b backend.Backend, d int, p Param, mu0, l0 []float64, diag0 float64) (*Dense, error) {
	if d < 1 {
		return nil, fmt.Errorf("cholng: dimension %d < 1", d)
	}
	if p != Covariance && p != Precision {
		return nil, fmt.Errorf("cholng: unknown parametrisation %d", int(p))
	}
	if mu0 != nil && len(mu0) != d {
		return nil, fmt.Errorf("cholng: mean has %d entries, want %d", len(mu0), d)
	}
	for i, v := range mu0 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("cholng: mean entry %d is %g; it must be finite", i, v)
		}
	}
	hl := tensor.NewHost(1, d, d)
	if l0 == nil {
		for i := 0; i < d; i++ {
			hl.Set(0, i, i, diag0)
		}
	} else {
		if len(l0) != d*d {
			return nil, fmt.Errorf("cholng: factor has %d entries, want %d×%d", len(l0), d, d)
		}
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				v := l0[i*d+j]
				if j > i && v != 0 {
					return nil, fmt.Errorf("%w: entry (%d,%d) = %g above the diagonal; the factor must be lower triangular", ErrFactor, i, j, v)
				}
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("%w: entry (%d,%d) is %g; it must be finite", ErrFactor, i, j, v)
				}
				hl.Set(0, i, j, v)
			}
		}
	}
	for i := 0; i < d; i++ {
		v := hl.At(0, i, i)
		if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: diagonal entry %d is %g; it must be finite and non-zero", ErrFactor, i, v)
		}
	}
	f := &Dense{b: b, d: d, param: p,
		hz: make([]float64, d), hth: make([]float64, d), hgr: make([]float64, d), hv: make([]float64, d)}
	var err error
	alloc := func(r, c int) *T {
		if err != nil {
			return nil
		}
		var t *T
		t, err = b.Alloc(tensor.Shape{Batch: 1, Rows: r, Cols: c})
		return t
	}
	f.Mu, f.L, f.GMu, f.GL = alloc(d, 1), alloc(d, d), alloc(d, 1), alloc(d, d)
	f.z, f.th, f.gr, f.a, f.w, f.diagW, f.one = alloc(d, 1), alloc(d, 1), alloc(d, 1), alloc(d, 1), alloc(d, 1), alloc(d, 1), alloc(1, 1)
	if err != nil {
		return nil, err
	}
	if err := b.Upload(f.L, hl); err != nil {
		return nil, err
	}
	if mu0 != nil {
		hm, _ := tensor.FromSlice(append([]float64(nil), mu0...), 1, d, 1)
		if err := b.Upload(f.Mu, hm); err != nil {
			return nil, err
		}
	}
	// The diagonal of L as a d×1 view with row stride d+1.
	f.diagV, err = tensor.New(f.L.Storage(), f.L.Offset(), tensor.Shape{Batch: 1, Rows: d, Cols: 1}, d*d, d+1)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Dim returns d. Param returns the parametrisation.
func (f *Dense) Dim() int     { return f.d }
func (f *Dense) Param() Param { return f.param }

// NumParams is ℓ_λ = d + d(d+1)/2, the number of free variational parameters (for α = 0.001√ℓ_λ).
func (f *Dense) NumParams() int { return f.d + f.d*(f.d+1)/2 }

// Close frees the backend buffers.
func (f *Dense) Close() {
	for _, t := range []*T{f.Mu, f.L, f.GMu, f.GL, f.z, f.th, f.gr, f.a, f.w, f.diagW, f.one} {
		f.b.Free(t)
	}
}

// Params returns μ and the factor (d×d row-major) on the host.
func (f *Dense) Params() (mu, l []float64, err error) {
	hm, hl := tensor.NewHost(1, f.d, 1), tensor.NewHost(1, f.d, f.d)
	if err := f.b.Download(hm, f.Mu); err != nil {
		return nil, nil, err
	}
	if err := f.b.Download(hl, f.L); err != nil {
		return nil, nil, err
	}
	return hm.Storage().Host(), hl.Storage().Host(), nil
}

// SetParams overwrites μ and the factor (see NewDense for the checks on l).
func (f *Dense) SetParams(mu, l []float64) error {
	g, err := NewDense(f.b, f.d, f.param, mu, l, 1)
	if err != nil {
		return err
	}
	defer g.Close()
	if err := f.b.Copy(f.Mu, g.Mu); err != nil {
		return err
	}
	return f.b.Copy(f.L, g.L)
}

// Kind selects which gradient Gradient computes.
type Kind int

const (
	// Euclidean is ∇_λ L̂ (Algs 1a/2a): (g, lower(g zᵀ)) or (g, lower(−(θ−μ)vᵀ)).
	Euclidean Kind = iota + 1
	// Natural is F⁻¹∇_λ L̂ (Theorem 2; Algs 1b/2b): (Σg, ΛH̿).
	Natural
)

func (k Kind) String() string {
	switch k {
	case Euclidean:
		return "euclidean"
	case Natural:
		return "natural"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// logDetAbs returns Σ log|L_ii|.
func (f *Dense) logDetAbs() (float64, error) {
	b := f.b
	if err := b.Map(f.diagW, backend.Abs, 1, f.diagV); err != nil {
		return 0, err
	}
	if err := b.Map(f.diagW, backend.Log, 1, f.diagW); err != nil {
		return 0, err
	}
	if err := b.Reduce(f.one, backend.ReduceSum, backend.AxisAll, f.diagW); err != nil {
		return 0, err
	}
	h := tensor.NewHost(1, 1, 1)
	if err := b.Download(h, f.one); err != nil {
		return 0, err
	}
	return h.At(0, 0, 0), nil
}

// Sample draws z from stream c (draws c.Offset … c.Offset+d−1) into the family's z buffer.
func (f *Dense) Sample(c rng.Counter) error { return f.b.FillNormal(f.z, c) }

// SetZ sets the draw z explicitly (tests).
func (f *Dense) SetZ(z []float64) error {
	h, err := tensor.FromSlice(append([]float64(nil), z...), 1, f.d, 1)
	if err != nil {
		return err
	}
	return f.b.Upload(f.z, h)
}

// Draw computes θ = μ + Cz or θ = μ + T⁻ᵀz for the current z, leaving θ − μ in w and θ on the host.
func (f *Dense) draw() error {
	b := f.b
	if err := b.Copy(f.w, f.z); err != nil {
		return err
	}
	var err error
	if f.param == Covariance {
		err = b.Trmm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, f.L, f.w)
	} else {
		err = b.Trsm(blas.Left, blas.Lower, blas.Trans, blas.NonUnit, 1, f.L, f.w)
	}
	if err != nil {
		return err
	}
	if err := b.Axpby(f.th, 1, f.w, 1, f.Mu); err != nil {
		return err
	}
	return f.down(f.hth, f.th)
}

func (f *Dense) down(dst []float64, src *T) error {
	h, _ := tensor.FromSlice(dst, 1, len(dst), 1)
	return f.b.Download(h, src)
}

// ObjectiveSample evaluates h(θ) = log p(y, θ) − log q_λ(θ) at the current z (the same draw as the gradient), with
// log q using Σ log|L_ii| (the diagonal's sign is not constrained).
func (f *Dense) objective(lp float64) (float64, error) {
	ld, err := f.logDetAbs()
	if err != nil {
		return 0, err
	}
	if err := f.down(f.hz, f.z); err != nil {
		return 0, err
	}
	zz := 0.0
	for _, v := range f.hz {
		zz += v * v
	}
	logq := -0.5*float64(f.d)*math.Log(2*math.Pi) - 0.5*zz
	if f.param == Covariance {
		logq -= ld
	} else {
		logq += ld
	}
	return lp - logq, nil
}

// Eval draws θ for the current z and returns h(θ) without computing gradients.
func (f *Dense) Eval(m model.Density) (float64, error) {
	if err := f.draw(); err != nil {
		return 0, err
	}
	lp, err := m.LogDensity(f.hgr, f.hth)
	if err != nil {
		return 0, err
	}
	return f.objective(lp)
}

// Gradient computes, for the current z, h(θ) and the single-draw gradient of the requested kind into GMu and GL.
// It returns the squared Snngm norm of the gradient as well (Table 4, with the square root): for Covariance the
// Euclidean ‖g̃‖₂²; for Precision the Riemannian ⟨ĝ, g̃⟩ = ‖v‖² + Σ_{k>l} z_k²v_l² + ½Σ z_k²v_k² in O(d). For the
// Euclidean kind the norm is ‖ĝ‖₂². Per call: Covariance natural 2 TRMV + the scan, no solve; Precision natural
// 3 TRSV + the scan; all O(d²).
func (f *Dense) Gradient(m model.Density, kind Kind) (h, norm2 float64, err error) {
	b := f.b
	if err := f.draw(); err != nil {
		return 0, 0, err
	}
	lp, err := m.LogDensity(f.hgr, f.hth)
	if err != nil {
		return 0, 0, err
	}
	if h, err = f.objective(lp); err != nil {
		return 0, 0, err
	}
	hg, _ := tensor.FromSlice(f.hgr, 1, f.d, 1)
	if err := b.Upload(f.gr, hg); err != nil { // ∇log p
		return 0, 0, err
	}
	sq := func(x *T) float64 {
		if err != nil {
			return 0
		}
		if err = b.Reduce(f.one, backend.ReduceSumSq, backend.AxisAll, x); err != nil {
			return 0
		}
		hh := tensor.NewHost(1, 1, 1)
		err = b.Download(hh, f.one)
		return hh.At(0, 0, 0)
	}
	chk := func(errs ...error) error {
		for _, e := range errs {
			if e != nil {
				return e
			}
		}
		return nil
	}
	switch {
	case f.param == Covariance && kind == Natural:
		// a = Cᵀ∇log p + z (= Cᵀg: the C⁻ᵀz term of g cancels); Σg = Ca; CH̿ via the scan.
		if err := chk(b.Copy(f.a, f.gr),
			b.Trmm(blas.Left, blas.Lower, blas.Trans, blas.NonUnit, 1, f.L, f.a),
			b.Axpby(f.a, 1, f.a, 1, f.z),
			b.Copy(f.GMu, f.a),
			b.Trmm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, f.L, f.GMu),
			backend.CholNGTri(b, f.GL, f.L, f.a, f.z, 1)); err != nil {
			return 0, 0, err
		}
		norm2 = sq(f.GMu) + sq(f.GL)
	case f.param == Covariance && kind == Euclidean:
		// g = ∇log p + C⁻ᵀz (STL), gradient (g, lower(g zᵀ)) (parametrisation 1, §5).
		if err := chk(b.Copy(f.a, f.z),
			b.Trsm(blas.Left, blas.Lower, blas.Trans, blas.NonUnit, 1, f.L, f.a),
			b.Axpby(f.GMu, 1, f.gr, 1, f.a),
			backend.LowerOuter(b, f.GL, f.GMu, f.z, 1)); err != nil {
			return 0, 0, err
		}
		norm2 = sq(f.GMu) + sq(f.GL)
	case f.param == Precision && kind == Natural:
		// v = T⁻¹∇log p + z (= T⁻¹g); Σg = T⁻ᵀv; TH̿ = −T·dbar(lower(z vᵀ)) via the scan (Lemma 1 in O(d²): lower(TᵀḠ₂) = −lower(z vᵀ)).
		if err := chk(b.Copy(f.a, f.gr),
			b.Trsm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, f.L, f.a),
			b.Axpby(f.a, 1, f.a, 1, f.z),
			b.Copy(f.GMu, f.a),
			b.Trsm(blas.Left, blas.Lower, blas.Trans, blas.NonUnit, 1, f.L, f.GMu),
			backend.CholNGTri(b, f.GL, f.L, f.z, f.a, -1),
			f.down(f.hv, f.a), f.down(f.hz, f.z)); err != nil {
			return 0, 0, err
		}
		norm2 = riemannNorm2(f.hz, f.hv)
	default: // Precision, Euclidean
		// g = ∇log p + Tz (STL); v = T⁻¹g; gradient (g, lower(−(θ−μ)vᵀ)) (parametrisation 2, §5).
		if err := chk(b.Copy(f.a, f.z),
			b.Trmm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, f.L, f.a),
			b.Axpby(f.GMu, 1, f.gr, 1, f.a),
			b.Copy(f.a, f.GMu),
			b.Trsm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, f.L, f.a),
			backend.LowerOuter(b, f.GL, f.w, f.a, -1)); err != nil {
			return 0, 0, err
		}
		norm2 = sq(f.GMu) + sq(f.GL)
	}
	return h, norm2, err
}

// riemannNorm2 is ⟨ĝ, g̃⟩ for the T family in O(d) (ĝᵀF⁻¹ĝ with Lemma 1): ‖v‖² + Σ_{k>l} z_k²v_l² + ½Σ_k z_k²v_k².
func riemannNorm2(z, v []float64) float64 {
	var s, pre float64 // pre = Σ_{l<k} v_l²
	for k := range z {
		zk2, vk2 := z[k]*z[k], v[k]*v[k]
		s += vk2 + zk2*pre + 0.5*zk2*vk2
		pre += vk2
	}
	return s
}

// GradMu and GradL download the last gradient (tests and diagnostics).
func (f *Dense) GradMu() ([]float64, error) {
	out := make([]float64, f.d)
	return out, f.down(out, f.GMu)
}

// GradL returns the factor part of the last gradient, d×d row-major.
func (f *Dense) GradL() ([]float64, error) {
	h := tensor.NewHost(1, f.d, f.d)
	if err := f.b.Download(h, f.GL); err != nil {
		return nil, err
	}
	return h.Storage().Host(), nil
}
