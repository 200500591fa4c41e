package lrvga

import (
	"math"

	"gonum.org/v1/gonum/mat"
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

// RVGALogisticUpdate is the dense implicit R-VGA step for logistic regression (notes §2.1): (α, ν) from
// SolveImplicit, μ_t = μ_{t-1} + P_{t-1}x (y − σ(kα)) (53), P_t = P_{t-1} − (P_{t-1}x)(P_{t-1}x)ᵀ/(ν₀ + 1/c) with
// c = kσ'(kα) (54 by Sherman–Morrison).
func (q *Dense) RVGALogisticUpdate(x []float64, y float64) ImplicitSolution {
	xv := mat.NewVecDense(len(x), x)
	var px mat.VecDense
	px.MulVec(q.P, xv)
	nu0 := mat.Dot(xv, &px)
	a0 := mat.Dot(xv, q.Mu)
	sol := SolveImplicit(a0, nu0, y)
	k := ProbitK(sol.Nu)
	q.Mu.AddScaledVec(q.Mu, y-Sigmoid(k*sol.Alpha), &px)
	q.rank1(&px, nu0, k*SigmoidPrime(k*sol.Alpha))
	return sol
}

// LogDetP returns log det P (by Cholesky).
func (q *Dense) LogDetP() float64 {
	var ch mat.Cholesky
	if !ch.Factorize(q.P) {
		return math.NaN()
	}
	return ch.LogDet()
}
