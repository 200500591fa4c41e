package sggmcexp

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/geovb/geovb/algos/sggmc"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/models/sam"
	"github.com/geovb/geovb/tensor"
)

// SAM method names (paper 001 Section 5.3).
const (
	SAMgSGNHT     = "gSGNHT"
	SAMSGGMC      = "SGGMC"
	SAMGMCApprMH  = "GMC-apprMH"
	SAMGMCbGibbs  = "GMC-bGibbs"
	samGMCBurnIn  = 30   // GMC samples left out of the evaluation (20News, the authors' evaluation)
	samEvalWindow = 8000 // SG methods: the last 8000 samples, no burn-in (the authors' evaluation)
)

// SAMMethods lists the methods RunSAM knows.
var SAMMethods = []string{SAMgSGNHT, SAMSGGMC, SAMGMCApprMH, SAMGMCbGibbs}

// SAMConfig sets a SAM run with the authors' 20News-diff settings by default.
type SAMConfig struct {
	Method string
	K      int       // topics (20)
	Hyper  sam.Hyper // sam.News20Hyper if zero
	// SG methods: minibatch S (50), btL inner steps per sample (10), γ and α_a (1e-2, 1e-2) with ε = √(γ/D),
	// C = α_a/ε (the authors' code sets ε = √(γ/D) and α_a = Cε).
	Batch, L      int
	Gamma, AlphaA float64
	NTheta        int           // Dirichlet draws of the evaluator (200)
	Seed          uint64        // seeds the topics, minibatches, θ chains, noise and evaluator
	MaxIter       int           // samples (0: no cap)
	Budget        time.Duration // sampling-time budget (0: no cap)
	EvalEvery     time.Duration // sampling time between evaluations (0: only at the end)
}

// SAMPoint is one evaluation of a SAM run: log-perplexity (Section 5.3) against sampling time (evaluation excluded) and the run's health numbers.
type SAMPoint struct {
	Method      string  `json:"method"`
	Iter        int     `json:"iter"`
	Seconds     float64 `json:"seconds"` // sampling time
	EvalSeconds float64 `json:"eval_seconds"`
	LogPerp     float64 `json:"log_perplexity"`
	Samples     int     `json:"samples_in_window"`
	Kinetic     float64 `json:"kinetic,omitempty"` // ‖v‖²/m (SG methods)
	Xi          float64 `json:"xi,omitempty"`
	ThetaAccept float64 `json:"theta_accept"`
	BetaAccept  float64 `json:"beta_accept,omitempty"` // GMC
}

func (c *SAMConfig) fill() {
	if c.K == 0 {
		c.K = 20
	}
	if c.Hyper == (sam.Hyper{}) {
		c.Hyper = sam.News20Hyper
	}
	if c.Batch == 0 {
		c.Batch = 50
	}
	if c.L == 0 {
		c.L = 10
	}
	if c.Gamma == 0 {
		c.Gamma = 1e-2
	}
	if c.AlphaA == 0 {
		c.AlphaA = 1e-2
	}
	if c.NTheta == 0 {
		c.NTheta = 200
	}
}

// RunSAM fits SAM on train with one method and reports the test log-perplexity at the evaluation times:
//   - gSGNHT / SGGMC: minibatches of Batch documents, L fused ABOBA steps per sample, V̂ = 0, θ by PaperTheta;
//   - GMC-apprMH: GMC on β (L = 1, ε = 1e-4) with the approximate potential E_θ[−log lik] for θ of all documents
//     (15 + 10 samples per document, redrawn from the least-squares start every sample);
//   - GMC-bGibbs: alternating GMC on θ|β (15 + 1 samples, warm-started) and on β|θ (L = 5, ε = 2e-5).
func RunSAM(ctx context.Context, b backend.Backend, train, test *datasets.Corpus, cfg SAMConfig, report func(SAMPoint) error) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	cfg.fill()
	if err := sam.CheckCorpora(train, test); err != nil { // before MeanDirection reads them
		return err
	}
	m := sam.MeanDirection(train)
	opt := sam.Options{Seed: cfg.Seed}
	var gmcEps float64
	var gmcL int
	sg := cfg.Method == SAMgSGNHT || cfg.Method == SAMSGGMC
	switch cfg.Method {
	case SAMgSGNHT, SAMSGGMC:
		opt.Batch = cfg.Batch
	case SAMGMCApprMH:
		opt.Theta = sam.ThetaConfig{Burn: 15, N: 10, L: sam.PaperTheta.L, Eps: sam.PaperTheta.Eps}
		gmcEps, gmcL = 1e-4, 1
	case SAMGMCbGibbs:
		opt.Theta = sam.ThetaConfig{Burn: 15, N: 1, L: sam.PaperTheta.L, Eps: sam.PaperTheta.Eps}
		opt.Warm = true
		gmcEps, gmcL = 2e-5, 5
	default:
		return fmt.Errorf("sggmc: unknown SAM method %q (want one of %v)", cfg.Method, SAMMethods)
	}
	model, err := sam.New(train, cfg.Hyper, cfg.K, m, opt)
	if err != nil {
		return err
	}
	window := samEvalWindow
	ev, err := sam.NewEvaluator(test, cfg.Hyper, cfg.K, cfg.NTheta, window, cfg.Seed^0xe7a1)
	if err != nil {
		return err
	}
	// The samplers take their starting points on b (InitTopics draws them in host memory).
	x0, err := backend.UploadNew(b, sam.InitTopics(m, cfg.K, cfg.Seed))
	if err != nil {
		return err
	}
	defer b.Free(x0)
	var step func() error
	var xOf func() *T
	var diag func(p *SAMPoint) error
	if sg {
		D := float64(train.Docs())
		eps := math.Sqrt(cfg.Gamma / D)
		meth := sggmc.GSGNHT
		if cfg.Method == SAMSGGMC {
			meth = sggmc.SGGMC
		}
		s, err := sggmc.New(b, model, x0, sggmc.Config{Method: meth, Step: eps, Friction: cfg.AlphaA / eps, L: cfg.L,
			Seed: cfg.Seed, Stream: 1})
		if err != nil {
			return err
		}
		defer s.Close()
		step, xOf = s.Sample, s.X
		diag = func(p *SAMPoint) error {
			d, err := s.Diagnostics()
			p.Kinetic, p.Xi = d.Kinetic, d.Xi
			return err
		}
	} else {
		g, err := sggmc.NewGMC(b, model, x0, gmcEps, gmcL, cfg.Seed, 1)
		if err != nil {
			return err
		}
		defer g.Close()
		step, xOf = g.Sample, g.X
		diag = func(p *SAMPoint) error { p.BetaAccept = g.AcceptRate(); return nil }
	}
	host := tensor.NewHost(1, cfg.K, train.V)
	var sampling, evalTime time.Duration
	nextEval := cfg.EvalEvery
	for it := 1; ; it++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		t0 := time.Now()
		if err := step(); err != nil {
			return err
		}
		if err := b.Download(host, xOf()); err != nil { // part of sampling: the sample is stored
			return err
		}
		sampling += time.Since(t0)
		t1 := time.Now()
		if sg || it > samGMCBurnIn {
			beta, _, _, _ := host.Matrix(0)
			ev.Add(beta[:cfg.K*train.V])
		}
		last := (cfg.MaxIter > 0 && it >= cfg.MaxIter) || (cfg.Budget > 0 && sampling >= cfg.Budget)
		// Evaluate at the checkpoints once the window holds a sample (GMC: after its burn-in).
		if ev.Samples() > 0 && (last || (cfg.EvalEvery > 0 && sampling >= nextEval)) {
			for cfg.EvalEvery > 0 && nextEval <= sampling {
				nextEval += cfg.EvalEvery
			}
			p := SAMPoint{Method: cfg.Method, Iter: it, Seconds: sampling.Seconds(), LogPerp: ev.LogPerplexity(),
				Samples: ev.Samples(), ThetaAccept: model.ThetaAcceptance()}
			if err := diag(&p); err != nil {
				return err
			}
			evalTime += time.Since(t1)
			p.EvalSeconds = evalTime.Seconds()
			if err := report(p); err != nil {
				return err
			}
		} else {
			evalTime += time.Since(t1)
		}
		if last {
			if ev.Samples() == 0 {
				return backend.Errorf("sggmc", "Budget", backend.ErrDomain,
					"%s stopped after %d samples, within its burn-in of %d: nothing to evaluate", cfg.Method, it, samGMCBurnIn)
			}
			return nil
		}
	}
}

// Check reports the settings RunSAM would refuse without looking at data: an unknown method, negative limits (a
// negative limit would mean none) and a GMC iteration cap within its burn-in (nothing would be evaluated). A
// program running several methods can check them all before the first one runs for its budget.
func (c SAMConfig) Check() error {
	if !slices.Contains(SAMMethods, c.Method) {
		return fmt.Errorf("sggmc: unknown SAM method %q (want one of %v)", c.Method, SAMMethods)
	}
	if c.MaxIter < 0 || c.Budget < 0 || c.EvalEvery < 0 {
		return backend.Errorf("sggmc", "MaxIter", backend.ErrDomain, "MaxIter %d, Budget %v, EvalEvery %v: want ≥ 0", c.MaxIter, c.Budget, c.EvalEvery)
	}
	gmc := c.Method == SAMGMCApprMH || c.Method == SAMGMCbGibbs
	if gmc && c.MaxIter > 0 && c.MaxIter <= samGMCBurnIn {
		return backend.Errorf("sggmc", "MaxIter", backend.ErrDomain,
			"%s leaves its first %d samples out of the evaluation: MaxIter = %d leaves none", c.Method, samGMCBurnIn, c.MaxIter)
	}
	return nil
}
