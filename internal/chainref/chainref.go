// Package chainref is the sequential reference for the natural gradient of a scalar Gaussian Markov chain (paper 004
// eq. 20): the backend conformance suite checks backend.ChainNatGrad against it, and models/fisher's tests check
// fisher.ChainNatGrad against it bit for bit. It imports nothing, so that neither a backend package nor a model
// needs the other for it.
package chainref

// NatGrad writes Σg = L⁻¹DL⁻ᵀg into dst for one scalar Gaussian Markov chain with
// q(s_t | s_{t−1}) = N(s̄_t + breve_t(s_{t−1} − s̄_{t−1}), ring_t); breve[0] is unused. Two linear scans: backward
// y_t = g_t + breve_{t+1}y_{t+1}, forward g̃_t = ring_t·y_t + breve_t·g̃_{t−1}. dst may alias g.
func NatGrad(dst, g, breve, ring []float64) {
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
