// Package samvi is the mean-field variational baselines of paper 001's SAM experiments (Section 5.3, Fig. 5a): VI, the
// batch variational EM of Reisinger et al. (2010) with the hyper-parameters held fixed, and StoVI, its stochastic
// (Hoffman-style) version over minibatches of documents. Reisinger et al.'s paper is not at hand; the updates are
// derived here from the model of paper 001 Section 4 and written out in docs/sggmc.md ("Mean-field VI for SAM").
//
// # Variational family and bound
//
// The model is the uncollapsed eq. (9): μ ~ vMF(m, κ₀), β_k ~ vMF(μ, σ), θ_d ~ Dir(α), v_d ~ vMF(v̄(β,θ_d), κ) with
// v̄(β,θ) = βθ/‖βθ‖. The family is fully factorised,
//
//	q(μ) = vMF(μ̃, ζ),   q(β_k) = vMF(β̃_k, ξ_k),   q(θ_d) = Dir(γ_d),                                      (V1)
//
// with the vMF factors in natural parameters, η_k = ξ_kβ̃_k, and mean parameters E[β_k] = m_k = A_V(ξ_k)β̃_k
// (A_V the mean resultant length I_{V/2}/I_{V/2−1}). The data term E_q[v_dᵀ v̄(β,θ_d)] has no closed form; as Reisinger
// et al. do, it is replaced by the ratio of the expectations of the numerator and of the squared norm,
//
//	E_q[v_dᵀβθ/‖βθ‖] ≈ ℓ_d/κ = p_d/n_d,   p_d = Σ_k e_dk m_kᵀv_d,   n_d² = E_q‖βθ_d‖² = tr(HΘ_d),               (V2)
//
// where e_d = E[θ_d] = γ_d/γ_d0, Θ_d = E[θ_dθ_dᵀ] = (γ_dγ_dᵀ + diag γ_d)/(γ_d0(γ_d0+1)), γ_d0 = Σ_k γ_dk, and
// H_jk = E[β_jᵀβ_k] = m_jᵀm_k (j ≠ k), H_kk = 1. With (V2) the bound that VI ascends is
//
//	L = log c_V(κ₀) + κ₀A_V(ζ) mᵀμ̃ − log c_V(ζ) − ζA_V(ζ)                                   [μ: prior − q]
//	  + K log c_V(σ) + σA_V(ζ) μ̃ᵀΣ_k m_k − Σ_k (log c_V(ξ_k) + ξ_kA_V(ξ_k))                     [β: prior − q]
//	  + Σ_d [log Γ(Kα) − K log Γ(α) + Σ_k (α − γ_dk)(ψ(γ_dk) − ψ(γ_d0)) − log Γ(γ_d0) + Σ_k log Γ(γ_dk)] [θ]
//	  + D log c_V(κ) + κ Σ_d p_d/n_d                                                            [data, (V2)]  (V3)
//
// using E[μ] = A_V(ζ)μ̃, E log θ_dk = ψ(γ_dk) − ψ(γ_d0) and −E log vMF(x|η) = −log c_V(‖η‖) − ‖η‖A_V(‖η‖). L is a
// function of the mean parameters m = (m_1…m_K) alone through F(m) (everything but the topic entropies), because
// m_kᵀv_d = A_ky_dk and H depend on m only. The negative entropy of q(β_k) is the convex conjugate Φ*(m_k) of the
// vMF log-partition Φ(η) = −log c_V(‖η‖), with ∇Φ*(m_k) = η_k. Hence
//
//	∇_{m_k} L = ∇_{m_k} F − η_k,   stationary exactly when η_k = ∇_{m_k} F(m)                                   (V4)
//
//	∇_{m_k} F = σA_V(ζ)μ̃ + κΣ_d (e_dk/n_d) v_d − Σ_{j≠k} W_kj m_j,   W_kj = κ Σ_d (p_d/n_d³) Θ_d,kj.          (V5)
//
// # Updates (one sweep of VI)
//
//   - θ (UpdateTheta): each γ_d maximises its own term of (V3) — a K-dimensional non-conjugate problem, solved by
//     monotone gradient ascent in u = log γ_d (Barzilai–Borwein steps, Armijo backtracking), with
//     ∂L/∂γ_dk = (α−γ_dk)ψ′(γ_dk) − ψ′(γ_d0)Σ_j(α−γ_dj) + κ(∂p_d/n_d − p_d ∂n_d²/(2n_d³)),
//     ∂p_d/∂γ_dk = (A_ky_dk − p_d)/γ_d0,  ∂n_d²/∂γ_dk = (2(Hγ_d)_k + 1)/r_d − q_d(2γ_d0+1)/r_d²,
//     with q_d = γ_dᵀHγ_d + γ_d0 and r_d = γ_d0(γ_d0+1) (n_d² = q_d/r_d).                                    (V6)
//   - μ (UpdateMu): L is linear in E[μ], so the optimal factor is closed form and exact,
//     q(μ) ∝ exp(cᵀμ), c = κ₀m + σΣ_k m_k: μ̃ = c/‖c‖, ζ = ‖c‖.                                             (V7)
//   - β (UpdateTopics): the natural-parameter fixed point of (V4), damped, η_k ← (1−ρ)η_k + ρ∇_{m_k}F, with ρ = 1
//     first and halved until L does not decrease. The direction is an ascent direction: dL/dρ at ρ = 0 is
//     (∇F − η)ᵀ(∂m/∂η)(∇F − η) ≥ 0, ∂m/∂η being the (positive-definite) vMF Fisher matrix.                (V8)
//
// Every update leaves L at least where it was, which the tests check update by update.
//
// StoVI replaces the sum over documents in (V5) by D/S times the sum over a minibatch of S documents (their γ_d
// first updated by (V6)) and takes ρ_t = (τ₀ + t)^(−r) with no line search (Hoffman et al. 2013's step sizes;
// the authors' 20News settings S = 50, τ₀ = 5, r = 0.8), then updates μ by (V7).
//
// All work is on the host in float64 through the Gram matrix of the topics: per sweep nnz·K for the
// projections, VK² for the Gram matrix and the W·m product, and O(DK²) per ascent step of the γ_d.
package samvi

import (
	"math"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mathext"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/models/sam"
	"github.com/geovb/geovb/models/vmf"
	"github.com/geovb/geovb/rng"
)

// Options are the settings of a variational fit.
type Options struct {
	// ThetaIters caps the ascent steps on each γ_d per update (20 if 0).
	ThetaIters int
	// Xi0 is the initial concentration ξ_k of every q(β_k) (σ if 0).
	Xi0 float64
	// Workers run the documents' updates in parallel (GOMAXPROCS if 0).
	Workers int
	// Seed draws the initial topic directions (sam.InitTopics, the samplers' start) and StoVI's minibatches.
	Seed uint64
}

// VI holds the variational factors (V1) of SAM for a training corpus and updates them.
type VI struct {
	Train *datasets.Corpus
	H     sam.Hyper
	K     int
	M     []float64 // prior mean direction m

	opt  Options
	D, V int

	eta, beta, mean []float64 // K×V: η_k, β̃_k = η_k/‖η_k‖, m_k = A_V(ξ_k)β̃_k
	xi, a           []float64 // K: ξ_k = ‖η_k‖, A_V(ξ_k)
	mu              []float64 // V: μ̃
	zeta, azeta     float64
	gamma           []float64 // D×K
	y               []float64 // D×K: β̃_kᵀv_d
	stale           bool      // y not current for documents outside StoStep's last minibatch
	G, Hm           []float64 // K×K: β̃ Gram matrix, H of (V2)
	ent             float64   // −Σ_k(log c_V(ξ_k) + ξ_kA_V(ξ_k))
	cnst            float64   // the constants of (V3)
	step            []float64 // D: last accepted ascent step of each γ_d
	works           []*docWork
}

// New returns the variational state for K topics over train (checked with sam.CheckCorpus) with prior mean m:
// topics at sam.InitTopics(m, K, Seed) with concentration Xi0, γ_dk = α, and q(μ) from (V7).
func New(train *datasets.Corpus, h sam.Hyper, K int, m []float64, opt Options) (*VI, error) {
	// sam.New performs the corpus, hyper-parameter, K and m checks with errors naming the problem.
	if _, err := sam.New(train, h, K, m, sam.Options{Workers: 1}); err != nil {
		return nil, err
	}
	if opt.ThetaIters == 0 {
		opt.ThetaIters = 20
	}
	if opt.Xi0 == 0 {
		opt.Xi0 = h.Sigma
	}
	if opt.ThetaIters < 0 || !(opt.Xi0 > 0) || math.IsInf(opt.Xi0, 0) {
		return nil, backend.Errorf("samvi", "options", backend.ErrDomain, "ThetaIters = %d, Xi0 = %v (want ≥ 0 and positive finite)", opt.ThetaIters, opt.Xi0)
	}
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	D, V := train.Docs(), train.V
	v := &VI{Train: train, H: h, K: K, M: m, opt: opt, D: D, V: V,
		eta: make([]float64, K*V), beta: make([]float64, K*V), mean: make([]float64, K*V),
		xi: make([]float64, K), a: make([]float64, K), mu: make([]float64, V),
		gamma: make([]float64, D*K), y: make([]float64, D*K), G: make([]float64, K*K), Hm: make([]float64, K*K),
		step: make([]float64, D)}
	for range opt.Workers {
		v.works = append(v.works, newDocWork(K))
	}
	b0 := sam.InitTopics(m, K, opt.Seed)
	bd, _, _, _ := b0.Matrix(0)
	for i := range v.eta {
		v.eta[i] = opt.Xi0 * bd[i]
	}
	for i := range v.gamma {
		v.gamma[i] = h.Alpha
	}
	lcs := [3]float64{}
	for i, k := range []float64{h.Kappa0, h.Sigma, h.Kappa} {
		var err error
		if lcs[i], err = vmf.LogNormalizer(V, k); err != nil {
			return nil, err
		}
	}
	la, _ := math.Lgamma(float64(K) * h.Alpha)
	l1, _ := math.Lgamma(h.Alpha)
	v.cnst = lcs[0] + float64(K)*lcs[1] + float64(D)*(lcs[2]+la-float64(K)*l1)
	if err := v.setTopics(v.eta); err != nil {
		return nil, err
	}
	v.projectAll()
	return v, v.UpdateMu()
}

// setTopics sets η and the quantities derived from it: β̃, ξ, A, m, the Gram matrix, H and the topic entropy. An
// η whose concentrations A_V(ξ_k) cannot be evaluated is refused before anything is written.
func (v *VI) setTopics(eta []float64) error {
	K, V := v.K, v.V
	xis, as := make([]float64, K), make([]float64, K)
	for k := 0; k < K; k++ {
		row := eta[k*V : (k+1)*V]
		xi := math.Sqrt(dot(row, row))
		a, err := vmf.A(V, xi)
		if err != nil {
			return backend.Errorf("samvi", "topics", backend.ErrNotFinite, "q(β_%d) concentration ξ = %v: %v", k, xi, err)
		}
		xis[k], as[k] = xi, a
	}
	if &eta[0] != &v.eta[0] {
		copy(v.eta, eta)
	}
	v.ent = 0
	for k := 0; k < K; k++ {
		row, xi, a := v.eta[k*V:(k+1)*V], xis[k], as[k]
		lc, _ := vmf.LogNormalizer(V, xi)
		v.xi[k], v.a[k] = xi, a
		v.ent -= lc + xi*a
		b, mk := v.beta[k*V:(k+1)*V], v.mean[k*V:(k+1)*V]
		for i, x := range row {
			b[i] = x / xi
			mk[i] = a * b[i]
		}
	}
	sam.Gram(v.G, v.beta, K, V)
	for j := 0; j < K; j++ {
		for k := 0; k < K; k++ {
			if j == k {
				v.Hm[j*K+k] = 1
			} else {
				v.Hm[j*K+k] = v.a[j] * v.a[k] * v.G[j*K+k]
			}
		}
	}
	return nil
}

// projectAll recomputes y_d = β̃v_d for every document.
func (v *VI) projectAll() {
	v.parallel(v.D, func(_ *docWork, d int) { sam.Project(v.y[d*v.K:(d+1)*v.K], v.beta, v.K, v.Train, d) })
	v.stale = false
}

// current makes every y_d current: StoStep projects only its minibatch.
func (v *VI) current() {
	if v.stale {
		v.projectAll()
	}
}

// parallel runs f on documents 0..n−1 (index through idx when not nil) over the workers.
func (v *VI) parallel(n int, f func(w *docWork, i int)) {
	var wg sync.WaitGroup
	nw := len(v.works)
	for w := 0; w < nw; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += nw {
				f(v.works[w], i)
			}
		}(w)
	}
	wg.Wait()
}

// UpdateMu sets q(μ) to its optimum (V7) given the topics.
func (v *VI) UpdateMu() error {
	K, V := v.K, v.V
	for i := range v.mu {
		s := v.H.Kappa0 * v.M[i]
		for k := 0; k < K; k++ {
			s += v.H.Sigma * v.mean[k*V+i]
		}
		v.mu[i] = s
	}
	v.zeta = math.Sqrt(dot(v.mu, v.mu))
	for i := range v.mu {
		v.mu[i] /= v.zeta
	}
	var err error
	if v.azeta, err = vmf.A(V, v.zeta); err != nil {
		return backend.Errorf("samvi", "μ", backend.ErrNotFinite, "q(μ) concentration ζ = %v: %v", v.zeta, err)
	}
	return nil
}

// muTerm returns the q(μ) and topic-prior terms of (V3) that involve μ: κ₀A(ζ)mᵀμ̃ + σA(ζ)μ̃ᵀΣm_k − log c(ζ) − ζA(ζ).
func (v *VI) muTerm() float64 {
	K, V := v.K, v.V
	s := v.H.Kappa0 * dot(v.M, v.mu)
	for k := 0; k < K; k++ {
		s += v.H.Sigma * dot(v.mean[k*V:(k+1)*V], v.mu)
	}
	lc, _ := vmf.LogNormalizer(V, v.zeta)
	return v.azeta*s - lc - v.zeta*v.azeta
}

// ELBO returns the bound L of (V3) at the current factors.
func (v *VI) ELBO() float64 {
	v.current()
	K := v.K
	parts := make([]float64, len(v.works))
	var wg sync.WaitGroup
	for w := range v.works {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			wk := v.works[w]
			wk.setGlobals(v)
			for d := w; d < v.D; d += len(v.works) {
				wk.setDoc(v.y[d*K:(d+1)*K], v.a)
				parts[w] += wk.eval(nil, v.gamma[d*K:(d+1)*K], false)
			}
		}(w)
	}
	wg.Wait()
	s := v.cnst + v.muTerm() + v.ent
	for _, p := range parts {
		s += p
	}
	return s
}

// UpdateTheta updates every γ_d by monotone ascent on its term of (V3) (V6).
func (v *VI) UpdateTheta() {
	v.current()
	v.updateDocs(nil)
}

func (v *VI) updateDocs(docs []int) {
	K := v.K
	n := v.D
	if docs != nil {
		n = len(docs)
	}
	for _, wk := range v.works {
		wk.setGlobals(v)
	}
	v.parallel(n, func(wk *docWork, i int) {
		d := i
		if docs != nil {
			d = docs[i]
		}
		wk.setDoc(v.y[d*K:(d+1)*K], v.a)
		v.step[d] = wk.ascend(v.gamma[d*K:(d+1)*K], v.step[d], v.opt.ThetaIters)
	})
}

// natGrad writes ∇_mF of (V5) into g (K×V), with the document sum over docs (all when nil) scaled by scale.
func (v *VI) natGrad(g []float64, docs []int, scale float64) {
	K, V := v.K, v.V
	n := v.D
	if docs != nil {
		n = len(docs)
	}
	W := make([]float64, K*K)
	t1 := make([]float64, K)
	for k := 0; k < K; k++ {
		row := g[k*V : (k+1)*V]
		for i, x := range v.mu {
			row[i] = v.H.Sigma * v.azeta * x
		}
	}
	wk := v.works[0]
	wk.setGlobals(v)
	for i := 0; i < n; i++ {
		d := i
		if docs != nil {
			d = docs[i]
		}
		gm := v.gamma[d*K : (d+1)*K]
		wk.setDoc(v.y[d*K:(d+1)*K], v.a)
		p, nd, g0 := wk.moments(gm)
		// κ e_dk/n_d v_d into row k; W_kj += κ p_d/n_d³ Θ_d,kj.
		for k := 0; k < K; k++ {
			t1[k] = scale * v.H.Kappa * gm[k] / g0 / nd
		}
		ids, vals := v.Train.Doc(d)
		for k := 0; k < K; k++ {
			row := g[k*V : (k+1)*V]
			for j, id := range ids {
				row[id] += t1[k] * vals[j]
			}
		}
		f := scale * v.H.Kappa * p / (nd * nd * nd) / (g0 * (g0 + 1))
		for k := 0; k < K; k++ {
			for j := 0; j < K; j++ {
				if j != k {
					W[k*K+j] += f * gm[k] * gm[j]
				}
			}
		}
	}
	blas64.Implementation().Dgemm(blas.NoTrans, blas.NoTrans, K, V, K, -1, W, K, v.mean, V, 1, g, V)
}

// UpdateTopics takes the damped natural-parameter step (V8) on all q(β_k), halving ρ from 1 until L does not
// decrease; it returns the ρ taken (0 when no step improved L, the factors then unchanged).
func (v *VI) UpdateTopics() (float64, error) {
	v.current()
	L0 := v.ELBO()
	target := make([]float64, v.K*v.V)
	v.natGrad(target, nil, 1)
	old := append([]float64(nil), v.eta...)
	trial := make([]float64, len(old))
	for rho, i := 1.0, 0; i < 40; rho, i = rho/2, i+1 {
		for j := range trial {
			trial[j] = (1-rho)*old[j] + rho*target[j]
		}
		if err := v.setTopics(trial); err != nil {
			continue
		}
		v.projectAll()
		if L := v.ELBO(); L >= L0 {
			return rho, nil
		}
	}
	if err := v.setTopics(old); err != nil {
		return 0, err
	}
	v.projectAll()
	return 0, nil
}

// Sweep is one VI iteration: UpdateTheta, UpdateMu, UpdateTopics, UpdateMu.
func (v *VI) Sweep() error {
	v.UpdateTheta()
	if err := v.UpdateMu(); err != nil {
		return err
	}
	if _, err := v.UpdateTopics(); err != nil {
		return err
	}
	return v.UpdateMu()
}

// StoStep is StoVI step t = 0, 1, …: a minibatch of batch documents drawn without replacement from stream
// (Seed, 3<<56|t), their γ_d updated by (V6), then η ← (1−ρ_t)η + ρ_t η̂ with η̂ the (D/S)-scaled (V5) and
// ρ_t = (τ₀ + t)^(−rate), then q(μ) by (V7). Only the minibatch's y_d are recomputed; the others are brought up to
// date by the next ELBO, UpdateTheta, UpdateTopics or Sweep. When the new topics cannot be set the step is undone
// (the minibatch's γ_d restored) and the error returned.
func (v *VI) StoStep(t, batch int, tau0, rate float64) error {
	if t < 0 || batch < 1 || batch > v.D || !(tau0 >= 0) || math.IsInf(tau0, 1) || !(rate > 0.5 && rate <= 1) {
		return backend.Errorf("samvi", "StoVI", backend.ErrDomain, "step %d, batch %d of %d documents, τ₀ = %v, forgetting rate %v (want t ≥ 0, batch in [1, D], finite τ₀ ≥ 0, rate in (0.5, 1])", t, batch, v.D, tau0, rate)
	}
	docs := drawBatch(v.D, batch, rng.Counter{Seed: v.opt.Seed, Stream: 3<<56 | uint64(t)})
	K := v.K
	saved := make([]float64, 0, len(docs)*(K+1))
	for _, d := range docs {
		sam.Project(v.y[d*K:(d+1)*K], v.beta, K, v.Train, d)
		saved = append(append(saved, v.gamma[d*K:(d+1)*K]...), v.step[d])
	}
	v.updateDocs(docs)
	target := make([]float64, K*v.V)
	v.natGrad(target, docs, float64(v.D)/float64(batch))
	rho := stoRate(t, tau0, rate)
	for i := range target {
		target[i] = (1-rho)*v.eta[i] + rho*target[i]
	}
	if err := v.setTopics(target); err != nil {
		for i, d := range docs {
			copy(v.gamma[d*K:(d+1)*K], saved[i*(K+1):i*(K+1)+K])
			v.step[d] = saved[i*(K+1)+K]
		}
		return err
	}
	v.stale = true
	return v.UpdateMu()
}

// stoRate is ρ_t = (τ₀ + t)^(−rate) counted from t = 1 (Hoffman et al. 2013), for steps t = 0, 1, … .
func stoRate(t int, tau0, rate float64) float64 { return math.Pow(tau0+float64(t)+1, -rate) }

// drawBatch returns n of 0..D−1 drawn without replacement (a partial Fisher–Yates shuffle).
func drawBatch(D, n int, u rng.Counter) []int {
	perm := make([]int, D)
	for i := range perm {
		perm[i] = i
	}
	for i := 0; i < n; i++ {
		j := min(i+int(u.Uniform(uint64(i))*float64(D-i)), D-1)
		perm[i], perm[j] = perm[j], perm[i]
	}
	return perm[:n]
}

// Topics returns the point estimate of the topics, the mean directions β̃_k of q(β_k) (K×V row-major, a copy):
// the β̂ scored by the evaluator (Section 5.3: the variational methods are scored on their point estimate).
func (v *VI) Topics() []float64 { return append([]float64(nil), v.beta...) }

// Concentrations returns ξ_k of the q(β_k) (a copy).
func (v *VI) Concentrations() []float64 { return append([]float64(nil), v.xi...) }

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// docWork evaluates and ascends one document's term of (V3).
type docWork struct {
	K            int
	kappa, alpha float64
	H            []float64 // H of (V2)
	c, hg        []float64
	u, g         []float64 // log γ and the gradient there
	ut, gt, gmt  []float64 // trial log γ, gradient and γ
}

func newDocWork(K int) *docWork {
	return &docWork{K: K, c: make([]float64, K), hg: make([]float64, K), u: make([]float64, K), g: make([]float64, K),
		ut: make([]float64, K), gt: make([]float64, K), gmt: make([]float64, K)}
}

func (w *docWork) setGlobals(v *VI) { w.kappa, w.alpha, w.H = v.H.Kappa, v.H.Alpha, v.Hm }

// setDoc sets c_k = A_ky_dk = m_kᵀv_d.
func (w *docWork) setDoc(y, a []float64) {
	for k := range w.c {
		w.c[k] = a[k] * y[k]
	}
}

// moments returns p_d, n_d and γ_d0 of (V2) at γ, leaving Hγ in w.hg.
func (w *docWork) moments(gm []float64) (p, n, g0 float64) {
	K := w.K
	qq := 0.0
	for k := 0; k < K; k++ {
		g0 += gm[k]
		p += gm[k] * w.c[k]
		s := 0.0
		row := w.H[k*K : (k+1)*K]
		for j, x := range gm {
			s += row[j] * x
		}
		w.hg[k] = s
		qq += gm[k] * s
	}
	p /= g0
	return p, math.Sqrt((qq + g0) / (g0 * (g0 + 1))), g0
}

// eval returns the document's γ-dependent terms of (V3), Σ_k(α−γ_k)(ψ(γ_k)−ψ(γ₀)) − log Γ(γ₀) + Σ_k log Γ(γ_k)
// + κp/n, and, when grad is not nil, writes its gradient with respect to γ (logGrad false) or u = log γ (true) (V6).
func (w *docWork) eval(grad, gm []float64, logGrad bool) float64 {
	p, n, g0 := w.moments(gm)
	psi0 := mathext.Digamma(g0)
	lg0, _ := math.Lgamma(g0)
	val := -lg0 + w.kappa*p/n
	sumA := 0.0
	for _, x := range gm {
		lg, _ := math.Lgamma(x)
		val += (w.alpha-x)*(mathext.Digamma(x)-psi0) + lg
		sumA += w.alpha - x
	}
	if grad == nil {
		return val
	}
	t0 := trigamma(g0)
	r := g0 * (g0 + 1)
	qq := n * n * r
	n3 := n * n * n
	for k, x := range gm {
		dp := (w.c[k] - p) / g0
		dn2 := (2*w.hg[k]+1)/r - qq*(2*g0+1)/(r*r)
		gk := (w.alpha-x)*trigamma(x) - t0*sumA + w.kappa*(dp/n-p*dn2/(2*n3))
		if logGrad {
			gk *= x
		}
		grad[k] = gk
	}
	return val
}

// ascend maximises eval over u = log γ in place by gradient ascent with Barzilai–Borwein steps and Armijo
// backtracking (every accepted step increases the value, or, once the increase is below F's rounding, keeps an
// upward slope), at most iters steps or until the gradient is negligible, starting from step s (0: a unit first
// move); it returns the last step size for the next call.
func (w *docWork) ascend(gm []float64, s float64, iters int) float64 {
	K := w.K
	u, g, up, gp, gmt := w.u, w.g, w.ut, w.gt, w.gmt
	for k, x := range gm {
		u[k] = math.Log(x)
	}
	f := w.eval(g, gm, true)
	for it := 0; it < iters; it++ {
		gg := dot(g, g)
		if gg == 0 {
			break
		}
		gmax := 0.0
		for _, x := range g {
			gmax = math.Max(gmax, math.Abs(x))
		}
		if !(s > 0) || s*gmax > 2 {
			s = math.Min(2/gmax, s) // no coordinate moves more than 2 in log γ
			if !(s > 0) {
				s = 2 / gmax
			}
		}
		ok := false
		var fp float64
		s0 := s
		for bt := 0; bt < 50; bt++ {
			for k := range up {
				up[k] = u[k] + s*g[k]
				gmt[k] = math.Exp(up[k])
			}
			fp = w.eval(gp, gmt, true)
			if math.IsNaN(fp) {
				s /= 2
				continue
			}
			// Armijo; near the optimum the increase is below the rounding of F, and then the slope along g at
			// the trial point decides (still ascending: the step has not passed the maximum on the line).
			if fp >= f+1e-4*s*gg || (math.Abs(fp-f) <= 1e-12*math.Abs(f) && dot(gp, g) >= 0) {
				ok = true
				break
			}
			s /= 2
		}
		if !ok {
			s = s0 // the next call starts from a usable step, not from the 2⁻⁵⁰ of a failed search
			break
		}
		// Barzilai–Borwein step for ascent: s = ΔuᵀΔu / (−ΔuᵀΔg) when the curvature along Δu is negative.
		du, dg := 0.0, 0.0
		for k := 0; k < K; k++ {
			a := up[k] - u[k]
			du += a * a
			dg += a * (gp[k] - g[k])
		}
		copy(u, up)
		copy(g, gp)
		copy(gm, gmt)
		// Converged when the gradient is negligible: a test on the change of F alone stops with the gradient
		// near the square root of the rounding of F.
		gmaxNew := 0.0
		for _, x := range gp {
			gmaxNew = math.Max(gmaxNew, math.Abs(x))
		}
		conv := gmaxNew <= 1e-10*math.Max(1, math.Abs(fp))
		f = fp
		if dg < 0 {
			s = du / -dg
		} else {
			s *= 2
		}
		if conv {
			break
		}
	}
	return s
}
