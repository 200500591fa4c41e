package sggmc_test

import (
	"context"
	"fmt"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/algos/sggmc"
	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/manifold"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/tensor"
)

// normal2 is log N(θ; (1, −2), I) in the host form.
type normal2 struct{}

func (normal2) Dim() int { return 2 }

func (normal2) LogDensity(grad, th []float64) (float64, error) {
	a, c := th[0]-1, th[1]+2
	grad[0], grad[1] = -a, -c
	return -(a*a + c*c) / 2, nil
}

// Example samples a model with SGNHT: gSGNHT on Euclidean space, four chains from the origin, and prints the
// sample mean after a burn-in.
func Example() {
	b, err := backend.Open("cpu")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	eu, _ := manifold.NewEuclidean(1, 2) // a chain's point is a 1×2 matrix: θ
	x0, _ := b.Alloc(eu.PointShape(4))   // four chains at θ = 0
	defer b.Free(x0)
	pot := sggmc.NewPotential(model.Batch(normal2{}))
	defer pot.Close()
	s, err := sggmc.New(b, pot, x0, sggmc.Config{Manifold: eu, Method: sggmc.GSGNHT, Step: 0.05, Friction: 2, L: 4, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	var sum [2]float64
	h := tensor.NewHost(4, 1, 2)
	n := 0
	res, err := s.Run(context.Background(), run.Control{MaxIter: 6000}, func(s *sggmc.Sampler, _ *float64) error {
		if s.Samples() <= 1000 {
			return nil // burn-in
		}
		if err := b.Download(h, s.X()); err != nil {
			return err
		}
		for c := 0; c < 4; c++ {
			sum[0] += h.At(c, 0, 0)
			sum[1] += h.At(c, 0, 1)
		}
		n += 4
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("samples:", res.Iters)
	fmt.Printf("mean: %.1f %.1f\n", sum[0]/float64(n), sum[1]/float64(n))
	// Output:
	// samples: 6000
	// mean: 1.0 -2.0
}
