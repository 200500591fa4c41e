package samvi

import (
	"context"
	"fmt"
	"time"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/models/sam"
)

// Method names (paper 001 Fig. 5).
const (
	MethodVI    = "VI"
	MethodStoVI = "StoVI"
)

// Methods lists the methods Run knows.
var Methods = []string{MethodVI, MethodStoVI}

// Config sets a run with the authors' 20News-diff settings by default.
type Config struct {
	Method string
	K      int       // topics (20)
	Hyper  sam.Hyper // sam.News20Hyper if zero; held fixed, as in the paper's VI
	// StoVI: minibatch S (50), delay τ₀ (5) and forgetting rate r (0.8) of ρ_t = (τ₀ + t)^(−r); zero takes the
	// default in brackets, so τ₀ = 0 itself is only available through VI.StoStep.
	Batch     int
	Tau0      float64
	Rate      float64
	Options   Options
	NTheta    int           // Dirichlet draws of the evaluator (200)
	Seed      uint64        // seeds the topics, minibatches and evaluator (as sggmcexp.RunSAM does)
	MaxIter   int           // iterations: VI sweeps or StoVI steps (0: no cap)
	Budget    time.Duration // fitting-time budget (0: no cap)
	EvalEvery time.Duration // fitting time between evaluations (0: only at the end); iterations 1, 2, 4, 8, … too
	// CPUClock measures fitting time (Budget, EvalEvery, Point.Seconds) in process CPU time (run.CPUTime) instead
	// of wall time, so that runs on a loaded machine do the same work; VI and StoVI run on one goroutine, so on an
	// idle machine the two clocks agree.
	CPUClock bool
}

// Point is one evaluation: the log-perplexity of the point estimate (Section 5.3, M = 1) against fitting time
// (evaluation excluded), with the JSON keys of sggmcexp.SAMPoint.
type Point struct {
	Method      string  `json:"method"`
	Iter        int     `json:"iter"`
	Seconds     float64 `json:"seconds"`
	EvalSeconds float64 `json:"eval_seconds"`
	LogPerp     float64 `json:"log_perplexity"`
	ELBO        float64 `json:"elbo,omitempty"` // VI only (StoVI does not evaluate the full bound)
	Step        float64 `json:"step"`           // ρ of the topic update
}

func (c *Config) fill() {
	if c.K == 0 {
		c.K = 20
	}
	if c.Hyper == (sam.Hyper{}) {
		c.Hyper = sam.News20Hyper
	}
	if c.Batch == 0 {
		c.Batch = 50
	}
	if c.Tau0 == 0 {
		c.Tau0 = 5
	}
	if c.Rate == 0 {
		c.Rate = 0.8
	}
	if c.NTheta == 0 {
		c.NTheta = 200
	}
}

// Run fits SAM on train by VI (one Sweep per iteration) or StoVI (one StoStep per iteration) from the samplers'
// initial topics and reports the test log-perplexity of the point estimate Topics() at iterations 1, 2, 4, … and
// at the evaluation times, scored with the evaluator the samplers use (sam.Evaluator, the same Dirichlet draws for
// the same seed as sggmcexp.RunSAM, window 1).
func Run(ctx context.Context, train, test *datasets.Corpus, cfg Config, report func(Point) error) error {
	cfg.fill()
	if cfg.Method != MethodVI && cfg.Method != MethodStoVI {
		return backend.Errorf("samvi", "method", backend.ErrDomain, "unknown method %q (want one of %v)", cfg.Method, Methods)
	}
	// The corpora are checked before MeanDirection reads them; a negative limit would otherwise mean no limit.
	if err := sam.CheckCorpora(train, test); err != nil {
		return err
	}
	if cfg.MaxIter < 0 || cfg.Budget < 0 || cfg.EvalEvery < 0 {
		return backend.Errorf("samvi", "MaxIter", backend.ErrDomain, "MaxIter %d, Budget %v, EvalEvery %v: want ≥ 0", cfg.MaxIter, cfg.Budget, cfg.EvalEvery)
	}
	if cfg.Method == MethodStoVI && cfg.Batch > train.Docs() {
		return backend.Errorf("samvi", "batch", backend.ErrDomain, "StoVI minibatch %d > %d training documents", cfg.Batch, train.Docs())
	}
	m := sam.MeanDirection(train)
	opt := cfg.Options
	opt.Seed = cfg.Seed
	v, err := New(train, cfg.Hyper, cfg.K, m, opt)
	if err != nil {
		return err
	}
	ev, err := sam.NewEvaluator(test, cfg.Hyper, cfg.K, cfg.NTheta, 1, cfg.Seed^0xe7a1)
	if err != nil {
		return err
	}
	var fit, evalTime time.Duration
	nextEval := cfg.EvalEvery
	clock := func() time.Duration { return time.Duration(time.Now().UnixNano()) }
	if cfg.CPUClock {
		clock = run.CPUTime
	}
	for it := 1; ; it++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		t0 := clock()
		var rho float64
		if cfg.Method == MethodVI {
			v.UpdateTheta()
			if err = v.UpdateMu(); err == nil {
				if rho, err = v.UpdateTopics(); err == nil {
					err = v.UpdateMu()
				}
			}
		} else {
			rho = stoRate(it-1, cfg.Tau0, cfg.Rate)
			err = v.StoStep(it-1, cfg.Batch, cfg.Tau0, cfg.Rate)
		}
		if err != nil {
			return fmt.Errorf("samvi: %s iteration %d: %w", cfg.Method, it, err)
		}
		fit += clock() - t0
		last := (cfg.MaxIter > 0 && it >= cfg.MaxIter) || (cfg.Budget > 0 && fit >= cfg.Budget)
		pow2 := it&(it-1) == 0
		if last || pow2 || (cfg.EvalEvery > 0 && fit >= nextEval) {
			t1 := clock()
			for cfg.EvalEvery > 0 && nextEval <= fit {
				nextEval += cfg.EvalEvery
			}
			ev.Add(v.Topics())
			p := Point{Method: cfg.Method, Iter: it, Seconds: fit.Seconds(), LogPerp: ev.LogPerplexity(), Step: rho}
			if cfg.Method == MethodVI {
				p.ELBO = v.ELBO()
			}
			evalTime += clock() - t1
			p.EvalSeconds = evalTime.Seconds()
			if err := report(p); err != nil {
				return err
			}
		}
		if last {
			return nil
		}
	}
}
