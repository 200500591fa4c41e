package nfa

import (
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// mlpBatch propagates Gaussian moments through one MLP x = B tanh(As + a) + b (plus s with the skip of the NSSM's
// g) for n runs and R time steps at once, with the Gauss–Hermite rule: prop.forward and prop.backward in matrix
// form. Every intermediate of forward stays in the scratch for backward.
type mlpBatch struct {
	l      layer
	R, Q   int
	z, w   []float64      // Gauss–Hermite nodes and weights
	zw     *tensor.Tensor // 1×2×Q: the nodes and weights on the backend (backend.GHTanh)
	wsum   float64
	ones   *tensor.Tensor // 1×R×1
	onesRH *tensor.Tensor // 1×R×H
	sq, td *tensor.Tensor // B×R×in: s̄² + s̃, scratch
	tq     *tensor.Tensor // B×(Q·R)×H: tanh at every node
	// B×R×H: layer-1 moments, the nonlinearity's outputs and their gradients, scratch
	y, yw, ys, yt, sd, m1, m2, k, res, phw, pv, w1, gphm, gphw, gk, gys, gy, gsum, gyw *tensor.Tensor
	a2, ac, hd                                                                         *tensor.Tensor // B×H×in
	b2, ph                                                                             *tensor.Tensor // B×out×H
	kt, gkt                                                                            *tensor.Tensor // B×H×R
	c, mm                                                                              *tensor.Tensor // B×H×(R·in)
	j, j2, gj                                                                          *tensor.Tensor // B×out×(R·in)
	xm, xv, tp                                                                         *tensor.Tensor // B×R×out
	jt                                                                                 *tensor.Tensor // B×(out·R)×1
	h1, h2, h3                                                                         *tensor.Tensor // B×1×H
	// With the skip (in = out): Aᵀ, E = B ⊙ Aᵀ (J's diagonal is k E per step), the diagonal's gradient parts, and
	// jd = diag(B diag(k_t) A) per step (R×out).
	at, e, dk *tensor.Tensor // B×in×H
	dkt       *tensor.Tensor // B×H×in
	jd        *tensor.Tensor // B×R×out
}

func newMLPBatch(alloc func(b, r, c int) *tensor.Tensor, B int, l layer, R, Q int) *mlpBatch {
	in, H, out := l.in, l.hid, l.out
	m := &mlpBatch{l: l, R: R, Q: Q}
	m.z, m.w = GHNodes(Q)
	for _, w := range m.w {
		m.wsum += w
	}
	m.ones, m.onesRH, m.zw = alloc(1, R, 1), alloc(1, R, H), alloc(1, 2, Q)
	m.sq, m.td = alloc(B, R, in), alloc(B, R, in)
	m.tq = alloc(B, Q*R, H)
	for _, t := range []**tensor.Tensor{&m.y, &m.yw, &m.ys, &m.yt, &m.sd, &m.m1, &m.m2, &m.k, &m.res, &m.phw, &m.pv,
		&m.w1, &m.gphm, &m.gphw, &m.gk, &m.gys, &m.gy, &m.gsum, &m.gyw} {
		*t = alloc(B, R, H)
	}
	m.a2, m.ac, m.hd = alloc(B, H, in), alloc(B, H, in), alloc(B, H, in)
	m.b2, m.ph = alloc(B, out, H), alloc(B, out, H)
	m.kt, m.gkt = alloc(B, H, R), alloc(B, H, R)
	m.c, m.mm = alloc(B, H, R*in), alloc(B, H, R*in)
	m.j, m.j2, m.gj = alloc(B, out, R*in), alloc(B, out, R*in), alloc(B, out, R*in)
	m.xm, m.xv, m.tp = alloc(B, R, out), alloc(B, R, out), alloc(B, R, out)
	m.jt = alloc(B, out*R, 1)
	m.h1, m.h2, m.h3 = alloc(B, 1, H), alloc(B, 1, H), alloc(B, 1, H)
	if l.skip {
		m.at, m.e, m.dk, m.dkt = alloc(B, in, H), alloc(B, out, H), alloc(B, out, H), alloc(B, H, in)
		m.jd = alloc(B, R, out)
	}
	return m
}

// init fills the constant tensors.
func (m *mlpBatch) init(o *ops) {
	o.fill(m.ones, 1)
	o.fill(m.onesRH, 1)
	zw := tensor.NewHost(1, 2, m.Q)
	for q := range m.Q {
		zw.Set(0, 0, q, m.z[q])
		zw.Set(0, 1, q, m.w[q])
	}
	o.do(func() error { return o.be.Upload(m.zw, zw) })
}

// weights returns the views A (H×in), a (1×H), B (out×H), b (1×out) of the first n items of t (b×1×len) whose
// weights of this layer start at column off (layer.split's order).
func (m *mlpBatch) weights(t *tensor.Tensor, n, off int) (A, a, B, b *tensor.Tensor) {
	in, H, out := m.l.in, m.l.hid, m.l.out
	A = t.Window(n, off, H, in, in)
	a = t.Window(n, off+H*in, 1, H, H)
	B = t.Window(n, off+H*in+H, out, H, H)
	b = t.Window(n, off+H*in+H+out*H, 1, out, out)
	return
}

// forward computes the output means xm and variances xv (R×out, in m.xm, m.xv) of the first n runs from the input
// means S and variances V (n×R×in; Vf is V as n×1×(R·in), contiguous) and the weight means and variances wm, wv
// (n×1×|l|).
func (m *mlpBatch) forward(o *ops, n int, S, V, Vf, wm, wv *tensor.Tensor) {
	in, H := m.l.in, m.l.hid
	it := func(t *tensor.Tensor) *tensor.Tensor { return t.Batches(0, n) }
	A, a, Bm, bb := m.weights(wm, n, 0)
	Av, av, Bv, bv := m.weights(wv, n, 0)
	sq, y, yw, ys, yt, sd := it(m.sq), it(m.y), it(m.yw), it(m.ys), it(m.yt), it(m.sd)
	m1, m2, k, res, phw, pv, w1 := it(m.m1), it(m.m2), it(m.k), it(m.res), it(m.phw), it(m.pv), it(m.w1)
	// Layer 1 (op. 5): ȳ = S̄Āᵀ + 1āᵀ, the weight part (S̄² + S̃)Ãᵀ + 1ãᵀ, the source part S̃(Ā²)ᵀ.
	o.mul(sq, S, S)
	o.axpby(sq, 1, sq, 1, V)
	o.gemm(nt, tr, 1, S, A, 0, y)
	o.gemm(nt, nt, 1, m.ones, a, 1, y)
	o.gemm(nt, tr, 1, sq, Av, 0, yw)
	o.gemm(nt, nt, 1, m.ones, av, 1, yw)
	o.mul(it(m.a2), A, A)
	o.gemm(nt, tr, 1, V, it(m.a2), 0, ys)
	o.axpby(yt, 1, ys, 1, yw)
	// Gauss–Hermite moments (op. 6, prop.nonlin): E tanh, E tanh², the slope k = Σw − E tanh² (Σ w_q(1 − t_q²)) and
	// the residual variance max(E tanh² − (E tanh)² − k²ys, 0).
	o.mapf(sd, backend.Sqrt, yt)
	o.do(func() error { return backend.GHTanh(o.be, m1, m2, it(m.tq), y, sd, m.zw) })
	o.axpby(k, m.wsum, m.onesRH, -1, m2)
	o.mul(w1, m1, m1)
	o.axpby(res, 1, m2, -1, w1)
	o.mul(w1, k, k)
	o.mul(w1, w1, ys)
	o.axpby(res, 1, res, -1, w1)
	o.mapf(w1, backend.Abs, res)
	o.axpby(phw, 0.5, res, 0.5, w1)
	// Layer 2 (op. 7): x̄ = M1 B̄ᵀ + 1b̄ᵀ; x̃ = pv B̃ᵀ + phw (B̄²)ᵀ + 1b̃ᵀ + Σ_j J_tij² s̃_tj with pv = E φ² = m1² + k²ys + phw.
	xm, xv := it(m.xm), it(m.xv)
	o.gemm(nt, tr, 1, m1, Bm, 0, xm)
	o.gemm(nt, nt, 1, m.ones, bb, 1, xm)
	o.mul(pv, m1, m1)
	o.mul(w1, k, k)
	o.mul(w1, w1, ys)
	o.axpby(pv, 1, pv, 1, w1)
	o.axpby(pv, 1, pv, 1, phw)
	o.gemm(nt, tr, 1, pv, Bv, 0, xv)
	o.mul(it(m.b2), Bm, Bm)
	o.gemm(nt, tr, 1, phw, it(m.b2), 1, xv)
	o.gemm(nt, nt, 1, m.ones, bv, 1, xv)
	// The Jacobian J_t = B̄ diag(k_t) Ā of every step at once (ops 8–9): C_h,(t,j) = k_th Ā_hj by n·H outer products,
	// J = B̄C (out × R·in), then Σ_j J² s̃ over each step's in columns.
	R, out := m.R, m.l.out
	o.transpose(it(m.kt), k)
	o.copy(it(m.ac), A)
	o.gemm(nt, nt, 1, re(m.kt, n*H, R, 1), re(m.ac, n*H, 1, in), 0, re(m.c, n*H, R, in))
	o.gemm(nt, nt, 1, Bm, it(m.c), 0, it(m.j))
	o.mul(it(m.j2), it(m.j), it(m.j))
	o.scaleCols(it(m.gj), it(m.j2), Vf)
	o.sum(re(m.jt, n, out*R, 1), backend.AxisCols, re(m.gj, n, out*R, in))
	o.transpose(it(m.tp), re(m.jt, n, out, R))
	o.axpby(xv, 1, xv, 1, it(m.tp))
	if !m.l.skip {
		return
	}
	// The skip h = s + g(s) (eq. 34): x̄ += s̄, J = J₀ + I, so x̃ += Σ_j (2J₀_jj δ_ij + δ_ij) s̃_j = 2 jd ⊙ s̃ + s̃, with
	// jd = diag(J₀) = k Eᵀ per step, E = B̄ ⊙ Āᵀ.
	jd, td := it(m.jd), it(m.td)
	o.axpby(xm, 1, xm, 1, S)
	o.transpose(it(m.at), A)
	o.mul(it(m.e), Bm, it(m.at))
	o.gemm(nt, tr, 1, k, it(m.e), 0, jd)
	o.mul(td, jd, V)
	o.axpby(xv, 1, xv, 2, td)
	o.axpby(xv, 1, xv, 1, V)
}

// backward, after forward at the same point, writes the gradients of the weight means and variances into gwm, gwv
// (n×1×|l|) and adds those of the input means and variances into gS, gV (n×R×in; gVf is gV as n×1×(R·in)), given
// ∂F/∂x̄ = gxm (R×out, not changed), ∂F/∂x̃ = psiH (n×1×out, the same at every step; psi = 2 psiH) and, with the
// skip, gJd: an extra ∂F/∂J_ii (R×out; nil for none).
func (m *mlpBatch) backward(o *ops, n int, S, V, Vf, wm, wv, gxm, psi, psiH, gJd, gS, gV, gVf, gwm,
	gwv *tensor.Tensor) {
	in, H, out, R := m.l.in, m.l.hid, m.l.out, m.R
	it := func(t *tensor.Tensor) *tensor.Tensor { return t.Batches(0, n) }
	A, _, Bm, _ := m.weights(wm, n, 0)
	_, _, Bv, _ := m.weights(wv, n, 0)
	gA, ga, gB, gb := m.weights(gwm, n, 0)
	gAv, gav, gBv, gbv := m.weights(gwv, n, 0)
	Av, _, _, _ := m.weights(wv, n, 0)
	m1, k, ys, phw, pv, res, sd := it(m.m1), it(m.k), it(m.ys), it(m.phw), it(m.pv), it(m.res), it(m.sd)
	w1, h1, h2, h3 := it(m.w1), it(m.h1), it(m.h2), it(m.h3)
	gphm, gphw, gk, gys, gy, gsum, gyw := it(m.gphm), it(m.gphw), it(m.gk), it(m.gys), it(m.gy), it(m.gsum), it(m.gyw)
	j, j2, gj, c, mm := it(m.j), it(m.j2), it(m.gj), it(m.c), it(m.mm)
	// Output layer: b and b̃.
	o.sum(gb, backend.AxisRows, gxm)
	o.scale(gbv, float64(R), psiH)
	// Per hidden unit, constant over t: u = Σ_i psiH_i B̃_ih = ∂F/∂phv and w2 = Σ_i psiH_i B̄_ih² = ∂F/∂phw (direct).
	o.gemm(nt, nt, 1, psiH, Bv, 0, h1)
	o.gemm(nt, nt, 1, psiH, it(m.b2), 0, h2)
	o.gemm(nt, nt, 1, gxm, Bm, 0, gphm) // ∂F/∂phm = (∂F/∂x̄) B̄ + 2 m1 ⊙ u
	o.scaleCols(w1, m1, h1)
	o.axpby(gphm, 1, gphm, 2, w1)
	o.axpby(h3, 1, h1, 1, h2) // ∂F/∂phw with phv = k²ys + phw
	o.gemm(nt, nt, 1, m.ones, h3, 0, gphw)
	// ∂F/∂J = psi J s̃, and the Jacobian path into B̄ (gj Cᵀ), s̃ (Σ_i psiH_i J²) and, through M = B̄ᵀ gj, into k and Ā.
	o.scaleRows(gj, j, re(psi, n, out, 1))
	o.scaleCols(gj, gj, Vf)
	o.gemm(tr, nt, 1, gxm, m1, 0, gB)
	o.sum(h3, backend.AxisRows, phw)
	o.gemm(tr, nt, 1, psi, h3, 0, it(m.ph))
	o.mul(it(m.ph), it(m.ph), Bm)
	o.axpby(gB, 1, gB, 1, it(m.ph))
	o.gemm(nt, tr, 1, gj, c, 1, gB)
	o.sum(h3, backend.AxisRows, pv)
	o.gemm(tr, nt, 1, psiH, h3, 0, gBv)
	o.gemm(nt, nt, 1, psiH, j2, 1, gVf)
	o.gemm(tr, nt, 1, Bm, gj, 0, mm)
	o.gemm(nt, tr, 1, re(m.mm, n*H, R, in), re(m.ac, n*H, 1, in), 0, re(m.gkt, n*H, R, 1))
	o.transpose(gk, it(m.gkt))
	if m.l.skip {
		// J = J₀ + I: the identity's part of x̃ gives ∂F/∂s̃_j += psi_j jd_j + psiH_j and ∂F/∂J₀_jj += psi_j s̃_j; with
		// the caller's gJd, the diagonal's gradient G (R×out) goes to B̄ ((Gᵀk) ⊙ Āᵀ), Ā (((Gᵀk) ⊙ B̄)ᵀ) and k (G E).
		jd, td, G := it(m.jd), it(m.td), it(m.tp)
		o.axpby(gS, 1, gS, 1, gxm)
		o.scaleCols(td, jd, psi)
		o.axpby(gV, 1, gV, 1, td)
		o.gemm(nt, nt, 1, m.ones, psiH, 1, gV)
		o.scaleCols(G, V, psi)
		if gJd != nil {
			o.axpby(G, 1, G, 1, gJd)
		}
		o.gemm(tr, nt, 1, G, k, 0, it(m.dk))
		o.mul(it(m.ph), it(m.dk), it(m.at))
		o.axpby(gB, 1, gB, 1, it(m.ph))
		o.mul(it(m.dk), it(m.dk), Bm)
		o.transpose(it(m.dkt), it(m.dk))
		o.gemm(nt, nt, 1, G, it(m.e), 1, gk)
	}
	o.mul(w1, k, ys) // ∂F/∂k += 2 k ys u, ∂F/∂ys = k² u
	o.scaleCols(w1, w1, h1)
	o.axpby(gk, 1, gk, 2, w1)
	o.mul(w1, k, k)
	o.scaleCols(gys, w1, h1)
	// Through the Gauss–Hermite moments (prop.nonlinBack): no gradient through the clamped residual; with
	// gm1 = ∂phm − 2 m1 ∂phw and gkk = ∂k − 2 k ys ∂phw, each node adds w_q (1 − t²)(gm1 + 2t(∂phw − gkk)) to ∂ȳ and
	// z_q times that to ∂√yt (GHTanhBack with gk = 2(∂phw − gkk) and gm = gm1).
	o.mapf(w1, backend.Step, res)
	o.mul(gphw, gphw, w1)
	o.mul(w1, m1, gphw)
	o.axpby(gphm, 1, gphm, -2, w1)
	o.mul(w1, k, ys)
	o.mul(w1, w1, gphw)
	o.axpby(gk, 1, gk, -2, w1)
	o.mul(w1, k, k)
	o.mul(w1, w1, gphw)
	o.axpby(gys, 1, gys, -1, w1)
	o.axpby(gk, 2, gphw, -2, gk)
	o.do(func() error { return backend.GHTanhBack(o.be, gy, gsum, it(m.tq), gk, gphm, m.zw) })
	o.div(w1, gsum, sd) // ∂F/∂yt = ∂√yt/(2√yt), and yt = ys + yw
	o.axpby(gys, 1, gys, 0.5, w1)
	o.scale(gyw, 0.5, w1)
	// Layer 1.
	o.sum(ga, backend.AxisRows, gy)
	o.sum(gav, backend.AxisRows, gyw)
	hd, td := it(m.hd), it(m.td)
	o.gemm(tr, nt, 1, gy, S, 0, gA) // ∂Ā = gyᵀS̄ + 2Ā ⊙ (gysᵀS̃) + Σ_t k_th M_h,(t,·)
	o.gemm(tr, nt, 1, gys, V, 0, hd)
	o.mul(hd, hd, A)
	o.axpby(gA, 1, gA, 2, hd)
	o.gemm(nt, nt, 1, re(m.kt, n*H, 1, R), re(m.mm, n*H, R, in), 0, re(m.hd, n*H, 1, in))
	o.axpby(gA, 1, gA, 1, hd)
	if m.l.skip {
		o.axpby(gA, 1, gA, 1, it(m.dkt))
	}
	o.gemm(tr, nt, 1, gyw, it(m.sq), 0, gAv)
	o.gemm(nt, nt, 1, gyw, Av, 0, td) // ∂s̃ += gyw Ã + gys Ā²; ∂s̄ += gy Ā + 2 s̄ ⊙ (gyw Ã)
	o.axpby(gV, 1, gV, 1, td)
	o.gemm(nt, nt, 1, gys, it(m.a2), 1, gV)
	o.gemm(nt, nt, 1, gy, A, 1, gS)
	o.mul(td, td, S)
	o.axpby(gS, 1, gS, 2, td)
}
