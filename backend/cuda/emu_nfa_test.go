package cuda

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/internal/vmath"
	"github.com/geovb/geovb/models/nfa"
)

// TestEmulatedNFABatch runs the batched NFA and NSSM of paper 004 (nfa.Batch: batched GEMMs on strided views into
// the runs' x, the Gauss–Hermite nonlinearity by Map(Tanh) and Map(Step), the Khatri–Rao Jacobian as n·H outer
// products, transposes and reductions, chain.natgrad for the NSSM's states, and the between-step updates) through
// the CUDA backend on the emulated device, against the same batch on the CPU backend (itself checked against the
// host model in models/nfa and algos/rcg): three runs (two on one data set, T = 30, p = 21, d = 3, H = 6), 15
// iterations of RCG and of Old (NSSM: 5, see TestMinimizeBatchNFA for why). Required: the same iterations, stop
// reasons and evaluation counts, and F at every iteration within 1e-10 relative. Like TestEmulatedMoGBatch, it checks the
// backend's Go side and the kernels' algorithms, not the CUDA C. The emulated device takes tanh from math.Tanh (the
// CUDA C calls its own tanh), so the CPU backend runs its scalar path here too: its vector kernel (internal/vmath)
// differs in the last bits, which five NSSM iterations amplify to 1e-9.
func TestEmulatedNFABatch(t *testing.T) {
	defer func(v bool) { vmath.UseFMA = v }(vmath.UseFMA)
	vmath.UseFMA = false
	for _, m := range []rcg.Method{rcg.RCG, rcg.Old} {
		for _, dyn := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/dynamic=%v", m, dyn), func(t *testing.T) { testEmulatedNFABatch(t, m, dyn) })
		}
	}
}

func testEmulatedNFABatch(t *testing.T, meth rcg.Method, dyn bool) {
	cb, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	eb := newEmuBackend(t)
	iters := 15
	if dyn {
		iters = 5
	}
	fit := func(be backend.Backend) ([]rcg.Result, [][]float64) {
		ms, xs := nfaRuns(t, dyn, 30, 3, 6, 1, 1, 2)
		bt, err := nfa.NewBatch(be, ms)
		if err != nil {
			t.Fatal(err)
		}
		defer bt.Close()
		F := make([][]float64, len(ms))
		res, err := rcg.MinimizeBatch(context.Background(), bt, xs, rcg.Settings{Method: meth, Tol: 1e-6, Patience: 5,
			PowellBeale: 0.2, Control: run.Control{MaxIter: iters,
				Recorder: run.Func(func(r run.Record) { F[r.Run] = append(F[r.Run], r.Extra["F"]) })}})
		if err != nil {
			t.Fatal(err)
		}
		return res, F
	}
	want, wantF := fit(cb)
	got, gotF := fit(eb)
	worst := 0.0
	for i, g := range got {
		w := want[i]
		if g.Iters != w.Iters || g.Reason != w.Reason || g.FEvals != w.FEvals || g.GEvals != w.GEvals ||
			len(gotF[i]) != len(wantF[i]) {
			t.Errorf("run %d: emulated %v after %d iterations, %d/%d evaluations; CPU %v after %d, %d/%d", i, g.Reason,
				g.Iters, g.FEvals, g.GEvals, w.Reason, w.Iters, w.FEvals, w.GEvals)
			continue
		}
		for k, f := range gotF[i] {
			worst = math.Max(worst, math.Abs(f-wantF[i][k])/math.Abs(wantF[i][k]))
		}
	}
	t.Logf("largest relative difference of F at an iteration: %.2g", worst)
	if worst > 1e-10 {
		t.Errorf("F differs from the CPU backend's by %.3g", worst)
	}
}

// nfaRuns builds one model per data seed — T steps of the NSSM's synthetic data (p = 21) when dyn, else NFA's,
// D sources, H hidden units, Gauss–Hermite moments — and run i's initial point from seed i + 1.
func nfaRuns(t *testing.T, dyn bool, T, D, H int, dataSeeds ...uint64) ([]*nfa.Model, [][]float64) {
	var ms []*nfa.Model
	var xs [][]float64
	for i, ds := range dataSeeds {
		X := nfa.SyntheticNFA(T, ds)
		if dyn {
			X = nfa.SyntheticNSSM(T, ds)
		}
		m, err := nfa.New(X, T, 21, nfa.Config{Dynamic: dyn, D: D, H: H, Moments: nfa.GaussHermite})
		if err != nil {
			t.Fatal(err)
		}
		x, err := m.Init(uint64(i + 1))
		if err != nil {
			t.Fatal(err)
		}
		ms, xs = append(ms, m), append(xs, x)
	}
	return ms, xs
}

// TestEmulatedNSSMBatchWaits counts the device calls of 10 RCG iterations of 8 batched NSSM runs (T = 30, d = 3,
// H = 30, Gauss–Hermite) and how many of them the caller waits for. The launches, library calls, frees and the
// per-run uploads are queued; what waits is what hands a result to the host (F, the line search's values) and
// allocation. Required: at most 2 % of the calls wait (the batch is latency-bound on a GPU; each wait is a round
// trip to the device thread and a drained stream). The calls per evaluation do not depend on T.
func TestEmulatedNSSMBatchWaits(t *testing.T) {
	eb := newEmuBackend(t)
	var waits, posts int
	run, post := eb.run, eb.post
	eb.run = func(f func() error) error { waits++; return run(f) }
	eb.post = func(f func()) error { posts++; return post(f) }
	ms, xs := nfaRuns(t, true, 30, 3, 30, 1, 2, 3, 4, 5, 6, 7, 8)
	bt, err := nfa.NewBatch(eb, ms)
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	waits, posts = 0, 0
	s := rcg.Settings{Method: rcg.RCG, Tol: 1e-6, Patience: 5, PowellBeale: 0.2}
	s.Control.MaxIter = 10
	res, err := rcg.MinimizeBatch(context.Background(), bt, xs, s)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Iters != 10 {
			t.Fatalf("run %d stopped after %d iterations (%v), want 10", i, r.Iters, r.Reason)
		}
	}
	calls := waits + posts
	t.Logf("%d device calls, %d waited for (%.1f %%), %d queued", calls, waits, 100*float64(waits)/float64(calls), posts)
	if calls < 1000 || 50*waits > calls {
		t.Errorf("%d device calls of which %d waited for; want at most 2 %% waited", calls, waits)
	}
}
