// Command lrvga-fig3 reproduces Fig. 3 of paper 002: Bayesian logistic regression with the implicit L-RVGA
// (probit closed form, Sec. 5.3, (52)–(54)) on the two-class Gaussian mixture of the authors' code, optionally against
// the dense implicit R-VGA. It prints JSON lines {"t", "method", "p", "kl"} with the unnormalised KL̃
// (E_q[−log p̃] − H(q); n_KL draws with common random numbers) at log-spaced t, and at the end the KL̃ of the batch
// Laplace approximation, the figure's dashed line (-laplace; dense, d×d). -data reads labels y ∈ {0, 1} and inputs from
// a CSV.
//
//	go run ./examples/lrvga-fig3 -d 200 -n 1000 -p 10
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
	fl := lrvgacli.Register(lrvgacli.Flags{D: 200, N: 1000, P: 10, Inner: 1, Seed: 1})
	sigma0 := flag.Float64("sigma0", 4, "prior standard deviation σ₀")
	coefS := flag.Float64("coefs", 0.2, "class separation exponent: s = 1/d^coefs")
	nkl := flag.Int("nkl", 5, "Monte Carlo draws for KL̃")
	dense := flag.Bool("dense", false, "also run the dense implicit R-VGA (small d)")
	laplace := flag.Bool("laplace", true, "print the KL̃ of the batch Laplace approximation at the end (dense: small d)")
	flag.Parse()
	if err := fl.Check(); err != nil {
		lrvgacli.Usage("%v", err)
	}
	if !(*sigma0 > 0) || math.IsInf(*sigma0, 0) || math.IsNaN(*coefS) || math.IsInf(*coefS, 0) || *nkl < 1 {
		lrvgacli.Usage("-sigma0 %v, -coefs %v, -nkl %d: want σ₀ finite > 0, a finite exponent and ≥ 1 draws", *sigma0, *coefS, *nkl)
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
	f, err := lrvga.New(b, lrvga.Config{D: d, P: fl.P, Inner: fl.Inner, Seed: fl.Seed, Scheme: lrvga.SchemeLogistic,
		Sigma0: *sigma0, InitStd: 1e-3})
	if err != nil {
		lrvgacli.Fatal(err)
	}
	defer f.Close()
	obj := &lrvgaref.LogisticKL{X: x, Y: y, N: n, D: d, Sigma0: *sigma0, Samples: *nkl, Seed: 1}
	var q *lrvgaref.Dense
	if *dense {
		q = lrvgaref.NewDense(d, *sigma0, nil)
	}
	next := 1
	for t := 0; t < n; t++ {
		row := x[t*d : (t+1)*d]
		if err := f.Update(row, y[t]); err != nil {
			lrvgacli.Fatal(err)
		}
		if q != nil {
			q.RVGALogisticUpdate(row, y[t])
		}
		if t+1 == next || t+1 == n {
			kl, err := obj.KL(f)
			if err != nil {
				lrvgacli.Fatal(err)
			}
			lrvgacli.Emit(map[string]any{"t": t + 1, "method": "lrvga", "p": fl.P, "kl": kl, "psi_clamped": f.Clamped()})
			if q != nil {
				kd, err := obj.KLDense(q.Mu.RawVector().Data, q.P)
				if err != nil {
					lrvgacli.Fatal(err)
				}
				lrvgacli.Emit(map[string]any{"t": t + 1, "method": "rvga-dense", "kl": kd})
			}
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
		lrvgacli.Emit(map[string]any{"t": n, "method": "laplace", "kl": kl})
	}
}
