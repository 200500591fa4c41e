package mog

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geovb/geovb/rng"
)

func testModel(t testing.TB, N, K int, R float64, opt Options, seed uint64) *Model {
	t.Helper()
	m, err := New(Synthetic(R, N, 0.03, seed), N, 2, K, DefaultPrior(2), opt)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestBadInput(t *testing.T) {
	X := Synthetic(0.3, 10, 0.03, 1)
	for _, c := range []struct {
		name    string
		X       []float64
		N, D, K int
	}{{"K<1", X, 10, 2, 0}, {"N<K", X, 10, 2, 11}, {"shape", X[:5], 10, 2, 3}} {
		if _, err := New(c.X, c.N, c.D, c.K, DefaultPrior(2), Options{}); !errors.Is(err, ErrBadInput) {
			t.Errorf("%s: err = %v", c.name, err)
		}
	}
	bad := append([]float64(nil), X...)
	bad[7] = math.NaN()
	if _, err := New(bad, 10, 2, 3, DefaultPrior(2), Options{}); !errors.Is(err, ErrBadInput) {
		t.Errorf("NaN data: err = %v", err)
	}
	bad[7] = math.Inf(-1)
	if _, err := New(bad, 10, 2, 3, DefaultPrior(2), Options{}); !errors.Is(err, ErrBadInput) {
		t.Errorf("Inf data: err = %v", err)
	}
}

// randomPoint returns random responsibilities (log domain) and means.
func randomPoint(m *Model, seed uint64) (logr, mu []float64) {
	r := rand.New(rng.NewSource(seed, 9))
	logr, mu = make([]float64, m.N*m.K), make([]float64, m.K*m.D)
	for n := range m.N {
		row := logr[n*m.K : n*m.K+m.K]
		for k := range row {
			row[k] = 1.5 * r.NormFloat64()
		}
		l := logSumExp(row)
		for k := range row {
			row[k] -= l
		}
	}
	for i := range mu {
		mu[i] = 0.3 * r.NormFloat64()
	}
	return
}

// fGamma evaluates F at unnormalised γ (log r = γ − LSE(γ)).
func fGamma(m *Model, gamma, mu []float64, post *Post, collapsed bool) float64 {
	logr := append([]float64(nil), gamma...)
	for n := range m.N {
		row := logr[n*m.K : n*m.K+m.K]
		l := logSumExp(row)
		for k := range row {
			row[k] -= l
		}
	}
	if collapsed {
		post = post.Clone()
		m.MStep(post, logr, mu)
	}
	return m.FreeEnergy(logr, mu, post)
}

func relErr(a, b float64) float64 { return math.Abs(a-b) / math.Max(math.Abs(b), 1e-3) }

// Test 6: central differences (h = 1e-6) of F match (81) and (82)–(83) to relative error < 1e-5, both with the EM
// parameters held fixed and for the collapsed objective (envelope theorem, exact W form). With the printed W (69)
// the collapsed gradient in γ does not match (the printed (69) is optimal only at m_k = m_k*).
func TestGradientsFiniteDifferences(t *testing.T) {
	const h = 1e-6
	for _, opt := range []Options{{}, {PrintedW: true}} {
		m := testModel(t, 40, 4, 0.3, opt, 2)
		logr, mu := randomPoint(m, 3)
		post := NewPost(m.K, m.D)
		m.MStep(post, logr, mu)
		// Perturb the EM parameters away from the optimum for the fixed-parameter check.
		fixed := post.Clone()
		for k := range m.K {
			fixed.Beta[k] += 0.3
			fixed.Nu[k] += 0.7
		}
		gG, gM := make([]float64, m.N*m.K), make([]float64, m.K*m.D)
		for _, collapsed := range []bool{false, true} {
			p := fixed
			if collapsed {
				p = post
			}
			m.Gradients(gG, gM, nil, nil, logr, mu, p)
			var worstG, worstM float64
			for i := 0; i < len(logr); i += 7 {
				a, b := append([]float64(nil), logr...), append([]float64(nil), logr...)
				a[i] += h
				b[i] -= h
				fd := (fGamma(m, a, mu, p, collapsed) - fGamma(m, b, mu, p, collapsed)) / (2 * h)
				worstG = math.Max(worstG, math.Abs(fd-gG[i])/math.Max(math.Abs(gG[i]), 1e-2))
			}
			for i := range mu {
				a, b := append([]float64(nil), mu...), append([]float64(nil), mu...)
				a[i] += h
				b[i] -= h
				fd := (fGamma(m, logr, a, p, collapsed) - fGamma(m, logr, b, p, collapsed)) / (2 * h)
				worstM = math.Max(worstM, relErr(fd, gM[i]))
			}
			t.Logf("printedW=%v collapsed=%v: worst relative error γ %.2g, m %.2g", opt.PrintedW, collapsed, worstG, worstM)
			if worstM > 1e-5 {
				t.Errorf("printedW=%v collapsed=%v: m gradient relative error %.3g", opt.PrintedW, collapsed, worstM)
			}
			if opt.PrintedW && collapsed {
				// (69) depends on r through N_k, S_k, x̄_k but is not the conditional optimum, so the envelope
				// theorem fails for γ (the printed (69) is optimal only at m_k = m_k*).
				if worstG < 1e-3 {
					t.Errorf("printed W: collapsed γ gradient matches (%.3g); the discrepancy should show", worstG)
				}
			} else if worstG > 1e-5 {
				t.Errorf("printedW=%v collapsed=%v: γ gradient relative error %.3g", opt.PrintedW, collapsed, worstG)
			}
		}
	}
}

// Test 7: a unit natural-gradient step on γ reproduces the VB-E step (62) to 1e-12, and a unit step on m_k
// reproduces the VB-M mean (68).
func TestUnitStepIsVBStep(t *testing.T) {
	m := testModel(t, 200, 5, 0.3, Options{}, 4)
	logr, mu := randomPoint(m, 5)
	post := NewPost(m.K, m.D)
	m.MStep(post, logr, mu)
	gG, gM := make([]float64, m.N*m.K), make([]float64, m.K*m.D)
	nG, nM := make([]float64, m.N*m.K), make([]float64, m.K*m.D)
	m.Gradients(gG, gM, nG, nM, logr, mu, post)
	c := NewCollapsed(m)
	x := append(append([]float64(nil), logr...), mu...)
	p := make([]float64, len(x))
	for i := range nG {
		p[i] = -nG[i]
	}
	for i := range nM {
		p[len(nG)+i] = -nM[i]
	}
	y := make([]float64, len(x))
	c.Step(y, x, p, 1)
	want := append([]float64(nil), logr...)
	if err := m.EStep(want, mu, post); err != nil {
		t.Fatal(err)
	}
	var worst float64
	for i := range want {
		worst = math.Max(worst, math.Abs(math.Exp(y[i])-math.Exp(want[i])))
	}
	if worst > 1e-12 {
		t.Errorf("unit natural step vs VB-E step: max |Δr| = %.3g", worst)
	}
	wantMu := make([]float64, len(mu))
	m.MeanStep(wantMu, logr)
	var worstM float64
	for i := range wantMu {
		worstM = math.Max(worstM, math.Abs(y[len(logr)+i]-wantMu[i]))
	}
	if worstM > 1e-12 {
		t.Errorf("unit natural step vs VB-M mean (68): max |Δm| = %.3g", worstM)
	}
	t.Logf("max |Δr| = %.2g, max |Δm| = %.2g", worst, worstM)
	// The natural gradient from the collapsed objective is the same as from Gradients.
	g, ng := make([]float64, len(x)), make([]float64, len(x))
	c.Grad(g, x)
	c.NatGrad(ng, g, x)
	for i := range nG {
		if math.Abs(ng[i]-nG[i]) > 1e-12*(1+math.Abs(nG[i])) {
			t.Fatalf("collapsed natural gradient differs at %d", i)
		}
	}
}

// Test 8: with ν_k = ν₀ + N_k, F never increases after any E or M sub-step (tolerance 1e-9|F|); N = 500, R = 0.3,
// 30 seeds. (Short mode: 5 seeds.)
func TestVBEMMonotone(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 5
	}
	for seed := range uint64(seeds) {
		m := testModel(t, 500, 5, 0.3, Options{}, 100+seed)
		x, err := Init(m, seed)
		if err != nil {
			t.Fatal(err)
		}
		logr, mu := x[:m.N*m.K], x[m.N*m.K:]
		post := NewPost(m.K, m.D)
		prev := m.FreeEnergy(logr, mu, post)
		check := func(stage string, it int) {
			f := m.FreeEnergy(logr, mu, post)
			if f > prev+1e-9*math.Abs(prev) {
				t.Errorf("seed %d iteration %d: F rose after %s: %.12g → %.12g", seed, it, stage, prev, f)
			}
			prev = f
		}
		for it := range 60 {
			m.MeanStep(mu, logr)
			check("mean step (68)", it)
			m.MStep(post, logr, mu)
			check("M step (65)–(69)", it)
			if err := m.EStep(logr, mu, post); err != nil {
				t.Fatal(err)
			}
			check("E step (62)", it)
		}
	}
}

// Test 9: after the M-step, ∂F/∂{α_k, β_k, ν_k, W_k} = 0 to finite-difference precision, for arbitrary m_k with the
// exact W form; the printed ν (+1) leaves ∂F/∂ν ≠ 0, and the printed W leaves ∂F/∂W ≠ 0 when m_k ≠ m_k* (and
// then ν₀ + N_k is no longer stationary either, since ν and W are optimal only jointly).
func TestConditionalOptima(t *testing.T) {
	const h = 1e-5
	for _, opt := range []Options{{}, {NuPlusOne: true}, {PrintedW: true}} {
		m := testModel(t, 60, 4, 0.3, opt, 7)
		logr, mu := randomPoint(m, 8)
		post := NewPost(m.K, m.D)
		m.MStep(post, logr, mu)
		fd := func(field []float64, i int, sym int) float64 {
			p, q := post.Clone(), post.Clone()
			pick := func(pp *Post) []float64 {
				switch {
				case &field[0] == &post.Alpha[0]:
					return pp.Alpha
				case &field[0] == &post.Beta[0]:
					return pp.Beta
				case &field[0] == &post.Nu[0]:
					return pp.Nu
				}
				return pp.W
			}
			pick(p)[i] += h
			pick(q)[i] -= h
			if sym >= 0 {
				pick(p)[sym] += h
				pick(q)[sym] -= h
			}
			return (m.FreeEnergy(logr, mu, p) - m.FreeEnergy(logr, mu, q)) / (2 * h)
		}
		var dA, dB, dNu, dW float64
		for k := range m.K {
			dA = math.Max(dA, math.Abs(fd(post.Alpha, k, -1)))
			dB = math.Max(dB, math.Abs(fd(post.Beta, k, -1)))
			dNu = math.Max(dNu, math.Abs(fd(post.Nu, k, -1)))
			D := m.D
			for i := range D {
				for j := 0; j <= i; j++ {
					sym := -1
					if i != j {
						sym = k*D*D + j*D + i
					}
					dW = math.Max(dW, math.Abs(fd(post.W, k*D*D+i*D+j, sym)))
				}
			}
		}
		t.Logf("%+v: max |∂F/∂α| %.2g, |∂F/∂β| %.2g, |∂F/∂ν| %.2g, |∂F/∂W| %.2g", opt, dA, dB, dNu, dW)
		const tol = 1e-6
		if dA > tol || dB > tol {
			t.Errorf("%+v: ∂F/∂α = %.3g, ∂F/∂β = %.3g, want 0", opt, dA, dB)
		}
		if opt.NuPlusOne {
			if dNu < 1e-3 {
				t.Errorf("ν + 1: ∂F/∂ν = %.3g, expected clearly nonzero", dNu)
			}
		} else if !opt.PrintedW && dNu > tol {
			t.Errorf("%+v: ∂F/∂ν = %.3g, want 0", opt, dNu)
		}
		if opt.PrintedW {
			if dW < 1e-3 {
				t.Errorf("printed W at m ≠ m*: ∂F/∂W = %.3g, expected clearly nonzero", dW)
			}
		} else if !opt.NuPlusOne && dW > tol {
			t.Errorf("%+v: ∂F/∂W = %.3g, want 0", opt, dW)
		}
	}
	// At m = m* the printed and exact W coincide.
	m := testModel(t, 60, 4, 0.3, Options{}, 7)
	mp := testModel(t, 60, 4, 0.3, Options{PrintedW: true}, 7)
	logr, mu := randomPoint(m, 8)
	m.MeanStep(mu, logr)
	a, b := NewPost(4, 2), NewPost(4, 2)
	m.MStep(a, logr, mu)
	mp.MStep(b, logr, mu)
	for i := range a.W {
		if math.Abs(a.W[i]-b.W[i]) > 1e-12*(1+math.Abs(a.W[i])) {
			t.Fatalf("W at m = m*: exact %v, printed %v", a.W[i], b.W[i])
		}
	}
}

// The collapsed objective equals FreeEnergy after MStep, and NumFree gives the n of the √n rule.
func TestCollapsedRCG(t *testing.T) {
	m := testModel(t, 300, 5, 0.3, Options{}, 11)
	x, err := Init(m, 1)
	if err != nil {
		t.Fatal(err)
	}
	c := NewCollapsed(m)
	post := NewPost(m.K, m.D)
	m.MStep(post, x[:m.N*m.K], x[m.N*m.K:])
	if a, b := c.Value(x), m.FreeEnergy(x[:m.N*m.K], x[m.N*m.K:], post); a != b {
		t.Errorf("collapsed %v, FreeEnergy after MStep %v", a, b)
	}
	if c.NumFree() != 300*4+10 {
		t.Errorf("NumFree %d", c.NumFree())
	}
}

// logSumExp returns log Σ exp(v), NaN when v holds a NaN: the scalar form of normaliseRows, its reference.
func logSumExp(v []float64) float64 {
	mx := math.Inf(-1)
	for _, x := range v {
		if x > mx {
			mx = x
		} else if x != x {
			return x
		}
	}
	if math.IsInf(mx, 0) {
		return mx
	}
	var s float64
	for _, x := range v {
		s += math.Exp(x - mx)
	}
	return mx + math.Log(s)
}

// normaliseRows gives, bit for bit, each row minus its logSumExp, for rows of every size (longer than its block
// too), with rows holding NaN, ±Inf, only −Inf, or values 700 below their maximum, over more rows than one block.
func TestNormaliseRowsBits(t *testing.T) {
	r := rand.New(rng.NewSource(3, 4))
	for _, K := range []int{1, 2, 3, 5, 8, 13, 1024, 1500} {
		rows := make([]float64, 600*K)
		for i := range rows {
			rows[i] = 30 * r.NormFloat64()
		}
		for n := 0; n < 600; n += 7 { // special rows
			row := rows[n*K : n*K+K]
			switch n % 5 {
			case 0:
				row[r.IntN(K)] = math.NaN()
			case 1:
				row[r.IntN(K)] = math.Inf(1)
			case 2:
				for k := range row {
					row[k] = math.Inf(-1)
				}
			case 3:
				row[r.IntN(K)] = -700 - row[0]
			case 4:
				row[r.IntN(K)] = -800
			}
		}
		want := append([]float64(nil), rows...)
		for n := 0; n < 600; n++ {
			row := want[n*K : n*K+K]
			l := logSumExp(row)
			for k := range row {
				row[k] -= l
			}
		}
		normaliseRows(rows, K)
		bad := 0
		for i := range rows {
			if math.Float64bits(rows[i]) != math.Float64bits(want[i]) && !(rows[i] != rows[i] && want[i] != want[i]) {
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("K = %d: %d of %d values differ from the scalar logSumExp's", K, bad, len(rows))
		}
	}
}
