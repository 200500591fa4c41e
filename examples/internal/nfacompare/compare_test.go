package nfacompare

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/internal/repro/rcgexp"
)

// traceTo returns a run that reached F = 1 at time t (t < 0: never; it then ends at F = 5 after time end) within
// the budget limit.
func traceTo(t, end, limit float64) *rcgexp.Trace {
	if t < 0 {
		return &rcgexp.Trace{T: []float64{end / 2, end}, F: []float64{9, 5}, Evals: []int{2, 4}, Final: 5, Time: end, Limit: limit}
	}
	return &rcgexp.Trace{T: []float64{t / 2, t}, F: []float64{9, 1}, Evals: []int{2, 4}, Final: 1, Time: t, Limit: limit}
}

// TestLines checks the rank-sum tests of the JSON lines on hand-made runs (target F = 2): RCG reached the target at
// 1, 2 and 3 s and missed it once within its 4 s cap; CG missed it in all four runs within its 40 s budget (one run
// stopped on its own at 30 s). At the budgets, RCG's times {1, 2, 3, 4} all precede CG's {40, 40, 40, 40}:
// p = 1/C(8, 4) = 1/70. With RCG's miss ranked last the mid-ranks are 1, 2, 3, 8 | 5.5 ×4, rank sum 14, which 11 of
// the 70 splits reach or undercut ({1, 2, 3, 5.5} four times, {1, 2, 3, 8}, {1, 2, 5.5, 5.5} six times). RCG's own
// line carries no test, and the field names say the direction.
func TestLines(t *testing.T) {
	runs := map[string][]*rcgexp.Trace{
		"RCG": {traceTo(1, 1, 4), traceTo(2, 2, 4), traceTo(3, 3, 4), traceTo(-1, 4, 4)},
		"CG":  {traceTo(-1, 40, 40), traceTo(-1, 30, 40), traceTo(-1, 40, 40), traceTo(-1, 40, 40)},
	}
	// The target is RCG's median final F (1) + tol (1).
	ls := lines([]string{"RCG", "CG"}, runs, 2)
	if len(ls) != 2 || ls[0].Method != "RCG" || ls[1].Method != "CG" || ls[1].Target != 2 {
		t.Fatalf("lines %+v", ls)
	}
	if got := ls[1]; math.Abs(got.PFaster-1.0/70) > 1e-12 || math.Abs(got.PFasterWorst-11.0/70) > 1e-12 {
		t.Errorf("CG: p %v, worst %v; want 1/70, 11/70", got.PFaster, got.PFasterWorst)
	}
	// Final F: RCG {1, 1, 1, 5}, CG {5, 5, 5, 5}; mid-ranks 2 for the 1s and 6 for the 5s. With k of the three 1s in
	// RCG's sample its rank sum is 24 − 4k, against the mean 18: k = 3 (observed, 5 assignments) and k = 0 (5) are
	// as far from it, so p = 10/C(8, 4) = 10/70.
	if got := ls[1].PFinalF; math.Abs(got-10.0/70) > 1e-12 {
		t.Errorf("CG: final-F p %v, want 10/70", got)
	}
	if ls[1].Reached != 0 || ls[1].MedianTTT != 40 || ls[0].Reached != 3 {
		t.Errorf("summaries: CG reached %d, median time-to-target %v; RCG reached %d; want 0, 40, 3", ls[1].Reached,
			ls[1].MedianTTT, ls[0].Reached)
	}
	// Gehan's test: RCG's miss at 4 s is unordered against CG's misses, ordered after RCG's reaches. Mantel scores
	// 7, 5, 3 (reaches), −3 (RCG's miss), −3 ×4 (CG's): RCG's 12 is matched by 7 + 5 + 3 with any of the five −3s,
	// p = 5/70, between p and worst.
	if got := ls[1].GehanFaster; math.Abs(got-5.0/70) > 1e-12 || ls[1].GehanFollowed != 0 {
		t.Errorf("CG: Gehan p %v (followed %v), want 5/70 (none)", got, ls[1].GehanFollowed)
	}
	// CG's 40 s over RCG's median of {1, 2, 3, 4}; no followed runs, so no ratio to them.
	if ls[1].Ratio != 16 || ls[1].RatioFollowed != 0 || ls[0].Ratio != 0 {
		t.Errorf("ratios: CG %v, to followed %v, RCG %v; want 16, 0, 0", ls[1].Ratio, ls[1].RatioFollowed, ls[0].Ratio)
	}
	// A ratio JSON cannot carry is left out rather than failing the line's encoding at the end of a sweep.
	if r0, rnan := ratio(1, 0), ratio(0, 0); r0 != 0 || rnan != 0 {
		t.Errorf("ratio(1, 0) %v, ratio(0, 0) %v; want 0, 0", r0, rnan)
	}
	for i, want := range []bool{false, true} {
		var buf bytes.Buffer
		if err := json.NewEncoder(&buf).Encode(ls[i]); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		_, p := m["ranksum_p_rcg_faster"]
		_, w := m["ranksum_p_rcg_faster_worst"]
		if p != want || w != want || m["method"] != ls[i].Method || m["median_time_to_target_s"] == nil {
			t.Errorf("%s line %s: want the rank-sum fields %v", ls[i].Method, buf.Bytes(), want)
		}
	}
}

// TestLinesFollowed: RCG's capped miss, followed with CG's budget, reaches the target at 10 s; CG reached it once, at
// 5 s. Mid-ranks of the pooled times 1, 2, 3 (RCG), 5 (CG), 10 (RCG), 40 ×3 (CG): RCG's sum is 1 + 2 + 3 + 5 = 11,
// which 2 of the 70 splits reach or undercut ({1, 2, 3, 4}, {1, 2, 3, 5}). The followed runs get a line of their
// own, without a test.
func TestLinesFollowed(t *testing.T) {
	capped := []*rcgexp.Trace{traceTo(1, 1, 4), traceTo(2, 2, 4), traceTo(3, 3, 4), traceTo(-1, 4, 4)}
	runs := map[string][]*rcgexp.Trace{
		"RCG":              capped,
		rcgexp.FollowedRCG: {capped[0], capped[1], capped[2], traceTo(10, 10, 40)},
		"CG":               {traceTo(5, 5, 40), traceTo(-1, 30, 40), traceTo(-1, 40, 40), traceTo(-1, 40, 40)},
	}
	ls := lines([]string{"RCG", "CG"}, runs, 2)
	if len(ls) != 3 || ls[2].Method != rcgexp.FollowedRCG || ls[2].Reached != 4 || ls[2].PFasterFollowed != 0 {
		t.Fatalf("lines %+v", ls)
	}
	if got := ls[1].PFasterFollowed; math.Abs(got-2.0/70) > 1e-12 {
		t.Errorf("CG: p with RCG followed %v, want 2/70", got)
	}
	if got := ls[1].PFaster; math.Abs(got-1.0/70) > 1e-12 {
		t.Errorf("CG: p %v, want 1/70 (RCG's miss at its cap, 4 s)", got)
	}
	// Every bound (40 s) lies above every reached time, so Gehan's test is the rank sum.
	if got := ls[1].GehanFollowed; math.Abs(got-2.0/70) > 1e-12 {
		t.Errorf("CG: Gehan p with RCG followed %v, want 2/70", got)
	}
}

// TestLinesFollowedTies: misses under the same budget tie, whatever their run times. RCG's followed miss stopped on
// its own at 30 s, a CG miss was stopped by the cap at 40.02 s (the cap acts between iterations); both count at the
// 40 s budget. Mid-ranks of 1, 2, 3 (RCG), 5 (CG), 40 ×4 (one RCG, three CG): RCG's sum is 1 + 2 + 3 + 6.5 = 12.5,
// which 5 of the 70 splits reach or undercut ({1, 2, 3, 4} and {1, 2, 3, 6.5} four times).
func TestLinesFollowedTies(t *testing.T) {
	capped := []*rcgexp.Trace{traceTo(1, 1, 4), traceTo(2, 2, 4), traceTo(3, 3, 4), traceTo(-1, 4, 4)}
	over := traceTo(-1, 40.02, 40)
	runs := map[string][]*rcgexp.Trace{
		"RCG":              capped,
		rcgexp.FollowedRCG: {capped[0], capped[1], capped[2], traceTo(-1, 30, 40)},
		"CG":               {traceTo(5, 5, 40), over, traceTo(-1, 40, 40), traceTo(-1, 40, 40)},
	}
	ls := lines([]string{"RCG", "CG"}, runs, 2)
	if got := ls[1].PFasterFollowed; math.Abs(got-5.0/70) > 1e-12 {
		t.Errorf("CG: p with RCG followed %v, want 5/70", got)
	}
}

// TestLinesFollowedOtherBudget: as TestLinesFollowed, but the followed miss ran under a budget of 44 s (another part
// of a split sweep): it and CG's misses at 40 s do not tie, so the followed rank sum is left out. The rank sum of the
// capped runs stays (1/70), and Gehan's test holds: the bounds 40 s (CG ×3) and 44 s (RCG) lie above every reached
// time 1, 2, 3, 5, so it is the rank sum with the four misses tied, RCG's sum 1 + 2 + 3 + 6.5 = 12.5, p = 5/70 as in
// TestLinesFollowedTies.
func TestLinesFollowedOtherBudget(t *testing.T) {
	capped := []*rcgexp.Trace{traceTo(1, 1, 4), traceTo(2, 2, 4), traceTo(3, 3, 4), traceTo(-1, 4, 4)}
	runs := map[string][]*rcgexp.Trace{
		"RCG":              capped,
		rcgexp.FollowedRCG: {capped[0], capped[1], capped[2], traceTo(-1, 44, 44)},
		"CG":               {traceTo(5, 5, 40), traceTo(-1, 30, 40), traceTo(-1, 40, 40), traceTo(-1, 40, 40)},
	}
	ls := lines([]string{"RCG", "CG"}, runs, 2)
	if got := ls[1]; got.PFasterFollowed != 0 || math.Abs(got.PFaster-1.0/70) > 1e-12 ||
		math.Abs(got.GehanFollowed-5.0/70) > 1e-12 {
		t.Errorf("CG: followed rank sum %v (want left out), rank sum %v (want 1/70), Gehan followed %v (want 5/70)",
			got.PFasterFollowed, got.PFaster, got.GehanFollowed)
	}
	runs[rcgexp.FollowedRCG][3] = traceTo(-1, 40, 40)
	if got := lines([]string{"RCG", "CG"}, runs, 2)[1].PFasterFollowed; math.Abs(got-5.0/70) > 1e-12 {
		t.Errorf("CG: followed rank sum %v at one budget, want 5/70", got)
	}
}

// TestRankSumsAllReached: when RCG reached the target in every run, the worst case is the budget case.
func TestRankSumsAllReached(t *testing.T) {
	rcgRuns := []*rcgexp.Trace{traceTo(1, 1, 4), traceTo(2.5, 2.5, 4), traceTo(6, 6, 0)}
	other := []*rcgexp.Trace{traceTo(2, 2, 20), traceTo(-1, 20, 20), traceTo(5, 5, 20)}
	p, w := rankSums(rcgRuns, other, 2)
	// RCG {1, 2.5, 6} against {2, 20, 5}: ranks 1, 3, 5 of 6, rank sum 9, which 7 of the 20 splits reach or undercut.
	if math.Abs(p-7.0/20) > 1e-12 || p != w {
		t.Errorf("p %v, worst %v; want 0.35 for both", p, w)
	}
}

// TestComparePair checks the CG–RG line on hand-made runs: CG ends at F = 1 at 1, 2 and 3 s, RG at F = 3 at 4, 5 and
// 6 s (each run at F = 9 halfway). With ε = 0.5 the pair's target is the worse of the two, 3 + 0.5, which every run
// reaches at its end; CG's times all precede RG's, so p = 1/C(6, 3) = 1/20.
func TestComparePair(t *testing.T) {
	end := func(t, f float64) *rcgexp.Trace {
		return &rcgexp.Trace{T: []float64{t / 2, t}, F: []float64{9, f}, Evals: []int{2, 4}, Final: f, Time: t, Limit: 10}
	}
	runs := map[string][]*rcgexp.Trace{
		"CG": {end(1, 1), end(2, 1), end(3, 1)},
		"RG": {end(4, 3), end(5, 3), end(6, 3)},
	}
	pl := comparePair("CG", "RG", runs, rcgexp.Sweep{T: 100, Eps: 0.5})
	if pl.Pair != "CG-RG" || pl.Target != 3.5 || pl.First.Reached != 3 || pl.Second.Reached != 3 ||
		pl.First.MedianTTT != 2 || pl.Second.MedianTTT != 5 || math.Abs(pl.PFaster-1.0/20) > 1e-12 {
		t.Errorf("pair line %+v", pl)
	}
	// Swapped, the first method is the slower: p = 1.
	if pl := comparePair("RG", "CG", runs, rcgexp.Sweep{T: 100, Eps: 0.5}); math.Abs(pl.PFaster-1) > 1e-12 {
		t.Errorf("swapped: p %v, want 1", pl.PFaster)
	}
}

// TestPairLines: the pairs among the comparators come in the order of comparatorPairs, and only those whose two
// methods both ran: CG–RG alone without Old, Old–RG alone without CG.
func TestPairLines(t *testing.T) {
	tr := []*rcgexp.Trace{traceTo(1, 1, 4)}
	sw := rcgexp.Sweep{T: 100, Eps: 0.5}
	for _, c := range []struct {
		methods []string
		want    []string
	}{
		{[]string{"RCG", "CG", "RG", "Old"}, []string{"CG-RG", "Old-CG", "Old-RG"}},
		{[]string{"RCG", "CG", "RG"}, []string{"CG-RG"}},
		{[]string{"RCG", "RG", "Old"}, []string{"Old-RG"}},
		{[]string{"RCG", "Old"}, nil},
	} {
		runs := map[string][]*rcgexp.Trace{}
		for _, m := range c.methods {
			runs[m] = tr
		}
		var got []string
		for _, pl := range pairLines(runs, sw) {
			got = append(got, pl.Pair)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("methods %v: pairs %v, want %v", c.methods, got, c.want)
		}
	}
}

// TestRunLines checks the per-run lines: every run of each method in the order of the methods, then RCG's followed
// runs, a trace's JSON fields under "run", and each run timed to the target (F = 0 here): RCG seed 0 reached it at
// 2 s after 4 evaluations, RCG seed 1 missed it within its 4 s budget, CG's run reached it only past its 3 s budget
// (a miss at the budget), the followed run reached it at 6 s.
func TestRunLines(t *testing.T) {
	runs := map[string][]*rcgexp.Trace{
		"RCG": {{Method: "RCG", Seed: 0, Final: -3, T: []float64{1, 2}, F: []float64{1, -3}, Evals: []int{2, 4}, Limit: 4},
			{Method: "RCG", Seed: 1, Final: 1, T: []float64{2, 4}, F: []float64{5, 1}, Evals: []int{3, 6}, Limit: 4}},
		"CG": {{Method: "CG", Seed: 0, Final: -1, T: []float64{2, 3.5}, F: []float64{2, -1}, Evals: []int{3, 7},
			Limit: 3}},
		rcgexp.FollowedRCG: {{Method: rcgexp.FollowedRCG, Seed: 1, Final: -2, T: []float64{2, 4, 6}, F: []float64{5, 1, -2},
			Evals: []int{3, 6, 9}, Limit: 30}},
	}
	rl := runLines([]string{"RCG", "CG"}, runs, 0)
	var got []string
	for _, l := range rl {
		got = append(got, fmt.Sprintf("%s/%d/%g/%v/%g/%d", l.Run.Method, l.Run.Seed, l.Run.Final, l.Reached,
			l.TimeToTarget, l.EvalsToTarget))
	}
	want := []string{"RCG/0/-3/true/2/4", "RCG/1/1/false/4/6", "CG/0/-1/false/3/7",
		rcgexp.FollowedRCG + "/1/-2/true/6/9"}
	if !slices.Equal(got, want) {
		t.Errorf("run lines %v, want %v (method/seed/final F/reached/time/evaluations)", got, want)
	}
	rl[0].N = 300
	b, err := json.Marshal(rl[0])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"n":300,"run":{"method":"RCG","seed":0,"final_f":-3`)) ||
		!bytes.Contains(b, []byte(`"target_f":0,"reached":true,"time_to_target_s":2,"evals_to_target":4`)) {
		t.Errorf("run line %s", b)
	}
	if rl := runLines([]string{"RCG"}, map[string][]*rcgexp.Trace{"RCG": runs["RCG"]}, 0); len(rl) != 2 {
		t.Errorf("without followed runs: %d lines, want 2", len(rl))
	}
}

// TestMainBatched runs the batched sweep end to end on the CPU backend for NFA and the NSSM (T = 40, two seeds, RCG
// capped at 5 iterations, CG at 5): it writes the figure, a note that on the CPU the loop is faster, and a progress
// line per run, and refuses to follow RCG's misses. With Options.TickEvery each run also reports while it runs.
func TestMainBatched(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "nfa.svg")
	var log bytes.Buffer
	o := Options{Grid: "40", Methods: "RCG,CG", Seeds: 2, RCGMaxIter: 5, Cap: 1, GH: true, D: 2, H: 4, SVG: svg,
		Batched: true, Backend: "cpu", Log: &log}
	for _, dyn := range []bool{false, true} {
		o.Dynamic = dyn
		log.Reset()
		if err := Main(o); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(log.String()), "\n")
		if len(lines) != 5 || !strings.HasPrefix(lines[0], "note: on the CPU the batched NFA/NSSM runs take") {
			t.Fatalf("dynamic=%v: progress %q, want the CPU note and a line per run", dyn, lines)
		}
		if lines = lines[1:]; !strings.HasPrefix(lines[0], "T=40 RCG seed 0: F ") ||
			!strings.Contains(lines[0], " after 5 iterations, ") || !strings.HasPrefix(lines[3], "T=40 CG seed 1: ") {
			t.Errorf("dynamic=%v: progress %q, want a line per run, RCG's two then CG's", dyn, lines)
		}
		if fi, err := os.Stat(svg); err != nil || fi.Size() == 0 {
			t.Errorf("dynamic=%v: figure: %v", dyn, err)
		}
		os.Remove(svg)
	}
	// With a tick every nanosecond each run reports while it runs, before the line of its end.
	o.TickEvery = time.Nanosecond
	log.Reset()
	if err := Main(o); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	for _, run := range []string{"RCG seed 0", "RCG seed 1", "CG seed 0", "CG seed 1"} {
		running, ended := 0, false
		for _, l := range lines {
			if !strings.HasPrefix(l, "T=40 "+run+": ") {
				continue
			}
			switch {
			case strings.HasSuffix(l, " s (running)") && !ended:
				running++
			case strings.HasSuffix(l, " s (running)"):
				t.Errorf("%s: %q after the run's end", run, l)
			default:
				ended = true
			}
		}
		if running == 0 || !ended {
			t.Errorf("%s: %d progress lines while running, ended %v; log %q", run, running, ended, lines)
		}
	}
	o.TickEvery = 0
	// With -checkpoint each method's batch keeps a file (every 100 rounds: 105 iterations save once), and the same
	// command again resumes from them to the same runs (their lines up to the time).
	o.RCGMaxIter = 105
	ends := func() []string {
		t.Helper()
		log.Reset()
		if err := Main(o); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
			out = append(out, l[:strings.LastIndex(l, ", ")])
		}
		return out
	}
	want := ends()
	o.CheckpointDir = filepath.Join(t.TempDir(), "ck")
	first := ends()
	files, err := filepath.Glob(filepath.Join(o.CheckpointDir, "*batch*.ckpt"))
	if err != nil || len(files) != 2 {
		t.Errorf("-checkpoint with -batched: files %v (%v), want one per method", files, err)
	}
	if again := ends(); !slices.Equal(first, want) || !slices.Equal(again, want) {
		t.Errorf("-checkpoint with -batched: runs %q, resumed %q; without checkpoints %q", first, again, want)
	}
	o.CheckpointDir = ""
	o.Follow = true
	if err := Main(o); !errors.Is(err, rcg.ErrBadInput) {
		t.Errorf("batched -follow: error %v, want ErrBadInput", err)
	}
}

// targetFlag: -target sets a finite F; unset it leaves the target to RCG's runs (nil); a value that is not a finite
// number is refused by the flag set, naming the flag.
func TestTargetFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want float64 // NaN: stays nil
		bad  bool
	}{
		{nil, math.NaN(), false},
		{[]string{"-target", "-6350.6060295213"}, -6350.6060295213, false},
		{[]string{"-target=12"}, 12, false},
		{[]string{"-target", "NaN"}, 0, true},
		{[]string{"-target", "-Inf"}, 0, true},
		{[]string{"-target", "low"}, 0, true},
	} {
		fs := flag.NewFlagSet("rcg-nssm", flag.ContinueOnError)
		var out bytes.Buffer
		fs.SetOutput(&out)
		var target *float64
		targetFlag(fs, &target)
		err := fs.Parse(c.args)
		switch {
		case c.bad:
			if err == nil || !strings.Contains(err.Error(), "-target") {
				t.Errorf("%q: error %v, want one naming -target", c.args, err)
			}
		case err != nil:
			t.Errorf("%q: %v", c.args, err)
		case math.IsNaN(c.want) && target != nil:
			t.Errorf("%q: target %v, want none", c.args, *target)
		case !math.IsNaN(c.want) && (target == nil || *target != c.want):
			t.Errorf("%q: target %v, want %v", c.args, target, c.want)
		}
	}
}
