package cholng

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/internal/numtest"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/rng"
)

// mixedGLMM is a Poisson GLMM whose groups have different numbers of random effects (the local block sizes of
// Alg 2c differ between groups): log μ_gj = x_gjᵀβ + z_gjᵀb_g with b_g ∈ ℝ^{r_g}, b_g ~ N(0, e^{2κ}I),
// β ~ N(0, 10²I), κ ~ N(0, 1); θ = (b_1, …, b_n, β, κ), d_G = p + 1. A test fixture for unequal group sizes;
// its gradient is checked against finite differences in TestMixedGLMMGradient.
type mixedGLMM struct {
	sizes   []int
	p, per  int
	x, z, y []float64 // per observation: p covariates; max(r) random-effect covariates (first r_g used)
	rmax    int
}

// newMixedGLMM draws n groups of per observations, group g having sizes[g mod len(pattern)] random effects.
func newMixedGLMM(n int, pattern []int, seed uint64) *mixedGLMM {
	const p, per = 4, 4
	m := &mixedGLMM{p: p, per: per}
	for _, r := range pattern {
		m.rmax = max(m.rmax, r)
	}
	m.sizes = make([]int, n)
	nobs := n * per
	m.x, m.z, m.y = make([]float64, nobs*p), make([]float64, nobs*m.rmax), make([]float64, nobs)
	c := rng.Counter{Seed: seed}
	u := make([]float64, p+m.rmax+1)
	beta := []float64{0.3, -0.2, 0.1, 0.05}
	for g := 0; g < n; g++ {
		r := pattern[g%len(pattern)]
		m.sizes[g] = r
		for j := 0; j < per; j++ {
			o := g*per + j
			c.Advance(o * len(u)).FillNormal(u)
			eta := 0.0
			for k := 0; k < p; k++ {
				v := 0.5 * u[k]
				if k == 0 {
					v = 1
				}
				m.x[o*p+k] = v
				eta += v * beta[k]
			}
			for k := 0; k < m.rmax; k++ {
				v := 1.0
				if k > 0 {
					v = float64(j)/float64(per) - 0.5 + 0.1*u[p+k]
				}
				m.z[o*m.rmax+k] = v
				if k < r { // a random effect of sd 0.3, from the draws of the group's first observation
					eta += 0.3 * v * u[p+k]
				}
			}
			mu := math.Exp(eta)
			m.y[o] = math.Floor(mu + 0.5 + 0.7*u[p+m.rmax]) // a count near μ
			if m.y[o] < 0 {
				m.y[o] = 0
			}
		}
	}
	return m
}

func (m *mixedGLMM) local() int {
	s := 0
	for _, r := range m.sizes {
		s += r
	}
	return s
}

func (m *mixedGLMM) Dim() int { return m.local() + m.p + 1 }

func (m *mixedGLMM) LogJoint(th, grad []float64) float64 {
	p, nl := m.p, m.local()
	beta, kappa := th[nl:nl+p], th[nl+p]
	gb := grad[nl : nl+p]
	prec := math.Exp(-2 * kappa)
	lp := -0.5*kappa*kappa - 0.5*math.Log(2*math.Pi)
	gk := -kappa
	for k := range beta {
		lp -= beta[k]*beta[k]/200 + 0.5*math.Log(2*math.Pi*100)
		gb[k] = -beta[k] / 100
	}
	o := 0
	for g, r := range m.sizes {
		b, gbg := th[o:o+r], grad[o:o+r]
		bb := 0.0
		for k := range b {
			bb += b[k] * b[k]
			gbg[k] = -prec * b[k]
		}
		lp += -0.5*float64(r)*math.Log(2*math.Pi) - float64(r)*kappa - 0.5*prec*bb
		gk += -float64(r) + prec*bb
		for j := 0; j < m.per; j++ {
			ob := g*m.per + j
			x, z := m.x[ob*p:(ob+1)*p], m.z[ob*m.rmax:ob*m.rmax+r]
			eta := 0.0
			for k := range x {
				eta += x[k] * beta[k]
			}
			for k := range z {
				eta += z[k] * b[k]
			}
			mu := math.Exp(eta)
			lp += m.y[ob]*eta - mu
			res := m.y[ob] - mu
			for k := range x {
				gb[k] += res * x[k]
			}
			for k := range z {
				gbg[k] += res * z[k]
			}
		}
		o += r
	}
	grad[nl+p] = gk
	return lp
}

func (m *mixedGLMM) LogDensity(grad, th []float64) (float64, error) { return m.LogJoint(th, grad), nil }

// BenchmarkUnequalGroups times one Snngm iteration of Alg 2c (Arrow, natural gradient) and Alg 1c (Block: the
// groups plus the global block) on mixedGLMM with 1e4 and 1e5 groups of 4 observations: all groups of 2 random
// effects against alternating 1 and 3 (the same d and coupling size). With the groups bucketed by size the
// per-iteration times should be close.
func BenchmarkUnequalGroups(b *testing.B) {
	be := testbackend.Open(b)
	for _, n := range []int{10000, 100000} {
		for _, pat := range [][]int{{2}, {1, 3}} {
			m := newMixedGLMM(n, pat, 1)
			b.Run(fmt.Sprintf("arrow/groups=%d/sizes=%v", n, pat), func(b *testing.B) {
				f, err := NewArrow(be, m.sizes, m.p+1, 10)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				benchSparse(b, f, m, Natural, Snngm)
			})
			b.Run(fmt.Sprintf("block/groups=%d/sizes=%v", n, pat), func(b *testing.B) {
				f, err := NewBlock(be, append(append([]int(nil), m.sizes...), m.p+1), 0.1, false)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				benchSparse(b, f, m, Natural, Snngm)
			})
		}
	}
}

// The fixture's gradient against central finite differences (h = 1e-6, rel ≤ 1e-6, the models' gradient tolerance), so
// that the family tests below run on a correct log joint.
func TestMixedGLMMGradient(t *testing.T) {
	m := newMixedGLMM(7, []int{1, 3, 2}, 2)
	r := rand.New(rand.NewPCG(5, 6))
	th := randVec(r, m.Dim())
	for k := range th {
		th[k] *= 0.3
	}
	g := make([]float64, m.Dim())
	m.LogJoint(th, g)
	scratch := make([]float64, m.Dim())
	fd := make([]float64, m.Dim())
	for k := range th {
		const h = 1e-6
		x := th[k]
		th[k] = x + h
		up := m.LogJoint(th, scratch)
		th[k] = x - h
		dn := m.LogJoint(th, scratch)
		th[k] = x
		fd[k] = (up - dn) / (2 * h)
	}
	if e, ok := relOK(g, fd, 1e-6); !ok {
		t.Errorf("mixed GLMM gradient vs finite differences: rel %.2g", e)
	}
}

// Groups of unequal sizes in any order (task: bucket by size once, keep the user's order outside): the backend
// families match the host reference families of sparse_host_test.go (which walk the groups in the user's order)
// to rel ≤ 1e-12 per draw — θ, h, both gradient kinds in λ order, v and the Snngm norms — for alternating sizes
// (one strided copy per size moves the draws) and for irregular sizes (more than maxZSegments runs: the draws are
// made on the host). Sample gives the user's coordinate k draw Offset + k, as the host generator does (rel ≤ 1e-14:
// the normals may differ by a few ulps between backends), and the bucketing makes one batch per distinct size.
func TestUnequalGroupsMatchHost(t *testing.T) {
	be := testbackend.Open(t)
	r := rand.New(rand.NewPCG(31, 32))
	const tol = 1e-12
	irregular := make([]int, 300)
	for i := range irregular {
		irregular[i] = 1 + r.IntN(3)
	}
	for _, c := range []struct {
		name   string
		sizes  []int
		hostZ  bool
		nbatch int
	}{
		{"alternating 1,2", newMixedGLMM(40, []int{1, 2}, 1).sizes, false, 2},
		{"alternating 3,1,2", newMixedGLMM(30, []int{3, 1, 2}, 1).sizes, false, 3},
		{"irregular", irregular, true, 3},
	} {
		m := &mixedGLMM{}
		*m = *newMixedGLMM(len(c.sizes), []int{3}, 4)
		m.sizes = c.sizes // the data have 3 random-effect covariates per observation; group g uses the first sizes[g]
		dG := m.p + 1
		f, err := NewArrow(be, c.sizes, dG, 10)
		if err != nil {
			t.Fatal(err)
		}
		closeAfter(t, f)
		if f.cperm == nil || f.hostZ != c.hostZ || len(f.bk) != c.nbatch {
			t.Fatalf("%s: permuted %v, host draws %v, %d batches; want a permutation, %v, %d", c.name, f.cperm != nil, f.hostZ, len(f.bk), c.hostZ, c.nbatch)
		}
		if !c.hostZ && len(f.zseg) != c.nbatch+1 {
			t.Errorf("%s: %d strided copies of z, want %d", c.name, len(f.zseg), c.nbatch+1)
		}
		hf, _ := newHostArrow(c.sizes, dG, 10)
		for k := range hf.lam {
			hf.lam[k] += 0.05 * r.NormFloat64()
		}
		if err := f.SetLambda(hf.lam); err != nil {
			t.Fatal(err)
		}
		if e, ok := relOK(lambdaOf(t, f), hf.lam, 0); !ok {
			t.Fatalf("%s: Lambda after SetLambda differs (%.2g)", c.name, e)
		}
		for k := 0; k < 3; k++ {
			compareFamilies(t, fmt.Sprintf("arrow %s draw %d", c.name, k), f, hf, m, randVec(r, f.Dim()), tol)
		}
		ctr := rng.Counter{Seed: 7, Offset: 12345}
		if err := f.Sample(ctr); err != nil {
			t.Fatal(err)
		}
		want := make([]float64, f.Dim())
		ctr.FillNormal(want)
		if e, ok := relOK(f.zHost(t), want, 1e-14); !ok {
			t.Errorf("%s: Sample: z differs from the host draws in the user's order (rel %.2g)", c.name, e)
		}
		// Alg 1c on the same sizes plus the global block, with and without the log diagonal.
		for _, logDiag := range []bool{false, true} {
			bs := append(append([]int(nil), c.sizes...), dG)
			fb, err := NewBlock(be, bs, 1, logDiag)
			if err != nil {
				t.Fatal(err)
			}
			closeAfter(t, fb)
			hb, _ := newHostBlock(bs, 1, logDiag)
			for k, s := range bs {
				if err := hb.SetBlock(k, randLower(r, s, !logDiag)); err != nil {
					t.Fatal(err)
				}
			}
			copy(hb.lam, randVec(r, hb.Dim()))
			if err := fb.SetLambda(hb.lam); err != nil {
				t.Fatal(err)
			}
			for k := 0; k < 2; k++ {
				compareFamilies(t, fmt.Sprintf("block %s logDiag=%v draw %d", c.name, logDiag, k), fb, hb, m, randVec(r, fb.Dim()), tol)
			}
		}
	}
}

// FitSparse with alternating group sizes follows the host loop (draws in the user's order): after 300 iterations
// of Snngm (natural) and Adam (Euclidean) on the mixed-size GLMM, λ agrees with the host reference to rel ≤ 1e-12,
// for Alg 2c and Alg 1c.
func TestFitSparseUnequalMatchesHostLoop(t *testing.T) {
	be := testbackend.Open(t)
	m := newMixedGLMM(30, []int{1, 2}, 3)
	dG := m.p + 1
	const iters, tol = 300, 1e-12
	for _, c := range []struct {
		opt  Optimizer
		kind Kind
	}{{Snngm, Natural}, {Adam, Euclidean}} {
		cfg := Config{Optimizer: c.opt, Kind: c.kind, Seed: 11, NoStop: true, EvalDraws: 1}
		if err := cfg.defaults(); err != nil {
			t.Fatal(err)
		}
		hf, _ := newHostArrow(m.sizes, dG, 10)
		f, err := NewArrow(be, m.sizes, dG, 10)
		if err != nil {
			t.Fatal(err)
		}
		e := fitVsHost(t, f, hf, m, cfg, iters, tol)
		t.Logf("arrow %v/%v, alternating sizes: rel difference to the host loop %.2g", c.opt, c.kind, e)
		bs := append(append([]int(nil), m.sizes...), dG)
		hb, _ := newHostBlock(bs, 0.1, false)
		fb, err := NewBlock(be, bs, 0.1, false)
		if err != nil {
			t.Fatal(err)
		}
		fitVsHost(t, fb, hb, m, cfg, iters, tol)
	}
}

// Checkpoint/resume with alternating group sizes continues bit for bit; a version-2 checkpoint (the layout of runs
// of equal consecutive sizes) and a checkpoint of other sizes are refused with errors that say so.
func TestUnequalCheckpointResume(t *testing.T) {
	be := testbackend.Open(t)
	m := newMixedGLMM(12, []int{2, 1}, 5)
	mk := func(sizes []int) *Arrow {
		f, err := NewArrow(be, sizes, m.p+1, 10)
		if err != nil {
			t.Fatal(err)
		}
		closeAfter(t, f)
		return f
	}
	cfg := Config{Seed: 6, NoStop: true, EvalDraws: 20}
	want, err := fitSparseWith(mk(m.sizes), m, cfg, run.Control{MaxIter: 600}, false)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cp")
	if _, err := fitSparseWith(mk(m.sizes), m, cfg, run.Control{MaxIter: 300, CheckpointEvery: 300, CheckpointPath: path}, false); err != nil {
		t.Fatal(err)
	}
	got, err := fitSparseWith(mk(m.sizes), m, cfg, run.Control{MaxIter: 600, CheckpointPath: path}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got.LHat != want.LHat || numtest.MaxRel(got.Lambda, want.Lambda, 1) != 0 {
		t.Errorf("resumed run differs: L̂ %v vs %v, λ rel %.2g", got.LHat, want.LHat,
			numtest.MaxRel(got.Lambda, want.Lambda, 1))
	}
	// The same d and ℓ_λ with the sizes in another order is another layout.
	swapped := append([]int(nil), m.sizes...)
	swapped[0], swapped[1] = swapped[1], swapped[0]
	if _, err := fitSparseWith(mk(swapped), m, cfg, run.Control{MaxIter: 600, CheckpointPath: path}, true); err == nil {
		t.Error("a checkpoint of other group sizes was resumed")
	}
	old := filepath.Join(t.TempDir(), "v2")
	if err := run.SaveCheckpoint(old, "cholng-sparse", 2, sparseCheckpoint{Iter: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = fitSparseWith(mk(m.sizes), m, cfg, run.Control{MaxIter: 600, CheckpointPath: old}, true)
	if err == nil || !errors.Is(err, run.ErrCheckpoint) || !strings.Contains(err.Error(), "version 2") || !strings.Contains(err.Error(), "version 3") {
		t.Errorf("version-2 checkpoint: error %v, want ErrCheckpoint naming versions 2 and 3", err)
	}
}
