package cholng

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// Optimizer selects the step rule.
type Optimizer int

const (
	// Snngm is the stochastic normalised natural gradient with momentum (Table 4): m_t = βm_{t−1} +
	// (1−β)g̃_t/‖g̃_t‖, λ += α·m_t/(1−βᵗ), with ‖·‖ Euclidean for C and Riemannian √⟨ĝ, g̃⟩ for T (the printed
	// formula drops the √, which a norm needs).
	Snngm Optimizer = iota + 1
	// Adam is Kingma & Ba's ascent step on the chosen gradient kind (the paper's baseline, §7).
	Adam
)

func (o Optimizer) String() string {
	switch o {
	case Snngm:
		return "snngm"
	case Adam:
		return "adam"
	}
	return fmt.Sprintf("Optimizer(%d)", int(o))
}

// Config sets a fit. Zero values take the paper's settings (§7 and §8.1).
type Config struct {
	Param     Param
	Kind      Kind      // gradient fed to the optimiser; Snngm requires Natural
	Optimizer Optimizer // Snngm or Adam
	Seed      uint64
	// Snngm: Alpha (default 0.001·√ℓ_λ), Beta (0.9). Adam: LR (1e-3), Beta1 (0.9), Beta2 (0.999), Eps (1e-8).
	Alpha, Beta           float64
	LR, Beta1, Beta2, Eps float64
	Block                 int     // stopping-rule block length (1000)
	Tol                   float64 // stop when the slope through the last 3 block means is < Tol (0.01)
	NoStop                bool    // run to the iteration cap
	EvalDraws             int     // draws of the final L̂ (1000)
	Init0                 float64 // initial factor diagonal: 0.1 for C, 10 for T when 0
	// InitMu and InitL are the starting mean (d values; nil: 0) and factor (d×d row-major, lower triangular;
	// nil: Init0·I) of Fit; FitSparse starts from the family's current λ.
	InitMu, InitL []float64
	// Control holds the iteration cap (0: 1e5), the recorder, checkpoints and resume.
	Control run.Control
}

// defaultMaxIter is the iteration cap when Control.MaxIter is 0.
const defaultMaxIter = 100000

// Result is the outcome of Fit.
type Result struct {
	run.Result
	LHat  float64   // mean of h(θ) over EvalDraws fresh draws (§8)
	Means []float64 // the block means of h
	Mu, L []float64 // final μ and factor (d×d row-major)
	Time  time.Duration
}

// StopRule is the paper's stopping rule (§8): block means M_k of h over blocks of Block iterations; stop
// when k ≥ 3 and the least-squares slope through (1, M_{k−2}), (2, M_{k−1}), (3, M_k), (M_k − M_{k−2})/2, is below
// Tol (signed).
type StopRule struct {
	Block int
	Tol   float64
	Means []float64
	sum   float64
	n     int
}

// Add adds h_t and reports whether the rule fires at this iteration.
func (s *StopRule) Add(h float64) bool {
	s.sum += h
	s.n++
	if s.n < s.Block {
		return false
	}
	s.Means = append(s.Means, s.sum/float64(s.n))
	s.sum, s.n = 0, 0
	return SlopeStops(s.Means, s.Tol)
}

// SlopeStops applies the slope test to a list of block means.
func SlopeStops(means []float64, tol float64) bool {
	k := len(means)
	if k < 3 {
		return false
	}
	return (means[k-1]-means[k-3])/2 < tol
}

// optState is the optimiser state for one (parameter, gradient) tensor pair.
type optState struct {
	p, g, m, s, tmp, eps *T
}

type optimizer struct {
	b     backend.Backend
	cfg   Config
	alpha float64
	t     int
	st    []optState
}

func newOptimizer(b backend.Backend, cfg Config, pairs [][2]*T, nparams int) (*optimizer, error) {
	o := &optimizer{b: b, cfg: cfg, alpha: cfg.Alpha}
	if o.alpha == 0 {
		o.alpha = 0.001 * math.Sqrt(float64(nparams))
	}
	for _, pr := range pairs {
		sh := pr[0].Shape()
		st := optState{p: pr[0], g: pr[1]}
		o.st = append(o.st, st)
		cur := &o.st[len(o.st)-1]
		// Snngm keeps the momentum only; Adam also the second moment, a work buffer and ε as one broadcast matrix.
		bufs := []**T{&cur.m}
		if cfg.Optimizer == Adam {
			bufs = append(bufs, &cur.s, &cur.tmp)
		}
		for _, t := range bufs {
			var err error
			if *t, err = b.Alloc(sh); err != nil {
				o.close()
				return nil, err
			}
		}
		if cfg.Optimizer == Adam {
			var err error
			if cur.eps, err = b.Alloc(tensor.Shape{Batch: 1, Rows: sh.Rows, Cols: sh.Cols}); err != nil {
				o.close()
				return nil, err
			}
			if err := b.Fill(cur.eps, o.cfg.Eps); err != nil {
				o.close()
				return nil, err
			}
		}
	}
	return o, nil
}

func (o *optimizer) close() {
	for _, st := range o.st {
		for _, t := range []*T{st.m, st.s, st.tmp, st.eps} {
			if t != nil {
				o.b.Free(t)
			}
		}
	}
}

// step applies one update given the gradient norm (Snngm). It returns the step scale (α/(1−βᵗ) or the Adam rate).
func (o *optimizer) step(norm float64) (float64, error) {
	o.t++
	b, c := o.b, o.cfg
	t := float64(o.t)
	switch c.Optimizer {
	case Snngm:
		// Guard ‖g̃‖ = 0 (at an exact optimum the STL gradient is exactly 0): the normalised direction is then taken as 0.
		inv := 0.0
		if norm > 0 {
			inv = (1 - c.Beta) / norm
		}
		sc := o.alpha / (1 - math.Pow(c.Beta, t))
		for _, st := range o.st {
			if err := b.Axpby(st.m, inv, st.g, c.Beta, st.m); err != nil {
				return 0, err
			}
			if err := b.Axpby(st.p, sc, st.m, 1, st.p); err != nil {
				return 0, err
			}
		}
		return sc, nil
	default: // Adam ascent
		bc1, bc2 := 1-math.Pow(c.Beta1, t), 1-math.Pow(c.Beta2, t)
		for _, st := range o.st {
			if err := firstErr(
				b.Axpby(st.m, 1-c.Beta1, st.g, c.Beta1, st.m),
				b.Mul(st.tmp, st.g, st.g),
				b.Axpby(st.s, 1-c.Beta2, st.tmp, c.Beta2, st.s),
				b.Map(st.tmp, backend.Sqrt, 1/bc2, st.s),
				b.Axpby(st.tmp, 1, st.tmp, 1, st.eps),
				b.Div(st.tmp, st.m, st.tmp),
				b.Axpby(st.p, c.LR/bc1, st.tmp, 1, st.p)); err != nil {
				return 0, err
			}
		}
		return c.LR, nil
	}
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func (c *Config) defaults() error {
	if c.Param == 0 {
		c.Param = Covariance
	}
	if c.Optimizer == 0 {
		c.Optimizer = Snngm
	}
	if c.Kind == 0 {
		c.Kind = Natural
	}
	if c.Optimizer != Snngm && c.Optimizer != Adam {
		return run.ConfigErrorf("cholng", "Optimizer", "unknown optimizer %v", c.Optimizer)
	}
	if c.Kind != Natural && c.Kind != Euclidean {
		return run.ConfigErrorf("cholng", "Kind", "unknown gradient kind %v", c.Kind)
	}
	if c.Optimizer == Snngm && c.Kind != Natural {
		return run.ConfigErrorf("cholng", "Kind", "Snngm normalises the natural gradient; use Kind Natural")
	}
	if c.Beta == 0 {
		c.Beta = 0.9
	}
	if c.LR == 0 {
		c.LR = 1e-3
	}
	if c.Beta1 == 0 {
		c.Beta1 = 0.9
	}
	if c.Beta2 == 0 {
		c.Beta2 = 0.999
	}
	if c.Eps == 0 {
		c.Eps = 1e-8
	}
	if c.Block == 0 {
		c.Block = 1000
	}
	if c.Tol == 0 {
		c.Tol = 0.01
	}
	if c.EvalDraws == 0 {
		c.EvalDraws = 1000
	}
	if c.Init0 == 0 {
		c.Init0 = 0.1
		if c.Param == Precision {
			c.Init0 = 10
		}
	}
	// A negative or NaN rate would run to the cap and return a result; report it before any iteration.
	switch {
	case !(c.Beta > 0 && c.Beta < 1) || !(c.Beta1 >= 0 && c.Beta1 < 1) || !(c.Beta2 >= 0 && c.Beta2 < 1):
		return run.ConfigErrorf("cholng", "Beta", "momentum parameters β = %v, β₁ = %v, β₂ = %v must lie in [0, 1)", c.Beta, c.Beta1, c.Beta2)
	case !(c.Alpha >= 0) || math.IsInf(c.Alpha, 0):
		return run.ConfigErrorf("cholng", "Alpha", "Snngm step size α = %v must be positive and finite (0: the default)", c.Alpha)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return run.ConfigErrorf("cholng", "LR", "Adam learning rate %v must be positive and finite", c.LR)
	case !(c.Eps > 0) || math.IsInf(c.Eps, 0):
		return run.ConfigErrorf("cholng", "Eps", "Adam ε = %v must be positive and finite", c.Eps)
	case math.IsNaN(c.Tol) || math.IsInf(c.Tol, 0):
		return run.ConfigErrorf("cholng", "Tol", "stopping tolerance %v must be finite", c.Tol)
	case c.Block < 1 || c.EvalDraws < 1:
		return run.ConfigErrorf("cholng", "Block", "block length %d, evaluation draws %d must be ≥ 1", c.Block, c.EvalDraws)
	}
	return nil
}

// checkpoint is the resumable state (method "cholng", version 1).
type checkpoint struct {
	Iter        int
	Mu, L       []float64
	M, S        [][]float64
	Means       []float64
	Sum         float64
	N           int
	Param, Kind int
}

// Fit runs the algorithm of cfg on m from μ = InitMu and L = InitL (defaults 0 and Init0·I, as §8.1) under
// ctx and cfg.Control until the stopping rule fires or the iteration cap (1e5 by default) is reached, then
// estimates L̂ from EvalDraws fresh draws. Draw t of the run uses z from stream 0 at offset t·d; the evaluation
// draws use stream 1. With Control.CheckpointEvery the state is saved to Control.CheckpointPath, and
// Control.Resume continues from it bit for bit. Bad settings are errors wrapping run.ErrConfig.
func Fit(ctx context.Context, b backend.Backend, m model.Density, cfg Config) (*Result, error) {
	ctl := cfg.Control.WithContext(ctx)
	if err := ctl.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	d := m.Dim()
	f, err := NewDense(b, d, cfg.Param, cfg.InitMu, cfg.InitL, cfg.Init0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	opt, err := newOptimizer(b, cfg, [][2]*T{{f.Mu, f.GMu}, {f.L, f.GL}}, f.NumParams())
	if err != nil {
		return nil, err
	}
	defer opt.close()
	rule := &StopRule{Block: cfg.Block, Tol: cfg.Tol}
	done := 0
	if ctl.Resume {
		var cp checkpoint
		if err := run.LoadCheckpoint(ctl.CheckpointPath, "cholng", 1, &cp); err != nil {
			return nil, err
		}
		if cp.Param != int(cfg.Param) || cp.Kind != int(cfg.Kind) || len(cp.Mu) != d {
			return nil, fmt.Errorf("cholng: checkpoint %s is for another configuration: %w", ctl.CheckpointPath, run.ErrCheckpoint)
		}
		if err := f.SetParams(cp.Mu, cp.L); err != nil {
			return nil, err
		}
		for i, st := range opt.st {
			if err := upTo(b, st.m, cp.M[i]); err != nil {
				return nil, err
			}
			if st.s != nil {
				if err := upTo(b, st.s, cp.S[i]); err != nil {
					return nil, err
				}
			}
		}
		opt.t, done = cp.Iter, cp.Iter
		rule.Means, rule.sum, rule.n = cp.Means, cp.Sum, cp.N
	}
	start := time.Now()
	loop := ctl.Start(defaultMaxIter, done)
	iterate(loop, f, m, cfg, d, opt, rule, func(iter int) error {
		return saveCheckpoint(b, f, opt, rule, iter, ctl.CheckpointPath, cfg)
	})
	res := &Result{Result: loop.Result(), Means: rule.Means}
	if res.Reason == run.Failed {
		return res, res.Err
	}
	// L̂: mean of h over fresh draws (stream 1).
	ev := rng.Counter{Seed: cfg.Seed, Stream: 1}
	sum := 0.0
	for s := 0; s < cfg.EvalDraws; s++ {
		if err := f.Sample(ev.Advance(s * d)); err != nil {
			return res, err
		}
		h, err := f.Eval(m)
		if err != nil {
			return res, err
		}
		sum += h
	}
	res.LHat = sum / float64(cfg.EvalDraws)
	res.Mu, res.L, err = f.Params()
	res.Time = time.Since(start)
	return res, err
}

func upTo(b backend.Backend, dst *T, v []float64) error {
	h, err := tensor.FromSlice(append([]float64(nil), v...), dst.Batch(), dst.Rows(), dst.Cols())
	if err != nil {
		return err
	}
	return b.Upload(dst, h)
}

func downAll(b backend.Backend, src *T) ([]float64, error) {
	h := tensor.NewHost(src.Batch(), src.Rows(), src.Cols())
	if err := b.Download(h, src); err != nil {
		return nil, err
	}
	return h.Storage().Host(), nil
}

func saveCheckpoint(b backend.Backend, f *Dense, o *optimizer, r *StopRule, iter int, path string, cfg Config) error {
	mu, l, err := f.Params()
	if err != nil {
		return err
	}
	cp := checkpoint{Iter: iter, Mu: mu, L: l, Means: r.Means, Sum: r.sum, N: r.n, Param: int(cfg.Param), Kind: int(cfg.Kind)}
	for _, st := range o.st {
		m, err := downAll(b, st.m)
		if err != nil {
			return err
		}
		var s []float64
		if st.s != nil {
			if s, err = downAll(b, st.s); err != nil {
				return err
			}
		}
		cp.M, cp.S = append(cp.M, m), append(cp.S, s)
	}
	return run.SaveCheckpoint(path, "cholng", 1, cp)
}

// family is what the optimisation loop needs from a variational family: Dense (Alg 1b/2b), Block (1c), Arrow (2c).
type family interface {
	Sample(c rng.Counter) error
	Gradient(m model.Density, kind Kind) (h, norm2 float64, err error)
}

// iterate is the loop Fit and FitSparse share: draw z (stream offset it·d, so a resumed run draws what an
// uninterrupted one would), gradient, optimiser step (Snngm: Table 4 with bias correction; ‖g̃‖ = 0, an exact STL
// optimum, gives a zero direction), the stopping rule, the recorder and checkpoints through save.
func iterate(loop *run.Loop, f family, m model.Density, cfg Config, d int, opt *optimizer, rule *StopRule, save func(iter int) error) {
	ctr := rng.Counter{Seed: cfg.Seed}
	for loop.Next() {
		it := loop.Iter()
		if err := f.Sample(ctr.Advance(it * d)); err != nil {
			loop.Fail(err)
			break
		}
		h, n2, err := f.Gradient(m, cfg.Kind)
		if err != nil {
			loop.Fail(err)
			break
		}
		if !run.Finite(h, n2) {
			loop.Report(run.Record{Objective: h, GradNorm: math.Sqrt(n2), Step: math.NaN(), Smoothed: math.NaN()})
			loop.Finish(run.NotFinite)
			break
		}
		sc, err := opt.step(math.Sqrt(n2))
		if err != nil {
			loop.Fail(err)
			break
		}
		stop := rule.Add(h)
		sm := math.NaN()
		if k := len(rule.Means); k > 0 {
			sm = rule.Means[k-1]
		}
		loop.Report(run.Record{Objective: h, Smoothed: sm, GradNorm: math.Sqrt(n2), Step: sc})
		if stop && !cfg.NoStop {
			loop.Finish(run.Converged)
		}
		if loop.CheckpointDue() {
			if err := save(loop.Iter()); err != nil {
				loop.Fail(err)
			}
		}
	}
}
