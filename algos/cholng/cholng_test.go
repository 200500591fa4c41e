package cholng

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/internal/numtest"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/tensor"
)

// gauss is the target N(m, P⁻¹): log p = −½(θ−m)ᵀP(θ−m) + const.
type gauss struct {
	m []float64
	p *mat.SymDense
}

func (g *gauss) Dim() int { return len(g.m) }
func (g *gauss) LogJoint(th, grad []float64) float64 {
	d := len(g.m)
	s := 0.0
	for i := 0; i < d; i++ {
		gi := 0.0
		for j := 0; j < d; j++ {
			gi -= g.p.At(i, j) * (th[j] - g.m[j])
		}
		grad[i] = gi
		s += 0.5 * gi * (th[i] - g.m[i])
	}
	return s
}

func (g *gauss) LogDensity(grad, th []float64) (float64, error) { return g.LogJoint(th, grad), nil }

func randSPD(r *rand.Rand, d int) *mat.SymDense {
	a := mat.NewDense(d, d, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			a.Set(i, j, r.NormFloat64())
		}
	}
	p := mat.NewSymDense(d, nil)
	p.SymOuterK(1/float64(d), a)
	for i := 0; i < d; i++ {
		p.SetSym(i, i, p.At(i, i)+0.5)
	}
	return p
}

func randLower(r *rand.Rand, d int, mixed bool) []float64 {
	l := make([]float64, d*d)
	for i := 0; i < d; i++ {
		for j := 0; j < i; j++ {
			l[i*d+j] = 0.3 * r.NormFloat64()
		}
		l[i*d+i] = 0.5 + r.Float64()
		if mixed && r.IntN(2) == 0 {
			l[i*d+i] = -l[i*d+i]
		}
	}
	return l
}

func randVec(r *rand.Rand, d int) []float64 {
	v := make([]float64, d)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}

// vechIdx lists the (i, j), i ≥ j, of vech order (column by column).
func vechIdx(d int) [][2]int {
	var out [][2]int
	for j := 0; j < d; j++ {
		for i := j; i < d; i++ {
			out = append(out, [2]int{i, j})
		}
	}
	return out
}

// denseFisher is the independent Gaussian Fisher of λ = (μ, vech Λ): blockdiag(Σ⁻¹, F_Λ) with
// F_kl = ½ tr(Σ⁻¹ ∂_kΣ Σ⁻¹ ∂_lΣ), ∂Σ = ECᵀ + CEᵀ (C) or −Σ(ETᵀ + TEᵀ)Σ (T) (acceptance test 2).
func denseFisher(d int, p Param, l []float64) *mat.Dense {
	L := mat.NewDense(d, d, append([]float64(nil), l...))
	var sig, siginv mat.Dense
	if p == Covariance {
		sig.Mul(L, L.T())
		siginv.Inverse(&sig)
	} else {
		siginv.Mul(L, L.T())
		sig.Inverse(&siginv)
	}
	idx := vechIdx(d)
	n := d + len(idx)
	F := mat.NewDense(n, n, nil)
	F.Slice(0, d, 0, d).(*mat.Dense).Copy(&siginv)
	dS := make([]*mat.Dense, len(idx))
	for k, ij := range idx {
		E := mat.NewDense(d, d, nil)
		E.Set(ij[0], ij[1], 1)
		var a, b2 mat.Dense
		a.Mul(E, L.T())
		b2.Mul(L, E.T())
		a.Add(&a, &b2)
		if p == Precision {
			var t mat.Dense
			t.Mul(&sig, &a)
			a.Mul(&t, &sig)
			a.Scale(-1, &a)
		}
		var t mat.Dense
		t.Mul(&siginv, &a)
		dS[k] = mat.DenseCopyOf(&t)
	}
	for k := range idx {
		for q := range idx {
			var t mat.Dense
			t.Mul(dS[k], dS[q])
			F.Set(d+k, d+q, 0.5*mat.Trace(&t))
		}
	}
	return F
}

func gradVec(t *testing.T, f *Dense) []float64 {
	gm, err := f.GradMu()
	if err != nil {
		t.Fatal(err)
	}
	gl, err := f.GradL()
	if err != nil {
		t.Fatal(err)
	}
	for _, ij := range vechIdx(f.d) {
		gm = append(gm, gl[ij[0]*f.d+ij[1]])
	}
	return gm
}

// Acceptance tests 2–4 and 10: the implemented natural gradient (O(d²) scan) equals the dense Fisher (computed
// independently) solved against the implemented Euclidean gradient, for both parametrisations, d = 1..7, mixed-sign
// diagonals; the Snngm norms equal ‖g̃‖₂ and ⟨ĝ, g̃⟩.
func TestNaturalEqualsFisherSolve(t *testing.T) {
	b := testbackend.Open(t)
	r := rand.New(rand.NewPCG(3, 1))
	worst, worstN := 0.0, 0.0
	for d := 1; d <= 7; d++ {
		for rep := 0; rep < 4; rep++ {
			for _, p := range []Param{Covariance, Precision} {
				tg := &gauss{m: randVec(r, d), p: randSPD(r, d)}
				l := randLower(r, d, rep%2 == 1)
				f, err := NewDense(b, d, p, randVec(r, d), l, 1)
				if err != nil {
					t.Fatal(err)
				}
				if err := f.SetZ(randVec(r, d)); err != nil {
					t.Fatal(err)
				}
				_, ne, err := f.Gradient(tg, Euclidean)
				if err != nil {
					t.Fatal(err)
				}
				ge := gradVec(t, f)
				_, nn, err := f.Gradient(tg, Natural)
				if err != nil {
					t.Fatal(err)
				}
				gn := gradVec(t, f)
				F := denseFisher(d, p, l)
				var want mat.VecDense
				if err := want.SolveVec(F, mat.NewVecDense(len(ge), ge)); err != nil {
					t.Fatal(err)
				}
				worst = max(worst, numtest.MaxRel(gn, want.RawVector().Data, 1))
				// Norms (test 10): Euclidean ‖ĝ‖², natural: C ‖g̃‖², T ⟨ĝ, g̃⟩.
				e2, n2, ip := 0.0, 0.0, 0.0
				for i := range ge {
					e2 += ge[i] * ge[i]
					n2 += gn[i] * gn[i]
					ip += ge[i] * gn[i]
				}
				wantN := n2
				if p == Precision {
					wantN = ip
				}
				worstN = max(worstN, math.Abs(nn-wantN)/max(1, wantN), math.Abs(ne-e2)/max(1, e2))
				f.Close()
			}
		}
	}
	t.Logf("natural vs dense Fisher solve: max rel err %.2e; norms %.2e", worst, worstN)
	if worst > 1e-10 || worstN > 1e-12 {
		t.Fatalf("natural gradient rel err %.3g (tol 1e-10), norm rel err %.3g (tol 1e-12)", worst, worstN)
	}
}

// Acceptance test 5: the Euclidean gradient equals central finite differences of λ ↦ θ(λ; z) contracted with g
// (the STL gradient ∇_θ h at fixed λ, recomputed independently), h = 1e-6, abs ≤ 1e-7.
func TestEuclideanFiniteDifferences(t *testing.T) {
	b := testbackend.Open(t)
	r := rand.New(rand.NewPCG(5, 2))
	const d = 5
	for _, p := range []Param{Covariance, Precision} {
		tg := &gauss{m: randVec(r, d), p: randSPD(r, d)}
		l := randLower(r, d, true)
		mu := randVec(r, d)
		z := randVec(r, d)
		f, err := NewDense(b, d, p, mu, l, 1)
		if err != nil {
			t.Fatal(err)
		}
		f.SetZ(z)
		if _, _, err := f.Gradient(tg, Euclidean); err != nil {
			t.Fatal(err)
		}
		got := gradVec(t, f)
		f.Close()
		L := mat.NewDense(d, d, l)
		theta := func(mu []float64, L *mat.Dense) []float64 {
			var x mat.VecDense
			if p == Covariance {
				x.MulVec(L, mat.NewVecDense(d, z))
			} else {
				x.SolveVec(L.T(), mat.NewVecDense(d, z))
			}
			out := make([]float64, d)
			for i := range out {
				out[i] = mu[i] + x.AtVec(i)
			}
			return out
		}
		// g = ∇log p(θ) − ∇log q(θ) with λ fixed: −∇log q = Σ⁻¹(θ − μ).
		th := theta(mu, L)
		g := make([]float64, d)
		tg.LogJoint(th, g)
		var prec mat.Dense
		if p == Covariance {
			var s mat.Dense
			s.Mul(L, L.T())
			prec.Inverse(&s)
		} else {
			prec.Mul(L, L.T())
		}
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				g[i] += prec.At(i, j) * (th[j] - mu[j])
			}
		}
		const h = 1e-6
		k := d
		for _, ij := range vechIdx(d) {
			Lp, Lm := mat.DenseCopyOf(L), mat.DenseCopyOf(L)
			Lp.Set(ij[0], ij[1], L.At(ij[0], ij[1])+h)
			Lm.Set(ij[0], ij[1], L.At(ij[0], ij[1])-h)
			tp, tm := theta(mu, Lp), theta(mu, Lm)
			fd := 0.0
			for i := range g {
				fd += g[i] * (tp[i] - tm[i]) / (2 * h)
			}
			if e := math.Abs(fd - got[k]); e > 1e-7 {
				t.Fatalf("%v: vech entry (%d,%d): FD %.10g, got %.10g", p, ij[0], ij[1], fd, got[k])
			}
			k++
		}
		for i := 0; i < d; i++ { // ∂θ/∂μ = I
			if e := math.Abs(g[i] - got[i]); e > 1e-9 {
				t.Fatalf("%v: μ_%d: %g vs %g", p, i, got[i], g[i])
			}
		}
	}
}

// Acceptance test 11: at the exact optimum of a Gaussian target every single-draw gradient (STL) vanishes.
func TestSTLZeroVarianceAtOptimum(t *testing.T) {
	b := testbackend.Open(t)
	r := rand.New(rand.NewPCG(7, 3))
	const d = 10
	tg := &gauss{m: randVec(r, d), p: randSPD(r, d)}
	var chol mat.Cholesky
	if !chol.Factorize(tg.p) {
		t.Fatal("not SPD")
	}
	var lp mat.TriDense
	chol.LTo(&lp) // P = LLᵀ → T = L
	var pinv mat.SymDense
	chol.InverseTo(&pinv)
	var c2 mat.Cholesky
	c2.Factorize(&pinv)
	var lc mat.TriDense
	c2.LTo(&lc)
	for _, p := range []Param{Covariance, Precision} {
		src := &lc
		if p == Precision {
			src = &lp
		}
		l := make([]float64, d*d)
		for i := 0; i < d; i++ {
			for j := 0; j <= i; j++ {
				l[i*d+j] = src.At(i, j)
			}
		}
		f, err := NewDense(b, d, p, tg.m, l, 1)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for s := 0; s < 100; s++ {
			f.SetZ(randVec(r, d))
			for _, k := range []Kind{Euclidean, Natural} {
				if _, _, err := f.Gradient(tg, k); err != nil {
					t.Fatal(err)
				}
				for _, v := range gradVec(t, f) {
					worst = max(worst, math.Abs(v))
				}
			}
		}
		f.Close()
		t.Logf("%v: max |gradient| at the optimum %.2e", p, worst)
		if worst > 1e-10 {
			t.Fatalf("%v: STL gradient %.3g at the optimum, want ≤ 1e-10", p, worst)
		}
	}
}

func kl(t *testing.T, res *Result, p Param, tg *gauss) float64 {
	d := len(tg.m)
	L := mat.NewDense(d, d, res.L)
	var sig mat.Dense
	if p == Covariance {
		sig.Mul(L, L.T())
	} else {
		var prec mat.Dense
		prec.Mul(L, L.T())
		sig.Inverse(&prec)
	}
	// KL(q‖p) = ½[tr(PΣ) + (μ−m)ᵀP(μ−m) − d − log|Σ| − log|P|].
	var ps mat.Dense
	ps.Mul(tg.p, &sig)
	q := 0.0
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			q += (res.Mu[i] - tg.m[i]) * tg.p.At(i, j) * (res.Mu[j] - tg.m[j])
		}
	}
	ls, _ := mat.LogDet(&sig)
	lp, _ := mat.LogDet(tg.p)
	return 0.5 * (mat.Trace(&ps) + q - float64(d) - ls - lp)
}

// Acceptance test 13: Snngm from μ = 0, C = 0.1I (T = 10I), 20 000 iterations without stopping, d = 20:
// KL(q‖p) < 0.02 for 1b and 2b.
func TestSnngmConvergesGaussian(t *testing.T) {
	b := testbackend.Open(t)
	r := rand.New(rand.NewPCG(11, 4))
	const d = 20
	tg := &gauss{m: randVec(r, d), p: randSPD(r, d)}
	for _, p := range []Param{Covariance, Precision} {
		res, err := fitWith(b, tg, Config{Param: p, Seed: 1, NoStop: true, EvalDraws: 10}, run.Control{MaxIter: 20000}, false)
		if err != nil {
			t.Fatal(err)
		}
		k := kl(t, res, p, tg)
		t.Logf("%v: KL %.4f after %d iterations (%v)", p, k, res.Iters, res.Time)
		if k > 0.02 {
			t.Fatalf("%v: KL %.4g ≥ 0.02", p, k)
		}
	}
}

// Acceptance test 14: with the Euclidean norm every Snngm update has ‖Δλ‖₂ ≤ α(1 + 1e-12), and the first update is
// α·g̃₁/‖g̃₁‖.
func TestSnngmStepBound(t *testing.T) {
	b := testbackend.Open(t)
	r := rand.New(rand.NewPCG(13, 5))
	const d = 6
	tg := &gauss{m: randVec(r, d), p: randSPD(r, d)}
	cfg := Config{Param: Covariance}
	cfg.defaults()
	f, _ := NewDense(b, d, Covariance, nil, nil, 0.1)
	defer f.Close()
	o, err := newOptimizer(b, cfg, [][2]*T{{f.Mu, f.GMu}, {f.L, f.GL}}, f.NumParams())
	if err != nil {
		t.Fatal(err)
	}
	alpha := 0.001 * math.Sqrt(float64(d+d*(d+1)/2))
	flat := func() []float64 {
		mu, l, _ := f.Params()
		return append(mu, l...)
	}
	for it := 0; it < 200; it++ {
		f.SetZ(randVec(r, d))
		_, n2, err := f.Gradient(tg, Natural)
		if err != nil {
			t.Fatal(err)
		}
		gm, _ := f.GradMu()
		gl, _ := f.GradL()
		g := append(gm, gl...)
		before := flat()
		if _, err := o.step(math.Sqrt(n2)); err != nil {
			t.Fatal(err)
		}
		after := flat()
		s := 0.0
		for i := range after {
			s += (after[i] - before[i]) * (after[i] - before[i])
		}
		if math.Sqrt(s) > alpha*(1+1e-12) {
			t.Fatalf("iteration %d: step %.6g > α = %.6g", it, math.Sqrt(s), alpha)
		}
		if it == 0 {
			for i := range g {
				want := alpha * g[i] / math.Sqrt(n2)
				if math.Abs(after[i]-before[i]-want) > 1e-15 {
					t.Fatalf("first step entry %d: %g, want %g", i, after[i]-before[i], want)
				}
			}
		}
	}
}

// Acceptance test 15: Adam against a hand-computed 3-step trace on a 1×1×1 parameter.
func TestAdamTrace(t *testing.T) {
	b := testbackend.Open(t)
	p, _ := b.Alloc(tensor.Shape{Batch: 1, Rows: 1, Cols: 1})
	g, _ := b.Alloc(tensor.Shape{Batch: 1, Rows: 1, Cols: 1})
	cfg := Config{Optimizer: Adam, Kind: Euclidean}
	if err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	o, err := newOptimizer(b, cfg, [][2]*T{{p, g}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Hand trace: m = 0.1 g₁ etc. with g = 2, −1, 0.5 and λ₀ = 0.
	// t=1: m=0.2, s=0.004, m̂=2, ŝ=4 → Δ=1e-3·2/(2+1e-8).
	// t=2: m=0.18−0.1=0.08, s=0.003996+0.001=0.004996, m̂=0.08/0.19, ŝ=0.004996/0.001999.
	// t=3: m=0.072+0.05=0.122, s=0.004991004+0.00025=0.005241004, m̂=0.122/0.271, ŝ=0.005241004/0.002997001.
	want := 1e-3*2/(2+1e-8) +
		1e-3*(0.08/0.19)/(math.Sqrt(0.004996/0.001999)+1e-8) +
		1e-3*(0.122/0.271)/(math.Sqrt(0.005241004/0.002997001)+1e-8)
	for _, gv := range []float64{2, -1, 0.5} {
		upTo(b, g, []float64{gv})
		if _, err := o.step(0); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := downAll(b, p)
	if math.Abs(got[0]-want) > 1e-15 {
		t.Fatalf("Adam after 3 steps: %.17g, want %.17g", got[0], want)
	}
}

// Acceptance test 16: the stopping rule on synthetic block means.
func TestStopRule(t *testing.T) {
	for _, c := range []struct {
		means []float64
		stop  bool
	}{{[]float64{0, 1, 1.02}, false}, {[]float64{0, 0.01, 0.015}, true}, {[]float64{5, 4, 3}, true}, {[]float64{5, 4}, false}} {
		if got := SlopeStops(c.means, 0.01); got != c.stop {
			t.Errorf("%v: stop %v, want %v", c.means, got, c.stop)
		}
	}
	s := &StopRule{Block: 2, Tol: 0.01}
	var fired []int
	for i, h := range []float64{0, 0, 1, 1, 1.01, 1.01, 1.0, 1.0} {
		if s.Add(h) {
			fired = append(fired, i)
		}
	}
	if len(fired) != 1 || fired[0] != 7 { // means 0, 1, 1.01 (slope 0.505), then 1 (slope −0.005)
		t.Fatalf("rule fired at %v, want [7] (means %v)", fired, s.Means)
	}
}

// Bad input: a factor with entries above the diagonal, or a zero or NaN diagonal, is refused before any iteration.
func TestBadFactor(t *testing.T) {
	b := testbackend.Open(t)
	up := []float64{1, 0.5, 0, 1}
	if _, err := NewDense(b, 2, Covariance, nil, up, 1); err == nil {
		t.Fatal("upper-triangular entry accepted")
	}
	for _, l := range [][]float64{{1, 0, 0.3, 0}, {math.NaN(), 0, 0, 1}} {
		if _, err := NewDense(b, 2, Precision, nil, l, 1); err == nil {
			t.Fatalf("factor %v accepted", l)
		}
	}
	if _, err := fitWith(b, &gauss{m: []float64{0}, p: mat.NewSymDense(1, []float64{1})}, Config{Optimizer: Snngm, Kind: Euclidean}, run.Control{}, false); err == nil {
		t.Fatal("Snngm with Euclidean gradients accepted")
	}
	// The log-diagonal parametrisation needs a positive diagonal.
	if _, err := NewBlock(b, []int{2}, -1, true); !errors.Is(err, ErrFactor) {
		t.Errorf("negative diagonal with LogDiag: %v", err)
	}
	if _, err := NewBlockDiag(b, []int{2, 1}, []float64{1, -0.5}, true); !errors.Is(err, ErrFactor) {
		t.Errorf("negative block diagonal with LogDiag: %v", err)
	}
	f, err := NewBlock(b, []int{2}, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.SetBlock(0, []float64{-1, 0, 0.3, 1}); !errors.Is(err, ErrFactor) {
		t.Errorf("SetBlock with a negative diagonal under LogDiag: %v", err)
	}
}

// Bad settings and a non-finite start are refused before any iteration, with the setting named: otherwise a
// negative rate ascends the loss, a NaN one ends "not-finite" with no error, and an unknown optimiser fails deep in
// the backend.
func TestBadConfig(t *testing.T) {
	b := testbackend.Open(t)
	g := &gauss{m: []float64{0, 1}, p: mat.NewSymDense(2, []float64{2, 0.5, 0.5, 1})}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Optimizer: Adam, LR: -1}, "learning rate -1"},
		{Config{Optimizer: Adam, LR: math.NaN()}, "learning rate NaN"},
		{Config{Alpha: -0.1}, "α = -0.1"},
		{Config{Optimizer: Adam, Eps: -1}, "ε = -1"},
		{Config{Tol: math.NaN()}, "tolerance NaN"},
		{Config{Block: -1}, "block length -1"},
		{Config{EvalDraws: -1}, "evaluation draws -1"},
		{Config{Control: run.Control{MaxIter: -1}}, "MaxIter: -1 < 0"},
		{Config{Optimizer: 7}, "unknown optimizer Optimizer(7)"},
		{Config{Optimizer: Adam, Kind: 7}, "unknown gradient kind Kind(7)"},
		{Config{InitMu: []float64{math.NaN(), 0}}, "mean entry 0 is NaN"},
		{Config{InitL: []float64{1, 0, math.Inf(1), 1}}, "entry (1,0) is +Inf"},
	} {
		calls := 0
		rec := run.Func(func(run.Record) { calls++ })
		_, err := fitWith(b, g, c.cfg, run.Control{MaxIter: 20, Recorder: rec}, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.cfg, err, c.want)
		}
		if calls != 0 {
			t.Errorf("%+v: %d iterations before the error", c.cfg, calls)
		}
	}
}

// A run checkpointed at 300 iterations and resumed to 600 equals an uninterrupted 600-iteration run bit for bit.
func TestCheckpointResume(t *testing.T) {
	b := testbackend.Open(t)
	r := rand.New(rand.NewPCG(17, 6))
	tg := &gauss{m: randVec(r, 4), p: randSPD(r, 4)}
	for _, opt := range []Optimizer{Snngm, Adam} {
		cfg := Config{Param: Precision, Optimizer: opt, Seed: 9, Block: 100, NoStop: true, EvalDraws: 5}
		full, err := fitWith(b, tg, cfg, run.Control{MaxIter: 600}, false)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "cp")
		if _, err := fitWith(b, tg, cfg, run.Control{MaxIter: 300, CheckpointEvery: 300, CheckpointPath: path}, false); err != nil {
			t.Fatal(err)
		}
		res, err := fitWith(b, tg, cfg, run.Control{MaxIter: 600, CheckpointPath: path}, true)
		if err != nil {
			t.Fatal(err)
		}
		for i := range full.L {
			if full.L[i] != res.L[i] {
				t.Fatalf("%v: resumed factor differs at %d: %v vs %v", opt, i, res.L[i], full.L[i])
			}
		}
		if res.LHat != full.LHat || len(res.Means) != len(full.Means) {
			t.Fatalf("%v: resumed L̂ %v vs %v", opt, res.LHat, full.LHat)
		}
	}
}

// fitWith runs Fit under ctl (with cfg's cap when it has one), resuming from ctl.CheckpointPath when resume.
func fitWith(b backend.Backend, m model.Density, cfg Config, ctl run.Control, resume bool) (*Result, error) {
	if cfg.Control.MaxIter != 0 {
		ctl.MaxIter = cfg.Control.MaxIter
	}
	ctl.Resume = resume
	cfg.Control = ctl
	return Fit(context.Background(), b, m, cfg)
}

// fitSparseWith is fitWith for FitSparse.
func fitSparseWith(f Sparse, m model.Density, cfg Config, ctl run.Control, resume bool) (*SparseResult, error) {
	ctl.Resume = resume
	cfg.Control = ctl
	return FitSparse(context.Background(), f, m, cfg)
}
