// Package mog is the variational Bayesian mixture of Gaussians of paper 004 §4.1 (Honkela et al. 2010; Kuusela et
// al. 2009; Bishop ch. 10.2): the free energy (70)–(79), its gradients with respect to the responsibilities and the
// component means (81)–(84), the closed-form natural gradients (App. B), VB-EM (61)–(69) as the
// comparator, and a collapsed objective for algos/rcg in which the conjugate parameters (α, β, ν, W) are set to
// their conditional optima at every trial point (VB-EM inside the line search, App. B.3).
//
// Two corrections to the printed formulas are the defaults (both verified: ∂F = 0 at them): ν_k = ν₀ + N_k (the printed (67) has a
// spurious +1) and the exact conditional optimum W_k⁻¹ = W₀⁻¹ + Σ_n r_nk(x_n − m_k)(x_n − m_k)ᵀ + β₀(m_k − m₀)(m_k −
// m₀)ᵀ, valid for any m_k (the printed (69) is optimal only at m_k = m_k*). Options.NuPlusOne and Options.PrintedW
// select the printed forms.
package mog

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mathext"

	"github.com/geovb/geovb/internal/vmath"
)

// ErrBadInput is the cause of every error about a model's data or sizes.
var ErrBadInput = errors.New("mog: bad input")

// Prior holds the hyperparameters (23), (25).
type Prior struct {
	Alpha0, Beta0, Nu0 float64
	W0                 []float64 // D×D, SPD
	M0                 []float64 // D
}

// DefaultPrior is the prior of all the paper's MoG experiments (§6.2): α₀ = 1, β₀ = 1, ν₀ = D, W₀ = (4/D)I, m₀ = 0.
func DefaultPrior(D int) Prior {
	w := make([]float64, D*D)
	for i := range D {
		w[i*D+i] = 4 / float64(D)
	}
	return Prior{Alpha0: 1, Beta0: 1, Nu0: float64(D), W0: w, M0: make([]float64, D)}
}

// Options select the paper-literal forms.
type Options struct {
	NuPlusOne bool // ν_k = ν₀ + N_k + 1 as printed in (67)
	PrintedW  bool // W_k from the printed (69) instead of the exact conditional optimum
}

// Post holds the parameters of q(π) and q(μ_k, Λ_k) other than the means m_k (29)–(32).
type Post struct {
	Alpha, Beta, Nu []float64 // K each
	W               []float64 // K×D×D
}

// NewPost returns a Post for K components of dimension D with the paper's initial values (§6.2): α_k = 1,
// β_k = 10, ν_k = D, W_k = (4/D)I.
func NewPost(K, D int) *Post {
	p := &Post{Alpha: make([]float64, K), Beta: make([]float64, K), Nu: make([]float64, K), W: make([]float64, K*D*D)}
	for k := range K {
		p.Alpha[k], p.Beta[k], p.Nu[k] = 1, 10, float64(D)
		for i := range D {
			p.W[k*D*D+i*D+i] = 4 / float64(D)
		}
	}
	return p
}

// Clone returns a deep copy.
func (p *Post) Clone() *Post {
	return &Post{Alpha: append([]float64(nil), p.Alpha...), Beta: append([]float64(nil), p.Beta...),
		Nu: append([]float64(nil), p.Nu...), W: append([]float64(nil), p.W...)}
}

// Model is a mixture of K Gaussians for N points of dimension D (row-major X).
type Model struct {
	X       []float64
	N, D, K int
	Prior   Prior
	Opt     Options

	w0inv   []float64 // W₀⁻¹
	logB0   float64   // log B(W₀, ν₀)
	scratch scratch
}

type scratch struct {
	nk, s1, sm, l   []float64 // N_k; Σ r(x−m); Σ r(x−m)(x−m)ᵀ; Cholesky factors of W_k (K×D×D)
	logLam, logPi   []float64
	logdetW, trW0W  []float64
	quadM           []float64 // (m_k − m₀)ᵀW_k(m_k − m₀)
	r, q, phi, winv []float64
	diff, tmp       []float64
}

// New checks the data and sizes (K ≥ 1, N ≥ K, finite data, SPD W₀, positive α₀, β₀, ν₀ > D − 1) and returns a
// model. X is copied.
func New(X []float64, N, D, K int, prior Prior, opt Options) (*Model, error) {
	switch {
	case K < 1:
		return nil, fmt.Errorf("%w: K = %d < 1", ErrBadInput, K)
	case D < 1:
		return nil, fmt.Errorf("%w: D = %d < 1", ErrBadInput, D)
	case N < K:
		return nil, fmt.Errorf("%w: N = %d < K = %d", ErrBadInput, N, K)
	case len(X) != N*D:
		return nil, fmt.Errorf("%w: len(X) = %d, want N·D = %d", ErrBadInput, len(X), N*D)
	case len(prior.W0) != D*D || len(prior.M0) != D:
		return nil, fmt.Errorf("%w: prior shapes", ErrBadInput)
	case !(prior.Alpha0 > 0) || !(prior.Beta0 > 0) || !(prior.Nu0 > float64(D)-1):
		return nil, fmt.Errorf("%w: need α₀ > 0, β₀ > 0, ν₀ > D−1", ErrBadInput)
	}
	for i, v := range X {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: X[%d, %d] = %v", ErrBadInput, i/D, i%D, v)
		}
	}
	m := &Model{X: append([]float64(nil), X...), N: N, D: D, K: K, Prior: prior, Opt: opt}
	l := append([]float64(nil), prior.W0...)
	if !cholesky(l, D) {
		return nil, fmt.Errorf("%w: W₀ not positive definite", ErrBadInput)
	}
	m.w0inv = make([]float64, D*D)
	cholInverse(m.w0inv, l, D)
	m.logB0 = logWishartB(cholLogDet(l, D), prior.Nu0, D)
	s := &m.scratch
	KD, KDD, NK := K*D, K*D*D, N*K
	s.nk, s.s1, s.sm, s.l = make([]float64, K), make([]float64, KD), make([]float64, KDD), make([]float64, KDD)
	s.logLam, s.logPi, s.logdetW, s.trW0W, s.quadM = make([]float64, K), make([]float64, K), make([]float64, K),
		make([]float64, K), make([]float64, K)
	s.r, s.q, s.phi, s.winv = make([]float64, NK), make([]float64, NK), make([]float64, NK), make([]float64, D*D)
	s.diff, s.tmp = make([]float64, D), make([]float64, D)
	return m, nil
}

// logWishartB returns log B(W, ν) of (79) given log|W|.
func logWishartB(logdetW, nu float64, D int) float64 {
	d := float64(D)
	s := nu*d/2*math.Ln2 + d*(d-1)/4*math.Log(math.Pi)
	for i := 1; i <= D; i++ {
		lg, _ := math.Lgamma((nu + 1 - float64(i)) / 2)
		s += lg
	}
	return -nu/2*logdetW - s
}

// stats computes r = exp(logr), N_k, s1_k = Σ_n r_nk(x_n − m_k) and sm_k = Σ_n r_nk(x_n − m_k)(x_n − m_k)ᵀ.
func (m *Model) stats(logr, mu []float64) {
	s := &m.scratch
	N, D, K := m.N, m.D, m.K
	clear(s.s1) // accumulated below; N_k is set whole
	clear(s.sm)
	// The exponentials in parallel over points; the sums in parallel over components, each in point order, so
	// that they do not depend on the split.
	parallelRows(N, N*K, func(lo, hi int) {
		r, l := s.r[lo*K:hi*K], logr[lo*K:hi*K]
		vmath.Exp(r, l) // math.Exp's bits, a fifth of its cost on AVX2/FMA
		for i, v := range l {
			if v < -745 { // expGuard
				r[i] = 0
			}
		}
	})
	parallelRows(K, N*K, func(k0, k1 int) {
		for k := k0; k < k1; k++ {
			mk := mu[k*D : k*D+D]
			s1 := s.s1[k*D : k*D+D]
			sm := s.sm[k*D*D : (k+1)*D*D]
			var nk float64
			for n := range N {
				r := s.r[n*K+k]
				if r == 0 {
					continue
				}
				nk += r
				x := m.X[n*D : n*D+D]
				for i := range D {
					di := x[i] - mk[i]
					s1[i] += r * di
					rd := r * di
					for j := 0; j <= i; j++ {
						sm[i*D+j] += rd * (x[j] - mk[j])
					}
				}
			}
			s.nk[k] = nk
			for i := range D {
				for j := 0; j < i; j++ {
					sm[j*D+i] = sm[i*D+j]
				}
			}
		}
	})
}

func expGuard(l float64) float64 {
	if l < -745 {
		return 0
	}
	return math.Exp(l)
}

// MStep sets post to the conditional optima of α, β, ν, W given the responsibilities exp(logr) and means mu
// (65)–(67), (69) with the corrections above unless Options ask for the printed forms.
func (m *Model) MStep(post *Post, logr, mu []float64) {
	m.stats(logr, mu)
	m.mstepFromStats(post, mu)
}

func (m *Model) mstepFromStats(post *Post, mu []float64) {
	s := &m.scratch
	D, K := m.D, m.K
	pr := m.Prior
	for k := range K {
		nk := s.nk[k]
		post.Alpha[k] = pr.Alpha0 + nk
		post.Beta[k] = pr.Beta0 + nk
		post.Nu[k] = pr.Nu0 + nk
		if m.Opt.NuPlusOne {
			post.Nu[k]++
		}
		winv := s.winv
		copy(winv, m.w0inv)
		mk := mu[k*D : k*D+D]
		s1 := s.s1[k*D : k*D+D]
		sm := s.sm[k*D*D : (k+1)*D*D]
		if m.Opt.PrintedW {
			// (69): W₀⁻¹ + N_kS_k + β₀N_k/(β₀+N_k)(x̄_k − m₀)(x̄_k − m₀)ᵀ, with N_kS_k = sm − s1·s1ᵀ/N_k.
			c := pr.Beta0 * nk / (pr.Beta0 + nk)
			for i := range D {
				xbi := mk[i] - pr.M0[i]
				if nk > 0 {
					xbi += s1[i] / nk
				}
				s.diff[i] = xbi
			}
			for i := range D {
				for j := range D {
					v := sm[i*D+j] + c*s.diff[i]*s.diff[j]
					if nk > 0 {
						v -= s1[i] * s1[j] / nk
					}
					winv[i*D+j] += v
				}
			}
		} else {
			for i := range D {
				for j := range D {
					winv[i*D+j] += sm[i*D+j] + pr.Beta0*(mk[i]-pr.M0[i])*(mk[j]-pr.M0[j])
				}
			}
		}
		l := s.l[k*D*D : (k+1)*D*D]
		copy(l, winv)
		cholesky(l, D) // SPD: W₀⁻¹ plus PSD terms
		cholInverse(post.W[k*D*D:(k+1)*D*D], l, D)
	}
}

// prepare computes the Cholesky factors of W_k, log|W_k|, log Λ̃_k (58), log π̃_k (59), tr(W₀⁻¹W_k) and
// (m_k − m₀)ᵀW_k(m_k − m₀). It reports false when some W_k is not positive definite.
func (m *Model) prepare(post *Post, mu []float64) bool {
	s := &m.scratch
	D, K := m.D, m.K
	var asum float64
	for k := range K {
		asum += post.Alpha[k]
	}
	psiSum := mathext.Digamma(asum)
	for k := range K {
		w := post.W[k*D*D : (k+1)*D*D]
		l := s.l[k*D*D : (k+1)*D*D]
		copy(l, w)
		if !cholesky(l, D) {
			return false
		}
		s.logdetW[k] = cholLogDet(l, D)
		ll := float64(D)*math.Ln2 + s.logdetW[k]
		for i := 1; i <= D; i++ {
			ll += mathext.Digamma((post.Nu[k] + 1 - float64(i)) / 2)
		}
		s.logLam[k] = ll
		s.logPi[k] = mathext.Digamma(post.Alpha[k]) - psiSum
		var tr float64
		for i := range D * D {
			tr += m.w0inv[i] * w[i]
		}
		s.trW0W[k] = tr
		for i := range D {
			s.diff[i] = mu[k*D+i] - m.Prior.M0[i]
		}
		s.quadM[k] = quadChol(l, s.diff, s.tmp, D)
	}
	return true
}

// FreeEnergy returns F (70)–(79) (all constants included) at responsibilities exp(logr) (N×K), means mu (K×D)
// and post. It is NaN when a W_k is not positive definite or a parameter is out of its domain.
func (m *Model) FreeEnergy(logr, mu []float64, post *Post) float64 {
	m.stats(logr, mu)
	return m.energyFromStats(logr, mu, post)
}

func (m *Model) energyFromStats(logr, mu []float64, post *Post) float64 {
	s := &m.scratch
	if !m.prepare(post, mu) {
		return math.NaN()
	}
	var acc kahan
	// (71) Σ r log r.
	for i, l := range logr {
		if r := s.r[i]; r > 0 {
			acc.add(r * l)
		}
	}
	return m.componentEnergy(&acc, mu, post)
}

// componentEnergy adds the terms (72)–(79) of F to acc, after prepare, and returns the total.
func (m *Model) componentEnergy(acc *kahan, mu []float64, post *Post) float64 {
	s := &m.scratch
	D, K := m.D, m.K
	d := float64(D)
	pr := m.Prior
	var asum float64
	lgSum := 0.0
	for k := range K {
		asum += post.Alpha[k]
		lg, _ := math.Lgamma(post.Alpha[k])
		lgSum += lg
	}
	lgA, _ := math.Lgamma(asum)
	lg0, _ := math.Lgamma(float64(K) * pr.Alpha0)
	lg1, _ := math.Lgamma(pr.Alpha0)
	// (72) − (75): log C(α) − log C(α₀).
	acc.add(lgA - lgSum - (lg0 - float64(K)*lg1))
	for k := range K {
		nk, bk, nu := s.nk[k], post.Beta[k], post.Nu[k]
		L, P := s.logLam[k], s.logPi[k]
		// W_k-weighted scatter about m_k: Σ_n r_nk (x_n − m_k)ᵀW_k(x_n − m_k) = tr(W_k sm_k).
		var trWS float64
		w := post.W[k*D*D : (k+1)*D*D]
		sm := s.sm[k*D*D : (k+1)*D*D]
		for i := range D * D {
			trWS += w[i] * sm[i]
		}
		logBk := logWishartB(s.logdetW[k], nu, D)
		H := -logBk - (nu-d-1)/2*L + nu*d/2
		t := (post.Alpha[k]-1)*P - // (72)
			(pr.Alpha0-1)*P - // (75)
			nk*P + // (74)
			0.5*L + d/2*math.Log(bk/(2*math.Pi)) - d/2 - H - // (73)
			0.5*(nk*(L-d/bk-d*math.Log(2*math.Pi))-nu*trWS) - // (76), per-sample form
			0.5*(d*math.Log(pr.Beta0/(2*math.Pi))+L-d*pr.Beta0/bk-pr.Beta0*nu*s.quadM[k]) - // (77)
			m.logB0 - (pr.Nu0-d-1)/2*L + 0.5*nu*s.trW0W[k]
		acc.add(t)
	}
	return acc.sum()
}

// Phi computes φ_nk = ∂F/∂r_nk with post held fixed (App. B, without the irrelevant +1) into phi (N×K), and
// leaves r, N_k and s1 in the model's scratch. It returns false when a W_k is not positive definite.
func (m *Model) phi(phi, logr, mu []float64, post *Post) bool {
	s := &m.scratch
	N, D, K := m.N, m.D, m.K
	d := float64(D)
	if !m.prepare(post, mu) {
		return false
	}
	log2pi := math.Log(2 * math.Pi) // once, not per pair (a call, 8 % of an iteration)
	parallelRows(N, N*K, func(lo, hi int) {
		var buf [2 * stackD]float64
		diff, tmp := twoVectors(buf[:], D)
		for n := lo; n < hi; n++ {
			x := m.X[n*D : n*D+D]
			for k := range K {
				for i := range D {
					diff[i] = x[i] - mu[k*D+i]
				}
				q := quadChol(s.l[k*D*D:(k+1)*D*D], diff, tmp, D)
				s.q[n*K+k] = q
				l := logr[n*K+k]
				if l < -745 { // math.Max(l, -745) without the call; NaN stays NaN
					l = -745
				}
				phi[n*K+k] = l - s.logPi[k] - 0.5*(s.logLam[k]-d/post.Beta[k]-d*log2pi-post.Nu[k]*q)
			}
		}
	})
	return true
}

// EStep sets logr to the VB-E step (61)–(62): log r_nk = log ρ_nk − log Σ_l ρ_nl with
// log ρ_nk = log π̃_k + ½log Λ̃_k − D/(2β_k) − (ν_k/2)(x_n − m_k)ᵀW_k(x_n − m_k).
func (m *Model) EStep(logr, mu []float64, post *Post) error {
	s := &m.scratch
	N, D, K := m.N, m.D, m.K
	if !m.prepare(post, mu) {
		return fmt.Errorf("%w: W not positive definite", ErrBadInput)
	}
	parallelRows(N, N*K, func(lo, hi int) {
		var buf [2 * stackD]float64
		diff, tmp := twoVectors(buf[:], D)
		for n := lo; n < hi; n++ {
			x := m.X[n*D : n*D+D]
			row := logr[n*K : n*K+K]
			for k := range K {
				for i := range D {
					diff[i] = x[i] - mu[k*D+i]
				}
				q := quadChol(s.l[k*D*D:(k+1)*D*D], diff, tmp, D)
				row[k] = s.logPi[k] + 0.5*s.logLam[k] - float64(D)/(2*post.Beta[k]) - post.Nu[k]/2*q
			}
		}
		normaliseRows(logr[lo*K:hi*K], K)
	})
	return nil
}

// MeanStep sets mu to the VB-M means (68) m_k = (β₀m₀ + N_k x̄_k)/(β₀ + N_k) for responsibilities exp(logr).
func (m *Model) MeanStep(mu, logr []float64) {
	N, D, K := m.N, m.D, m.K
	pr := m.Prior
	for k := range K {
		var nk float64
		sum := make([]float64, D)
		for n := range N {
			r := expGuard(logr[n*K+k])
			nk += r
			for i := range D {
				sum[i] += r * m.X[n*D+i]
			}
		}
		for i := range D {
			mu[k*D+i] = (pr.Beta0*pr.M0[i] + sum[i]) / (pr.Beta0 + nk)
		}
	}
}

// Gradients writes ∂F/∂γ (eqs. 82–84, γ_n = log r_n with all K entries, post fixed) into gGamma (N×K) and
// ∂F/∂m_k = ν_kW_k(N_k(m_k − x̄_k) + β₀(m_k − m₀)) (81) into gMu (K×D), and the centred natural gradients
// φ − φ̄ and (N_k(m_k − x̄_k) + β₀(m_k − m₀))/β_k (App. B: A_k = β_kν_kW_k for m_k) into nGamma and nMu when they are not nil.
// It returns F.
func (m *Model) Gradients(gGamma, gMu, nGamma, nMu, logr, mu []float64, post *Post) float64 {
	s := &m.scratch
	m.stats(logr, mu)
	F := m.energyFromStats(logr, mu, post)
	if math.IsNaN(F) || !m.phi(s.phi, logr, mu, post) {
		return math.NaN()
	}
	m.gradFromPhi(gGamma, gMu, nGamma, nMu, mu, post)
	return F
}

func (m *Model) gradFromPhi(gGamma, gMu, nGamma, nMu, mu []float64, post *Post) {
	s := &m.scratch
	softmaxGrad(gGamma, nGamma, s.phi, s.r, m.K)
	m.meanGrad(gMu, nMu, mu, post)
}

// meanGrad writes ∂F/∂m_k (81) into gMu and the natural gradient A_k⁻¹∂F/∂m_k into nMu (when not nil) from the
// statistics in the scratch.
func (m *Model) meanGrad(gMu, nMu, mu []float64, post *Post) {
	s := &m.scratch
	D, K := m.D, m.K
	for k := range K {
		w := post.W[k*D*D : (k+1)*D*D]
		for i := range D {
			s.diff[i] = -s.s1[k*D+i] + m.Prior.Beta0*(mu[k*D+i]-m.Prior.M0[i])
		}
		for i := range D {
			var v float64
			for j := range D {
				v += w[i*D+j] * s.diff[j]
			}
			gMu[k*D+i] = post.Nu[k] * v
			if nMu != nil {
				nMu[k*D+i] = s.diff[i] / post.Beta[k]
			}
		}
	}
}

func softmaxGrad(g, ng, phi, r []float64, K int) {
	for n := 0; n+K <= len(phi); n += K {
		var mean float64
		for k := range K {
			mean += r[n+k] * phi[n+k]
		}
		for k := range K {
			c := phi[n+k] - mean
			g[n+k] = r[n+k] * c
			if ng != nil {
				ng[n+k] = c
			}
		}
	}
}

// normaliseRows subtracts from each row of K its logSumExp, with the same bits, the exponentials and logarithms of
// a block of rows taken in one vmath.Exp and one vmath.Log call (four at a time on AVX2/FMA, a fifth of the cost of
// math.Exp and math.Log).
func normaliseRows(rows []float64, K int) {
	const block = 1024
	var tbuf, lbuf, sbuf [block]float64
	t, lse, sums := tbuf[:], lbuf[:], sbuf[:]
	per := block / K
	if per == 0 { // rows longer than the buffer: their own
		t, lse, sums, per = make([]float64, K), make([]float64, 1), make([]float64, 1), 1
	}
	for b0 := 0; b0 < len(rows); b0 += per * K {
		blk := rows[b0:min(b0+per*K, len(rows))]
		nr := len(blk) / K
		// logSumExp's first half: the maximum (NaN and ±Inf decide the result alone), then the shifted values.
		for i := range nr {
			row := blk[i*K : i*K+K]
			mx := math.Inf(-1)
			for _, x := range row {
				if x > mx {
					mx = x
				} else if x != x {
					mx = x
					break
				}
			}
			lse[i] = mx
			tr := t[i*K : i*K+K]
			if mx != mx || math.IsInf(mx, 0) {
				clear(tr)
				continue
			}
			for k, x := range row {
				tr[k] = x - mx
			}
		}
		vmath.Exp(t[:nr*K], t[:nr*K])
		for i := range nr {
			var s float64
			for _, e := range t[i*K : i*K+K] {
				s += e
			}
			sums[i] = s
		}
		vmath.Log(sums[:nr], sums[:nr])
		for i := range nr {
			row := blk[i*K : i*K+K]
			l := lse[i]
			if l == l && !math.IsInf(l, 0) {
				l += sums[i]
			}
			for k := range row {
				row[k] -= l
			}
		}
	}
}

// kahan is Neumaier-compensated summation (ε = 10⁻¹²N on an F of order N needs it).
type kahan struct{ s, c float64 }

func (k *kahan) add(x float64) {
	t := k.s + x
	if math.Abs(k.s) >= math.Abs(x) {
		k.c += (k.s - t) + x
	} else {
		k.c += (x - t) + k.s
	}
	k.s = t
}

func (k *kahan) sum() float64 { return k.s + k.c }
