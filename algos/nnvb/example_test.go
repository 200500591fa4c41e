package nnvb_test

import (
	"context"
	"fmt"
	"math"

	"github.com/geovb/geovb/algos/nnvb"
	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/model"
)

// narrow is the normalised density N(θ; (0.3, −0.2), 0.03·I) in the host form. Its log normalising constant is 0,
// so every lower bound is below 0 and a good fit comes close to it.
type narrow struct{}

func (narrow) Dim() int { return 2 }

func (narrow) LogDensity(grad, th []float64) (float64, error) {
	const v = 0.03
	m := [2]float64{0.3, -0.2}
	lp := -math.Log(2 * math.Pi * v)
	for i := range 2 {
		r := th[i] - m[i]
		lp -= r * r / (2 * v)
		grad[i] = -r / v
	}
	return lp, nil
}

// Example fits the neural-network variational family θ = W₂ h(W₁ε + b₁) + b₂ (W₁, W₂ on the orthogonal group) to
// a narrow Gaussian from a random start and reports the smoothed lower bound against log Z = 0.
func Example() {
	b, err := backend.Open("cpu")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	cfg := nnvb.DefaultConfig()
	cfg.Seed = 1
	cfg.Control.MaxIter = 400
	res, err := nnvb.Fit(context.Background(), b, model.Batch(narrow{}), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	first, last := res.Smoothed[20], res.Smoothed[len(res.Smoothed)-1]
	fmt.Println("iterations:", res.Iters)
	fmt.Println("bound improved:", last > first)
	fmt.Println("final bound within 0.5 of log Z = 0:", last > -0.5 && last < 0)
	// Output:
	// iterations: 400
	// bound improved: true
	// final bound within 0.5 of log Z = 0: true
}
