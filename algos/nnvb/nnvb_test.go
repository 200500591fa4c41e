package nnvb

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/tensor"
)

// gauss is the normalised target N(m, C) given by its precision P (log normaliser 0, so ELBO = −KL(q‖p)).
type gauss struct {
	m   []float64
	p   *mat.SymDense
	ldP float64
}

func newGauss(m []float64, cov []float64) *gauss {
	d := len(m)
	c := mat.NewSymDense(d, append([]float64(nil), cov...))
	var ch mat.Cholesky
	if !ch.Factorize(c) {
		panic("not SPD")
	}
	p := mat.NewSymDense(d, nil)
	ch.InverseTo(p)
	return &gauss{m: m, p: p, ldP: -ch.LogDet()}
}

func (g *gauss) Dim() int { return len(g.m) }

func (g *gauss) LogDensityBatch(b backend.Backend, lp, grad, theta *T) error {
	d, S := theta.Rows(), theta.Cols()
	th := tensor.NewHost(1, d, S)
	if err := b.Download(th, theta); err != nil {
		return err
	}
	hl, hg := tensor.NewHost(1, 1, S), tensor.NewHost(1, d, S)
	for s := 0; s < S; s++ {
		q := 0.0
		for i := 0; i < d; i++ {
			gi := 0.0
			for j := 0; j < d; j++ {
				gi -= g.p.At(i, j) * (th.At(0, j, s) - g.m[j])
			}
			hg.Set(0, i, s, gi)
			q -= 0.5 * (th.At(0, i, s) - g.m[i]) * gi
		}
		hl.Set(0, 0, s, -q-0.5*float64(d)*math.Log(2*math.Pi)+0.5*g.ldP)
	}
	if err := b.Upload(lp, hl); err != nil {
		return err
	}
	return b.Upload(grad, hg)
}

func toy3() *gauss {
	return newGauss([]float64{0.3, -0.2, 0.5}, []float64{0.04, 0.01, 0, 0.01, 0.03, -0.005, 0, -0.005, 0.05})
}

// lbAt evaluates the MC lower bound and the four Euclidean gradient blocks at p with the draws of number 0 (common
// random numbers).
func lbAt(t *testing.T, b backend.Backend, m model.Batched, p Params, cfg Config) (float64, [4][]float64) {
	t.Helper()
	w, err := newWork(b, m, cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	defer w.free()
	if err := w.grad(); err != nil {
		t.Fatal(err)
	}
	return w.lb, [4][]float64{w.download(w.g1), w.download(w.gb1), w.download(w.g2), w.download(w.gb2)}
}

// gradFDErr is the largest relative error (|a − fd|/max(1, |fd|)) of the analytic gradient against central finite
// differences (h = 1e-5) of the fixed-draw MC lower bound over every ambient coordinate of the four blocks.
func gradFDErr(t *testing.T, literal bool) float64 {
	b := testbackend.Open(t)
	m := toy3()
	p, err := RandomInit(b, 3, 7, []float64{0.1, 0.2, -0.3})
	if err != nil {
		t.Fatal(err)
	}
	p.B1 = []float64{0.4, -0.7, 1.1}
	cfg := DefaultConfig()
	cfg.S, cfg.Seed, cfg.literal = 5, 3, literal
	_, g := lbAt(t, b, m, p, cfg)
	worst := 0.0
	blocks := []*[]float64{&p.W1, &p.B1, &p.W2, &p.B2}
	for k, blk := range blocks {
		for i := range *blk {
			const h = 1e-5
			orig := (*blk)[i]
			(*blk)[i] = orig + h
			up, _ := lbAt(t, b, m, p, cfg)
			(*blk)[i] = orig - h
			dn, _ := lbAt(t, b, m, p, cfg)
			(*blk)[i] = orig
			fd := (up - dn) / (2 * h)
			worst = math.Max(worst, math.Abs(g[k][i]-fd)/math.Max(1, math.Abs(fd)))
		}
	}
	return worst
}

// TestB4GradientFD is acceptance test B4: with common random numbers the corrected (5.4) gradient matches central
// finite differences in all four blocks (ambient coordinates) to 1e-6 relative; the paper-literal h”(a) form must
// fail the same check (error > 1e-3).
func TestB4GradientFD(t *testing.T) {
	e := gradFDErr(t, false)
	lit := gradFDErr(t, true)
	t.Logf("max relative error: corrected %.2g, literal %.2g", e, lit)
	if e > 1e-6 {
		t.Errorf("corrected gradient: relative error %.3g > 1e-6", e)
	}
	if !(lit > 1e-3) {
		t.Errorf("paper-literal gradient passes the finite-difference check (error %.3g)", lit)
	}
}

// TestB5InversePath checks the inverse of the flow: from θ = W₂h(W₁ε + b₁) + b₂, z = W₂ᵀ(θ − b₂), a = logit z and
// ε' = W₁ᵀ(a − b₁) return ε to 1e-10, and LogDensity(θ) equals log φ(ε) − Σ_i log h'(a_i) from the forward
// quantities (ε and a = W₁ε + b₁ of the draw) to 1e-10 (acceptance test B5).
func TestB5InversePath(t *testing.T) {
	b := testbackend.Open(t)
	p, err := RandomInit(b, 3, 9, []float64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	p.B1 = []float64{0.2, -0.1, 0.3}
	cfg := DefaultConfig()
	cfg.S = 4
	w, err := newWork(b, toy3(), cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	defer w.free()
	if err := w.grad(); err != nil {
		t.Fatal(err)
	}
	th, e, av := w.download(w.th), w.download(w.e), w.download(w.a)
	d, S := 3, 4
	for s := 0; s < S; s++ {
		fwd := -0.5 * float64(d) * math.Log(2*math.Pi)
		col := make([]float64, d)
		for i := 0; i < d; i++ {
			z := 1 / (1 + math.Exp(-av[i*S+s]))
			fwd += -0.5*e[i*S+s]*e[i*S+s] - math.Log(z*(1-z))
			col[i] = th[i*S+s]
		}
		if got := LogDensity(p, col); math.Abs(got-fwd) > 1e-10*math.Max(1, math.Abs(fwd)) {
			t.Fatalf("sample %d: LogDensity %v, forward log φ(ε) − Σ log h'(a) = %v", s, got, fwd)
		}
		z := make([]float64, d)
		for i := 0; i < d; i++ {
			for k := 0; k < d; k++ {
				z[i] += p.W2[k*d+i] * (th[k*S+s] - p.B2[k])
			}
		}
		for j := 0; j < d; j++ {
			ej := 0.0
			for i := 0; i < d; i++ {
				ej += p.W1[i*d+j] * (math.Log(z[i]/(1-z[i])) - p.B1[i])
			}
			if math.Abs(ej-e[j*S+s]) > 1e-10 {
				t.Fatalf("sample %d coordinate %d: ε' %v, ε %v", s, j, ej, e[j*S+s])
			}
		}
	}
}

// TestB5Normalised is the numerical-integral check of acceptance test B5: in d = 1 (W = +1 and W = −1) and d = 2
// (Haar-random W₁, W₂ of either determinant) the density q of LogDensity integrates to 1 ± 1e-6 over its support.
// The rule is the midpoint rule (2000 points in d = 1, 400² in d = 2) on the box b₂ ± √d, which contains the
// support b₂ + W₂(0, 1)^d and on which q is smooth (it vanishes with all derivatives at the edge of the support);
// the integral does not use the cube structure of the support. Measured errors: 2e-10 or less.
func TestB5Normalised(t *testing.T) {
	b := testbackend.Open(t)
	type tc struct {
		name string
		p    Params
	}
	cases := []tc{
		{"d=1 W=+1", Params{W1: []float64{1}, W2: []float64{1}, B1: []float64{0.4}, B2: []float64{0.3}}},
		{"d=1 W=−1", Params{W1: []float64{-1}, W2: []float64{-1}, B1: []float64{-1.1}, B2: []float64{-0.2}}},
	}
	for _, seed := range []uint64{3, 5} {
		p, err := RandomInit(b, 2, seed, []float64{0.3, -0.2})
		if err != nil {
			t.Fatal(err)
		}
		p.B1 = []float64{0.4, -1.1}
		det := p.W2[0]*p.W2[3] - p.W2[1]*p.W2[2]
		cases = append(cases, tc{fmt.Sprintf("d=2 seed %d, det W₂ %+.0f", seed, det), p})
	}
	for _, c := range cases {
		d := len(c.p.B2)
		n := map[int]int{1: 2000, 2: 400}[d]
		r := math.Sqrt(float64(d))
		h := 2 * r / float64(n)
		th := make([]float64, d)
		sum := 0.0
		idx := make([]int, d)
		for {
			vol := 1.0
			for i := range th {
				th[i] = c.p.B2[i] - r + (float64(idx[i])+0.5)*h
				vol *= h
			}
			sum += math.Exp(LogDensity(c.p, th)) * vol
			k := 0
			for ; k < d; k++ {
				if idx[k]++; idx[k] < n {
					break
				}
				idx[k] = 0
			}
			if k == d {
				break
			}
		}
		t.Logf("%s: ∫q − 1 = %.2g", c.name, sum-1)
		if math.Abs(sum-1) > 1e-6 {
			t.Errorf("%s: ∫q = %.10f, want 1 ± 1e-6", c.name, sum)
		}
	}
}

// TestB6KFAC is acceptance test B6: the natural gradient of W₂ equals a dense solve with the damped Kronecker
// Fisher (C_δ + γ_δI) ⊗ (W₂C_zW₂ᵀ + γ_zI) on column-major vec at d = 3 (1e-10); the b₂ block equals the dense
// (W₂C_δW₂ᵀ + γ_δI)⁻¹ g; and with S < d and no damping the fit refuses to start (singular factors).
func TestB6KFAC(t *testing.T) {
	b := testbackend.Open(t)
	p, err := RandomInit(b, 3, 11, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.S, cfg.Damping = 6, 0.05
	w, err := newWork(b, toy3(), cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	defer w.free()
	if err := w.grad(); err != nil {
		t.Fatal(err)
	}
	if err := w.natural(); err != nil {
		t.Fatal(err)
	}
	const d = 3
	get := func(x *T) *mat.Dense { return mat.NewDense(x.Rows(), x.Cols(), w.download(x)) }
	cz, cd, w2, g2, n2 := get(w.cz), get(w.cd), get(w.w2), get(w.g2), get(w.n2)
	gz, gd := 0.05*mat.Trace(cz)/d, 0.05*mat.Trace(cd)/d
	var kz, kd mat.Dense
	kz.Product(w2, cz, w2.T())
	kd.CloneFrom(cd)
	for i := 0; i < d; i++ {
		kz.Set(i, i, kz.At(i, i)+gz)
		kd.Set(i, i, kd.At(i, i)+gd)
	}
	var f mat.Dense
	f.Kronecker(&kd, &kz)
	vec := mat.NewVecDense(d*d, nil)
	for j := 0; j < d; j++ {
		for i := 0; i < d; i++ {
			vec.SetVec(j*d+i, g2.At(i, j))
		}
	}
	var x mat.VecDense
	if err := x.SolveVec(&f, vec); err != nil {
		t.Fatal(err)
	}
	for j := 0; j < d; j++ {
		for i := 0; i < d; i++ {
			if diff := math.Abs(x.AtVec(j*d+i) - n2.At(i, j)); diff > 1e-10*math.Max(1, math.Abs(n2.At(i, j))) {
				t.Fatalf("nat W₂[%d,%d] = %v, dense %v", i, j, n2.At(i, j), x.AtVec(j*d+i))
			}
		}
	}
	var kb mat.Dense
	kb.Product(w2, cd, w2.T())
	for i := 0; i < d; i++ {
		kb.Set(i, i, kb.At(i, i)+gd)
	}
	var xb mat.VecDense
	if err := xb.SolveVec(&kb, mat.NewVecDense(d, w.download(w.gb2))); err != nil {
		t.Fatal(err)
	}
	nb := w.download(w.nb2)
	for i := range nb {
		if math.Abs(nb[i]-xb.AtVec(i)) > 1e-10*math.Max(1, math.Abs(nb[i])) {
			t.Fatalf("nat b₂[%d] = %v, dense %v", i, nb[i], xb.AtVec(i))
		}
	}
	cfg.S, cfg.Damping = 2, 0
	if _, err := fitFrom(b, toy3(), p, cfg, run.Control{MaxIter: 1}); !errors.Is(err, backend.ErrNotPositiveDefinite) {
		t.Fatalf("S = 2 < d = 3 without damping: %v, want ErrNotPositiveDefinite", err)
	}
}

// TestBadInput: bad settings and a non-orthogonal start are errors before any iteration.
func TestBadInput(t *testing.T) {
	b := testbackend.Open(t)
	p, err := RandomInit(b, 3, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*Config){
		"S":        func(c *Config) { c.S = 0 },
		"step":     func(c *Config) { c.Step = 0 },
		"momentum": func(c *Config) { c.Momentum = 1 },
		"damping":  func(c *Config) { c.Damping = -1 },
	} {
		cfg := DefaultConfig()
		mod(&cfg)
		if _, err := fitFrom(b, toy3(), p, cfg, run.Control{MaxIter: 1}); !errors.Is(err, run.ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
	q := p
	q.W1 = append([]float64(nil), p.W1...)
	q.W1[0] += 1e-3
	if _, err := fitFrom(b, toy3(), q, DefaultConfig(), run.Control{MaxIter: 1}); !errors.Is(err, run.ErrConfig) {
		t.Errorf("non-orthogonal W₁: %v", err)
	}
	q.W1 = p.W1[:4]
	if _, err := fitFrom(b, toy3(), q, DefaultConfig(), run.Control{MaxIter: 1}); !errors.Is(err, backend.ErrShape) {
		t.Errorf("short W₁: %v", err)
	}
	// A NaN bias (otherwise a non-finite bound after one iteration) and a b₂ of another length (otherwise cut).
	q = p
	q.B2 = []float64{0, math.NaN(), 0}
	if _, err := fitFrom(b, toy3(), q, DefaultConfig(), run.Control{MaxIter: 1}); !errors.Is(err, run.ErrConfig) {
		t.Errorf("NaN b₂: %v", err)
	}
	if _, err := RandomInit(b, 3, 1, []float64{1, 2}); !errors.Is(err, backend.ErrShape) {
		t.Errorf("b₂ of length 2 for d = 3: %v", err)
	}
}

// TestC8Determinism: a fixed seed reproduces the NNVB lower-bound trace and final W₂ bit for bit on the CPU.
func TestC8Determinism(t *testing.T) {
	b := testbackend.Open(t)
	p, err := RandomInit(b, 3, 4, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.S, cfg.Seed = 8, 5
	r1, err := fitFrom(b, toy3(), p, cfg, run.Control{MaxIter: 40})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := fitFrom(b, toy3(), p, cfg, run.Control{MaxIter: 40})
	if err != nil {
		t.Fatal(err)
	}
	for i := range r1.LB {
		if r1.LB[i] != r2.LB[i] {
			t.Fatalf("iteration %d: %v then %v", i+1, r1.LB[i], r2.LB[i])
		}
	}
	for i := range r1.W2 {
		if r1.W2[i] != r2.W2[i] {
			t.Fatalf("W₂[%d] differs", i)
		}
	}
}

// fitFrom runs Fit from p0 under ctl (its context when set).
func fitFrom(b backend.Backend, m model.Batched, p0 Params, cfg Config, ctl run.Control) (*Result, error) {
	cfg.Init, cfg.Control = p0, ctl
	return Fit(ctl.Ctx, b, m, cfg)
}
