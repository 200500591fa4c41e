// Package logistic is Bayesian logistic regression with a N(0, σ₀² I) prior, the model of paper 000's German credit
// experiment (Section 5.1; prior N(0, 50 I) from the authors' code, d = 25 with an intercept). It gives
// the log posterior (up to log p(y)) and its gradient batched over many parameter vectors on a backend, the same on
// the host for checks, and the exact Gaussian-VB lower bound by Gauss–Hermite quadrature with the fixed-point
// solver of its optimum, which is the reference the MGVB acceptance tests compare against.
package logistic

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/stablemath"
	"github.com/geovb/geovb/tensor"
)

// T is short for *tensor.Tensor.
type T = tensor.Tensor

// Model is y_i ~ Bernoulli(stablemath.Sigmoid(x_iᵀθ)), θ ~ N(0, PriorVar·I). X is N×D row-major on the host; the backend
// copies (X, yᵀ, Xᵀy) are made by New.
type Model struct {
	N, D     int
	X, Y     []float64
	PriorVar float64

	b      backend.Backend
	x, yt  *T // 1×N×D, 1×1×N
	xty    *T // 1×D×1
	onesS  *T // 1×1×S, reallocated when S changes
	onesSz int
}

// New checks the data (y ∈ {0, 1}, finite X, PriorVar > 0) and uploads it to b.
func New(b backend.Backend, x, y []float64, n, d int, priorVar float64) (*Model, error) {
	switch {
	case n < 1 || d < 1 || len(x) != n*d || len(y) != n:
		return nil, fmt.Errorf("logistic: X has %d values and y %d for n = %d, d = %d", len(x), len(y), n, d)
	case !(priorVar > 0) || math.IsInf(priorVar, 0):
		return nil, fmt.Errorf("logistic: prior variance %v must be positive and finite", priorVar)
	}
	for i, v := range y {
		if v != 0 && v != 1 {
			return nil, fmt.Errorf("logistic: y[%d] = %v, want 0 or 1", i, v)
		}
	}
	m := &Model{N: n, D: d, X: x, Y: y, PriorVar: priorVar, b: b}
	var err error
	if m.x, err = b.Alloc(tensor.Shape{Batch: 1, Rows: n, Cols: d}); err != nil {
		return nil, err
	}
	hx, _ := tensor.FromSlice(x, 1, n, d)
	if err := backend.UploadFinite(b, m.x, hx, "X"); err != nil {
		return nil, err
	}
	if m.yt, err = b.Alloc(tensor.Shape{Batch: 1, Rows: 1, Cols: n}); err != nil {
		return nil, err
	}
	hy, _ := tensor.FromSlice(y, 1, 1, n)
	if err := b.Upload(m.yt, hy); err != nil {
		return nil, err
	}
	if m.xty, err = b.Alloc(tensor.Shape{Batch: 1, Rows: d, Cols: 1}); err != nil {
		return nil, err
	}
	if err := b.Gemm(blas.Trans, blas.Trans, 1, m.x, m.yt, 0, m.xty); err != nil {
		return nil, err
	}
	return m, nil
}

// Dim returns D.
func (m *Model) Dim() int { return m.D }

func (m *Model) ones(s int) (*T, error) {
	if m.onesSz != s {
		if m.onesS != nil {
			m.b.Free(m.onesS)
		}
		o, err := m.b.Alloc(tensor.Shape{Batch: 1, Rows: 1, Cols: s})
		if err != nil {
			return nil, err
		}
		if err := m.b.Fill(o, 1); err != nil {
			return nil, err
		}
		m.onesS, m.onesSz = o, s
	}
	return m.onesS, nil
}

// LogDensityBatch implements model.Batched: it writes log p(θ) + log p(y|θ) for every column θ of theta
// (batch×D×S) into lp (batch×1×S), Σ_i [y_i η_i − softplus(η_i)] − ‖θ‖²/(2σ₀²) − D/2 log(2πσ₀²) with η = Xθ and a
// softplus that does not overflow, and, when grad is not nil, the gradient Xᵀ(y − sigmoid(Xθ)) − θ/σ₀² into grad
// (batch×D×S).
func (m *Model) LogDensityBatch(b backend.Backend, lp, grad, theta *T) error {
	return m.eval(b, lp, grad, theta)
}

// LogDensity implements model.Density: LogDensityBatch for one θ, on the host.
func (m *Model) LogDensity(grad, theta []float64) (float64, error) {
	if len(theta) != m.D || len(grad) != m.D {
		return math.NaN(), backend.Errorf("logistic", "theta", backend.ErrShape, "len(θ) = %d, len(grad) = %d, want %d", len(theta), len(grad), m.D)
	}
	return m.logPost(grad, theta), nil
}

// chunkElems bounds the N×S temporaries of one evaluation: the batch is processed in chunks of fits whose
// η = Xθ arrays hold at most this many values (32 MiB), so that a run of many batched fits (e.g. 1000 German-credit
// fits, whose η would be 1000×1000×100 values) needs no more memory than a few fits. A variable so that tests can
// force small chunks.
var chunkElems = 1 << 22

func (m *Model) eval(b backend.Backend, lp, grad, theta *T) error {
	s := theta.Shape()
	if s.Rows != m.D {
		return backend.Errorf("logistic", "theta", backend.ErrShape, "theta is %v, want batch×%d×S", s, m.D)
	}
	if err := backend.CheckSame("logistic", "lp", lp, tensor.Shape{Batch: s.Batch, Rows: 1, Cols: s.Cols}); err != nil {
		return err
	}
	if grad != nil {
		if err := backend.CheckSame("logistic", "grad", grad, s); err != nil {
			return err
		}
	}
	chunk := max(1, min(s.Batch, chunkElems/max(1, m.N*s.Cols)))
	eta, err := b.Alloc(tensor.Shape{Batch: chunk, Rows: m.N, Cols: s.Cols})
	if err != nil {
		return err
	}
	defer b.Free(eta)
	sp, err := b.Alloc(eta.Shape())
	if err != nil {
		return err
	}
	defer b.Free(sp)
	row, err := b.Alloc(tensor.Shape{Batch: chunk, Rows: 1, Cols: s.Cols})
	if err != nil {
		return err
	}
	defer b.Free(row)
	ones, err := m.ones(s.Cols)
	if err != nil {
		return err
	}
	for lo := 0; lo < s.Batch; lo += chunk {
		hi := min(lo+chunk, s.Batch)
		var g *T
		if grad != nil {
			g = grad.Batches(lo, hi)
		}
		n := hi - lo
		if err := m.evalChunk(b, lp.Batches(lo, hi), g, theta.Batches(lo, hi), eta.Batches(0, n), sp.Batches(0, n), row.Batches(0, n), ones); err != nil {
			return err
		}
	}
	return nil
}

// evalChunk evaluates the fits of one chunk with the temporaries eta, sp (chunk×N×S) and row (chunk×1×S).
func (m *Model) evalChunk(b backend.Backend, lp, grad, theta, eta, sp, row, ones *T) error {
	if err := b.Gemm(blas.NoTrans, blas.NoTrans, 1, m.x, theta, 0, eta); err != nil {
		return err
	}
	// lp = yᵀη − 1ᵀ stablemath.Softplus(η) − ‖θ‖²/(2σ₀²) − D/2 log(2πσ₀²).
	if err := b.Gemm(blas.NoTrans, blas.NoTrans, 1, m.yt, eta, 0, lp); err != nil {
		return err
	}
	if err := b.Map(sp, backend.Softplus, 1, eta); err != nil {
		return err
	}
	if err := b.Reduce(row, backend.ReduceSum, backend.AxisRows, sp); err != nil {
		return err
	}
	if err := b.Axpby(lp, 1, lp, -1, row); err != nil {
		return err
	}
	if err := b.Reduce(row, backend.ReduceSumSq, backend.AxisRows, theta); err != nil {
		return err
	}
	if err := b.Axpby(lp, 1, lp, -0.5/m.PriorVar, row); err != nil {
		return err
	}
	if err := b.Axpby(lp, 1, lp, -0.5*float64(m.D)*math.Log(2*math.Pi*m.PriorVar), ones); err != nil {
		return err
	}
	if grad == nil {
		return nil
	}
	// grad = Xᵀy 1ᵀ − Xᵀ stablemath.Sigmoid(η) − θ/σ₀².
	if err := b.Map(sp, backend.Sigmoid, 1, eta); err != nil {
		return err
	}
	if err := b.Axpby(grad, -1/m.PriorVar, theta, 0, nil); err != nil {
		return err
	}
	if err := b.Gemm(blas.Trans, blas.NoTrans, -1, m.x, sp, 1, grad); err != nil {
		return err
	}
	return b.Gemm(blas.NoTrans, blas.NoTrans, 1, m.xty, ones, 1, grad)
}

// LogPostHost is LogDensity with the gradient in a new slice.
func (m *Model) LogPostHost(theta []float64) (float64, []float64) {
	g := make([]float64, m.D)
	return m.logPost(g, theta), g
}

// logPost is the host evaluation: returns log p and writes the gradient into g.
func (m *Model) logPost(g, theta []float64) float64 {
	lp := -0.5 * float64(m.D) * math.Log(2*math.Pi*m.PriorVar)
	for j, t := range theta {
		lp -= t * t / (2 * m.PriorVar)
		g[j] = -t / m.PriorVar
	}
	for i := 0; i < m.N; i++ {
		xi := m.X[i*m.D : (i+1)*m.D]
		eta := 0.0
		for j, v := range xi {
			eta += v * theta[j]
		}
		lp += m.Y[i]*eta - stablemath.Softplus(eta)
		r := m.Y[i] - stablemath.Sigmoid(eta)
		for j, v := range xi {
			g[j] += r * v
		}
	}
	return lp
}

// Quadrature is the number of Gauss–Hermite points of the exact ELBO (80 points, exact to ~1e-10 on German credit).
const Quadrature = 80

type gh struct{ x, w []float64 }

var ghRule = func() gh {
	x := make([]float64, Quadrature)
	w := make([]float64, Quadrature)
	quad.Hermite{}.FixedLocations(x, w, math.Inf(-1), math.Inf(1))
	for k := range x { // E f(m + s z), z ~ N(0,1) = π^{-1/2} Σ w_k f(m + √2 s x_k)
		x[k] *= math.Sqrt2
		w[k] /= math.Sqrt(math.Pi)
	}
	return gh{x, w}
}()

// expect returns E[softplus], E[sigmoid] and E[sigmoid'] of m + s·z, z ~ N(0, 1), by Gauss–Hermite quadrature.
func expect(mean, sd float64) (sp, sg, dsg float64) {
	for k, x := range ghRule.x {
		e := mean + sd*x
		p := stablemath.Sigmoid(e)
		sp += ghRule.w[k] * stablemath.Softplus(e)
		sg += ghRule.w[k] * p
		dsg += ghRule.w[k] * p * (1 - p)
	}
	return sp, sg, dsg
}

// ExactELBO returns the Gaussian-VB lower bound L(μ, Σ) = E_q[log p(θ) + log p(y|θ)] + H(q) with no Monte Carlo
// error: the prior and entropy terms in closed form and E stablemath.Softplus(x_iᵀθ) by 80-point Gauss–Hermite quadrature in
// the scalar x_iᵀθ ~ N(x_iᵀμ, x_iᵀΣx_i). Σ (D×D) must be SPD.
func (m *Model) ExactELBO(mu []float64, sigma *mat.SymDense) (float64, error) {
	var ch mat.Cholesky
	if !ch.Factorize(sigma) {
		return math.NaN(), errors.New("logistic: Σ is not positive definite")
	}
	d := float64(m.D)
	tr, mm := 0.0, 0.0
	for j := 0; j < m.D; j++ {
		tr += sigma.At(j, j)
		mm += mu[j] * mu[j]
	}
	elbo := -0.5*d*math.Log(2*math.Pi*m.PriorVar) - (tr+mm)/(2*m.PriorVar) + 0.5*d*(1+math.Log(2*math.Pi)) + 0.5*ch.LogDet()
	muv := mat.NewVecDense(m.D, mu)
	for i := 0; i < m.N; i++ {
		xi := mat.NewVecDense(m.D, m.X[i*m.D:(i+1)*m.D])
		mean := mat.Dot(xi, muv)
		sd := math.Sqrt(mat.Inner(xi, sigma, xi))
		sp, _, _ := expect(mean, sd)
		elbo += m.Y[i]*mean - sp
	}
	return elbo, nil
}

// Optimum returns the Gaussian-VB optimum (μ*, Σ*) and its exact ELBO by the fixed-point iteration:
// Σ⁻¹ = Xᵀ diag(E[s(1−s)]) X + I/σ₀², μ ← μ + Σ ∇_μ L, with the expectations by quadrature. The ELBO is concave in
// (μ, chol Σ) for this log-concave likelihood, so the optimum is unique. It stops when ‖∇_μ‖∞ and the change of Σ
// fall below 1e-10 or after 500 iterations (an error).
func (m *Model) Optimum() ([]float64, *mat.SymDense, float64, error) {
	mu := make([]float64, m.D)
	// Start from the Laplace covariance at θ = 0, (XᵀX/4 + I/σ₀²)⁻¹: starting at the prior (Σ = σ₀² I) makes
	// E[s(1−s)] vanish and the iteration diverge.
	p0 := mat.NewSymDense(m.D, nil)
	xd := mat.NewDense(m.N, m.D, m.X)
	p0.SymOuterK(0.25, xd.T())
	for j := 0; j < m.D; j++ {
		p0.SetSym(j, j, p0.At(j, j)+1/m.PriorVar)
	}
	var c0 mat.Cholesky
	if !c0.Factorize(p0) {
		return nil, nil, math.NaN(), errors.New("logistic: XᵀX/4 + I/σ₀² not positive definite")
	}
	sigma := mat.NewSymDense(m.D, nil)
	if err := c0.InverseTo(sigma); err != nil {
		return nil, nil, math.NaN(), err
	}
	for it := 0; it < 500; it++ {
		prec := mat.NewSymDense(m.D, nil)
		grad := make([]float64, m.D)
		muv := mat.NewVecDense(m.D, mu)
		for j := 0; j < m.D; j++ {
			prec.SetSym(j, j, 1/m.PriorVar)
			grad[j] = -mu[j] / m.PriorVar
		}
		for i := 0; i < m.N; i++ {
			xr := m.X[i*m.D : (i+1)*m.D]
			xi := mat.NewVecDense(m.D, xr)
			_, sg, dsg := expect(mat.Dot(xi, muv), math.Sqrt(mat.Inner(xi, sigma, xi)))
			prec.SymRankOne(prec, dsg, xi)
			for j, v := range xr {
				grad[j] += (m.Y[i] - sg) * v
			}
		}
		var ch mat.Cholesky
		if !ch.Factorize(prec) {
			return nil, nil, math.NaN(), errors.New("logistic: precision not positive definite")
		}
		next := mat.NewSymDense(m.D, nil)
		if err := ch.InverseTo(next); err != nil {
			return nil, nil, math.NaN(), err
		}
		var step mat.VecDense
		step.MulVec(next, mat.NewVecDense(m.D, grad))
		change, gmax := 0.0, 0.0
		for j := 0; j < m.D; j++ {
			mu[j] += step.AtVec(j)
			gmax = math.Max(gmax, math.Abs(grad[j]))
			for k := 0; k < m.D; k++ {
				change = math.Max(change, math.Abs(next.At(j, k)-sigma.At(j, k)))
			}
		}
		sigma = next
		if gmax < 1e-10 && change < 1e-10 {
			e, err := m.ExactELBO(mu, sigma)
			return mu, sigma, e, err
		}
	}
	return nil, nil, math.NaN(), errors.New("logistic: fixed point did not converge in 500 iterations")
}

// NewGerman reads the German credit file at path (datasets.ReadGermanFile) and returns the model of paper 000's
// experiment: the design of datasets.German.GermanDesign (d = 25 with intercept, 24 without) and prior N(0, 50 I).
func NewGerman(b backend.Backend, path string, intercept bool) (*Model, error) {
	g, err := datasets.ReadGermanFile(path)
	if err != nil {
		return nil, err
	}
	x, n, d := g.GermanDesign(intercept)
	return New(b, x, g.Y, n, d, 50)
}
