package rcgexp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/models/mog"
)

// batchRuns returns B mixtures of equal size — seeds 0…3 on one data set (R = 0.3) and one run on each of two other
// data sets (R = 0.15, 0.4) — with their §6.2 starting points.
func batchRuns(t testing.TB, N, K int) ([]*mog.Model, [][]float64) {
	t.Helper()
	newModel := func(R float64, seed uint64) *mog.Model {
		m, err := mog.New(mog.Synthetic(R, N, 0.03, seed), N, 2, K, mog.DefaultPrior(2), mog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	shared := newModel(0.3, 2024)
	ms := []*mog.Model{shared, shared, shared, shared, newModel(0.15, 11), newModel(0.4, 12)}
	xs := make([][]float64, len(ms))
	for i, m := range ms {
		x, err := mog.Init(m, uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		xs[i] = x
	}
	return ms, xs
}

// TestMinimizeBatchMatchesHost runs B = 6 MoG problems (N = 500, K = 5, ε = 1e-9·N, ⌈√n⌉ restarts; then with
// Powell–Beale 0.2; then RG with a strict Armijo constant, which backtracks and expands; then the Euclidean CG and
// GD, whose directions and first trial steps differ; then the Unit search with RCG (reverts and resets), RG (none of
// its unit steps raises F here) and GD (whose unit steps backtrack, to acceptance or to failure); capped at 400
// iterations, GD at 100 and CG at 12)
// as one batched run and each of them with Minimize on the host Collapsed objective (the reference: independent
// per-run code, one run at a time). The batched driver is Minimize's algorithm step for step and its evaluations
// agree with the host's to round-off (TestBatchMatchesHost in models/mog), so per run it asserts:
//   - the same evaluations and restarts, iteration by iteration, as long as the host's F still decreases by more
//     than 1e-12·|F| per iteration (below that, line-search decisions compare F values that differ in the last
//     digits, and one run may take one more backtracked step than the other before both stop);
//   - final F within 1e-8 relative, iteration counts within 2 and F-evaluation counts within 20 (two terminal
//     searches), the same stop reason, and final points within 1e-6 (max-norm, relative).
//
// Runs finish at different iterations, so the per-run mask (finished runs are neither stepped nor evaluated) is
// exercised. With -short every run is capped at 40 iterations.
func TestMinimizeBatchMatchesHost(t *testing.T) {
	be := testbackend.Open(t)
	const N, K = 500, 5
	type trace struct{ evals, restarts, F []float64 }
	exact, total := 0, 0
	for _, s := range []rcg.Settings{
		{Tol: 1e-9 * N, RestartEvery: rcg.SqrtN},
		{Tol: 1e-9 * N, RestartEvery: rcg.SqrtN, PowellBeale: 0.2},
		{Method: rcg.RG, Tol: 1e-9 * N, LS: rcg.LineSearch{C1: 0.45, Grow: 1.5}},
		{Method: rcg.CG, Tol: 1e-9 * N, RestartEvery: rcg.SqrtN},
		{Method: rcg.GD, Tol: 1e-9 * N},
		{Tol: 1e-9 * N, RestartEvery: rcg.SqrtN, Search: rcg.Unit},
		{Method: rcg.RG, Tol: 1e-9 * N, Search: rcg.Unit},
		{Method: rcg.GD, Tol: 1e-9 * N, Search: rcg.Unit},
	} {
		ms, xs := batchRuns(t, N, K)
		bt, err := mog.NewBatch(be, ms)
		if err != nil {
			t.Fatal(err)
		}
		bTr := make([]trace, len(ms))
		rec := func(tr *trace, r run.Record) {
			tr.evals = append(tr.evals, r.Extra["f_evals"]+r.Extra["g_evals"])
			tr.restarts = append(tr.restarts, r.Extra["restarts"])
			tr.F = append(tr.F, r.Extra["F"])
		}
		maxIter := 400
		if s.Method == rcg.GD {
			maxIter = 100 // GD reaches the cap in every run; 100 iterations check its path as well as 400
		}
		if s.Method == rcg.CG {
			// Euclidean CG amplifies the round-off differences of the two evaluations (≤ 1e-14) about 100-fold
			// every 20 iterations on this ill-conditioned problem: F differs by 1e-9 relative after 14–75 iterations
			// and by 1e-5 after 68–122, with identical evaluation counts.
			maxIter = 12
		}
		if testing.Short() {
			// The race detector runs the short tests (10× slower); the whole paths run in the full suite.
			maxIter = min(maxIter, 40)
		}
		got, err := rcg.MinimizeBatch(context.Background(), bt, xs, withControl(s, run.Control{MaxIter: maxIter,
			Recorder: run.Func(func(r run.Record) { rec(&bTr[r.Run], r) })}))
		bt.Close()
		if err != nil {
			t.Fatal(err)
		}
		iters := map[int]bool{}
		for i, m := range ms {
			var hTr trace
			want, err := rcg.Minimize(context.Background(), mog.NewCollapsed(m), xs[i], withControl(s,
				run.Control{MaxIter: maxIter, Recorder: run.Func(func(r run.Record) { rec(&hTr, r) })}))
			if err != nil {
				t.Fatal(err)
			}
			g := got[i]
			name := fmt.Sprintf("%v PB %.1f search %d run %d", s.Method, s.PowellBeale, s.Search, i)
			for it := range min(len(hTr.F), len(bTr[i].F)) {
				if it > 0 && math.Abs(hTr.F[it]-hTr.F[it-1]) < 1e-12*math.Abs(hTr.F[it]) {
					break
				}
				if bTr[i].evals[it] != hTr.evals[it] || bTr[i].restarts[it] != hTr.restarts[it] {
					t.Errorf("%s: iteration %d: evaluations %v, restarts %v; host %v, %v", name, it,
						bTr[i].evals[it], bTr[i].restarts[it], hTr.evals[it], hTr.restarts[it])
					break
				}
			}
			ef := math.Abs(g.F-want.F) / math.Abs(want.F)
			var dx, nx float64
			for j := range want.X {
				dx = math.Max(dx, math.Abs(g.X[j]-want.X[j]))
				nx = math.Max(nx, math.Abs(want.X[j]))
			}
			t.Logf("%s: F %.10f (host %.10f, rel %.1g), iterations %d (host %d), F evals %d (%d), restarts %d (%d), "+
				"%v %v (%v %v), x rel %.1g", name, g.F, want.F, ef, g.Iters, want.Iters, g.FEvals, want.FEvals,
				g.Restarts, want.Restarts, g.Reason, g.ConvergedBy, want.Reason, want.ConvergedBy, dx/nx)
			if !(ef <= 1e-8) || abs(g.Iters-want.Iters) > 2 || abs(g.FEvals-want.FEvals) > 20 || g.Reason != want.Reason ||
				g.ConvergedBy != want.ConvergedBy || !(dx <= 1e-6*nx) {
				t.Errorf("%s differs from the host run", name)
			}
			if g.Iters == want.Iters && g.FEvals == want.FEvals && g.GEvals == want.GEvals && g.Restarts == want.Restarts {
				exact++
			}
			total++
			iters[g.Iters] = true
		}
		if len(iters) < 2 && riemannian(s.Method) && !testing.Short() { // CG and GD reach the cap in every run
			t.Errorf("all runs took the same number of iterations: the mask was not exercised")
		}
	}
	t.Logf("%d of %d runs with identical iteration, evaluation and restart counts", exact, total)
}

func abs(a int) int { return max(a, -a) }

// riemannian reports whether m steps along the natural gradient (rcg.Method's riemannian).
func riemannian(m rcg.Method) bool { return m == rcg.RCG || m == rcg.RG || m == rcg.Old }

// The checkpoint file of rcg.MinimizeBatch as the test reads and rewrites it: the method and version it is saved
// under and the fields it holds (gob matches them by name).
const batchCheckpointMethod, batchCheckpointVersion = "rcg-batch", 1

type batchRunState struct {
	GnPrev, AlphaPrev, FPrev           float64
	SinceReset, Calm, Iters            int
	HavePrev, Done                     bool
	Reason                             run.StopReason
	ConvergedBy                        rcg.Convergence
	FEvals, GEvals, Rejected, Restarts int
}

type batchCheckpoint struct {
	Method, Dim      int
	Runs             []batchRunState
	X, GtPrev, PPrev [][]float64
	ObjState         [][]float64
	Mult             [][]float64
}

// TestMinimizeBatchBadInput: settings that cannot work and starting points of the wrong count or length are errors
// wrapping run.ErrConfig, a starting point that is not finite one wrapping rcg.ErrBadInput.
func TestMinimizeBatchBadInput(t *testing.T) {
	be := testbackend.Open(t)
	ms, xs := batchRuns(t, 40, 3)
	bt, err := mog.NewBatch(be, ms)
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	for name, c := range map[string]struct {
		s  rcg.Settings
		xs [][]float64
	}{
		"method":     {rcg.Settings{Method: rcg.Old + 1}, xs},
		"beta":       {rcg.Settings{Beta: rcg.PolakRibierePlus + 1}, xs},
		"search":     {rcg.Settings{Search: rcg.Unit + 1}, xs},
		"Refine":     {rcg.Settings{LS: rcg.LineSearch{Refine: -1}}, xs},
		"count":      {rcg.Settings{}, xs[:3]},
		"length":     {rcg.Settings{}, append(xs[:5:5], xs[5][:10])},
		"C1":         {rcg.Settings{LS: rcg.LineSearch{C1: 1}}, xs},
		"Tol NaN":    {rcg.Settings{Tol: math.NaN()}, xs},
		"backtracks": {rcg.Settings{LS: rcg.LineSearch{MaxBacktrackSteepest: -1}}, xs},
	} {
		if _, err := rcg.MinimizeBatch(context.Background(), bt, c.xs, c.s); !errors.Is(err, run.ErrConfig) {
			t.Errorf("%s: err = %v, want run.ErrConfig", name, err)
		}
	}
	nan := slices.Clone(xs)
	nan[1] = slices.Clone(xs[1])
	nan[1][0] = math.NaN()
	if _, err := rcg.MinimizeBatch(context.Background(), bt, nan, rcg.Settings{}); !errors.Is(err, rcg.ErrBadInput) {
		t.Errorf("x0[1] not finite: err = %v, want rcg.ErrBadInput", err)
	}
}

// TestMinimizeBatchAgain checks that MinimizeBatch leaves the batch's slots in the order of x0: a second call on the
// same batch from the same points gives the same results bit for bit, and each slot still holds its run's model.
// (Runs finish at different iterations, so slots are swapped during the call.)
func TestMinimizeBatchAgain(t *testing.T) {
	be := testbackend.Open(t)
	ms, xs := batchRuns(t, 200, 4)
	bt, err := mog.NewBatch(be, ms)
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	s := rcg.Settings{Tol: 1e-9 * 200, RestartEvery: rcg.SqrtN}
	first, err := rcg.MinimizeBatch(context.Background(), bt, xs, withControl(s, run.Control{MaxIter: 300}))
	if err != nil {
		t.Fatal(err)
	}
	iters := map[int]bool{}
	for i, m := range ms {
		if bt.Model(i) != m {
			t.Errorf("slot %d holds another run's model after MinimizeBatch", i)
		}
		iters[first[i].Iters] = true
	}
	if len(iters) < 2 {
		t.Fatal("all runs took the same number of iterations: no slot was swapped")
	}
	second, err := rcg.MinimizeBatch(context.Background(), bt, xs, withControl(s, run.Control{MaxIter: 300}))
	if err != nil {
		t.Fatal(err)
	}
	for i := range first {
		if first[i].F != second[i].F || first[i].Iters != second[i].Iters {
			t.Errorf("run %d: second call F %v in %d iterations, first %v in %d", i, second[i].F, second[i].Iters,
				first[i].F, first[i].Iters)
		}
	}
}

// TestMinimizeBatchCancel: a cancelled context stops every run with reason Cancelled and MinimizeBatch returns the
// results with the context's error.
func TestMinimizeBatchCancel(t *testing.T) {
	be := testbackend.Open(t)
	ms, xs := batchRuns(t, 100, 3)
	bt, err := mog.NewBatch(be, ms)
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	ctx, cancel := context.WithCancel(context.Background())
	res, err := rcg.MinimizeBatch(ctx, bt, xs, rcg.Settings{Control: run.Control{Recorder: run.Func(func(r run.Record) {
		if r.Iter == 2 {
			cancel()
		}
	})}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	for i, r := range res {
		if r.Reason != run.Cancelled || !errors.Is(r.Err, context.Canceled) || len(r.X) != len(xs[i]) {
			t.Errorf("run %d: reason %v, error %v, %d values", i, r.Reason, r.Err, len(r.X))
		}
	}
}

// TestRunMoGBatch checks RunMoGBatch against RunMoG, run by run (B = 6, N = 300, K = 5, ε = 1e-9·N), for RCG and
// VB-EM: the same stop reason, final F within 1e-8 relative and iterations within 2 (TestMinimizeBatchMatchesHost
// and mog's TestVBEMBatchMatchesHost check the paths step by step), one record per iteration whose last evaluation
// count is the run's (for VB-EM 2 per iteration, as RunMoG counts). An unknown method is an error.
func TestRunMoGBatch(t *testing.T) {
	be := testbackend.Open(t)
	const N, K = 300, 5
	ms, xs := batchRuns(t, N, K)
	bt, err := mog.NewBatch(be, ms)
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	for _, meth := range []string{"RCG", "VBEM"} {
		type rec struct{ F, evals []float64 }
		recs := make([]rec, len(ms))
		got, err := RunMoGBatch(context.Background(), bt, xs, meth, 1e-9*N, 0, func(i int, F float64, evals int) {
			recs[i].F, recs[i].evals = append(recs[i].F, F), append(recs[i].evals, float64(evals))
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range ms {
			want, err := RunMoG(m, xs[i], meth, 1e-9*N, 0)
			if err != nil {
				t.Fatal(err)
			}
			g := got[i]
			if g.Reason.String() != want.Reason || !(math.Abs(g.F-want.Final) <= 1e-8*math.Abs(want.Final)) ||
				g.Iters < want.Iters-2 || g.Iters > want.Iters+2 || len(g.X) != bt.Dim() {
				t.Errorf("%s run %d: %v after %d iterations, F %.12g; host %s after %d, F %.12g", meth, i, g.Reason,
					g.Iters, g.F, want.Reason, want.Iters, want.Final)
			}
			r := recs[i]
			if len(r.F) != g.Iters || r.F[len(r.F)-1] != g.F {
				t.Errorf("%s run %d: %d records, last F %v; want %d, %v", meth, i, len(r.F), r.F, g.Iters, g.F)
				continue
			}
			wantEvals := float64(g.FEvals + g.GEvals)
			if meth == "VBEM" {
				wantEvals = float64(2 * g.Iters)
			}
			if last := r.evals[len(r.evals)-1]; last != wantEvals {
				t.Errorf("%s run %d: last recorded evaluations %v, want %v", meth, i, last, wantEvals)
			}
		}
	}
	if _, err := RunMoGBatch(context.Background(), bt, xs, "Newton", 1e-6, 0, nil); !errors.Is(err, rcg.ErrBadInput) {
		t.Errorf("unknown method: error %v, want ErrBadInput", err)
	}
}

// TestMinimizeBatchCheckpointResume: a batch stopped after 28 rounds with a checkpoint every 4, then resumed from a
// fresh batch and other starting points, ends every run bit for bit where the uninterrupted batch ends it —
// iterations, stop reason, F, x and the evaluation and restart counts — including runs that had converged before the
// checkpoint (ε = 1e-5·N: two runs stop within 28 iterations, the others after 29–48). A missing or damaged file,
// one of another method or batch size, or one with a finished run that has no stop reason, is an error wrapping
// run.ErrCheckpoint.
func TestMinimizeBatchCheckpointResume(t *testing.T) {
	be := testbackend.Open(t)
	const N, K = 200, 5
	ms, xs := batchRuns(t, N, K)
	s := rcg.Settings{Tol: 1e-5 * N, RestartEvery: rcg.SqrtN, PowellBeale: 0.2}
	minimize := func(xs [][]float64, s rcg.Settings, ctl run.Control) []rcg.Result {
		t.Helper()
		bt, err := mog.NewBatch(be, ms)
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
	full := minimize(xs, s, run.Control{})
	early := 0
	for _, r := range full {
		if r.Iters < 28 {
			early++
		}
	}
	if early == 0 || early == len(full) {
		t.Fatalf("%d of %d runs stop within 28 iterations; the test wants some", early, len(full))
	}
	path := filepath.Join(t.TempDir(), "batch.ck")
	minimize(xs, s, run.Control{MaxIter: 28, CheckpointEvery: 4, CheckpointPath: path})
	other := make([][]float64, len(xs))
	for i := range other {
		other[i] = xs[(i+1)%len(xs)] // the checkpoint, not these, must decide
	}
	got := minimize(other, s, run.Control{CheckpointPath: path, Resume: true})
	for i, g := range got {
		w := full[i]
		same := g.Iters == w.Iters && g.Reason == w.Reason && g.ConvergedBy == w.ConvergedBy && g.F == w.F &&
			g.FEvals == w.FEvals && g.GEvals == w.GEvals && g.Restarts == w.Restarts && g.Rejected == w.Rejected &&
			slices.Equal(g.X, w.X)
		if !same {
			t.Errorf("run %d: resumed %v after %d iterations, F %.15g, evaluations %d/%d, restarts %d; uninterrupted "+
				"%v after %d, F %.15g, %d/%d, %d", i, g.Reason, g.Iters, g.F, g.FEvals, g.GEvals, g.Restarts, w.Reason,
				w.Iters, w.F, w.FEvals, w.GEvals, w.Restarts)
		}
	}
	t.Logf("%d of %d runs had stopped before the checkpoint", early, len(full))

	bt, err := mog.NewBatch(be, ms)
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	resume := func(s rcg.Settings, path string) rcg.Settings {
		return withControl(s, run.Control{CheckpointPath: path, Resume: true})
	}
	// No file: an error, not a fresh start.
	none := filepath.Join(t.TempDir(), "none")
	if _, err := rcg.MinimizeBatch(context.Background(), bt, xs, resume(s, none)); !errors.Is(err, run.ErrCheckpoint) ||
		!errors.Is(err, fs.ErrNotExist) {
		t.Errorf("resume without a file: error %v, want run.ErrCheckpoint and fs.ErrNotExist", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.ck")
	if err := os.WriteFile(bad, []byte("geovb-checkpoint v1\nnot gob"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := rcg.MinimizeBatch(context.Background(), bt, xs, resume(s, bad)); !errors.Is(err, run.ErrCheckpoint) {
		t.Errorf("damaged checkpoint: error %v, want run.ErrCheckpoint", err)
	}
	var c batchCheckpoint
	if err := run.LoadCheckpoint(path, batchCheckpointMethod, batchCheckpointVersion, &c); err != nil {
		t.Fatal(err)
	}
	c.Runs[0].Done, c.Runs[0].Reason = true, run.Running // finished without a reason
	odd := filepath.Join(t.TempDir(), "odd.ck")
	if err := run.SaveCheckpoint(odd, batchCheckpointMethod, batchCheckpointVersion, c); err != nil {
		t.Fatal(err)
	}
	if _, err := rcg.MinimizeBatch(context.Background(), bt, xs, resume(s, odd)); !errors.Is(err, run.ErrCheckpoint) {
		t.Errorf("a finished run without a stop reason: error %v, want run.ErrCheckpoint", err)
	}
	c.Runs[0].Done, c.Runs[0].Reason, c.Runs[0].ConvergedBy = true, run.MaxIter, rcg.Tolerance
	if err := run.SaveCheckpoint(odd, batchCheckpointMethod, batchCheckpointVersion, c); err != nil {
		t.Fatal(err)
	}
	if _, err := rcg.MinimizeBatch(context.Background(), bt, xs, resume(s, odd)); !errors.Is(err, run.ErrCheckpoint) {
		t.Errorf("a run stopped by the cap with a convergence test: error %v, want run.ErrCheckpoint", err)
	}
	rg := s
	rg.Method = rcg.RG
	if _, err := rcg.MinimizeBatch(context.Background(), bt, xs, resume(rg, path)); !errors.Is(err, run.ErrCheckpoint) {
		t.Errorf("checkpoint of RCG resumed as RG: error %v, want run.ErrCheckpoint", err)
	}
	for name, ctl := range map[string]run.Control{"negative period": {CheckpointEvery: -1, CheckpointPath: path},
		"no path": {CheckpointEvery: 3}, "negative cap": {MaxIter: -1}, "resume without a path": {Resume: true}} {
		if _, err := rcg.MinimizeBatch(context.Background(), bt, xs, withControl(s, ctl)); !errors.Is(err,
			run.ErrConfig) {
			t.Errorf("%s: error %v, want run.ErrConfig", name, err)
		}
	}
}

// withControl returns s with the run control c.
func withControl(s rcg.Settings, c run.Control) rcg.Settings {
	s.Control = c
	return s
}
