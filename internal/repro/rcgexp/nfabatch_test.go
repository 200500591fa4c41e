package rcgexp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/internal/numtest"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/models/mog"
	"github.com/geovb/geovb/models/nfa"
	"github.com/geovb/geovb/tensor"
)

// nfaBatchRuns returns three NFA or NSSM models (T = 60, p = 21, d = 3, H = 8, Gauss–Hermite), runs 0 and 1 on one
// synthetic data set and run 2 on another, each Init'ed from its own seed, with their starting points.
func nfaBatchRuns(t *testing.T, dyn bool, seedOffset uint64) ([]*nfa.Model, [][]float64) {
	t.Helper()
	const T = 60
	var ms []*nfa.Model
	var xs [][]float64
	for i, ds := range []uint64{1, 1, 2} {
		X := nfa.SyntheticNFA(T, ds)
		if dyn {
			X = nfa.SyntheticNSSM(T, ds)
		}
		m, err := nfa.New(X, T, 21, nfa.Config{Dynamic: dyn, D: 3, H: 8, Moments: nfa.GaussHermite})
		if err != nil {
			t.Fatal(err)
		}
		x, err := m.Init(uint64(i+1) + seedOffset)
		if err != nil {
			t.Fatal(err)
		}
		ms, xs = append(ms, m), append(xs, x)
	}
	return ms, xs
}

// TestMinimizeBatchNFA: MinimizeBatch on nfa.Batch (RCG with the between-step updates as BatchUpdater) follows
// Minimize on each run's Model, for NFA (40 iterations) and the NSSM (5): the same iterations, stop reasons and
// evaluation counts, and F at every iteration within 1e-9 relative. The NSSM's runs are compared over 5 iterations
// only: from the sixth on, its run 2 parts from the host's by amplified round-off although each step agrees with the
// host's (TestBatchFollowsHostPath measures both). The same for Old, whose multipliers and trials the batch keeps per
// run.
func TestMinimizeBatchNFA(t *testing.T) {
	for _, m := range []rcg.Method{rcg.RCG, rcg.Old} {
		for _, dyn := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/dynamic=%v", m, dyn), func(t *testing.T) { testMinimizeBatchNFA(t, m, dyn) })
		}
	}
}

func testMinimizeBatchNFA(t *testing.T, m rcg.Method, dyn bool) {
	be := testbackend.Open(t)
	s := rcg.Settings{Method: m, Tol: 1e-5 * 60 / 80, Patience: 5, PowellBeale: 0.2}
	iters := 40
	if dyn {
		iters = 5
	}
	hostMs, xs := nfaBatchRuns(t, dyn, 0)
	hostF := make([][]float64, len(hostMs))
	var host []*rcg.Result
	for i, m := range hostMs {
		res, err := rcg.Minimize(context.Background(), m, xs[i], withControl(s, run.Control{MaxIter: iters,
			Recorder: run.Func(func(r run.Record) { hostF[i] = append(hostF[i], r.Extra["F"]) })}))
		if err != nil {
			t.Fatal(err)
		}
		host = append(host, res)
	}
	ms, xs := nfaBatchRuns(t, dyn, 0)
	bt, err := nfa.NewBatch(be, ms)
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	batchF := make([][]float64, len(ms))
	got, err := rcg.MinimizeBatch(context.Background(), bt, xs, withControl(s, run.Control{MaxIter: iters,
		Recorder: run.Func(func(r run.Record) { batchF[r.Run] = append(batchF[r.Run], r.Extra["F"]) })}))
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i, g := range got {
		h := host[i]
		if g.Iters != h.Iters || g.Reason != h.Reason || g.ConvergedBy != h.ConvergedBy || g.FEvals != h.FEvals ||
			g.GEvals != h.GEvals || len(batchF[i]) != len(hostF[i]) {
			t.Errorf("run %d: batch %v after %d iterations, %d/%d evaluations; host %v after %d, %d/%d", i, g.Reason,
				g.Iters, g.FEvals, g.GEvals, h.Reason, h.Iters, h.FEvals, h.GEvals)
			continue
		}
		for k, f := range batchF[i] {
			worst = math.Max(worst, math.Abs(f-hostF[i][k])/math.Abs(hostF[i][k]))
		}
		if a, b := bt.Model(i).FixedPointRejected(), hostMs[i].FixedPointRejected(); a != b {
			t.Errorf("run %d: %d rejected updates, host %d", i, a, b)
		}
		t.Logf("run %d: %v after %d iterations (%d F evaluations), F %.3f → %.6f", i, g.Reason, g.Iters, g.FEvals,
			batchF[i][0], g.F)
	}
	t.Logf("largest relative difference of F at an iteration: %.2g", worst)
	if worst > 1e-9 {
		t.Errorf("F differs from the host run's by %.3g", worst)
	}
}

// TestMinimizeBatchNFACheckpointResume: with a BatchStateful objective the checkpoint holds each run's state, so a
// run resumed from it, on models Init'ed from other seeds, ends bit for bit where the uninterrupted run does (the
// NSSM, whose state includes the chains), with RCG and with Old (whose multipliers the checkpoint holds).
func TestMinimizeBatchNFACheckpointResume(t *testing.T) {
	be := testbackend.Open(t)
	for _, m := range []rcg.Method{rcg.RCG, rcg.Old} {
		s := rcg.Settings{Method: m, Tol: 1e-5 * 60 / 80, Patience: 5, PowellBeale: 0.2}
		minimize := func(seedOffset uint64, s rcg.Settings, ctl run.Control) []rcg.Result {
			t.Helper()
			ms, xs := nfaBatchRuns(t, true, seedOffset)
			bt, err := nfa.NewBatch(be, ms)
			if err != nil {
				t.Fatal(err)
			}
			defer bt.Close()
			res, err := rcg.MinimizeBatch(context.Background(), bt, xs, withControl(s, ctl))
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		full := minimize(0, s, run.Control{MaxIter: 30})
		path := filepath.Join(t.TempDir(), "nfa.ck")
		minimize(0, s, run.Control{MaxIter: 12, CheckpointEvery: 4, CheckpointPath: path})
		got := minimize(7, s, run.Control{MaxIter: 30, CheckpointPath: path, Resume: true})
		for i, g := range got {
			w := full[i]
			if g.Iters != w.Iters || g.Reason != w.Reason || g.ConvergedBy != w.ConvergedBy || g.F != w.F ||
				!slices.Equal(g.X, w.X) {
				t.Errorf("%v run %d: resumed %v after %d iterations, F %.15g; uninterrupted %v after %d, F %.15g", m, i,
					g.Reason, g.Iters, g.F, w.Reason, w.Iters, w.F)
			}
		}
	}
}

// TestSweepNFABatched: the batched sweep's RCG runs retrace the host sweep's (seeds 0…2, T = 60, d = 3, H = 8, 20
// iterations): the same iterations and evaluation counts, and F at every iteration within 1e-6 relative. Seeds 1
// and 2 agree to 2.2e-14 (logged per seed); seed 0's path amplifies the round-off difference to 9.8e-8, with the
// same evaluations.
// Its CG runs are capped at CapFactor × RCG's median iterations, and times are non-decreasing batch wall-clock
// seconds.
func TestSweepNFABatched(t *testing.T) {
	be := testbackend.Open(t)
	sw := Sweep{T: 60, Seeds: 3, D: 3, H: 8, Moments: nfa.GaussHermite, Methods: []string{"RCG", "CG"},
		RCGMaxIter: 20, CapFactor: 1.5}
	var reported []*Trace
	sw.Progress = func(m string, tr *Trace) {
		if tr.Method != m {
			t.Errorf("progress of a %s run reported as %s", tr.Method, m)
		}
		reported = append(reported, tr)
	}
	got, err := SweepNFABatched(sw, be)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(slices.Clone(got["RCG"]), got["CG"]...); !slices.Equal(reported, want) {
		t.Errorf("progress reported %d runs, want the 3 RCG and 3 CG runs in order", len(reported))
	}
	sw.Progress = nil
	host := sw
	host.Methods = []string{"RCG"}
	want, err := SweepNFA(host)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	var its []float64
	for i, tr := range got["RCG"] {
		w := want["RCG"][i]
		if tr.Seed != w.Seed || tr.Iters != w.Iters || len(tr.F) != len(w.F) || !slices.Equal(tr.Evals, w.Evals) {
			t.Fatalf("seed %d: batched %d iterations, host seed %d %d iterations", tr.Seed, tr.Iters, w.Seed, w.Iters)
		}
		seed := 0.0
		for k, f := range tr.F {
			seed = math.Max(seed, math.Abs(f-w.F[k])/math.Abs(w.F[k]))
		}
		t.Logf("seed %d: largest relative difference of F at an iteration %.2g", tr.Seed, seed)
		worst = math.Max(worst, seed)
		if !slices.IsSorted(tr.T) || tr.Time != tr.T[len(tr.T)-1] {
			t.Errorf("seed %d: times %v, run time %v", tr.Seed, tr.T, tr.Time)
		}
		its = append(its, float64(tr.Iters))
	}
	t.Logf("largest relative difference of F at an iteration: %.2g", worst)
	if worst > 1e-6 {
		t.Errorf("RCG's F differs from the host sweep's by %.3g", worst)
	}
	capIters := int(math.Ceil(1.5 * Median(its)))
	for _, tr := range got["CG"] {
		if tr.Iters > capIters || tr.Iters == capIters && tr.Reason != run.MaxIter.String() {
			t.Errorf("CG seed %d: %d iterations (%s), cap %d", tr.Seed, tr.Iters, tr.Reason, capIters)
		}
	}
	for name, bad := range map[string]Sweep{
		"follow": {T: 60, Seeds: 2, Moments: nfa.GaussHermite, Methods: []string{"RCG", "CG"}, RCGMaxIter: 5,
			CapFactor: 2, FollowRCG: true},
		"Taylor": {T: 60, Seeds: 2, Moments: nfa.Taylor, Methods: []string{"RCG"}},
	} {
		if _, err := SweepNFABatched(bad, be); !errors.Is(err, rcg.ErrBadInput) && !errors.Is(err, nfa.ErrBadInput) {
			t.Errorf("%s: error %v, want a bad-input error", name, err)
		}
	}
	// Old runs batched too, capped like the other comparators (TestMinimizeBatchNFA checks its steps).
	old, err := SweepNFABatched(Sweep{T: 60, Seeds: 2, Moments: nfa.GaussHermite, Methods: []string{"RCG", "Old"},
		RCGMaxIter: 2, CapFactor: 2}, be)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range old["Old"] {
		if tr.Iters != 4 || tr.Reason != run.MaxIter.String() || len(tr.F) != 4 || !(tr.F[3] < tr.F[0]) {
			t.Errorf("Old seed %d: %d iterations (%s), F %v; want 4 (2 × RCG's 2), decreasing", tr.Seed, tr.Iters,
				tr.Reason, tr.F)
		}
	}
}

// TestSweepNFABatchedFirstSeed: the batched sweep takes Sweep.FirstSeed as the host sweep does. From FirstSeed 2 its
// runs are seeds 2 and 3 and retrace the host sweep's (T = 30, d = 3, H = 8, 5 iterations; F within 1e-9 relative
// at every iteration, the bound of TestSweepNFABatched's round-off over a shorter path).
func TestSweepNFABatchedFirstSeed(t *testing.T) {
	be := testbackend.Open(t)
	sw := Sweep{T: 30, Seeds: 2, FirstSeed: 2, D: 3, H: 8, Moments: nfa.GaussHermite, Methods: []string{"RCG"},
		RCGMaxIter: 5}
	got, err := SweepNFABatched(sw, be)
	if err != nil {
		t.Fatal(err)
	}
	want, err := SweepNFA(sw)
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range got["RCG"] {
		w := want["RCG"][i]
		if tr.Seed != 2+i || w.Seed != 2+i || len(tr.F) != len(w.F) {
			t.Fatalf("run %d: batched seed %d (%d iterations), host seed %d (%d), want seed %d", i, tr.Seed,
				len(tr.F), w.Seed, len(w.F), 2+i)
		}
		for k, f := range tr.F {
			if d := math.Abs(f-w.F[k]) / math.Abs(w.F[k]); d > 1e-9 {
				t.Errorf("seed %d, iteration %d: batched F %v, host %v (relative %.2g)", tr.Seed, k, f, w.F[k], d)
			}
		}
	}
}

// TestSweepNFABatchedCheckpointResume: with CheckpointDir the batched sweep keeps one file per method for all its
// runs (every 5 rounds here) and the same sweep started again resumes from them, as TestSweepCheckpointResume checks
// for the host sweep: RCG and Old (whose multipliers the file holds) end bit for bit as without checkpoints, in F,
// evaluation counts and iterations, from the files of a finished sweep and from RCG's file put back to round 10; a
// resumed run keeps the times its file held and measures the rest again. Runs finish at different rounds, so the
// traces must follow the runs through the batch's slot swaps.
func TestSweepNFABatchedCheckpointResume(t *testing.T) {
	be := testbackend.Open(t)
	base := Sweep{T: 30, Seeds: 3, D: 3, H: 8, Moments: nfa.GaussHermite, Eps: 0.3,
		Methods: []string{"RCG", "Old"}, RCGMaxIter: 80, CapFactor: 1}
	ref, err := SweepNFABatched(base, be)
	if err != nil {
		t.Fatal(err)
	}
	iters := map[int]bool{}
	for _, tr := range ref["RCG"] {
		iters[tr.Iters] = true
		t.Logf("RCG seed %d: %d iterations (%s), F %.6f", tr.Seed, tr.Iters, tr.Reason, tr.Final)
	}
	if len(iters) < 2 {
		t.Errorf("every RCG run took the same number of iterations: no slot swaps to follow")
	}
	s := base
	s.CheckpointDir, s.CheckpointEvery = filepath.Join(t.TempDir(), "ck"), 5
	file, _ := s.batchCheckpoint("RCG")
	var saved []byte
	at := 0 // the round the saved file holds
	s.TickEvery = time.Nanosecond
	s.Tick = func(m string, tr *Trace) {
		// After round L (a tick comes before that round's checkpoint) the file holds round 5⌊(L−1)/5⌋.
		if L := len(tr.T); m == "RCG" && tr.Seed == 1 && L >= 12 && saved == nil {
			if saved, err = os.ReadFile(file); err != nil {
				t.Fatal(err)
			}
			at = 5 * ((L - 1) / 5)
		}
	}
	first, err := SweepNFABatched(s, be)
	if err != nil {
		t.Fatal(err)
	}
	if saved == nil {
		t.Fatal("no checkpoint of the RCG batch after 12 rounds")
	}
	s.Tick = nil
	same := func(name string, got map[string][]*Trace) {
		t.Helper()
		for _, m := range base.Methods {
			for i, w := range ref[m] {
				g := got[m][i]
				if g.Seed != w.Seed || g.Iters != w.Iters || g.Reason != w.Reason ||
					math.Float64bits(g.Final) != math.Float64bits(w.Final) || !slices.Equal(g.F, w.F) ||
					!slices.Equal(g.Evals, w.Evals) || len(g.T) != len(w.T) {
					t.Errorf("%s: %s seed %d: %d iterations (%s), F %v; without checkpoints %d (%s), %v", name, m,
						w.Seed, g.Iters, g.Reason, g.F, w.Iters, w.Reason, w.F)
				}
			}
		}
	}
	same("with checkpoints", first)
	again, err := SweepNFABatched(s, be)
	if err != nil {
		t.Fatal(err)
	}
	same("again from the files", again)
	for i, tr := range again["RCG"] {
		k := 5 * ((tr.Iters - 1) / 5) // the last round its file holds before its end
		if !slices.Equal(tr.T[:k], first["RCG"][i].T[:k]) {
			t.Errorf("RCG seed %d resumed from round %d measured its first %d times again", tr.Seed, k, k)
		}
	}
	if err := os.WriteFile(file, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	resumed, err := SweepNFABatched(s, be)
	if err != nil {
		t.Fatal(err)
	}
	same("RCG from round 10", resumed)
	if g, w := resumed["RCG"][1].T, first["RCG"][1].T; !slices.Equal(g[:at], w[:at]) || slices.Equal(g[at:], w[at:]) {
		t.Errorf("RCG seed 1: times %v, first run %v: want the first %d restored, the rest measured again", g, w, at)
	}
	bad := s
	bad.CheckpointEvery = -1
	if _, err := SweepNFABatched(bad, be); !errors.Is(err, rcg.ErrBadInput) {
		t.Errorf("checkpoints every −1 rounds: %v, want ErrBadInput", err)
	}
}

// updaterOnly hides a batch's BatchStateful methods: a BatchUpdater whose state checkpoints cannot hold.
type updaterOnly struct {
	rcg.BatchObjective
	up rcg.BatchUpdater
}

func (u updaterOnly) Update(x *tensor.Tensor) error { return u.up.Update(x) }

// TestMinimizeBatchUpdaterNeedsState: MinimizeBatch refuses to checkpoint a BatchUpdater that is not BatchStateful
// (its state would be lost), and runs it without checkpoints.
func TestMinimizeBatchUpdaterNeedsState(t *testing.T) {
	be := testbackend.Open(t)
	ms, xs := nfaBatchRuns(t, false, 0)
	bt, err := nfa.NewBatch(be, ms)
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	obj := updaterOnly{bt, bt}
	s := rcg.Settings{Tol: 1e-6, Patience: 5}
	path := filepath.Join(t.TempDir(), "x.ck")
	ctl := run.Control{MaxIter: 3, CheckpointEvery: 1, CheckpointPath: path}
	if _, err := rcg.MinimizeBatch(context.Background(), obj, xs, withControl(s, ctl)); !errors.Is(err, run.ErrConfig) {
		t.Errorf("checkpoints without the state: error %v, want run.ErrConfig", err)
	}
	if _, err := rcg.MinimizeBatch(context.Background(), obj, xs, withControl(s, run.Control{MaxIter: 3})); err != nil {
		t.Errorf("without checkpoints: %v", err)
	}
}

// TestBatchFollowsHostPath checks the batch at the states the host optimiser reaches, not only at random ones: for
// the NSSM's run 2 of nfaBatchRuns, after k = 1…6 host RCG iterations, one Update and Grad of a one-run batch loaded
// with the host's means and state agree with the host model's (state, F, gradient and natural gradient to 1e-10
// relative). It also logs, without asserting on it, how far 40 iterations of the batched and the host runs part:
// their paths amplify round-off (TestMinimizeBatchNFA compares the NSSM over 5 iterations for this reason).
func TestBatchFollowsHostPath(t *testing.T) {
	be := testbackend.Open(t)
	s := rcg.Settings{Tol: 1e-5 * 60 / 80, Patience: 5, PowellBeale: 0.2}
	worst := 0.0
	for k := 1; k <= 6; k++ {
		ms, xs := nfaBatchRuns(t, true, 0)
		m := ms[2]
		res, err := rcg.Minimize(context.Background(), m, xs[2], withControl(s, run.Control{MaxIter: k}))
		if err != nil {
			t.Fatal(err)
		}
		bs, _ := nfaBatchRuns(t, true, 0)
		bt, err := nfa.NewBatch(be, bs[2:])
		if err != nil {
			t.Fatal(err)
		}
		if err := bt.SetState(0, m.State()); err != nil {
			t.Fatal(err)
		}
		x := testbackend.UploadRows(t, be, [][]float64{res.X}, len(res.X))
		g := testbackend.UploadRows(t, be, [][]float64{res.X}, len(res.X))
		gt := testbackend.UploadRows(t, be, [][]float64{res.X}, len(res.X))
		if err := bt.Update(x); err != nil {
			t.Fatal(err)
		}
		if err := m.Update(res.X); err != nil {
			t.Fatal(err)
		}
		f := []float64{0}
		if err := bt.Grad(f, g, gt, x); err != nil {
			t.Fatal(err)
		}
		gh, nat := make([]float64, len(res.X)), make([]float64, len(res.X))
		F := m.Grad(gh, res.X)
		m.NatGrad(nat, gh, res.X)
		e := max(numtest.MaxRel(bt.Model(0).State(), m.State(), 0), math.Abs(f[0]-F)/math.Abs(F),
			numtest.MaxRel(testbackend.DownloadRows(t, be, g)[0], gh, 0),
			numtest.MaxRel(testbackend.DownloadRows(t, be, gt)[0], nat, 0))
		worst = max(worst, e)
		bt.Close()
	}
	t.Logf("one Update and Grad from the host's state after 1–6 iterations: largest relative difference %.2g", worst)
	if worst > 1e-10 {
		t.Errorf("the batch differs from the host model at the host's states by %.3g", worst)
	}
	hostMs, xs := nfaBatchRuns(t, true, 0)
	var hostF, batchF []float64
	if _, err := rcg.Minimize(context.Background(), hostMs[2], xs[2], withControl(s, run.Control{MaxIter: 40,
		Recorder: run.Func(func(r run.Record) { hostF = append(hostF, r.Extra["F"]) })})); err != nil {
		t.Fatal(err)
	}
	ms, xs := nfaBatchRuns(t, true, 0)
	bt, err := nfa.NewBatch(be, ms[2:])
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	if _, err := rcg.MinimizeBatch(context.Background(), bt, xs[2:], withControl(s, run.Control{MaxIter: 40,
		Recorder: run.Func(func(r run.Record) { batchF = append(batchF, r.Extra["F"]) })})); err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{4, 5, 6, 39} {
		if k < len(hostF) && k < len(batchF) {
			t.Logf("after iteration %d: F relative difference %.2g", k+1, math.Abs(batchF[k]-hostF[k])/math.Abs(hostF[k]))
		}
	}
}

// countMoG and countNFA count the runs their Value calls evaluate. (mogBatch, as nfaBatch, names the embedded
// field apart from the method Batch.)
type mogBatch = mog.Batch

type countMoG struct {
	*mogBatch
	runs int
}

func (c *countMoG) Value(f []float64, x *tensor.Tensor) error {
	c.runs += x.Shape().Batch
	return c.mogBatch.Value(f, x)
}

type countNFA struct {
	*nfaBatch
	runs int
}

func (c *countNFA) Value(f []float64, x *tensor.Tensor) error {
	c.runs += x.Shape().Batch
	return c.nfaBatch.Value(f, x)
}

// Each round of MinimizeBatch's line search evaluates only the runs still searching: over a whole minimisation the
// objective's Value calls cover exactly as many runs as the results count F evaluations, for the mixture (six runs,
// RCG and the unit search with its reverts) and for NFA and the NSSM (three runs each, with the updates between
// steps), where runs' searches end after different numbers of rounds.
func TestMinimizeBatchEvaluatesSearchingRuns(t *testing.T) {
	be := testbackend.Open(t)
	check := func(name string, got []rcg.Result, runs int) {
		t.Helper()
		fevals := 0
		for _, r := range got {
			fevals += r.FEvals
		}
		if runs != fevals {
			t.Errorf("%s: Value evaluated %d runs, the searches asked for %d", name, runs, fevals)
		}
	}
	for _, s := range []rcg.Settings{{Tol: 1e-9 * 200, RestartEvery: rcg.SqrtN}, {Tol: 1e-9 * 200, Search: rcg.Unit}} {
		ms, xs := batchRuns(t, 200, 4)
		bt, err := mog.NewBatch(be, ms)
		if err != nil {
			t.Fatal(err)
		}
		c := &countMoG{mogBatch: bt}
		got, err := rcg.MinimizeBatch(context.Background(), c, xs, withControl(s, run.Control{MaxIter: 60}))
		bt.Close()
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("MoG search %d", s.Search), got, c.runs)
	}
	for _, dyn := range []bool{false, true} {
		ms, xs := nfaBatchRuns(t, dyn, 0)
		bt, err := nfa.NewBatch(be, ms)
		if err != nil {
			t.Fatal(err)
		}
		c := &countNFA{nfaBatch: bt}
		got, err := rcg.MinimizeBatch(context.Background(), c, xs, rcg.Settings{Tol: 1e-6, PowellBeale: 0.2,
			Control: run.Control{MaxIter: 15}})
		bt.Close()
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("dynamic=%v", dyn), got, c.runs)
	}
}
