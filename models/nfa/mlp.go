package nfa

import (
	"math"

	"gonum.org/v1/gonum/integrate/quad"

	"github.com/geovb/geovb/internal/vmath"
)

// Moments picks how the mean and variance of tanh(y), y ~ N(ȳ, ỹ), are approximated (notes §4.2.5).
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
// the NSSM prior mean h(s) = s + g(s) (eq. 34, notes §4.2.4). Weights are stored as (A, a, B, b), row-major.
type layer struct {
	in, hid, out int
	skip         bool
}

func (l layer) size() int { return l.hid*l.in + l.hid + l.out*l.hid + l.out }

func (l layer) split(w []float64) (A, a, B, b []float64) {
	i := l.hid * l.in
	A, a = w[:i], w[i:i+l.hid]
	i += l.hid
	B, b = w[i:i+l.out*l.hid], w[i+l.out*l.hid:i+l.out*l.hid+l.out]
	return
}

// prop propagates Gaussian moments through one MLP. For every hidden unit it tracks the mean, the source-driven
// variance (through the Jacobian with respect to the inputs, which are shared between units) and the "extra"
// variance from the weights (independent across units), as in notes §4.2.5. forward leaves the per-unit values,
// the tanh at every quadrature node and the Jacobian in p, and backward (at the same point) reads them back instead
// of evaluating tanh again.
type prop struct {
	mo     Moments
	z, w   []float64 // quadrature nodes and weights for N(0, 1)
	l      layer
	y, yt  []float64 // per hidden unit: mean, total variance
	ys, yw []float64 // source-driven and weight ("extra") parts of the variance
	phm    []float64 // mean of tanh
	k      []float64 // slope (Taylor: tanh′(ȳ); GH: E tanh′(y))
	phw    []float64 // extra variance of tanh
	m2     []float64 // GH: E tanh² (the unclamped residual is m2 − phm² − k²ys)
	pv     []float64 // E φ² = phm² + k²ys + phw, the factor of the output variance's weight part
	tq     []float64 // hid × nodes: tanh at each node (Taylor: tanh(ȳ), one per unit)
	jx     []float64 // out×in Jacobian of the output mean path
	bk     []float64 // out×hid: B_ih k_h, the Jacobian's left factor
	gj     []float64 // out×in: ∂C/∂J of the backward pass, all paths
	m      []float64 // hid×in scratch of the backward pass
}

func newProp(l layer, mo Moments, order int) *prop {
	p := &prop{mo: mo, l: l, y: make([]float64, l.hid), yt: make([]float64, l.hid), ys: make([]float64, l.hid),
		yw: make([]float64, l.hid), phm: make([]float64, l.hid), k: make([]float64, l.hid), phw: make([]float64, l.hid),
		m2: make([]float64, l.hid), pv: make([]float64, l.hid), jx: make([]float64, l.out*l.in),
		bk: make([]float64, l.out*l.hid), gj: make([]float64, l.out*l.in), m: make([]float64, l.hid*l.in)}
	nq := 1
	if mo == GaussHermite {
		p.z, p.w = GHNodes(order)
		nq = order
	}
	p.tq = make([]float64, l.hid*nq)
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

// nodes writes tanh(ȳ_h + √ỹ_h·z_q) at every Gauss–Hermite node of every unit into tq, in one call of vmath.Tanh
// (four lanes at a time, within 4 ulps; the tanh calls were most of a pass's time).
func (p *prop) nodes() {
	nq := len(p.z)
	for h, y := range p.y {
		s := math.Sqrt(p.yt[h])
		for q, zq := range p.z {
			p.tq[h*nq+q] = y + s*zq
		}
	}
	vmath.Tanh(p.tq, p.tq, 1, math.Tanh)
}

// nonlin returns the mean, slope and extra variance of tanh(y) given ȳ, the total variance yt and its parts ys, yw,
// and keeps for nonlinBack tanh(ȳ) of unit h (Taylor) or its E tanh² (Gauss–Hermite, from the tanh values that
// nodes left at its nodes).
func (p *prop) nonlin(h int, y, yt, ys, yw float64) (phm, k, phw float64) {
	if p.mo == Taylor {
		t := math.Tanh(y)
		p.tq[h] = t
		t1 := 1 - t*t
		t2 := -2 * t * t1
		return t + 0.5*t2*yt, t1, t1 * t1 * yw
	}
	var m1, m2 float64
	for q, t := range p.tq[h*len(p.z) : (h+1)*len(p.z)] {
		m1 += p.w[q] * t
		k += p.w[q] * (1 - t*t)
		m2 += p.w[q] * t * t
	}
	p.m2[h] = m2
	// Var tanh = E t² − (E t)²; the part k²·ys explained by the sources is tracked through the Jacobian. Under exact
	// integration Var tanh ≥ k²(ys + yw) ≥ k²ys (Stein's lemma and Cauchy–Schwarz), but a finite rule under a wide
	// N(ȳ, yt) can overestimate k (a node near the origin) and make the residual negative; it is clamped at 0 so that
	// no output variance is negative (a negative one makes F unbounded below).
	return m1, k, math.Max(m2-m1*m1-k*k*ys, 0)
}

// nonlinBack returns the gradients with respect to (ȳ, yt, ys, yw) of unit h given those with respect to (phm, k,
// phw), from the values nonlin left at the same point. For Gauss–Hermite it differentiates the quadrature sum itself
// (nodes ȳ + √yt·z_q), so it is exact for the discrete rule.
func (p *prop) nonlinBack(h int, gphm, gk, gphw float64) (gy, gyt, gys, gyw float64) {
	yt, ys, yw := p.yt[h], p.ys[h], p.yw[h]
	if p.mo == Taylor {
		t := p.tq[h]
		t1 := 1 - t*t
		t2 := -2 * t * t1
		t3 := -2*t1*t1 - 2*t*t2
		gy = gphm*(t1+0.5*t3*yt) + gk*t2 + gphw*2*t1*t2*yw
		return gy, 0.5 * gphm * t2, 0, gphw * t1 * t1
	}
	m1, k, m2 := p.phm[h], p.k[h], p.m2[h]
	// phw = max(m2 − m1² − k²ys, 0): no gradient through the clamped branch.
	if m2-m1*m1-k*k*ys < 0 {
		gphw = 0
	}
	gm1 := gphm - 2*m1*gphw
	gkk := gk - 2*k*ys*gphw
	gys = -k * k * gphw
	var gs float64
	for q, t := range p.tq[h*len(p.z) : (h+1)*len(p.z)] {
		t1 := 1 - t*t
		t2 := -2 * t * t1
		b := p.w[q] * (gm1*t1 + gkk*t2 + gphw*2*t*t1)
		gy += b
		gs += b * p.z[q]
	}
	return gy, gs / (2 * math.Sqrt(yt)), gys, 0
}

// forward maps input means sm and variances sv (independent inputs) to output means xm and variances xv, with
// weight means wm and variances wv; it leaves the per-unit quantities and the Jacobian in p for backward.
func (p *prop) forward(wm, wv, sm, sv, xm, xv []float64) {
	l := p.l
	A, a, B, b := l.split(wm)
	Av, av, Bv, bv := l.split(wv)
	for h := range l.hid {
		Ah, Avh := A[h*l.in:(h+1)*l.in], Av[h*l.in:(h+1)*l.in]
		y, yw, ys := a[h], av[h], 0.0
		for j, ah := range Ah {
			y += ah * sm[j]
			yw += Avh[j] * (sm[j]*sm[j] + sv[j])
			ys += ah * ah * sv[j]
		}
		p.y[h], p.yw[h], p.ys[h], p.yt[h] = y, yw, ys, ys+yw
	}
	if p.mo == GaussHermite {
		p.nodes()
	}
	for h, y := range p.y {
		ys := p.ys[h]
		phm, k, phw := p.nonlin(h, y, p.yt[h], ys, p.yw[h])
		p.phm[h], p.k[h], p.phw[h], p.pv[h] = phm, k, phw, phm*phm+(k*k*ys+phw)
	}
	for i := range l.out {
		Bi, Bvi := B[i*l.hid:(i+1)*l.hid], Bv[i*l.hid:(i+1)*l.hid]
		bk := p.bk[i*l.hid : (i+1)*l.hid]
		m, v := b[i], bv[i]
		for h, bih := range Bi {
			m += bih * p.phm[h]
			v += bih*bih*p.phw[h] + Bvi[h]*p.pv[h]
			bk[h] = bih * p.k[h]
		}
		// J = (B diag k) A, plus the identity of the skip.
		J := p.jx[i*l.in : (i+1)*l.in]
		rowTimes(J, bk, A)
		if l.skip {
			J[i]++
		}
		for j, s := range J {
			v += s * s * sv[j]
		}
		if l.skip {
			m += sm[i]
		}
		xm[i], xv[i] = m, v
	}
}

// backward accumulates into gwm, gwv, gsm, gsv the gradients of a scalar C given ∂C/∂xm, ∂C/∂xv and (optional,
// out×in) ∂C/∂J, after forward at the same point.
func (p *prop) backward(wm, wv, sm, sv, gxm, gxv, gJ, gwm, gwv, gsm, gsv []float64) {
	l := p.l
	A, _, B, _ := l.split(wm)
	Av, _, Bv, _ := l.split(wv)
	gA, ga, gB, gb := l.split(gwm)
	gAv, gav, gBv, gbv := l.split(gwv)
	// ∂C/∂J_ij over both paths: the given one and the output variance's Σ_j J_ij² sv_j.
	for i := range l.out {
		gb[i] += gxm[i]
		gbv[i] += gxv[i]
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
	}
	clear(p.m)
	for h := range l.hid {
		kh := p.k[h]
		Ah, mh := A[h*l.in:(h+1)*l.in], p.m[h*l.in:(h+1)*l.in]
		var gphm, gphv, gphw float64
		for i := range l.out {
			bih, bvih := B[i*l.hid+h], Bv[i*l.hid+h]
			gphm += gxm[i]*bih + 2*p.phm[h]*gxv[i]*bvih
			gphv += gxv[i] * bvih
			gphw += gxv[i] * bih * bih
			gbh := gxm[i]*p.phm[h] + 2*gxv[i]*bih*p.phw[h]
			for j, gij := range p.gj[i*l.in : (i+1)*l.in] {
				gbh += gij * kh * Ah[j]
				mh[j] += gij * bih
			}
			gB[i*l.hid+h] += gbh
			gBv[i*l.hid+h] += gxv[i] * p.pv[h]
		}
		// phv = k²ys + phw.
		gphw += gphv
		gk := 2 * kh * p.ys[h] * gphv
		gys := kh * kh * gphv
		for j, ahj := range Ah {
			gk += mh[j] * ahj
		}
		gy, gyt, gys2, gyw := p.nonlinBack(h, gphm, gk, gphw)
		gys += gys2 + gyt
		gyw += gyt
		ga[h] += gy
		gav[h] += gyw
		for j, ahj := range Ah {
			hj := h*l.in + j
			gA[hj] += gy*sm[j] + 2*gys*ahj*sv[j] + mh[j]*kh
			gAv[hj] += gyw * (sm[j]*sm[j] + sv[j])
			gsm[j] += gy*ahj + 2*gyw*Av[hj]*sm[j]
			gsv[j] += gyw*Av[hj] + gys*ahj*ahj
		}
	}
}

// rowTimes writes cᵀA into dst, A being len(c)×len(dst) row-major: a row of the Jacobian B diag(k) A of every step.
// It keeps four columns' sums in registers rather than storing each partial sum; every element is still summed over
// the rows in order, so the bits are those of one column at a time.
func rowTimes(dst, c, A []float64) {
	n := len(dst)
	j := 0
	for ; j+4 <= n; j += 4 {
		var s0, s1, s2, s3 float64
		for h, ch := range c {
			a := A[h*n+j : h*n+j+4 : h*n+j+4]
			s0 += ch * a[0]
			s1 += ch * a[1]
			s2 += ch * a[2]
			s3 += ch * a[3]
		}
		dst[j], dst[j+1], dst[j+2], dst[j+3] = s0, s1, s2, s3
	}
	for ; j < n; j++ {
		var s float64
		for h, ch := range c {
			s += ch * A[h*n+j]
		}
		dst[j] = s
	}
}
