package nfa

import (
	"math"

	"gonum.org/v1/gonum/integrate/quad"

	"github.com/geovb/geovb/internal/vmath"
)

// Moments picks how the mean and variance of tanh(y), y ~ N(ȳ, ỹ), are approximated (Taylor, or Gauss–Hermite as in Honkela & Valpola 2005).
type Moments int

const (
	// Taylor: E tanh(y) ≈ tanh(ȳ) + ½tanh″(ȳ)ỹ, slope tanh′(ȳ), variance tanh′(ȳ)²ỹ (Lappalainen & Honkela 2000).
	Taylor Moments = iota
	// GaussHermite: E tanh(y), the effective slope E tanh′(y) and Var tanh(y) by Gauss–Hermite quadrature under
	// N(ȳ, ỹ); the residual variance beyond the source-driven part goes to the "extra" part (Honkela & Valpola 2005).
	GaussHermite
)

func (mo Moments) String() string {
	if mo == GaussHermite {
		return "gauss-hermite"
	}
	return "taylor"
}

// layer is the shape of one two-layer MLP x = B tanh(As + a) + b (eqs. 89–90), with an identity skip x += s for
// the NSSM prior mean h(s) = s + g(s) (eq. 34). Weights are stored as (A, a, B, b), row-major.
type layer struct {
	in, hid, out int
	skip         bool
}

func (l layer) size() int { return l.hid*l.in + l.hid + l.out*l.hid + l.out }

// bias is the output bias b of w's layout.
func (l layer) bias(w []float64) []float64 {
	_, _, _, b := l.split(w)
	return b
}

func (l layer) split(w []float64) (A, a, B, b []float64) {
	i := l.hid * l.in
	A, a = w[:i], w[i:i+l.hid]
	i += l.hid
	B, b = w[i:i+l.out*l.hid], w[i+l.out*l.hid:i+l.out*l.hid+l.out]
	return
}

// prop propagates Gaussian moments through one MLP. For every hidden unit it tracks the mean, the source-driven
// variance (through the Jacobian with respect to the inputs, which are shared between units) and the "extra"
// variance from the weights (independent across units). forward leaves the per-unit values,
// the tanh at every quadrature node and the Jacobian in p, and backward (at the same point) reads them back instead
// of evaluating tanh again.
//
// On amd64 with AVX the kernels of mlp_amd64.s take four hidden units or four outputs at a time. Each lane does one
// unit's or output's operations in the order of the scalar functions here (the path without AVX), multiplying and
// adding without fusing, so the bits do not depend on the path. The per-unit and per-output arrays the kernels
// write are padded to multiples of 4 (hp, op), with zero weights in the padding.
type prop struct {
	mo     Moments
	z, w   []float64 // quadrature nodes and weights for N(0, 1)
	l      layer
	hp, op int // hid and out rounded up to multiples of 4

	// Per hidden unit (length hid, capacity hp):
	y, yt  []float64 // mean, total variance
	ys, yw []float64 // source-driven and weight ("extra") parts of the variance
	phm    []float64 // mean of tanh
	k      []float64 // slope (Taylor: tanh′(ȳ); GH: E tanh′(y))
	phw    []float64 // extra variance of tanh
	m2     []float64 // GH: E tanh² (the unclamped residual is m2 − phm² − k²ys)
	pv     []float64 // E φ² = phm² + k²ys + phw, the factor of the output variance's weight part
	// ∂C/∂phm, ∂C/∂phv, ∂C/∂phw through the output layer (phv = k²ys + phw), ∂C/∂k, and nonlinBack's ∂C/∂ȳ,
	// ∂C/∂yt, ∂C/∂ys and ∂C/∂yw
	gphm, gphv, gphw, gk, gy, gyt, gys, gyw []float64
	tq                                      []float64 // nodes×hp: tanh at each node (Taylor: tanh(ȳ), one node)

	// The weights of the pass, shared by the propagators of all blocks of time steps (newProp).
	*mlpWeights
	smq    []float64 // in×3: s̄_j, s̄_j² + s̃_j and s̃_j
	xm, xv []float64 // op: the output means and variances as the kernels sum them
	jt     []float64 // in×op (8×op for in ≤ 8): Jᵀ as the kernels sum it
	jx     []float64 // out×in Jacobian of the output mean path
	gj     []float64 // out×in: ∂C/∂J of the backward pass, all paths
	gx     []float64 // out×3: ∂C/∂xm_i, ∂C/∂xv_i and twice the latter
	mt     []float64 // in×hp: Σ_i ∂C/∂J_ij B_ih, the Jacobian path's share of ∂C/∂(k_h A_hj)
	ts     []float64 // in×8: one block's terms of ∂C/∂s̄_j (4 lanes) and ∂C/∂s̃_j (4), for the sums in unit order

	// The weight gradients backward accumulates (addWeightGrad adds them to the caller's), in the kernels'
	// layouts: ∂C/∂A and ∂C/∂Av transposed (in×hp), ∂C/∂a, ∂C/∂av (hp), ∂C/∂B, ∂C/∂Bv (out×hp), ∂C/∂b, ∂C/∂bv.
	gAt, gAvt, gap, gavp, gBp, gBvp, gbp, gbvp []float64
}

// newProp returns a propagator for layer l that reads its weights from w, which the propagators of all blocks of
// time steps share; with w nil it has weights of its own, which setWeights sets.
func newProp(l layer, mo Moments, order int, w *mlpWeights) *prop {
	if w == nil {
		w = newMLPWeights(l)
	}
	hp, op := (l.hid+3)&^3, (l.out+3)&^3
	unit := func() []float64 { return make([]float64, l.hid, hp) }
	p := &prop{mo: mo, l: l, hp: hp, op: op,
		y: unit(), yt: unit(), ys: unit(), yw: unit(), phm: unit(), k: unit(), phw: unit(), m2: unit(), pv: unit(),
		gphm: unit(), gphv: unit(), gphw: unit(), gk: unit(), gy: unit(), gyt: unit(), gys: unit(), gyw: unit(),
		mlpWeights: w, smq: make([]float64, 3*l.in),
		xm: make([]float64, op), xv: make([]float64, op), jt: make([]float64, max(l.in, 8)*op),
		jx: make([]float64, l.out*l.in), gj: make([]float64, l.out*l.in), gx: make([]float64, 3*l.out),
		mt: make([]float64, l.in*hp), ts: make([]float64, 8*l.in),
		gAt: make([]float64, l.in*hp), gAvt: make([]float64, l.in*hp), gap: make([]float64, hp), gavp: make([]float64, hp),
		gBp: make([]float64, l.out*hp), gBvp: make([]float64, l.out*hp), gbp: make([]float64, l.out),
		gbvp: make([]float64, l.out)}
	nq := 1
	if mo == GaussHermite {
		p.z, p.w = GHNodes(order)
		nq = order
	}
	p.tq = make([]float64, nq*hp)
	return p
}

// GHNodes returns the n-point Gauss–Hermite rule for E f(z), z ~ N(0, 1): Σ w_q f(z_q).
func GHNodes(n int) (z, w []float64) {
	z, w = make([]float64, n), make([]float64, n)
	quad.Hermite{}.FixedLocations(z, w, math.Inf(-1), math.Inf(1)) // weight e^{−x²}
	for i := range z {
		z[i] *= math.Sqrt2
		w[i] /= math.SqrtPi
	}
	return z, w
}

// mlpWeights holds one MLP's weight means wm and variances wv for a pass over the data, by reference, with the
// padded copies and transposes the kernels read. Weights change only between passes, so the model sets them once per
// evaluation, and the propagators of all blocks of time steps read them.
type mlpWeights struct {
	wm, wv  []float64
	ap, avp []float64 // hp: a and av
	at, avt []float64 // in×hp: Aᵀ and Avᵀ
	bt, bvt []float64 // hid×op: Bᵀ and Bvᵀ
	bp, bvp []float64 // out×hp: B and Bv with padded rows
	a8      []float64 // hid×8 for in ≤ 8: A with its rows padded to 8 columns
}

func newMLPWeights(l layer) *mlpWeights {
	hp, op := (l.hid+3)&^3, (l.out+3)&^3
	return &mlpWeights{ap: make([]float64, hp), avp: make([]float64, hp), at: make([]float64, l.in*hp),
		avt: make([]float64, l.in*hp), bt: make([]float64, l.hid*op), bvt: make([]float64, l.hid*op),
		bp: make([]float64, l.out*hp), bvp: make([]float64, l.out*hp), a8: make([]float64, l.hid*8)}
}

// set takes wm and wv of layer l by reference and copies them into the kernels' layouts.
func (w *mlpWeights) set(l layer, wm, wv []float64) {
	hp, op := (l.hid+3)&^3, (l.out+3)&^3
	w.wm, w.wv = wm, wv
	A, a, B, _ := l.split(wm)
	Av, av, Bv, _ := l.split(wv)
	copy(w.ap, a)
	copy(w.avp, av)
	for h := range l.hid {
		for j := range l.in {
			w.at[j*hp+h], w.avt[j*hp+h] = A[h*l.in+j], Av[h*l.in+j]
		}
		if l.in <= 8 {
			copy(w.a8[h*8:h*8+l.in], A[h*l.in:(h+1)*l.in])
		}
		for i := range l.out {
			w.bt[h*op+i], w.bvt[h*op+i] = B[i*l.hid+h], Bv[i*l.hid+h]
			w.bp[i*hp+h], w.bvp[i*hp+h] = B[i*l.hid+h], Bv[i*l.hid+h]
		}
	}
}

// setWeights sets the weights of the passes of p that follow (forward, backward), for a p made with weights of its
// own (newProp with nil).
func (p *prop) setWeights(wm, wv []float64) { p.mlpWeights.set(p.l, wm, wv) }

// forward maps input means sm and variances sv (independent inputs) to output means xm and variances xv, with the
// weights in p.mlpWeights; it leaves the per-unit quantities and the Jacobian in p for backward.
func (p *prop) forward(sm, sv, xm, xv []float64) {
	l := p.l
	for j := range l.in {
		p.smq[3*j], p.smq[3*j+1], p.smq[3*j+2] = sm[j], sm[j]*sm[j]+sv[j], sv[j]
	}
	nz := len(p.z) // GH: the node arguments are written with the units' moments
	// The hidden units' input moments (and the GH node arguments), their tanh moments, then the outputs.
	if useAVX {
		for h := 0; h < l.hid; h += 4 {
			unitsInBlock(&p.at[h], &p.avt[h], &p.ap[h], &p.avp[h], &p.smq[0], &p.y[h], &p.yw[h], &p.ys[h], &p.yt[h],
				p.zPtr(), &p.tq[h], nz, l.in, p.hp)
		}
	} else {
		for h := range l.hid {
			p.unitIn(h)
		}
	}
	if p.mo == GaussHermite {
		// Every node of every unit in one call (four lanes at a time, within 4 ulps; the tanh calls were most of a
		// pass's time).
		vmath.Tanh(p.tq, p.tq, 1, math.Tanh)
		if useAVX {
			for h := 0; h < l.hid; h += 4 {
				nonlinBlock(&p.tq[h], &p.w[0], &p.ys[h], &p.phm[h], &p.k[h], &p.phw[h], &p.m2[h], &p.pv[h], len(p.w), p.hp)
			}
		} else {
			for h := range l.hid {
				p.nonlinGH(h)
			}
		}
	} else {
		for h := range l.hid {
			p.nonlinTaylor(h)
		}
	}
	copy(p.xm, l.bias(p.wm))
	copy(p.xv, l.bias(p.wv))
	clear(p.jt)
	switch {
	case useAVX && l.in <= 8:
		// J's eight (padded) columns summed in registers.
		for i := 0; i < l.out; i += 4 {
			outputsForwardBlock8(&p.bt[i], &p.bvt[i], &p.a8[0], &p.phm[0], &p.phw[0], &p.pv[0], &p.k[0], &p.xm[i],
				&p.xv[i], &p.jt[i], p.op, l.hid)
		}
	case useAVX:
		for i := 0; i < l.out; i += 4 {
			outputsForwardBlock(&p.bt[i], &p.bvt[i], &p.wm[0], &p.phm[0], &p.phw[0], &p.pv[0], &p.k[0], &p.xm[i],
				&p.xv[i], &p.jt[i], p.op, l.in, l.hid)
		}
	default:
		for i := range l.out {
			p.outputForward(i)
		}
	}
	for i := range l.out {
		J := p.jx[i*l.in : (i+1)*l.in]
		for j := range J {
			J[j] = p.jt[j*p.op+i]
		}
		if l.skip {
			J[i]++ // the identity of the skip
		}
		v := p.xv[i]
		for j, s := range J {
			v += s * s * sv[j]
		}
		m := p.xm[i]
		if l.skip {
			m += sm[i]
		}
		xm[i], xv[i] = m, v
	}
}

// zPtr is the GH nodes for unitsInBlock (Taylor: nil, and it writes no node arguments).
func (p *prop) zPtr() *float64 {
	if len(p.z) == 0 {
		return nil
	}
	return &p.z[0]
}

// unitIn sets unit h's input mean ȳ = a_h + A_h s̄, the source-driven variance ys = Σ_j A_hj² s̃_j, the weight part
// yw = av_h + Σ_j Av_hj (s̄_j² + s̃_j) and yt = ys + yw, and with GH the node arguments ȳ + √yt·z_q in tq
// (unitsInBlock for four units).
func (p *prop) unitIn(h int) {
	l := p.l
	y, yw, ys := p.ap[h], p.avp[h], 0.0
	for j := range l.in {
		ah := p.at[j*p.hp+h]
		y += ah * p.smq[3*j]
		yw += p.avt[j*p.hp+h] * p.smq[3*j+1]
		ys += ah * ah * p.smq[3*j+2]
	}
	p.y[h], p.yw[h], p.ys[h], p.yt[h] = y, yw, ys, ys+yw
	if len(p.z) > 0 {
		s := math.Sqrt(ys + yw)
		for q, zq := range p.z {
			p.tq[q*p.hp+h] = y + s*zq
		}
	}
}

// nonlinTaylor sets unit h's mean, slope and extra variance of tanh(y) by the Taylor moments and keeps tanh(ȳ) for
// nonlinBack.
func (p *prop) nonlinTaylor(h int) {
	t := math.Tanh(p.y[h])
	p.tq[h] = t
	t1 := 1 - t*t
	t2 := -2 * t * t1
	phm, k, phw, ys := t+0.5*t2*p.yt[h], t1, t1*t1*p.yw[h], p.ys[h]
	p.phm[h], p.k[h], p.phw[h], p.pv[h] = phm, k, phw, phm*phm+(k*k*ys+phw)
}

// nonlinGH sets unit h's mean, slope, extra variance and E tanh² by Gauss–Hermite from the tanh values at its nodes
// (nonlinBlock for four units).
func (p *prop) nonlinGH(h int) {
	var m1, k, m2 float64
	for q, wq := range p.w {
		t := p.tq[q*p.hp+h]
		m1 += wq * t
		k += wq * (1 - t*t)
		m2 += wq * t * t
	}
	ys := p.ys[h]
	// Var tanh = E t² − (E t)²; the part k²·ys explained by the sources is tracked through the Jacobian. Under exact
	// integration Var tanh ≥ k²(ys + yw) ≥ k²ys (Stein's lemma and Cauchy–Schwarz), but a finite rule under a wide
	// N(ȳ, yt) can overestimate k (a node near the origin) and make the residual negative; it is clamped at 0 so that
	// no output variance is negative (a negative one makes F unbounded below).
	phw := math.Max(m2-m1*m1-k*k*ys, 0)
	p.phm[h], p.k[h], p.phw[h], p.m2[h], p.pv[h] = m1, k, phw, m2, m1*m1+(k*k*ys+phw)
}

// outputForward adds to p.xm[i] and p.xv[i] the sums over the hidden units of output i's mean and the weight part
// of its variance, and sums row i of J = (B diag k) A into column i of jt (outputsForwardBlock for four outputs).
func (p *prop) outputForward(i int) {
	l := p.l
	A, _, _, _ := l.split(p.wm)
	m, v := p.xm[i], p.xv[i]
	for h := range l.hid {
		bih := p.bt[h*p.op+i]
		m += bih * p.phm[h]
		v += bih*bih*p.phw[h] + p.bvt[h*p.op+i]*p.pv[h]
		bk := bih * p.k[h]
		for j, ahj := range A[h*l.in : (h+1)*l.in] {
			p.jt[j*p.op+i] += bk * ahj
		}
	}
	p.xm[i], p.xv[i] = m, v
}

// nonlinBack sets p.gy, p.gyt, p.gys and p.gyw of unit h, the gradients with respect to (ȳ, yt, ys, yw), from those
// with respect to (phm, k, phw) in p.gphm, p.gk and p.gphw and the values forward left at the same point. For
// Gauss–Hermite it differentiates the quadrature sum itself (nodes ȳ + √yt·z_q), so it is exact for the discrete
// rule (nonlinBackBlock for four units).
func (p *prop) nonlinBack(h int) {
	gphm, gk, gphw := p.gphm[h], p.gk[h], p.gphw[h]
	yt, ys, yw := p.yt[h], p.ys[h], p.yw[h]
	if p.mo == Taylor {
		t := p.tq[h]
		t1 := 1 - t*t
		t2 := -2 * t * t1
		t3 := -2*t1*t1 - 2*t*t2
		p.gy[h] = gphm*(t1+0.5*t3*yt) + gk*t2 + gphw*2*t1*t2*yw
		p.gyt[h], p.gys[h], p.gyw[h] = 0.5*gphm*t2, 0, gphw*t1*t1
		return
	}
	m1, k, m2 := p.phm[h], p.k[h], p.m2[h]
	// phw = max(m2 − m1² − k²ys, 0): no gradient through the clamped branch.
	if m2-m1*m1-k*k*ys < 0 {
		gphw = 0
	}
	gm1 := gphm - 2*m1*gphw
	gkk := gk - 2*k*ys*gphw
	var gy, gs float64
	for q, wq := range p.w {
		t := p.tq[q*p.hp+h]
		t1 := 1 - t*t
		t2 := -2 * t * t1
		b := wq * (gm1*t1 + gkk*t2 + gphw*2*t*t1)
		gy += b
		gs += b * p.z[q]
	}
	p.gy[h], p.gyt[h], p.gys[h], p.gyw[h] = gy, gs/(2*math.Sqrt(yt)), -k*k*gphw, 0
}

// backward accumulates into gsm, gsv the gradients of a scalar C with respect to the inputs, and into p those with
// respect to the weights (addWeightGrad adds them to the caller's), given ∂C/∂xm, ∂C/∂xv and (optional, out×in)
// ∂C/∂J, after forward at the same point and with the same weights. Keeping the weight gradients in the kernels'
// padded layouts over a block of time steps lets every unit take the kernels.
func (p *prop) backward(sm, sv, gxm, gxv, gJ, gsm, gsv []float64) {
	l := p.l
	// ∂C/∂J_ij over both paths: the given one and the output variance's Σ_j J_ij² sv_j.
	for i := range l.out {
		p.gbp[i] += gxm[i]
		p.gbvp[i] += gxv[i]
		if l.skip {
			gsm[i] += gxm[i]
		}
		for j := range l.in {
			ij := i*l.in + j
			jv := p.jx[ij]
			gsv[j] += gxv[i] * jv * jv
			g := 2 * gxv[i] * jv * sv[j]
			if gJ != nil {
				g += gJ[ij]
			}
			p.gj[ij] = g
		}
		p.gx[3*i], p.gx[3*i+1], p.gx[3*i+2] = gxm[i], gxv[i], 2*gxv[i]
	}
	// The output layer and the Jacobian, by units.
	clear(p.mt)
	if useAVX {
		for h := 0; h < l.hid; h += 4 {
			outputsBackBlock(&p.bp[h], &p.bvp[h], &p.gBp[h], &p.gBvp[h], &p.at[h], &p.mt[h], &p.k[h], &p.phm[h],
				&p.phw[h], &p.pv[h], &p.gphm[h], &p.gphv[h], &p.gphw[h], &p.gx[0], &p.gj[0], l.out, l.in, p.hp)
		}
	} else {
		for h := range l.hid {
			p.outputsBackUnit(h)
		}
	}
	// phv = k²ys + phw; then through the nonlinearity.
	for h := range l.hid {
		kh, gphv := p.k[h], p.gphv[h]
		p.gphw[h] += gphv
		gk := 2 * kh * p.ys[h] * gphv
		for j := range l.in {
			gk += p.mt[j*p.hp+h] * p.at[j*p.hp+h]
		}
		p.gk[h] = gk
	}
	if useAVX && p.mo == GaussHermite {
		for h := 0; h < l.hid; h += 4 {
			nonlinBackBlock(&p.tq[h], &p.w[0], &p.z[0], &p.phm[h], &p.k[h], &p.m2[h], &p.ys[h], &p.yt[h], &p.gphm[h],
				&p.gk[h], &p.gphw[h], &p.gy[h], &p.gyt[h], &p.gys[h], len(p.w), p.hp)
		}
	} else {
		for h := range l.hid {
			p.nonlinBack(h)
		}
	}
	// The first layer, and the inputs' gradients, which sum over the units in unit order: the kernel leaves each
	// unit's terms in ts.
	if useAVX {
		for h := 0; h < l.hid; h += 4 {
			unitsBackBlock(&p.at[h], &p.avt[h], &p.mt[h], &p.k[h], &p.gphv[h], &p.gy[h], &p.gyt[h], &p.gys[h],
				&p.gyw[h], &p.smq[0], &p.gap[h], &p.gavp[h], &p.gAt[h], &p.gAvt[h], &p.ts[0], l.in, p.hp)
			lanes := min(4, l.hid-h)
			for j := range l.in {
				t := p.ts[8*j : 8*j+8]
				for u := range lanes {
					gsm[j] += t[u]
					gsv[j] += t[4+u]
				}
			}
		}
	} else {
		for h := range l.hid {
			p.unitBack(h, gsm, gsv)
		}
	}
}

// outputsBackUnit is the backward pass of hidden unit h through the output layer x = B φ + b and the Jacobian
// J = B diag(k) A: it sums over the outputs i ∂C/∂phm, ∂C/∂phv, ∂C/∂phw into p.gphm, p.gphv, p.gphw, adds
// ∂C/∂B_ih and ∂C/∂Bv_ih, and adds Σ_i ∂C/∂J_ij B_ih to mt[j, h] (outputsBackBlock for four units).
func (p *prop) outputsBackUnit(h int) {
	l := p.l
	kh, phm, phw, pv := p.k[h], p.phm[h], p.phw[h], p.pv[h]
	var gphm, gphv, gphw float64
	for i := range l.out {
		gxm, gxv, gxv2 := p.gx[3*i], p.gx[3*i+1], p.gx[3*i+2]
		bih, bvih := p.bp[i*p.hp+h], p.bvp[i*p.hp+h]
		gphm += gxm*bih + 2*phm*gxv*bvih
		gphv += gxv * bvih
		gphw += gxv * bih * bih
		gbh := gxm*phm + gxv2*bih*phw
		for j, gij := range p.gj[i*l.in : (i+1)*l.in] {
			gbh += gij * kh * p.at[j*p.hp+h]
			p.mt[j*p.hp+h] += gij * bih
		}
		p.gBp[i*p.hp+h] += gbh
		p.gBvp[i*p.hp+h] += gxv * pv
	}
	p.gphm[h], p.gphv[h], p.gphw[h] = gphm, gphv, gphw
}

// unitBack is the backward pass of hidden unit h through the first layer y = A s + a: it adds ∂C/∂a_h, ∂C/∂av_h and
// unit h's row of ∂C/∂A and ∂C/∂Av, and its terms of ∂C/∂s̄ and ∂C/∂s̃ to gsm and gsv (unitsBackBlock for four
// units, their terms then added in unit order by backward).
func (p *prop) unitBack(h int, gsm, gsv []float64) {
	l := p.l
	kh, gy, gyt := p.k[h], p.gy[h], p.gyt[h]
	gys := kh*kh*p.gphv[h] + (p.gys[h] + gyt)
	gyw := p.gyw[h] + gyt
	p.gap[h] += gy
	p.gavp[h] += gyw
	for j := range l.in {
		jh := j*p.hp + h
		ahj, avhj := p.at[jh], p.avt[jh]
		sm, q, sv := p.smq[3*j], p.smq[3*j+1], p.smq[3*j+2]
		p.gAt[jh] += gy*sm + 2*gys*ahj*sv + p.mt[jh]*kh
		p.gAvt[jh] += gyw * q
		gsm[j] += gy*ahj + 2*gyw*avhj*sm
		gsv[j] += gyw*avhj + gys*ahj*ahj
	}
}

// addWeightGrad adds the weight gradients backward accumulated since the last call to gwm and gwv (in the weights'
// layout) and clears them.
func (p *prop) addWeightGrad(gwm, gwv []float64) {
	l := p.l
	gA, ga, gB, gb := l.split(gwm)
	gAv, gav, gBv, gbv := l.split(gwv)
	for h := range l.hid {
		ga[h] += p.gap[h]
		gav[h] += p.gavp[h]
		for j := range l.in {
			gA[h*l.in+j] += p.gAt[j*p.hp+h]
			gAv[h*l.in+j] += p.gAvt[j*p.hp+h]
		}
	}
	for i := range l.out {
		gb[i] += p.gbp[i]
		gbv[i] += p.gbvp[i]
		for h := range l.hid {
			gB[i*l.hid+h] += p.gBp[i*p.hp+h]
			gBv[i*l.hid+h] += p.gBvp[i*p.hp+h]
		}
	}
	for _, g := range [][]float64{p.gAt, p.gAvt, p.gap, p.gavp, p.gBp, p.gBvp, p.gbp, p.gbvp} {
		clear(g)
	}
}
