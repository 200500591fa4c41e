package nfa

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/geovb/geovb/internal/numtest"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// batchCfg is the configuration of the batch tests: NFA, Gauss–Hermite with 9 nodes (an odd order, one node at
// the mean); nssmCfg the NSSM's, with 4 hidden units in g.
var (
	batchCfg = Config{D: 2, H: 5, Moments: GaussHermite, GHOrder: 9}
	nssmCfg  = Config{Dynamic: true, D: 2, H: 5, HG: 4, Moments: GaussHermite, GHOrder: 9}
)

// ardCfg is c with the ARD priors, adapting after delay updates (negative: from the first).
func ardCfg(c Config, delay int) Config {
	c.ARD, c.HyperDelay = true, delay
	return c
}

// hierCfg is c with the hierarchical priors.
func hierCfg(c Config) Config {
	c.Hierarchical = true
	return c
}

// batchRuns returns B pairs of equal models of cfg (one for the host reference, one for the batch) of T steps and
// p = 6 outputs, on one data set (shared) or one each, with random means and states; run 1's source variances (or
// chains' s̊) are wide (20–60), so that the Gauss–Hermite residual is clamped for some units and steps, and the
// means large (N(0, 2.1²)), so that the damping of the fixed-point update rejects some steps.
func batchRuns(t *testing.T, cfg Config, B, T int, shared bool) (host, bat []*Model, xs [][]float64) {
	t.Helper()
	const P = 6
	for i := range B {
		ds := uint64(1)
		if !shared {
			ds += uint64(i)
		}
		rd := rand.New(rng.NewSource(ds, 7))
		X := make([]float64, T*P)
		for k := range X {
			X[k] = rd.NormFloat64()
		}
		var pair [2]*Model
		for c := range pair {
			m, err := New(X, T, P, cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rng.NewSource(100+uint64(i), 3))
			for _, v := range [][]float64{m.SVar, m.Ring} {
				for k := range v {
					v[k] = 0.05 + 0.3*r.Float64()
					if i == 1 {
						v[k] = 20 + 40*r.Float64()
					}
				}
			}
			for k := range m.Breve {
				m.Breve[k] = 1.6*r.Float64() - 0.8
			}
			for _, v := range [][]float64{m.WVarF, m.WVarG} {
				for k := range v {
					v[k] = 0.001 + 0.05*r.Float64()
				}
			}
			for _, q := range [][2][]float64{{m.VnMean, m.VnVar}, {m.VmMean, m.VmVar}, {m.VPhiMean, m.VPhiVar},
				{m.TopMean, m.TopVar}} { // the log-std nodes' means and variances
				for k := range q[0] {
					q[0][k] = 0.3 * r.NormFloat64()
					q[1][k] = 0.01 + 0.1*r.Float64()
				}
			}
			x := make([]float64, m.Dim())
			for k := range x {
				x[k] = 2.1 * r.NormFloat64() // large enough for some full fixed-point steps to raise F
			}
			pair[c] = m
			if c == 0 {
				xs = append(xs, x)
			}
		}
		host, bat = append(host, pair[0]), append(bat, pair[1])
	}
	return host, bat, xs
}

// Swap carries each run's best point of the line search: Update at the accepted points of runs swapped after their
// evaluation takes F from that evaluation as without the swap (as many forward passes) and settles the same state,
// bit for bit, for NFA and the NSSM, on one data set and on two.
func TestBatchSwapKeepsBest(t *testing.T) {
	be := testbackend.Open(t)
	for _, cfg := range []Config{batchCfg, nssmCfg} {
		for _, shared := range []bool{true, false} {
			var passes [2]int
			var states [2][][]float64
			for swap := range 2 {
				_, ms, xs := batchRuns(t, cfg, 2, 12, shared)
				bt, err := NewBatch(be, ms)
				if err != nil {
					t.Fatal(err)
				}
				x := testbackend.UploadRows(t, be, xs, bt.Dim())
				if err := bt.Value(make([]float64, 2), x); err != nil {
					t.Fatal(err)
				}
				if swap == 1 { // the runs and their means trade slots
					if err := bt.Swap(0, 1); err != nil {
						t.Fatal(err)
					}
					be.Free(x)
					x = testbackend.UploadRows(t, be, [][]float64{xs[1], xs[0]}, bt.Dim())
				}
				before := bt.forwards
				if err := bt.Update(x); err != nil {
					t.Fatal(err)
				}
				passes[swap] = bt.forwards - before
				states[swap] = [][]float64{bt.Model(swap).State(), bt.Model(1 - swap).State()} // runs 0, 1
				be.Free(x)
				bt.Close()
			}
			name := fmt.Sprintf("dynamic=%v shared=%v", cfg.Dynamic, shared)
			if passes[0] != passes[1] {
				t.Errorf("%s: Update took %d forward passes after a swap, %d without", name, passes[1], passes[0])
			}
			for r := range 2 {
				if !slices.Equal(states[0][r], states[1][r]) {
					t.Errorf("%s: run %d settled another state after a swap", name, r)
				}
			}
		}
	}
}

// Update evaluates each run only in the passes that concern it: over each of three Updates of a batch of three runs
// (on their own data sets), the forward passes cover as many runs as the same Updates of each run alone in a batch of
// one, and leave the same states (to 1e-10 relative), for NFA and the NSSM, with runs that take different numbers of passes (batchRuns'
// large means make the damping reject some steps; checked), whose Update in lockstep would evaluate more.
func TestBatchUpdateEvaluatesOnlyItsRuns(t *testing.T) {
	be := testbackend.Open(t)
	differ, worst := false, 0.0
	for _, cfg := range []Config{batchCfg, nssmCfg} {
		alone, ms, xs := batchRuns(t, cfg, 3, 12, false)
		bt, err := NewBatch(be, ms)
		if err != nil {
			t.Fatal(err)
		}
		x := testbackend.UploadRows(t, be, xs, bt.Dim())
		singles := make([]*Batch, len(alone))
		xsingle := make([]*tensor.Tensor, len(alone))
		for i, m := range alone {
			if singles[i], err = NewBatch(be, []*Model{m}); err != nil {
				t.Fatal(err)
			}
			xsingle[i] = testbackend.UploadRows(t, be, xs[i:i+1], bt.Dim())
		}
		for round := range 3 {
			before := bt.runsForwarded
			if err := bt.Update(x); err != nil {
				t.Fatal(err)
			}
			want := 0
			var passes []int
			for i, sb := range singles {
				b, p := sb.runsForwarded, sb.forwards
				if err := sb.Update(xsingle[i]); err != nil {
					t.Fatal(err)
				}
				want += sb.runsForwarded - b
				passes = append(passes, sb.forwards-p)
				// The same state to round-off: a GPU's BLAS may round a batch of three otherwise than a batch of
				// one (seen on an H200: not bit for bit); the CPU backend agrees exactly.
				if d := numtest.MaxRel(bt.Model(i).State(), sb.Model(0).State(), 0); !(d <= 1e-10) {
					t.Errorf("dynamic=%v round %d: run %d settled another state than alone (relative %.3g)",
						cfg.Dynamic, round, i, d)
				} else {
					worst = math.Max(worst, d)
				}
			}
			if got := bt.runsForwarded - before; got != want {
				t.Errorf("dynamic=%v round %d: Update evaluated %d runs, alone %d", cfg.Dynamic, round, got, want)
			}
			t.Logf("dynamic=%v round %d: passes alone %v", cfg.Dynamic, round, passes)
			differ = differ || slices.Min(passes) != slices.Max(passes)
		}
		be.Free(x)
		bt.Close()
		for i, sb := range singles {
			be.Free(xsingle[i])
			sb.Close()
		}
	}
	if !differ {
		t.Errorf("every run took as many passes as the others in every round: nothing to leave out")
	}
	t.Logf("states of the batch against the runs alone: largest relative difference %.2g", worst)
}

// TestBatchMatchesModel: on the test backend, for NFA and the NSSM, flat, with ARD (NFA adapting from the first update,
// the NSSM from the third) and with the hierarchical priors (NFA alone, the NSSM with ARD), the batch's F, gradient and
// natural gradient (for the NSSM the chains') of every run match its Model's (F to 1e-12 relative, the gradients to
// 1e-11 of their largest element), at a point with the residual clamped in some units (checked) and after each Update
// (where Grad takes Update's last gradient: checked), whose new state (noise hyperparameters and damped fixed-point
// variances) must match Model.Update's to 1e-10, with the same number of rejected updates (some are, over all the
// settings: checked), for five rounds, each from the host's state; runs on one data set and on three.
func TestBatchMatchesModel(t *testing.T) {
	be := testbackend.Open(t)
	totalRejected := 0
	for _, c := range []struct {
		cfg    Config
		shared bool
	}{{batchCfg, true}, {batchCfg, false}, {nssmCfg, true}, {nssmCfg, false}, {ardCfg(batchCfg, -1), false},
		{ardCfg(nssmCfg, 2), true}, {hierCfg(batchCfg), false}, {hierCfg(ardCfg(nssmCfg, 2)), false}} {
		shared := c.shared
		name := fmt.Sprintf("dynamic=%v ard=%v hier=%v shared=%v", c.cfg.Dynamic, c.cfg.ARD, c.cfg.Hierarchical, shared)
		host, bat, xs := batchRuns(t, c.cfg, 3, 37, shared)
		bt, err := NewBatch(be, bat)
		if err != nil {
			t.Fatal(err)
		}
		defer bt.Close()
		if bt.shared != shared {
			t.Fatalf("shared data = %v, want %v", bt.shared, shared)
		}
		x := testbackend.UploadRows(t, be, xs, bt.Dim())
		g, _ := be.Alloc(x.Shape())
		gt, _ := be.Alloc(x.Shape())
		check := func(stage string) {
			t.Helper()
			f := make([]float64, bt.B)
			if err := bt.Grad(f, g, gt, x); err != nil {
				t.Fatal(err)
			}
			fv := make([]float64, bt.B)
			if err := bt.Value(fv, x); err != nil {
				t.Fatal(err)
			}
			gs, gts := testbackend.DownloadRows(t, be, g), testbackend.DownloadRows(t, be, gt)
			var worstF, worstG, worstNat float64
			for i, m := range host {
				gr := m.NewGrad()
				F := m.Gradient(gr, xs[i])
				nat := make([]float64, m.Dim())
				m.NatGrad(nat, gr.Mean, xs[i])
				worstF = math.Max(worstF, math.Max(math.Abs(f[i]-F), math.Abs(fv[i]-F))/math.Abs(F))
				worstG = math.Max(worstG, numtest.MaxRel(gs[i], gr.Mean, 0))
				worstNat = math.Max(worstNat, numtest.MaxRel(gts[i], nat, 0))
			}
			t.Logf("%s %s: F %.2g, gradient %.2g, natural gradient %.2g", name, stage, worstF, worstG, worstNat)
			if !(worstF <= 1e-12 && worstG <= 1e-11 && worstNat <= 1e-11) { // NaN fails too
				t.Errorf("%s %s: relative errors F %.3g, gradient %.3g, natural gradient %.3g", name, stage,
					worstF, worstG, worstNat)
			}
		}
		check("start")
		res := testbackend.DownloadRows(t, be, bt.f.res)
		clamped, open := 0, 0
		for _, r := range res {
			for _, v := range r {
				if v < 0 {
					clamped++
				} else {
					open++
				}
			}
		}
		if clamped == 0 || open == 0 {
			t.Fatalf("%d clamped and %d open residuals: the test needs both", clamped, open)
		}
		rejected, reused := 0, 0
		for round := range 5 {
			if err := bt.Update(x); err != nil {
				t.Fatal(err)
			}
			if bt.lastOK { // the next Grad takes Update's last gradient
				reused++
			}
			var worst float64
			for i, m := range host {
				if err := m.Update(xs[i]); err != nil {
					t.Fatal(err)
				}
				worst = math.Max(worst, numtest.MaxRel(bt.Model(i).State(), m.State(), 0))
				if a, b := bt.Model(i).FixedPointRejected(), m.FixedPointRejected(); a != b {
					t.Errorf("round %d run %d: %d rejected updates, model %d", round, i, a, b)
				}
				if round == 4 {
					rejected += m.FixedPointRejected()
				}
			}
			t.Logf("%s update %d: state %.2g", name, round, worst)
			if worst > 1e-10 {
				t.Errorf("%s update %d: state relative error %.3g", name, round, worst)
			}
			check("after update")
			// Start the next round from the host's state, so that each round measures one Update: repeated at a
			// fixed x, the updates amplify round-off (for the NSSM's wide chains about fivefold per round).
			for i, m := range host {
				if err := bt.SetState(i, m.State()); err != nil {
					t.Fatal(err)
				}
			}
		}
		if reused == 0 {
			t.Errorf("%s: Grad never took Update's gradient; the test does not reach that branch", name)
		}
		totalRejected += rejected
		t.Logf("%s: %d of %d updates rejected; %d of 5 gradients after Update reused", name, rejected,
			5*bt.B, reused)
	}
	if totalRejected == 0 {
		t.Error("no update was rejected; the test does not reach the damping's last branch")
	}
}

// TestBatchBadInput: NewBatch names what it does not run and models that do not fit together; the batch methods
// refuse operands of the wrong shape.
func TestBatchBadInput(t *testing.T) {
	be := testbackend.Open(t)
	_, bat, _ := batchRuns(t, batchCfg, 2, 9, false)
	other, _ := New(make([]float64, 10*6), 10, 6, batchCfg)
	taylor, _ := New(make([]float64, 9*6), 9, 6, Config{D: 2, H: 5})
	dyn, _ := New(make([]float64, 9*6), 9, 6, nssmCfg)
	ard, _ := New(make([]float64, 9*6), 9, 6, ardCfg(batchCfg, 0))
	hier, _ := New(make([]float64, 9*6), 9, 6, hierCfg(batchCfg))
	for name, ms := range map[string][]*Model{"none": nil, "different T": {bat[0], other}, "Taylor": {taylor},
		"NFA and NSSM": {bat[0], dyn}, "ARD and not": {bat[0], ard}, "hierarchical and not": {bat[0], hier},
		"one model twice": {bat[0], bat[1], bat[0]}} {
		if _, err := NewBatch(be, ms); !errors.Is(err, ErrBadInput) {
			t.Errorf("%s: error %v, want ErrBadInput", name, err)
		}
	}
	bt, err := NewBatch(be, bat)
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	wrong, _ := be.Alloc(tensor.Shape{Batch: 2, Rows: 1, Cols: bt.Dim() - 1})
	if err := bt.Value(make([]float64, 2), wrong); !errors.Is(err, ErrBadInput) {
		t.Errorf("Value of a short x: error %v", err)
	}
}

// BenchmarkBatchGrad compares one gradient of 8 NFA and 8 NSSM runs (NFA-SYN / NSSM-SYN, T = 1000, p = 21, d = 5,
// H = 20, Gauss–Hermite) as one nfa.Batch on the test backend with the 8 host Model gradients (time steps in blocks
// over the cores), reporting both times and host/batched measured in the same op.
func BenchmarkBatchGrad(b *testing.B) {
	be := testbackend.Open(b)
	for _, dyn := range []bool{false, true} {
		b.Run(fmt.Sprintf("dynamic=%v", dyn), func(b *testing.B) {
			const B, T = 8, 1000
			X := SyntheticNFA(T, 1)
			if dyn {
				X = SyntheticNSSM(T, 1)
			}
			var ms []*Model
			var xs [][]float64
			for i := range B {
				m, err := New(X, T, 21, Config{Dynamic: dyn, D: 5, H: 20, Moments: GaussHermite})
				if err != nil {
					b.Fatal(err)
				}
				x, err := m.Init(uint64(i + 1))
				if err != nil {
					b.Fatal(err)
				}
				ms, xs = append(ms, m), append(xs, x)
			}
			bt, err := NewBatch(be, ms)
			if err != nil {
				b.Fatal(err)
			}
			defer bt.Close()
			x := testbackend.UploadRows(b, be, xs, bt.Dim())
			g, gt := testbackend.UploadRows(b, be, xs, bt.Dim()), testbackend.UploadRows(b, be, xs, bt.Dim())
			f := make([]float64, B)
			gr := ms[0].NewGrad()
			var host, batched time.Duration
			for b.Loop() {
				t0 := time.Now()
				for i, m := range ms {
					m.Gradient(gr, xs[i])
				}
				t1 := time.Now()
				if err := bt.Grad(f, g, gt, x); err != nil {
					b.Fatal(err)
				}
				host, batched = host+t1.Sub(t0), batched+time.Since(t1)
			}
			b.ReportMetric(host.Seconds()*1e3/float64(b.N), "host-ms/op")
			b.ReportMetric(batched.Seconds()*1e3/float64(b.N), "batched-ms/op")
			b.ReportMetric(host.Seconds()/batched.Seconds(), "host/batched")
		})
	}
}
