// Command mgvb-nnvb reproduces paper 000's Fig. 7 (Section 5.3): manifold NNVB (algos/nnvb) with and without the
// K-FAC natural gradient for the deepGLM-style 2×10 Bayesian neural-net classifier on German credit (models/nnet:
// p = 24 inputs without an intercept column, d = 361, tanh hidden units, prior N(0, I)). Both runs start from the
// same Haar-random W₁, W₂ and b = 0 and use the same draws; -project-first adds a third run, the natural gradient
// with the W₂ gradient projected onto the tangent space before the K-FAC preconditioning (nnvb.Config.ProjectFirst).
// It prints one JSON line per run (final smoothed LB, the first iteration at which the run reaches the plain run's
// final smoothed LB, worst ‖WᵀW − I‖, time), can write the traces as CSV (-trace) and draws the smoothed lower
// bounds as SVG (-svg).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"log"
	"math"
	"os"
	"time"

	"github.com/geovb/geovb/algos/nnvb"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/examples/internal/mgvbcli"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/models/nnet"
)

type summary struct {
	Method      string  `json:"method"`
	S           int     `json:"S"`
	Step        float64 `json:"eps0"`
	Iters       int     `json:"iters"`
	FinalLB     float64 `json:"final_smoothed_lb"`
	ReachPlain  int     `json:"iter_reaching_plain_final"`
	WorstOrth   float64 `json:"worst_orth"`
	Seconds     float64 `json:"seconds"`
	Backend     string  `json:"backend"`
	lb, smooths []float64
}

func main() {
	cpu.UseForGonum() // the models' gonum calls and the backend's LAPACK on the CPU backend's kernels
	seed := flag.Uint64("seed", 1, "seed (initial W and draws)")
	iters := flag.Int("iters", 500, "iterations of each run")
	S := flag.Int("s", 20, "draws per iteration")
	step := flag.Float64("step", 0.01, "ε₀ of the natural-gradient run")
	plainStep := flag.Float64("plain-step", 0.01, "ε₀ of the plain run")
	damping := flag.Float64("damping", 1e-2, "relative K-FAC damping")
	projectFirst := flag.Bool("project-first", false, "also run the natural gradient with ProjectFirst")
	be := flag.String("backend", "", "backend (cpu, cuda, auto; empty reads GEOVB_BACKEND)")
	data := flag.String("data", "", "German credit file (default ../shared/data/german-credit/germancredit_numeric.txt)")
	trace := flag.String("trace", "", "CSV output of the traces (iter, method, lb, smoothed)")
	svg := flag.String("svg", "mgvb-nnvb.svg", "SVG plot of the smoothed lower bounds (empty: none)")
	flag.Parse()
	if *iters <= 11 {
		log.Fatal("-iters must exceed the smoothing window (11)")
	}
	if err := mgvbcli.CheckOutputs(*svg, *trace); err != nil {
		log.Fatal(err)
	}
	b := mgvbcli.Open(*be)
	defer b.Close()
	g, err := datasets.ReadGermanFile(mgvbcli.DataPath(*data, "german-credit", "germancredit_numeric.txt"))
	if err != nil {
		log.Fatal(err)
	}
	x, n, p := g.GermanDesign(false)
	m, err := nnet.New(x, g.Y, n, p)
	if err != nil {
		log.Fatal(err)
	}
	p0, err := nnvb.RandomInit(b, m.Dim(), *seed, nil)
	if err != nil {
		log.Fatal(err)
	}
	var out []*summary
	runs := []struct {
		name         string
		plain, first bool
	}{{"NNVB-plain", true, false}, {"NNVB-natural", false, false}}
	if *projectFirst {
		runs = append(runs, struct {
			name         string
			plain, first bool
		}{"NNVB-natural-projectfirst", false, true})
	}
	for _, r := range runs {
		cfg := nnvb.DefaultConfig()
		cfg.S, cfg.Step, cfg.Damping, cfg.Plain, cfg.Seed, cfg.TrackOrth = *S, *step, *damping, r.plain, *seed, true
		cfg.ProjectFirst = r.first
		name := r.name
		if r.plain {
			cfg.Step = *plainStep
		}
		t0 := time.Now()
		cfg.Init, cfg.Control = p0, run.Control{MaxIter: *iters}
		res, err := nnvb.Fit(context.Background(), b, model.Batch(m), cfg)
		if err != nil {
			log.Fatal(err)
		}
		s := &summary{Method: name, S: *S, Step: cfg.Step, Iters: len(res.LB), Seconds: time.Since(t0).Seconds(),
			Backend: b.Info().Name, lb: res.LB, smooths: res.Smoothed}
		for _, o := range res.Orth {
			s.WorstOrth = math.Max(s.WorstOrth, o)
		}
		if k := len(res.Smoothed); k > 0 {
			s.FinalLB = res.Smoothed[k-1]
		}
		out = append(out, s)
	}
	target := out[0].FinalLB
	enc := json.NewEncoder(os.Stdout)
	var series []mgvbcli.Series
	for _, s := range out {
		for i, v := range s.smooths {
			if v >= target {
				s.ReachPlain = i + 1
				break
			}
		}
		if err := enc.Encode(s); err != nil {
			log.Fatal(err)
		}
		series = append(series, mgvbcli.Series{Name: s.Method, LB: s.lb, Smoothed: s.smooths})
	}
	if err := mgvbcli.Plot(*svg, "NNVB, 2×10 BNN on German credit (d = 361)", series, 10); err != nil {
		log.Fatal(err)
	}
	if err := mgvbcli.WriteTrace(*trace, series); err != nil {
		log.Fatal(err)
	}
}
