// Command mgvb-german reproduces paper 000's Figs. 4 and 5 (Section 5.1) on German credit: Bayesian logistic
// regression, d = 25 (intercept + 24 columns, 15 of them z-scored), prior N(0, 50 I), μ₀ = 0, Σ₀ = 0.04 I.
//
//   - MGVB with the natural gradient (S = -s draws, ε₀ = -step);
//   - MGVB without it ("plain": Euclidean gradient, same retraction and transport; S = -plain-s,
//     ε₀ = -plain-step, much smaller because the clipped plain step moves Σ by ε₀·100);
//   - NAGVAC (one-factor covariance bbᵀ + diag(c²), deepGLM's approximate natural gradient; or the
//     exact Fisher solve, -nagvac-fisher exact, or both side by side).
//
// -draws rqmc gives every method scrambled-Sobol' draws in place of Philox normals.
//
// Every method runs -iters iterations with the initial gradient clipped (against premature stopping), or stops earlier under
// the smoothed lower-bound rule when -patience is set (the paper's runs stopped so: MGVB after 921 iterations,
// NAGVAC after 1280; -burnin delays the rule past the initial dip). It prints one JSON
// line per method (final and best smoothed lower bound, the exact quadrature ELBO at the best iterate, time), can
// write every method's lower-bound trace as CSV (-trace) and draws the smoothed traces as SVG (-svg).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/algos/mgvb"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/examples/internal/mgvbcli"
	"github.com/geovb/geovb/models/logistic"
)

type result struct {
	Method       string  `json:"method"`
	Draws        string  `json:"draws,omitempty"` // prng or rqmc
	S            int     `json:"S"`
	Step         float64 `json:"eps0"`
	Iters        int     `json:"iters"`
	FinalLB      float64 `json:"final_smoothed_lb"`
	BestLB       float64 `json:"best_smoothed_lb"`
	BestIter     int     `json:"best_iter"`
	ExactELBO    float64 `json:"exact_elbo_at_best"`
	OptimumELBO  float64 `json:"elbo_star"`
	Seconds      float64 `json:"seconds"`
	Reason       string  `json:"stop_reason"`
	Backend      string  `json:"backend"`
	lb, smoothed []float64
}

func main() {
	cpu.UseForGonum() // the models' gonum calls and the backend's LAPACK on the CPU backend's kernels
	seed := flag.Uint64("seed", 1, "seed of the Monte Carlo draws")
	iters := flag.Int("iters", 500, "iterations of every method")
	S := flag.Int("s", 100, "draws per iteration, MGVB with natural gradient and NAGVAC")
	step := flag.Float64("step", 0.05, "ε₀ of MGVB")
	plainS := flag.Int("plain-s", 10000, "draws per iteration of plain MGVB (paper: 10,000); 0 skips it")
	plainStep := flag.Float64("plain-step", 1e-4, "ε₀ of plain MGVB")
	nagStep := flag.Float64("nagvac-step", 0.01, "ε₀ of NAGVAC; 0 skips it")
	drawsName := flag.String("draws", "prng", mgvbcli.DrawsUsage)
	nagDamp := flag.Float64("nagvac-damping", 0.01, "damping λ of the exact Fisher (λ·tr F/2d added to its diagonal)")
	nagFisher := flag.String("nagvac-fisher", mgvb.FisherDeepGLM.String(), "NAGVAC's natural gradient: deepglm (the approximation), exact (the 2d×2d Fisher solve), or both")
	tau := flag.Int("tau", 0, "τ of the schedule ε₀τ/t (0: constant step)")
	patience := flag.Int("patience", 0, "stop after this many iterations without a new best smoothed lower bound (0: run -iters)")
	burnIn := flag.Int("burnin", 0, "iterations before -patience starts counting")
	be := flag.String("backend", "", "backend (cpu, cuda, auto; empty reads GEOVB_BACKEND)")
	data := flag.String("data", "", "German credit file (default ../shared/data/german-credit/germancredit_numeric.txt)")
	trace := flag.String("trace", "", "CSV output of the lower-bound traces (iter, method, lb, smoothed)")
	svg := flag.String("svg", "mgvb-german.svg", "SVG plot of the smoothed lower bounds (empty: none)")
	flag.Parse()
	if *iters <= 11 {
		log.Fatal("-iters must exceed the smoothing window (11)")
	}
	// 0 skips a comparator; a negative value is a mistake, not a skip.
	if *plainS < 0 || *nagStep < 0 || math.IsNaN(*nagStep) {
		log.Fatalf("-plain-s %d, -nagvac-step %v: want values ≥ 0 (0 skips the method)", *plainS, *nagStep)
	}
	var fishers []mgvb.Fisher
	switch *nagFisher {
	case mgvb.FisherDeepGLM.String():
		fishers = []mgvb.Fisher{mgvb.FisherDeepGLM}
	case mgvb.FisherExact.String():
		fishers = []mgvb.Fisher{mgvb.FisherExact}
	case "both":
		fishers = []mgvb.Fisher{mgvb.FisherDeepGLM, mgvb.FisherExact}
	default:
		log.Fatalf("-nagvac-fisher %q: want deepglm, exact or both", *nagFisher)
	}
	if *patience < 0 || *burnIn < 0 {
		log.Fatalf("-patience %d, -burnin %d: want values ≥ 0", *patience, *burnIn)
	}
	draws, err := mgvbcli.Draws(*drawsName)
	if err != nil {
		log.Fatal(err)
	}
	if err := mgvbcli.CheckOutputs(*svg, *trace); err != nil {
		log.Fatal(err)
	}
	b := mgvbcli.Open(*be)
	defer b.Close()
	m, err := logistic.NewGerman(b, mgvbcli.DataPath(*data, "german-credit", "germancredit_numeric.txt"), true)
	if err != nil {
		log.Fatal(err)
	}
	d := m.Dim()
	_, _, star, err := m.Optimum()
	if err != nil {
		log.Fatal(err)
	}
	var results []*result
	runMGVB := func(name string, plain bool, s int, eps float64) {
		cfg := mgvb.DefaultConfig()
		cfg.S, cfg.Step, cfg.Tau, cfg.Plain, cfg.Patience, cfg.BurnIn, cfg.Seed = s, eps, *tau, plain, *patience, *burnIn, *seed
		cfg.Draws = draws
		r := &result{Method: name, Draws: *drawsName, S: s, Step: eps, OptimumELBO: star, Backend: b.Info().Name}
		rec := run.Func(func(x run.Record) { r.lb, r.smoothed = append(r.lb, x.Objective), append(r.smoothed, x.Smoothed) })
		sigma0 := make([]float64, d*d)
		for i := 0; i < d; i++ {
			sigma0[i*d+i] = 0.04
		}
		t0 := time.Now()
		cfg.InitSigma, cfg.Control = sigma0, run.Control{MaxIter: *iters, Recorder: rec}
		res, err := mgvb.Fit(context.Background(), b, m, cfg)
		if err != nil {
			log.Fatal(err)
		}
		r.Seconds = time.Since(t0).Seconds()
		mu := make([]float64, d)
		sg := make([]float64, d*d)
		for i := 0; i < d; i++ {
			mu[i] = res.Mu.At(0, i, 0)
			for j := 0; j < d; j++ {
				sg[i*d+j] = res.Sigma.At(0, i, j)
			}
		}
		r.BestLB, r.BestIter, r.Reason, r.Iters = res.BestSmoothed[0], res.BestIter[0], res.Reason.String(), res.Iters
		if r.ExactELBO, err = m.ExactELBO(mu, symOf(d, sg)); err != nil {
			log.Fatal(err)
		}
		results = append(results, r)
	}
	runMGVB("MGVB", false, *S, *step)
	if *plainS > 0 {
		runMGVB("MGVB-plain", true, *plainS, *plainStep)
	}
	for _, fisher := range fishers {
		if *nagStep == 0 {
			break
		}
		nc := mgvb.NAGVACDefault()
		nc.S, nc.Step, nc.Tau, nc.Control.MaxIter, nc.Seed = *S, *nagStep, *tau, *iters, *seed
		nc.Patience, nc.BurnIn, nc.Fisher, nc.Damping, nc.Draws = *patience, *burnIn, fisher, *nagDamp, draws
		if nc.Tau == 0 {
			nc.Tau = *iters
		}
		method := "NAGVAC"
		if fisher == mgvb.FisherExact {
			method = "NAGVAC-exact"
		}
		r := &result{Method: method, Draws: *drawsName, S: *S, Step: *nagStep, OptimumELBO: star, Backend: b.Info().Name}
		rec := run.Func(func(x run.Record) { r.lb, r.smoothed = append(r.lb, x.Objective), append(r.smoothed, x.Smoothed) })
		nc.Control.Recorder = rec // the default start: μ₀ = 0, b₀ ~ N(0, 0.01²) from the seed, c₀ = 0.2
		t0 := time.Now()
		res, err := mgvb.NAGVAC(context.Background(), b, m, nc)
		if err != nil {
			log.Fatal(err)
		}
		r.Seconds = time.Since(t0).Seconds()
		r.BestLB, r.BestIter, r.Reason, r.Iters = res.BestSmoothed, res.BestIter, res.Reason.String(), res.Iters
		if r.ExactELBO, err = m.ExactELBO(res.Mu, symOf(d, res.Sigma())); err != nil {
			log.Fatal(err)
		}
		results = append(results, r)
	}
	enc := json.NewEncoder(os.Stdout)
	var series []mgvbcli.Series
	for _, r := range results {
		if n := len(r.smoothed); n > 0 {
			r.FinalLB = r.smoothed[n-1]
		}
		if err := enc.Encode(r); err != nil {
			log.Fatal(err)
		}
		series = append(series, mgvbcli.Series{Name: fmt.Sprintf("%s (S=%d, ε₀=%g)", r.Method, r.S, r.Step), LB: r.lb, Smoothed: r.smoothed})
	}
	title := fmt.Sprintf("German credit (d = %d): smoothed lower bound, ELBO* = %.2f", d, star)
	if err := mgvbcli.Plot(*svg, title, series, 10); err != nil {
		log.Fatal(err)
	}
	if err := mgvbcli.WriteTrace(*trace, series); err != nil {
		log.Fatal(err)
	}
}

// symOf wraps a row-major d×d symmetric matrix.
func symOf(d int, x []float64) *mat.SymDense {
	s := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			s.SetSym(i, j, x[i*d+j])
		}
	}
	return s
}
