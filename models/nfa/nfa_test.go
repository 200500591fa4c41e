package nfa

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/rng"
)

// smallModel returns a small model at a random point (means x, all variances in a benign range).
func smallModel(t *testing.T, dyn bool, mo Moments, seed uint64) (*Model, []float64) {
	return smallModelARD(t, dyn, mo, false, seed)
}

// smallModelARD is smallModel with or without the ARD weight priors.
func smallModelARD(t *testing.T, dyn bool, mo Moments, ard bool, seed uint64) (*Model, []float64) {
	return smallModelT(t, 7, dyn, mo, ard, seed)
}

// smallModelT is smallModelARD with T time steps.
func smallModelT(t *testing.T, T int, dyn bool, mo Moments, ard bool, seed uint64) (*Model, []float64) {
	t.Helper()
	return smallModelCfg(t, T, Config{Dynamic: dyn, D: 2, H: 3, HG: 3, Moments: mo, GHOrder: 8, ARD: ard}, seed)
}

// smallModelCfg is smallModelT with any configuration (p = 4).
func smallModelCfg(t *testing.T, T int, cfg Config, seed uint64) (*Model, []float64) {
	t.Helper()
	const P = 4
	r := rand.New(rng.NewSource(seed, 1))
	X := make([]float64, T*P)
	for i := range X {
		X[i] = r.NormFloat64()
	}
	m, err := New(X, T, P, cfg)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float64, m.Dim())
	for i := range x {
		x[i] = 0.7 * r.NormFloat64()
	}
	for _, v := range [][]float64{m.SVar, m.Ring, m.WVarF, m.WVarG, m.VnVar, m.VmVar, m.VPhiVar, m.TopVar} {
		for i := range v {
			v[i] = 0.05 + 0.3*r.Float64()
		}
	}
	for i := range m.Breve {
		m.Breve[i] = 1.6*r.Float64() - 0.8
	}
	for _, v := range [][]float64{m.VnMean, m.VmMean, m.VPhiMean, m.TopMean} {
		for i := range v {
			v[i] = 0.3 * r.NormFloat64()
		}
	}
	return m, x
}

// TestGradientsFiniteDifferences is acceptance test 6 for NFA and NSSM: central differences (h = 1e-6, relative
// for variances) of F against the analytic gradient with respect to every mean, variance, chain parameter and
// hyperparameter (the ARD log-stds and the hierarchy's nodes included, when on), with the Taylor and the Gauss–Hermite moments, at T = 7
// (one block of eval's time steps) and at T = 2·chunkLen + 3 (three blocks, so the transitions across block
// boundaries are checked). Error measure |a − fd| / max(|fd|, 1); gate 1e-5.
func TestGradientsFiniteDifferences(t *testing.T) {
	for _, c := range []struct {
		T              int
		dyn, ard, hier bool
		mo             Moments
	}{{7, false, false, false, Taylor}, {7, false, false, false, GaussHermite}, {7, true, false, false, Taylor},
		{7, true, false, false, GaussHermite}, {7, false, true, false, GaussHermite}, {7, true, true, false, Taylor},
		{7, true, true, false, GaussHermite}, {7, false, false, true, GaussHermite}, {7, false, true, true, Taylor},
		{7, true, false, true, Taylor}, {7, true, true, true, GaussHermite},
		{2*chunkLen + 3, false, false, false, GaussHermite}, {2*chunkLen + 3, true, false, false, GaussHermite},
		{2*chunkLen + 3, true, true, false, Taylor}, {2*chunkLen + 3, true, true, true, GaussHermite}} {
		dyn, mo := c.dyn, c.mo
		m, x := smallModelCfg(t, c.T, Config{Dynamic: dyn, D: 2, H: 3, HG: 3, Moments: mo, GHOrder: 8, ARD: c.ard,
			Hierarchical: c.hier}, 3)
		if n := len(m.chunks); n != (c.T+chunkLen-1)/chunkLen {
			t.Fatalf("T = %d: %d blocks", c.T, n)
		}
		gr := m.NewGrad()
		m.Gradient(gr, x)
		worst, where := 0.0, ""
		check := func(name string, v []float64, g []float64, rel bool) {
			for i := range v {
				if name == "Breve" && i < m.Cfg.D {
					continue // s̆ of the first step is unused
				}
				h := 1e-6
				if rel {
					h *= v[i]
				}
				old := v[i]
				v[i] = old + h
				fp := m.FreeEnergy(x)
				v[i] = old - h
				fm := m.FreeEnergy(x)
				v[i] = old
				fd := (fp - fm) / (2 * h)
				if e := math.Abs(g[i]-fd) / math.Max(math.Abs(fd), 1); e > worst {
					worst, where = e, name
				}
			}
		}
		check("Mean", x, gr.Mean, false)
		check("SVar", m.SVar, gr.SVar, true)
		check("Ring", m.Ring, gr.Ring, true)
		check("Breve", m.Breve, gr.Breve, false)
		check("WVarF", m.WVarF, gr.WVarF, true)
		check("WVarG", m.WVarG, gr.WVarG, true)
		check("VnMean", m.VnMean, gr.VnMean, false)
		check("VnVar", m.VnVar, gr.VnVar, true)
		check("VmMean", m.VmMean, gr.VmMean, false)
		check("VmVar", m.VmVar, gr.VmVar, true)
		check("VPhiMean", m.VPhiMean, gr.VPhiMean, false)
		check("VPhiVar", m.VPhiVar, gr.VPhiVar, true)
		check("TopMean", m.TopMean, gr.TopMean, false)
		check("TopVar", m.TopVar, gr.TopVar, true)
		if c.hier != (len(m.TopMean) > 0) {
			t.Fatalf("hierarchical=%v: %d top-level nodes", c.hier, len(m.TopMean))
		}
		t.Logf("T=%d dynamic=%v ARD=%v hierarchical=%v %v: worst relative error %.2g (%s)", c.T, dyn, c.ard, c.hier, mo,
			worst, where)
		if worst > 1e-5 {
			t.Errorf("T=%d dynamic=%v ARD=%v hierarchical=%v %v: gradient error %.3g in %s", c.T, dyn, c.ard, c.hier, mo,
				worst, where)
		}
	}
}

// centralDiff returns the central difference (F(p + h) − F(p − h))/2h of m's free energy at means x in the parameter
// *p, which it leaves as it found it.
func centralDiff(m *Model, x []float64, p *float64, h float64) float64 {
	old := *p
	*p = old + h
	fp := m.FreeEnergy(x)
	*p = old - h
	fm := m.FreeEnergy(x)
	*p = old
	return (fp - fm) / (2 * h)
}

// TestGHNodes checks the quadrature against the Gaussian moments E z^k = (k−1)!! (exact up to degree 2n−1).
func TestGHNodes(t *testing.T) {
	z, w := GHNodes(6)
	want := map[int]float64{0: 1, 2: 1, 4: 3, 6: 15, 8: 105, 10: 945, 1: 0, 3: 0, 11: 0}
	for k, v := range want {
		var s float64
		for q := range z {
			s += w[q] * math.Pow(z[q], float64(k))
		}
		if math.Abs(s-v) > 1e-11*math.Max(1, v) {
			t.Errorf("E z^%d = %v, want %v", k, s, v)
		}
	}
}

// expectTanh returns E tanh(μ + σz), E tanh²(μ + σz) by composite Simpson on [−12, 12] in z (an independent
// reference for the quadrature moments).
func expectTanh(mu, sigma float64) (m1, m2 float64) {
	const n = 20000
	a, b := -12.0, 12.0
	h := (b - a) / n
	for i := 0; i <= n; i++ {
		z := a + float64(i)*h
		c := 2.0
		if i == 0 || i == n {
			c = 1
		} else if i%2 == 1 {
			c = 4
		}
		t := math.Tanh(mu + sigma*z)
		p := c * math.Exp(-z*z/2) / math.Sqrt(2*math.Pi)
		m1 += p * t
		m2 += p * t * t
	}
	return m1 * h / 3, m2 * h / 3
}

// TestMomentsOneUnit: with one input, one hidden unit and deterministic weights the pre-activation is exactly
// Gaussian, so the Gauss–Hermite propagation gives the exact output mean and variance (vs Simpson, 1e-6 with 30
// nodes); the Taylor mean has error O(ỹ²) (halving ỹ divides the error by ≈ 4).
func TestMomentsOneUnit(t *testing.T) {
	l := layer{in: 1, hid: 1, out: 1}
	wm := []float64{1.3, 0.2, 0.8, -0.1} // A, a, B, b
	wv := make([]float64, 4)
	sm, sv := []float64{0.4}, []float64{0.5}
	p := newProp(l, GaussHermite, 30, nil)
	xm, xv := make([]float64, 1), make([]float64, 1)
	p.setWeights(wm, wv)
	p.forward(sm, sv, xm, xv)
	mu, sig := 1.3*0.4+0.2, 1.3*math.Sqrt(0.5)
	m1, m2 := expectTanh(mu, sig)
	wantM, wantV := 0.8*m1-0.1, 0.64*(m2-m1*m1)
	if math.Abs(xm[0]-wantM) > 1e-6 || math.Abs(xv[0]-wantV) > 1e-6 {
		t.Errorf("GH: mean %v var %v, want %v %v", xm[0], xv[0], wantM, wantV)
	}
	pt := newProp(l, Taylor, 0, nil)
	errAt := func(v float64) float64 {
		pt.setWeights(wm, wv)
		pt.forward(sm, []float64{v}, xm, xv)
		e, _ := expectTanh(mu, 1.3*math.Sqrt(v))
		return math.Abs(xm[0] - (0.8*e - 0.1))
	}
	r := errAt(0.02) / errAt(0.01)
	if r < 3.5 || r > 4.5 {
		t.Errorf("Taylor mean error ratio %v under halving ỹ, want ≈ 4", r)
	}
}

// TestNatGradDense compares the model's natural gradient with Σg from dense covariances: the chain covariance
// L⁻¹DL⁻ᵀ per state component (NSSM) and diagonal variances elsewhere, to 1e-12 relative.
func TestNatGradDense(t *testing.T) {
	for _, dyn := range []bool{false, true} {
		m, x := smallModel(t, dyn, Taylor, 5)
		g := make([]float64, m.Dim())
		m.Grad(g, x)
		got := make([]float64, m.Dim())
		m.NatGrad(got, g, x)
		want := make([]float64, m.Dim())
		d, T := m.Cfg.D, m.T
		n := T * d
		if dyn {
			for i := range d {
				L := mat.NewDense(T, T, nil)
				for s := range T {
					L.Set(s, s, 1)
					if s > 0 {
						L.Set(s, s-1, -m.Breve[s*d+i])
					}
				}
				var Li mat.Dense
				if err := Li.Inverse(L); err != nil {
					t.Fatal(err)
				}
				Dm := mat.NewDense(T, T, nil)
				for s := range T {
					Dm.Set(s, s, m.Ring[s*d+i])
				}
				var S mat.Dense
				S.Product(&Li, Dm, Li.T())
				gc := mat.NewVecDense(T, nil)
				for s := range T {
					gc.SetVec(s, g[s*d+i])
				}
				var r mat.VecDense
				r.MulVec(&S, gc)
				for s := range T {
					want[s*d+i] = r.AtVec(s)
				}
			}
		} else {
			for j := range n {
				want[j] = m.SVar[j] * g[j]
			}
		}
		wv := append(append([]float64(nil), m.WVarF...), m.WVarG...)
		for j := n; j < len(g); j++ {
			want[j] = wv[j-n] * g[j]
		}
		for j := range got {
			if math.Abs(got[j]-want[j]) > 1e-12*math.Max(1, math.Abs(want[j])) {
				t.Fatalf("dynamic=%v: natgrad[%d] = %v, want %v", dyn, j, got[j], want[j])
			}
		}
	}
}

// TestHyperNewton is the hyperparameter part of tests 6 and 9: after Update the noise log-std posteriors sit at a
// stationary point, ∂F/∂v̄ = ∂F/∂ṽ = 0 (relative to the size of their terms, 1e-8), and F did not increase.
func TestHyperNewton(t *testing.T) {
	for _, dyn := range []bool{false, true} {
		m, x := smallModel(t, dyn, GaussHermite, 7)
		F0 := m.FreeEnergy(x)
		m.eval(x, nil)
		m.updateHyper(x, true)
		F1 := m.FreeEnergy(x)
		gr := m.NewGrad()
		m.Gradient(gr, x)
		for i, g := range append(append([]float64(nil), gr.VnMean...), gr.VmMean...) {
			if math.Abs(g) > 1e-8*float64(m.T) {
				t.Errorf("dynamic=%v: ∂F/∂v̄[%d] = %v", dyn, i, g)
			}
		}
		for i, v := range m.VnVar {
			if math.Abs(gr.VnVar[i])*v > 1e-8 {
				t.Errorf("dynamic=%v: ∂F/∂ṽ_n[%d]·ṽ = %v", dyn, i, gr.VnVar[i]*v)
			}
		}
		if F1 > F0 {
			t.Errorf("dynamic=%v: hyper update raised F %v → %v", dyn, F0, F1)
		}
		// The full between-step update never raises F (it reverts a stage that would).
		F2 := F1
		for range 5 {
			if err := m.Update(x); err != nil {
				t.Fatal(err)
			}
			F3 := m.FreeEnergy(x)
			if F3 > F2+1e-12*math.Abs(F2) {
				t.Errorf("dynamic=%v: Update raised F %v → %v", dyn, F2, F3)
			}
			F2 = F3
		}
	}
}

// TestARDHyperUpdate checks the ARD update (Config.ARD): after the hyperparameter stage each
// q(v_Φj) sits at the joint stationary point of its closed form C(v̄, ṽ) = M v̄ + ½S e^{2ṽ−2v̄} + ½·10⁻⁴(v̄² + ṽ) −
// ½log ṽ, where S = Σ_i(Φ̄_ij² + Φ̃_ij) over the M weights of column j is summed here from the weights (columns of B,
// and for the NSSM of C and D): M − S e^{2ṽ−2v̄} + 10⁻⁴v̄ = 0 (to 1e-9·M) and ṽ(2S e^{2ṽ−2v̄} + 10⁻⁴) = 1 (1e-9).
// Central differences of F itself (h = 1e-5) in v̄_j and ṽ_j vanish to 1e-6·M and 1e-6/ṽ, F did not increase, and
// F with ARD differs from F without it (the prior is in use).
func TestARDHyperUpdate(t *testing.T) {
	for _, dyn := range []bool{false, true} {
		m, x := smallModelARD(t, dyn, GaussHermite, true, 11)
		F0 := m.FreeEnergy(x)
		m.updateHyper(x, true) // uses the sums of the last evaluation (FreeEnergy above)
		F1 := m.FreeEnergy(x)
		if F1 > F0 {
			t.Errorf("dynamic=%v: ARD update raised F %v → %v", dyn, F0, F1)
		}
		// Columns, summed independently of the model's bookkeeping.
		var S, M []float64
		col := func(w, wv []float64, rows, cols int) {
			s, c := make([]float64, cols), make([]float64, cols)
			for i := range rows {
				for j := range cols {
					k := i*cols + j
					s[j] += w[k]*w[k] + wv[k]
					c[j]++
				}
			}
			S, M = append(S, s...), append(M, c...)
		}
		_, wf, wg := m.split(x)
		H, P, d, HG := m.Cfg.H, m.P, m.Cfg.D, m.Cfg.HG
		offB := H*d + H
		col(wf[offB:offB+P*H], m.WVarF[offB:offB+P*H], P, H)
		if dyn {
			offD := HG*d + HG
			col(wg[:HG*d], m.WVarG[:HG*d], HG, d)
			col(wg[offD:offD+d*HG], m.WVarG[offD:offD+d*HG], d, HG)
		}
		if len(S) != len(m.VPhiMean) {
			t.Fatalf("dynamic=%v: %d ARD groups, want %d", dyn, len(m.VPhiMean), len(S))
		}
		for j := range S {
			v, w := m.VPhiMean[j], m.VPhiVar[j]
			e := S[j] * math.Exp(2*w-2*v)
			if r := M[j] - e + hyperPrec*v; math.Abs(r) > 1e-9*M[j] {
				t.Errorf("dynamic=%v column %d: ∂C/∂v̄ = %v", dyn, j, r)
			}
			if r := w*(2*e+hyperPrec) - 1; math.Abs(r) > 1e-9 {
				t.Errorf("dynamic=%v column %d: ṽ(2Sψ + 10⁻⁴) − 1 = %v", dyn, j, r)
			}
			fd := func(p *float64, h float64) float64 { return centralDiff(m, x, p, h) }
			if g := fd(&m.VPhiMean[j], 1e-5); math.Abs(g) > 1e-6*M[j] {
				t.Errorf("dynamic=%v column %d: FD ∂F/∂v̄ = %v", dyn, j, g)
			}
			if g := fd(&m.VPhiVar[j], 1e-5*w); math.Abs(g)*w > 1e-6 {
				t.Errorf("dynamic=%v column %d: FD ∂F/∂ṽ·ṽ = %v", dyn, j, g*w)
			}
		}
		// The same state without ARD (unit priors) has another F.
		plain, _ := smallModelARD(t, dyn, GaussHermite, false, 11)
		if Fp := plain.FreeEnergy(x); math.Abs(Fp-F0) < 1e-6 {
			t.Errorf("dynamic=%v: F with ARD %v equals F without %v", dyn, F0, Fp)
		}
	}
}

// TestBadInput: configuration and data errors before iterating; a state with a non-positive variance has F = NaN.
func TestBadInput(t *testing.T) {
	X := make([]float64, 10*3)
	for _, c := range []struct {
		X    []float64
		T, P int
		cfg  Config
		want string // in the message
	}{
		{X, 10, 3, Config{D: 0, H: 2}, "d = 0 (want ≥ 1)"},
		{X, 10, 3, Config{D: 2, H: 0}, "H = 0 (want ≥ 1)"},
		{X, 10, 3, Config{D: 2, H: 2, HG: -1}, "HG = -1 (want ≥ 1)"},
		{X, 10, 3, Config{D: 2, H: 2, GHOrder: 1}, "GHOrder = 1 (want ≥ 2)"},
		{X[:3], 1, 3, Config{D: 1, H: 2}, "T = 1 (want ≥ 2)"},
		{X[:0], 0, 0, Config{D: 1, H: 2}, "p = 0 (want ≥ 1), T = 0 (want ≥ 2)"},
		{X[:5], 10, 3, Config{D: 1, H: 2}, "len(X) = 5"},
		{append([]float64{math.NaN()}, X[1:]...), 10, 3, Config{D: 1, H: 2}, "non-finite"},
		{X, 10, 3, Config{D: 1, H: 2, Moments: 7}, "moments 7"},
	} {
		if _, err := New(c.X, c.T, c.P, c.cfg); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want ErrBadInput naming %s", c.cfg, err, c.want)
		}
	}
	// A non-positive variance makes F NaN (the optimisers reject such a start, algos/rcg TestNFANotFiniteStart).
	for _, dyn := range []bool{false, true} {
		m, x := smallModel(t, dyn, Taylor, 1)
		if dyn {
			m.Ring[3] = -1
		} else {
			m.SVar[3] = 0
		}
		if F := m.FreeEnergy(x); !math.IsNaN(F) {
			t.Errorf("dynamic=%v: F = %v with a non-positive variance, want NaN", dyn, F)
		}
	}
}

// TestGHVarianceNonNegative: two identical hidden units with output weights +1 and −1 give the constant output 0.
// Under a wide input (variance up to 1e4) a finite Gauss–Hermite rule can overestimate the effective slope
// k = E tanh′ (a node at the origin, where tanh′ = 1), so each unit's residual Var tanh − k²ỹ_s is negative; the
// residuals add while the source parts cancel through the Jacobian, and an unclamped rule returned output variances
// down to −3.3e3 here (a negative variance makes F unbounded below). The exact output variance is 0; the
// propagation, which treats the units' residual parts as independent, may overestimate it but must never return a
// negative value (tolerance 1e-12), for rule orders 8–10; the output mean must be 0.
func TestGHVarianceNonNegative(t *testing.T) {
	l := layer{in: 1, hid: 2, out: 1}
	wm := []float64{1, 1, 0, 0, 1, -1, 0} // A (2×1), a, B (1×2), b
	wv := make([]float64, len(wm))
	xm, xv := make([]float64, 1), make([]float64, 1)
	worst := math.Inf(1)
	for _, order := range []int{8, 9, 10} {
		p := newProp(l, GaussHermite, order, nil)
		for _, sv := range []float64{1, 100, 1e4} {
			for _, q := range p.z { // put one node at the origin
				sm := []float64{-q * math.Sqrt(sv)}
				p.setWeights(wm, wv)
				p.forward(sm, []float64{sv}, xm, xv)
				if xv[0] < -1e-12 || math.Abs(xm[0]) > 1e-12 {
					t.Errorf("order %d, input N(%.3g, %g): output mean %v, variance %v", order, sm[0], sv, xm[0], xv[0])
				}
				worst = math.Min(worst, xv[0])
			}
		}
	}
	t.Logf("smallest output variance %.3g", worst)
}

// TestGHClampedGradient: the reverse-mode gradient through the clamped Gauss–Hermite residual matches central
// differences (h = 1e-6, relative error below 1e-5 of max(|fd|, 1)) for a layer with wide inputs (variances 20–60),
// where the clamp is active for some units (checked), with respect to input means and variances and all weights.
func TestGHClampedGradient(t *testing.T) {
	l := layer{in: 2, hid: 6, out: 3}
	r := rand.New(rng.NewSource(11, 2))
	wm, wv := make([]float64, l.size()), make([]float64, l.size())
	for i := range wm {
		wm[i] = r.NormFloat64()
		wv[i] = 0.01 + 0.05*r.Float64()
	}
	sm := []float64{0.3, -0.8}
	sv := []float64{20 + 40*r.Float64(), 20 + 40*r.Float64()}
	gxm, gxv := []float64{0.7, -1.1, 0.4}, []float64{0.5, 0.9, 0.3}
	p := newProp(l, GaussHermite, 9, nil)
	xm, xv := make([]float64, l.out), make([]float64, l.out)
	C := func() float64 {
		p.setWeights(wm, wv)
		p.forward(sm, sv, xm, xv)
		var c float64
		for i := range xm {
			c += gxm[i]*xm[i] + gxv[i]*xv[i]
		}
		return c
	}
	C()
	clamped := 0
	for h := range l.hid {
		if p.phw[h] == 0 {
			clamped++
		}
	}
	if clamped == 0 {
		t.Fatal("no clamped unit: the test does not reach the clamped branch")
	}
	gwm, gwv := make([]float64, l.size()), make([]float64, l.size())
	gsm, gsv := make([]float64, l.in), make([]float64, l.in)
	p.backward(sm, sv, gxm, gxv, nil, gsm, gsv)
	p.addWeightGrad(gwm, gwv)
	worst := 0.0
	for _, c := range []struct{ v, g []float64 }{{wm, gwm}, {wv, gwv}, {sm, gsm}, {sv, gsv}} {
		for i := range c.v {
			old, h := c.v[i], 1e-6
			c.v[i] = old + h
			fp := C()
			c.v[i] = old - h
			fm := C()
			c.v[i] = old
			fd := (fp - fm) / (2 * h)
			worst = math.Max(worst, math.Abs(c.g[i]-fd)/math.Max(math.Abs(fd), 1))
		}
	}
	t.Logf("%d of %d units clamped; worst relative error %.2g", clamped, l.hid, worst)
	if worst > 1e-5 {
		t.Errorf("gradient error %.3g", worst)
	}
}
