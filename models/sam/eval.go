package sam

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/models/vmf"
	"github.com/geovb/geovb/rng"
)

// Evaluator is the log-perplexity protocol of Section 5.3 (the authors' lbaylog): π(v_d|β) is estimated by
// importance sampling from the prior with NTheta Dirichlet(α) draws shared by all test documents and all β samples,
// and over the last Window samples β^{(1…M)} added
//
//	logperp = −(1/D_test) Σ_d LSE_{m,n}(κ v̄(β^{(m)},θ_n)ᵀv_d) + log(M·N_θ) − log c_V(κ).
//
// Each added sample costs nnz_test·K + N_θK² + D_test·N_θ·K through the Gram matrix (scores κ(βv_d)ᵀθ_n/‖βθ_n‖);
// the per-document log-sum-exp over θ of each sample is kept (D_test values per sample), so the window is exact.
type Evaluator struct {
	Test   *datasets.Corpus
	H      Hyper
	K      int
	Window int

	thetas []float64 // NTheta×K
	nTheta int
	logcV  float64
	ring   [][]float64 // per sample: per document LSE_n
	next   int
	y, G   []float64
	nb     []float64
	gt     []float64
}

// NewEvaluator checks the test corpus and draws nTheta Dirichlet(α) vectors from stream (seed, 0) (200 and the
// window 8000 in the authors' protocol; window 1 scores a point estimate).
func NewEvaluator(test *datasets.Corpus, h Hyper, K, nTheta, window int, seed uint64) (*Evaluator, error) {
	if err := CheckCorpus(test, "test"); err != nil {
		return nil, err
	}
	if err := h.check(); err != nil {
		return nil, err
	}
	lc, err := vmf.LogNormalizer(test.V, h.Kappa)
	if err != nil {
		return nil, err
	}
	if nTheta < 1 || window < 1 || K < 1 {
		return nil, backend.Errorf("sam", "evaluator", backend.ErrDomain, "K = %d, N_θ = %d, window %d", K, nTheta, window)
	}
	e := &Evaluator{Test: test, H: h, K: K, Window: window, nTheta: nTheta, logcV: lc,
		thetas: make([]float64, nTheta*K), y: make([]float64, K*test.Docs()), G: make([]float64, K*K),
		nb: make([]float64, nTheta), gt: make([]float64, K)}
	g := distuv.Gamma{Alpha: h.Alpha, Beta: 1, Src: rand.New(rng.NewSource(seed, 0))}
	for n := 0; n < nTheta; n++ {
		th := e.thetas[n*K : (n+1)*K]
		s := 0.0
		for k := range th {
			th[k] = g.Rand()
			s += th[k]
		}
		for k := range th {
			th[k] /= s
		}
	}
	return e, nil
}

// Add scores one β sample (K×V row-major) on every test document.
func (e *Evaluator) Add(beta []float64) {
	K, V, D := e.K, e.Test.V, e.Test.Docs()
	gramTo(e.G, beta, K, V)
	for n := 0; n < e.nTheta; n++ {
		e.nb[n] = 1 / math.Sqrt(quad(e.gt, e.G, e.thetas[n*K:(n+1)*K], K))
	}
	var lse []float64
	if len(e.ring) < e.Window {
		lse = make([]float64, D)
		e.ring = append(e.ring, lse)
	} else {
		lse = e.ring[e.next]
		e.next = (e.next + 1) % e.Window
	}
	kappa := e.H.Kappa
	sc := make([]float64, e.nTheta)
	for d := 0; d < D; d++ {
		y := e.y[d*K : (d+1)*K]
		projectTo(y, beta, K, V, e.Test, d)
		mx := math.Inf(-1)
		for n := range sc {
			sc[n] = kappa * dot(y, e.thetas[n*K:(n+1)*K]) * e.nb[n]
			mx = math.Max(mx, sc[n])
		}
		s := 0.0
		for _, v := range sc {
			s += math.Exp(v - mx)
		}
		lse[d] = mx + math.Log(s)
	}
}

// Samples returns the number of samples in the window.
func (e *Evaluator) Samples() int { return len(e.ring) }

// LogPerplexity returns the log-perplexity over the samples in the window (NaN before the first).
func (e *Evaluator) LogPerplexity() float64 {
	M := len(e.ring)
	if M == 0 {
		return math.NaN()
	}
	tot := 0.0
	for d := 0; d < e.Test.Docs(); d++ {
		mx := math.Inf(-1)
		for _, l := range e.ring {
			mx = math.Max(mx, l[d])
		}
		s := 0.0
		for _, l := range e.ring {
			s += math.Exp(l[d] - mx)
		}
		tot += mx + math.Log(s)
	}
	return -tot/float64(e.Test.Docs()) + math.Log(float64(M)*float64(e.nTheta)) - e.logcV
}
