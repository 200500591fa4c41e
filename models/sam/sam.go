// Package sam is the spherical admixture model (Reisinger et al. 2010) as used by paper 001 Section 4:
// topics β_k ∈ S^{V−1} (the rows of a K×V matrix — a point of a product of K spheres, the layout of package
// algos/sggmc), document proportions θ_d ∈ Δ^{K−1}, L2-normalised tf-idf documents v_d ∈ S^{V−1} and the corpus
// mean μ integrated out (eq. (9)).
//
// Model is a target for the samplers of algos/sggmc: the stochastic gradient of eq. (10) (with ∇_β on the data term, which the printed (10) drops, and the scale
// κ·D/(N·S)) over
// minibatches of documents, evaluated with the Gram matrix G = ββᵀ (never forming a V-vector βθ: ‖βθ‖² = θᵀGθ and
// (βθ)ᵀv = θᵀ(βv)), with
// the θ_d drawn per minibatch document by geodesic Monte Carlo on the simplex with reflection at the
// start of each sample and held fixed over its inner steps. Evaluator is the log-perplexity protocol of Section 5.3.
//
// Everything runs on the host in float64 (the K×K work and sparse documents are latency-bound); the chains'
// topics are read from and written to backend tensors through Download/Upload.
package sam

import (
	"math"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/models/vmf"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// Hyper are the fixed hyper-parameters of eq. (9): μ ~ vMF(m, κ₀), β_k ~ vMF(μ, σ), v_d ~ vMF(v̄(β,θ_d), κ),
// θ_d ~ Dir(α) (symmetric).
type Hyper struct {
	Kappa0, Sigma, Kappa, Alpha float64
}

// News20Hyper are the authors' 20News-diff settings: σ = κ₀ = 1e4, κ = 3e4, α = 10.
var News20Hyper = Hyper{Kappa0: 1e4, Sigma: 1e4, Kappa: 3e4, Alpha: 10}

func (h Hyper) check() error {
	for _, p := range []struct {
		name string
		v    float64
	}{{"κ₀", h.Kappa0}, {"σ", h.Sigma}, {"κ", h.Kappa}, {"α", h.Alpha}} {
		if !(p.v > 0) || math.IsInf(p.v, 0) {
			return backend.Errorf("sam", p.name, backend.ErrDomain, "hyper-parameter %s = %v must be positive", p.name, p.v)
		}
	}
	return nil
}

// UnitTol is how far ‖v_d‖ may be from 1.
const UnitTol = 1e-8

// CheckCorpora checks a training and a test corpus with CheckCorpus and that they share the vocabulary, as every
// fit that is scored on held-out documents needs.
func CheckCorpora(train, test *datasets.Corpus) error {
	if err := CheckCorpus(train, "train"); err != nil {
		return err
	}
	if err := CheckCorpus(test, "test"); err != nil {
		return err
	}
	if test.V != train.V {
		return backend.Errorf("sam", "test", backend.ErrShape, "test vocabulary %d, training vocabulary %d", test.V, train.V)
	}
	return nil
}

// CheckCorpus checks a corpus of documents over V words for use by the model: V ≥ 2, every document non-empty,
// word ids in [0, V) and increasing, finite weights and unit norm within UnitTol. The error names the
// corpus (name, e.g. its file) and the document.
func CheckCorpus(c *datasets.Corpus, name string) error {
	const op = "sam"
	if c == nil || c.Docs() < 1 {
		return backend.Errorf(op, name, backend.ErrShape, "%s: no documents", name)
	}
	if c.V < 2 {
		return backend.Errorf(op, name, backend.ErrShape, "%s: vocabulary size %d < 2", name, c.V)
	}
	if len(c.Idx) != len(c.Val) || c.Ptr[0] != 0 || c.Ptr[c.Docs()] != len(c.Idx) {
		return backend.Errorf(op, name, backend.ErrShape, "%s: inconsistent CSR arrays", name)
	}
	for d := 0; d < c.Docs(); d++ {
		if c.Ptr[d+1] <= c.Ptr[d] {
			return backend.Errorf(op, name, backend.ErrShape, "%s: document %d is empty", name, d)
		}
		ids, vals := c.Doc(d)
		ss := 0.0
		for i, id := range ids {
			if id < 0 || int(id) >= c.V || (i > 0 && id <= ids[i-1]) {
				return backend.Errorf(op, name, backend.ErrShape, "%s: document %d: word id %d out of range [0, %d) or not increasing", name, d, id, c.V)
			}
			if math.IsNaN(vals[i]) || math.IsInf(vals[i], 0) {
				return backend.Errorf(op, name, backend.ErrNotFinite, "%s: document %d: weight of word %d is %v", name, d, id, vals[i])
			}
			ss += vals[i] * vals[i]
		}
		if math.Abs(math.Sqrt(ss)-1) > UnitTol {
			return backend.Errorf(op, name, backend.ErrDomain, "%s: document %d has norm %.12g, want 1 (tf-idf vectors are L2-normalised)", name, d, math.Sqrt(ss))
		}
	}
	return nil
}

// MeanDirection returns m = normalize(Σ_d v_d), the prior mean the authors use.
func MeanDirection(c *datasets.Corpus) []float64 {
	m := make([]float64, c.V)
	for i, id := range c.Idx {
		m[id] += c.Val[i]
	}
	normalize(m)
	return m
}

// InitTopics returns a 1×K×V host tensor of topics β_k = normalize(m + 𝒩(0, I/V)) (the authors' initialisation), drawn from stream (seed, 0).
func InitTopics(m []float64, K int, seed uint64) *tensor.Tensor {
	V := len(m)
	h := tensor.NewHost(1, K, V)
	d := hostData(h)
	rng.Counter{Seed: seed, Stream: 0x7a11}.FillNormal(d)
	sd := 1 / math.Sqrt(float64(V))
	for k := 0; k < K; k++ {
		row := d[k*V : (k+1)*V]
		for i := range row {
			row[i] = m[i] + sd*row[i]
		}
		normalize(row)
	}
	return h
}

func normalize(x []float64) float64 {
	ss := 0.0
	for _, v := range x {
		ss += v * v
	}
	n := math.Sqrt(ss)
	for i := range x {
		x[i] /= n
	}
	return n
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func hostData(t *tensor.Tensor) []float64 {
	d, _, _, _ := t.Matrix(0)
	return d[:t.Len():t.Len()]
}

// priorTerm returns log c_V(‖m̄‖) for m̄ = κ₀m + σΣ_kβ_k and, when g is not nil, adds its gradient −σA_V(‖m̄‖)m̂ to
// every row of g (K×V) (the c_V(‖m̄‖)⁻¹ factor of eq. (9) gives +log c_V in U).
func priorTerm(h Hyper, m, beta []float64, K int, g []float64, mbar []float64) (float64, error) {
	V := len(m)
	for i := range mbar {
		mbar[i] = h.Kappa0 * m[i]
	}
	for k := 0; k < K; k++ {
		row := beta[k*V : (k+1)*V]
		for i, v := range row {
			mbar[i] += h.Sigma * v
		}
	}
	r := math.Sqrt(dot(mbar, mbar))
	lc, err := vmf.LogNormalizer(V, r)
	if err != nil {
		return math.NaN(), err
	}
	if g != nil {
		a, err := vmf.A(V, r)
		if err != nil {
			return math.NaN(), err
		}
		f := -h.Sigma * a / r
		for k := 0; k < K; k++ {
			row := g[k*V : (k+1)*V]
			for i, v := range mbar {
				row[i] += f * v
			}
		}
	}
	return lc, nil
}
