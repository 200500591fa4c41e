package rcgexp

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/models/nfa"
)

// FollowRCG reruns exactly RCG's misses, and a rerun retraces its first run bit for bit before going on: the runs
// are deterministic, so the followed trace extends the capped one. Following needs both caps.
func TestSweepFollowRCG(t *testing.T) {
	s := Sweep{Dynamic: true, T: 30, Seeds: 4, Methods: []string{"RCG"}, RCGCap: 20 * time.Millisecond,
		CapFactor: 20, FollowRCG: true}
	runs, err := SweepNFA(s)
	if err != nil {
		t.Fatal(err)
	}
	capped, followed := runs["RCG"], runs[FollowedRCG]
	if len(followed) != len(capped) {
		t.Fatalf("%d followed runs for %d RCG runs", len(followed), len(capped))
	}
	target := s.Target(capped)
	reruns := 0
	for i, c := range capped {
		f := followed[i]
		_, _, reached := c.TimeOrBound(target)
		if rerun := f != c; rerun == reached {
			t.Fatalf("seed %d: rerun %v, though reached %v", c.Seed, rerun, reached)
		}
		if f == c {
			continue
		}
		reruns++
		if f.Seed != c.Seed || f.Limit <= c.Limit || len(f.F) < len(c.F) {
			t.Fatalf("seed %d: rerun seed %d, budget %gs (capped %gs), %d iterations (capped %d)", c.Seed, f.Seed,
				f.Limit, c.Limit, len(f.F), len(c.F))
		}
		for k := range c.F {
			if math.Float64bits(f.F[k]) != math.Float64bits(c.F[k]) {
				t.Fatalf("seed %d: iteration %d: F %v in the rerun, %v in the capped run", c.Seed, k, f.F[k], c.F[k])
			}
		}
	}
	t.Logf("target %.4f; %d of %d runs rerun", target, reruns, len(capped))
	if reruns == 0 {
		t.Skip("no RCG run was capped short of the target on this machine; nothing followed")
	}
	s.CapFactor = 0
	if _, err := SweepNFA(s); !errors.Is(err, rcg.ErrBadInput) {
		t.Errorf("following without the others' cap: %v, want ErrBadInput", err)
	}
}

// RCGMaxIter stops every RCG run after that many iterations, at the same F in every sweep, and caps no other
// method; FollowRCG reruns the misses past it, also when a CPU-time cap longer than the others' budget is set
// beside it (RCGCap one hour here). A negative cap is bad input. Progress reports every run as it ends, in the order
// they ran.
func TestSweepRCGMaxIter(t *testing.T) {
	type report struct {
		method string
		tr     *Trace
	}
	var reports []report
	ticks := map[report][]int{} // the trace's length at each tick of a run
	s := Sweep{Dynamic: true, T: 30, Seeds: 2, Methods: []string{"RCG", "RG"}, RCGMaxIter: 5, CapFactor: 3,
		RCGCap: time.Hour, FollowRCG: true, Progress: func(m string, tr *Trace) { reports = append(reports, report{m, tr}) },
		TickEvery: time.Nanosecond,
		Tick:      func(m string, tr *Trace) { ticks[report{m, tr}] = append(ticks[report{m, tr}], len(tr.F)) }}
	runs, err := SweepNFA(s)
	if err != nil {
		t.Fatal(err)
	}
	// A tick every nanosecond of CPU time comes after almost every iteration, and always before the run ends.
	for _, r := range reports {
		tk := ticks[r]
		ok := len(tk) > 0 && tk[len(tk)-1] <= r.tr.Iters
		for k := 1; k < len(tk); k++ {
			ok = ok && tk[k] > tk[k-1]
		}
		if !ok {
			t.Errorf("%s seed %d: ticks at trace lengths %v, want some, rising, at most %d", r.method, r.tr.Seed, tk,
				r.tr.Iters)
		}
		delete(ticks, r)
	}
	if len(ticks) != 0 {
		t.Errorf("ticks of runs never reported as ended: %d", len(ticks))
	}
	var want []report
	for _, m := range []string{"RCG", FollowedRCG, "RG"} {
		for i, tr := range runs[m] {
			if m != FollowedRCG || tr != runs["RCG"][i] { // a run that reached the target is not rerun
				want = append(want, report{m, tr})
			}
		}
	}
	if !slices.Equal(reports, want) || len(want) < 5 {
		t.Errorf("progress reports %v, want %v (2 RCG runs, the reruns, 2 RG runs)", reports, want)
	}
	s.Progress, s.Tick = nil, nil
	again, err := SweepNFA(s)
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range runs["RCG"] {
		if tr.Iters != 5 || tr.Reason != "max-iter" {
			t.Errorf("RCG seed %d: %d iterations, stopped by %s; want 5, max-iter", tr.Seed, tr.Iters, tr.Reason)
		}
		if g := again["RCG"][i].Final; math.Float64bits(g) != math.Float64bits(tr.Final) {
			t.Errorf("RCG seed %d: final F %v, then %v in the same sweep again", tr.Seed, tr.Final, g)
		}
	}
	for _, tr := range runs["RG"] {
		if tr.Reason == "max-iter" {
			t.Errorf("RG seed %d stopped by the RCG iteration cap after %d iterations", tr.Seed, tr.Iters)
		}
	}
	followed := 0
	for _, tr := range runs[FollowedRCG] {
		if tr.Iters > 5 {
			followed++
		}
	}
	if followed == 0 {
		t.Errorf("no RCG run followed past the iteration cap, though one of two misses the median target")
	}
	s.RCGMaxIter = -1
	if _, err := SweepNFA(s); !errors.Is(err, rcg.ErrBadInput) {
		t.Errorf("RCGMaxIter -1: %v, want ErrBadInput", err)
	}
}

// The ticker calls Tick once each time a run's clock passes another multiple of TickEvery, however many multiples
// one iteration passes, and is nil without Tick or a positive TickEvery; a sweep with a negative TickEvery is bad
// input.
func TestSweepTicker(t *testing.T) {
	var at []float64
	s := Sweep{TickEvery: 10 * time.Second, Tick: func(m string, tr *Trace) {
		if m != "RG" {
			t.Errorf("tick of method %q, want RG", m)
		}
		at = append(at, tr.T[len(tr.T)-1])
	}}
	tick := s.ticker("RG")
	tr := &Trace{}
	for _, sec := range []float64{3, 9.99, 10, 12, 19.5, 35, 39, 40, 40.5, 51} {
		tr.T = append(tr.T, sec)
		tick(tr)
	}
	if want := []float64{10, 35, 40, 51}; !slices.Equal(at, want) {
		t.Errorf("ticks at %v s, want %v", at, want)
	}
	if (Sweep{TickEvery: time.Second}).ticker("RG") != nil || (Sweep{Tick: s.Tick}).ticker("RG") != nil {
		t.Errorf("a ticker without Tick or without TickEvery")
	}
	bad := Sweep{T: 30, Seeds: 1, Methods: []string{"RCG"}, TickEvery: -time.Second}
	if _, err := SweepNFA(bad); !errors.Is(err, rcg.ErrBadInput) {
		t.Errorf("progress every −1 s: %v, want ErrBadInput", err)
	}
	if _, err := SweepNFABatched(bad, testbackend.Open(t)); !errors.Is(err, rcg.ErrBadInput) {
		t.Errorf("batched, progress every −1 s: %v, want ErrBadInput", err)
	}
}

// FirstSeed shifts the seeds: a sweep over seeds 1 and 2 retraces, bit for bit, those runs of a sweep over 0…2.
// FixedTarget is the level RCGTarget returns and FollowRCG follows to: above every capped run's final F no run is
// rerun, below every F of every run each is. A negative first seed or a target that is not finite is bad input, on
// the host and the batched path.
func TestSweepFirstSeedFixedTarget(t *testing.T) {
	whole := Sweep{Dynamic: true, T: 30, Seeds: 3, Methods: []string{"RCG"}, RCGMaxIter: 5, CapFactor: 3}
	all, err := SweepNFA(whole)
	if err != nil {
		t.Fatal(err)
	}
	part := whole
	part.Seeds, part.FirstSeed = 2, 1
	runs, err := SweepNFA(part)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, tr := range runs["RCG"] {
		w := all["RCG"][i+1]
		if tr.Seed != w.Seed || !slices.EqualFunc(tr.F, w.F, func(a, b float64) bool {
			return math.Float64bits(a) == math.Float64bits(b)
		}) {
			t.Fatalf("run %d of seeds 1…2: seed %d, F %v; seed %d of seeds 0…2: F %v", i, tr.Seed, tr.F, w.Seed, w.F)
		}
		lo, hi = min(lo, slices.Min(tr.F)), max(hi, tr.Final)
	}
	part.FollowRCG = true
	for _, c := range []struct {
		target float64
		rerun  bool
	}{{hi + 1, false}, {lo - 1, true}} {
		part.FixedTarget = &c.target
		if got := part.RCGTarget(runs["RCG"]); got != c.target {
			t.Errorf("RCGTarget %v, want the fixed %v", got, c.target)
		}
		got, err := SweepNFA(part)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range got[FollowedRCG] {
			if rerun := f != got["RCG"][i]; rerun != c.rerun {
				t.Errorf("target %.4f (capped runs' F ≥ %.4f, final ≤ %.4f): seed %d rerun %v, want %v", c.target, lo,
					hi, f.Seed, rerun, c.rerun)
			}
		}
	}
	nan, inf := math.NaN(), math.Inf(-1)
	for name, bad := range map[string]Sweep{
		"first seed -1": {Dynamic: true, T: 30, Seeds: 2, FirstSeed: -1, Methods: []string{"RCG"}},
		"target NaN":    {Dynamic: true, T: 30, Seeds: 2, FixedTarget: &nan, Methods: []string{"RCG"}},
		"target -Inf":   {Dynamic: true, T: 30, Seeds: 2, FixedTarget: &inf, Methods: []string{"RCG"}},
		"ε NaN":         {Dynamic: true, T: 30, Seeds: 2, Eps: nan, Methods: []string{"RCG"}},
		"ε +Inf":        {Dynamic: true, T: 30, Seeds: 2, Eps: -inf, Methods: []string{"RCG"}},
		"cap NaN":       {Dynamic: true, T: 30, Seeds: 2, CapFactor: nan, Methods: []string{"RCG"}},
		"d -1":          {Dynamic: true, T: 30, Seeds: 2, D: -1, Methods: []string{"RCG"}},
		"H -1":          {Dynamic: true, T: 30, Seeds: 2, H: -1, Methods: []string{"RCG"}},
	} {
		if _, err := SweepNFA(bad); !errors.Is(err, rcg.ErrBadInput) {
			t.Errorf("%s: %v, want ErrBadInput", name, err)
		}
		if _, err := SweepNFABatched(bad, nil); !errors.Is(err, rcg.ErrBadInput) {
			t.Errorf("batched, %s: %v, want ErrBadInput", name, err)
		}
	}
}

// TestNFAHierarchicalFit fits NFA-SYN (T = 200, d = 3, H = 10, Gauss–Hermite) with the ARD and hierarchical priors
// of eqs. 92–96 by RCG to convergence. The data's 21 channels share the noise std 0.1 (nfa.Observe); the noise
// group's mean node learns it (e^{m̄_vn} within 10 % of 0.1) and its log-std node finds the channels alike
// (e^{v̄_vn} < 0.1, a spread of the log-stds below 10 %). F falls from its initial value.
func TestNFAHierarchicalFit(t *testing.T) {
	const T = 200
	m, err := nfa.New(nfa.SyntheticNFA(T, 1), T, 21, nfa.Config{D: 3, H: 10, Moments: nfa.GaussHermite, ARD: true,
		Hierarchical: true})
	if err != nil {
		t.Fatal(err)
	}
	x0, err := m.Init(1)
	if err != nil {
		t.Fatal(err)
	}
	F0 := m.Value(x0)
	tr, err := RunNFA(m, 1, "RCG", 1e-5*T/80, 5, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	k := slices.Index(m.GroupNames(), "v_n")
	if k < 0 {
		t.Fatalf("no noise group in %v", m.GroupNames())
	}
	noise, spread := math.Exp(m.TopMean[2*k]), math.Exp(m.TopMean[2*k+1])
	t.Logf("%d iterations (%s), F %.4f → %.4f; noise std %.4f, log-std spread %.4f", tr.Iters, tr.Reason, F0, tr.Final,
		noise, spread)
	if tr.Reason != "converged" || !(tr.Final < F0) {
		t.Errorf("run %s, F %v → %v", tr.Reason, F0, tr.Final)
	}
	if math.Abs(noise-0.1) > 0.01 || spread >= 0.1 {
		t.Errorf("noise group: std e^{m̄} = %v (want 0.1 ± 0.01), spread e^{v̄} = %v (want < 0.1)", noise, spread)
	}
}

// A sweep with CheckpointDir resumes each run from its file: run again, the finished runs retrace their last
// iterations to the same F bit for bit; with seed 1's file put back to iteration 10 (as a sweep stopped after its
// 12th iteration leaves it; a later multiple of 5 should a tick be skipped), that run goes on from there, the first
// 10 points of its trace restored as they were measured, and ends as the sweep without checkpoints does. Bad settings and states are refused.
func TestSweepCheckpointResume(t *testing.T) {
	base := Sweep{Dynamic: true, T: 30, Seeds: 2, Methods: []string{"RCG"}, RCGMaxIter: 23}
	ref, err := SweepNFA(base)
	if err != nil {
		t.Fatal(err)
	}
	s := base
	s.CheckpointDir, s.CheckpointEvery = filepath.Join(t.TempDir(), "ck"), 5
	file, _ := s.checkpoint("RCG", 1)
	var saved []byte
	at := 0 // the iteration the saved file holds
	s.TickEvery = time.Nanosecond
	s.Tick = func(m string, tr *Trace) {
		// After iteration L (a tick comes before that iteration's checkpoint) the file holds iteration 5⌊(L−1)/5⌋.
		if L := len(tr.T); tr.Seed == 1 && L >= 12 && saved == nil {
			if saved, err = os.ReadFile(file); err != nil {
				t.Fatal(err)
			}
			at = 5 * ((L - 1) / 5)
		}
	}
	first, err := SweepNFA(s)
	if err != nil {
		t.Fatal(err)
	}
	if saved == nil {
		t.Fatal("no checkpoint of seed 1 after 12 iterations")
	}
	s.Tick = nil
	same := func(name string, got map[string][]*Trace) {
		t.Helper()
		for i, w := range ref["RCG"] {
			g := got["RCG"][i]
			if g.Iters != w.Iters || math.Float64bits(g.Final) != math.Float64bits(w.Final) ||
				!slices.Equal(g.F, w.F) || !slices.Equal(g.Evals, w.Evals) || len(g.T) != len(w.T) {
				t.Errorf("%s: seed %d: %d iterations, F %v; without checkpoints %d, %v", name, w.Seed, g.Iters, g.F,
					w.Iters, w.F)
			}
		}
	}
	same("with checkpoints", first)
	again, err := SweepNFA(s)
	if err != nil {
		t.Fatal(err)
	}
	same("again from the files", again)
	if !slices.Equal(again["RCG"][0].T[:20], first["RCG"][0].T[:20]) {
		t.Errorf("seed 0 resumed from iteration 20 measured its first 20 times again")
	}
	if err := os.WriteFile(file, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	resumed, err := SweepNFA(s)
	if err != nil {
		t.Fatal(err)
	}
	same("seed 1 from iteration 10", resumed)
	if g, w := resumed["RCG"][1].T, first["RCG"][1].T; !slices.Equal(g[:at], w[:at]) || slices.Equal(g[at:], w[at:]) {
		t.Errorf("seed 1: times %v, first run %v: want the first %d restored, the rest measured again", g, w, at)
	}

	for name, bad := range map[string]Sweep{
		"every −1": {T: 30, Seeds: 1, Methods: []string{"RCG"}, CheckpointDir: "ck", CheckpointEvery: -1},
	} {
		if _, err := SweepNFA(bad); !errors.Is(err, rcg.ErrBadInput) {
			t.Errorf("%s: %v, want ErrBadInput", name, err)
		}
	}
	m, err := nfa.New(nfa.SyntheticNSSM(30, 1), 30, 21, nfa.Config{Dynamic: true, D: 5, H: 20,
		Moments: nfa.GaussHermite})
	if err != nil {
		t.Fatal(err)
	}
	w := &tracedModel{Model: m, tr: &Trace{}}
	st := append(m.State(), 1.5, -3, 7, 1) // one point: t = 1.5 s, F = −3, 7 evaluations
	if err := w.SetState(st); err != nil || !slices.Equal(w.tr.T, []float64{1.5}) || w.tr.Evals[0] != 7 {
		t.Errorf("SetState of a one-point trace: %v, trace %+v", err, w.tr)
	}
	if !slices.Equal(w.State(), st) {
		t.Errorf("State after SetState differs")
	}
	for name, bad := range map[string][]float64{
		"count":      append(m.State(), 1.5, -3, 7, 2),
		"fraction":   append(m.State(), 1.5, -3, 7, 0.5),
		"NaN":        append(m.State(), math.NaN(), -3, 7, 1),
		"model only": m.State(),
	} {
		if err := w.SetState(bad); !errors.Is(err, rcg.ErrBadInput) {
			t.Errorf("state with a bad %s: %v, want ErrBadInput", name, err)
		}
	}
}
