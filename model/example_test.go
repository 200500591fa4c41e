package model_test

import (
	"context"
	"fmt"
	"math"

	"github.com/geovb/geovb/algos/cholng"
	"github.com/geovb/geovb/algos/mgvb"
	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/rng"
)

// normalMean is the posterior of the mean θ of y_i ~ N(θ, 1), i = 1 … n, under the prior θ ~ N(0, 10² I): a model
// written once in the host form, whose posterior mean Σy_i/(n + 1/100) is known in closed form.
type normalMean struct{ y [][]float64 }

func (m normalMean) Dim() int { return len(m.y[0]) }

func (m normalMean) LogDensity(grad, th []float64) (float64, error) {
	lp := 0.0
	for j, t := range th {
		lp -= t * t / 200
		grad[j] = -t / 100
	}
	for _, yi := range m.y {
		for j, t := range th {
			lp -= (yi[j] - t) * (yi[j] - t) / 2
			grad[j] += yi[j] - t
		}
	}
	return lp, nil
}

// Example writes a model once, checks its gradient, and fits it with two methods: Cholesky-NG takes the host form
// as it is, MGVB the batched form that model.Batch makes of it.
func Example() {
	y := make([][]float64, 50)
	c := rng.Counter{Seed: 1}
	for i := range y {
		y[i] = make([]float64, 2)
		c.FillNormal(y[i])
		c = c.Advance(2)
		y[i][0] += 1
		y[i][1] -= 2
	}
	var m model.Density = normalMean{y}
	if err := model.CheckGradient(m, []float64{0.5, 0.5}, 0, 1e-6); err != nil {
		fmt.Println(err)
		return
	}
	exact := make([]float64, 2)
	for _, yi := range y {
		for j := range exact {
			exact[j] += yi[j] / (50 + 0.01)
		}
	}
	b, _ := backend.Open("cpu")
	defer b.Close()

	cr, err := cholng.Fit(context.Background(), b, m, cholng.Config{Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := mgvb.DefaultConfig()
	cfg.Seed = 1
	mr, err := mgvb.Fit(context.Background(), b, model.Batch(m), cfg) // from μ₀ = 0, Σ₀ = I
	if err != nil {
		fmt.Println(err)
		return
	}
	far := func(mu []float64) bool { return math.Abs(mu[0]-exact[0]) > 0.02 || math.Abs(mu[1]-exact[1]) > 0.02 }
	fmt.Printf("exact posterior mean   %.2f %.2f\n", exact[0], exact[1])
	fmt.Printf("Cholesky-NG within 0.02: %v\n", !far(cr.Mu))
	fmt.Printf("MGVB within 0.02:        %v\n", !far([]float64{mr.Mu.At(0, 0, 0), mr.Mu.At(0, 1, 0)}))
	// Output:
	// exact posterior mean   0.85 -2.09
	// Cholesky-NG within 0.02: true
	// MGVB within 0.02:        true
}
