package rcgexp_test

import (
	"context"
	"fmt"
	"log"

	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/all"
	"github.com/geovb/geovb/internal/repro/rcgexp"
	"github.com/geovb/geovb/models/mog"
)

// Eight initialisations of one mixture fitted at once on a backend, by RCG and by VB-EM (paper 004, Fig. 5's
// setting at N = 300): every run's F after convergence, and how many of them end at the best optimum found.
func ExampleRunMoGBatch() {
	be, err := backend.Open("cpu") // "auto" picks CUDA when available
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()
	const N, seeds = 300, 8
	m, err := mog.New(mog.Synthetic(0.3, N, 0.03, 2024), N, 2, 5, mog.DefaultPrior(2), mog.Options{})
	if err != nil {
		log.Fatal(err)
	}
	ms, xs := make([]*mog.Model, seeds), make([][]float64, seeds)
	for i := range seeds {
		ms[i] = m // one data set; several data sets of equal N, K, D work too
		if xs[i], err = mog.Init(m, uint64(i)); err != nil {
			log.Fatal(err)
		}
	}
	bt, err := mog.NewBatch(be, ms)
	if err != nil {
		log.Fatal(err)
	}
	defer bt.Close()
	for _, method := range []string{"RCG", "VBEM"} {
		res, err := rcgexp.RunMoGBatch(context.Background(), bt, xs, method, 1e-7*N, 0, nil)
		if err != nil {
			log.Fatal(err)
		}
		best := res[0].F
		for _, r := range res {
			best = min(best, r.F)
		}
		atBest := 0
		for _, r := range res {
			if r.F-best < 1e-3 {
				atBest++
			}
		}
		fmt.Printf("%s: best F %.3f, reached by %d of %d runs\n", method, best, atBest, seeds)
	}
	// Output:
	// RCG: best F 202.679, reached by 4 of 8 runs
	// VBEM: best F 202.679, reached by 3 of 8 runs
}
