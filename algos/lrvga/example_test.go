package lrvga_test

import (
	"fmt"
	"log"
	"math/rand/v2"

	"github.com/geovb/geovb/algos/lrvga"
	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/all"
)

// A streaming logistic-regression fit (the README's d = 1e6 example at d = 10⁴): one pass, one observation at a
// time, O(dp) memory.
func Example() {
	b, err := backend.Open("cpu") // "auto" picks CUDA when available
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	const d = 10000
	f, err := lrvga.New(b, lrvga.Config{D: d, P: 10, Scheme: "logistic", Sigma0: 4, InitStd: 1e-3})
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, d)
	for t := 0; t < 200; t++ {
		y := float64(t % 2)
		for i := range x {
			x[i] = r.NormFloat64()/100 + (2*y-1)*0.01 // the class shifts every coordinate
		}
		if err := f.Update(x, y); err != nil {
			log.Fatal(err)
		}
	}
	mu, _ := f.MeanHost(nil)
	fmt.Printf("observations %d, state %d bytes, μ₀ > 0: %v\n", f.T(), f.StateBytes(), mu[0] > 0)
	// Output: observations 200, state 960000 bytes, μ₀ > 0: true
}
