// Command mgvb-garch reproduces paper 000's Fig. 6 (Section 5.2): GARCH(1,1) in the paper's naming on weekly S&P 500
// returns (the first -n values of ../shared/data/sp500/SP500_weekly_y.csv; the paper used 1000, the file has 1612),
// fitted by MGVB (score-function gradient, natural gradient) and by the two gold standards of models/garch:
// likelihood-tempered SMC (the paper's, 10,000 particles with ESS ≥ 80 %; it also estimates log p(y)) and
// random-walk Metropolis. It prints one JSON line per method with the posterior means and sds of (w, α, β) and the
// time (MGVB: its ELBO by 20,000 draws of q; SMC: its log-evidence estimate, which the ELBO must not exceed), can
// write MGVB's lower-bound trace as CSV (-trace), and draws the trace as SVG (-svg). MGVB runs -iters iterations,
// or stops earlier under the smoothed lower-bound rule with -patience (and -burnin).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"log"
	"os"
	"time"

	"github.com/geovb/geovb/algos/mgvb"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/examples/internal/mgvbcli"
	"github.com/geovb/geovb/models/garch"
)

type summary struct {
	Method  string     `json:"method"`
	Mean    [3]float64 `json:"mean_w_alpha_beta"`
	SD      [3]float64 `json:"sd_w_alpha_beta"`
	Seconds float64    `json:"seconds"`
	Extra   float64    `json:"extra,omitempty"` // MGVB: best smoothed LB; MCMC: acceptance rate
	ELBO    float64    `json:"elbo,omitempty"`  // MGVB: ELBO at the best iterate (20,000 draws of q)
	LogZ    float64    `json:"log_evidence,omitempty"`
	Steps   int        `json:"tempering_steps,omitempty"`
	Iters   int        `json:"iters,omitempty"` // MGVB: iterations run
	Reason  string     `json:"stop_reason,omitempty"`
	Draws   string     `json:"draws,omitempty"` // MGVB: prng or rqmc
}

func main() {
	cpu.UseForGonum() // the models' gonum calls and the backend's LAPACK on the CPU backend's kernels
	seed := flag.Uint64("seed", 1, "seed")
	iters := flag.Int("iters", 2000, "MGVB iterations")
	S := flag.Int("s", 100, "MGVB draws per iteration")
	step := flag.Float64("step", 0.05, "MGVB ε₀")
	n := flag.Int("n", 1000, "returns used (first n of the file; 0: all)")
	mcmc := flag.Int("mcmc", 200000, "Metropolis draws kept (0: skip)")
	particles := flag.Int("smc", 10000, "SMC particles (0: skip)")
	be := flag.String("backend", "", "backend (cpu, cuda, auto; empty reads GEOVB_BACKEND)")
	data := flag.String("data", "", "returns file (default ../shared/data/sp500/SP500_weekly_y.csv)")
	trace := flag.String("trace", "", "CSV output of MGVB's lower-bound trace")
	svg := flag.String("svg", "mgvb-garch.svg", "SVG plot of the smoothed lower bound (empty: none)")
	drawsName := flag.String("draws", "prng", mgvbcli.DrawsUsage)
	patience := flag.Int("patience", 0, "stop MGVB after this many iterations without a new best smoothed lower bound (0: run -iters)")
	burnIn := flag.Int("burnin", 0, "iterations before -patience starts counting")
	flag.Parse()
	if *patience < 0 || *burnIn < 0 {
		log.Fatalf("-patience %d, -burnin %d: want values ≥ 0", *patience, *burnIn)
	}
	if *iters <= 11 {
		log.Fatal("-iters must exceed the smoothing window (11)")
	}
	// 0 skips (or, for -n, takes every return); a negative value is a mistake, not a skip.
	if *n < 0 || *mcmc < 0 || *particles < 0 {
		log.Fatalf("-n %d, -mcmc %d, -smc %d: want values ≥ 0", *n, *mcmc, *particles)
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
	y, err := datasets.ReadSP500File(mgvbcli.DataPath(*data, "sp500", "SP500_weekly_y.csv"))
	if err != nil {
		log.Fatal(err)
	}
	if *n > 0 && *n < len(y) {
		y = y[:*n]
	}
	m, err := garch.New(y)
	if err != nil {
		log.Fatal(err)
	}
	enc := json.NewEncoder(os.Stdout)
	cfg := mgvb.DefaultConfig()
	cfg.S, cfg.Step, cfg.Patience, cfg.BurnIn, cfg.Seed = *S, *step, *patience, *burnIn, *seed
	cfg.Draws = draws
	var lb, sm []float64
	rec := run.Func(func(r run.Record) { lb, sm = append(lb, r.Objective), append(sm, r.Smoothed) })
	t0 := time.Now()
	cfg.InitSigma = []float64{0.04, 0, 0, 0, 0.04, 0, 0, 0, 0.04}
	cfg.Control = run.Control{MaxIter: *iters, Recorder: rec}
	res, err := mgvb.Fit(context.Background(), b, m, cfg)
	if err != nil {
		log.Fatal(err)
	}
	secs := time.Since(t0).Seconds()
	// Transform 200,000 draws of q = N(μ, Σ) to (w, α, β).
	const nq = 200000
	var mu [3]float64
	var sg [9]float64
	for i := 0; i < 3; i++ {
		mu[i] = res.Mu.At(0, i, 0)
		for j := 0; j < 3; j++ {
			sg[i*3+j] = res.Sigma.At(0, i, j)
		}
	}
	th := garch.GaussianDraws(mu[:], sg[:], nq, *seed)
	if th == nil {
		log.Fatal("MGVB Σ not positive definite")
	}
	s := summary{Method: "MGVB", Seconds: secs, Extra: res.BestSmoothed[0], Iters: res.Iters, Reason: res.Reason.String(), Draws: *drawsName}
	s.Mean, s.SD = garch.NaturalMoments(th, nq)
	s.ELBO, _ = m.GaussianELBO(mu[:], sg[:], 20000, *seed)
	if err := enc.Encode(s); err != nil {
		log.Fatal(err)
	}
	if *particles > 0 {
		t0 = time.Now()
		cfg := garch.DefaultSMCConfig()
		cfg.N, cfg.Seed = *particles, *seed
		r, err := garch.SMC(m, cfg)
		if err != nil {
			log.Fatal(err)
		}
		s := summary{Method: "SMC", Seconds: time.Since(t0).Seconds(), LogZ: r.LogEvidence, Steps: len(r.Gammas)}
		s.Mean, s.SD = garch.NaturalMoments(r.Theta, r.N)
		if err := enc.Encode(s); err != nil {
			log.Fatal(err)
		}
	}
	if *mcmc > 0 {
		t0 = time.Now()
		g := m.Metropolis([]float64{0, 1, 0}, *mcmc, *mcmc/5, *seed)
		s := summary{Method: "RWM", Seconds: time.Since(t0).Seconds(), Extra: g.Acceptance}
		s.Mean, s.SD = garch.NaturalMoments(g.Theta, g.N)
		if err := enc.Encode(s); err != nil {
			log.Fatal(err)
		}
	}
	series := []mgvbcli.Series{{Name: "MGVB", LB: lb, Smoothed: sm}}
	if err := mgvbcli.Plot(*svg, "GARCH(1,1), S&P 500 weekly: MGVB lower bound", series, 10); err != nil {
		log.Fatal(err)
	}
	if err := mgvbcli.WriteTrace(*trace, series); err != nil {
		log.Fatal(err)
	}
}
