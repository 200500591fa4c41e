package lrvga

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// Model is an exponential-family observation model p(y|θ, x) = c(y) exp(ηᵀT(y) − F(η)) with natural parameter
// η = h(θ, x) ∈ R^m, for the general nonlinear L-RVGA (Sec. 4.2). It supplies, per parameter draw,
// the Jacobian ∂h/∂θ, the residual T(y) − E[T(y)|θ] (so ∇_θ log p = (∂h/∂θ)(T(y) − E[T|θ])) and Cov(y|θ); the
// filter forms the GGN/Fisher factor c_i = (∂h/∂θ)(θ_i) Cov(y|θ_i)^{1/2} (41) and never a Hessian.
type Model interface {
	// Outputs returns m, the dimension of η.
	Outputs() int
	// Eval receives K draws as the columns of theta (1×d×K, on the backend) and the observation (x: 1×d×1 on the
	// backend, y). For draw i it writes ∂h/∂θ(θ_i, x) into columns i·m … i·m+m−1 of jac (1×d×Km), T(y) − E[T|θ_i]
	// into res[i·m : i·m+m] and Cov(y|θ_i) (m×m row-major, SPD) into cov[i·m·m : (i+1)·m·m].
	Eval(b backend.Backend, jac, theta, x *tensor.Tensor, y float64, res, cov []float64) error
}

// ConstantJacobian is implemented by models whose ∂h/∂θ does not depend on θ (GLMs: h = xᵀθ). For them, with
// m = 1, the GGN factor of the K draws collapses to one column, X = (∂h/∂θ)·√((1/K)Σ_i Cov(y|θ_i)) (from (41)):
// the same X Xᵀ with K_c = 1 instead of K.
type ConstantJacobian interface {
	ConstantJacobian() bool
}

// facCols is the number of columns of the GGN factor.
func (c Config) facCols() int {
	if cj, ok := c.Model.(ConstantJacobian); ok && cj.ConstantJacobian() && c.Model.Outputs() == 1 {
		return 1
	}
	return c.Samples * c.Model.Outputs()
}

// moments evaluates, for K draws from N(mu, lr⁻¹) (Prop. 1 sampler, stream position f.draws), the mean gradient
// ḡ = (1/K) Σ ∇ log p (into grad, d×1) and, when fac is not nil, the GGN factor X = (1/√K)[c_1 … c_K] (into fac,
// d×Km) of (42)–(47).
func (f *Filter) moments(mu *tensor.Tensor, lr *backend.LowRank, y float64, grad, fac *tensor.Tensor) error {
	b, c := f.b, f.cfg
	d, k, m := c.D, c.Samples, c.Model.Outputs()
	var s []*tensor.Tensor
	defer func() {
		for _, t := range s {
			b.Free(t)
		}
	}()
	get := func(r, cols int) (*tensor.Tensor, error) {
		t, err := b.Alloc(tensor.Shape{Batch: 1, Rows: r, Cols: cols})
		if err == nil {
			s = append(s, t)
		}
		return t, err
	}
	theta, err := get(d, k)
	if err != nil {
		return err
	}
	ctr := rng.Counter{Seed: c.Seed, Stream: streamSample, Offset: f.draws}
	if err := lr.Sample(theta, mu, ctr); err != nil {
		return err
	}
	f.draws += uint64((d + c.P) * k)
	jac, err := get(d, k*m)
	if err != nil {
		return err
	}
	res := make([]float64, k*m)
	cov := make([]float64, k*m*m)
	if err := c.Model.Eval(b, jac, theta, f.x, y, res, cov); err != nil {
		return err
	}
	for i, v := range res {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("model residual %d = %v", i, v)
		}
	}
	// ḡ = jac · res / K.
	rt, err := get(k*m, 1)
	if err != nil {
		return err
	}
	rh, _ := tensor.FromSlice(res, 1, k*m, 1)
	if err := b.Upload(rt, rh); err != nil {
		return err
	}
	if err := b.Gemm(blas.NoTrans, blas.NoTrans, 1/float64(k), jac, rt, 0, grad); err != nil {
		return err
	}
	if fac == nil {
		return nil
	}
	// X = jac · blockdiag(chol Cov_i) / √K: a column scaling for m = 1, one d×m·m×m product per draw otherwise.
	if fac.Cols() == 1 { // constant Jacobian: X = J √(mean Cov)
		mc := 0.0
		for i, v := range cov {
			if !(v >= 0) || math.IsInf(v, 0) {
				return fmt.Errorf("model Cov(y|θ_%d) = %v, want finite ≥ 0", i, v)
			}
			mc += v
		}
		return b.Axpby(fac, math.Sqrt(mc/float64(k)), jac.Slice(0, d, 0, 1), 0, nil)
	}
	if m == 1 {
		sc := tensor.NewHost(1, 1, k)
		for i, v := range cov {
			if !(v >= 0) || math.IsInf(v, 0) {
				return fmt.Errorf("model Cov(y|θ_%d) = %v, want finite ≥ 0", i, v)
			}
			sc.Set(0, 0, i, math.Sqrt(v/float64(k)))
		}
		st, err := get(1, k)
		if err != nil {
			return err
		}
		if err := b.Upload(st, sc); err != nil {
			return err
		}
		return b.ScaleCols(fac, jac, st)
	}
	lt, err := get(m, m)
	if err != nil {
		return err
	}
	lh := tensor.NewHost(1, m, m)
	for i := 0; i < k; i++ {
		var ch mat.Cholesky
		if !ch.Factorize(mat.NewSymDense(m, append([]float64(nil), cov[i*m*m:(i+1)*m*m]...))) {
			return fmt.Errorf("model Cov(y|θ_%d) is not positive definite: %w", i, backend.ErrNotPositiveDefinite)
		}
		var l mat.TriDense
		ch.LTo(&l)
		for r := 0; r < m; r++ {
			for q := 0; q < m; q++ {
				lh.Set(0, r, q, l.At(r, q)/math.Sqrt(float64(k)))
			}
		}
		if err := b.Upload(lt, lh); err != nil {
			return err
		}
		if err := b.Gemm(blas.NoTrans, blas.NoTrans, 1, jac.Slice(0, d, i*m, (i+1)*m), lt, 0, fac.Slice(0, d, i*m, (i+1)*m)); err != nil {
			return err
		}
	}
	return nil
}

// stepModel is the general nonlinear L-RVGA step of Sec. 4.2 and App. G:
//   - "explicit": (139)–(140): moments under q_{t-1}, FA fit, μ_t = μ_{t-1} + P̂_t ḡ;
//   - "extragrad" (partial mirror prox (143)–(145), the paper's final algorithm): then ĝ under N(μ̂_t, P̂_t) and
//     μ_t = μ_{t-1} + P̂_t ĝ, keeping (Ŵ, ψ̂);
//   - "mirror-prox" (full, (139)–(142)): also the extra covariance update, a second FA fit restarted from
//     (W_{t-1}, ψ_{t-1}) with the factor re-evaluated at the draws of N(μ̂_t, P̂_t), and the mean with that P_t;
//   - "implicit": the fixed point of (3)–(4) (expectations under the new q_t), FixedPoint rounds of
//     (W, ψ) ← FA(W_{t-1}, ψ_{t-1}, X(μ, P)), μ ← μ_{t-1} + P_{t-1} ḡ(μ, P) ((3) multiplies by P_{t-1}).
func (f *Filter) stepModel(y float64) error {
	b, c := f.b, f.cfg
	fac, err := b.Alloc(tensor.Shape{Batch: 1, Rows: c.D, Cols: c.facCols()})
	if err != nil {
		return err
	}
	defer b.Free(fac)
	switch c.Scheme {
	case SchemeImplicit:
		// Round 0 evaluates at q_{t-1}; later rounds at the current estimate (nxt).
		from := &f.cur
		for r := 0; r < c.FixedPoint; r++ {
			if err = f.moments(from.mu, from.lr, y, f.g, fac); err != nil {
				return err
			}
			if err = f.fit(&f.cur, fac); err != nil {
				return err
			}
			if err = f.cur.lr.Solve(f.g, f.g); err != nil {
				return err
			}
			if err = b.Axpby(f.nxt.mu, 1, f.cur.mu, 1, f.g); err != nil {
				return err
			}
			from = &f.nxt
		}
		return nil
	}
	if err = f.moments(f.cur.mu, f.cur.lr, y, f.g, fac); err != nil {
		return err
	}
	if err = f.fit(&f.cur, fac); err != nil {
		return err
	}
	if err = f.nxt.lr.Solve(f.g, f.g); err != nil {
		return err
	}
	if err = b.Axpby(f.nxt.mu, 1, f.cur.mu, 1, f.g); err != nil { // μ̂_t (140)/(144)
		return err
	}
	if c.Scheme == SchemeExplicit {
		return nil
	}
	if c.Scheme == SchemeExtragrad {
		if err = f.moments(f.nxt.mu, f.nxt.lr, y, f.g, nil); err != nil {
			return err
		}
		if err = f.nxt.lr.Solve(f.g, f.g); err != nil {
			return err
		}
		err = b.Axpby(f.nxt.mu, 1, f.cur.mu, 1, f.g) // (145)
		return err
	}
	// Full mirror prox: the draws at (μ̂, P̂) give both ĝ and X̂; (141) restarts from (W_{t-1}, ψ_{t-1}).
	if err = f.moments(f.nxt.mu, f.nxt.lr, y, f.g, fac); err != nil {
		return err
	}
	if err = f.fit(&f.cur, fac); err != nil {
		return err
	}
	if err = f.nxt.lr.Solve(f.g, f.g); err != nil {
		return err
	}
	err = b.Axpby(f.nxt.mu, 1, f.cur.mu, 1, f.g) // (142)
	return err
}
