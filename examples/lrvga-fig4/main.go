// Command lrvga-fig4 runs the general nonlinear L-RVGA of paper 002 (Sec. 4.2 and 5.4, Fig. 4) on
// logistic regression through the Model interface: K ensemble draws per expectation (Prop. 1), GGN factor, and the
// explicit, implicit, extragrad (partial mirror prox, default) or full mirror-prox scheme, or the figure's analytic
// baseline, the partial mirror prox with the probit closed-form expectations (-scheme logistic-extragrad). It prints
// JSON lines {"t", "scheme", "k", "kl"} with KL̃ = E_q[−log p̃] − H(q) at log-spaced t, and at the end the KL̃ of the
// batch Laplace approximation (-laplace; dense, d×d).
//
//	go run ./examples/lrvga-fig4 -d 1000 -n 1000 -p 10 -k 10 -sigma0 2
package main

import (
	"flag"
	"math"

	"github.com/geovb/geovb/algos/lrvga"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/examples/internal/lrvgacli"
	"github.com/geovb/geovb/internal/repro/lrvgaref"
	"github.com/geovb/geovb/models/glm"
)

func main() {
	cpu.UseForGonum() // the models' gonum calls and the backend's LAPACK on the CPU backend's kernels
	fl := lrvgacli.Register(lrvgacli.Flags{D: 1000, N: 1000, P: 10, Inner: 1, Seed: 1})
	sigma0 := flag.Float64("sigma0", 1, "prior standard deviation σ₀")
	coefS := flag.Float64("coefs", 0.15, "class separation exponent: s = 1/d^coefs")
	k := flag.Int("k", 10, "ensemble draws K per expectation")
	scheme := lrvga.SchemeExtragrad
	flag.TextVar(&scheme, "scheme", scheme, "explicit, implicit, extragrad, mirror-prox or logistic-extragrad (analytic baseline)")
	laplace := flag.Bool("laplace", true, "print the KL̃ of the batch Laplace approximation at the end (dense: small d)")
	nkl := flag.Int("nkl", 4, "Monte Carlo draws for KL̃")
	flag.Parse()
	if err := fl.Check(); err != nil {
		lrvgacli.Usage("%v", err)
	}
	if !(*sigma0 > 0) || math.IsInf(*sigma0, 0) || math.IsNaN(*coefS) || math.IsInf(*coefS, 0) || *nkl < 1 {
		lrvgacli.Usage("-sigma0 %v, -coefs %v, -nkl %d: want σ₀ finite > 0, a finite exponent and ≥ 1 draws", *sigma0, *coefS, *nkl)
	}
	if *k < 0 {
		lrvgacli.Usage("-k %d: the ensemble draws must be ≥ 0 (0: the default)", *k)
	}
	var x, y []float64
	if o := fl.LoadData(); o != nil {
		x, y = o.X, o.Y
	} else {
		data := glm.LogisticMixture(glm.NewDesign(fl.D, 1, fl.Seed), fl.N, *coefS, fl.Seed)
		x, y = data.X, data.Y
	}
	d, n := fl.D, fl.N
	b := lrvgacli.Open(fl.Backend)
	defer b.Close()
	f, err := lrvga.New(b, lrvga.Config{D: d, P: fl.P, Inner: fl.Inner, Seed: fl.Seed, Scheme: scheme,
		Model: glm.Logistic{}, Samples: *k, Sigma0: *sigma0, InitStd: 1e-2})
	if err != nil {
		lrvgacli.Fatal(err)
	}
	defer f.Close()
	obj := &lrvgaref.LogisticKL{X: x, Y: y, N: n, D: d, Sigma0: *sigma0, Samples: *nkl, Seed: 1}
	next := 1
	for t := 0; t < n; t++ {
		if err := f.Update(x[t*d:(t+1)*d], y[t]); err != nil {
			lrvgacli.Fatal(err)
		}
		if t+1 == next || t+1 == n {
			kl, err := obj.KL(f)
			if err != nil {
				lrvgacli.Fatal(err)
			}
			lrvgacli.Emit(map[string]any{"t": t + 1, "scheme": scheme, "k": *k, "kl": kl})
			next = int(math.Ceil(float64(next) * 1.5))
		}
	}
	if *laplace {
		q, err := lrvgaref.Laplace(x, y, d, *sigma0)
		if err != nil {
			lrvgacli.Fatal(err)
		}
		kl, err := obj.KLDense(q.Mu.RawVector().Data, q.P)
		if err != nil {
			lrvgacli.Fatal(err)
		}
		lrvgacli.Emit(map[string]any{"t": n, "scheme": "laplace", "kl": kl})
	}
}
