package rcg_test

import (
	"context"
	"fmt"
	"log"
	"math"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
)

// banana is a model of one's own: a diagonal Gaussian q(x, y) fitted to p(x, y) ∝ exp[−9(xy − 1)² − x² − y²]
// (paper 004 §6.1). Its free energy F = E_q[9(xy − 1)² + x² + y²] − H[q] has a closed form in the means (x̄, ȳ),
// which RCG moves, and the variances (x̃, ỹ), which Update sets by the fixed point of eq. 13.
type banana struct{ vx, vy float64 }

func (b *banana) Dim() int { return 2 }

func (b *banana) Value(m []float64) float64 {
	x, y := m[0], m[1]
	return 9*((x*x+b.vx)*(y*y+b.vy)-2*x*y+1) + x*x + b.vx + y*y + b.vy - 0.5*math.Log(b.vx*b.vy)
}

func (b *banana) Grad(g, m []float64) float64 {
	x, y := m[0], m[1]
	g[0] = 18*x*(y*y+b.vy) - 18*y + 2*x
	g[1] = 18*y*(x*x+b.vx) - 18*x + 2*y
	return b.Value(m)
}

// NatGrad: for the means of a diagonal Gaussian the Fisher metric is diag(1/ṽ), so the Riemannian gradient is ṽ ⊙ g.
func (b *banana) NatGrad(dst, g, m []float64) { dst[0], dst[1] = b.vx*g[0], b.vy*g[1] }

// Update sets each variance where ∂F/∂ṽ = 0 given the rest (eq. 13).
func (b *banana) Update(m []float64) error {
	b.vx = 1 / (18*(m[1]*m[1]+b.vy) + 2)
	b.vy = 1 / (18*(m[0]*m[0]+b.vx) + 2)
	return nil
}

// A model of one's own: implement Dim, Value, Grad and NatGrad (and Update for parameters set in closed form), and
// Minimize runs RCG on it with the paper's Powell–Beale restarts, stopping when F changes by less than Tol twice in
// a row. The optimum is in closed form (§6.1): means ±√(5/6), variances 1/18.
func Example_ownModel() {
	b := &banana{vx: 1, vy: 1}
	res, err := rcg.Minimize(context.Background(), b, []float64{0.1, 0.2}, rcg.Settings{PowellBeale: 0.2, Tol: 1e-12,
		Control: run.Control{MaxIter: 10000}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%v; means %.6f %.6f, variances %.6f %.6f, F %.6f\n", res.Reason, res.X[0], res.X[1], b.vx, b.vy, res.F)
	// Output:
	// converged; means 0.912871 0.912871, variances 0.055556 0.055556, F 5.779261
}
