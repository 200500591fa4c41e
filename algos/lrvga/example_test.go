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
	f, err := lrvga.New(b, lrvga.Config{D: d, P: 10, Scheme: lrvga.SchemeLogistic, Sigma0: 4, InitStd: 1e-3})
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

// stream returns n synthetic observations of dimension d one at a time, as next() → (x, y, ok): two classes whose
// means differ in every coordinate.
func stream(d, n int) func() ([]float64, float64, bool) {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, d)
	t := 0
	return func() ([]float64, float64, bool) {
		if t == n {
			return nil, 0, false
		}
		y := float64(t % 2)
		for i := range x {
			x[i] = r.NormFloat64()/1000 + (2*y-1)*0.001
		}
		t++
		return x, y, true
	}
}

// The README's d = 1e6 logistic-regression fit, line for line after the first (TestReadmeExample checks that they
// agree). Compiled by go test, not run: a step at d = 1e6, p = 10 takes about 0.4 s on two cores
// (examples/lrvga-table12 measures it).
func Example_d1e6() {
	next := stream(1_000_000, 100)
	b, _ := backend.Open("auto")
	f, err := lrvga.New(b, lrvga.Config{D: 1_000_000, P: 10, Scheme: lrvga.SchemeLogistic, Sigma0: 4, InitStd: 1e-3})
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	for x, y, ok := next(); ok; x, y, ok = next() {
		if err := f.Update(x, y); err != nil { // NaN/Inf or a wrong length: an error, state unchanged
			log.Fatal(err)
		}
	}
	mu, _ := f.MeanHost(nil) // posterior mean; f.Precision() gives Solve, Sample, LogDet
	fmt.Println(f.T(), mu[0])
}
