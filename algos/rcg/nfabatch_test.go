package rcg

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/internal/testbackend"
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
// evaluation counts, and F at every iteration within 1e-9 relative (measured 1.1e-12 and 4.1e-13). The NSSM's runs
// are compared over 5 iterations only: in run 2 a round-off difference of 2.6e-13 after the fifth iteration becomes
// 2e-8 in the sixth and 0.14 by the fortieth, with the same evaluation counts, although one Update from the host's
// state at each of iterations 3–6 agrees with the host's to 1.2e-13 (and TestBatchMatchesModel checks single
// evaluations and updates): the path itself amplifies round-off there, as it would between any two summation
// orders.
func TestMinimizeBatchNFA(t *testing.T) {
	for _, dyn := range []bool{false, true} {
		t.Run(fmt.Sprintf("dynamic=%v", dyn), func(t *testing.T) { testMinimizeBatchNFA(t, dyn) })
	}
}

func testMinimizeBatchNFA(t *testing.T, dyn bool) {
	be := testbackend.Open(t)
	s := Settings{Tol: 1e-5 * 60 / 80, Patience: 5, PowellBeale: 0.2}
	iters := 40
	if dyn {
		iters = 5
	}
	hostMs, xs := nfaBatchRuns(t, dyn, 0)
	hostF := make([][]float64, len(hostMs))
	var host []*Result
	for i, m := range hostMs {
		res, err := Minimize(m, xs[i], s, run.Control{MaxIter: iters,
			Recorder: run.Func(func(r run.Record) { hostF[i] = append(hostF[i], r.Extra["F"]) })})
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
	got, err := MinimizeBatch(bt, xs, s, BatchControl{MaxIter: iters,
		Record: func(i int, r run.Record) { batchF[i] = append(batchF[i], r.Extra["F"]) }})
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i, g := range got {
		h := host[i]
		if g.Iters != h.Iters || g.Reason != h.Reason || g.FEvals != h.FEvals || g.GEvals != h.GEvals ||
			len(batchF[i]) != len(hostF[i]) {
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
		t.Logf("run %d: %v after %d iterations, F %.3f → %.6f", i, g.Reason, g.Iters, batchF[i][0], g.F)
	}
	t.Logf("largest relative difference of F at an iteration: %.2g", worst)
	if worst > 1e-9 {
		t.Errorf("F differs from the host run's by %.3g", worst)
	}
}

// TestMinimizeBatchNFACheckpointResume: with a BatchStateful objective the checkpoint holds each run's state, so a
// run resumed from it, on models Init'ed from other seeds, ends bit for bit where the uninterrupted run does (the
// NSSM, whose state includes the chains).
func TestMinimizeBatchNFACheckpointResume(t *testing.T) {
	be := testbackend.Open(t)
	s := Settings{Tol: 1e-5 * 60 / 80, Patience: 5, PowellBeale: 0.2}
	minimize := func(seedOffset uint64, s Settings, ctl BatchControl) []Result {
		t.Helper()
		ms, xs := nfaBatchRuns(t, true, seedOffset)
		bt, err := nfa.NewBatch(be, ms)
		if err != nil {
			t.Fatal(err)
		}
		defer bt.Close()
		res, err := MinimizeBatch(bt, xs, s, ctl)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	full := minimize(0, s, BatchControl{MaxIter: 30})
	path := filepath.Join(t.TempDir(), "nfa.ck")
	minimize(0, s, BatchControl{MaxIter: 12, CheckpointEvery: 4, CheckpointPath: path})
	rs := s
	rs.Resume = true
	got := minimize(7, rs, BatchControl{MaxIter: 30, CheckpointPath: path})
	for i, g := range got {
		w := full[i]
		if g.Iters != w.Iters || g.Reason != w.Reason || g.F != w.F || !slices.Equal(g.X, w.X) {
			t.Errorf("run %d: resumed %v after %d iterations, F %.15g; uninterrupted %v after %d, F %.15g", i, g.Reason,
				g.Iters, g.F, w.Reason, w.Iters, w.F)
		}
	}
}

// TestSweepNFABatched: the batched sweep's RCG runs retrace the host sweep's (seeds 0…2, T = 60, d = 3, H = 8, 20
// iterations): the same iterations and evaluation counts, and F at every iteration within 1e-6 relative. Seeds 1
// and 2 agree to 1e-14; in seed 0 the round-off difference grows about tenfold per iteration from the fourth on,
// to 9.8e-8, with the same evaluations: the path amplifies it, as Minimize does between any two summation orders.
// Its CG runs are capped at CapFactor × RCG's median iterations, and times are non-decreasing batch wall-clock
// seconds.
func TestSweepNFABatched(t *testing.T) {
	be := testbackend.Open(t)
	sw := Sweep{T: 60, Seeds: 3, D: 3, H: 8, Moments: nfa.GaussHermite, Methods: []string{"RCG", "CG"},
		RCGMaxIter: 20, CapFactor: 1.5}
	got, err := SweepNFABatched(sw, be)
	if err != nil {
		t.Fatal(err)
	}
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
		for k, f := range tr.F {
			worst = math.Max(worst, math.Abs(f-w.F[k])/math.Abs(w.F[k]))
		}
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
		"Old":    {T: 60, Seeds: 2, Moments: nfa.GaussHermite, Methods: []string{"RCG", "Old"}, RCGMaxIter: 2},
	} {
		if _, err := SweepNFABatched(bad, be); !errors.Is(err, ErrBadInput) && !errors.Is(err, nfa.ErrBadInput) {
			t.Errorf("%s: error %v, want a bad-input error", name, err)
		}
	}
}

// updaterOnly hides a batch's BatchStateful methods: a BatchUpdater whose state checkpoints cannot hold.
type updaterOnly struct {
	BatchObjective
	up BatchUpdater
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
	s := Settings{Tol: 1e-6, Patience: 5}
	path := filepath.Join(t.TempDir(), "x.ck")
	ctl := BatchControl{MaxIter: 3, CheckpointEvery: 1, CheckpointPath: path}
	if _, err := MinimizeBatch(obj, xs, s, ctl); !errors.Is(err, ErrBadInput) {
		t.Errorf("checkpoints without the state: error %v, want ErrBadInput", err)
	}
	if _, err := MinimizeBatch(obj, xs, s, BatchControl{MaxIter: 3}); err != nil {
		t.Errorf("without checkpoints: %v", err)
	}
}
