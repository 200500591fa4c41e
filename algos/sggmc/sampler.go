package sggmc

import (
	"context"
	"math"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/manifold"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// Sampler runs SGGMC or gSGNHT chains (§3.3). The velocity (and ξ) is kept across samples, not refreshed as in
// GMC.
type Sampler struct {
	b   backend.Backend
	m   manifold.Geodesic
	tgt Target
	cfg Config
	K   int
	n   int

	x, v        *T // batch×K×n state
	grad, noise *T
	xi, kin, d  *T // batch×1×1: thermostat, ‖v‖², damping factor
	ones        *T // batch×1×1 of ones
	rowSig      *T // batch×K×1 per-sphere noise sd (NoiseEstimator targets)
	rows        *T // batch×K×1 scratch
	vhat, sig   []float64
	sd          float64 // √(2Cε − V̂ε²)
	noise0      noiseStream
	steps       uint64 // gradient evaluations so far
	samples     int
	clamped     int // noise variances clamped at 0 (NoiseEstimator targets: 2Cε − V̂ε² must be ≥ 0)
	mem         scratch
}

// New starts chains at x0 (batch×K×n, unit rows, a tensor of b; copied) for tgt, drawing the initial velocity
// v ~ Λ(x)𝒩(0, I) and ξ = C. The backend tensors are freed by Close.
func New(b backend.Backend, tgt Target, x0 *T, cfg Config) (*Sampler, error) {
	m, err := geometry(cfg.Manifold, x0)
	if err != nil {
		return nil, err
	}
	if err := checkPoints(b, m, x0); err != nil {
		return nil, err
	}
	batch, K, n := x0.Batch(), x0.Rows(), x0.Cols()
	if err := cfg.check(m); err != nil {
		return nil, err
	}
	s := &Sampler{b: b, m: m, tgt: tgt, cfg: cfg, K: K, n: n, mem: scratch{b: b}}
	s.sd = math.Sqrt(2*cfg.Friction*cfg.Step - cfg.VHat*cfg.Step*cfg.Step)
	for _, p := range []struct {
		t    **T
		r, c int
	}{{&s.x, K, n}, {&s.v, K, n}, {&s.grad, K, n}, {&s.noise, K, n}, {&s.xi, 1, 1}, {&s.kin, 1, 1},
		{&s.d, 1, 1}, {&s.ones, 1, 1}, {&s.rowSig, K, 1}, {&s.rows, K, 1}} {
		if *p.t, err = s.mem.alloc(batch, p.r, p.c); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.init(x0); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Sampler) init(x0 *T) error {
	b := s.b
	if err := b.Copy(s.x, x0); err != nil {
		return err
	}
	if err := b.Fill(s.ones, 1); err != nil {
		return err
	}
	if err := b.Fill(s.xi, s.cfg.Friction); err != nil {
		return err
	}
	// Stream Stream of Seed: the initial velocity comes first, then the O-step noise.
	s.noise0 = noiseStream{c: rng.Counter{Seed: s.cfg.Seed, Stream: s.cfg.Stream}}
	if err := s.noise0.fill(b, s.v); err != nil {
		return err
	}
	return s.m.Project(b, s.v, s.x, s.v)
}

// Close frees the sampler's backend tensors.
func (s *Sampler) Close() { s.mem.free() }

// X returns the current points (batch×K×n, backend memory; valid until the next call that moves the chains).
func (s *Sampler) X() *T { return s.x }

// V returns the current velocities.
func (s *Sampler) V() *T { return s.v }

// Config returns the sampler's settings with defaults filled in.
func (s *Sampler) Config() Config { return s.cfg }

// Steps returns the number of gradient evaluations (ABOBA steps) done.
func (s *Sampler) Steps() uint64 { return s.steps }

// Samples returns the number of samples done.
func (s *Sampler) Samples() int { return s.samples }

// flow is sub-dynamics A for time h: the exact geodesic flow and, for gSGNHT, ξ += (vᵀv/m − 1)h (the exact solution of the sub-dynamics, §3.3).
func (s *Sampler) flow(h float64) error {
	if err := s.m.Flow(s.b, s.x, s.v, h); err != nil {
		return err
	}
	if s.cfg.Method != GSGNHT {
		return nil
	}
	if err := s.b.Reduce(s.kin, backend.ReduceSumSq, backend.AxisAll, s.v); err != nil {
		return err
	}
	if err := s.b.Axpby(s.xi, h/float64(s.cfg.Dim), s.kin, 1, s.xi); err != nil {
		return err
	}
	return s.b.Axpby(s.xi, 1, s.xi, -h, s.ones)
}

// damping computes the B factor: e^{−Cε/2} (SGGMC, returned as a scalar) or e^{−ξε/2} per chain into s.d (gSGNHT,
// recomputed from the current ξ, which A has just moved).
func (s *Sampler) damping() (float64, error) {
	if s.cfg.Method == SGGMC {
		return math.Exp(-s.cfg.Friction * s.cfg.Step / 2), nil
	}
	return math.NaN(), s.b.Map(s.d, backend.Exp, -s.cfg.Step/2, s.xi)
}

func (s *Sampler) applyB(dc float64) error {
	if s.cfg.Method == SGGMC {
		return s.b.Axpby(s.v, dc, s.v, 0, nil)
	}
	vf := flat(s.v)
	return s.b.ScaleRows(vf, vf, s.d)
}

// kick is sub-dynamics O for time ε: v += Λ(x)(−ε∇Ũ(x) + 𝒩(0, 2Cε − V̂ε²)), projecting gradient and noise alike
// (paper eq. (8); projecting the gradient only would let v leave the tangent space).
func (s *Sampler) kick() error {
	b, eps := s.b, s.cfg.Step
	if err := s.tgt.GradU(b, s.grad, s.x, s.steps); err != nil {
		return err
	}
	s.steps++
	if err := s.noise0.fill(b, s.noise); err != nil {
		return err
	}
	if ne, ok := s.tgt.(NoiseEstimator); ok {
		if err := s.perRowSigma(ne); err != nil {
			return err
		}
		if err := b.ScaleRows(s.noise, s.noise, s.rowSig); err != nil {
			return err
		}
		if err := b.Axpby(s.noise, -eps, s.grad, 1, s.noise); err != nil {
			return err
		}
	} else if err := b.Axpby(s.noise, -eps, s.grad, s.sd, s.noise); err != nil {
		return err
	}
	if err := s.m.Project(b, s.noise, s.x, s.noise); err != nil {
		return err
	}
	return b.Axpby(s.v, 1, s.v, 1, s.noise)
}

// perRowSigma sets the per-sphere sd √(2Cε − V̂ε²) from the target's estimate, clamping negative variances at 0.
func (s *Sampler) perRowSigma(ne NoiseEstimator) error {
	nr := s.x.Batch() * s.K
	if len(s.vhat) != nr {
		s.vhat = make([]float64, nr)
		s.sig = make([]float64, nr)
	}
	if err := ne.NoiseVar(s.vhat); err != nil {
		return err
	}
	c, eps := s.cfg.Friction, s.cfg.Step
	for i, vh := range s.vhat {
		v := 2*c*eps - vh*eps*eps
		if !(v > 0) {
			v = 0
			s.clamped++
		}
		s.sig[i] = math.Sqrt(v)
	}
	h, err := tensor.FromSlice(s.sig, s.x.Batch(), s.K, 1)
	if err != nil {
		return err
	}
	return s.b.Upload(s.rowSig, h)
}

// Sample advances every chain by one sample: L ABOBA steps with consecutive half-flows fused into one flow of
// length ε (as the authors' code does; the flow is exact, so A(ε/2)A(ε/2) = A(ε)).
func (s *Sampler) Sample() error {
	if h, ok := s.tgt.(SampleHook); ok {
		if err := h.BeginSample(s.b, s.x, s.samples); err != nil {
			return err
		}
	}
	eps := s.cfg.Step
	if err := s.flow(eps / 2); err != nil {
		return err
	}
	for l := 0; l < s.cfg.L; l++ {
		dc, err := s.damping()
		if err != nil {
			return err
		}
		if err := s.applyB(dc); err != nil {
			return err
		}
		if err := s.kick(); err != nil {
			return err
		}
		if err := s.applyB(dc); err != nil { // O leaves ξ unchanged: the same factor
			return err
		}
		h := eps
		if l == s.cfg.L-1 {
			h = eps / 2
		}
		if err := s.flow(h); err != nil {
			return err
		}
		if s.cfg.RenormEvery > 0 && s.steps%uint64(s.cfg.RenormEvery) == 0 {
			if err := s.m.Normalize(s.b, s.x, s.v); err != nil {
				return err
			}
		}
	}
	s.samples++
	return nil
}

// Diagnostics are the per-run health numbers (with the paper's SAM settings SGGMC without V̂ runs at ‖v‖²/m ≈ 1e5),
// averaged over chains.
type Diagnostics struct {
	Kinetic  float64 // mean over chains of ‖v‖²/m (1 at equilibrium)
	Xi       float64 // mean thermostat ξ (gSGNHT; C for SGGMC)
	MaxAngle float64 // max over chains and spheres of ‖v_k‖ε, the rotation angle of one step
	Clamped  int     // injected variances clamped at 0 so far
}

// Diagnostics reads the chains' kinetic temperature, ξ and largest rotation angle (synchronises a GPU).
func (s *Sampler) Diagnostics() (Diagnostics, error) {
	b, batch := s.b, s.x.Batch()
	if err := b.Reduce(s.kin, backend.ReduceSumSq, backend.AxisAll, s.v); err != nil {
		return Diagnostics{}, err
	}
	if err := b.RowDots(s.rows, s.v, s.v); err != nil {
		return Diagnostics{}, err
	}
	kin, xi, rows := tensor.NewHost(batch, 1, 1), tensor.NewHost(batch, 1, 1), tensor.NewHost(batch, s.K, 1)
	for _, p := range [][2]*T{{kin, s.kin}, {xi, s.xi}, {rows, s.rows}} {
		if err := b.Download(p[0], p[1]); err != nil {
			return Diagnostics{}, err
		}
	}
	d := Diagnostics{Clamped: s.clamped}
	for i := 0; i < batch; i++ {
		d.Kinetic += kin.At(i, 0, 0) / float64(s.cfg.Dim) / float64(batch)
		d.Xi += xi.At(i, 0, 0) / float64(batch)
		for k := 0; k < s.K; k++ {
			d.MaxAngle = math.Max(d.MaxAngle, math.Sqrt(rows.At(i, k, 0))*s.cfg.Step)
		}
	}
	if s.cfg.Method == SGGMC {
		d.Xi = s.cfg.Friction
	}
	return d, nil
}

// State is what a checkpoint holds: the chains, their velocities and thermostats, and the counters.
type State struct {
	Method      Method
	Batch, K, N int
	X, V, Xi    []float64
	Steps       uint64
	Samples     int
	Noise       rng.Counter
	Clamped     int
}

// State copies the sampler's state to the host.
func (s *Sampler) State() (State, error) {
	batch := s.x.Batch()
	st := State{Method: s.cfg.Method, Batch: batch, K: s.K, N: s.n, Steps: s.steps, Samples: s.samples,
		Noise: s.noise0.c, Clamped: s.clamped}
	x, v, xi := tensor.NewHost(batch, s.K, s.n), tensor.NewHost(batch, s.K, s.n), tensor.NewHost(batch, 1, 1)
	for _, p := range [][2]*T{{x, s.x}, {v, s.v}, {xi, s.xi}} {
		if err := s.b.Download(p[0], p[1]); err != nil {
			return State{}, err
		}
	}
	st.X, st.V, st.Xi = hostData(x), hostData(v), hostData(xi)
	return st, nil
}

// Restore puts back a state from State (same method and shapes).
func (s *Sampler) Restore(st State) error {
	batch := s.x.Batch()
	if st.Method != s.cfg.Method || st.Batch != batch || st.K != s.K || st.N != s.n ||
		len(st.X) != batch*s.K*s.n || len(st.V) != len(st.X) || len(st.Xi) != batch {
		return backend.Errorf("sggmc", "state", backend.ErrShape, "checkpoint of %v %d×%d×%d does not fit %v %d×%d×%d",
			st.Method, st.Batch, st.K, st.N, s.cfg.Method, batch, s.K, s.n)
	}
	for _, p := range []struct {
		dst  *T
		data []float64
		r, c int
	}{{s.x, st.X, s.K, s.n}, {s.v, st.V, s.K, s.n}, {s.xi, st.Xi, 1, 1}} {
		h, err := tensor.FromSlice(p.data, batch, p.r, p.c)
		if err != nil {
			return err
		}
		if err := s.b.Upload(p.dst, h); err != nil {
			return err
		}
	}
	s.steps, s.samples, s.noise0.c, s.clamped = st.Steps, st.Samples, st.Noise, st.Clamped
	return nil
}

// checkpointMethod and checkpointVersion name the checkpoint format.
const (
	checkpointMethod  = "sggmc"
	checkpointVersion = 1
)

// DefaultSamples is the number of samples Run draws when Control.MaxIter is 0.
const DefaultSamples = 1000

// Run draws samples under ctx and ctl: the iteration cap (one iteration is one sample; the count includes the
// samples before a resume; 0: DefaultSamples), the recorder, checkpoints every CheckpointEvery samples, and
// Control.Resume, which first restores the state saved at CheckpointPath (same method and shapes, or an error
// wrapping run.ErrCheckpoint or backend.ErrShape). onSample is called after each sample (nil to skip; an error
// stops the run). Records carry Extra "kinetic" (‖v‖²/m), "xi" and "max_angle"; Objective is what onSample
// leaves in *obj (NaN if not set).
func (s *Sampler) Run(ctx context.Context, ctl run.Control, onSample func(s *Sampler, obj *float64) error) (run.Result, error) {
	ctl = ctl.WithContext(ctx)
	if err := ctl.Validate(); err != nil {
		return run.Result{}, err
	}
	if ctl.Resume {
		var st State
		if err := run.LoadCheckpoint(ctl.CheckpointPath, checkpointMethod, checkpointVersion, &st); err != nil {
			return run.Result{}, err
		}
		if err := s.Restore(st); err != nil {
			return run.Result{}, err
		}
	}
	res := s.loop(ctl, onSample)
	return res, res.Err
}

func (s *Sampler) loop(ctl run.Control, onSample func(s *Sampler, obj *float64) error) run.Result {
	loop := ctl.Start(DefaultSamples, s.samples)
	for loop.Next() {
		if err := s.Sample(); err != nil {
			loop.Fail(err)
			break
		}
		obj := math.NaN()
		if onSample != nil {
			if err := onSample(s, &obj); err != nil {
				loop.Fail(err)
				break
			}
		}
		var d Diagnostics
		if ctl.Recorder != nil {
			var err error
			if d, err = s.Diagnostics(); err != nil {
				loop.Fail(err)
				break
			}
			if !run.Finite(d.Kinetic, d.Xi) {
				loop.Finish(run.NotFinite)
			}
		}
		loop.Report(run.Record{Objective: obj, Smoothed: math.NaN(), GradNorm: math.NaN(), Step: s.cfg.Step,
			Extra: map[string]float64{"kinetic": d.Kinetic, "xi": d.Xi, "max_angle": d.MaxAngle}})
		if loop.CheckpointDue() {
			st, err := s.State()
			if err == nil {
				err = run.SaveCheckpoint(ctl.CheckpointPath, checkpointMethod, checkpointVersion, st)
			}
			if err != nil {
				loop.Fail(err)
				break
			}
		}
	}
	return loop.Result()
}

// hostData returns the elements of a contiguous host tensor.
func hostData(t *T) []float64 {
	d, _, _, _ := t.Matrix(0)
	return d[:t.Len():t.Len()]
}
