// Command lrvga-fig2 reproduces Fig. 2 of paper 002: Bayesian linear regression with L-RVGA against the exact
// Kalman filter (Sec. 5.2). It prints JSON lines {"t", "method", "p", "inner", "kl"} with KL(q_t ‖ posterior of
// all N observations) at log-spaced t, computed without d×d matrices (in O(N²d + Ndp) through Woodbury and N×N solves).
//
//	go run ./examples/lrvga-fig2 -d 100 -n 1000 -p 10 -inner 3
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
	fl := lrvgacli.Register(lrvgacli.Flags{D: 100, N: 1000, P: 10, Inner: 3, Seed: 1})
	kalman := flag.Bool("kalman", true, "also run the dense Kalman filter (d ≤ 2000)")
	cond := flag.Float64("c", 1, "condition exponent c (condition number d^c)")
	flag.Parse()
	if err := fl.Check(); err != nil {
		lrvgacli.Usage("%v", err)
	}
	if math.IsNaN(*cond) || math.IsInf(*cond, 0) {
		lrvgacli.Usage("-c %v: the condition exponent must be finite", *cond)
	}
	var x, y []float64
	if o := fl.LoadData(); o != nil {
		x, y = o.X, o.Y
	} else {
		data, _ := glm.Linear(glm.NewDesign(fl.D, *cond, fl.Seed), fl.N, 1, fl.Seed)
		x, y = data.X, data.Y
	}
	d, n := fl.D, fl.N
	b := lrvgacli.Open(fl.Backend)
	defer b.Close()
	post, err := lrvgaref.NewLinearPosterior(x, y, d, 1, 1)
	if err != nil {
		lrvgacli.Fatal(err)
	}
	f, err := lrvga.New(b, lrvga.Config{D: d, P: fl.P, Inner: fl.Inner, Seed: fl.Seed})
	if err != nil {
		lrvgacli.Fatal(err)
	}
	defer f.Close()
	var kf *lrvgaref.Dense
	if *kalman && d <= 2000 {
		kf = lrvgaref.NewDense(d, 1, nil)
	}
	next := 1
	report := func(t int) {
		kl, err := post.KL(f)
		if err != nil {
			lrvgacli.Fatal(err)
		}
		lrvgacli.Emit(map[string]any{"t": t, "method": "lrvga", "p": fl.P, "inner": fl.Inner, "kl": kl})
		if kf != nil {
			lrvgacli.Emit(map[string]any{"t": t, "method": "kalman", "kl": post.KLDense(kf)})
		}
	}
	report(0)
	for t := 0; t < n; t++ {
		row := x[t*d : (t+1)*d]
		if err := f.Update(row, y[t]); err != nil {
			lrvgacli.Fatal(err)
		}
		if kf != nil {
			kf.KalmanUpdate(row, y[t], 1)
		}
		if t+1 == next || t+1 == n {
			report(t + 1)
			next = int(math.Ceil(float64(next) * 1.5))
		}
	}
}
