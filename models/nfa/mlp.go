package nfa

import (
	"math"

	"gonum.org/v1/gonum/integrate/quad"
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
// variance from the weights (independent across units), as in notes §4.2.5.
type prop struct {
	mo     Moments
	z, w   []float64 // quadrature nodes and weights for N(0, 1)
	l      layer
	y, yt  []float64 // per hidden unit: mean, total variance
	ys, yw []float64 // source-driven and weight ("extra") parts of the variance
	phm    []float64 // mean of tanh
	k      []float64 // slope (Taylor: tanh′(ȳ); GH: E tanh′(y))
	phw    []float64 // extra variance of tanh
	jx     []float64 // out×in Jacobian of the output mean path
	m      []float64 // hid×in scratch of the backward pass
}

func newProp(l layer, mo Moments, order int) *prop {
	p := &prop{mo: mo, l: l, y: make([]float64, l.hid), yt: make([]float64, l.hid), ys: make([]float64, l.hid),
		yw: make([]float64, l.hid), phm: make([]float64, l.hid), k: make([]float64, l.hid), phw: make([]float64, l.hid),
		jx: make([]float64, l.out*l.in), m: make([]float64, l.hid*l.in)}
	if mo == GaussHermite {
		p.z, p.w = GHNodes(order)
	}
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

// nonlin returns the mean, slope and extra variance of tanh(y) given ȳ, the total variance yt and its parts ys, yw.
func (p *prop) nonlin(y, yt, ys, yw float64) (phm, k, phw float64) {
	if p.mo == Taylor {
		t := math.Tanh(y)
		t1 := 1 - t*t
		t2 := -2 * t * t1
		return t + 0.5*t2*yt, t1, t1 * t1 * yw
	}
	s := math.Sqrt(yt)
	var m1, m2 float64
	for q, zq := range p.z {
		t := math.Tanh(y + s*zq)
		m1 += p.w[q] * t
		k += p.w[q] * (1 - t*t)
		m2 += p.w[q] * t * t
	}
	// Var tanh = E t² − (E t)²; the part k²·ys explained by the sources is tracked through the Jacobian. Under exact
	// integration Var tanh ≥ k²(ys + yw) ≥ k²ys (Stein's lemma and Cauchy–Schwarz), but a finite rule under a wide
	// N(ȳ, yt) can overestimate k (a node near the origin) and make the residual negative; it is clamped at 0 so that
	// no output variance is negative (a negative one makes F unbounded below).
	return m1, k, math.Max(m2-m1*m1-k*k*ys, 0)
}

// nonlinBack returns the gradients with respect to (ȳ, yt, ys, yw) given those with respect to (phm, k, phw). For
// Gauss–Hermite it differentiates the quadrature sum itself (nodes ȳ + √yt·z_q), so it is exact for the discrete rule.
func (p *prop) nonlinBack(y, yt, ys, yw, gphm, gk, gphw float64) (gy, gyt, gys, gyw float64) {
	if p.mo == Taylor {
		t := math.Tanh(y)
		t1 := 1 - t*t
		t2 := -2 * t * t1
		t3 := -2*t1*t1 - 2*t*t2
		gy = gphm*(t1+0.5*t3*yt) + gk*t2 + gphw*2*t1*t2*yw
		return gy, 0.5 * gphm * t2, 0, gphw * t1 * t1
	}
	s := math.Sqrt(yt)
	var m1, k, m2 float64
	for q, zq := range p.z {
		t := math.Tanh(y + s*zq)
		m1 += p.w[q] * t
		k += p.w[q] * (1 - t*t)
		m2 += p.w[q] * t * t
	}
	// phw = max(m2 − m1² − k²ys, 0): no gradient through the clamped branch.
	if m2-m1*m1-k*k*ys < 0 {
		gphw = 0
	}
	gm1 := gphm - 2*m1*gphw
	gkk := gk - 2*k*ys*gphw
	gys = -k * k * gphw
	var gs float64
	for q, zq := range p.z {
		t := math.Tanh(y + s*zq)
		t1 := 1 - t*t
		t2 := -2 * t * t1
		b := p.w[q] * (gm1*t1 + gkk*t2 + gphw*2*t*t1)
		gy += b
		gs += b * zq
	}
	return gy, gs / (2 * s), gys, 0
}

// forward maps input means sm and variances sv (independent inputs) to output means xm and variances xv, with
// weight means wm and variances wv; it leaves the per-unit quantities and the Jacobian in p for backward.
func (p *prop) forward(wm, wv, sm, sv, xm, xv []float64) {
	l := p.l
	A, a, B, b := l.split(wm)
	Av, av, Bv, bv := l.split(wv)
	for h := range l.hid {
		y, yw, ys := a[h], av[h], 0.0
		for j := range l.in {
			ah := A[h*l.in+j]
			y += ah * sm[j]
			yw += Av[h*l.in+j] * (sm[j]*sm[j] + sv[j])
			ys += ah * ah * sv[j]
		}
		p.y[h], p.yw[h], p.ys[h], p.yt[h] = y, yw, ys, ys+yw
		p.phm[h], p.k[h], p.phw[h] = p.nonlin(y, ys+yw, ys, yw)
	}
	for i := range l.out {
		Bi, Bvi := B[i*l.hid:(i+1)*l.hid], Bv[i*l.hid:(i+1)*l.hid]
		m, v := b[i], bv[i]
		for h := range l.hid {
			m += Bi[h] * p.phm[h]
			phv := p.k[h]*p.k[h]*p.ys[h] + p.phw[h]
			v += Bi[h]*Bi[h]*p.phw[h] + Bvi[h]*(p.phm[h]*p.phm[h]+phv)
		}
		J := p.jx[i*l.in : (i+1)*l.in]
		for j := range l.in {
			var s float64
			for h := range l.hid {
				s += Bi[h] * p.k[h] * A[h*l.in+j]
			}
			if l.skip && i == j {
				s++
			}
			J[j] = s
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
	// Output layer: gJx = ∂C/∂J + 2 gxv_i J_ij sv_j (stored in p.jx's place is not possible; use m as hid×in scratch).
	clear(p.m)
	gjx := func(i, j int) float64 {
		g := 2 * gxv[i] * p.jx[i*l.in+j] * sv[j]
		if gJ != nil {
			g += gJ[i*l.in+j]
		}
		return g
	}
	for i := range l.out {
		gb[i] += gxm[i]
		gbv[i] += gxv[i]
		if l.skip {
			gsm[i] += gxm[i]
		}
		for j := range l.in {
			jv := p.jx[i*l.in+j]
			gsv[j] += gxv[i] * jv * jv
		}
	}
	for h := range l.hid {
		var gphm, gphv, gphw float64
		for i := range l.out {
			bih, bvih := B[i*l.hid+h], Bv[i*l.hid+h]
			gphm += gxm[i]*bih + 2*p.phm[h]*gxv[i]*bvih
			gphv += gxv[i] * bvih
			gphw += gxv[i] * bih * bih
			phv := p.k[h]*p.k[h]*p.ys[h] + p.phw[h]
			gbh := gxm[i]*p.phm[h] + 2*gxv[i]*bih*p.phw[h]
			for j := range l.in {
				gji := gjx(i, j)
				gbh += gji * p.k[h] * A[h*l.in+j]
				p.m[h*l.in+j] += gji * bih
			}
			gB[i*l.hid+h] += gbh
			gBv[i*l.hid+h] += gxv[i] * (p.phm[h]*p.phm[h] + phv)
		}
		// phv = k²ys + phw.
		gphw += gphv
		gk := 2 * p.k[h] * p.ys[h] * gphv
		gys := p.k[h] * p.k[h] * gphv
		for j := range l.in {
			gk += p.m[h*l.in+j] * A[h*l.in+j]
		}
		gy, gyt, gys2, gyw := p.nonlinBack(p.y[h], p.yt[h], p.ys[h], p.yw[h], gphm, gk, gphw)
		gys += gys2 + gyt
		gyw += gyt
		ga[h] += gy
		gav[h] += gyw
		for j := range l.in {
			hj := h*l.in + j
			gA[hj] += gy*sm[j] + 2*gys*A[hj]*sv[j] + p.m[hj]*p.k[h]
			gAv[hj] += gyw * (sm[j]*sm[j] + sv[j])
			gsm[j] += gy*A[hj] + 2*gyw*Av[hj]*sm[j]
			gsv[j] += gyw*Av[hj] + gys*A[hj]*A[hj]
		}
	}
}
