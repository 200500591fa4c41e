// Package fisher holds the Fisher metrics of the fixed-form posterior families q used with Riemannian
// conjugate gradient (paper 004, §2–3 and App. B): diagonal, full-mean and Gaussian Markov chain metrics of Gaussian means,
// the softmax metric of categorical responsibilities and the mixture-of-Gaussians mean metric. Each gives the natural
// gradient G⁻¹g in closed form and linear time. The cheap inner products of §2.2 (⟨G⁻¹a, G⁻¹b⟩_G = aᵀG⁻¹b) make
// products with G unnecessary in the optimiser; the Apply forms exist for tests and diagnostics.
//
// The package imports nothing from the project: models compute their natural gradients with it, and algos/rcg
// (which drives them) shares it, so neither imports the other for the metric.
package fisher

// DiagNatGrad writes v ⊙ g into dst: the natural gradient of the means of a diagonal Gaussian q with variances v
// (eqs. 15, 35: I_μμ = 1/v).
func DiagNatGrad(dst, v, g []float64) {
	for i := range dst {
		dst[i] = v[i] * g[i]
	}
}

// GaussianFisher returns the Fisher information of a univariate Gaussian N(μ, v) in (μ, v): I_μμ = 1/v,
// I_μv = 0, I_vv = 1/(2v²) (eqs. 15–17).
func GaussianFisher(v float64) (iMuMu, iMuV, iVV float64) { return 1 / v, 0, 1 / (2 * v * v) }

// VarianceNatGrad returns the natural gradient 2v²·∂F/∂v of a Gaussian variance (eq. 17).
func VarianceNatGrad(v, dFdv float64) float64 { return 2 * v * v * dFdv }

// ChainNatGrad writes Σg = L⁻¹DL⁻ᵀg into dst for one scalar Gaussian Markov chain (eq. 20) with
// q(s_t | s_{t−1}) = N(s̄_t + breve_t(s_{t−1} − s̄_{t−1}), ring_t); breve[0] is unused. Two linear scans: backward
// y_t = g_t + breve_{t+1}y_{t+1}, forward g̃_t = ring_t·y_t + breve_t·g̃_{t−1}. dst may alias g.
func ChainNatGrad(dst, g, breve, ring []float64) {
	T := len(g)
	if T == 0 {
		return
	}
	y := dst
	y[T-1] = g[T-1]
	for t := T - 2; t >= 0; t-- {
		y[t] = g[t] + breve[t+1]*y[t+1]
	}
	y[0] *= ring[0]
	for t := 1; t < T; t++ {
		y[t] = ring[t]*y[t] + breve[t]*y[t-1]
	}
}

// ChainApply writes Λx into dst for the chain precision Λ = LᵀD⁻¹L: Λ_tt = 1/ring_t +
// breve_{t+1}²/ring_{t+1}, Λ_{t,t−1} = −breve_t/ring_t. dst must not alias x.
func ChainApply(dst, x, breve, ring []float64) {
	T := len(x)
	for t := range T {
		v := x[t] / ring[t]
		if t > 0 {
			v -= breve[t] / ring[t] * x[t-1]
		}
		if t+1 < T {
			v += breve[t+1] * breve[t+1] / ring[t+1] * x[t]
			v -= breve[t+1] / ring[t+1] * x[t+1]
		}
		dst[t] = v
	}
}

// ChainMarginalVar writes the marginal variances s̃_t = ring_t + breve_t²·s̃_{t−1} (= diag Λ⁻¹) into dst.
func ChainMarginalVar(dst, breve, ring []float64) {
	for t := range dst {
		dst[t] = ring[t]
		if t > 0 {
			dst[t] += breve[t] * breve[t] * dst[t-1]
		}
	}
}

// affineScan solves y_t = a_t·y_{t−1} + b_t (y_{−1} = 0) in place in b by recursive doubling (Hillis–Steele):
// ⌈log₂T⌉ passes, each of which is data-parallel — the associative-scan form a GPU kernel runs. a is
// overwritten.
func affineScan(a, b []float64) {
	T := len(b)
	na, nb := make([]float64, T), make([]float64, T)
	for s := 1; s < T; s *= 2 {
		for t := range T {
			if t >= s {
				na[t] = a[t] * a[t-s]
				nb[t] = a[t]*b[t-s] + b[t]
			} else {
				na[t], nb[t] = a[t], b[t]
			}
		}
		copy(a, na)
		copy(b, nb)
	}
}

// ChainNatGradScan is ChainNatGrad computed with two associative scans (O(T log T) work here, O(log T) depth);
// it is the reference for a parallel GPU kernel and agrees with the sequential scans to rounding.
func ChainNatGradScan(dst, g, breve, ring []float64) {
	T := len(g)
	if T == 0 {
		return
	}
	// Backward scan in reversed time: y_{T−1−u} = breve_{T−u}·y_{T−u} + g_{T−1−u}.
	a, b := make([]float64, T), make([]float64, T)
	for u := range T {
		t := T - 1 - u
		b[u] = g[t]
		if t+1 < T {
			a[u] = breve[t+1]
		}
	}
	affineScan(a, b)
	for u := range T {
		dst[T-1-u] = b[u]
	}
	// Forward scan: g̃_t = breve_t·g̃_{t−1} + ring_t·y_t.
	for t := range T {
		a[t] = 0
		if t > 0 {
			a[t] = breve[t]
		}
		b[t] = ring[t] * dst[t]
	}
	affineScan(a, b)
	copy(dst, b)
}

// SoftmaxNatGrad writes the centred natural gradient φ_nk − φ̄_n (φ̄_n = Σ_k r_nk φ_nk) of softmax-parametrised
// responsibilities into dst (App. B), rows of length K; phi and r are N×K row-major. A unit step γ ← γ − g̃
// is the VB-E step (62). It equals the (K−1) form φ_k − φ_K up to a per-row shift, which softmax ignores.
func SoftmaxNatGrad(dst, phi, r []float64, K int) {
	for n := 0; n+K <= len(phi); n += K {
		var m float64
		for k := range K {
			m += r[n+k] * phi[n+k]
		}
		for k := range K {
			dst[n+k] = phi[n+k] - m
		}
	}
}

// SoftmaxNatGradRef writes the (K−1) form φ_nk − φ_nK (k < K) into dst, rows of length K−1 (App. B):
// B_n⁻¹∇_γ with B_n = diag(r_n) − r_nᵀr_n and B_n⁻¹ = diag(1/r) + 11ᵀ/r_K (Sherman–Morrison), without any matrix.
func SoftmaxNatGradRef(dst, phi []float64, K int) {
	for n, o := 0, 0; n+K <= len(phi); n, o = n+K, o+K-1 {
		for k := range K - 1 {
			dst[o+k] = phi[n+k] - phi[n+K-1]
		}
	}
}

// SoftmaxGrad writes the Euclidean gradient ∂F/∂γ_nk = r_nk(φ_nk − φ̄_n) into dst (eqs. 82–84).
func SoftmaxGrad(dst, phi, r []float64, K int) {
	for n := 0; n+K <= len(phi); n += K {
		var m float64
		for k := range K {
			m += r[n+k] * phi[n+k]
		}
		for k := range K {
			dst[n+k] = r[n+k] * (phi[n+k] - m)
		}
	}
}

// SoftmaxFisherApply writes B v into dst for one row, B = diag(r₁..r_{K−1}) − rrᵀ the Fisher block of the (K−1)
// softmax parameters (App. B); len(v) = K−1, r has all K entries.
func SoftmaxFisherApply(dst, v, r []float64) {
	var rv float64
	for k := range v {
		rv += r[k] * v[k]
	}
	for k := range v {
		dst[k] = r[k]*v[k] - r[k]*rv
	}
}

// MoGMeanNatGrad returns, for one component, the natural gradient of the mean m_k under the metric
// A_k = β_kν_kW_k (App. B): (N_k(m_k − x̄_k) + β₀(m_k − m₀))/β_k, where s1 = N_k(x̄_k − m_k) = Σ_n r_nk(x_n − m_k)
// is passed to avoid dividing by N_k. W_k cancels, so there is no D×D solve.
func MoGMeanNatGrad(dst, m, s1, m0 []float64, beta0, betak float64) {
	for i := range dst {
		dst[i] = (-s1[i] + beta0*(m[i]-m0[i])) / betak
	}
}

// FullNatGrad writes Σg into dst for the mean of a Gaussian q with full covariance Σ (D×D row-major): the
// metric of the mean is Σ⁻¹ (eq. 18) and the natural gradient is Σ∇_μF (35).
func FullNatGrad(dst, sigma, g []float64) {
	D := len(g)
	for i := range D {
		var s float64
		for j := range D {
			s += sigma[i*D+j] * g[j]
		}
		dst[i] = s
	}
}
