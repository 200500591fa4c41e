// Package nnet is the Bayesian neural-network classifier of paper 000's NNVB experiment (§5.3, Fig. 7), in the deepGLM style of Tran et al. (2019): a Bernoulli likelihood whose logit is a feed-forward network
// with two hidden layers of 10 units.
//
// Choices the paper leaves open, documented here:
//   - layout, d = 10p + 10·11 + 11 (= 361 for German credit's p = 24 columns without an intercept column): layer 1
//     maps the p inputs to 10 units with no bias (deepGLM's count: its first layer has none); layer 2 maps 10 → 10
//     with a bias; the output is one logit from 10 units plus a bias;
//   - θ order: W₁ (10×p, row-major), W₂ (10×10, row-major), b₂ (10), w₃ (10), b₃;
//   - activation tanh (deepGLM uses ReLU; tanh keeps log p smooth so gradients are checked by finite differences);
//   - prior θ ~ N(0, σ₀² I) with σ₀² = PriorVar (1 by default; the paper states no prior).
package nnet

import (
	"errors"
	"fmt"
	"math"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/stablemath"
)

// Hidden is the width of both hidden layers.
const Hidden = 10

// Model is the classifier with its data: X (n×p row-major) and labels Y ∈ {0, 1}.
type Model struct {
	X, Y     []float64
	N, P     int
	PriorVar float64
}

// New returns the model with prior variance 1; x is n×p row-major, y has n labels in {0, 1}.
func New(x, y []float64, n, p int) (*Model, error) {
	if n < 1 || p < 1 || len(x) != n*p || len(y) != n {
		return nil, errors.New("nnet: data shapes disagree")
	}
	for _, v := range y {
		if v != 0 && v != 1 {
			return nil, errors.New("nnet: labels must be 0 or 1")
		}
	}
	for k, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("nnet: X[%d, %d] is %v, want finite inputs", k/p, k%p, v)
		}
	}
	return &Model{X: x, Y: y, N: n, P: p, PriorVar: 1}, nil
}

// Dim is 10p + 121.
func (m *Model) Dim() int { return Hidden*m.P + Hidden*Hidden + 2*Hidden + 1 }

// LogPostGradHost returns log p(θ) + log p(y|θ) and, when grad is not nil, writes its gradient (backpropagation).
func (m *Model) LogPostGradHost(theta, grad []float64) float64 {
	p, H := m.P, Hidden
	w1 := theta[:H*p]
	w2 := theta[H*p : H*p+H*H]
	b2 := theta[H*p+H*H : H*p+H*H+H]
	w3 := theta[H*p+H*H+H : H*p+H*H+2*H]
	b3 := theta[H*p+H*H+2*H]
	lp := -0.5 * float64(len(theta)) * math.Log(2*math.Pi*m.PriorVar)
	for _, t := range theta {
		lp -= t * t / (2 * m.PriorVar)
	}
	if grad != nil {
		for i, t := range theta {
			grad[i] = -t / m.PriorVar
		}
	}
	var h1, h2, d1, d2 [Hidden]float64
	for i := 0; i < m.N; i++ {
		x := m.X[i*p : (i+1)*p]
		for j := 0; j < H; j++ {
			s := 0.0
			for k, v := range x {
				s += w1[j*p+k] * v
			}
			h1[j] = math.Tanh(s)
		}
		eta := b3
		for j := 0; j < H; j++ {
			s := b2[j]
			for k := 0; k < H; k++ {
				s += w2[j*H+k] * h1[k]
			}
			h2[j] = math.Tanh(s)
			eta += w3[j] * h2[j]
		}
		lp += m.Y[i]*eta - stablemath.Softplus(eta)
		if grad == nil {
			continue
		}
		r := m.Y[i] - stablemath.Sigmoid(eta) // ∂/∂η
		g3 := grad[H*p+H*H+H:]
		for j := 0; j < H; j++ {
			g3[j] += r * h2[j]
			d2[j] = r * w3[j] * (1 - h2[j]*h2[j])
		}
		grad[H*p+H*H+2*H] += r
		for j := 0; j < H; j++ {
			grad[H*p+H*H+j] += d2[j]
			for k := 0; k < H; k++ {
				grad[H*p+j*H+k] += d2[j] * h1[k]
			}
		}
		for k := 0; k < H; k++ {
			s := 0.0
			for j := 0; j < H; j++ {
				s += d2[j] * w2[j*H+k]
			}
			d1[k] = s * (1 - h1[k]*h1[k])
		}
		for j := 0; j < H; j++ {
			if d1[j] == 0 {
				continue
			}
			for k, v := range x {
				grad[j*p+k] += d1[j] * v
			}
		}
	}
	return lp
}

// LogDensity implements model.Density (LogPostGradHost with a length check); model.Batch(m) evaluates it for the
// methods that take a batched model.
func (m *Model) LogDensity(grad, theta []float64) (float64, error) {
	if d := m.Dim(); len(theta) != d || len(grad) != d {
		return math.NaN(), backend.Errorf("nnet", "theta", backend.ErrShape, "len(θ) = %d, len(grad) = %d, want %d", len(theta), len(grad), d)
	}
	return m.LogPostGradHost(theta, grad), nil
}
