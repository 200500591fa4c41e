package lrvgaref

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/algos/lrvga"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
)

// Dense is a full-covariance Gaussian N(μ, P) for the small-d references: the exact linear Kalman filter (24)–(23)
// and the dense implicit R-VGA for logistic regression (53)–(54). O(d²) memory: for tests and baselines only.
type Dense struct {
	Mu *mat.VecDense
	P  *mat.SymDense
}

// NewDense returns the prior N(mu0, σ₀² I) (mu0 nil means 0).
func NewDense(d int, sigma0 float64, mu0 []float64) *Dense {
	q := &Dense{Mu: mat.NewVecDense(d, nil), P: mat.NewSymDense(d, nil)}
	if mu0 != nil {
		q.Mu.CopyVec(mat.NewVecDense(d, mu0))
	}
	for i := 0; i < d; i++ {
		q.P.SetSym(i, i, sigma0*sigma0)
	}
	return q
}

// rank1 applies Sherman–Morrison: P ← P − (Px)(Px)ᵀ/(ν₀ + 1/c) for P⁻¹ ← P⁻¹ + c x xᵀ, with px = P_{old}x and
// ν₀ = xᵀP_{old}x.
func (q *Dense) rank1(px *mat.VecDense, nu0, c float64) {
	q.P.SymRankOne(q.P, -1/(nu0+1/c), px)
}

// KalmanUpdate is the exact static-state Kalman filter step for y = xᵀθ + N(0, σ_w²) (24)–(23):
// P_t = P_{t-1} − P_{t-1}x xᵀP_{t-1}/(σ_w² + xᵀP_{t-1}x), μ_t = μ_{t-1} + P_t x (y − xᵀμ_{t-1})/σ_w².
func (q *Dense) KalmanUpdate(x []float64, y, sigmaW float64) {
	xv := mat.NewVecDense(len(x), x)
	var px mat.VecDense
	px.MulVec(q.P, xv)
	nu0 := mat.Dot(xv, &px)
	e := y - mat.Dot(xv, q.Mu)
	s2 := sigmaW * sigmaW
	// P_t x = P_{t-1}x σ_w²/(σ_w² + ν₀).
	q.Mu.AddScaledVec(q.Mu, e/(s2+nu0), &px)
	q.rank1(&px, nu0, 1/s2)
}

// RVGALogisticUpdate is the dense implicit R-VGA step for logistic regression (Sec. 5.3, (52)–(54)): (α, ν) from
// lrvga.SolveImplicit, μ_t = μ_{t-1} + P_{t-1}x (y − σ(kα)) (53), P_t = P_{t-1} − (P_{t-1}x)(P_{t-1}x)ᵀ/(ν₀ + 1/c) with
// c = kσ'(kα) (54 by Sherman–Morrison).
func (q *Dense) RVGALogisticUpdate(x []float64, y float64) lrvga.ImplicitSolution {
	xv := mat.NewVecDense(len(x), x)
	var px mat.VecDense
	px.MulVec(q.P, xv)
	nu0 := mat.Dot(xv, &px)
	a0 := mat.Dot(xv, q.Mu)
	sol := lrvga.SolveImplicit(a0, nu0, y)
	k := lrvga.ProbitK(sol.Nu)
	q.Mu.AddScaledVec(q.Mu, y-lrvga.Sigmoid(k*sol.Alpha), &px)
	q.rank1(&px, nu0, k*lrvga.SigmoidPrime(k*sol.Alpha))
	return sol
}

// ProbitExtragradUpdate is the dense partial mirror prox (143)–(145) with the probit closed-form expectations for
// logistic regression (the dense form of the "logistic-extragrad" scheme): (m, c) from (50)–(52) at (μ_{t-1},
// P_{t-1}), P̂ = (P_{t-1}⁻¹ + c x xᵀ)⁻¹ by Sherman–Morrison, μ̂ = μ_{t-1} + P̂x (y − m), m̂ at (μ̂, P̂), then
// μ_t = μ_{t-1} + P̂x (y − m̂) and P_t = P̂.
func (q *Dense) ProbitExtragradUpdate(x []float64, y float64) {
	xv := mat.NewVecDense(len(x), x)
	var px mat.VecDense
	px.MulVec(q.P, xv)
	nu0 := mat.Dot(xv, &px)
	m, c := probitMoments(mat.Dot(xv, q.Mu), nu0)
	q.rank1(&px, nu0, c)
	var g mat.VecDense
	g.MulVec(q.P, xv) // P̂ x
	var muHat mat.VecDense
	muHat.AddScaledVec(q.Mu, y-m, &g)
	mHat, _ := probitMoments(mat.Dot(xv, &muHat), mat.Dot(xv, &g))
	q.Mu.AddScaledVec(q.Mu, y-mHat, &g)
}

// LogDetP returns log det P (by Cholesky).
func (q *Dense) LogDetP() float64 {
	var ch mat.Cholesky
	if !ch.Factorize(q.P) {
		return math.NaN()
	}
	return ch.LogDet()
}

// Laplace returns the batch Laplace approximation N(θ_MAP, H⁻¹) of the Bayesian logistic-regression posterior with
// prior N(0, σ₀² I) for the observations X (N×d, row-major) with labels y ∈ {0, 1}: the baseline of Figs. 3 and 4
// (Sec. 5.3; the authors' code takes θ_MAP by L-BFGS-B). θ_MAP minimises the negative log posterior
//
//	F(θ) = Σ_n softplus(−ỹ_n x_nᵀθ) + ‖θ‖²/(2σ₀²),   ỹ = 2y − 1,
//	∇F = Σ_n (σ(x_nᵀθ) − y_n) x_n + θ/σ₀²,   H = ∇²F = Σ_n σ'(x_nᵀθ) x_n x_nᵀ + I/σ₀²,
//
// strictly convex, here by Newton's method with Armijo backtracking from θ = 0, then, once the Newton decrement
// ∇Fᵀ H⁻¹ ∇F is below 1e-10·(1 + F), up to three full Newton steps (quadratic convergence) until the decrement stops
// falling: the MAP is then exact to rounding.
// O(Nd² + d³) per iteration and d×d memory: small d only.
func Laplace(x, y []float64, d int, sigma0 float64) (*Dense, error) {
	n := len(y)
	if d < 1 || n == 0 || len(x) != n*d {
		return nil, fmt.Errorf("lrvga: X of length %d for N = %d, d = %d: %w", len(x), n, d, backend.ErrShape)
	}
	if !(sigma0 > 0) || math.IsInf(sigma0, 0) {
		return nil, fmt.Errorf("lrvga: %w: prior standard deviation σ₀ = %v", run.ErrConfig, sigma0)
	}
	if err := checkData(x, y, d); err != nil {
		return nil, err
	}
	for _, v := range y {
		if v != 0 && v != 1 {
			return nil, fmt.Errorf("lrvga: logistic label %v, want 0 or 1: %w", v, backend.ErrDomain)
		}
	}
	xm := mat.NewDense(n, d, x)
	prec := 1 / (sigma0 * sigma0)
	theta := mat.NewVecDense(d, nil)
	a := mat.NewVecDense(n, nil)
	// obj returns F(θ) and sets a = Xθ.
	obj := func(th *mat.VecDense) float64 {
		a.MulVec(xm, th)
		f := 0.5 * prec * mat.Dot(th, th)
		for i := 0; i < n; i++ {
			f += lrvga.Softplus(-(2*y[i] - 1) * a.AtVec(i))
		}
		return f
	}
	hess := func() *mat.SymDense { // H at the θ of the last obj call
		xs := mat.NewDense(n, d, nil)
		for i := 0; i < n; i++ {
			s := math.Sqrt(lrvga.SigmoidPrime(a.AtVec(i)))
			for j := 0; j < d; j++ {
				xs.Set(i, j, s*xm.At(i, j))
			}
		}
		h := mat.NewSymDense(d, nil)
		h.SymOuterK(1, xs.T())
		for j := 0; j < d; j++ {
			h.SetSym(j, j, h.At(j, j)+prec)
		}
		return h
	}
	f := obj(theta)
	r := mat.NewVecDense(n, nil)
	grad := mat.NewVecDense(d, nil)
	var step, trial mat.VecDense
	polish, prevDec := 0, 0.0
	for it := 0; ; it++ {
		for i := 0; i < n; i++ {
			r.SetVec(i, lrvga.Sigmoid(a.AtVec(i))-y[i])
		}
		grad.MulVec(xm.T(), r)
		grad.AddScaledVec(grad, prec, theta)
		var ch mat.Cholesky
		if !ch.Factorize(hess()) {
			return nil, fmt.Errorf("lrvga: Laplace: Hessian not positive definite: %w", backend.ErrNotPositiveDefinite)
		}
		if err := ch.SolveVecTo(&step, grad); err != nil {
			return nil, err
		}
		dec := mat.Dot(grad, &step) // Newton decrement²
		if polish > 0 && (polish == 3 || dec >= prevDec) {
			var p mat.SymDense
			if err := ch.InverseTo(&p); err != nil {
				return nil, err
			}
			return &Dense{Mu: theta, P: &p}, nil
		}
		if polish > 0 || dec <= 1e-10*(1+math.Abs(f)) {
			// Quadratic convergence: full steps (at most three), until the decrement stops falling at rounding.
			theta.SubVec(theta, &step)
			f = obj(theta)
			polish++
			prevDec = dec
			continue
		}
		if it == 100 {
			return nil, fmt.Errorf("lrvga: Laplace: Newton decrement %.3g after 100 iterations: %w", dec, backend.ErrNoConvergence)
		}
		t := 1.0
		for {
			trial.AddScaledVec(theta, -t, &step)
			ft := obj(&trial)
			if ft <= f-0.25*t*dec || t < 1e-10 {
				theta.CopyVec(&trial)
				f = ft
				break
			}
			t /= 2
		}
	}
}

// probitMoments returns, for θ ~ N(μ, P) with ν = xᵀPx and a = xᵀμ, the probit approximations of E[σ(xᵀθ)] and
// E[σ'(xᵀθ)]: σ(k a) (50) and k σ'(k a) (51), k = k(ν) (52), as the filter's "logistic-extragrad" scheme takes them.
func probitMoments(a, nu float64) (m, c float64) {
	k := lrvga.ProbitK(nu)
	return lrvga.Sigmoid(k * a), k * lrvga.SigmoidPrime(k*a)
}
