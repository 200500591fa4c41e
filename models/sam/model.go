package sam

import (
	"math"
	"runtime"
	"sync"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// Options are the model's sampling settings.
type Options struct {
	// Batch is the number S of documents per minibatch, drawn without replacement at the start of each sample;
	// 0 or ≥ D means the whole training set.
	Batch int
	// Theta sets the θ_d chains (PaperTheta if zero).
	Theta ThetaConfig
	// Warm continues each document's θ chain from its previous state instead of the least-squares start (the
	// alternating sampler GMC-bGibbs of Fig. 5).
	Warm bool
	// Workers run the θ chains in parallel (GOMAXPROCS if 0).
	Workers int
	Seed    uint64
}

// Model is the collapsed SAM target π(β|v) of eq. (9) for the samplers of algos/sggmc, on points batch×K×V (one
// chain per batch item). At the start of every sample (BeginSample) it draws, for each chain, a minibatch 𝒮 of S
// documents and N samples θ_sn of each π(θ_d|β, v_d) by GMC on the simplex; GradU then evaluates the corrected
// eq. (10)
//
//	∇_βŨ = −σA_V(‖m̄‖)m̂1ᵀ − κ·D/(N·S)·Σ_{s,n} ∇_β v_sᵀv̄(β, θ_sn)
//
// at the current β with those fixed θ (Fisher's identity: the gradient is E_θ[∇_β log π(v, β, θ)]),
// through the Gram matrix. U is the matching
// potential log c_V(‖m̄‖) − κ·D/(N·S)·Σ_{s,n} v_sᵀv̄(β, θ_sn), the approximate potential of GMC-apprMH
// and, with N = 1 and all documents, the exact conditional potential of β|θ (GMC-bGibbs).
type Model struct {
	Train *datasets.Corpus
	H     Hyper
	K     int
	M     []float64 // prior mean direction m (unit, length V)
	opt   Options

	chains []*chainState
	works  []*thetaWork
	host   *tensor.Tensor
	gh     *tensor.Tensor
	mbar   []float64
	acc    [2]int64 // θ proposals accepted, tried
}

type chainState struct {
	docs   []int
	theta  []float64 // S×N×K
	warm   []float64 // D×K (Warm)
	G, Y   []float64
	acc    likAccum
	sample int
}

// New returns the model for K topics over the training corpus (checked with CheckCorpus) with prior mean m (unit,
// length V; MeanDirection(train) is the authors' choice).
func New(train *datasets.Corpus, h Hyper, K int, m []float64, opt Options) (*Model, error) {
	if err := CheckCorpus(train, "train"); err != nil {
		return nil, err
	}
	if err := h.check(); err != nil {
		return nil, err
	}
	if K < 1 {
		return nil, backend.Errorf("sam", "K", backend.ErrDomain, "K = %d topics", K)
	}
	if len(m) != train.V {
		return nil, backend.Errorf("sam", "m", backend.ErrShape, "prior mean of length %d, vocabulary %d", len(m), train.V)
	}
	if n := math.Sqrt(dot(m, m)); math.Abs(n-1) > UnitTol {
		return nil, backend.Errorf("sam", "m", backend.ErrDomain, "prior mean has norm %v", n)
	}
	if opt.Theta == (ThetaConfig{}) {
		opt.Theta = PaperTheta
	}
	if tc := opt.Theta; tc.N < 1 || tc.Burn < 0 || tc.L < 1 || !(tc.Eps > 0) {
		return nil, backend.Errorf("sam", "Theta", backend.ErrDomain, "θ sampler %+v", tc)
	}
	if opt.Batch <= 0 || opt.Batch > train.Docs() {
		opt.Batch = train.Docs()
	}
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	md := &Model{Train: train, H: h, K: K, M: m, opt: opt, mbar: make([]float64, train.V)}
	for range opt.Workers {
		md.works = append(md.works, newThetaWork(K))
	}
	return md, nil
}

// Options returns the settings with defaults filled in.
func (md *Model) Options() Options { return md.opt }

// ThetaAcceptance returns the acceptance rate of the θ chains so far.
func (md *Model) ThetaAcceptance() float64 { return float64(md.acc[0]) / float64(md.acc[1]) }

// Dim is the intrinsic dimension K(V−1) of the product of spheres (not the embedding dimension KV).
func (md *Model) Dim() int { return md.K * (md.Train.V - 1) }

func (md *Model) download(b backend.Backend, x *tensor.Tensor) ([]float64, error) {
	if x.Rows() != md.K || x.Cols() != md.Train.V {
		return nil, backend.Errorf("sam", "x", backend.ErrShape, "topics %v, want batch×%d×%d", x.Shape(), md.K, md.Train.V)
	}
	if md.host == nil || md.host.Shape() != x.Shape() {
		md.host = tensor.NewHost(x.Batch(), md.K, md.Train.V)
		md.gh = tensor.NewHost(x.Batch(), md.K, md.Train.V)
	}
	for len(md.chains) < x.Batch() {
		md.chains = append(md.chains, &chainState{sample: -1})
	}
	return hostData(md.host), b.Download(md.host, x)
}

// BeginSample draws each chain's minibatch and θ samples at the current topics (sggmc.SampleHook). Chain c's
// minibatch comes from stream (Seed, 1<<56|sample), the θ chain of its s-th document from stream
// (Seed, 2<<56|sample<<20|c) at offset s<<32 (independent reproducible streams).
func (md *Model) BeginSample(b backend.Backend, x *tensor.Tensor, sample int) error {
	xd, err := md.download(b, x)
	if err != nil {
		return err
	}
	KV := md.K * md.Train.V
	for c := 0; c < x.Batch(); c++ {
		md.drawTheta(md.chains[c], xd[c*KV:(c+1)*KV], c, sample)
	}
	return nil
}

func (md *Model) drawTheta(ch *chainState, beta []float64, c, sample int) {
	K, V, D, S := md.K, md.Train.V, md.Train.Docs(), md.opt.Batch
	tc := md.opt.Theta
	if len(ch.docs) != S {
		ch.docs = make([]int, S)
		ch.theta = make([]float64, S*tc.N*K)
		ch.G, ch.Y = make([]float64, K*K), make([]float64, S*K)
	}
	if md.opt.Warm && ch.warm == nil {
		ch.warm = make([]float64, D*K)
		for i := range ch.warm {
			ch.warm[i] = math.NaN() // not started
		}
	}
	// Minibatch without replacement: a partial Fisher–Yates shuffle.
	if S == D {
		for i := range ch.docs {
			ch.docs[i] = i
		}
	} else {
		perm := make([]int, D)
		for i := range perm {
			perm[i] = i
		}
		u := rng.Counter{Seed: md.opt.Seed, Stream: 1<<56 | uint64(sample)}
		for i := 0; i < S; i++ {
			j := i + int(u.Uniform(uint64(i))*float64(D-i))
			perm[i], perm[j] = perm[j], perm[i]
		}
		copy(ch.docs, perm[:S])
	}
	gramTo(ch.G, beta, K, V)
	ctr := rng.Counter{Seed: md.opt.Seed, Stream: 2<<56 | uint64(sample)<<20 | uint64(c)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	nw := len(md.works)
	for w := 0; w < nw; w++ {
		wg.Add(1)
		go func(wk *thetaWork) {
			defer wg.Done()
			th := make([]float64, K)
			acc, tries := 0, 0
			wk.t.G, wk.t.kappa, wk.t.a1 = ch.G, md.H.Kappa, md.H.Alpha-1
			for s := w; s < S; s += nw {
				d := ch.docs[s]
				y := ch.Y[s*K : (s+1)*K]
				projectTo(y, beta, K, V, md.Train, d)
				wk.t.y = y
				if md.opt.Warm && !math.IsNaN(ch.warm[d*K]) {
					copy(th, ch.warm[d*K:(d+1)*K])
				} else {
					wk.initTheta(th, ch.G, y)
				}
				acc += wk.chain(ch.theta[s*tc.N*K:(s+1)*tc.N*K], th, tc, rng.Counter{Seed: ctr.Seed, Stream: ctr.Stream,
					Offset: uint64(s) << 32})
				tries += tc.Burn + tc.N
				if md.opt.Warm {
					copy(ch.warm[d*K:(d+1)*K], th)
				}
			}
			mu.Lock()
			md.acc[0] += int64(acc)
			md.acc[1] += int64(tries)
			mu.Unlock()
		}(md.works[w])
	}
	wg.Wait()
	ch.sample = sample
}

// scale is the factor κ·D/(N·S) of eq. (10) (D the training-set size, S documents, N θ samples each).
func (md *Model) scale() float64 {
	return md.H.Kappa * float64(md.Train.Docs()) / float64(md.opt.Theta.N*md.opt.Batch)
}

// GradU writes ∇_βŨ (eq. (10)) of every chain into grad with the θ of the current sample (drawn here
// first if no sample has begun).
func (md *Model) GradU(b backend.Backend, grad, x *tensor.Tensor, step uint64) error {
	xd, err := md.download(b, x)
	if err != nil {
		return err
	}
	KV := md.K * md.Train.V
	gd := hostData(md.gh)
	for c := 0; c < x.Batch(); c++ {
		ch := md.chains[c]
		if ch.sample < 0 {
			md.drawTheta(ch, xd[c*KV:(c+1)*KV], c, 0)
		}
		if _, err := md.gradChain(gd[c*KV:(c+1)*KV], xd[c*KV:(c+1)*KV], ch); err != nil {
			return err
		}
	}
	return b.Upload(grad, md.gh)
}

// gradChain writes ∇_βU of one chain into g (g nil: value only) and returns U.
func (md *Model) gradChain(g, beta []float64, ch *chainState) (float64, error) {
	K, V := md.K, md.Train.V
	if g != nil {
		clear(g)
	}
	lc, err := priorTerm(md.H, md.M, beta, K, g, md.mbar)
	if err != nil {
		return math.NaN(), err
	}
	gramTo(ch.G, beta, K, V)
	for s, d := range ch.docs {
		projectTo(ch.Y[s*K:(s+1)*K], beta, K, V, md.Train, d)
	}
	f := md.scale()
	tot := ch.acc.accumulate(ch.G, ch.Y, ch.theta, len(ch.docs), md.opt.Theta.N, K)
	if g != nil {
		ch.acc.likGradAdd(g, beta, K, V, md.Train, ch.docs, -f)
	}
	return lc - f*tot, nil
}

// U writes the potential of every chain at its current θ samples (sggmc.Energy; for the GMC baselines).
func (md *Model) U(b backend.Backend, u []float64, x *tensor.Tensor) error {
	xd, err := md.download(b, x)
	if err != nil {
		return err
	}
	KV := md.K * md.Train.V
	for c := range u {
		ch := md.chains[c]
		if ch.sample < 0 {
			md.drawTheta(ch, xd[c*KV:(c+1)*KV], c, 0)
		}
		if u[c], err = md.gradChain(nil, xd[c*KV:(c+1)*KV], ch); err != nil {
			return err
		}
	}
	return nil
}
