package glm

import (
	"fmt"
	"math"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/stablemath"
	"github.com/geovb/geovb/model"
)

// Link names the observation model of a Bayesian GLM.
type Link int

// Links.
const (
	LogitLink  Link = iota // y ∈ {0, 1}, P(y = 1) = σ(xᵀθ)
	ProbitLink             // y ∈ {0, 1}, P(y = 1) = Φ(xᵀθ)
	LinearLink             // y ∈ R, y ~ N(xᵀθ, NoiseVar)
)

func (l Link) String() string {
	switch l {
	case LogitLink:
		return "logit"
	case ProbitLink:
		return "probit"
	case LinearLink:
		return "linear"
	}
	return fmt.Sprintf("Link(%d)", int(l))
}

// Posterior is the posterior of a GLM's coefficients under the prior θ ~ N(0, PriorVar·I), as a model.Density:
// log p(θ | y) = Σ_i log p(y_i | x_iᵀθ) − ‖θ‖²/(2 PriorVar) up to a constant. X is N×D row-major. Evaluate it on a
// backend with model.Batch (one host pass over the data per draw); models/logistic evaluates the logit case on
// the backend itself.
type Posterior struct {
	X, Y     []float64
	N, D     int
	Link     Link
	PriorVar float64
	NoiseVar float64 // σ² of LinearLink
}

// NewPosterior checks the data against the link (labels in {0, 1} for logit and probit; finite values; positive
// variances) and returns the posterior.
func NewPosterior(x, y []float64, n, d int, link Link, priorVar, noiseVar float64) (*Posterior, error) {
	switch {
	case n < 1 || d < 1 || len(x) != n*d || len(y) != n:
		return nil, fmt.Errorf("glm: X has %d values and y %d for n = %d, d = %d", len(x), len(y), n, d)
	case link != LogitLink && link != ProbitLink && link != LinearLink:
		return nil, fmt.Errorf("glm: unknown link %v", link)
	case !(priorVar > 0) || math.IsInf(priorVar, 0):
		return nil, fmt.Errorf("glm: prior variance %v must be positive and finite", priorVar)
	case link == LinearLink && (!(noiseVar > 0) || math.IsInf(noiseVar, 0)):
		return nil, fmt.Errorf("glm: noise variance %v must be positive and finite", noiseVar)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("glm: X[%d, %d] = %v is not finite", i/d, i%d, v)
		}
	}
	for i, v := range y {
		if link != LinearLink && v != 0 && v != 1 {
			return nil, fmt.Errorf("glm: y[%d] = %v, want 0 or 1 for the %v link", i, v, link)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("glm: y[%d] = %v is not finite", i, v)
		}
	}
	return &Posterior{X: x, Y: y, N: n, D: d, Link: link, PriorVar: priorVar, NoiseVar: noiseVar}, nil
}

// Dim returns D.
func (p *Posterior) Dim() int { return p.D }

// LogDensity implements model.Density.
func (p *Posterior) LogDensity(grad, th []float64) (float64, error) {
	if len(th) != p.D || len(grad) != p.D {
		return math.NaN(), backend.Errorf("glm", "theta", backend.ErrShape, "len(θ) = %d, len(grad) = %d, want %d", len(th), len(grad), p.D)
	}
	lp := 0.0
	for j, t := range th {
		lp -= t * t / (2 * p.PriorVar)
		grad[j] = -t / p.PriorVar
	}
	for i := 0; i < p.N; i++ {
		row := p.X[i*p.D : (i+1)*p.D]
		eta := 0.0
		for j, v := range row {
			eta += v * th[j]
		}
		l, r := p.obs(p.Y[i], eta)
		lp += l
		for j, v := range row {
			grad[j] += r * v
		}
	}
	return lp, nil
}

// obs returns log p(y | η) and its derivative in η.
func (p *Posterior) obs(y, eta float64) (float64, float64) {
	switch p.Link {
	case LogitLink:
		return y*eta - stablemath.Softplus(eta), y - stablemath.Sigmoid(eta)
	case ProbitLink:
		// log Φ(sη) with s = ±1 and its derivative s φ(η)/Φ(sη), Φ(z) = erfc(−z/√2)/2: accurate in both tails
		// down to sη ≈ −37, below which Φ underflows and the log density is −Inf (a method stops, not finite).
		s := 2*y - 1
		z := s * eta
		logPhi := math.Log(0.5 * math.Erfc(-z/math.Sqrt2))
		mills := math.Exp(-z*z/2-logPhi) / math.Sqrt(2*math.Pi)
		return logPhi, s * mills
	default:
		r := y - eta
		return -r*r/(2*p.NoiseVar) - 0.5*math.Log(2*math.Pi*p.NoiseVar), r / p.NoiseVar
	}
}

var _ model.Density = (*Posterior)(nil)
