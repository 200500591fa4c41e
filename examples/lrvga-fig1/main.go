// Command lrvga-fig1 reproduces Fig. 1 of paper 002: recursive factor analysis of a large covariance matrix (the
// recursive EM in covariance mode, α_t = (t−1)/t, β_t = 1/t) against the online EM of App. E and the batch EM
// (Sec. 5.1, App. C). Inputs: the synthetic recipe (unit-norm draws of N(0, Diag(ψ) + WWᵀ)), a LIBSVM file (-libsvm,
// e.g. the breast-cancer set), the Madelon dense table (-madelon), or a CSV (-data: the inputs; y is ignored). LIBSVM
// and Madelon inputs are divided by their mean row norm. It prints JSON lines {"t", "method", "kl"} with
// KL(N(0,S) ‖ N(0, WWᵀ+Ψ)) for S = XᵀX/N (the constant log det S is included when N ≥ d and d ≤ 2000).
//
//	go run ./examples/lrvga-fig1 -d 100 -n 10000 -p 10 -inner 3
//	go run ./examples/lrvga-fig1 -madelon ../shared/data/libsvm/madelon/madelon_train_dense.txt -p 20 -inner 3
package main

import (
	"flag"
	"math"

	"github.com/geovb/geovb/algos/lrvga"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/examples/internal/lrvgacli"
	"github.com/geovb/geovb/models/glm"
)

func main() {
	cpu.UseForGonum() // the models' gonum calls and the backend's LAPACK on the CPU backend's kernels
	fl := lrvgacli.Register(lrvgacli.Flags{D: 100, N: 10000, P: 10, Inner: 3, Seed: 1})
	libsvm := flag.String("libsvm", "", "read the inputs from a LIBSVM file")
	madelon := flag.String("madelon", "", "read the inputs from a counted dense table (Madelon)")
	batch := flag.Int("batch", 10, "batch EM iterations (0: none)")
	pseudo := flag.Bool("pseudo", false, "count the initial factors as one observation (α_t = t/(t+1), notes §5.3)")
	flag.Parse()
	if err := fl.Check(); err != nil {
		lrvgacli.Usage("%v", err)
	}
	if *batch < 0 {
		lrvgacli.Usage("-batch %d: the batch EM iterations must be ≥ 0", *batch)
	}
	var x []float64
	var o *datasets.Observations
	var err error
	switch {
	case *libsvm != "":
		o, err = datasets.ReadLIBSVMFile(*libsvm, 0)
	case *madelon != "":
		o, err = datasets.ReadCountedTableFile(*madelon)
	default:
		o = fl.LoadData()
	}
	if err != nil {
		lrvgacli.Fatal(err)
	}
	if o != nil {
		fl.D, fl.N, x = o.D, o.N, o.X
		if fl.Data == "" {
			normalise(x, fl.N, fl.D)
		}
	} else {
		x = glm.FactorInputs(fl.D, fl.P, fl.N, fl.Seed)
	}
	d, n, p := fl.D, fl.N, fl.P
	b := lrvgacli.Open(fl.Backend)
	defer b.Close()
	ldS := 0.0
	if n >= d && d <= 2000 {
		if v, err := lrvga.DenseLogDetS(x, n, d); err == nil {
			ldS = v
		}
	}
	cfg := lrvga.FAConfig{D: d, P: p, Inner: fl.Inner, Seed: fl.Seed, PseudoCount: *pseudo}
	rec, err := lrvga.NewRecursiveFA(b, cfg)
	if err != nil {
		lrvgacli.Fatal(err)
	}
	defer rec.Close()
	cfg.Inner = 1
	onl, err := lrvga.NewOnlineFA(b, cfg, 500)
	if err != nil {
		lrvgacli.Fatal(err)
	}
	defer onl.Close()
	next := 1
	for t := 0; t < n; t++ {
		row := x[t*d : (t+1)*d]
		if err := rec.Update(row); err != nil {
			lrvgacli.Fatal(err)
		}
		if err := onl.Update(row); err != nil {
			lrvgacli.Fatal(err)
		}
		if t+1 == next || t+1 == n {
			for _, m := range []struct {
				name string
				kl   func() (float64, error)
			}{
				{"recursive-em", func() (float64, error) { return lrvga.FAKL(b, rec.W, rec.Psi, x, n) }},
				{"online-em", func() (float64, error) { return lrvga.FAKL(b, onl.W, onl.Psi, x, n) }},
			} {
				kl, err := m.kl()
				if err != nil {
					lrvgacli.Fatal(err)
				}
				lrvgacli.Emit(map[string]any{"t": t + 1, "method": m.name, "kl": kl - 0.5*ldS})
			}
			next = int(math.Ceil(float64(next) * 1.5))
		}
	}
	if *batch > 0 {
		w, _ := b.Alloc(rec.W.Shape())
		psi, _ := b.Alloc(rec.Psi.Shape())
		if err := lrvga.InitFactors(b, w, psi, math.Sqrt(float64(d)), 1e-8, 0, fl.Seed); err != nil {
			lrvgacli.Fatal(err)
		}
		for it := 1; it <= *batch; it++ {
			if _, err := lrvga.BatchFA(b, w, psi, x, n, 1, 0); err != nil {
				lrvgacli.Fatal(err)
			}
			kl, err := lrvga.FAKL(b, w, psi, x, n)
			if err != nil {
				lrvgacli.Fatal(err)
			}
			lrvgacli.Emit(map[string]any{"iter": it, "method": "batch-em", "kl": kl - 0.5*ldS})
		}
	}
}

// normalise divides the rows by their mean norm (the LibSVM preprocessing of the authors' code, Sec. 5.1).
func normalise(x []float64, n, d int) {
	s := 0.0
	for i := 0; i < n; i++ {
		r := 0.0
		for _, v := range x[i*d : (i+1)*d] {
			r += v * v
		}
		s += math.Sqrt(r)
	}
	s /= float64(n)
	for i := range x {
		x[i] /= s
	}
}
