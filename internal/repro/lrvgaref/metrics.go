package lrvgaref

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/algos/lrvga"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// LinearPosterior is the exact Gaussian posterior N(μ*, P*) of Bayesian linear regression with prior N(0, σ₀² I)
// and noise σ_w after the N observations (rows of X, N×d row-major, and y), kept in the O(N² + Nd) form
// P*⁻¹ = I/σ₀² + XᵀX/σ_w², μ* = σ₀² Xᵀ (σ_w² I + σ₀² X Xᵀ)⁻¹ y. No d×d matrix is formed.
type LinearPosterior struct {
	X, Y           []float64
	N, D           int
	Sigma0, SigmaW float64
	MuStar         []float64
	logDetPrec     float64 // log det P*⁻¹
}

// NewLinearPosterior builds the posterior of the observations X (N×d) and y.
func NewLinearPosterior(x, y []float64, d int, sigma0, sigmaW float64) (*LinearPosterior, error) {
	n := len(y)
	if n == 0 || d < 1 || len(x) != n*d {
		return nil, fmt.Errorf("lrvga: X of length %d for N = %d, d = %d: %w", len(x), n, d, backend.ErrShape)
	}
	if !(sigma0 > 0) || math.IsInf(sigma0, 0) || !(sigmaW > 0) || math.IsInf(sigmaW, 0) {
		return nil, fmt.Errorf("lrvga: %w: σ₀ = %v, σ_w = %v: want finite > 0", run.ErrConfig, sigma0, sigmaW)
	}
	// A NaN in the data would otherwise surface as "not positive definite".
	if err := checkData(x, y, d); err != nil {
		return nil, err
	}
	xm := mat.NewDense(n, d, x)
	k := mat.NewSymDense(n, nil)
	k.SymOuterK(sigma0*sigma0, xm) // σ₀² X Xᵀ
	for i := 0; i < n; i++ {
		k.SetSym(i, i, k.At(i, i)+sigmaW*sigmaW)
	}
	var ch mat.Cholesky
	if !ch.Factorize(k) {
		return nil, fmt.Errorf("lrvga: σ_w² I + σ₀² X Xᵀ not positive definite: %w", backend.ErrNotPositiveDefinite)
	}
	var a mat.VecDense
	if err := ch.SolveVecTo(&a, mat.NewVecDense(n, y)); err != nil {
		return nil, err
	}
	mu := mat.NewVecDense(d, nil)
	mu.MulVec(xm.T(), &a)
	mu.ScaleVec(sigma0*sigma0, mu)
	// log det P*⁻¹ = −d log σ₀² + log det(I + (σ₀²/σ_w²) X Xᵀ) = −d log σ₀² + log det K − N log σ_w².
	ld := -float64(d)*math.Log(sigma0*sigma0) + ch.LogDet() - float64(n)*math.Log(sigmaW*sigmaW)
	return &LinearPosterior{X: x, Y: y, N: n, D: d, Sigma0: sigma0, SigmaW: sigmaW, MuStar: mu.RawVector().Data, logDetPrec: ld}, nil
}

// LogDetPrec returns log det P*⁻¹.
func (lp *LinearPosterior) LogDetPrec() float64 { return lp.logDetPrec }

// quad returns eᵀP*⁻¹e = ‖e‖²/σ₀² + ‖Xe‖²/σ_w².
func (lp *LinearPosterior) quad(e []float64) float64 {
	ev := mat.NewVecDense(lp.D, e)
	var xe mat.VecDense
	xe.MulVec(mat.NewDense(lp.N, lp.D, lp.X), ev)
	return mat.Dot(ev, ev)/(lp.Sigma0*lp.Sigma0) + mat.Dot(&xe, &xe)/(lp.SigmaW*lp.SigmaW)
}

// KL returns KL(N(μ_t, P_t) ‖ N(μ*, P*)) for the filter's q_t (M2), in O(N²d + Ndp) with the high-d formulas
// log det P_t = −log det(WWᵀ+Ψ), Tr(P*⁻¹P_t) = Tr P_t/σ₀² + Σ_n x_nᵀP_tx_n/σ_w² (Woodbury solves in
// blocks of 64 observations).
func (lp *LinearPosterior) KL(f *lrvga.Filter) (float64, error) {
	if f.Config().D != lp.D {
		return 0, fmt.Errorf("lrvga: filter d = %d, posterior d = %d: %w", f.Config().D, lp.D, backend.ErrShape)
	}
	lr := f.Precision()
	ldPrec, err := lr.LogDet()
	if err != nil {
		return 0, err
	}
	trP, err := lr.Trace()
	if err != nil {
		return 0, err
	}
	sxpx, err := lrvga.SumQuad(f.Backend(), lr, lp.X, lp.N, lp.D)
	if err != nil {
		return 0, err
	}
	mu, err := f.MeanHost(nil)
	if err != nil {
		return 0, err
	}
	for i := range mu {
		mu[i] = lp.MuStar[i] - mu[i]
	}
	tr := trP/(lp.Sigma0*lp.Sigma0) + sxpx/(lp.SigmaW*lp.SigmaW)
	// logdet P* − logdet P_t = −logdet P*⁻¹ + logdet P_t⁻¹.
	return 0.5 * (-lp.logDetPrec + ldPrec - float64(lp.D) + tr + lp.quad(mu)), nil
}

// KLDense is KL(q ‖ N(μ*, P*)) for a dense q (the Kalman filter reference), with the same formulas.
func (lp *LinearPosterior) KLDense(q *Dense) float64 {
	d := lp.D
	xm := mat.NewDense(lp.N, d, lp.X)
	var xp mat.Dense
	xp.Mul(xm, q.P)
	s := 0.0
	for n := 0; n < lp.N; n++ {
		s += mat.Dot(xp.RowView(n), xm.RowView(n))
	}
	tr := mat.Trace(q.P)/(lp.Sigma0*lp.Sigma0) + s/(lp.SigmaW*lp.SigmaW)
	e := make([]float64, d)
	for i := range e {
		e[i] = lp.MuStar[i] - q.Mu.AtVec(i)
	}
	return 0.5 * (-lp.logDetPrec - q.LogDetP() - float64(d) + tr + lp.quad(e))
}

// reduceSum returns the sum of all of x as a host scalar.
func reduceSum(b backend.Backend, x *tensor.Tensor) (float64, error) {
	r, err := b.Alloc(tensor.Shape{Batch: 1, Rows: 1, Cols: 1})
	if err != nil {
		return 0, err
	}
	defer b.Free(r)
	if err := b.Reduce(r, backend.ReduceSum, backend.AxisAll, x); err != nil {
		return 0, err
	}
	h := tensor.NewHost(1, 1, 1)
	if err := b.Download(h, r); err != nil {
		return 0, err
	}
	return h.At(0, 0, 0), nil
}

// LogisticKL estimates the unnormalised reverse KL KL̃ (M3, the metric of Figs. 3 and 4) for Bayesian logistic
// regression with prior N(0, σ₀² I) and the observations X (N×d) with labels y ∈ {0, 1}:
//
//	KL̃(q) = E_q[−log p̃(θ)] − H(q),   −log p̃(θ) = Σ_n softplus(−ỹ_n x_nᵀθ) + ‖θ‖²/(2σ₀²) + (d/2) log(2πσ₀²),
//	H(q) = ½ log det P + (d/2)(1 + log 2π),  ỹ = 2y − 1.
//
// KL̃ = KL(q ‖ posterior) − log Z: it compares methods, not an absolute divergence. The expectation uses Samples
// draws with common random numbers (the same counter at every call, which gives smooth curves): Prop. 1 for a
// Filter, μ + chol(P)z with the same z for a dense q.
type LogisticKL struct {
	X, Y    []float64
	N, D    int
	Sigma0  float64
	Samples int
	Seed    uint64
}

// checkData reports the first non-finite entry of the observations X (N×d) and y.
func checkData(x, y []float64, d int) error {
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("lrvga: observation %d: x[%d] = %v is not finite: %w", i/d, i%d, v, backend.ErrNotFinite)
		}
	}
	for n, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("lrvga: observation %d: y = %v is not finite: %w", n, v, backend.ErrNotFinite)
		}
	}
	return nil
}

// check validates the settings and the data's shape before any draw.
func (o *LogisticKL) check(d int) error {
	switch {
	case o.D < 1 || o.N < 1 || len(o.X) != o.N*o.D || len(o.Y) != o.N:
		return fmt.Errorf("lrvga: LogisticKL: X of length %d and y of length %d for N = %d, d = %d: %w", len(o.X), len(o.Y), o.N, o.D, backend.ErrShape)
	case d != o.D:
		return fmt.Errorf("lrvga: LogisticKL: q has dimension %d, the data d = %d (dimension mismatch): %w", d, o.D, backend.ErrShape)
	case o.Samples < 1:
		return fmt.Errorf("lrvga: %w: LogisticKL: %d Monte Carlo draws, want ≥ 1", run.ErrConfig, o.Samples)
	case !(o.Sigma0 > 0) || math.IsInf(o.Sigma0, 0):
		return fmt.Errorf("lrvga: %w: LogisticKL: prior standard deviation σ₀ = %v, want finite > 0", run.ErrConfig, o.Sigma0)
	}
	return nil
}

// negLogJoint returns −log p̃(θ) for the columns of theta (d×K, row-major host data).
func (o *LogisticKL) negLogJoint(theta []float64, k int) []float64 {
	d := o.D
	out := make([]float64, k)
	a := make([]float64, k)
	for j := 0; j < k; j++ {
		s := 0.0
		for i := 0; i < d; i++ {
			v := theta[i*k+j]
			s += v * v
		}
		out[j] = s/(2*o.Sigma0*o.Sigma0) + 0.5*float64(d)*math.Log(2*math.Pi*o.Sigma0*o.Sigma0)
	}
	for n := 0; n < o.N; n++ {
		row := o.X[n*d : (n+1)*d]
		for j := range a {
			a[j] = 0
		}
		for i, xv := range row {
			if xv == 0 {
				continue
			}
			t := theta[i*k : (i+1)*k]
			for j := range a {
				a[j] += xv * t[j]
			}
		}
		yt := 2*o.Y[n] - 1
		for j := range a {
			out[j] += lrvga.Softplus(-yt * a[j])
		}
	}
	return out
}

func (o *LogisticKL) finish(nlj []float64, logDetP float64) float64 {
	m := 0.0
	for _, v := range nlj {
		m += v
	}
	m /= float64(len(nlj))
	h := 0.5*logDetP + 0.5*float64(o.D)*(1+math.Log(2*math.Pi))
	return m - h
}

// KL returns KL̃ for the filter's q_t, sampled with Prop. 1 (O(n_KL(Nd + dp)), no d×d).
func (o *LogisticKL) KL(f *lrvga.Filter) (float64, error) {
	if err := o.check(f.Config().D); err != nil {
		return 0, err
	}
	b := f.Backend()
	k := o.Samples
	th, err := b.Alloc(tensor.Shape{Batch: 1, Rows: o.D, Cols: k})
	if err != nil {
		return 0, err
	}
	defer b.Free(th)
	lr := f.Precision()
	if err := lr.Sample(th, f.Mean(), rng.Counter{Seed: o.Seed, Stream: 7}); err != nil {
		return 0, err
	}
	h := tensor.NewHost(1, o.D, k)
	if err := b.Download(h, th); err != nil {
		return 0, err
	}
	ld, err := lr.LogDet()
	if err != nil {
		return 0, err
	}
	data, _, _, _ := h.Matrix(0)
	return o.finish(o.negLogJoint(data, k), -ld), nil
}

// KLDense returns KL̃ for a dense Gaussian N(mu, P) (R-VGA, Laplace), sampled as μ + chol(P) z.
func (o *LogisticKL) KLDense(mu []float64, p mat.Symmetric) (float64, error) {
	if err := o.check(len(mu)); err != nil {
		return 0, err
	}
	d, k := o.D, o.Samples
	if p.SymmetricDim() != d {
		return 0, fmt.Errorf("lrvga: LogisticKL: P is %d×%d, want d = %d: %w", p.SymmetricDim(), p.SymmetricDim(), d, backend.ErrShape)
	}
	var ch mat.Cholesky
	if !ch.Factorize(p) {
		return 0, fmt.Errorf("lrvga: dense covariance: %w", backend.ErrNotPositiveDefinite)
	}
	var l mat.TriDense
	ch.LTo(&l)
	z := make([]float64, d*k)
	rng.Counter{Seed: o.Seed, Stream: 7}.FillNormal(z)
	var th mat.Dense
	th.Mul(&l, mat.NewDense(d, k, z))
	for i := 0; i < d; i++ {
		for j := 0; j < k; j++ {
			th.Set(i, j, th.At(i, j)+mu[i])
		}
	}
	return o.finish(o.negLogJoint(th.RawMatrix().Data, k), ch.LogDet()), nil
}
