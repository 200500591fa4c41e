// Package glmm is the generalized linear mixed models of paper 003 §8.2: y_ij in an exponential family
// with link η_ij = X_ijᵀβ + Z_ijᵀb_i, b_i ~ N(0, B⁻¹), β ~ N(0, σ_β²I) with σ_β = 10, B ~ Wishart(ν, S) with the
// Kass–Natarajan default ν and S (KassNatarajan), and the unconstrained ω transformation B = WWᵀ, W lower with
// W_kk = exp(ω_kk) (ω = vech W*). θ = (b_1, …, b_n, β, ω) is the local–global layout of eq. (10) that Alg 2c
// (cholng.Arrow) expects: n blocks of size r and a global block of size d_G = p + r(r+1)/2.
//
// The log joint keeps every constant, including −Σ log y! for Poisson (the paper's positive Epilepsy
// values drop it, and an unexplained offset remains [OPEN]; LogFactorial reports the dropped sum).
package glmm

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/datasets"
)

// Family is the response distribution with its canonical link.
type Family int

const (
	// Poisson has the log link: ℓ = yη − e^η − log y!.
	Poisson Family = iota + 1
	// Bernoulli has the logit link: ℓ = yη − log(1 + e^η).
	Bernoulli
)

func (f Family) String() string {
	switch f {
	case Poisson:
		return "poisson"
	case Bernoulli:
		return "bernoulli"
	}
	return fmt.Sprintf("Family(%d)", int(f))
}

// Model is a GLMM with contiguous groups: the observations of group i are Start[i] … Start[i+1]−1.
type Model struct {
	Fam       Family
	N, P, R   int       // groups, fixed effects, random effects per group
	X, Z, Y   []float64 // nobs×P and nobs×R row-major; responses
	Start     []int     // length N+1
	Nu        float64   // Wishart degrees of freedom (ν > R − 1)
	S         []float64 // Wishart scale (R×R row-major, SPD): E[B] = νS
	SigmaBeta float64

	sinv   []float64 // S⁻¹
	cW     float64   // −(νr/2)log 2 − (ν/2)log|S| − log Γ_r(ν/2)
	lfact  float64   // Σ log y!
	w, m   []float64 // work: W and A or M (R×R)
	bbT    []float64
	nOmega int
}

// ErrData is the cause of errors about model data (responses, groups, priors).
var ErrData = errors.New("glmm: bad data")

// New checks the data and precomputes the prior constants. Poisson responses must be counts, Bernoulli ones 0/1.
func New(fam Family, x, z, y []float64, start []int, p, r int, nu float64, s []float64) (*Model, error) {
	n := len(start) - 1
	if fam != Poisson && fam != Bernoulli {
		return nil, fmt.Errorf("%w: unknown family %d", ErrData, int(fam))
	}
	if n < 1 || p < 1 || r < 1 {
		return nil, fmt.Errorf("%w: %d groups, p = %d, r = %d", ErrData, n, p, r)
	}
	nobs := len(y)
	if len(x) != nobs*p || len(z) != nobs*r || start[0] != 0 || start[n] != nobs {
		return nil, fmt.Errorf("%w: shapes X %d, Z %d, y %d, groups end at %d", ErrData, len(x), len(z), nobs, start[n])
	}
	for i := 0; i < n; i++ {
		if start[i+1] < start[i] {
			return nil, fmt.Errorf("%w: group %d has a negative size", ErrData, i)
		}
	}
	// A NaN covariate would make every log joint NaN and the fit stop with no word of why.
	for _, c := range []struct {
		name string
		v    []float64
		cols int
	}{{"X", x, p}, {"Z", z, r}, {"S", s, r}} {
		for k, v := range c.v {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%w: %s[%d, %d] is %v", ErrData, c.name, k/c.cols, k%c.cols, v)
			}
		}
	}
	m := &Model{Fam: fam, N: n, P: p, R: r, X: x, Z: z, Y: y, Start: start, Nu: nu, S: s, SigmaBeta: 10,
		w: make([]float64, r*r), m: make([]float64, r*r), bbT: make([]float64, r*r), nOmega: r * (r + 1) / 2}
	for k, v := range y {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return nil, fmt.Errorf("%w: response %d is %v", ErrData, k, v)
		case fam == Poisson && (v < 0 || v != math.Trunc(v)):
			return nil, fmt.Errorf("%w: response %d = %v is not a count (Poisson)", ErrData, k, v)
		case fam == Bernoulli && v != 0 && v != 1:
			return nil, fmt.Errorf("%w: response %d = %v is not 0/1 (Bernoulli)", ErrData, k, v)
		}
		if fam == Poisson {
			lg, _ := math.Lgamma(v + 1)
			m.lfact += lg
		}
	}
	if !(nu > float64(r)-1) || len(s) != r*r {
		return nil, fmt.Errorf("%w: Wishart(ν = %v, S of %d entries) for r = %d", ErrData, nu, len(s), r)
	}
	sd := mat.NewSymDense(r, nil)
	for a := 0; a < r; a++ {
		for b := 0; b < r; b++ {
			sd.SetSym(a, b, 0.5*(s[a*r+b]+s[b*r+a]))
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(sd) {
		return nil, fmt.Errorf("%w: Wishart scale S is not positive definite", ErrData)
	}
	var si mat.SymDense
	if err := ch.InverseTo(&si); err != nil {
		return nil, err
	}
	m.sinv = make([]float64, r*r)
	for a := 0; a < r; a++ {
		for b := 0; b < r; b++ {
			m.sinv[a*r+b] = si.At(a, b)
		}
	}
	rf := float64(r)
	m.cW = -nu*rf/2*math.Ln2 - nu/2*ch.LogDet() - LogMvGamma(r, nu/2)
	return m, nil
}

// LogMvGamma is log Γ_r(a) = r(r−1)/4 log π + Σ_{j=1..r} log Γ(a + (1−j)/2).
func LogMvGamma(r int, a float64) float64 {
	s := float64(r*(r-1)) / 4 * math.Log(math.Pi)
	for j := 1; j <= r; j++ {
		lg, _ := math.Lgamma(a + float64(1-j)/2)
		s += lg
	}
	return s
}

// Dim is d = nr + p + r(r+1)/2.
func (m *Model) Dim() int { return m.N*m.R + m.GlobalDim() }

// GlobalDim is d_G = p + r(r+1)/2.
func (m *Model) GlobalDim() int { return m.P + m.nOmega }

// Groups returns the local block sizes (all r) for cholng.NewArrow.
func (m *Model) Groups() []int {
	s := make([]int, m.N)
	for i := range s {
		s[i] = m.R
	}
	return s
}

// LogFactorial is Σ log y! (0 for Bernoulli): add it to L̂ to compare with the paper's Poisson numbers.
func (m *Model) LogFactorial() float64 { return m.lfact }

// OmegaIndex is the position of ω_kl (k ≥ l, 0-based) in ω = vech W*, column by column.
func OmegaIndex(r, k, l int) int { return l*r - l*(l-1)/2 + (k - l) }

// LogJacobian is log|∂vech B/∂ω| = r log 2 + Σ_k (r − k + 2)ω_kk (k from 1).
func LogJacobian(r int, omega []float64) float64 {
	s := float64(r) * math.Ln2
	for k := 0; k < r; k++ {
		s += float64(r-k+1) * omega[OmegaIndex(r, k, k)]
	}
	return s
}

// wFromOmega returns W (r×r row-major, lower): W_kl = ω_kl for k > l, W_kk = exp(ω_kk).
func wFromOmega(r int, omega []float64) []float64 {
	w := make([]float64, r*r)
	for l := 0; l < r; l++ {
		for k := l; k < r; k++ {
			v := omega[OmegaIndex(r, k, l)]
			if k == l {
				v = math.Exp(v)
			}
			w[k*r+l] = v
		}
	}
	return w
}

// BFromOmega returns B = WWᵀ (r×r row-major) for ω.
func BFromOmega(r int, omega []float64) []float64 {
	w := wFromOmega(r, omega)
	b := make([]float64, r*r)
	for a := 0; a < r; a++ {
		for c := 0; c < r; c++ {
			for k := 0; k <= min(a, c); k++ {
				b[a*r+c] += w[a*r+k] * w[c*r+k]
			}
		}
	}
	return b
}

// LogJoint returns log p(y, θ) (§8.2) and writes its gradient:
// ∇_{b_i} = Σ_j (y_ij − μ_ij)Z_ij − WWᵀb_i; ∇_β = Σ (y − μ)X − β/σ_β²; with A = S⁻¹ + Σ b_i b_iᵀ and M = AW,
// ∂/∂ω_kk = (n + ν − r − 1) + (r − k + 2) − M_kk W_kk and ∂/∂ω_kl = −M_kl (k > l). O(n_obs(p + r) + n r²).
func (m *Model) LogJoint(th, grad []float64) float64 {
	n, p, r := m.N, m.P, m.R
	nl := n * r
	beta, omega := th[nl:nl+p], th[nl+p:]
	gbeta, gomega := grad[nl:nl+p], grad[nl+p:]
	w := m.w
	clear(w)
	sumOmegaDiag := 0.0
	for l := 0; l < r; l++ {
		for k := l; k < r; k++ {
			v := omega[OmegaIndex(r, k, l)]
			if k == l {
				sumOmegaDiag += v
				v = math.Exp(v)
			}
			w[k*r+l] = v
		}
	}
	s2 := m.SigmaBeta * m.SigmaBeta
	lp := -0.5*float64(p)*math.Log(2*math.Pi*s2) - m.lfact
	for j := range gbeta {
		gbeta[j] = -beta[j] / s2
		lp -= beta[j] * beta[j] / (2 * s2)
	}
	bbT := m.bbT
	clear(bbT)
	wtb := make([]float64, r) // small; r ≤ a few
	for i := 0; i < n; i++ {
		b := th[i*r : (i+1)*r]
		gb := grad[i*r : (i+1)*r]
		clear(gb)
		for o := m.Start[i]; o < m.Start[i+1]; o++ {
			x, z := m.X[o*p:(o+1)*p], m.Z[o*r:(o+1)*r]
			eta := 0.0
			for j, v := range x {
				eta += v * beta[j]
			}
			for k, v := range z {
				eta += v * b[k]
			}
			y := m.Y[o]
			var res float64
			if m.Fam == Poisson {
				mu := math.Exp(eta)
				lp += y*eta - mu
				res = y - mu
			} else {
				var sp, pr float64
				if eta > 0 {
					e := math.Exp(-eta)
					sp, pr = eta+math.Log1p(e), 1/(1+e)
				} else {
					e := math.Exp(eta)
					sp, pr = math.Log1p(e), e/(1+e)
				}
				lp += y*eta - sp
				res = y - pr
			}
			for j, v := range x {
				gbeta[j] += res * v
			}
			for k, v := range z {
				gb[k] += res * v
			}
		}
		// −½‖Wᵀb‖²; gradient −W(Wᵀb).
		nn := 0.0
		for c := 0; c < r; c++ {
			v := 0.0
			for k := c; k < r; k++ {
				v += w[k*r+c] * b[k]
			}
			wtb[c] = v
			nn += v * v
		}
		lp -= 0.5 * nn
		for k := 0; k < r; k++ {
			v := 0.0
			for c := 0; c <= k; c++ {
				v += w[k*r+c] * wtb[c]
			}
			gb[k] -= v
			for c := 0; c < r; c++ {
				bbT[k*r+c] += b[k] * b[c]
			}
		}
	}
	rf, nf := float64(r), float64(n)
	lp += nf * (-0.5*rf*math.Log(2*math.Pi) + sumOmegaDiag)
	// Wishart prior on B with the ω Jacobian.
	trSW := 0.0
	for a := 0; a < r; a++ {
		for c := 0; c < r; c++ {
			bac := 0.0
			for k := 0; k <= min(a, c); k++ {
				bac += w[a*r+k] * w[c*r+k]
			}
			trSW += m.sinv[c*r+a] * bac
		}
	}
	lp += (m.Nu-rf-1)*sumOmegaDiag - 0.5*trSW + m.cW + LogJacobian(r, omega)
	// M = (S⁻¹ + Σ b bᵀ) W.
	for a := 0; a < r; a++ {
		for c := 0; c < r; c++ {
			v := 0.0
			for k := c; k < r; k++ {
				v += (m.sinv[a*r+k] + bbT[a*r+k]) * w[k*r+c]
			}
			m.m[a*r+c] = v
		}
	}
	for l := 0; l < r; l++ {
		for k := l; k < r; k++ {
			g := -m.m[k*r+l]
			if k == l {
				g = (nf + m.Nu - rf - 1) + (rf - float64(k) + 1) - m.m[k*r+k]*w[k*r+k]
			}
			gomega[OmegaIndex(r, k, l)] = g
		}
	}
	return lp
}

// LogDensity implements model.Density: LogJoint with the gradient first.
func (m *Model) LogDensity(grad, th []float64) (float64, error) { return m.LogJoint(th, grad), nil }

// GLMFit fits the fixed-effects-only GLM (b = 0) by Newton's method (IRLS) and returns β̂.
func GLMFit(fam Family, x, y []float64, p int) ([]float64, error) {
	nobs := len(y)
	beta := make([]float64, p)
	if fam == Poisson { // start at log ȳ for a stable Newton path
		s := 0.0
		for _, v := range y {
			s += v
		}
		beta[0] = math.Log(max(s/float64(nobs), 1e-3))
		if !allOnes(x, p, 0) {
			beta[0] = 0
		}
	}
	for it := 0; it < 100; it++ {
		H := mat.NewSymDense(p, nil)
		g := mat.NewVecDense(p, nil)
		for o := 0; o < nobs; o++ {
			xo := x[o*p : (o+1)*p]
			eta := 0.0
			for j, v := range xo {
				eta += v * beta[j]
			}
			mu, wt := glmMean(fam, eta)
			for a := 0; a < p; a++ {
				g.SetVec(a, g.AtVec(a)+(y[o]-mu)*xo[a])
				for c := a; c < p; c++ {
					H.SetSym(a, c, H.At(a, c)+wt*xo[a]*xo[c])
				}
			}
		}
		var ch mat.Cholesky
		if !ch.Factorize(H) {
			return nil, fmt.Errorf("%w: GLM information is singular", ErrData)
		}
		var step mat.VecDense
		if err := ch.SolveVecTo(&step, g); err != nil {
			return nil, err
		}
		mx := 0.0
		for j := range beta {
			beta[j] += step.AtVec(j)
			mx = max(mx, math.Abs(step.AtVec(j)))
		}
		if mx < 1e-12 {
			return beta, nil
		}
	}
	return nil, fmt.Errorf("%w: GLM fit did not converge", ErrData)
}

func allOnes(x []float64, p, j int) bool {
	for o := 0; o*p < len(x); o++ {
		if x[o*p+j] != 1 {
			return false
		}
	}
	return true
}

// glmMean returns the mean and the working weight (variance) at η.
func glmMean(fam Family, eta float64) (mu, w float64) {
	if fam == Poisson {
		mu = math.Exp(eta)
		return mu, mu
	}
	mu = 1 / (1 + math.Exp(-eta))
	return mu, mu * (1 - mu)
}

// KassNatarajan returns the default Wishart scale S = (1/(nν)) Σ_i Z_iᵀŴ_iZ_i, with Ŵ the working weights of the
// fixed-effects GLM fit, so that the prior mean νS is the average per-cluster information (Kass & Natarajan 2006;
// the rule reconstructed here reproduces the paper's constants).
func KassNatarajan(fam Family, x, z, y []float64, start []int, p, r int, nu float64) (s, betaHat []float64, err error) {
	betaHat, err = GLMFit(fam, x, y, p)
	if err != nil {
		return nil, nil, err
	}
	n := len(start) - 1
	s = make([]float64, r*r)
	for o := range y {
		eta := 0.0
		for j := 0; j < p; j++ {
			eta += x[o*p+j] * betaHat[j]
		}
		_, wt := glmMean(fam, eta)
		zo := z[o*r : (o+1)*r]
		for a := 0; a < r; a++ {
			for c := 0; c < r; c++ {
				s[a*r+c] += wt * zo[a] * zo[c]
			}
		}
	}
	for k := range s {
		s[k] /= float64(n) * nu
	}
	return s, betaHat, nil
}

// Epilepsy is the Poisson random-slope model on the coded Epilepsy data (§8.2): log μ_ij = β₁ + β₂Base_i +
// β₃Trt_i + β₄Base_i×Trt_i + β₅Age_i + β₆Visit_ij + b_i1 + b_i2Visit_ij; ν = 3 and the Kass–Natarajan S.
func Epilepsy(g *datasets.Grouped) (*Model, error) {
	const p, r = 6, 2
	if err := checkCols(g, 7); err != nil {
		return nil, err
	}
	nobs := len(g.Rows)
	x, z, y := make([]float64, 0, nobs*p), make([]float64, 0, nobs*r), make([]float64, 0, nobs)
	for _, row := range g.Rows {
		x = append(x, row[:6]...)
		z = append(z, 1, row[5])
		y = append(y, row[6])
	}
	return fromGroups(Poisson, g, x, z, y, p, r, 3)
}

// Toenail is the logistic random-intercept model (§8.2, with the β₃t_ij/β₄Trt×t correction): logit p_ij =
// β₁ + β₂Trt_i + β₃t_ij + β₄Trt_i×t_ij + b_i; ν = 1 (Gamma(½, rate 1/(2S))) and the Kass–Natarajan S.
func Toenail(g *datasets.Grouped) (*Model, error) {
	const p, r = 4, 1
	if err := checkCols(g, 4); err != nil {
		return nil, err
	}
	nobs := len(g.Rows)
	x, z, y := make([]float64, 0, nobs*p), make([]float64, 0, nobs*r), make([]float64, 0, nobs)
	for _, row := range g.Rows {
		trt, tm := row[2], row[3]
		x = append(x, 1, trt, tm, trt*tm)
		z = append(z, 1)
		y = append(y, row[1])
	}
	return fromGroups(Bernoulli, g, x, z, y, p, r, 1)
}

// checkCols reports a row with fewer than n columns (a table not read by the datasets package, say).
func checkCols(g *datasets.Grouped, n int) error {
	for i, row := range g.Rows {
		if len(row) < n {
			return fmt.Errorf("%w: row %d has %d columns, want %d", ErrData, i, len(row), n)
		}
	}
	return nil
}

func fromGroups(fam Family, g *datasets.Grouped, x, z, y []float64, p, r int, nu float64) (*Model, error) {
	if len(g.Group) != len(g.Rows) {
		return nil, fmt.Errorf("%w: %d group ids for %d rows", ErrData, len(g.Group), len(g.Rows))
	}
	start := make([]int, g.NumGroups+1)
	for o, gi := range g.Group {
		if gi < 0 || gi >= g.NumGroups || (o > 0 && gi != g.Group[o-1] && gi != g.Group[o-1]+1) {
			return nil, fmt.Errorf("%w: row %d: group ids are not contiguous", ErrData, o)
		}
		start[gi+1] = o + 1
	}
	s, _, err := KassNatarajan(fam, x, z, y, start, p, r, nu)
	if err != nil {
		return nil, err
	}
	return New(fam, x, z, y, start, p, r, nu, s)
}
