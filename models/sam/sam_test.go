package sam

import (
	"errors"
	"math"
	"testing"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/datatest"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/models/vmf"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// randomCorpus returns D sparse unit documents over V words with about nnz words each.
func randomCorpus(D, V, nnz int, seed uint64) *datasets.Corpus {
	c := &datasets.Corpus{V: V, Ptr: []int{0}}
	ctr := rng.Counter{Seed: seed, Stream: 1}
	k := uint64(0)
	for d := 0; d < D; d++ {
		var ids []int32
		var vals []float64
		for w := 0; w < V; w++ {
			k++
			if ctr.Uniform(k) < float64(nnz)/float64(V) || (w == V-1 && len(ids) == 0) {
				ids = append(ids, int32(w))
				vals = append(vals, math.Abs(ctr.Normal(k))+0.1)
			}
		}
		normalize(vals)
		c.Idx = append(c.Idx, ids...)
		c.Val = append(c.Val, vals...)
		c.Ptr = append(c.Ptr, len(c.Idx))
		c.Label = append(c.Label, 1)
	}
	return c
}

func randomTopics(K, V int, seed uint64) []float64 {
	b := make([]float64, K*V)
	rng.Counter{Seed: seed, Stream: 2}.FillNormal(b)
	for k := 0; k < K; k++ {
		normalize(b[k*V : (k+1)*V])
	}
	return b
}

var smallHyper = Hyper{Kappa0: 40, Sigma: 15, Kappa: 60, Alpha: 2}

// smallModel is a small instance: V = 30, K = 4, S = 5, N = 3, with θ samples drawn at β.
func smallModel(t *testing.T, beta []float64) (*Model, *chainState) {
	c := randomCorpus(12, 30, 8, 1)
	md, err := New(c, smallHyper, 4, MeanDirection(c), Options{Batch: 5, Theta: ThetaConfig{Burn: 3, N: 3, L: 4, Eps: 1e-3}, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	b := testbackend.Open(t)
	xh, err := tensor.FromSlice(append([]float64(nil), beta...), 1, 4, 30)
	if err != nil {
		t.Fatal(err)
	}
	if err := md.BeginSample(b, testbackend.Upload(t, b, xh), 3); err != nil {
		t.Fatal(err)
	}
	return md, md.chains[0]
}

func maxAbs(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		m = math.Max(m, math.Abs(v))
	}
	return m
}

// naiveGrad is the dense reference of eq. (10): b = βᵀθ formed explicitly (a V-vector per (s, n)),
// ∇ = −σA_V(‖m̄‖)m̂ per row − κD/(NS) Σ (I − b̂b̂ᵀ)v θᵀ/‖b‖ (written in the K×V layout).
func naiveGrad(md *Model, ch *chainState, beta []float64) []float64 {
	K, V, N := md.K, md.Train.V, md.opt.Theta.N
	g := make([]float64, K*V)
	mbar := make([]float64, V)
	for i := range mbar {
		mbar[i] = md.H.Kappa0 * md.M[i]
		for k := 0; k < K; k++ {
			mbar[i] += md.H.Sigma * beta[k*V+i]
		}
	}
	r := math.Sqrt(dot(mbar, mbar))
	a, _ := vmf.A(V, r)
	for k := 0; k < K; k++ {
		for i := 0; i < V; i++ {
			g[k*V+i] = -md.H.Sigma * a * mbar[i] / r
		}
	}
	f := md.H.Kappa * float64(md.Train.Docs()) / float64(N*len(ch.docs))
	for s, d := range ch.docs {
		v := make([]float64, V)
		ids, vals := md.Train.Doc(d)
		for i, id := range ids {
			v[id] = vals[i]
		}
		for n := 0; n < N; n++ {
			th := ch.theta[(s*N+n)*K : (s*N+n+1)*K]
			b := make([]float64, V)
			for k := 0; k < K; k++ {
				for i := 0; i < V; i++ {
					b[i] += beta[k*V+i] * th[k]
				}
			}
			nb := math.Sqrt(dot(b, b))
			bv := dot(b, v) / nb
			for k := 0; k < K; k++ {
				for i := 0; i < V; i++ {
					g[k*V+i] -= f * (v[i] - bv*b[i]/nb) * th[k] / nb
				}
			}
		}
	}
	return g
}

func TestGradGramMatchesNaive(t *testing.T) {
	beta := randomTopics(4, 30, 3)
	md, ch := smallModel(t, beta)
	g := make([]float64, len(beta))
	if _, err := md.gradChain(g, beta, ch); err != nil {
		t.Fatal(err)
	}
	ref := naiveGrad(md, ch, beta)
	d := make([]float64, len(g))
	for i := range g {
		d[i] = g[i] - ref[i]
	}
	if e := maxAbs(d) / maxAbs(ref); !(e < 1e-12) {
		t.Errorf("Gram-trick gradient differs from the naive one by %.3g relative (want < 1e-12)", e)
	}
}

// The gradient is the derivative of U (fixed θ) in every direction of R^{K×V}: central differences.
func TestGradFiniteDifference(t *testing.T) {
	beta := randomTopics(4, 30, 4)
	md, ch := smallModel(t, beta)
	g := make([]float64, len(beta))
	if _, err := md.gradChain(g, beta, ch); err != nil {
		t.Fatal(err)
	}
	for trial := 0; trial < 5; trial++ {
		e := make([]float64, len(beta))
		rng.Counter{Seed: 9, Stream: uint64(trial)}.FillNormal(e)
		const h = 1e-5
		bp, bm := make([]float64, len(beta)), make([]float64, len(beta))
		for i := range beta {
			bp[i], bm[i] = beta[i]+h*e[i], beta[i]-h*e[i]
		}
		up, _ := md.gradChain(nil, bp, ch)
		um, _ := md.gradChain(nil, bm, ch)
		fd, an := (up-um)/(2*h), dot(g, e)
		if r := math.Abs(fd-an) / math.Abs(an); !(r < 1e-7) {
			t.Errorf("direction %d: finite difference %.12g, gradient %.12g (relative %.3g, want < 1e-7)", trial, fd, an, r)
		}
	}
}

func TestThetaGradFiniteDifference(t *testing.T) {
	const K = 5
	beta := randomTopics(K, 30, 5)
	c := randomCorpus(3, 30, 8, 2)
	wk := newThetaWork(K)
	G, y := make([]float64, K*K), make([]float64, K)
	gramTo(G, beta, K, 30)
	projectTo(y, beta, K, 30, c, 1)
	wk.t.G, wk.t.y, wk.t.kappa, wk.t.a1 = G, y, 300, 4
	th := []float64{0.1, 0.3, 0.2, 0.15, 0.25}
	g := make([]float64, K)
	wk.t.eval(g, th)
	gs := make([]float64, K)
	for i := 0; i < K; i++ {
		const h = 1e-6
		p, m := append([]float64(nil), th...), append([]float64(nil), th...)
		p[i] += h
		m[i] -= h
		fd := (wk.t.eval(gs, p) - wk.t.eval(gs, m)) / (2 * h)
		if r := math.Abs(fd-g[i]) / math.Abs(g[i]); !(r < 1e-6) {
			t.Errorf("∂U/∂θ_%d: finite difference %.10g, gradient %.10g (relative %.3g)", i, fd, g[i], r)
		}
	}
}

// The simplex flow with specular reflection (GMC, Byrne & Girolami 2013): the reflected flow keeps θ ≥ 0, Σθ = 1,
// Σv = 0 and ‖v‖, and runs backwards to the start.
func TestSimplexFlow(t *testing.T) {
	for trial := 0; trial < 200; trial++ {
		K := 2 + trial%6
		ctr := rng.Counter{Seed: 3, Stream: uint64(trial)}
		th, v := make([]float64, K), make([]float64, K)
		ctr.FillUniform(th)
		s := 0.0
		for _, x := range th {
			s += x
		}
		for i := range th {
			th[i] /= s
		}
		ctr.Advance(K).FillNormal(v)
		simplexProject(v)
		th0, v0 := append([]float64(nil), th...), append([]float64(nil), v...)
		h := 0.05 + 2*ctr.Uniform(100) // long enough to hit several faces
		if !simplexFlow(th, v, h) {
			t.Fatalf("trial %d: flow did not finish", trial)
		}
		var st, sv float64
		for i := range th {
			if th[i] < 0 {
				t.Fatalf("trial %d: θ_%d = %g < 0", trial, i, th[i])
			}
			st += th[i]
			sv += v[i]
		}
		if math.Abs(st-1) > 1e-14*float64(K) || math.Abs(sv) > 1e-13 ||
			math.Abs(math.Sqrt(dot(v, v))-math.Sqrt(dot(v0, v0))) > 1e-13 {
			t.Errorf("trial %d: Σθ−1 = %.3g, Σv = %.3g, Δ‖v‖ = %.3g", trial, st-1, sv, math.Sqrt(dot(v, v))-math.Sqrt(dot(v0, v0)))
		}
		for i := range v {
			v[i] = -v[i]
		}
		simplexFlow(th, v, h)
		for i := range th {
			if math.Abs(th[i]-th0[i]) > 1e-12 || math.Abs(-v[i]-v0[i]) > 1e-12 {
				t.Errorf("trial %d: not reversible: θ_%d %.15g → %.15g", trial, i, th0[i], th[i])
				break
			}
		}
	}
}

// GMC on the simplex with U = −(α−1)Σ log θ (κ = 0) samples Dir(α): means within 4 SE and
// variances within 10 % over independent chains.
func TestThetaGMCDirichlet(t *testing.T) {
	const K, chains, keep = 3, 200, 300
	alpha := 3.0
	wk := newThetaWork(K)
	G := []float64{1, 0, 0, 0, 1, 0, 0, 0, 1}
	wk.t.G, wk.t.y, wk.t.kappa, wk.t.a1 = G, make([]float64, K), 0, alpha-1
	cfg := ThetaConfig{Burn: 50, N: keep, L: 8, Eps: 0.03}
	out := make([]float64, keep*K)
	means := make([]float64, chains)
	var all, all2 float64
	acc := 0
	for c := 0; c < chains; c++ {
		th := []float64{0.6, 0.3, 0.1}
		acc += wk.chain(out, th, cfg, rng.Counter{Seed: 11, Stream: uint64(c)})
		for n := 0; n < keep; n++ {
			means[c] += out[n*K] / keep
			all += out[n*K]
			all2 += out[n*K] * out[n*K]
		}
	}
	m := all / (chains * keep)
	v := all2/(chains*keep) - m*m
	var sm, sm2 float64
	for _, x := range means {
		sm += x
		sm2 += x * x
	}
	se := math.Sqrt((sm2/chains - (sm/chains)*(sm/chains)) / chains)
	wantM, wantV := 1/3.0, alpha*(2*alpha)/(9*alpha*alpha*(3*alpha+1))
	t.Logf("E θ₁ = %.4f ± %.4f (want %.4f), Var = %.5f (want %.5f), acceptance %.3f", m, se, wantM, v, wantV,
		float64(acc)/float64(chains*(cfg.Burn+keep)))
	if !(math.Abs(m-wantM) < 4*se) {
		t.Errorf("mean %.4f ± %.4f, want %.4f", m, se, wantM)
	}
	if !(math.Abs(v/wantV-1) < 0.1) {
		t.Errorf("variance %.5f, want %.5f ± 10 %%", v, wantV)
	}
}

// The evaluator against the direct formula −(1/D)Σ_d log((1/MN)Σ_{m,n} vMF(v_d|v̄(β_m,θ_n),κ)) with dense vectors
// and vmf.LogPdf, and its window.
func TestEvaluatorMatchesDirect(t *testing.T) {
	const K, V = 3, 25
	test := randomCorpus(9, V, 6, 4)
	h := Hyper{Kappa0: 10, Sigma: 10, Kappa: 40, Alpha: 1.5}
	e, err := NewEvaluator(test, h, K, 7, 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	betas := [][]float64{randomTopics(K, V, 1), randomTopics(K, V, 2), randomTopics(K, V, 3)}
	direct := func(bs [][]float64) float64 {
		tot := 0.0
		for d := 0; d < test.Docs(); d++ {
			v := make([]float64, V)
			ids, vals := test.Doc(d)
			for i, id := range ids {
				v[id] = vals[i]
			}
			var ls []float64
			for _, beta := range bs {
				for n := 0; n < 7; n++ {
					b := make([]float64, V)
					for k := 0; k < K; k++ {
						for i := 0; i < V; i++ {
							b[i] += beta[k*V+i] * e.thetas[n*K+k]
						}
					}
					normalize(b)
					l, err := vmf.LogPdf(v, b, h.Kappa)
					if err != nil {
						t.Fatal(err)
					}
					ls = append(ls, l)
				}
			}
			mx := math.Inf(-1)
			for _, l := range ls {
				mx = math.Max(mx, l)
			}
			s := 0.0
			for _, l := range ls {
				s += math.Exp(l - mx)
			}
			tot += mx + math.Log(s/float64(len(ls)))
		}
		return -tot / float64(test.Docs())
	}
	e.Add(betas[0])
	e.Add(betas[1])
	if got, want := e.LogPerplexity(), direct(betas[:2]); !(math.Abs(got-want) < 1e-10*math.Abs(want)) {
		t.Errorf("two samples: %.12g, direct %.12g", got, want)
	}
	e.Add(betas[2]) // window 2: the first sample drops out
	if got, want := e.LogPerplexity(), direct(betas[1:]); !(math.Abs(got-want) < 1e-10*math.Abs(want)) {
		t.Errorf("window: %.12g, direct %.12g", got, want)
	}
}

func TestBadInput(t *testing.T) {
	good := randomCorpus(4, 10, 4, 1)
	m := MeanDirection(good)
	clone := func() *datasets.Corpus {
		c := *good
		c.Idx = append([]int32(nil), good.Idx...)
		c.Val = append([]float64(nil), good.Val...)
		c.Ptr = append([]int(nil), good.Ptr...)
		return &c
	}
	cases := map[string]struct {
		c    *datasets.Corpus
		want error
	}{}
	c := clone()
	c.Idx[c.Ptr[2]] = 10
	cases["word id out of range"] = struct {
		c    *datasets.Corpus
		want error
	}{c, backend.ErrShape}
	c = clone()
	c.Val[c.Ptr[1]] = math.NaN()
	cases["non-finite weight"] = struct {
		c    *datasets.Corpus
		want error
	}{c, backend.ErrNotFinite}
	c = clone()
	c.Val[c.Ptr[3]] *= 1.001
	cases["not unit"] = struct {
		c    *datasets.Corpus
		want error
	}{c, backend.ErrDomain}
	c = clone()
	c.Ptr = append([]int{0}, c.Ptr...) // document 0 empty
	c.Label = append(c.Label, 1)
	cases["empty document"] = struct {
		c    *datasets.Corpus
		want error
	}{c, backend.ErrShape}
	for name, tc := range cases {
		_, err := New(tc.c, smallHyper, 3, m, Options{})
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
		if _, err := NewEvaluator(tc.c, smallHyper, 3, 5, 1, 1); !errors.Is(err, tc.want) {
			t.Errorf("evaluator, %s: %v", name, err)
		}
	}
	if _, err := New(good, Hyper{Kappa0: 1, Sigma: 0, Kappa: 1, Alpha: 1}, 3, m, Options{}); !errors.Is(err, backend.ErrDomain) {
		t.Errorf("σ = 0: %v", err)
	}
	if _, err := New(good, smallHyper, 0, m, Options{}); !errors.Is(err, backend.ErrDomain) {
		t.Errorf("K = 0: %v", err)
	}
	if _, err := New(good, smallHyper, 3, m[:5], Options{}); !errors.Is(err, backend.ErrShape) {
		t.Errorf("short m: %v", err)
	}
}

// The SAM data and evaluator (paper 001, Sec. 5.3) on the real 20News-different data: V = 5000, D = 1666/1107, unit
// documents, log c₅₀₀₀(3·10⁴) = −8722.5215379 and the degenerate model (every topic = m, so v̄ = m for every θ) at
// log-perplexity 5092.604 ± 0.01.
func TestNews20Degenerate(t *testing.T) {
	trainPath := datatest.Require(t, "20news-diff", "diff.train.tfidf1.data")
	testPath := datatest.Require(t, "20news-diff", "diff.test.tfidf1.data")
	train, err := datasets.ReadNews20File(trainPath)
	if err != nil {
		t.Fatal(err)
	}
	test, err := datasets.ReadNews20File(testPath)
	if err != nil {
		t.Fatal(err)
	}
	if train.V != 5000 || test.V != 5000 || train.Docs() != 1666 || test.Docs() != 1107 {
		t.Fatalf("V = %d/%d, D = %d/%d", train.V, test.V, train.Docs(), test.Docs())
	}
	if err := CheckCorpus(train, trainPath); err != nil {
		t.Fatal(err)
	}
	lc, _ := vmf.LogNormalizer(5000, 3e4)
	if math.Abs(lc+8722.5215379) > 1e-6 {
		t.Errorf("log c₅₀₀₀(3e4) = %.10f", lc)
	}
	m := MeanDirection(train)
	const K = 20
	e, err := NewEvaluator(test, News20Hyper, K, 200, 8000, 1)
	if err != nil {
		t.Fatal(err)
	}
	beta := make([]float64, K*5000)
	for k := 0; k < K; k++ {
		copy(beta[k*5000:], m)
	}
	e.Add(beta)
	e.Add(beta)
	if lp := e.LogPerplexity(); !(math.Abs(lp-5092.604) < 0.01) {
		t.Errorf("degenerate log-perplexity %.4f, want 5092.604 ± 0.01", lp)
	}
}
