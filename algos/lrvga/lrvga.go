// Package lrvga is the limited-memory recursive variational Gaussian approximation (L-RVGA) of Lambert, Bonnabel
// and Bach (paper 002; docs/lrvga.md describes the package).
//
// A Filter keeps q_t = N(μ_t, P_t) with the precision in factor-analysis form P_t⁻¹ ≈ W Wᵀ + Ψ (W d×p, Ψ
// diagonal) and consumes one observation (x_t, y_t) per Update: an R-VGA step that adds a low-rank term to the
// precision, projected back by the recursive EM of Algorithm 1 (backend.RecursiveEM), and a Woodbury mean update.
// Everything is O(dp) memory and O(dp² n_in) time per observation; no d×d object is formed. Run streams a Source
// through Update with the shared run control (cancellation, progress, checkpoints, resume).
//
// Schemes (Config.Scheme, a Scheme; ParseScheme reads the names):
//   - SchemeLinear ("linear", the zero value): Bayesian linear regression y = xᵀθ + N(0, σ_w²), eq. (25)–(27).
//   - SchemeLogistic ("logistic"): logistic regression, the implicit closed-form step with the probit
//     approximation, (52)–(54), with the scalar system solved to machine precision (SolveImplicit).
//   - SchemeLogisticExtragrad ("logistic-extragrad"): logistic regression by the partial mirror prox (143)–(145)
//     with the probit closed-form expectations (50)–(52) in place of sampling: the analytic baseline of Fig. 4.
//   - SchemeExplicit, SchemeImplicit, SchemeExtragrad, SchemeMirrorProx ("explicit", "implicit", "extragrad",
//     "mirror-prox"): the general nonlinear L-RVGA of Sec. 4.2 for a Model supplying ∂h/∂θ and Cov(y|θ), with K
//     ensemble draws (Prop. 1) per expectation.
//
// Settings errors wrap run.ErrConfig. An Update whose observation is bad (wrong length: backend.ErrShape; NaN or
// Inf: backend.ErrNotFinite; a logistic label outside {0, 1}: backend.ErrDomain; each naming the observation's
// index) or that fails numerically returns an error and leaves the state exactly as it was: the new factors are
// built in a second set of buffers and swapped in at the end.
package lrvga

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// Scheme is the update rule of a Filter (Config.Scheme). The zero value is SchemeLinear.
type Scheme int

// The schemes; see the package documentation for the equations of each.
const (
	SchemeLinear            Scheme = iota // Bayesian linear regression, (25)–(27)
	SchemeLogistic                        // logistic regression, implicit closed-form step (52)–(54)
	SchemeLogisticExtragrad               // logistic regression, partial mirror prox (143)–(145), probit moments
	SchemeExplicit                        // general Model, explicit step (139)–(140)
	SchemeImplicit                        // general Model, fixed point of the implicit step (3)–(4)
	SchemeExtragrad                       // general Model, partial mirror prox (143)–(145)
	SchemeMirrorProx                      // general Model, full mirror prox (139)–(142)
)

// Schemes lists the schemes in order.
var Schemes = []Scheme{SchemeLinear, SchemeLogistic, SchemeLogisticExtragrad, SchemeExplicit, SchemeImplicit,
	SchemeExtragrad, SchemeMirrorProx}

var schemeNames = [...]string{"linear", "logistic", "logistic-extragrad", "explicit", "implicit", "extragrad",
	"mirror-prox"}

// String returns the scheme's name ("linear", "logistic", …; "Scheme(n)" for a value that is none of them).
func (s Scheme) String() string {
	if s.valid() {
		return schemeNames[s]
	}
	return fmt.Sprintf("Scheme(%d)", int(s))
}

func (s Scheme) valid() bool { return s >= 0 && int(s) < len(schemeNames) }

// ParseScheme returns the scheme named name (as String writes it). An unknown name is an error wrapping
// run.ErrConfig.
func ParseScheme(name string) (Scheme, error) {
	for i, n := range schemeNames {
		if n == name {
			return Scheme(i), nil
		}
	}
	return 0, run.ConfigErrorf("lrvga", "Scheme", "unknown scheme %q (want one of %s)", name,
		strings.Join(schemeNames[:], ", "))
}

// MarshalText writes the scheme's name, so that JSON output reads "logistic", not 1.
func (s Scheme) MarshalText() ([]byte, error) {
	if !s.valid() {
		return nil, run.ConfigErrorf("lrvga", "Scheme", "unknown scheme %v", s)
	}
	return []byte(s.String()), nil
}

// UnmarshalText parses a name with ParseScheme (so that flag.TextVar takes a -scheme flag).
func (s *Scheme) UnmarshalText(text []byte) error {
	v, err := ParseScheme(string(text))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// logistic reports whether the scheme is one of the two logistic-regression schemes, whose labels are 0 or 1.
func (s Scheme) logistic() bool { return s == SchemeLogistic || s == SchemeLogisticExtragrad }

// general reports whether the scheme is one of the general nonlinear schemes, which need a Model.
func (s Scheme) general() bool { return s >= SchemeExplicit && s.valid() }

// Random streams of a Filter's seed (rng.Counter.Stream).
const (
	streamInit   = 1 // W₀ of App. D
	streamSample = 2 // ensemble draws of the nonlinear schemes; the offset is part of the state
)

// Config describes a Filter. Zero fields take the defaults in brackets.
type Config struct {
	D, P   int    // dimension d and latent rank p, 1 ≤ p < d
	Scheme Scheme // the update rule [SchemeLinear, the zero value]
	// Inner is n_in, the recursive-EM iterations per observation [3 for linear, 1 otherwise, as in the paper's
	// experiments].
	Inner int
	// Sigma0 is the prior standard deviation: θ ~ N(Mu0, Sigma0² I) [1]. It must be > 0.
	Sigma0 float64
	// Mu0 is the prior mean (length D) [0].
	Mu0 []float64
	// NoiseStd is σ_w of the linear model [1].
	NoiseStd float64
	// Eps is ε of the App. D initialisation [1e-8]; used when InitStd is 0.
	Eps float64
	// InitStd > 0 selects the initialisation of the authors' logistic experiments instead of App. D:
	// W₀ = InitStd·N(0,1)^{d×p}, ψ₀ = 1/σ₀². W₀ is never 0 either way.
	InitStd float64
	// Seed keys every random stream of the filter (initialisation, ensemble draws).
	Seed uint64
	// Samples is K, the ensemble size of the nonlinear schemes [10].
	Samples int
	// FixedPoint is the number of fixed-point rounds of the "implicit" nonlinear scheme [3].
	FixedPoint int
	// PsiFloor is passed to backend.EMOptions [0: relative floor].
	PsiFloor float64
	// Model is required by the nonlinear schemes.
	Model Model
}

// withDefaults validates c and fills in the defaults.
func (c Config) withDefaults() (Config, error) {
	bad := func(field, format string, a ...any) (Config, error) {
		return c, run.ConfigErrorf("lrvga", field, format, a...)
	}
	if !c.Scheme.valid() {
		return bad("Scheme", "unknown scheme %v (want one of %v)", c.Scheme, Schemes)
	}
	if c.D < 2 || c.P < 1 {
		return bad("D", "d = %d, p = %d: want d ≥ 2 and p ≥ 1", c.D, c.P)
	}
	if c.P >= c.D {
		return bad("P", "p = %d ≥ d = %d: the latent rank must be below the dimension", c.P, c.D)
	}
	if c.Sigma0 == 0 {
		c.Sigma0 = 1
	}
	if !(c.Sigma0 > 0) || math.IsInf(c.Sigma0, 0) {
		return bad("Sigma0", "prior standard deviation σ₀ = %v: the prior variance must be finite and > 0", c.Sigma0)
	}
	if c.NoiseStd == 0 {
		c.NoiseStd = 1
	}
	if !(c.NoiseStd > 0) || math.IsInf(c.NoiseStd, 0) {
		return bad("NoiseStd", "noise standard deviation σ_w = %v, want finite > 0", c.NoiseStd)
	}
	if c.Eps == 0 {
		c.Eps = 1e-8
	}
	if !(c.Eps > 0 && c.Eps < 1) {
		return bad("Eps", "init ε = %v, want 0 < ε < 1", c.Eps)
	}
	if !(c.InitStd >= 0) || math.IsInf(c.InitStd, 0) {
		return bad("InitStd", "InitStd = %v, want finite ≥ 0", c.InitStd)
	}
	if c.Inner == 0 {
		c.Inner = 1
		if c.Scheme == SchemeLinear {
			c.Inner = 3
		}
	}
	if c.Inner < 0 {
		return bad("Inner", "%d inner iterations", c.Inner)
	}
	if c.Samples == 0 {
		c.Samples = 10
	}
	if c.Samples < 0 {
		return bad("Samples", "%d ensemble samples", c.Samples)
	}
	if c.FixedPoint == 0 {
		c.FixedPoint = 3
	}
	if c.FixedPoint < 0 {
		return bad("FixedPoint", "%d fixed-point rounds", c.FixedPoint)
	}
	if c.Mu0 != nil {
		if len(c.Mu0) != c.D {
			return bad("Mu0", "prior mean of length %d, want d = %d", len(c.Mu0), c.D)
		}
		for i, v := range c.Mu0 {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return bad("Mu0", "prior mean[%d] = %v is not finite", i, v)
			}
		}
	}
	if c.Scheme.general() && c.Model == nil {
		return bad("Model", "scheme %q needs a Model", c.Scheme)
	}
	return c, nil
}

// factors is one set of (μ, W, ψ) with the cached capacitance factor.
type factors struct {
	mu, w, psi *tensor.Tensor
	lr         *backend.LowRank
}

// Filter is the streaming L-RVGA state. Its persistent state is μ, W, ψ (8d(p+2) bytes), the step count and the
// position of its random stream; a second set of the same buffers holds the update in progress, so the backend
// memory of a filter is 2·8d(p+2) bytes plus three d-vectors (d = 1e6, p = 100: 1.66 GB). An update adds no d×p
// buffer on the CPU backend, whose kernels work in row blocks; a backend running the reference EM step adds its two
// d×p temporaries (C = Ψ⁻¹W and V = S_tΨ⁻¹W of Algorithm 1), and the nonlinear schemes a d×K block of draws and the GGN
// factor.
type Filter struct {
	cfg      Config
	b        backend.Backend
	cur, nxt factors
	t        int    // observations consumed
	draws    uint64 // offset of the sample stream
	clamped  int    // ψ entries raised to the floor, summed

	x, g, g2, s11 *tensor.Tensor // d×1, d×1, d×1, 1×1 scratch
	host          *tensor.Tensor // 1×1 host

	// closedForm gives (E[σ(a)], E[σ'(a)]) for a ~ N(xᵀμ, xᵀPx) in the "logistic-extragrad" scheme: probitMoments
	// when nil. Tests put exact Gaussian expectations (quadrature) here to obtain the K → ∞ limit of the sampled
	// scheme.
	closedForm func(a, nu float64) (m, c float64)
}

// New starts a filter at the prior with the initialisation of App. D: Ψ₀ = (1−ε)/σ₀² I and p
// isotropic Gaussian columns of norm w₀ = √(εd/p)/σ₀, so that Tr(W₀W₀ᵀ + Ψ₀) = d/σ₀² = Tr P₀⁻¹; never W₀ = 0,
// a fixed point of the EM (App. D).
func New(b backend.Backend, c Config) (*Filter, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	f := &Filter{cfg: c, b: b, host: tensor.NewHost(1, 1, 1)}
	if err := f.alloc(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.initPrior(); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (f *Filter) alloc() error {
	d, p := f.cfg.D, f.cfg.P
	b := f.b
	var err error
	get := func(r, c int) *tensor.Tensor {
		if err != nil {
			return nil
		}
		var t *tensor.Tensor
		t, err = b.Alloc(tensor.Shape{Batch: 1, Rows: r, Cols: c})
		return t
	}
	for _, fs := range []*factors{&f.cur, &f.nxt} {
		fs.mu, fs.w, fs.psi = get(d, 1), get(d, p), get(d, 1)
	}
	f.x, f.g, f.g2, f.s11 = get(d, 1), get(d, 1), get(d, 1), get(1, 1)
	return err
}

func (f *Filter) initPrior() error {
	b, c := f.b, f.cfg
	d := c.D
	if c.Mu0 != nil {
		h, _ := tensor.FromSlice(append([]float64(nil), c.Mu0...), 1, d, 1)
		if err := b.Upload(f.cur.mu, h); err != nil {
			return err
		}
	}
	if err := InitFactors(b, f.cur.w, f.cur.psi, c.Sigma0, c.Eps, c.InitStd, c.Seed); err != nil {
		return err
	}
	return f.factor()
}

// InitFactors writes the initial factors W₀ (1×d×p) and ψ₀ (1×d×1) for W₀W₀ᵀ + Ψ₀ ≈ I/σ₀²: with initStd = 0 the
// rule of App. D, ψ₀ = (1−ε)/σ₀² and p isotropic Gaussian columns rescaled to norm √(εd/p)/σ₀, so that
// Tr(W₀W₀ᵀ + Ψ₀) = d/σ₀²; with initStd > 0 the authors' logistic setting W₀ = initStd·N(0,1), ψ₀ = 1/σ₀². The
// columns come from stream 1 of seed. W₀ is never 0 (a fixed point of the EM, App. D).
func InitFactors(b backend.Backend, w, psi *tensor.Tensor, sigma0, eps, initStd float64, seed uint64) error {
	d, p := w.Rows(), w.Cols()
	if err := b.FillNormal(w, rng.Counter{Seed: seed, Stream: streamInit}); err != nil {
		return err
	}
	prec := 1 / (sigma0 * sigma0)
	if initStd > 0 {
		if err := b.Axpby(w, initStd, w, 0, nil); err != nil {
			return err
		}
		return b.Fill(psi, prec)
	}
	nrm, err := b.Alloc(tensor.Shape{Batch: 1, Rows: 1, Cols: p})
	if err != nil {
		return err
	}
	defer b.Free(nrm)
	if err := b.Reduce(nrm, backend.ReduceSumSq, backend.AxisRows, w); err != nil {
		return err
	}
	h := tensor.NewHost(1, 1, p)
	if err := b.Download(h, nrm); err != nil {
		return err
	}
	w0 := math.Sqrt(eps*float64(d)/float64(p)) / sigma0
	for j := 0; j < p; j++ {
		h.Set(0, 0, j, w0/math.Sqrt(h.At(0, 0, j)))
	}
	if err := b.Upload(nrm, h); err != nil {
		return err
	}
	if err := b.ScaleCols(w, w, nrm); err != nil {
		return err
	}
	return b.Fill(psi, (1-eps)*prec)
}

// factor builds both LowRanks (after the buffers of cur are set), closing those of an earlier state.
func (f *Filter) factor() error {
	for _, fs := range []*factors{&f.cur, &f.nxt} {
		if fs.lr != nil {
			fs.lr.Close()
			fs.lr = nil
		}
	}
	var err error
	if f.cur.lr, err = backend.NewLowRank(f.b, f.cur.w, f.cur.psi); err != nil {
		return err
	}
	if err := f.b.Copy(f.nxt.w, f.cur.w); err != nil {
		return err
	}
	if err := f.b.Copy(f.nxt.psi, f.cur.psi); err != nil {
		return err
	}
	f.nxt.lr, err = backend.NewLowRank(f.b, f.nxt.w, f.nxt.psi)
	return err
}

// Close frees the filter's buffers.
func (f *Filter) Close() {
	for _, fs := range []*factors{&f.cur, &f.nxt} {
		if fs.lr != nil {
			fs.lr.Close()
		}
		for _, t := range []*tensor.Tensor{fs.mu, fs.w, fs.psi} {
			if t != nil {
				f.b.Free(t)
			}
		}
		*fs = factors{}
	}
	for _, t := range []*tensor.Tensor{f.x, f.g, f.g2, f.s11} {
		if t != nil {
			f.b.Free(t)
		}
	}
	f.x, f.g, f.g2, f.s11 = nil, nil, nil, nil
}

// Config returns the configuration with defaults filled in.
func (f *Filter) Config() Config { return f.cfg }

// Backend returns the backend the filter runs on.
func (f *Filter) Backend() backend.Backend { return f.b }

// T returns the number of observations consumed.
func (f *Filter) T() int { return f.t }

// Clamped returns the number of ψ entries raised to the floor so far (a health metric).
func (f *Filter) Clamped() int { return f.clamped }

// StateBytes is the size of the persistent state μ, W, ψ in float64: exactly 8d(p+2) bytes (Table 2's memory column).
func (f *Filter) StateBytes() int64 {
	return 8 * int64(f.cfg.D) * int64(f.cfg.P+2)
}

// Precision returns the current factorisation P_t⁻¹ ≈ W Wᵀ + Ψ (owned by the filter; valid until the next
// Update). Use it for Solve, Sample, LogDet and Trace.
func (f *Filter) Precision() *backend.LowRank { return f.cur.lr }

// Mean returns the current mean tensor (owned by the filter; valid until the next Update).
func (f *Filter) Mean() *tensor.Tensor { return f.cur.mu }

// MeanHost copies μ into dst (length d; allocated when nil).
func (f *Filter) MeanHost(dst []float64) ([]float64, error) {
	return f.download(dst, f.cur.mu)
}

// Factors copies W (row-major d×p) and ψ to the host.
func (f *Filter) Factors() (w, psi []float64, err error) {
	if w, err = f.download(nil, f.cur.w); err != nil {
		return nil, nil, err
	}
	psi, err = f.download(nil, f.cur.psi)
	return w, psi, err
}

func (f *Filter) download(dst []float64, t *tensor.Tensor) ([]float64, error) {
	n := t.Len()
	if dst == nil {
		dst = make([]float64, n)
	}
	if len(dst) != n {
		return nil, fmt.Errorf("lrvga: destination of length %d, want %d: %w", len(dst), n, backend.ErrShape)
	}
	h, _ := tensor.FromSlice(dst, 1, t.Rows(), t.Cols())
	return dst, f.b.Download(h, t)
}

// dot returns aᵀb for two d×1 tensors.
func (f *Filter) dot(a, b *tensor.Tensor) (float64, error) {
	if err := f.b.Gemm(blas.Trans, blas.NoTrans, 1, a, b, 0, f.s11); err != nil {
		return 0, err
	}
	if err := f.b.Download(f.host, f.s11); err != nil {
		return 0, err
	}
	return f.host.At(0, 0, 0), nil
}

// checkObs checks one observation before anything is changed.
func (f *Filter) checkObs(x []float64, y float64) error { return checkObservation(f.cfg, f.t, x, y) }

// checkObservation checks observation t (x, y) of a filter configured by cfg.
func checkObservation(cfg Config, t int, x []float64, y float64) error {
	if len(x) != cfg.D {
		return fmt.Errorf("lrvga: observation %d: x has length %d, want d = %d (dimension mismatch): %w", t, len(x), cfg.D,
			backend.ErrShape)
	}
	if math.IsNaN(y) || math.IsInf(y, 0) {
		return fmt.Errorf("lrvga: observation %d: y = %v is not finite: %w", t, y, backend.ErrNotFinite)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("lrvga: observation %d: x[%d] = %v is not finite: %w", t, i, v, backend.ErrNotFinite)
		}
	}
	if cfg.Scheme.logistic() && y != 0 && y != 1 {
		return fmt.Errorf("lrvga: observation %d: logistic label y = %v, want 0 or 1: %w", t, y, backend.ErrDomain)
	}
	return nil
}

// Update consumes one observation (x_t, y_t) with the configured scheme. On error the state is unchanged.
func (f *Filter) Update(x []float64, y float64) error {
	if err := f.checkObs(x, y); err != nil {
		return err
	}
	h, _ := tensor.FromSlice(x, 1, f.cfg.D, 1)
	if err := f.b.Upload(f.x, h); err != nil {
		return err
	}
	draws, clamped := f.draws, f.clamped
	var err error
	switch f.cfg.Scheme {
	case SchemeLinear:
		err = f.stepLinear(y)
	case SchemeLogistic:
		err = f.stepLogistic(y)
	case SchemeLogisticExtragrad:
		err = f.stepLogisticExtragrad(y)
	default:
		err = f.stepModel(y)
	}
	if err != nil {
		f.draws, f.clamped = draws, clamped // the state, stream position included, is left as before
		return fmt.Errorf("lrvga: observation %d (%s): %w", f.t, f.cfg.Scheme, err)
	}
	f.cur, f.nxt = f.nxt, f.cur
	f.t++
	return nil
}

// fit runs Algorithm 1 on the next factors, warm-started from (W_from, ψ_from):
// W Wᵀ + Ψ ≈_FA W_from W_fromᵀ + Ψ_from + X Xᵀ (α = β = 1, precision mode), then refactors. The old factors stay
// where they are and serve both as the fixed target S_t of the inner loop and as the state to keep when the update
// fails (backend.RecursiveEMFrom): no third W is made.
func (f *Filter) fit(from *factors, x *tensor.Tensor) error {
	st, err := backend.RecursiveEMFrom(f.b, f.nxt.w, f.nxt.psi, from.w, from.psi, x, 1, 1,
		backend.EMOptions{Inner: f.cfg.Inner, PsiFloor: f.cfg.PsiFloor})
	if err != nil {
		return err
	}
	f.clamped += st.Clamped
	return f.nxt.lr.Refactor()
}

// stepLinear is eq. (25)–(27) in the authors' code's order: the FA step with X_t = x_t/σ_w, then the mean with the
// new factors, μ_t = μ_{t-1} + (W_tW_tᵀ + Ψ_t)⁻¹ x_t (y_t − x_tᵀμ_{t-1})/σ_w².
func (f *Filter) stepLinear(y float64) error {
	sw := f.cfg.NoiseStd
	a0, err := f.dot(f.x, f.cur.mu)
	if err != nil {
		return err
	}
	e := (y - a0) / (sw * sw)
	if err := f.b.Axpby(f.g, 1/sw, f.x, 0, nil); err != nil {
		return err
	}
	if err := f.fit(&f.cur, f.g); err != nil {
		return err
	}
	if err := f.nxt.lr.Solve(f.g, f.x); err != nil {
		return err
	}
	return f.b.Axpby(f.nxt.mu, 1, f.cur.mu, e, f.g)
}

// stepLogistic is the implicit closed-form step of Sec. 5.3 ((52)–(54)): g₀ = P_{t-1}x by Woodbury with the
// old factors, (α, ν) from SolveImplicit, μ_t = μ_{t-1} + g₀ (y − σ(kα)) (53, with P_{t-1}), then the FA step
// with X_t = x √c, c = kσ'(kα) (54; √c rather than the code's 1/√(1/c), which needs a floor on c).
func (f *Filter) stepLogistic(y float64) error {
	if err := f.cur.lr.Solve(f.g, f.x); err != nil {
		return err
	}
	nu0, err := f.dot(f.x, f.g)
	if err != nil {
		return err
	}
	a0, err := f.dot(f.x, f.cur.mu)
	if err != nil {
		return err
	}
	sol := SolveImplicit(a0, nu0, y)
	k := ProbitK(sol.Nu)
	if err := f.b.Axpby(f.nxt.mu, 1, f.cur.mu, y-Sigmoid(k*sol.Alpha), f.g); err != nil {
		return err
	}
	c := k * SigmoidPrime(k*sol.Alpha)
	if err := f.b.Axpby(f.g2, math.Sqrt(c), f.x, 0, nil); err != nil {
		return err
	}
	return f.fit(&f.cur, f.g2)
}

// probitMoments returns, for θ ~ N(μ, P) with ν = xᵀPx and a = xᵀμ, the probit approximations of E[σ(xᵀθ)] and
// E[σ'(xᵀθ)]: σ(k a) (50) and k σ'(k a) (51), k = k(ν) (52).
func probitMoments(a, nu float64) (m, c float64) {
	k := ProbitK(nu)
	return Sigmoid(k * a), k * SigmoidPrime(k*a)
}

// stepLogisticExtragrad is the partial mirror prox (143)–(145) of App. G for logistic regression with the
// expectations in closed form (the authors' LargeScaleRVGALogRegExplicit with extragrad, the "baseline" of Fig. 4):
//
//	(m, c) from (50)–(52) at q_{t-1}: a = xᵀμ_{t-1}, ν = xᵀP_{t-1}x
//	(Ŵ, ψ̂): Algorithm 1 on W_{t-1}W_{t-1}ᵀ + Ψ_{t-1} + c x xᵀ (X_t = x √c)                       (143)
//	ĝ = P̂ x (Woodbury with the new factors),  μ̂ = μ_{t-1} + ĝ (y − m)                            (144)
//	m̂ from (50)–(52) at (μ̂, P̂): â = xᵀμ̂, ν̂ = xᵀĝ;  μ_t = μ_{t-1} + ĝ (y − m̂);  (W_t, ψ_t) = (Ŵ, ψ̂)   (145)
func (f *Filter) stepLogisticExtragrad(y float64) error {
	if err := f.cur.lr.Solve(f.g, f.x); err != nil {
		return err
	}
	nu, err := f.dot(f.x, f.g)
	if err != nil {
		return err
	}
	a, err := f.dot(f.x, f.cur.mu)
	if err != nil {
		return err
	}
	mom := probitMoments
	if f.closedForm != nil {
		mom = f.closedForm
	}
	m, c := mom(a, nu)
	if err := f.b.Axpby(f.g2, math.Sqrt(c), f.x, 0, nil); err != nil {
		return err
	}
	if err := f.fit(&f.cur, f.g2); err != nil {
		return err
	}
	if err := f.nxt.lr.Solve(f.g, f.x); err != nil {
		return err
	}
	if err := f.b.Axpby(f.nxt.mu, 1, f.cur.mu, y-m, f.g); err != nil { // μ̂ (144)
		return err
	}
	nuHat, err := f.dot(f.x, f.g)
	if err != nil {
		return err
	}
	aHat, err := f.dot(f.x, f.nxt.mu)
	if err != nil {
		return err
	}
	mHat, _ := mom(aHat, nuHat)
	return f.b.Axpby(f.nxt.mu, 1, f.cur.mu, y-mHat, f.g) // (145)
}
