package rcgexp

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/models/nfa"
)

// NFAMethods are the methods RunNFA accepts: the paper's RCG, RG, CG, plain gradient descent and the heuristic Old
// of Valpola & Karhunen (2002).
var NFAMethods = []string{"RCG", "RG", "CG", "GD", "Old"}

// methodByName returns the Method called name (Method.String).
func methodByName(name string) (rcg.Method, error) {
	for m := rcg.RCG; m <= rcg.Old; m++ {
		if m.String() == name {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%w: method %q", rcg.ErrBadInput, name)
}

// RunNFA fits the NFA or NSSM model m from m.Init(seed) with one method: the joint step on all means (Powell–Beale
// restart (7) for the conjugate methods), the between-step updates of the model's Update, and the rule |ΔF| < tol
// for patience consecutive iterations (§3.5: tol = 1e-5·T/80, patience 5), within a cap of limit process CPU time
// (0: none), measured with run.CPUTime and enforced by cancelling the run's context. It returns the F(t) trace for
// time-to-target summaries, t in seconds of process CPU time (the paper's measure).
func RunNFA(m *nfa.Model, seed uint64, method string, tol float64, patience int, limit time.Duration) (*Trace, error) {
	return runNFA(m, seed, method, tol, patience, limit, 0, nil, "", 0)
}

// runNFA is RunNFA with a cap of maxIter iterations as well (0: none), calling tick (if not nil) with the trace
// after each iteration, and with a checkpoint of the run and its trace in the file ckpt (if not "") every
// ckptEvery iterations, from which it resumes when the file exists.
func runNFA(m *nfa.Model, seed uint64, method string, tol float64, patience int, limit time.Duration,
	maxIter int, tick func(*Trace), ckpt string, ckptEvery int) (*Trace, error) {
	meth, err := methodByName(method)
	if err != nil {
		return nil, err
	}
	x0, err := m.Init(seed)
	if err != nil {
		return nil, err
	}
	s := rcg.Settings{Method: meth, Tol: tol, Patience: patience, PowellBeale: 0.2}
	tr := &Trace{Method: method, Seed: int(seed), Limit: limit.Seconds()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obj := &tracedModel{Model: m, tr: tr, start: run.CPUTime()}
	if maxIter <= 0 {
		maxIter = 1 << 30
	}
	s.Control = run.Control{MaxIter: maxIter, Recorder: run.Func(func(r run.Record) {
		el := run.CPUTime() - obj.start
		tr.T = append(tr.T, el.Seconds())
		tr.F = append(tr.F, r.Extra["F"])
		tr.Evals = append(tr.Evals, int(r.Extra["f_evals"]+r.Extra["g_evals"]))
		if tick != nil {
			tick(tr)
		}
		if limit > 0 && el >= limit {
			cancel() // the loop stops before the next iteration
		}
	})}
	if ckpt != "" {
		s.Control.CheckpointEvery, s.Control.CheckpointPath, s.Control.Resume = ckptEvery, ckpt, resumable(ckpt)
	}
	res, err := rcg.Minimize(ctx, obj, x0, s)
	if res == nil || err != nil && !errors.Is(err, context.Canceled) { // Canceled: the CPU-time cap
		return nil, err
	}
	tr.Final, tr.Iters, tr.Reason = res.F, res.Iters, res.Reason.String()
	tr.Time = (run.CPUTime() - obj.start).Seconds()
	tr.ConvergedBy = res.ConvergedBy.String()
	return tr, nil
}

// tracedModel is the model of one run whose checkpointed state (Stateful) also holds the run's trace so far, so that
// a resumed run goes on with its trace and its clock where the checkpoint left them.
type tracedModel struct {
	*nfa.Model
	tr    *Trace
	start time.Duration // run.CPUTime at the run's time zero
}

// State is the model's state followed by the trace (appendTrace).
func (w *tracedModel) State() []float64 {
	return appendTrace(w.Model.State(), w.tr)
}

// SetState restores what State saved and moves the run's time zero so that its clock goes on from the trace's last
// time.
func (w *tracedModel) SetState(s []float64) error {
	k := len(w.Model.State())
	if err := checkTrace(s, k); err != nil {
		return err
	}
	if err := w.Model.SetState(s[:k]); err != nil {
		return err
	}
	last := setTrace(w.tr, s[k:])
	w.start = run.CPUTime() - time.Duration(last*float64(time.Second))
	return nil
}

// nfaBatch names nfa.Batch for embedding: embedded as itself, its field would hide its method Batch.
type nfaBatch = nfa.Batch

// tracedBatch is the batch of the batched sweep whose checkpointed state (BatchStateful) also holds each run's
// trace so far, as tracedModel does for one run. Its traces follow the runs through Swap; the batch's clock is
// wall time, shared by its runs.
type tracedBatch struct {
	*nfaBatch
	trs   []*Trace  // by slot: the trace of the run in the slot
	start time.Time // the batch's time zero
}

func (w *tracedBatch) Swap(i, j int) error {
	if err := w.nfaBatch.Swap(i, j); err != nil {
		return err
	}
	w.trs[i], w.trs[j] = w.trs[j], w.trs[i]
	return nil
}

// State is the state of the run in slot i followed by its trace (appendTrace).
func (w *tracedBatch) State(i int) []float64 {
	return appendTrace(w.nfaBatch.State(i), w.trs[i])
}

// SetState restores what State saved for slot i, and moves the batch's time zero back so that its clock goes on
// from the latest time of the traces restored so far.
func (w *tracedBatch) SetState(i int, s []float64) error {
	k := len(w.nfaBatch.State(i))
	if err := checkTrace(s, k); err != nil {
		return err
	}
	if err := w.nfaBatch.SetState(i, s[:k]); err != nil {
		return err
	}
	last := setTrace(w.trs[i], s[k:])
	if t := time.Now().Add(-time.Duration(last * float64(time.Second))); t.Before(w.start) {
		w.start = t
	}
	return nil
}

// appendTrace appends the trace's times, F values and evaluation counts, then their number, to s.
func appendTrace(s []float64, tr *Trace) []float64 {
	s = append(s, tr.T...)
	s = append(s, tr.F...)
	for _, e := range tr.Evals {
		s = append(s, float64(e))
	}
	return append(s, float64(len(tr.T)))
}

// checkTrace returns an error unless s is k values of state followed by a trace as appendTrace writes it.
func checkTrace(s []float64, k int) error {
	if len(s) <= k {
		return fmt.Errorf("%w: run state of %d values, want the model's %d and a trace", rcg.ErrBadInput, len(s), k)
	}
	c := s[len(s)-1]
	n := int(c)
	if !(c >= 0 && c == math.Trunc(c) && c <= math.MaxInt32) || len(s) != k+3*n+1 {
		return fmt.Errorf("%w: run state of %d values with a trace of %v points, want %d values and the model's %d",
			rcg.ErrBadInput, len(s), c, k+3*n+1, k)
	}
	if !finite(s[k : len(s)-1]) {
		return fmt.Errorf("%w: a trace with values that are not finite", rcg.ErrBadInput)
	}
	return nil
}

// finite reports whether every value of v is finite.
func finite(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// setTrace restores into tr the trace that appendTrace wrote as tail (checked by checkTrace) and returns its last
// time (0 for an empty trace).
func setTrace(tr *Trace, tail []float64) float64 {
	n := len(tail) / 3
	tr.T, tr.F = slices.Clone(tail[:n]), slices.Clone(tail[n:2*n])
	tr.Evals = make([]int, n)
	for i, e := range tail[2*n : 3*n] {
		tr.Evals[i] = int(e)
	}
	if n == 0 {
		return 0
	}
	return tr.T[n-1]
}

// Sweep is the setting of SweepNFA: the model and data size, the methods and their budgets.
type Sweep struct {
	Dynamic bool // NSSM (nfa.SyntheticNSSM data) instead of NFA (nfa.SyntheticNFA)
	T       int  // data size
	Seeds   int  // initialisations per method
	// FirstSeed is the first initialisation's seed: the runs use seeds FirstSeed … FirstSeed+Seeds−1, so that the
	// seeds of one sweep can be split across processes (with FixedTarget, so that they share a target).
	FirstSeed int
	D, H      int         // state (source) dimension and hidden units of each MLP; 0 takes Fig. 9's 5 and 20
	Moments   nfa.Moments // Taylor or Gauss–Hermite
	// Eps is the convergence threshold: |ΔF| < Eps over 5 iterations; 0 takes the §3.5 rule 1e-5·T/80 (Fig. 10:
	// 1e-6).
	Eps     float64
	Methods []string      // RCG first: its runs set the others' caps
	RCGCap  time.Duration // CPU-time cap of each RCG run (0: none)
	// RCGMaxIter caps each RCG run at that many iterations (0: none): unlike RCGCap it gives a target that does
	// not depend on the machine's speed, while the others' budget still scales with it.
	RCGMaxIter int
	CapFactor  float64 // the others' cap, × RCG's median run time (0: none)
	// FollowRCG runs again, from the start and with the others' budget (CapFactor > 0) and no iteration cap, each RCG
	// run that missed the target (RCGTarget) within RCGCap and RCGMaxIter and took less time than that budget: the
	// runs are deterministic, so the rerun retraces the first run and goes on where the cap stopped it, or stops where
	// it stopped on its own, now a miss under the others' budget. The results go under FollowedRCG, the other runs'
	// traces shared with "RCG".
	FollowRCG bool
	// ARD and Hierarchical switch on the model's ARD and hierarchical priors, held fixed for the first HyperDelay
	// iterations (nfa.Config).
	ARD, Hierarchical bool
	HyperDelay        int
	// FixedTarget, when set, is RCG's target (RCGTarget) instead of its runs' median final F + Tol(): the level
	// that FollowRCG follows RCG's misses to, fixed in advance so that sweeps over parts of the seeds share it.
	FixedTarget *float64
	// Progress, when set, is called as each run ends, with its method (FollowedRCG for a rerun miss) and trace, so
	// that a sweep of hours can report as it goes. The batched sweep calls it for each run as its batch ends.
	Progress func(method string, tr *Trace)
	// Tick, when set with TickEvery > 0, is called during a run each time the run's clock passes another multiple of
	// TickEvery, with its trace so far (Final, Iters and Reason not yet set), so that a run of hours (Fig. 10's take
	// 48 minutes) shows how far it has come.
	Tick      func(method string, tr *Trace)
	TickEvery time.Duration
	// CheckpointDir, when set, keeps a checkpoint of each host run (the optimiser's and the model's state and the
	// trace so far) in a file of this directory every CheckpointEvery iterations (0: 100), named by the sweep's
	// settings, the method and the seed. The same sweep started again resumes each run from its file: a run that
	// was stopped goes on where its file left it, a finished one retraces at most CheckpointEvery iterations to the
	// same end (with their times measured again, so a run that its CPU-time cap ended may end a little earlier or
	// later). The batched sweep keeps one file per method for all its runs (MinimizeBatch's checkpoint with each
	// run's trace), every CheckpointEvery rounds of one iteration of each unfinished run.
	CheckpointDir   string
	CheckpointEvery int
}

// checkpoint returns the file of the run of method from seed under s.CheckpointDir ("" without one) and the
// iterations between saves.
func (s Sweep) checkpoint(method string, seed int) (string, int) {
	return s.checkpointFile(method, fmt.Sprintf("seed%d", seed))
}

// batchCheckpoint returns the file of the batched sweep's batch of method (the seeds s.FirstSeed …
// s.FirstSeed+s.Seeds−1) and the rounds between saves, as checkpoint does for one run.
func (s Sweep) batchCheckpoint(method string) (string, int) {
	return s.checkpointFile(method, fmt.Sprintf("batch-seeds%d-%d", s.FirstSeed, s.FirstSeed+s.Seeds-1))
}

// checkpointFile returns the file of method's runs (named by runs) under s.CheckpointDir and the saves' interval.
// The name carries a hash of the settings that shape the runs, so that another sweep in the same directory does not
// resume from it.
func (s Sweep) checkpointFile(method, runs string) (string, int) {
	if s.CheckpointDir == "" {
		return "", 0
	}
	every := s.CheckpointEvery
	if every == 0 {
		every = 100
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "%v %d %d %d %v %v %v %v %d %v %d %v", s.Dynamic, s.T, s.D, s.H, s.Moments, s.Tol(), s.ARD,
		s.Hierarchical, s.HyperDelay, s.RCGCap, s.RCGMaxIter, s.CapFactor)
	name := fmt.Sprintf("%s-T%d-%s-%s-%08x.ckpt", map[bool]string{false: "nfa", true: "nssm"}[s.Dynamic], s.T,
		strings.ReplaceAll(method, " ", "-"), runs, h.Sum32())
	return filepath.Join(s.CheckpointDir, name), every
}

func (s Sweep) progress(method string, tr *Trace) {
	if s.Progress != nil {
		s.Progress(method, tr)
	}
}

// ticker returns the function a run calls with its trace after each iteration: it calls s.Tick when the trace's
// last time has passed the next multiple of s.TickEvery, once however many multiples one iteration passes. It
// returns nil when s has no Tick.
func (s Sweep) ticker(method string) func(*Trace) {
	if s.Tick == nil || s.TickEvery <= 0 {
		return nil
	}
	every := s.TickEvery.Seconds()
	next := every
	return func(tr *Trace) {
		n := len(tr.T)
		if n == 0 || tr.T[n-1] < next {
			return
		}
		s.Tick(method, tr)
		next = (math.Floor(tr.T[n-1]/every) + 1) * every
	}
}

// FollowedRCG is the key of SweepNFA's result under which Sweep.FollowRCG puts RCG's runs, the capped misses rerun.
const FollowedRCG = "RCG followed"

// Target returns the time-to-target summaries' target for RCG's runs: their median final F + s.Tol().
func (s Sweep) Target(rcgRuns []*Trace) float64 {
	var fin []float64
	for _, tr := range rcgRuns {
		fin = append(fin, tr.Final)
	}
	return Median(fin) + s.Tol()
}

// RCGTarget returns the level RCG's runs and the others' are timed to: s.FixedTarget when set, else
// s.Target(rcgRuns).
func (s Sweep) RCGTarget(rcgRuns []*Trace) float64 {
	if s.FixedTarget != nil {
		return *s.FixedTarget
	}
	return s.Target(rcgRuns)
}

// check returns an error naming the sweep's settings when one is out of range; batched adds the batched sweep's
// limits (no following of RCG's misses).
func (s Sweep) check(batched bool) error {
	usable := func(v float64) bool { return v >= 0 && !math.IsInf(v, 1) } // finite and ≥ 0; NaN fails
	if s.Seeds < 1 || s.FirstSeed < 0 || !usable(s.Eps) || !usable(s.CapFactor) || s.RCGCap < 0 ||
		s.RCGMaxIter < 0 || len(s.Methods) == 0 || s.Methods[0] != "RCG" {
		return fmt.Errorf("%w: sweep with %d seeds from %d, ε = %v, cap factor %v, RCG cap %v and %d iterations, "+
			"methods %v (want seeds ≥ 1 from ≥ 0, finite ε ≥ 0, caps ≥ 0, RCG first)", rcg.ErrBadInput, s.Seeds,
			s.FirstSeed, s.Eps, s.CapFactor, s.RCGCap, s.RCGMaxIter, s.Methods)
	}
	if s.D < 0 || s.H < 0 {
		return fmt.Errorf("%w: %d sources and %d hidden units (want ≥ 0; 0 takes 5 and 20)", rcg.ErrBadInput, s.D, s.H)
	}
	if s.CheckpointEvery < 0 {
		return fmt.Errorf("%w: checkpoints every %d iterations in %q (want ≥ 0)", rcg.ErrBadInput, s.CheckpointEvery,
			s.CheckpointDir)
	}
	if s.TickEvery < 0 {
		return fmt.Errorf("%w: progress every %v (want ≥ 0; 0: none)", rcg.ErrBadInput, s.TickEvery)
	}
	if s.FixedTarget != nil && (math.IsNaN(*s.FixedTarget) || math.IsInf(*s.FixedTarget, 0)) {
		return fmt.Errorf("%w: fixed target %v (want a finite F)", rcg.ErrBadInput, *s.FixedTarget)
	}
	if batched && s.FollowRCG {
		return fmt.Errorf("%w: the batched sweep does not follow RCG's misses", rcg.ErrBadInput)
	}
	if s.FollowRCG && (s.CapFactor == 0 || s.RCGCap == 0 && s.RCGMaxIter == 0) {
		return fmt.Errorf("%w: following RCG's misses needs an RCG cap and the others' (cap factor %v, RCG cap %v "+
			"and %d iterations)", rcg.ErrBadInput, s.CapFactor, s.RCGCap, s.RCGMaxIter)
	}
	return nil
}

// Tol returns the convergence threshold of s.
func (s Sweep) Tol() float64 {
	if s.Eps > 0 {
		return s.Eps
	}
	return 1e-5 * float64(s.T) / 80
}

// setup checks the sweep (batched or not), makes its checkpoint folder and returns the synthetic data (p = 21) and
// the model configuration (D, H default 5 and 20) every run of the sweep uses.
func (s Sweep) setup(batched bool) ([]float64, nfa.Config, error) {
	d, h := s.D, s.H
	if d == 0 {
		d = 5
	}
	if h == 0 {
		h = 20
	}
	if err := s.check(batched); err != nil {
		return nil, nfa.Config{}, err
	}
	if s.CheckpointDir != "" {
		if err := os.MkdirAll(s.CheckpointDir, 0o755); err != nil {
			return nil, nfa.Config{}, err
		}
	}
	X := nfa.SyntheticNFA(s.T, 1)
	if s.Dynamic {
		X = nfa.SyntheticNSSM(s.T, 1)
	}
	return X, nfa.Config{Dynamic: s.Dynamic, D: d, H: h, Moments: s.Moments, ARD: s.ARD, Hierarchical: s.Hierarchical,
		HyperDelay: s.HyperDelay}, nil
}

// SweepNFA runs s.Methods over s.Seeds initialisations on one synthetic data set of size s.T with p = 21 observed
// dimensions and the |ΔF| < s.Tol() rule over 5 iterations. RCG runs first, capped at s.RCGCap and s.RCGMaxIter;
// the other methods are capped at s.CapFactor × RCG's median run time (the §6.7 budget form), so a method that does
// not converge within it has a lower-bound time. It returns the traces per method.
func SweepNFA(s Sweep) (map[string][]*Trace, error) {
	X, cfg, err := s.setup(false)
	if err != nil {
		return nil, err
	}
	m, err := nfa.New(X, s.T, 21, cfg)
	if err != nil {
		return nil, err
	}
	out := map[string][]*Trace{}
	var rcgTimes []float64
	for _, meth := range s.Methods {
		limit, maxIter := s.RCGCap, s.RCGMaxIter
		if meth != "RCG" {
			maxIter = 0
			if len(rcgTimes) > 0 {
				limit = time.Duration(s.CapFactor * Median(rcgTimes) * float64(time.Second))
			}
		}
		for i := range s.Seeds {
			ck, every := s.checkpoint(meth, s.FirstSeed+i)
			tr, err := runNFA(m, uint64(s.FirstSeed+i), meth, s.Tol(), 5, limit, maxIter, s.ticker(meth), ck, every)
			if err != nil {
				return nil, err
			}
			out[meth] = append(out[meth], tr)
			s.progress(meth, tr)
			if meth == "RCG" {
				rcgTimes = append(rcgTimes, tr.Time)
			}
		}
		if meth == "RCG" && s.FollowRCG {
			target := s.RCGTarget(out[meth])
			limit := time.Duration(s.CapFactor * Median(rcgTimes) * float64(time.Second))
			for _, tr := range out[meth] {
				if _, _, ok := tr.TimeOrBound(target); !ok && limit.Seconds() > tr.Time {
					ck, every := s.checkpoint(FollowedRCG, tr.Seed)
					tr, err = runNFA(m, uint64(tr.Seed), meth, s.Tol(), 5, limit, 0, s.ticker(FollowedRCG), ck, every)
					if err != nil {
						return nil, err
					}
					s.progress(FollowedRCG, tr)
				}
				out[FollowedRCG] = append(out[FollowedRCG], tr)
			}
		}
	}
	return out, nil
}

// SweepNFABatched is SweepNFA with each method's initialisations run as one nfa.Batch on be (MinimizeBatch; NFA or the
// NSSM, Gauss–Hermite moments, any priors, methods RCG, RG, CG, GD and Old). The runs of a batch advance together, so a
// trace's times are the batch's wall-clock seconds at each of the run's iterations: when that run's F was available, on
// a clock all the batch's runs share. RCG's runs are capped at s.RCGMaxIter iterations (0: MinimizeBatch's 10000), the
// others at s.CapFactor × RCG's median iterations (0: the same default); RCGCap and FollowRCG are not used.
func SweepNFABatched(s Sweep, be backend.Backend) (map[string][]*Trace, error) {
	X, cfg, err := s.setup(true)
	if err != nil {
		return nil, err
	}
	out := map[string][]*Trace{}
	maxIter := s.RCGMaxIter
	for _, name := range s.Methods {
		meth, err := methodByName(name)
		if err != nil {
			return nil, err
		}
		ms, xs := make([]*nfa.Model, s.Seeds), make([][]float64, s.Seeds)
		for i := range ms {
			if ms[i], err = nfa.New(X, s.T, 21, cfg); err != nil {
				return nil, err
			}
			if xs[i], err = ms[i].Init(uint64(s.FirstSeed + i)); err != nil {
				return nil, err
			}
		}
		bt, err := nfa.NewBatch(be, ms)
		if err != nil {
			return nil, err
		}
		trs, ticks := make([]*Trace, s.Seeds), make([]func(*Trace), s.Seeds)
		for i := range trs {
			trs[i] = &Trace{Method: name, Seed: s.FirstSeed + i}
			ticks[i] = s.ticker(name)
		}
		obj := &tracedBatch{nfaBatch: bt, trs: slices.Clone(trs), start: time.Now()}
		ctl := run.Control{MaxIter: maxIter, Recorder: run.Func(func(r run.Record) {
			tr, i := trs[r.Run], r.Run
			tr.T = append(tr.T, time.Since(obj.start).Seconds())
			tr.F = append(tr.F, r.Extra["F"])
			tr.Evals = append(tr.Evals, int(r.Extra["f_evals"]+r.Extra["g_evals"]))
			if ticks[i] != nil {
				ticks[i](tr)
			}
		})}
		ctl.CheckpointPath, ctl.CheckpointEvery = s.batchCheckpoint(name)
		ctl.Resume = ctl.CheckpointPath != "" && resumable(ctl.CheckpointPath)
		res, err := rcg.MinimizeBatch(context.Background(), obj, xs, rcg.Settings{Method: meth, Tol: s.Tol(),
			Patience: 5, PowellBeale: 0.2, Control: ctl})
		bt.Close()
		if err != nil {
			return nil, err
		}
		var its []float64
		for i, r := range res {
			tr := trs[i]
			tr.Final, tr.Iters, tr.Reason, tr.ConvergedBy = r.F, r.Iters, r.Reason.String(), r.ConvergedBy.String()
			if len(tr.T) > 0 {
				tr.Time = tr.T[len(tr.T)-1]
			}
			its = append(its, float64(r.Iters))
			s.progress(name, tr)
		}
		out[name] = trs
		if name == "RCG" {
			maxIter = int(math.Ceil(s.CapFactor * Median(its)))
		}
	}
	return out, nil
}

// resumable reports whether a run checkpointed to path continues from it: when the file exists (or cannot be told
// not to; reading it then gives the error). A sweep started again goes on from its files, a new one starts afresh.
func resumable(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
