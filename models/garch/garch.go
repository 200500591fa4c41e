// Package garch is the GARCH(1,1) model of paper 000 §5.2 in the paper's naming (α and β are swapped
// relative to the usual convention): y_t = σ_t ε_t, ε_t ~ N(0, 1), σ²_t = w + α σ²_{t−1} + β y²_{t−1}, with
// w > 0 and α = ψ₁(1 − ψ₂), β = ψ₁ψ₂ for ψ₁, ψ₂ ∈ (0, 1) (so α + β = ψ₁ < 1), priors w ~ IG(1, 1), ψ₁, ψ₂ ~ U(0, 1),
// and the unconstrained parameter θ = (log w, logit ψ₁, logit ψ₂) in which the log prior, Jacobians included, is
// −θ_w − e^{−θ_w} + Σ_j [θ_ψj − 2 log(1 + e^{θ_ψj})].
//
// The paper does not say how σ²₁ starts; we fix σ²₁ to the sample variance of y (mean zero
// assumed: (1/T) Σ y²_t), a constant that does not depend on θ, and sum the log-likelihood over t = 1..T.
package garch

import (
	"errors"
	"math"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/stablemath"
	"github.com/geovb/geovb/tensor"
)

// Model holds the returns y (percent) and σ²₁.
type Model struct {
	Y      []float64
	Sigma1 float64 // σ²₁
}

// New returns the model for the returns y (at least 2, finite).
func New(y []float64) (*Model, error) {
	if len(y) < 2 {
		return nil, errors.New("garch: need at least 2 returns")
	}
	s := 0.0
	for _, v := range y {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, errors.New("garch: non-finite return")
		}
		s += v * v
	}
	return &Model{Y: append([]float64(nil), y...), Sigma1: s / float64(len(y))}, nil
}

// Dim is 3: θ = (log w, logit ψ₁, logit ψ₂).
func (m *Model) Dim() int { return 3 }

// Natural maps θ to the paper's (w, α, β).
func Natural(theta []float64) (w, alpha, beta float64) {
	p1, p2 := stablemath.Sigmoid(theta[1]), stablemath.Sigmoid(theta[2])
	return math.Exp(theta[0]), p1 * (1 - p2), p1 * p2
}

// LogPostGradHost returns log p(θ) + log p(y|θ) (up to nothing: both are normalised) and, when grad is not nil,
// writes its gradient in θ. The derivatives of σ²_t follow the recursion
// ∂σ²_t = (∂w: 1, ∂α: σ²_{t−1}, ∂β: y²_{t−1}) + α ∂σ²_{t−1}, with ∂σ²₁ = 0.
func (m *Model) LogPostGradHost(theta, grad []float64) float64 {
	w, a, b := Natural(theta)
	// log prior in θ, Jacobians included.
	lp := -theta[0] - math.Exp(-theta[0])
	for _, t := range theta[1:] {
		lp += t - 2*stablemath.Softplus(t)
	}
	s2, dw, da, db := m.Sigma1, 0.0, 0.0, 0.0
	var gw, ga, gb float64
	const half = 0.5 * 1.8378770664093453 // ½ log 2π
	for t, y := range m.Y {
		if t > 0 {
			yp := m.Y[t-1] * m.Y[t-1]
			if grad != nil {
				dw, da, db = 1+a*dw, s2+a*da, yp+a*db
			}
			s2 = w + a*s2 + b*yp
		}
		lp -= half + 0.5*math.Log(s2) + y*y/(2*s2)
		if grad != nil {
			// ∂/∂σ² of −½ log σ² − y²/(2σ²).
			c := -0.5/s2 + y*y/(2*s2*s2)
			gw, ga, gb = gw+c*dw, ga+c*da, gb+c*db
		}
	}
	if grad != nil {
		p1, p2 := stablemath.Sigmoid(theta[1]), stablemath.Sigmoid(theta[2])
		// w = e^θw; α = ψ₁(1 − ψ₂), β = ψ₁ψ₂; dψ/dθ = ψ(1 − ψ).
		d1, d2 := p1*(1-p1), p2*(1-p2)
		grad[0] = gw*w - 1 + math.Exp(-theta[0])
		grad[1] = (ga*(1-p2)+gb*p2)*d1 + 1 - 2*p1
		grad[2] = (-ga*p1+gb*p1)*d2 + 1 - 2*p2
	}
	return lp
}

// LogDensity implements model.Density: LogPostGradHost with a length check.
func (m *Model) LogDensity(grad, theta []float64) (float64, error) {
	if len(theta) != 3 || len(grad) != 3 {
		return math.NaN(), backend.Errorf("garch", "theta", backend.ErrShape, "len(θ) = %d, len(grad) = %d, want 3", len(theta), len(grad))
	}
	return m.LogPostGradHost(theta, grad), nil
}

// LogDensityBatch implements model.Batched: log p(θ, y) of every column of theta (batch×3×S) into lp (batch×1×S)
// and, when grad is not nil, the gradients into grad (batch×3×S). The recursion is sequential in t, so it runs on
// the host over the S columns (O(S·T) per call), without the gradient's work when grad is nil.
func (m *Model) LogDensityBatch(b backend.Backend, lp, grad, theta *tensor.Tensor) error {
	s := theta.Shape()
	if s.Rows != 3 {
		return backend.Errorf("garch", "theta", backend.ErrShape, "theta is %v, want batch×3×S", s)
	}
	if err := backend.CheckSame("garch", "lp", lp, tensor.Shape{Batch: s.Batch, Rows: 1, Cols: s.Cols}); err != nil {
		return err
	}
	th := tensor.NewHost(s.Batch, 3, s.Cols)
	if err := b.Download(th, theta); err != nil {
		return err
	}
	hl := tensor.NewHost(s.Batch, 1, s.Cols)
	var hg *tensor.Tensor
	if grad != nil {
		hg = tensor.NewHost(s.Batch, 3, s.Cols)
	}
	x, g := make([]float64, 3), make([]float64, 3)
	for k := 0; k < s.Batch; k++ {
		for j := 0; j < s.Cols; j++ {
			for i := range x {
				x[i] = th.At(k, i, j)
			}
			var gp []float64
			if grad != nil {
				gp = g
			}
			hl.Set(k, 0, j, m.LogPostGradHost(x, gp))
			if grad != nil {
				for i := range g {
					hg.Set(k, i, j, g[i])
				}
			}
		}
	}
	if err := b.Upload(lp, hl); err != nil {
		return err
	}
	if grad != nil {
		return b.Upload(grad, hg)
	}
	return nil
}

// Simulate draws T returns from the model at (w, α, β) in the paper's naming with σ²₁ = w/(1 − α − β) (the
// stationary variance), using the standard normals eps (length T).
func Simulate(w, alpha, beta float64, eps []float64) []float64 {
	y := make([]float64, len(eps))
	s2 := w / (1 - alpha - beta)
	for t, e := range eps {
		if t > 0 {
			s2 = w + alpha*s2 + beta*y[t-1]*y[t-1]
		}
		y[t] = math.Sqrt(s2) * e
	}
	return y
}
