package mgvb_test

import (
	"context"
	"fmt"
	"math"

	"github.com/geovb/geovb/algos/mgvb"
	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/model"
)

// gauss2 is log N(θ; m, S) for a correlated two-dimensional Gaussian, in the host form: the Gaussian family holds
// it exactly, so the optimum of the lower bound is q = N(m, S).
type gauss2 struct{}

var (
	m2 = [2]float64{1, -2}
	p2 = [2][2]float64{{2, -1}, {-1, 2}} // S⁻¹; S = [[2/3, 1/3], [1/3, 2/3]]
)

func (gauss2) Dim() int { return 2 }

func (gauss2) LogDensity(grad, th []float64) (float64, error) {
	r := [2]float64{th[0] - m2[0], th[1] - m2[1]}
	q := 0.0
	for i := range 2 {
		g := -(p2[i][0]*r[0] + p2[i][1]*r[1])
		grad[i] = g
		q -= r[i] * g
	}
	return -q / 2, nil
}

// Example fits a Gaussian target by MGVB, a host-form model lifted to the batched form by model.Batch, and
// compares the fitted mean and covariance with the target's.
func Example() {
	b, err := backend.Open("cpu")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	cfg := mgvb.DefaultConfig()
	cfg.Step, cfg.Patience, cfg.Seed = 0.05, 0, 1
	res, err := mgvb.Fit(context.Background(), b, model.Batch(gauss2{}), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	mu0, mu1 := res.Mu.At(0, 0, 0), res.Mu.At(0, 1, 0)
	s00, s01 := res.Sigma.At(0, 0, 0), res.Sigma.At(0, 0, 1)
	fmt.Println("stopped:", res.Reason, "after", res.Iters, "iterations")
	fmt.Println("mean within 0.02:", math.Abs(mu0-1) < 0.02 && math.Abs(mu1+2) < 0.02)
	fmt.Println("Σ within 0.02:", math.Abs(s00-2.0/3) < 0.02 && math.Abs(s01-1.0/3) < 0.02)
	// Output:
	// stopped: max-iter after 2000 iterations
	// mean within 0.02: true
	// Σ within 0.02: true
}
