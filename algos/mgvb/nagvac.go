package mgvb

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/rng/qmc"
	"github.com/geovb/geovb/tensor"
)

// NAGVACConfig holds the settings of the NAGVAC comparator of Fig. 5 (Tran, Nguyen, Nott & Kohn 2019).
// NAGVACDefault gives the comparator's settings: S = 100, ε₀ = 0.01, ω = 0.4, clip 100 on the natural gradient.
type NAGVACConfig struct {
	S                        int
	Step                     float64
	Tau                      int
	Momentum                 float64
	Clip                     float64 // on the natural gradient (3d entries), as deepGLM does
	Window, Patience, BurnIn int
	Seed                     uint64
	// Fisher picks the natural gradient: FisherDeepGLM (the default) or FisherExact.
	Fisher Fisher
	// Damping λ adds λ·tr(F)/2d to the diagonal of the exact Fisher block before the solve (FisherExact only).
	// Undamped, the exact natural gradient on German credit drives b onto one coordinate within 500 iterations,
	// where (b_i, c_i) enter Σ only through b_i² + c_i² and the Fisher is singular; λ = 0.01 avoids it.
	Damping float64
	// Draws picks the source of the draws (ε₁, ε₂) of θ = μ + bε₁ + c ⊙ ε₂: PseudoRandom (the default) or RQMC,
	// S points of a Sobol' set in d + 1 dimensions scrambled afresh every iteration.
	Draws Draws

	// InitMu, InitB and InitC are the starting point (d values each; c₀ non-zero, b₀ not all zero). Nil InitMu
	// starts at μ₀ = 0, nil InitB at b₀ ~ N(0, 0.01²) (Philox stream 3 of Seed), nil InitC at c₀ = 0.2:
	// Σ₀ ≈ 0.04 I, as the comparator of paper 000's Fig. 5.
	InitMu, InitB, InitC []float64

	// Control holds the iteration cap (0: 2000) and the progress recorder; NAGVAC writes no checkpoints.
	Control run.Control
}

// Fisher names the form of NAGVAC's natural gradient.
type Fisher int

// The Fisher forms of NAGVAC's natural gradient (Tran, Nguyen, Nott & Kohn 2019).
const (
	// FisherDeepGLM is deepGLM's block-diagonal approximation (F_bc dropped, F_bb⁻¹ ≈ Σ/(2(1 − α))), most likely
	// what paper 000 compared against.
	FisherDeepGLM Fisher = iota
	// FisherExact solves with the exact 2d×2d Fisher block of (b, c) (Cholesky, O(d³) per iteration); it needs
	// d ≥ 3, below which the block is singular.
	FisherExact
)

func (f Fisher) String() string {
	switch f {
	case FisherDeepGLM:
		return "deepglm"
	case FisherExact:
		return "exact"
	}
	return fmt.Sprintf("Fisher(%d)", int(f))
}

// NAGVACDefault returns the comparator's settings (window 11 as MGVB's, patience 0: fixed iterations),
// deepGLM's Fisher form, and damping 0.01 for when the exact form is chosen.
func NAGVACDefault() NAGVACConfig {
	return NAGVACConfig{S: 100, Step: 0.01, Tau: 1000, Momentum: 0.4, Clip: 100, Window: 11, Damping: 0.01}
}

// NAGVACResult is the best iterate (by smoothed LB) of a NAGVAC fit: Σ = bbᵀ + diag(c²).
type NAGVACResult struct {
	Mu, B, C     []float64
	BestSmoothed float64
	BestIter     int
	run.Result   // how the run ended
}

// Sigma returns bbᵀ + diag(c²) row-major.
func (r *NAGVACResult) Sigma() []float64 {
	d := len(r.Mu)
	s := make([]float64, d*d)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			s[i*d+j] = r.B[i] * r.B[j]
		}
		s[i*d+i] += r.C[i] * r.C[i]
	}
	return s
}

// NAGVAC fits the one-factor Gaussian q = N(μ, bbᵀ + diag(c²)) by the natural-gradient method of Tran, Nguyen,
// Nott & Kohn (2019, deepGLM), the comparator of paper 000's Fig. 5: reparameterisation gradient
// θ = μ + bε₁ + c∘ε₂, g = ∇log p(θ, y) − ∇log q(θ) with Σ⁻¹ applied by Woodbury, and deepGLM's block-diagonal
// approximate natural gradient (the F_bc block dropped; F_bb⁻¹ ≈ Σ/(2(1 − α)); F_cc = 2(diag(y) + xxᵀ) inverted by
// Sherman–Morrison) by default, or the exact Fisher solve with cfg.Fisher = FisherExact. The natural gradient is
// clipped to Clip, mixed with momentum and added with the schedule ε₀, ε₀τ/t. The O(d) algebra (O(d³) with the
// exact Fisher) runs on the host; the model runs on the backend. b₀ ~ N(0, 0.01²) (it must be non-zero) and c₀ are given by the caller.
func NAGVAC(ctx context.Context, be backend.Backend, m model.Batched, cfg NAGVACConfig) (*NAGVACResult, error) {
	d := m.Dim()
	if err := cfg.check(d); err != nil {
		return nil, err
	}
	mu0, b0, c0, err := cfg.start(d)
	if err != nil {
		return nil, err
	}
	ctl := cfg.Control.WithContext(ctx)
	if err := ctl.Validate(); err != nil {
		return nil, err
	}
	n, err := newNagvac(be, m, cfg, mu0, b0, c0)
	if err != nil {
		return nil, err
	}
	defer n.free()
	return n.run(ctl)
}

// check validates the settings.
func (cfg *NAGVACConfig) check(d int) error {
	switch {
	case cfg.S < 2:
		return domainErr("S", "S = %d, need at least 2", cfg.S)
	case !(cfg.Step > 0) || math.IsInf(cfg.Step, 0):
		return domainErr("Step", "learning rate %v must be positive and finite", cfg.Step)
	case !(cfg.Momentum >= 0 && cfg.Momentum < 1):
		return domainErr("Momentum", "ω = %v must be in [0, 1)", cfg.Momentum)
	case cfg.Tau < 0:
		return domainErr("Tau", "τ = %d < 0", cfg.Tau)
	case !(cfg.Clip >= 0) || math.IsInf(cfg.Clip, 0):
		return domainErr("Clip", "clip %v must be ≥ 0 and finite", cfg.Clip)
	case cfg.Window < 0 || cfg.Patience < 0 || cfg.BurnIn < 0:
		return domainErr("Window", "window %d, patience %d, burn-in %d must be ≥ 0", cfg.Window, cfg.Patience, cfg.BurnIn)
	case !(cfg.Damping >= 0) || math.IsInf(cfg.Damping, 0):
		return domainErr("Damping", "damping %v must be ≥ 0 and finite", cfg.Damping)
	case cfg.Draws != PseudoRandom && cfg.Draws != RQMC:
		return domainErr("Draws", "unknown source of draws %d", cfg.Draws)
	case cfg.Fisher != FisherDeepGLM && cfg.Fisher != FisherExact:
		return domainErr("Fisher", "unknown Fisher form %v (want %v or %v)", cfg.Fisher, FisherDeepGLM, FisherExact)
	case cfg.Fisher == FisherExact && d < 3:
		// 2d parameters against d(d+1)/2 covariance entries: the one-factor model is identified only from d = 3.
		return domainErr("Fisher", "the exact Fisher needs d ≥ 3 (d = %d: bbᵀ + diag(c²) is not identified and its Fisher is singular)", d)
	}
	return nil
}

// start returns the starting point: InitMu, InitB, InitC or their defaults, checked.
func (cfg *NAGVACConfig) start(d int) (mu0, b0, c0 []float64, err error) {
	mu0, b0, c0 = cfg.InitMu, cfg.InitB, cfg.InitC
	if mu0 == nil {
		mu0 = make([]float64, d)
	}
	if b0 == nil {
		b0 = make([]float64, d)
		rng.Counter{Seed: cfg.Seed, Stream: 3}.FillNormal(b0)
		for i := range b0 {
			b0[i] *= 0.01
		}
	}
	if c0 == nil {
		c0 = make([]float64, d)
		for i := range c0 {
			c0[i] = 0.2
		}
	}
	if len(mu0) != d || len(b0) != d || len(c0) != d {
		return nil, nil, nil, domainErr("InitMu", "μ₀, b₀, c₀ have %d, %d, %d values, need %d", len(mu0), len(b0), len(c0), d)
	}
	zero := true
	for i := 0; i < d; i++ {
		if !run.Finite(mu0[i], b0[i]) {
			return nil, nil, nil, domainErr("InitMu", "μ₀[%d] = %v, b₀[%d] = %v must be finite", i, mu0[i], i, b0[i])
		}
		if c0[i] == 0 || !run.Finite(c0[i]) {
			return nil, nil, nil, domainErr("InitC", "c₀[%d] = %v must be finite and non-zero", i, c0[i])
		}
		zero = zero && b0[i] == 0
	}
	if zero {
		// κ = Σ b²/c² = 0 makes the F_bb factor 1/κ infinite at the first step.
		return nil, nil, nil, domainErr("InitB", "b₀ = 0: the factor must be non-zero")
	}
	return mu0, b0, c0, nil
}

// nagvac is the state of one NAGVAC run: the variational parameters on the host, the model's tensors on the
// backend and the draws.
type nagvac struct {
	be            backend.Backend
	m             model.Batched
	cfg           NAGVACConfig
	d, S          int
	mu, bv, cv    []float64
	th, gr, lp    *T
	hth, hgr, hlp *T
	eps, e1, e2   []float64
	draws         uint64
}

func newNagvac(be backend.Backend, m model.Batched, cfg NAGVACConfig, mu0, b0, c0 []float64) (*nagvac, error) {
	d, S := m.Dim(), cfg.S
	n := &nagvac{be: be, m: m, cfg: cfg, d: d, S: S}
	n.mu, n.bv, n.cv = append([]float64(nil), mu0...), append([]float64(nil), b0...), append([]float64(nil), c0...)
	for _, p := range []struct {
		t    **T
		rows int
	}{{&n.th, d}, {&n.gr, d}, {&n.lp, 1}} {
		t, err := be.Alloc(tensor.Shape{Batch: 1, Rows: p.rows, Cols: S})
		if err != nil {
			n.free()
			return nil, err
		}
		*p.t = t
	}
	n.hth, n.hgr, n.hlp = tensor.NewHost(1, d, S), tensor.NewHost(1, d, S), tensor.NewHost(1, 1, S)
	n.eps = make([]float64, (d+1)*S) // ε₁ (S), then ε₂ (d rows of S): the rows of a (d+1)-dimensional RQMC set
	n.e1, n.e2 = n.eps[:S], n.eps[S:]
	return n, nil
}

func (n *nagvac) free() {
	for _, t := range []*T{n.th, n.gr, n.lp} {
		if t != nil {
			n.be.Free(t)
		}
	}
}

// draw fills ε₁, ε₂ for the next evaluation (Philox normals or a scrambled Sobol' set).
func (n *nagvac) draw() error {
	d, S, cfg := n.d, n.S, n.cfg
	if cfg.Draws == RQMC {
		c := rng.Counter{Seed: cfg.Seed, Stream: 1, Offset: n.draws * qmc.WordsPerDim * uint64(d+1)}
		if err := qmc.Normal(n.eps, d+1, S, c); err != nil {
			return err
		}
	} else {
		c := rng.Counter{Seed: cfg.Seed, Stream: 1, Offset: n.draws * uint64((d+1)*S)}
		c.FillNormal(n.e1)
		c.Advance(S).FillNormal(n.e2)
	}
	n.draws++
	return nil
}

// grad returns the natural gradient (3d) and the LB estimate at (μ, b, c).
func (n *nagvac) grad() ([]float64, float64, error) {
	be, d, S, cfg := n.be, n.d, n.S, n.cfg
	mu, bv, cv, e1, e2 := n.mu, n.bv, n.cv, n.e1, n.e2
	if err := n.draw(); err != nil {
		return nil, 0, err
	}
	for i := 0; i < d; i++ {
		for s := 0; s < S; s++ {
			n.hth.Set(0, i, s, mu[i]+bv[i]*e1[s]+cv[i]*e2[i*S+s])
		}
	}
	if err := be.Upload(n.th, n.hth); err != nil {
		return nil, 0, err
	}
	if err := n.m.LogDensityBatch(be, n.lp, n.gr, n.th); err != nil {
		return nil, 0, err
	}
	if err := be.Download(n.hgr, n.gr); err != nil {
		return nil, 0, err
	}
	if err := be.Download(n.hlp, n.lp); err != nil {
		return nil, 0, err
	}
	// Woodbury: Σ⁻¹x = x/c² − (uᵀx/(1 + uᵀb)) u, u = b/c²; κ = Σ b²/c², α = 1/(1 + κ).
	u, kappa := factorWeights(bv, cv)
	alpha := 1 / (1 + kappa)
	g := make([]float64, 3*d)
	x := make([]float64, d)
	lb := 0.0
	for s := 0; s < S; s++ {
		ux := 0.0
		for i := 0; i < d; i++ {
			x[i] = bv[i]*e1[s] + cv[i]*e2[i*S+s]
			ux += u[i] * x[i]
		}
		for i := 0; i < d; i++ {
			gi := n.hgr.At(0, i, s) + x[i]/(cv[i]*cv[i]) - ux*alpha*u[i]
			g[i] += gi / float64(S)
			g[d+i] += e1[s] * gi / float64(S)
			g[2*d+i] += e2[i*S+s] * gi / float64(S)
		}
		lb += n.hlp.At(0, 0, s) / float64(S)
	}
	logdet := math.Log1p(kappa)
	for i := 0; i < d; i++ {
		logdet += math.Log(cv[i] * cv[i])
	}
	lb += 0.5*float64(d)*(1+math.Log(2*math.Pi)) + 0.5*logdet
	nat, err := nagvacNatural(cfg.Fisher, cfg.Damping, bv, cv, u, kappa, g)
	if err != nil {
		return nil, 0, err
	}
	clipTo(nat, cfg.Clip)
	return nat, lb, nil
}

// clipTo rescales v to norm c when its norm is above c > 0.
func clipTo(v []float64, c float64) {
	if c <= 0 {
		return
	}
	n := 0.0
	for _, x := range v {
		n += x * x
	}
	if n = math.Sqrt(n); n > c {
		for i := range v {
			v[i] *= c / n
		}
	}
}

// run is the loop: step with momentum, the schedule ε₀ then ε₀τ/t, and the smoothed-LB rule keeping the best
// iterate.
func (n *nagvac) run(ctl run.Control) (*NAGVACResult, error) {
	d, cfg := n.d, n.cfg
	mu, bv, cv := n.mu, n.bv, n.cv
	mom, _, err := n.grad()
	if err != nil {
		return nil, err
	}
	res := &NAGVACResult{Mu: append([]float64(nil), mu...), B: append([]float64(nil), bv...), C: append([]float64(nil), cv...), BestSmoothed: math.NaN()}
	sm := run.Smoother{Window: cfg.Window, Patience: cfg.Patience, BurnIn: cfg.BurnIn}
	loop := ctl.Start(defaultMaxIter, 0)
	for loop.Next() {
		t := loop.Iter() + 1
		eps := cfg.Step
		if cfg.Tau > 0 && t > cfg.Tau {
			eps = cfg.Step * float64(cfg.Tau) / float64(t)
		}
		for i := 0; i < d; i++ {
			mu[i] += eps * mom[i]
			bv[i] += eps * mom[d+i]
			cv[i] += eps * mom[2*d+i]
		}
		nat, lb, err := n.grad()
		if err != nil {
			loop.Fail(err)
			break
		}
		gn := 0.0
		for i := range nat {
			mom[i] = cfg.Momentum*mom[i] + (1-cfg.Momentum)*nat[i]
			gn += nat[i] * nat[i]
		}
		if !run.Finite(lb, gn) {
			loop.Finish(run.NotFinite)
			break
		}
		s, improved, stop := sm.Add(lb)
		if improved {
			res.BestSmoothed, res.BestIter = s, t
			copy(res.Mu, mu)
			copy(res.B, bv)
			copy(res.C, cv)
		}
		loop.Report(run.Record{Objective: lb, Smoothed: s, GradNorm: math.Sqrt(gn), Step: eps})
		if stop {
			loop.Finish(run.Patience)
		}
	}
	res.Result = loop.Result()
	if res.Reason == run.NotFinite {
		return res, ErrNotFinite
	}
	return res, res.Err
}

// factorWeights returns u = b/c² and κ = bᵀu = Σ bᵢ²/cᵢ², the terms of Σ⁻¹ = diag(1/c²) − uuᵀ/(1 + κ) (Woodbury).
func factorWeights(bv, cv []float64) (u []float64, kappa float64) {
	u = make([]float64, len(bv))
	for i := range u {
		u[i] = bv[i] / (cv[i] * cv[i])
		kappa += bv[i] * u[i]
	}
	return u, kappa
}

// nagvacNatural returns the natural gradient F⁻¹g of the one-factor Gaussian N(μ, bbᵀ + diag(c²)) in the form
// chosen by fisher; g holds (g_μ, g_b, g_c), and w, κ are factorWeights(b, c). The μ block of the Fisher is Σ⁻¹ and decouples from
// (b, c), so nat_μ = Σg_μ = (bᵀg_μ)b + c²∘g_μ in both forms.
func nagvacNatural(fisher Fisher, damping float64, bv, cv, w []float64, kappa float64, g []float64) ([]float64, error) {
	d := len(bv)
	nat := make([]float64, 3*d)
	bgm := 0.0
	for i := 0; i < d; i++ {
		bgm += bv[i] * g[i]
	}
	for i := 0; i < d; i++ {
		nat[i] = bgm*bv[i] + cv[i]*cv[i]*g[i]
	}
	if fisher == FisherExact {
		return nat, exactBC(bv, cv, w, kappa, g, nat, damping)
	}
	// deepGLM: F_bc dropped, F_bb⁻¹ ≈ Σ/(2(1 − α)) = (1/2 + 1/(2κ))Σ, F_cc = 2(diag(y) + xxᵀ) by Sherman–Morrison.
	alpha := 1 / (1 + kappa)
	bgb := 0.0
	for i := 0; i < d; i++ {
		bgb += bv[i] * g[d+i]
	}
	fb := 0.5 + 0.5/kappa
	xs, yv := make([]float64, d), make([]float64, d)
	sx, xg := 0.0, 0.0
	for i := 0; i < d; i++ {
		c2 := cv[i] * cv[i]
		nat[d+i] = fb * (bgb*bv[i] + c2*g[d+i])
		xs[i] = alpha * bv[i] * bv[i] / (c2 * cv[i])
		yv[i] = 1/c2 - 2*alpha*bv[i]*bv[i]/(c2*c2)
		sx += xs[i] * xs[i] / yv[i]
		xg += xs[i] / yv[i] * g[2*d+i]
	}
	for i := 0; i < d; i++ {
		nat[2*d+i] = 0.5 * (g[2*d+i]/yv[i] - xg/(1+sx)*xs[i]/yv[i])
	}
	return nat, nil
}

// exactBC writes the (b, c) part of F⁻¹g into nat[d:] by a Cholesky solve of the exact 2d×2d Fisher block. With
// A = Σ⁻¹ and u = Ab, the entries ½tr(A ∂ᵢΣ A ∂ⱼΣ) for ∂Σ/∂b_k = e_kbᵀ + be_kᵀ and ∂Σ/∂c_k = 2c_k e_ke_kᵀ are
// F_bb = (1 − α)A + uuᵀ (bᵀAb = 1 − α), F_bc[k, l] = 2c_l A_kl u_l, F_cc[k, l] = 2c_k c_l A_kl² (the entries ½tr(A ∂ᵢΣ A ∂ⱼΣ) of the Gaussian Fisher).
func exactBC(bv, cv, w []float64, kappa float64, g, nat []float64, damping float64) error {
	d := len(bv)
	n := 2 * d
	// A = diag(1/c²) − wwᵀ/(1 + κ) with w = b/c² (Woodbury); u = Ab = w/(1 + κ).
	alpha := 1 / (1 + kappa)
	a := func(k, l int) float64 {
		v := -alpha * w[k] * w[l]
		if k == l {
			v += 1 / (cv[k] * cv[k])
		}
		return v
	}
	f := make([]float64, n*n)
	for k := 0; k < d; k++ {
		uk := alpha * w[k]
		for l := 0; l < d; l++ {
			akl, ul := a(k, l), alpha*w[l]
			f[k*n+l] = (1-alpha)*akl + uk*ul
			f[k*n+d+l] = 2 * cv[l] * akl * ul
			f[(d+l)*n+k] = f[k*n+d+l]
			f[(d+k)*n+d+l] = 2 * cv[k] * cv[l] * akl * akl
		}
	}
	if damping > 0 {
		tr := 0.0
		for i := 0; i < n; i++ {
			tr += f[i*n+i]
		}
		for i := 0; i < n; i++ {
			f[i*n+i] += damping * tr / float64(n)
		}
	}
	// A singular Fisher means b has collapsed onto fewer than three coordinates (see Damping).
	var ch mat.Cholesky
	if !ch.Factorize(mat.NewSymDense(n, f)) {
		return backend.Errorf(opName, "Fisher", backend.ErrDomain, "the exact Fisher of (b, c) is not positive definite; raise Damping")
	}
	if err := ch.SolveVecTo(mat.NewVecDense(n, nat[d:]), mat.NewVecDense(n, g[d:])); err != nil {
		return backend.Errorf(opName, "Fisher", backend.ErrDomain, "the exact Fisher of (b, c) is singular (condition number %.3g); raise Damping", ch.Cond())
	}
	return nil
}
