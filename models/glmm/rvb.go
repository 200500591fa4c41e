package glmm

import (
	"fmt"
	"math"
)

// Reparam is the GLMM after the local reparametrisation of "reparametrised VB" (RVB, Tan 2021, as used for the
// RVB rows of paper 003 Table 6, §8.2): each random effect becomes b_i = λ_i(θ_G) + L_i(θ_G) b̃_i, where
// N(λ_i, L_iL_iᵀ) is the Gaussian from a second-order Taylor expansion of log p(y_i | b_i, β) + log p(b_i | ω) in
// b_i. VB then fits q(b̃_1) ⋯ q(b̃_n) q(θ_G), a block-diagonal covariance (Alg 1c: cholng.Block with the sizes of
// BlockSizes). θ̃ = (b̃_1, …, b̃_n, β, ω) and the log joint is that of Model at b(θ̃) plus the Jacobian Σ_i log|L_i|.
//
// [INFERRED] Our copy of paper 003 does not give the expansion point or the closed forms, so
// two points are offered; neither is known to be Tan's RVB1 or RVB2. Both are exact changes of variables, so the
// ELBO is of the same posterior and L̂ is comparable with the GVA fits; they differ in how much posterior dependence
// between b̃_i and θ_G is left for the block-diagonal family.
//   - AtMode false (zero): expand at b_i = 0, in closed form. With η⁰ = X_iβ, w⁰ = μ′(η⁰) and g_i = Z_iᵀ(y_i −
//     μ(η⁰)): Λ_i = Z_iᵀdiag(w⁰)Z_i + WWᵀ = R_iR_iᵀ, λ_i = Λ_i⁻¹g_i (one Newton step from 0), L_i = R_i⁻ᵀ, so
//     b_i = R_i⁻ᵀ(R_i⁻¹g_i + b̃_i).
//   - AtMode true: expand at the conditional mode b̂_i(θ_G) of log p(y_i | b_i, β) + log p(b_i | ω) (damped Newton
//     from 0 to convergence), λ_i = b̂_i, Λ_i = Z_iᵀdiag(μ′(η̂))Z_i + WWᵀ at η̂ = X_iβ + Z_ib̂_i (the Laplace
//     approximation), b_i = b̂_i + R_i⁻ᵀb̃_i; ∂b̂_i/∂θ_G by the implicit function theorem.
//
// In both log|L_i| = −Σ_k log R_i,kk. The gradient is the adjoint of these steps, with the Cholesky adjoint
// R̄ ↦ Λ̄ = sym(R⁻ᵀΦ(RᵀR̄)R⁻¹), Φ = lower triangle with the diagonal halved.
type Reparam struct {
	*Model
	AtMode                 bool
	bh                     [][]float64 // the expansion points b̂_i (AtMode)
	b, gb                  []float64   // b(θ̃) and ∇_b log p at it (length n·r)
	th, gr                 []float64   // the original θ and its gradient
	rs                     [][]float64
	lam, rr, rbar, tmp, sv []float64 // r×r and r work
	t, gv, s, sbar, tmp2   []float64
}

// NewReparam wraps m.
func NewReparam(m *Model) *Reparam {
	r, nr := m.R, m.N*m.R
	q := &Reparam{Model: m, b: make([]float64, nr), gb: make([]float64, nr), th: make([]float64, m.Dim()),
		gr: make([]float64, m.Dim()), rs: make([][]float64, m.N), bh: make([][]float64, m.N)}
	for i := range q.rs {
		q.rs[i] = make([]float64, r*r)
		q.bh[i] = make([]float64, r)
	}
	q.lam, q.rr, q.rbar, q.tmp = make([]float64, r*r), make([]float64, r*r), make([]float64, r*r), make([]float64, r*r)
	q.sv, q.t, q.gv, q.s, q.sbar, q.tmp2 = make([]float64, r), make([]float64, r), make([]float64, r), make([]float64, r), make([]float64, r), make([]float64, r)
	return q
}

// BlockSizes is the block structure of the RVB family: n blocks of r (the b̃_i) and one of d_G (θ_G).
func (q *Reparam) BlockSizes() []int { return append(q.Groups(), q.GlobalDim()) }

// meanWeight returns μ(η), μ′(η) = w and w′(η) for the family.
func (q *Reparam) meanWeight(eta float64) (mu, w, dw float64) {
	if q.Fam == Poisson {
		e := math.Exp(eta)
		return e, e, e
	}
	var p float64
	if eta > 0 {
		p = 1 / (1 + math.Exp(-eta))
	} else {
		e := math.Exp(eta)
		p = e / (1 + e)
	}
	w = p * (1 - p)
	return p, w, w * (1 - 2*p)
}

// Transform writes b(θ̃) for the groups into b (length n·r) and returns Σ_i log|L_i|.
func (q *Reparam) Transform(tht, b []float64) (float64, error) {
	n, p, r := q.N, q.P, q.R
	if len(tht) != q.Dim() || len(b) != n*r {
		return 0, fmt.Errorf("%w: θ̃ has %d entries, b %d; want %d and %d", ErrData, len(tht), len(b), q.Dim(), n*r)
	}
	beta, omega := tht[n*r:n*r+p], tht[n*r+p:]
	om := BFromOmega(r, omega)
	ld := 0.0
	for i := 0; i < n; i++ {
		l, err := q.local(i, beta, om, tht[i*r:(i+1)*r], b[i*r:(i+1)*r])
		if err != nil {
			return 0, err
		}
		ld += l
	}
	return ld, nil
}

// eta is x_oᵀβ + z_oᵀbh.
func (q *Reparam) eta(o int, beta, bh []float64) float64 {
	p, r := q.P, q.R
	e := 0.0
	for j, v := range q.X[o*p : (o+1)*p] {
		e += v * beta[j]
	}
	for k, v := range q.Z[o*r : (o+1)*r] {
		e += v * bh[k]
	}
	return e
}

// phi is log p(y_i | b, β) + log p(b | ω) up to constants: the objective of the mode search.
func (q *Reparam) phi(i int, beta, om, b []float64) float64 {
	r := q.R
	s := 0.0
	for o := q.Start[i]; o < q.Start[i+1]; o++ {
		e := q.eta(o, beta, b)
		if q.Fam == Poisson {
			s += q.Y[o]*e - math.Exp(e)
		} else {
			s += q.Y[o]*e - softplus(e)
		}
	}
	for a := 0; a < r; a++ {
		for c := 0; c < r; c++ {
			s -= 0.5 * b[a] * om[a*r+c] * b[c]
		}
	}
	return s
}

func softplus(e float64) float64 {
	if e > 0 {
		return e + math.Log1p(math.Exp(-e))
	}
	return math.Log1p(math.Exp(e))
}

// mode finds b̂_i by Newton's method with step halving (φ is strictly concave: canonical links and a Gaussian
// prior), from 0, until a Newton step is below 1e-11(1 + |b̂_a|) in every coordinate.
func (q *Reparam) mode(i int, beta, om []float64) error {
	r := q.R
	bh, lam, g, st, R := q.bh[i], q.lam, q.t, q.s, q.rr
	clear(bh)
	f0 := q.phi(i, beta, om, bh)
	for it := 0; it < 200; it++ {
		copy(lam, om)
		for a := 0; a < r; a++ {
			v := 0.0
			for c := 0; c < r; c++ {
				v -= om[a*r+c] * bh[c]
			}
			g[a] = v
		}
		for o := q.Start[i]; o < q.Start[i+1]; o++ {
			mu, w, _ := q.meanWeight(q.eta(o, beta, bh))
			z := q.Z[o*r : (o+1)*r]
			for a := 0; a < r; a++ {
				g[a] += (q.Y[o] - mu) * z[a]
				for c := 0; c < r; c++ {
					lam[a*r+c] += w * z[a] * z[c]
				}
			}
		}
		if !cholLower(R, lam, r) {
			return fmt.Errorf("%w: group %d: the local precision is not positive definite", ErrData, i)
		}
		copy(st, g)
		fwdSolve(R, r, st)
		bwdSolve(R, r, st)
		big := 0.0
		for a := 0; a < r; a++ {
			big = max(big, math.Abs(st[a])/(1+math.Abs(bh[a])))
		}
		if big <= 1e-11 {
			return nil
		}
		if big < 1e-4 { // the quadratic phase: take the full step (φ differences are at rounding level here)
			for a := 0; a < r; a++ {
				bh[a] += st[a]
			}
			f0 = q.phi(i, beta, om, bh)
			continue
		}
		for t := 1.0; ; t /= 2 {
			for a := 0; a < r; a++ {
				q.sv[a] = bh[a] + t*st[a]
			}
			if f := q.phi(i, beta, om, q.sv); f >= f0 || t < 1e-10 {
				f0 = f
				copy(bh, q.sv)
				break
			}
		}
	}
	return fmt.Errorf("%w: group %d: the conditional mode search did not converge", ErrData, i)
}

// local computes group i's R (into q.rs[i]) and b: zero, b = R⁻ᵀ(R⁻¹g + b̃); AtMode, b = b̂ + R⁻ᵀb̃. It returns
// log|L_i| = −Σ log R_kk.
func (q *Reparam) local(i int, beta, om, bt, b []float64) (float64, error) {
	r := q.R
	lam, g := q.lam, q.t
	bh := q.bh[i]
	if q.AtMode {
		if err := q.mode(i, beta, om); err != nil {
			return 0, err
		}
	} else {
		clear(bh)
	}
	copy(lam, om)
	clear(g)
	for o := q.Start[i]; o < q.Start[i+1]; o++ {
		z := q.Z[o*r : (o+1)*r]
		mu, w, _ := q.meanWeight(q.eta(o, beta, bh))
		for a := 0; a < r; a++ {
			g[a] += (q.Y[o] - mu) * z[a]
			for c := 0; c < r; c++ {
				lam[a*r+c] += w * z[a] * z[c]
			}
		}
	}
	R := q.rs[i]
	if !cholLower(R, lam, r) {
		return 0, fmt.Errorf("%w: group %d: the local precision is not positive definite", ErrData, i)
	}
	ld := 0.0
	for a := 0; a < r; a++ {
		ld -= math.Log(R[a*r+a])
	}
	if q.AtMode {
		copy(b, bt)
		bwdSolve(R, r, b)
		for a := 0; a < r; a++ {
			b[a] += bh[a]
		}
		return ld, nil
	}
	fwdSolve(R, r, g) // t = R⁻¹g
	for a := 0; a < r; a++ {
		b[a] = g[a] + bt[a]
	}
	bwdSolve(R, r, b) // b = R⁻ᵀ s
	return ld, nil
}

// LogJoint returns log p̃(y, θ̃) = log p(y, b(θ̃), θ_G) + Σ_i log|L_i| and writes its gradient.
func (q *Reparam) LogJoint(tht, grad []float64) float64 {
	n, p, r := q.N, q.P, q.R
	nr := n * r
	ld, err := q.Transform(tht, q.b)
	if err != nil {
		return math.Inf(-1)
	}
	copy(q.th, q.b)
	copy(q.th[nr:], tht[nr:])
	lp := q.Model.LogJoint(q.th, q.gr) + ld
	beta, omega := tht[nr:nr+p], tht[nr+p:]
	gbeta := grad[nr : nr+p]
	copy(grad[nr:], q.gr[nr:]) // the direct dependence on θ_G
	omBar := make([]float64, r*r)
	for i := 0; i < n; i++ {
		q.adjoint(i, tht[i*r:(i+1)*r], beta, grad[i*r:(i+1)*r], gbeta, omBar)
	}
	// Ω = WWᵀ: W̄ = 2Ω̄W; ω̄_kl = W̄_kl (k > l), ω̄_kk = W̄_kk W_kk.
	w := wFromOmega(r, omega)
	for l := 0; l < r; l++ {
		for k := l; k < r; k++ {
			wb := 0.0
			for c := 0; c < r; c++ {
				wb += 2 * omBar[k*r+c] * w[c*r+l]
			}
			if k == l {
				wb *= w[k*r+k]
			}
			grad[nr+p+OmegaIndex(r, k, l)] += wb
		}
	}
	return lp
}

// LogDensity implements model.Density: LogJoint with the gradient first.
func (q *Reparam) LogDensity(grad, th []float64) (float64, error) { return q.LogJoint(th, grad), nil }

// adjoint adds group i's contributions to ∇_β (gbeta) and to Ω̄ (omBar, w.r.t. Ω = WWᵀ) and writes ∇_{b̃_i} into
// gbt, given ∇_b log p in q.gr.
func (q *Reparam) adjoint(i int, bt, beta, gbt, gbeta, omBar []float64) {
	r := q.R
	R, b, bh := q.rs[i], q.b[i*r:(i+1)*r], q.bh[i]
	t, sbar, gv := q.s, q.sbar, q.gv
	copy(sbar, q.gr[i*r:(i+1)*r])
	fwdSolve(R, r, sbar) // s̄ = R⁻¹ḃ: the gradient in b̃_i (b = … + R⁻ᵀb̃)
	copy(gbt, sbar)
	// R̄ = −u s̄ᵀ (− ḡ tᵀ for zero) (lower) − diag(1/R_kk), with u = R⁻ᵀ(·) the vector R⁻ᵀ acts on.
	if q.AtMode {
		for a := 0; a < r; a++ {
			t[a] = b[a] - bh[a] // u = R⁻ᵀb̃
		}
	} else {
		for a := 0; a < r; a++ { // t = R⁻¹g = Rᵀb − b̃ (from b = R⁻ᵀ(t + b̃))
			v := 0.0
			for c := a; c < r; c++ {
				v += R[c*r+a] * b[c]
			}
			t[a] = v - bt[a]
		}
		copy(gv, sbar)
		bwdSolve(R, r, gv) // ḡ = R⁻ᵀs̄
	}
	rbar := q.rbar
	for a := 0; a < r; a++ {
		for c := 0; c <= a; c++ {
			if q.AtMode {
				rbar[a*r+c] = -t[a] * sbar[c]
			} else {
				rbar[a*r+c] = -b[a]*sbar[c] - gv[a]*t[c]
			}
		}
		for c := a + 1; c < r; c++ {
			rbar[a*r+c] = 0
		}
		rbar[a*r+a] -= 1 / R[a*r+a]
	}
	lbar := q.cholAdjoint(R, rbar)
	for k := range omBar {
		omBar[k] += lbar[k]
	}
	bhBar := q.tmp2
	copy(bhBar, q.gr[i*r:(i+1)*r]) // b = b̂ + …: ḃ flows into b̂ (AtMode)
	p := q.P
	for o := q.Start[i]; o < q.Start[i+1]; o++ {
		x, z := q.X[o*p:(o+1)*p], q.Z[o*r:(o+1)*r]
		_, w, dw := q.meanWeight(q.eta(o, beta, bh))
		muBar, wBar := 0.0, 0.0
		for a := 0; a < r; a++ {
			if !q.AtMode {
				muBar -= z[a] * gv[a] // g = Σ (y − μ) z
			}
			for c := 0; c < r; c++ {
				wBar += z[a] * lbar[a*r+c] * z[c] // Λ = Σ w z zᵀ + Ω
			}
		}
		etaBar := w*muBar + dw*wBar
		for j, v := range x {
			gbeta[j] += etaBar * v
		}
		if q.AtMode {
			for a := 0; a < r; a++ {
				bhBar[a] += etaBar * z[a] // η̂ = xᵀβ + zᵀb̂
			}
		}
	}
	if !q.AtMode {
		return
	}
	// Implicit function theorem at F(b̂, θ_G) = Zᵀ(y − μ(η̂)) − Ωb̂ = 0, ∂F/∂b̂ = −Λ: with v = Λ⁻¹ b̂̄,
	// β̄ += −Xᵀdiag(w)Zv and Ω̄ += −sym(v b̂ᵀ).
	v := bhBar
	fwdSolve(R, r, v)
	bwdSolve(R, r, v)
	for o := q.Start[i]; o < q.Start[i+1]; o++ {
		x, z := q.X[o*p:(o+1)*p], q.Z[o*r:(o+1)*r]
		_, w, _ := q.meanWeight(q.eta(o, beta, bh))
		zv := 0.0
		for a := 0; a < r; a++ {
			zv += z[a] * v[a]
		}
		for j, xv := range x {
			gbeta[j] -= w * zv * xv
		}
	}
	for a := 0; a < r; a++ {
		for c := 0; c < r; c++ {
			omBar[a*r+c] -= 0.5 * (v[a]*bh[c] + bh[a]*v[c])
		}
	}
}

// cholAdjoint returns Λ̄ = sym(R⁻ᵀ Φ(RᵀR̄) R⁻¹) for Λ = RRᵀ (R lower, r×r row-major): with dΛ symmetric,
// R⁻¹dΛR⁻ᵀ = X + Xᵀ for X = R⁻¹dR lower, so dR = RΦ(R⁻¹dΛR⁻ᵀ) and ⟨R̄, dR⟩ = ⟨R⁻ᵀΦ(RᵀR̄)R⁻¹, dΛ⟩.
func (q *Reparam) cholAdjoint(R, rbar []float64) []float64 {
	r := q.R
	a := q.tmp
	for i := 0; i < r; i++ { // Φ(RᵀR̄)
		for j := 0; j < r; j++ {
			v := 0.0
			if j <= i {
				for k := i; k < r; k++ {
					v += R[k*r+i] * rbar[k*r+j]
				}
				if i == j {
					v /= 2
				}
			}
			a[i*r+j] = v
		}
	}
	col := q.sv
	for j := 0; j < r; j++ { // A ← R⁻ᵀ A (column by column)
		for i := 0; i < r; i++ {
			col[i] = a[i*r+j]
		}
		bwdSolve(R, r, col)
		for i := 0; i < r; i++ {
			a[i*r+j] = col[i]
		}
	}
	for i := 0; i < r; i++ { // A ← A R⁻¹: rows solve xR = row, i.e. Rᵀxᵀ = rowᵀ
		copy(col, a[i*r:(i+1)*r])
		bwdSolve(R, r, col)
		copy(a[i*r:(i+1)*r], col)
	}
	out := make([]float64, r*r)
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			out[i*r+j] = 0.5 * (a[i*r+j] + a[j*r+i])
		}
	}
	return out
}

// cholLower writes the lower Cholesky factor of the r×r SPD a into l; false if a is not positive definite.
func cholLower(l, a []float64, r int) bool {
	clear(l)
	for j := 0; j < r; j++ {
		s := a[j*r+j]
		for k := 0; k < j; k++ {
			s -= l[j*r+k] * l[j*r+k]
		}
		if !(s > 0) {
			return false
		}
		l[j*r+j] = math.Sqrt(s)
		for i := j + 1; i < r; i++ {
			v := a[i*r+j]
			for k := 0; k < j; k++ {
				v -= l[i*r+k] * l[j*r+k]
			}
			l[i*r+j] = v / l[j*r+j]
		}
	}
	return true
}

// fwdSolve sets x ← L⁻¹x; bwdSolve sets x ← L⁻ᵀx (L lower, r×r row-major).
func fwdSolve(l []float64, r int, x []float64) {
	for i := 0; i < r; i++ {
		v := x[i]
		for k := 0; k < i; k++ {
			v -= l[i*r+k] * x[k]
		}
		x[i] = v / l[i*r+i]
	}
}

func bwdSolve(l []float64, r int, x []float64) {
	for i := r - 1; i >= 0; i-- {
		v := x[i]
		for k := i + 1; k < r; k++ {
			v -= l[k*r+i] * x[k]
		}
		x[i] = v / l[i*r+i]
	}
}
