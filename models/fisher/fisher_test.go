package fisher

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/rng"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rng.NewSource(seed, 4)) }

// Test 1: Monte-Carlo Fisher information of N(μ, v) from score outer products matches (15)–(17) within
// 3 standard errors; the log-variance Fisher is ½.
func TestGaussianFisherMonteCarlo(t *testing.T) {
	r := newRand(1)
	const n = 1000000
	mu, v := 0.7, 2.5
	var sum, sum2 [4]float64 // μμ, μv, vv, λλ
	for range n {
		th := mu + math.Sqrt(v)*r.NormFloat64()
		sm := (th - mu) / v
		sv := -1/(2*v) + (th-mu)*(th-mu)/(2*v*v)
		sl := sv * v // d/dλ with λ = log v
		vals := [4]float64{sm * sm, sm * sv, sv * sv, sl * sl}
		for i, x := range vals {
			sum[i] += x
			sum2[i] += x * x
		}
	}
	imm, imv, ivv := GaussianFisher(v)
	want := [4]float64{imm, imv, ivv, 0.5}
	for i := range want {
		mean := sum[i] / n
		se := math.Sqrt((sum2[i]/n - mean*mean) / n)
		if math.Abs(mean-want[i]) > 3*se {
			t.Errorf("entry %d: MC %.6g ± %.2g, want %.6g", i, mean, se, want[i])
		}
	}
	if got := VarianceNatGrad(v, 0.3); math.Abs(got-0.3/ivv) > 1e-15 {
		t.Errorf("variance natural gradient %v, want %v", got, 0.3/ivv)
	}
}

func randSPD(r *rand.Rand, n int, jitter float64) *mat.SymDense {
	a := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			a.Set(i, j, r.NormFloat64())
		}
	}
	s := mat.NewSymDense(n, nil)
	s.SymOuterK(1, a)
	for i := range n {
		s.SetSym(i, i, s.At(i, i)+jitter)
	}
	return s
}

// Test 2: the Fisher information of a multivariate Gaussian mean is Σ⁻¹ (18) (Monte Carlo, D = 3), and
// NatGrad(g) = Σg matches a dense solve of Σ⁻¹x = g to 1e-12.
func TestMeanFisherMonteCarlo(t *testing.T) {
	r := newRand(2)
	const D, n = 3, 400000
	sig := randSPD(r, D, 0.5)
	var chol mat.Cholesky
	if !chol.Factorize(sig) {
		t.Fatal("not SPD")
	}
	var L mat.TriDense
	chol.LTo(&L)
	var prec mat.SymDense
	if err := chol.InverseTo(&prec); err != nil {
		t.Fatal(err)
	}
	var sum, sum2 [D * D]float64
	z, e, s := make([]float64, D), mat.NewVecDense(D, nil), mat.NewVecDense(D, nil)
	for range n {
		for i := range z {
			z[i] = r.NormFloat64()
		}
		e.MulVec(&L, mat.NewVecDense(D, z)) // θ − μ
		s.MulVec(&prec, e)                  // score Σ⁻¹(θ − μ)
		for i := range D {
			for j := range D {
				x := s.AtVec(i) * s.AtVec(j)
				sum[i*D+j] += x
				sum2[i*D+j] += x * x
			}
		}
	}
	for i := range D {
		for j := range D {
			mean := sum[i*D+j] / n
			se := math.Sqrt((sum2[i*D+j]/n - mean*mean) / n)
			if w := prec.At(i, j); math.Abs(mean-w) > 3*se {
				t.Errorf("(%d,%d): MC %.5g ± %.2g, want %.5g", i, j, mean, se, w)
			}
		}
	}
	g := []float64{0.3, -1.2, 2.0}
	got := make([]float64, D)
	flat := make([]float64, D*D)
	for i := range D {
		for j := range D {
			flat[i*D+j] = sig.At(i, j)
		}
	}
	FullNatGrad(got, flat, g)
	var want mat.VecDense
	if err := want.SolveVec(&prec, mat.NewVecDense(D, g)); err != nil {
		t.Fatal(err)
	}
	for i := range D {
		if math.Abs(got[i]-want.AtVec(i)) > 1e-12*(1+math.Abs(want.AtVec(i))) {
			t.Errorf("natgrad[%d] = %v, dense solve %v", i, got[i], want.AtVec(i))
		}
	}
}

func randSimplex(r *rand.Rand, K int) []float64 {
	p := make([]float64, K)
	var s float64
	for k := range p {
		p[k] = math.Exp(2 * r.NormFloat64())
		s += p[k]
	}
	for k := range p {
		p[k] /= s
	}
	return p
}

// Test 3: for K = 2..8 the closed-form natural gradient φ_k − φ_K equals B⁻¹∇_γ from a dense solve to 1e-12
// (relative), gᵀg̃ = Var_r(φ), and the centred form gives the same update of r.
func TestSoftmaxNatGrad(t *testing.T) {
	r := newRand(3)
	for K := 2; K <= 8; K++ {
		for trial := range 20 {
			rr := randSimplex(r, K)
			phi := make([]float64, K)
			for k := range phi {
				phi[k] = 3 * r.NormFloat64()
			}
			g := make([]float64, K)
			SoftmaxGrad(g, phi, rr, K)
			B := mat.NewDense(K-1, K-1, nil)
			for i := range K - 1 {
				for j := range K - 1 {
					v := -rr[i] * rr[j]
					if i == j {
						v += rr[i]
					}
					B.Set(i, j, v)
				}
			}
			var want mat.VecDense
			if err := want.SolveVec(B, mat.NewVecDense(K-1, g[:K-1])); err != nil {
				t.Fatal(err)
			}
			got := make([]float64, K-1)
			SoftmaxNatGradRef(got, phi, K)
			scale := mat.Norm(&want, math.Inf(1))
			for k := range K - 1 {
				// The dense solve loses digits with the condition number of B (≈ 1/min r); allow for it.
				cond := 1 / math.Min(rr[k], rr[K-1])
				if d := math.Abs(got[k] - want.AtVec(k)); d > 1e-12*scale*cond {
					t.Errorf("K=%d trial %d k=%d: closed %v, dense %v", K, trial, k, got[k], want.AtVec(k))
				}
			}
			// gᵀg̃ with the centred form is Var_r(φ).
			cen := make([]float64, K)
			SoftmaxNatGrad(cen, phi, rr, K)
			var m, m2 float64
			for k := range K {
				m += rr[k] * phi[k]
				m2 += rr[k] * phi[k] * phi[k]
			}
			if v, d := m2-m*m, dotF(g, cen); math.Abs(v-d) > 1e-12*(1+math.Abs(v)) {
				t.Errorf("K=%d: gᵀg̃ = %v, Var = %v", K, d, v)
			}
			// Same update of r from both forms (softmax ignores per-row shifts).
			a := stepSoftmax(rr, cen)
			ref := append(got, 0)
			b := stepSoftmax(rr, ref)
			for k := range K {
				if math.Abs(a[k]-b[k]) > 1e-13 {
					t.Errorf("K=%d: centred and reference updates differ at %d: %v vs %v", K, k, a[k], b[k])
				}
			}
		}
	}
}

func stepSoftmax(r, p []float64) []float64 {
	l := make([]float64, len(r))
	for k := range r {
		l[k] = math.Log(r[k]) - p[k]
	}
	var z float64 // plain normalisation: the test values are moderate
	for k := range l {
		l[k] = math.Exp(l[k])
		z += l[k]
	}
	for k := range l {
		l[k] /= z
	}
	return l
}

func dotF(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func randChain(r *rand.Rand, T int) (breve, ring []float64) {
	breve, ring = make([]float64, T), make([]float64, T)
	for t := range T {
		ring[t] = 0.1 + r.Float64()
		if t > 0 {
			breve[t] = -0.8 + 1.6*r.Float64()
		}
	}
	return
}

func chainDense(breve, ring []float64) *mat.SymDense {
	T := len(ring)
	L := mat.NewDense(T, T, nil)
	Lam := mat.NewSymDense(T, nil)
	for t := range T {
		L.Set(t, t, 1)
		if t > 0 {
			L.Set(t, t-1, -breve[t])
		}
	}
	// Λ = LᵀD⁻¹L.
	for i := range T {
		for j := i; j < T; j++ {
			var s float64
			for t := range T {
				s += L.At(t, i) * L.At(t, j) / ring[t]
			}
			Lam.SetSym(i, j, s)
		}
	}
	return Lam
}

// Test 4: the two-scan natural gradient equals a dense solve (T = 50) to 1e-10; the marginal-variance recursion
// equals diag(Λ⁻¹); the associative-scan form agrees with the sequential scans to 1e-10 relative; ChainApply
// is the dense Λ.
func TestChainNatGrad(t *testing.T) {
	r := newRand(4)
	const T = 50
	breve, ring := randChain(r, T)
	Lam := chainDense(breve, ring)
	g := make([]float64, T)
	for i := range g {
		g[i] = r.NormFloat64()
	}
	var want mat.VecDense
	if err := want.SolveVec(Lam, mat.NewVecDense(T, g)); err != nil {
		t.Fatal(err)
	}
	got, par := make([]float64, T), make([]float64, T)
	ChainNatGrad(got, g, breve, ring)
	ChainNatGradScan(par, g, breve, ring)
	scale := mat.Norm(&want, math.Inf(1))
	for i := range T {
		if d := math.Abs(got[i] - want.AtVec(i)); d > 1e-10*scale {
			t.Errorf("t=%d: scans %v, dense %v", i, got[i], want.AtVec(i))
		}
		if d := math.Abs(par[i] - got[i]); d > 1e-10*scale {
			t.Errorf("t=%d: parallel scan %v, sequential %v", i, par[i], got[i])
		}
	}
	var inv mat.Dense
	if err := inv.Inverse(Lam); err != nil {
		t.Fatal(err)
	}
	mv := make([]float64, T)
	ChainMarginalVar(mv, breve, ring)
	for i := range T {
		if d := math.Abs(mv[i] - inv.At(i, i)); d > 1e-10*inv.At(i, i) {
			t.Errorf("t=%d: marginal variance %v, diag Λ⁻¹ %v", i, mv[i], inv.At(i, i))
		}
	}
	ap := make([]float64, T)
	ChainApply(ap, g, breve, ring)
	var dense mat.VecDense
	dense.MulVec(Lam, mat.NewVecDense(T, g))
	for i := range T {
		if d := math.Abs(ap[i] - dense.AtVec(i)); d > 1e-12*(1+math.Abs(dense.AtVec(i))) {
			t.Errorf("t=%d: ChainApply %v, dense %v", i, ap[i], dense.AtVec(i))
		}
	}
	// In-place use (dst aliasing g).
	cp := append([]float64(nil), g...)
	ChainNatGrad(cp, cp, breve, ring)
	for i := range T {
		if cp[i] != got[i] {
			t.Fatalf("aliased ChainNatGrad differs at %d", i)
		}
	}
}

// Test 5: ⟨G⁻¹a, G⁻¹b⟩_G = aᵀG⁻¹b for the diagonal, chain and softmax metrics, and PR β from metric products
// (numerator under G_k, denominator under G_{k−1}) equals the cheap form (6) to 1e-12.
func TestInnerProductIdentity(t *testing.T) {
	r := newRand(5)
	type metric struct {
		name  string
		n     int
		nat   func(dst, g []float64, which int) // G_which⁻¹ g
		apply func(dst, v []float64, which int) // G_which v
	}
	const n = 30
	v := [2][]float64{make([]float64, n), make([]float64, n)}
	var chains [2][2][]float64
	var rs [2][]float64
	for w := range 2 {
		for i := range v[w] {
			v[w][i] = 0.1 + r.Float64()
		}
		chains[w][0], chains[w][1] = randChain(r, n)
		rs[w] = randSimplex(r, 7)
	}
	metrics := []metric{
		{"diag", n,
			func(dst, g []float64, w int) { DiagNatGrad(dst, v[w], g) },
			func(dst, x []float64, w int) {
				for i := range x {
					dst[i] = x[i] / v[w][i]
				}
			}},
		{"chain", n,
			func(dst, g []float64, w int) { ChainNatGrad(dst, g, chains[w][0], chains[w][1]) },
			func(dst, x []float64, w int) { ChainApply(dst, x, chains[w][0], chains[w][1]) }},
		{"softmax", 6,
			func(dst, g []float64, w int) {
				// Invert B = diag(r) − rrᵀ via the closed form B⁻¹ = diag(1/r) + 11ᵀ/r_K.
				var s float64
				for _, x := range g {
					s += x
				}
				for k := range g {
					dst[k] = g[k]/rs[w][k] + s/rs[w][6]
				}
			},
			func(dst, x []float64, w int) { SoftmaxFisherApply(dst, x, rs[w]) }},
	}
	for _, m := range metrics {
		a, b := make([]float64, m.n), make([]float64, m.n)
		for i := range a {
			a[i], b[i] = r.NormFloat64(), r.NormFloat64()
		}
		ia, ib, gib := make([]float64, m.n), make([]float64, m.n), make([]float64, m.n)
		m.nat(ia, a, 0)
		m.nat(ib, b, 0)
		m.apply(gib, ib, 0)
		lhs, rhs := dotF(ia, gib), dotF(a, ib)
		if math.Abs(lhs-rhs) > 1e-12*(math.Abs(rhs)+1) {
			t.Errorf("%s: ⟨G⁻¹a, G⁻¹b⟩_G = %v, aᵀG⁻¹b = %v", m.name, lhs, rhs)
		}
		// PR β: g_k = a under G_0, g_{k−1} = b under G_1.
		gk, gk1 := a, b
		tk, tk1 := make([]float64, m.n), make([]float64, m.n)
		m.nat(tk, gk, 0)
		m.nat(tk1, gk1, 1)
		diff, gdiff, gt1 := make([]float64, m.n), make([]float64, m.n), make([]float64, m.n)
		for i := range diff {
			diff[i] = tk[i] - tk1[i]
		}
		m.apply(gdiff, diff, 0)
		m.apply(gt1, tk1, 1)
		metricBeta := dotF(tk, gdiff) / dotF(tk1, gt1)
		cheap := (dotF(gk, tk) - dotF(gk, tk1)) / dotF(gk1, tk1)
		if math.Abs(metricBeta-cheap) > 1e-12*(1+math.Abs(cheap)) {
			t.Errorf("%s: PR β with metric products %v, cheap form %v", m.name, metricBeta, cheap)
		}
	}
}
