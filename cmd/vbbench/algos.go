package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/geovb/geovb/algos/cholng"
	"github.com/geovb/geovb/algos/lrvga"
	"github.com/geovb/geovb/algos/mgvb"
	"github.com/geovb/geovb/algos/nnvb"
	"github.com/geovb/geovb/algos/rcg"
	algorun "github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/algos/sggmc"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/models/mog"
	"github.com/geovb/geovb/models/nfa"
	"github.com/geovb/geovb/models/nnet"
	"github.com/geovb/geovb/models/vmf"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// algoGroup is the group of the method workloads: one iteration or step of each method, selected with -algos (by
// method name, e.g. "mgvb", or "all") and never by -ops, so that the default run stays the hot operations.
//
// A method has no separate reference implementation: its setup ignores ref, and the check before timing runs the
// step twice from the same seed on the check dims and compares the results (determinism, no NaN), reported as
// check "determinism" in the record. The flop counts are the dominant terms of each method's step, approximate
// (stated next to each workload and in docs/benchmarks.md); the byte counts are the state the step reads and
// writes once.
const algoGroup = "algo"

// isAlgo reports whether w is a method workload.
func isAlgo(w *workload) bool { return w.checkKind == checkDeterminism }

// Check kinds, recorded with each workload.
const (
	checkReference   = "reference"
	checkDeterminism = "determinism"
)

// algoInstance returns an instance of one operand set whose outputs are the host values out() returns, uploaded
// to a backend tensor (so that the check downloads them like any kernel output).
func algoInstance(b backend.Backend, step func() error, out func() ([]float64, error), closer func()) *instance {
	in := &instance{nbuf: 1, be: b}
	if closer != nil {
		in.closers = append(in.closers, closer)
	}
	in.run = func(int) error { return step() }
	in.outputs = func(int) []*T {
		v, err := out()
		if err != nil {
			v = []float64{math.NaN()}
		}
		t, err := in.alloc(1, 1, max(len(v), 1))
		if err != nil {
			return nil
		}
		h := tensor.NewHost(1, 1, max(len(v), 1))
		copy(h.Storage().Host(), v)
		if err := b.Upload(t, h); err != nil {
			return nil
		}
		return []*T{t}
	}
	return in
}

// download returns the values of a backend tensor.
func download(b backend.Backend, t *T) ([]float64, error) {
	h := tensor.NewHost(t.Batch(), t.Rows(), t.Cols())
	if err := b.Download(h, t); err != nil {
		return nil, err
	}
	return h.Storage().Host(), nil
}

// iterTimer is the run recorder of the methods timed per iteration (MGVB, NNVB, RCG): the timed call is a whole
// fit of a few iterations, and the time reported is the mean of the iterations' own times (run.Record.IterTime,
// from the loop's Next to its Report), so that the fit's start (allocation, the iteration-0 gradient, copies of
// the inputs) and its end (downloads of the result) are left out. Iterations with a 0-based index below from are
// not counted (RCG's first iteration reuses the gradient computed at the start, so it is cheaper than the rest).
//
// Each of these methods reads values back to the host inside every iteration, which waits for the device; work
// it queues after the last read-back of an iteration (momentum updates) is counted in the next iteration's time.
type iterTimer struct {
	from int
	sum  time.Duration
	n    int
}

// Record adds the time of one iteration.
func (t *iterTimer) Record(r algorun.Record) {
	if r.Iter >= t.from {
		t.sum += r.IterTime
		t.n++
	}
}

func (t *iterTimer) reset() { t.sum, t.n = 0, 0 }

// seconds is the mean time of the counted iterations of the last fit (NaN when none was counted).
func (t *iterTimer) seconds() float64 {
	if t.n == 0 {
		return math.NaN()
	}
	return t.sum.Seconds() / float64(t.n)
}

// fitTimed runs fit (one whole fit, its recorder t) after a reset and checks that it timed want iterations: a fit
// that stops early (converged, not finite) would otherwise report the mean of fewer iterations.
func (t *iterTimer) fitTimed(want int, fit func() error) error {
	t.reset()
	if err := fit(); err != nil {
		return err
	}
	if t.n != want {
		return fmt.Errorf("fit timed %d iterations, want %d", t.n, want)
	}
	return nil
}

// selfTimedInstance is algoInstance with the call timed per iteration by t.
func selfTimedInstance(b backend.Backend, t *iterTimer, step func() error, out func() ([]float64, error)) *instance {
	in := algoInstance(b, step, out, nil)
	in.selfTimed = t.seconds
	return in
}

// ---- MGVB ----

// mgvbIters are the iterations of one timed MGVB fit, all of them timed (iteration 0, the natural gradient at
// the start, runs before the loop and is not).
const mgvbIters = 3

// isoNormal is the standard normal log posterior −½‖θ‖² (up to a constant) on every column of θ: O(dS) work, so
// the step's own cost dominates.
type isoNormal struct{ d int }

func (m isoNormal) Dim() int { return m.d }

func (m isoNormal) LogDensityBatch(b backend.Backend, lp, grad, theta *T) error {
	if err := b.Reduce(lp, backend.ReduceSumSq, backend.AxisRows, theta); err != nil {
		return err
	}
	if grad != nil {
		if err := b.Axpby(grad, -1, theta, 0, nil); err != nil {
			return err
		}
	}
	return b.Axpby(lp, -0.5, lp, 0, nil)
}

func setupMGVB(b backend.Backend, d dims, f *filler) (*instance, error) {
	mu0 := tensor.NewHost(d.Batch, d.D, 1)
	c := rng.Counter{Seed: f.seed, Stream: 1}
	c.FillNormal(mu0.Storage().Host())
	s0 := tensor.NewHost(d.Batch, d.D, d.D)
	for k := 0; k < d.Batch; k++ {
		for i := 0; i < d.D; i++ {
			s0.Set(k, i, i, 0.04)
		}
	}
	cfg := mgvb.DefaultConfig()
	cfg.S, cfg.Patience, cfg.Seed = d.K, 0, f.seed
	cfg.InitMu, cfg.InitSigma = mu0.Storage().Host(), s0.Storage().Host()
	var res *mgvb.Result
	timer := &iterTimer{}
	step := func() error {
		return timer.fitTimed(mgvbIters, func() error {
			cfg.Control = algorun.Control{MaxIter: mgvbIters, Recorder: timer}
			r, err := mgvb.Fit(context.Background(), b, isoNormal{d.D}, cfg)
			res = r
			return err
		})
	}
	out := func() ([]float64, error) {
		if res == nil {
			return nil, fmt.Errorf("no fit")
		}
		return append(append([]float64(nil), res.LastMu.Storage().Host()...), res.LastSigma.Storage().Host()...), nil
	}
	return selfTimedInstance(b, timer, step, out), nil
}

// ---- Manifold NNVB ----

// nnvbIters are the iterations of one timed NNVB fit, all of them timed (iteration 0, the gradient and the K-FAC
// natural gradient at the start, runs before the loop and is not).
const nnvbIters = 3

// nnetData returns a synthetic data set for the 2×10 network classifier: X (n×p) standard normal, labels drawn
// from a logistic model with coefficients N(0, 1/p), so that both classes occur.
func nnetData(n, p int, seed uint64) (x, y []float64) {
	x = make([]float64, n*p)
	(rng.Counter{Seed: seed, Stream: 6}).FillNormal(x)
	beta := make([]float64, p)
	(rng.Counter{Seed: seed, Stream: 7}).FillNormal(beta)
	u := make([]float64, n)
	(rng.Counter{Seed: seed, Stream: 8}).FillUniform(u)
	y = make([]float64, n)
	for i := range y {
		eta := 0.0
		for j, bj := range beta {
			eta += x[i*p+j] * bj
		}
		if u[i] < 1/(1+math.Exp(-eta/math.Sqrt(float64(p)))) {
			y[i] = 1
		}
	}
	return x, y
}

// nnvbDim is d = 10p + 121, the parameter count of the 2×10 network on p inputs (models/nnet).
func nnvbDim(p int) int { return nnet.Hidden*p + nnet.Hidden*(nnet.Hidden+1) + nnet.Hidden + 1 }

func setupNNVB(b backend.Backend, d dims, f *filler) (*instance, error) {
	x, y := nnetData(d.N, d.P, f.seed)
	m, err := nnet.New(x, y, d.N, d.P)
	if err != nil {
		return nil, err
	}
	p0, err := nnvb.RandomInit(b, m.Dim(), f.seed, nil)
	if err != nil {
		return nil, err
	}
	cfg := nnvb.DefaultConfig()
	cfg.S, cfg.Seed, cfg.Init = d.K, f.seed, p0
	var res *nnvb.Result
	timer := &iterTimer{}
	cfg.Control = algorun.Control{MaxIter: nnvbIters, Recorder: timer}
	step := func() error {
		return timer.fitTimed(nnvbIters, func() error {
			r, err := nnvb.Fit(context.Background(), b, model.Batch(m), cfg)
			res = r
			return err
		})
	}
	out := func() ([]float64, error) {
		if res == nil {
			return nil, fmt.Errorf("no fit")
		}
		v := append(append([]float64(nil), res.W1...), res.W2...)
		v = append(append(v, res.B1...), res.B2...)
		return append(v, res.LB...), nil
	}
	return selfTimedInstance(b, timer, step, out), nil
}

// ---- L-RVGA ----

// lrvgaInner is n_in, the recursive-EM iterations per observation of the timed step.
const lrvgaInner = 3

func setupLRVGA(b backend.Backend, d dims, f *filler) (*instance, error) {
	flt, err := lrvga.New(b, lrvga.Config{D: d.D, P: d.P, Inner: lrvgaInner, Seed: f.seed})
	if err != nil {
		return nil, err
	}
	x := make([]float64, d.D)
	rc := rng.Counter{Seed: f.seed, Stream: 2}
	rc.FillNormal(x)
	for i := range x {
		x[i] /= math.Sqrt(float64(d.D))
	}
	n := 0
	step := func() error {
		n++
		return flt.Update(x, float64(n%2))
	}
	out := func() ([]float64, error) { return download(b, flt.Mean()) }
	return algoInstance(b, step, out, flt.Close), nil
}

// ---- gSGNHT ----

func setupSGGMC(b backend.Backend, d dims, f *filler) (*instance, error) {
	mu := make([]float64, d.N)
	mu[0] = 1
	tgt, err := vmf.NewMixture([]float64{1}, []float64{5}, [][]float64{mu})
	if err != nil {
		return nil, err
	}
	x0 := tensor.NewHost(d.Batch, 1, d.N)
	xs := x0.Storage().Host()
	rc := rng.Counter{Seed: f.seed, Stream: 3}
	rc.FillNormal(xs)
	for r := 0; r < d.Batch; r++ {
		row := xs[r*d.N : (r+1)*d.N]
		s := 0.0
		for _, v := range row {
			s += v * v
		}
		s = math.Sqrt(s)
		for i := range row {
			row[i] /= s
		}
	}
	xd, err := backend.UploadNew(b, x0) // the sampler takes its starting points on b, and copies them
	if err != nil {
		return nil, err
	}
	defer b.Free(xd)
	s, err := sggmc.New(b, tgt, xd, sggmc.Config{Method: sggmc.GSGNHT, Step: 0.05, Friction: 1, Seed: f.seed})
	if err != nil {
		return nil, err
	}
	out := func() ([]float64, error) { return download(b, s.X()) }
	return algoInstance(b, s.Sample, out, s.Close), nil
}

// ---- Cholesky natural gradient ----

// isoGauss is N(m, I): an O(d) log joint, so that the family's O(d²) work dominates.
type isoGauss struct{ m []float64 }

func (g *isoGauss) Dim() int { return len(g.m) }

func (g *isoGauss) LogJoint(th, grad []float64) float64 {
	s := 0.0
	for i := range th {
		grad[i] = g.m[i] - th[i]
		s -= 0.5 * grad[i] * grad[i]
	}
	return s
}

func (g *isoGauss) LogDensity(grad, th []float64) (float64, error) { return g.LogJoint(th, grad), nil }

func setupCholNG(b backend.Backend, d dims, f *filler) (*instance, error) {
	fam, err := cholng.NewDense(b, d.D, cholng.Covariance, nil, nil, 1)
	if err != nil {
		return nil, err
	}
	tg := &isoGauss{m: make([]float64, d.D)}
	rc := rng.Counter{Seed: f.seed, Stream: 4}
	rc.FillNormal(tg.m)
	it := uint64(0)
	step := func() error {
		it++
		if err := fam.Sample(rng.Counter{Seed: f.seed, Stream: 5 + it}); err != nil {
			return err
		}
		_, _, err := fam.Gradient(tg, cholng.Natural)
		return err
	}
	out := func() ([]float64, error) {
		gm, err := fam.GradMu()
		if err != nil {
			return nil, err
		}
		gl, err := fam.GradL()
		return append(append([]float64(nil), gm...), gl...), err
	}
	return algoInstance(b, step, out, fam.Close), nil
}

// ---- RCG on the mixture of Gaussians ----

// rcgDim is D, the data dimension of the synthetic mixture of §6.2.
const rcgDim = 2

// rcgIters are the iterations of one timed RCG run; the first is not timed (it reuses the gradient computed at
// the start), the others are.
const rcgIters = 4

func setupRCG(b backend.Backend, d dims, f *filler) (*instance, error) {
	m, err := mog.New(mog.Synthetic(0.3, d.N, 0.03, f.seed), d.N, rcgDim, d.K, mog.DefaultPrior(rcgDim), mog.Options{})
	if err != nil {
		return nil, err
	}
	x0, err := mog.Init(m, f.seed)
	if err != nil {
		return nil, err
	}
	return rcgInstance(b, mog.NewCollapsed(m), func() ([]float64, error) { return x0, nil },
		rcg.Settings{RestartEvery: rcg.SqrtN}), nil
}

// setupRCGBatch times rcgIters − 1 rounds of a MinimizeBatch run of d.Batch mixture runs (algo.rcg's data set,
// initialisations seed, seed + 1, …, algo.rcg's settings) as one mog.Batch on b: with batch 1, one run on the
// backend. A round's time is the time between two records of run 0 (the first round, with the batch's set-up, is
// not timed).
func setupRCGBatch(b backend.Backend, d dims, f *filler) (*instance, error) {
	return batchInstance(func() (rcg.BatchObjective, [][]float64, func(), error) {
		m, err := mog.New(mog.Synthetic(0.3, d.N, 0.03, f.seed), d.N, rcgDim, d.K, mog.DefaultPrior(rcgDim), mog.Options{})
		if err != nil {
			return nil, nil, nil, err
		}
		ms, xs := make([]*mog.Model, d.Batch), make([][]float64, d.Batch)
		for i := range ms {
			ms[i] = m
			if xs[i], err = mog.Init(m, f.seed+uint64(i)); err != nil {
				return nil, nil, nil, err
			}
		}
		bt, err := mog.NewBatch(b, ms)
		if err != nil {
			return nil, nil, nil, err
		}
		return bt, xs, bt.Close, nil
	}, b, rcg.Settings{RestartEvery: rcg.SqrtN}), nil
}

// setupNSSM times RCG iterations on the nonlinear state-space model (NSSM-SYN of T = n steps, d = 5, H = 20,
// Gauss–Hermite moments, p = 21), each call from the same start.
func setupNSSM(b backend.Backend, d dims, f *filler) (*instance, error) {
	m, err := nfa.New(nfa.SyntheticNSSM(d.N, 1), d.N, nssmP, nfa.Config{Dynamic: true, D: 5, H: 20, Moments: nfa.GaussHermite})
	if err != nil {
		return nil, err
	}
	return rcgInstance(b, m, func() ([]float64, error) { return m.Init(f.seed) }, rcg.Settings{PowellBeale: 0.2}), nil
}

// rcgInstance times rcgIters − 1 iterations of a Minimize run of obj from start() (the first iteration reuses the
// gradient of the start and is not timed).
func rcgInstance(b backend.Backend, obj rcg.Objective, start func() ([]float64, error), s rcg.Settings) *instance {
	var res *rcg.Result
	timer := &iterTimer{from: 1}
	step := func() error {
		x0, err := start()
		if err != nil {
			return err
		}
		return timer.fitTimed(rcgIters-1, func() error {
			s := s
			s.Control = algorun.Control{MaxIter: rcgIters, Recorder: timer}
			r, err := rcg.Minimize(context.Background(), obj, x0, s)
			res = r
			return err
		})
	}
	out := func() ([]float64, error) {
		if res == nil {
			return nil, fmt.Errorf("no iteration")
		}
		return res.X, nil
	}
	return selfTimedInstance(b, timer, step, out)
}

// setupNSSMBatch times rcgIters − 1 rounds of a MinimizeBatch run of d.Batch NSSM runs (NSSM-SYN with d.N steps,
// one data set, seeds 0 … d.Batch − 1) as one nfa.Batch on b; a round's time is the time between two records of
// run 0 (the first round, with the batch's set-up, is not timed).
func setupNSSMBatch(b backend.Backend, d dims, f *filler) (*instance, error) {
	X := nfa.SyntheticNSSM(d.N, 1)
	return batchInstance(func() (rcg.BatchObjective, [][]float64, func(), error) {
		ms, xs := make([]*nfa.Model, d.Batch), make([][]float64, d.Batch)
		for i := range ms {
			m, err := nfa.New(X, d.N, nssmP, nfa.Config{Dynamic: true, D: 5, H: 20, Moments: nfa.GaussHermite})
			if err != nil {
				return nil, nil, nil, err
			}
			if xs[i], err = m.Init(f.seed + uint64(i)); err != nil {
				return nil, nil, nil, err
			}
			ms[i] = m
		}
		bt, err := nfa.NewBatch(b, ms)
		if err != nil {
			return nil, nil, nil, err
		}
		return bt, xs, bt.Close, nil
	}, b, rcg.Settings{PowellBeale: 0.2}), nil
}

// batchInstance times rcgIters − 1 rounds of a MinimizeBatch run of the batch objective and starting points that
// open builds afresh on each call on b (it returns the batch's close too); a round's time is the time between two
// records of run 0.
func batchInstance(open func() (rcg.BatchObjective, [][]float64, func(), error), b backend.Backend,
	s rcg.Settings) *instance {
	var res []rcg.Result
	timer := &iterTimer{from: 1}
	step := func() error {
		bt, xs, closeBatch, err := open()
		if err != nil {
			return err
		}
		defer closeBatch()
		return timer.fitTimed(rcgIters-1, func() error {
			last := time.Now()
			s := s
			s.Control = algorun.Control{MaxIter: rcgIters, Recorder: algorun.Func(func(r algorun.Record) {
				if r.Run == 0 {
					now := time.Now()
					r.IterTime, last = now.Sub(last), now
					timer.Record(r)
				}
			})}
			r, err := rcg.MinimizeBatch(context.Background(), bt, xs, s)
			res = r
			return err
		})
	}
	out := func() ([]float64, error) {
		if res == nil {
			return nil, fmt.Errorf("no iteration")
		}
		var x []float64
		for _, r := range res {
			x = append(x, r.X...)
		}
		return x, nil
	}
	return selfTimedInstance(b, timer, step, out)
}

// nssmP is the observation dimension of NSSM-SYN.
const nssmP = 21

// algoWorkload fills the fields every method workload shares: the determinism check on the quick dims, one
// operand set, the kernel named after the package.
func algoWorkload(w *workload, pkg string, setup func(b backend.Backend, d dims, f *filler) (*instance, error)) *workload {
	w.checkKind = checkDeterminism
	w.op = pkg
	quick := w.sizes["quick"]
	w.check = func(dims) dims { return quick }
	w.kernel = func(backend.Backend, dims) string { return pkg }
	w.setup = func(b backend.Backend, d, _ dims, _ bool, _ int, f *filler) (*instance, error) {
		return setup(b, d, f)
	}
	return w
}

// algoWorkloads are the method workloads, appended to the workloads table.
var algoWorkloads = []*workload{
	algoWorkload(&workload{
		name: "algo.mgvb",
		desc: "one MGVB iteration (mean over a Fit of 3 iterations: draws, score-function gradient, SPD retraction and transport) of batch fits of dimension d with k draws, N(0, I) target",
		uses: []string{"batch", "d", "k"},
		sizes: map[string]dims{
			"quick": {Batch: 2, D: 10, K: 20}, "small": {Batch: 10, D: 25, K: 100},
			"medium": {Batch: 1, D: 200, K: 100},
		},
		// Per iteration of each fit: draws L z (d²S), the weighted SYRKs of the gradient (2d²S), Cholesky and the
		// preconditioning, retraction and transport (≈ 12d³): ≈ B·(3d²S + 12d³). Bytes: Σ, the momentum and the
		// gradient (d² each, read and written) and the d×S draws: 8·B·(6d² + 2dS).
		cost: func(d dims) (float64, float64) {
			b, n, s := float64(d.Batch), float64(d.D), float64(d.K)
			return b * (3*n*n*s + 12*n*n*n), 8 * b * (6*n*n + 2*n*s)
		},
		setBytes:  func(d dims) float64 { return 8 * float64(d.Batch) * (8*f64(d.D, d.D) + 4*f64(d.D, d.K)) },
		tempBytes: func(d dims) float64 { return 8 * float64(d.Batch) * (4*f64(d.D, d.D) + 4*f64(d.D, d.K)) },
	}, "algos/mgvb", setupMGVB),
	algoWorkload(&workload{
		name: "algo.nnvb",
		desc: "one manifold NNVB iteration (mean over a Fit of 3 iterations: draws, reparameterisation gradient, K-FAC natural gradient by KronSolve, QR retraction and transport of W₁, W₂) on the 2×10 network classifier (models/nnet) with p inputs, n synthetic points, k draws; d = 10p + 121",
		uses: []string{"n", "p", "k"},
		sizes: map[string]dims{
			"quick": {N: 100, P: 1, K: 10}, "small": {N: 1000, P: 8, K: 20},
			"medium": {N: 1000, P: 24, K: 20}, "large": {N: 10000, P: 100, K: 20},
		},
		// Rough, per iteration, d = 10p + 121, S = k. The manifold and K-FAC algebra on d×d matrices: the two QR
		// retractions (2·8d³/3), W₂C_zW₂ᵀ and W₂C_δW₂ᵀ (8d³), the Kronecker solve (14d³/3) and the b₂ solve (d³/3),
		// two Riemannian gradients and two transports (projections, 4d³ each): ≈ 34d³. The five d×d by d×S
		// products and two SYRKs of the gradient: 12d²S. The network's forward and backward passes on the host:
		// ≈ 4nd per draw. Bytes: about 30 d×d reads and writes (W, momenta, gradients, K-FAC factors), about
		// 24 d×S (the device arrays and their host mirrors), the data read once per draw: 8·(30d² + 24dS + npS).
		cost: func(d dims) (float64, float64) {
			n, s, p := float64(nnvbDim(d.P)), float64(d.K), float64(d.P)
			pts := float64(d.N)
			return 34*n*n*n + 12*n*n*s + 4*pts*n*s, 8 * (30*n*n + 24*n*s + pts*p*s)
		},
		setBytes: func(d dims) float64 { return 8 * (2*f64(nnvbDim(d.P), nnvbDim(d.P)) + f64(d.N, d.P+1)) },
		tempBytes: func(d dims) float64 {
			n := nnvbDim(d.P)
			return 8 * (20*f64(n, n) + 16*f64(n, d.K))
		},
	}, "algos/nnvb", setupNNVB),
	algoWorkload(&workload{
		name: "algo.lrvga",
		desc: "one L-RVGA linear-regression step (Filter.Update, n_in = 3 recursive-EM iterations) at dimension d, rank p",
		uses: []string{"d", "p"},
		sizes: map[string]dims{
			"quick": {D: 2000, P: 5}, "small": {D: 100000, P: 10},
			"medium": {D: 1000000, P: 10}, "large": {D: 1000000, P: 100},
		},
		// (6·n_in + 1)·d·p² multiply-adds (the FA step and the Woodbury mean): 2·19·d·p² flops. Bytes: W (d×p) read
		// twice per inner iteration and written once, plus ψ, x and the mean: 8·(d·p·(2·n_in + 1) + 4d).
		cost: func(d dims) (float64, float64) {
			n, p := float64(d.D), float64(d.P)
			return 2 * (6*lrvgaInner + 1) * n * p * p, 8 * (n*p*(2*lrvgaInner+1) + 4*n)
		},
		setBytes:  func(d dims) float64 { return 8 * (3*f64(d.D, d.P) + 6*float64(d.D)) },
		tempBytes: func(d dims) float64 { return 8 * 3 * f64(d.D, d.P) },
	}, "algos/lrvga", setupLRVGA),
	algoWorkload(&workload{
		name: "algo.sggmc",
		desc: "one gSGNHT sample (Sampler.Sample, L = 1) of batch chains on the sphere S^(n−1), vMF target (κ = 5)",
		uses: []string{"batch", "n"},
		sizes: map[string]dims{
			"quick": {Batch: 256, N: 3}, "small": {Batch: 10000, N: 3},
			"medium": {Batch: 10000, N: 50},
		},
		// Gradient, projections, the two half-steps of the geodesic flow and the O and B parts: ≈ 40 flops per
		// coordinate. Bytes: x, v, the gradient and the noise read and written: 8·8·batch·n.
		cost: func(d dims) (float64, float64) {
			e := f64(d.Batch, d.N)
			return 40 * e, 8 * 8 * e
		},
		setBytes:  func(d dims) float64 { return 8 * 6 * f64(d.Batch, d.N) },
		tempBytes: func(d dims) float64 { return 8 * 4 * f64(d.Batch, d.N) },
	}, "algos/sggmc", setupSGGMC),
	algoWorkload(&workload{
		name: "algo.cholng",
		desc: "one dense Cholesky natural-gradient iteration (draw z, Gradient(Natural) of the Covariance family: 2 TRMV + the scan, Snngm norm) at dimension d, N(m, I) target",
		uses: []string{"d"},
		sizes: map[string]dims{
			"quick": {D: 20}, "small": {D: 200},
			"medium": {D: 1000},
		},
		// Two triangular matrix-vector products (2d² flops) and the O(d²) scan forming the gradient of L and its
		// norm (≈ 2d²): ≈ 4d². Bytes: L read twice and its gradient written: 8·3·d².
		cost: func(d dims) (float64, float64) {
			n := float64(d.D)
			return 4 * n * n, 8 * 3 * n * n
		},
		setBytes:  func(d dims) float64 { return 8 * 3 * f64(d.D, d.D) },
		tempBytes: func(d dims) float64 { return 8 * 2 * f64(d.D, d.D) },
	}, "algos/cholng", setupCholNG),
	algoWorkload(&workload{
		name: "algo.rcg",
		desc: "one RCG iteration (mean of iterations 2–4 of a Minimize run: VB-EM update, gradient, natural gradient, line search) on the collapsed mixture of k Gaussians, n 2-D points",
		uses: []string{"n", "k"},
		sizes: map[string]dims{
			"quick": {N: 1000, K: 8}, "small": {N: 10000, K: 8},
			"medium": {N: 100000, K: 8}, "large": {N: 1000000, K: 8},
		},
		// Host Go: each evaluation of F or its gradient visits every (point, component) pair with O(D²) work (≈ 25
		// flops at D = 2); the VB-EM update, the gradient, the natural gradient and a few line-search trials make
		// about 8 per iteration: ≈ 200·n·k. Bytes: the n×k responsibilities read and written per evaluation, the data read:
		// 8·8·(2nk + nD).
		cost: func(d dims) (float64, float64) {
			n, k := float64(d.N), float64(d.K)
			return 200 * n * k, 8 * 8 * (2*n*k + n*rcgDim)
		},
		setBytes:  func(d dims) float64 { return 8 * (3*f64(d.N, d.K) + f64(d.N, rcgDim)) },
		tempBytes: func(d dims) float64 { return 8 * 4 * f64(d.N, d.K) },
	}, "algos/rcg", setupRCG),
	algoWorkload(&workload{
		name: "algo.rcg.batch",
		desc: "one RCG round (mean of rounds 2–4 of a MinimizeBatch run: one iteration of every run) of batch collapsed-mixture runs as one mog.Batch on the backend, k components, n 2-D points; batch 1 is one run on the backend",
		uses: []string{"batch", "n", "k"},
		sizes: map[string]dims{
			"quick": {Batch: 2, N: 1000, K: 8}, "small": {Batch: 1, N: 10000, K: 8},
			"medium": {Batch: 1, N: 100000, K: 8}, "large": {Batch: 1, N: 1000000, K: 8},
		},
		// As algo.rcg per run. On the backend an evaluation is two GEMMs of n×k by n×7 (the statistics and φ) and
		// element-wise passes over n×k; the O(kD³) conditional optima stay on the host.
		cost: func(d dims) (float64, float64) {
			b, n, k := float64(d.Batch), float64(d.N), float64(d.K)
			return b * 200 * n * k, b * 8 * 8 * (2*n*k + n*rcgDim)
		},
		// The design Z (n×7, shared by the runs), and per run x, r, φ and a scratch n×k.
		setBytes:  func(d dims) float64 { return 8 * (7*float64(d.N) + 4*float64(d.Batch)*f64(d.N, d.K)) },
		tempBytes: func(d dims) float64 { return 8 * 6 * float64(d.Batch) * f64(d.N, d.K) },
	}, "models/mog", setupRCGBatch),
	algoWorkload(&workload{
		name: "algo.nssm",
		desc: "one RCG iteration (mean of iterations 2–4 of a Minimize run: variance fixed points and hyperparameter update, gradient, chain natural gradient, line search) on the nonlinear state-space model, NSSM-SYN with n time steps, d = 5, H = 20, p = 21, Gauss–Hermite moments (10 nodes)",
		uses: []string{"n"},
		sizes: map[string]dims{
			"quick": {N: 40}, "small": {N: 200}, "medium": {N: 1000},
		},
		// Host Go, per time step and evaluation: the two MLPs' moment propagation (the Jacobians pHd + d²H and the
		// layers ≈ 4(p + d)H + 6dH multiply-adds) and tanh at 10 nodes for each of the 2H hidden units (≈ 30
		// flops each): ≈ 2·(4.5k) + 12k ≈ 21k flops forward, about twice that with the backward pass. Per iteration
		// about 3 values and 2 gradients: ≈ 1.6e5·n flops. Bytes: means, variances and the observations of each
		// step read per evaluation: 8·7·n·(4d + p).
		cost: func(d dims) (float64, float64) {
			n := float64(d.N)
			return 1.6e5 * n, 8 * 7 * n * (4*5 + nssmP)
		},
		setBytes:  func(d dims) float64 { return 8 * float64(d.N) * (nssmP + 4*5) },
		tempBytes: func(d dims) float64 { return 8 * float64(d.N) * 8 * 5 },
	}, "models/nfa", setupNSSM),
	algoWorkload(&workload{
		name: "algo.nssm.batch",
		desc: "one RCG round (mean of rounds 2–4 of a MinimizeBatch run: one iteration of every run) of batch NSSM runs as one nfa.Batch on the backend, NSSM-SYN with n time steps, d = 5, H = 20, p = 21, Gauss–Hermite moments (10 nodes)",
		uses: []string{"batch", "n"},
		sizes: map[string]dims{
			"quick": {Batch: 2, N: 40}, "small": {Batch: 8, N: 200}, "medium": {Batch: 8, N: 1000},
			"large": {Batch: 30, N: 1000},
		},
		// As algo.nssm per run (≈ 1.6e5·n flops per iteration): each line-search round and damping trial evaluates
		// only the runs it concerns, as the host runs do. Bytes: as algo.nssm
		// per run. Scratch, per run and step, of each of the two MLPs: tanh at 10 nodes and 20 moment and gradient
		// arrays of H units, the Khatri–Rao factor and its gradient (2Hd) and three copies of J (3pd): ≈ 2200 values.
		cost: func(d dims) (float64, float64) {
			b, n := float64(d.Batch), float64(d.N)
			return b * 1.6e5 * n, b * 8 * 7 * n * (4*5 + nssmP)
		},
		setBytes:  func(d dims) float64 { return 8 * float64(d.Batch) * float64(d.N) * (nssmP + 4*5) },
		tempBytes: func(d dims) float64 { return 8 * float64(d.Batch) * float64(d.N) * 2200 },
	}, "models/nfa", setupNSSMBatch),
}

func init() { workloads = append(workloads, algoWorkloads...) }
