package glmm

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// rvbPoint is a random θ̃ on the posterior scale: b̃ ~ N(0, ½²), β = the GLM fit + N(0, 0.1²), ω ~ N(0, 0.2²).
func rvbPoint(t *testing.T, r *rand.Rand, m *Model) []float64 {
	bh, err := GLMFit(m.Fam, m.X, m.Y, m.P)
	if err != nil {
		t.Fatal(err)
	}
	nr := m.N * m.R
	th := make([]float64, m.Dim())
	for k := range th {
		switch {
		case k < nr:
			th[k] = 0.5 * r.NormFloat64()
		case k < nr+m.P:
			th[k] = bh[k-nr] + 0.1*r.NormFloat64()
		default:
			th[k] = 0.2 * r.NormFloat64()
		}
	}
	return th
}

// The RVB change of variables against an independent construction with gonum: for each group, with b̂_i = 0 (zero)
// or the expansion point the model found (AtMode; there the score F = Z_iᵀ(y_i − μ(η̂)) − WWᵀb̂_i must vanish,
// ‖F‖∞ ≤ 1e-8), Λ_i = Z_iᵀdiag(μ′(η̂))Z_i + WWᵀ and g_i = Z_iᵀ(y_i − μ(η̂)) from the data, b_i = b̂_i + Λ_i⁻¹g_i +
// L_i b̃_i (zero; the Newton step) or b̂_i + L_i b̃_i (AtMode), L_i = chol(Λ_i)⁻ᵀ (mat.Cholesky, mat.TriDense solve),
// and log p̃ = log p(y, b, θ_G) − ½ Σ log|Λ_i|. Epilepsy (Poisson, r = 2) and Toenail (Bernoulli, r = 1);
// rel ≤ 1e-12.
func TestReparamTransform(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, c := range []struct {
		m      *Model
		atMode bool
	}{{epilepsy(t), false}, {toenail(t), false}, {epilepsy(t), true}, {toenail(t), true}} {
		m := c.m
		q := NewReparam(m)
		q.AtMode = c.atMode
		th := rvbPoint(t, r, m)
		b := make([]float64, m.N*m.R)
		if _, err := q.Transform(th, b); err != nil {
			t.Fatal(err)
		}
		n, p, rr := m.N, m.P, m.R
		beta, omega := th[n*rr:n*rr+p], th[n*rr+p:]
		om := BFromOmega(rr, omega)
		orig := append([]float64(nil), th...)
		halfLogDet := 0.0
		for i := 0; i < n; i++ {
			bh := make([]float64, rr)
			if c.atMode {
				copy(bh, q.bh[i])
			}
			lam := mat.NewSymDense(rr, nil)
			g := mat.NewVecDense(rr, nil)
			for a := 0; a < rr; a++ {
				for c := a; c < rr; c++ {
					lam.SetSym(a, c, om[a*rr+c])
				}
			}
			for o := m.Start[i]; o < m.Start[i+1]; o++ {
				eta := mat.Dot(mat.NewVecDense(p, m.X[o*p:(o+1)*p]), mat.NewVecDense(p, beta)) +
					mat.Dot(mat.NewVecDense(rr, m.Z[o*rr:(o+1)*rr]), mat.NewVecDense(rr, bh))
				mu, w := glmMean(m.Fam, eta)
				for a := 0; a < rr; a++ {
					g.SetVec(a, g.AtVec(a)+(m.Y[o]-mu)*m.Z[o*rr+a])
					for c := a; c < rr; c++ {
						lam.SetSym(a, c, lam.At(a, c)+w*m.Z[o*rr+a]*m.Z[o*rr+c])
					}
				}
			}
			var ch mat.Cholesky
			if !ch.Factorize(lam) {
				t.Fatal("Λ_i not SPD")
			}
			var mean mat.VecDense
			if c.atMode {
				var ob mat.VecDense // the score at b̂: g − Ωb̂
				ob.MulVec(mat.NewDense(rr, rr, om), mat.NewVecDense(rr, bh))
				for a := 0; a < rr; a++ {
					if f := g.AtVec(a) - ob.AtVec(a); math.Abs(f) > 1e-8 {
						t.Errorf("%v group %d: the score at the expansion point is %.2g", m.Fam, i, f)
					}
				}
				mean.CloneFromVec(mat.NewVecDense(rr, bh))
			} else if err := ch.SolveVecTo(&mean, g); err != nil {
				t.Fatal(err)
			}
			var lt mat.TriDense
			ch.LTo(&lt)
			var lb mat.VecDense // L_i b̃ = R⁻ᵀ b̃
			if err := lb.SolveVec(lt.T(), mat.NewVecDense(rr, th[i*rr:(i+1)*rr])); err != nil {
				t.Fatal(err)
			}
			for a := 0; a < rr; a++ {
				orig[i*rr+a] = mean.AtVec(a) + lb.AtVec(a)
			}
			halfLogDet += 0.5 * ch.LogDet()
		}
		want := m.LogJoint(orig, make([]float64, m.Dim())) - halfLogDet
		got := q.LogJoint(th, make([]float64, m.Dim()))
		if e := math.Abs(got-want) / max(1, math.Abs(want)); e > 1e-12 {
			t.Errorf("%v mode=%v: log p̃ = %.15g, independent %.15g (rel %.2g)", m.Fam, c.atMode, got, want, e)
		}
		mx := 0.0
		for k := range b {
			mx = max(mx, math.Abs(b[k]-orig[k]))
		}
		if mx > 1e-12*max(1, maxAbs(orig[:n*rr])) {
			t.Errorf("%v: b(θ̃) differs from the independent construction by %.2g", m.Fam, mx)
		}
	}
}

func maxAbs(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		m = max(m, math.Abs(v))
	}
	return m
}

// Acceptance test 18 for the reparametrised log joint, both expansion points: its gradient (the hand-written adjoint
// through the Cholesky factor, the solves, the working weights and, AtMode, the implicit b̂_i(θ_G)) against central finite differences (h = 1e-5), |g_k − fd_k| ≤
// 1e-6·max(1, |fd_k|) for every coordinate (b̃, β and ω), on Epilepsy and Toenail at random θ̃.
func TestReparamGradient(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	for _, m := range []*Model{epilepsy(t), toenail(t)} {
		q := NewReparam(m)
		for rep := 0; rep < 4; rep++ {
			q.AtMode = rep >= 2
			th := rvbPoint(t, r, m)
			g := make([]float64, m.Dim())
			q.LogJoint(th, g)
			scratch := make([]float64, m.Dim())
			worst := 0.0
			fd := make([]float64, m.Dim())
			for k := range th {
				const h = 1e-5 // the log joint is ~1e3: rounding ε|f|/h ≈ 1e-7 here, truncation O(h²)
				x := th[k]
				th[k] = x + h
				up := q.LogJoint(th, scratch)
				th[k] = x - h
				dn := q.LogJoint(th, scratch)
				th[k] = x
				fd[k] = (up - dn) / (2 * h)
				worst = max(worst, math.Abs(g[k]-fd[k])/max(1, math.Abs(fd[k])))
			}
			if !(worst <= 1e-6) {
				t.Errorf("%v mode=%v: gradient vs finite differences: rel %.2g", m.Fam, q.AtMode, worst)
			}
			t.Logf("%v mode=%v: gradient vs finite differences: worst rel %.2g", m.Fam, q.AtMode, worst)
		}
	}
}
