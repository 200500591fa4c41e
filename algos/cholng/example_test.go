package cholng_test

import (
	"context"
	"fmt"
	"math"

	"github.com/geovb/geovb/algos/cholng"
	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/cpu"
)

// gauss2 is log N(θ; m, S) for a correlated two-dimensional Gaussian, in the host form (model.Density).
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

// Example fits a Gaussian target by Cholesky-factor natural gradients of the precision (Snngm, the default
// optimiser) and compares the fitted mean and covariance with the target's.
func Example() {
	b, err := backend.Open("cpu")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	res, err := cholng.Fit(context.Background(), b, gauss2{}, cholng.Config{Param: cholng.Precision, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The precision's factor T: Σ⁻¹ = TTᵀ, so Σ = T⁻ᵀT⁻¹.
	t00, t10, t11 := res.L[0], res.L[2], res.L[3]
	s00 := (1 + t10*t10/(t11*t11)) / (t00 * t00)
	s01 := -t10 / (t00 * t11 * t11)
	fmt.Println("stopped:", res.Reason)
	fmt.Println("mean within 0.05:", math.Abs(res.Mu[0]-1) < 0.05 && math.Abs(res.Mu[1]+2) < 0.05)
	fmt.Println("Σ within 0.05:", math.Abs(s00-2.0/3) < 0.05 && math.Abs(s01-1.0/3) < 0.05)
	// Output:
	// stopped: converged
	// mean within 0.05: true
	// Σ within 0.05: true
}
