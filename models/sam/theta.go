package sam

import (
	"math"

	"github.com/geovb/geovb/rng"
)

// ThetaConfig sets the θ_d sampler: geodesic Monte Carlo on the simplex (Byrne & Girolami 2013, as the authors' code), Burn + N samples
// of L leapfrog steps of size Eps per chain, the last N kept.
type ThetaConfig struct {
	Burn, N, L int
	Eps        float64
}

// PaperTheta is the authors' setting for SGGMC/gSGNHT (their settings files): 40 + 20 samples of 10 steps of 1e-6.
var PaperTheta = ThetaConfig{Burn: 40, N: 20, L: 10, Eps: 1e-6}

// thetaTarget is the conditional π(θ|β, v_d) ∝ Dir(θ|α) exp(κ v_dᵀβθ/‖βθ‖) of one document through G = ββᵀ and
// y = βv_d: U(θ) = −κθᵀy/√(θᵀGθ) − (α−1)Σ log θ_k, O(K²) per evaluation.
type thetaTarget struct {
	G, y      []float64
	K         int
	kappa, a1 float64 // κ and α − 1
	gt        []float64
}

// eval returns U(θ) and writes ∇U(θ) = −(α−1)/θ − (κ/‖βθ‖)[y − (θᵀy/‖βθ‖²)Gθ] into g.
func (t *thetaTarget) eval(g, th []float64) float64 {
	q := quad(t.gt, t.G, th, t.K)
	nb := math.Sqrt(q)
	ty := dot(th, t.y)
	u := -t.kappa * ty / nb
	for k, x := range th {
		u -= t.a1 * math.Log(x)
		g[k] = -t.a1/x - t.kappa/nb*(t.y[k]-ty/q*t.gt[k])
	}
	return u
}

// simplexProject removes the mean of v: Λ = I − (1/K)11ᵀ, the tangent projection of the simplex.
func simplexProject(v []float64) {
	m := 0.0
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	for i := range v {
		v[i] -= m
	}
}

// simplexFlow moves θ along v for time h with specular reflection off the faces θ_j = 0: advance to
// the first face hit, reflect v_j ← −v_j, v_i ← v_i + 2v_j/(K−1) (i ≠ j, pre-reflection v_j), repeat. ‖v‖, Σv and
// Σθ are preserved. It reports false when the reflections do not finish (the proposal is then rejected).
func simplexFlow(th, v []float64, h float64) bool {
	K := len(th)
	rem := h
	for it := 0; it < 64*K; it++ {
		j, s := -1, rem
		for i, x := range v {
			if x < 0 {
				if t := th[i] / -x; t < s {
					j, s = i, t
				}
			}
		}
		for i := range th {
			th[i] += s * v[i]
		}
		if j < 0 {
			return true
		}
		th[j] = 0
		vj := v[j]
		for i := range v {
			v[i] += 2 * vj / float64(K-1)
		}
		v[j] = -vj
		rem -= s
	}
	return false
}

// thetaWork is one worker's scratch for the θ chains.
type thetaWork struct {
	t                 thetaTarget
	v, g, g0, prop, L []float64
}

func newThetaWork(K int) *thetaWork {
	return &thetaWork{t: thetaTarget{K: K, gt: make([]float64, K)}, v: make([]float64, K), g: make([]float64, K),
		g0: make([]float64, K), prop: make([]float64, K), L: make([]float64, K*K)}
}

// initTheta sets θ to the least-squares weights (G + ridge·I)⁻¹y, entries ≤ 1e-6 raised to 1e-6, L1-normalised
// (the authors' start; βᵀβ is nearly singular early on); a failed factorisation gives the uniform θ.
func (w *thetaWork) initTheta(th, G, y []float64) {
	K := len(th)
	L := w.L
	copy(L, G)
	tr := 0.0
	for i := 0; i < K; i++ {
		tr += G[i*K+i]
	}
	ridge := 1e-10 * tr / float64(K)
	ok := true
	for j := 0; j < K && ok; j++ { // Cholesky, lower triangle of L
		d := L[j*K+j] + ridge
		for k := 0; k < j; k++ {
			d -= L[j*K+k] * L[j*K+k]
		}
		if !(d > 0) {
			ok = false
			break
		}
		d = math.Sqrt(d)
		L[j*K+j] = d
		for i := j + 1; i < K; i++ {
			s := L[i*K+j]
			for k := 0; k < j; k++ {
				s -= L[i*K+k] * L[j*K+k]
			}
			L[i*K+j] = s / d
		}
	}
	if ok {
		for i := 0; i < K; i++ { // L z = y
			s := y[i]
			for k := 0; k < i; k++ {
				s -= L[i*K+k] * th[k]
			}
			th[i] = s / L[i*K+i]
		}
		for i := K - 1; i >= 0; i-- { // Lᵀθ = z
			s := th[i]
			for k := i + 1; k < K; k++ {
				s -= L[k*K+i] * th[k]
			}
			th[i] = s / L[i*K+i]
		}
	}
	tot := 0.0
	for i := range th {
		if !ok || !(th[i] > 1e-6) {
			th[i] = 1e-6
			if !ok {
				th[i] = 1
			}
		}
		tot += th[i]
	}
	for i := range th {
		th[i] /= tot
	}
}

// chain runs GMC on the simplex from th (updated to the final state) for cfg.Burn + cfg.N samples and writes the
// last cfg.N into out (N×K). Draws come from ctr: K normals then one uniform per sample. A non-finite energy is a
// rejection (a NaN ratio must not pass the test). It returns the number of accepted proposals.
func (w *thetaWork) chain(out, th []float64, cfg ThetaConfig, ctr rng.Counter) int {
	K := len(th)
	t := &w.t
	u0 := t.eval(w.g0, th)
	acc := 0
	for smp := 0; smp < cfg.Burn+cfg.N; smp++ {
		ctr.FillNormal(w.v)
		ctr = ctr.Advance(K)
		lu := math.Log(ctr.Uniform(0))
		ctr = ctr.Advance(1)
		simplexProject(w.v)
		h0 := u0 + dot(w.v, w.v)/2
		copy(w.prop, th)
		copy(w.g, w.g0)
		u1 := u0
		ok := true
		for l := 0; l < cfg.L && ok; l++ {
			h := cfg.Eps
			if l == 0 {
				h = cfg.Eps / 2
			}
			for i := range w.v {
				w.v[i] -= h * w.g[i]
			}
			simplexProject(w.v)
			ok = simplexFlow(w.prop, w.v, cfg.Eps)
			u1 = t.eval(w.g, w.prop)
		}
		if ok {
			for i := range w.v {
				w.v[i] -= cfg.Eps / 2 * w.g[i]
			}
			simplexProject(w.v)
			dh := h0 - (u1 + dot(w.v, w.v)/2)
			if !math.IsNaN(dh) && !math.IsInf(u1, 0) && lu < dh {
				copy(th, w.prop)
				copy(w.g0, w.g)
				u0 = u1
				acc++
			}
		}
		if n := smp - cfg.Burn; n >= 0 {
			copy(out[n*K:(n+1)*K], th)
		}
	}
	return acc
}
