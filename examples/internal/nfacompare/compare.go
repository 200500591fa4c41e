// Package nfacompare is the size sweep shared by examples/rcg-nssm and examples/rcg-nfa.
package nfacompare

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/geovb/geovb/backend"
	rcgplot "github.com/geovb/geovb/examples/internal/rcgplot"
	"github.com/geovb/geovb/examples/internal/svgplot"
	"github.com/geovb/geovb/internal/repro/rcgexp"
	"github.com/geovb/geovb/models/nfa"
)

// Options are the flags both examples share.
type Options struct {
	Dynamic       bool   // NSSM instead of NFA
	Grid, Methods string // comma-separated data sizes and methods (RCG first)
	Seeds         int    // initialisations per size and method
	FirstSeed     int    // the first initialisation's seed (rcgexp.Sweep.FirstSeed)
	// Target, when set, is the level all methods are timed to, fixed in advance (rcgexp.Sweep.FixedTarget), instead of
	// RCG's median final F + ε: sweeps over parts of the seeds then share it and can be pooled.
	Target       *float64
	RCGCap       time.Duration // CPU-time cap of each RCG run
	RCGMaxIter   int           // iteration cap of each RCG run (0: none); a target that is the same on every machine
	Cap          float64       // the others' cap, × RCG's median run time
	GH           bool          // Gauss–Hermite moments instead of Taylor
	D, H         int           // state dimension and hidden units (0: 5 and 20)
	Eps          float64       // convergence threshold (0: 1e-5·T/80)
	Follow       bool          // rerun RCG's capped misses with the others' budget (rcgexp.Sweep.FollowRCG)
	ARD          bool          // ARD priors of the weight-matrix columns (nfa.Config.ARD)
	Hierarchical bool          // hierarchical priors (nfa.Config.Hierarchical)
	HyperDelay   int           // iterations before the ARD and hierarchical priors adapt (nfa.Config.HyperDelay)
	Runs         bool          // also a JSON line per run (runLines): seed, final F, iterations, stop, time-to-target
	SVG          string        // figure path
	// Batched runs each method's initialisations as one batch on the backend called Backend (rcgexp.SweepNFABatched;
	// "" takes $GEOVB_BACKEND, else auto): times are then the batch's wall clock, and the others' caps iterations.
	Batched bool
	Backend string
	Log     io.Writer // a progress line per finished run (nil: none)
	// TickEvery adds a progress line to Log each time a running run's clock passes another multiple of it (0: none).
	TickEvery time.Duration
	// CheckpointDir keeps a checkpoint of each run there, from which the same sweep started again resumes
	// (rcgexp.Sweep.CheckpointDir; "": none).
	CheckpointDir string
}

// Main runs rcgexp.SweepNFA with o.Methods (RCG first: it sets the target and the others' caps) over the sizes of
// o.Grid and writes JSON lines (one per size and method, see line) to stdout and an SVG to o.SVG.
func Main(o Options) error {
	methods := strings.Split(o.Methods, ",")
	for i := range methods {
		methods[i] = strings.TrimSpace(methods[i])
	}
	if len(methods) == 0 || methods[0] != "RCG" {
		return fmt.Errorf("methods %q: RCG must come first", o.Methods)
	}
	mo := nfa.Taylor
	if o.GH {
		mo = nfa.GaussHermite
	}
	series := map[string]*svgplot.Curve{}
	for _, m := range methods {
		series[m] = &svgplot.Curve{Name: m, Color: rcgplot.Colors[m]}
	}
	var be backend.Backend
	if o.Batched {
		var err error
		if be, err = rcgplot.OpenBackend(o.Backend, os.Stderr); err != nil {
			return err
		}
		defer be.Close()
		if be.Info().Name == "cpu" && o.Log != nil {
			fmt.Fprintln(o.Log, "note: on the CPU the batched NFA/NSSM runs take two to three times as long as the "+
				"same runs without -batched (docs/benchmarks.md, BenchmarkNFABatch8); the batch is meant for GPUs")
		}
	}
	enc := json.NewEncoder(os.Stdout)
	for _, f := range strings.Split(o.Grid, ",") {
		T, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("data size %q: %w", f, err)
		}
		sw := rcgexp.Sweep{Dynamic: o.Dynamic, T: T, Seeds: o.Seeds, FirstSeed: o.FirstSeed, FixedTarget: o.Target,
			D: o.D, H: o.H, Moments: mo, Eps: o.Eps, Methods: methods, RCGCap: o.RCGCap, RCGMaxIter: o.RCGMaxIter,
			CapFactor: o.Cap, FollowRCG: o.Follow, ARD: o.ARD, Hierarchical: o.Hierarchical, HyperDelay: o.HyperDelay,
			CheckpointDir: o.CheckpointDir}
		if o.Log != nil {
			sw.Progress = func(m string, tr *rcgexp.Trace) {
				why := tr.Reason
				if tr.ConvergedBy != "" {
					why += ": " + tr.ConvergedBy
				}
				fmt.Fprintf(o.Log, "T=%d %s seed %d: F %.6g after %d iterations, %.1f s (%s)\n", T, m, tr.Seed,
					tr.Final, tr.Iters, tr.Time, why)
			}
			sw.TickEvery = o.TickEvery
			sw.Tick = func(m string, tr *rcgexp.Trace) {
				k := len(tr.F) - 1
				fmt.Fprintf(o.Log, "T=%d %s seed %d: F %.6g after %d iterations, %.1f s (running)\n", T, m, tr.Seed,
					tr.F[k], k+1, tr.T[k])
			}
		}
		var runs map[string][]*rcgexp.Trace
		if be != nil {
			runs, err = rcgexp.SweepNFABatched(sw, be)
		} else {
			runs, err = rcgexp.SweepNFA(sw)
		}
		if err != nil {
			return err
		}
		target := sw.RCGTarget(runs["RCG"])
		for _, l := range lines(methods, runs, target) {
			l.N = T
			if be != nil {
				l.Batched = be.Info().Name
			}
			if err := enc.Encode(l); err != nil {
				return err
			}
			if l.Method == rcgexp.FollowedRCG {
				continue
			}
			series[l.Method].X = append(series[l.Method].X, float64(T))
			series[l.Method].Y = append(series[l.Method].Y, l.MedianTTT)
		}
		for _, pl := range pairLines(runs, sw) {
			pl.N = T
			if err := enc.Encode(pl); err != nil {
				return err
			}
		}
		if !o.Runs {
			continue
		}
		for _, rl := range runLines(methods, runs, target) {
			rl.N = T
			if err := enc.Encode(rl); err != nil {
				return err
			}
		}
	}
	title := "NFA-SYN: median time to RCG's median final F"
	if o.Dynamic {
		title = "NSSM-SYN: median time to RCG's median final F"
	}
	ylabel := "CPU time (s)"
	if be != nil {
		ylabel = "wall time in a batch of the runs (s)"
	}
	p := svgplot.Chart{Title: title, XLabel: "samples", YLabel: ylabel, LogY: true}
	for _, m := range methods {
		p.Curves = append(p.Curves, *series[m])
	}
	return p.WriteFile(o.SVG)
}

// line is the JSON line of one (size, method): the summary and, for a method other than RCG, the rank-sum tests of
// RCG's times-to-target against the method's (rankSums), and with RCG's misses followed (-follow), the test
// on the followed runs' times, left out when their misses and the method's ran under different budgets (oneBudget).
type line struct {
	rcgplot.Summary
	// Ratio is the method's median time-to-target over RCG's, misses at their budget or, for RCG's capped runs,
	// their run time (gate 19's form); RatioFollowed is over RCG's followed runs' median. Either is a
	// lower bound on the ratio of the true times when the method's median run missed the target (lower_bound) and
	// RCG's did not.
	Ratio           float64 `json:"ttt_ratio_to_rcg,omitempty"`
	RatioFollowed   float64 `json:"ttt_ratio_to_rcg_followed,omitempty"`
	PFaster         float64 `json:"ranksum_p_rcg_faster,omitempty"`
	PFasterWorst    float64 `json:"ranksum_p_rcg_faster_worst,omitempty"`
	PFasterFollowed float64 `json:"ranksum_p_rcg_followed_faster,omitempty"`
	// GehanFaster and GehanFollowed are the same one-sided tests with every miss a lower bound at its budget, each
	// pair of runs counting only when the data fix which reached the target first (rcgexp.GehanLess). They need no
	// common budget, so they hold for pooled split sweeps (Pool), whose parts' budgets differ; within one sweep,
	// where every miss of the followed runs and the method's counts at the one budget, above every time that reached
	// the target, GehanFollowed is PFasterFollowed.
	GehanFaster   float64 `json:"gehan_p_rcg_faster,omitempty"`
	GehanFollowed float64 `json:"gehan_p_rcg_followed_faster,omitempty"`
	// PFinalF is the two-sided rank-sum p-value of RCG's final F against the method's (§6.6: the paper found no
	// significant differences between the optima the methods reach). A capped run's final F is where the cap
	// stopped it.
	PFinalF float64 `json:"ranksum_p_final_f,omitempty"`
	// Batched names the backend of a batched sweep (Options.Batched): the times are the batch's wall clock.
	Batched string `json:"batched_on,omitempty"`
}

// lines summarises the runs of each method against target (RCG's median final F + ε, from its capped runs, unless
// fixed by Options.Target), then RCG's followed runs when there are any, and adds the ratios to RCG and the rank-sum
// tests against RCG to the lines of the other methods. The rank sum of RCG's followed runs is left out when the
// budgets of their misses and the method's differ (oneBudget), as in pooled split sweeps (Pool).
func lines(methods []string, runs map[string][]*rcgexp.Trace, target float64) []line {
	followed := runs[rcgexp.FollowedRCG]
	base := rcgplot.Summarise("RCG", runs["RCG"], target)
	var fol rcgplot.Summary
	if followed != nil {
		fol = rcgplot.Summarise(rcgexp.FollowedRCG, followed, target)
	}
	var out []line
	for _, m := range methods {
		l := line{Summary: rcgplot.Summarise(m, runs[m], target)}
		if m != "RCG" {
			l.Ratio = ratio(l.MedianTTT, base.MedianTTT)
			l.PFaster, l.PFasterWorst = rankSums(runs["RCG"], runs[m], target)
			l.GehanFaster = rcgexp.GehanLess(timeObs(runs["RCG"], target), timeObs(runs[m], target))
			l.PFinalF = rcgexp.RankSum(finals(runs["RCG"]), finals(runs[m]))
			if followed != nil {
				l.RatioFollowed = ratio(l.MedianTTT, fol.MedianTTT)
				if oneBudget(target, followed, runs[m]) {
					l.PFasterFollowed, _ = rankSums(followed, runs[m], target)
				}
				l.GehanFollowed = rcgexp.GehanLess(timeObs(followed, target), timeObs(runs[m], target))
			}
		}
		out = append(out, l)
	}
	if followed != nil {
		out = append(out, line{Summary: fol})
	}
	return out
}

// runLine is the JSON line of one run (Options.Runs), so that the spread of the runs' optima can be read and the
// runs of sweeps over parts of the seeds (Options.FirstSeed, a fixed Options.Target) pooled: Reached says whether
// the run reached Target, at TimeToTarget seconds after EvalsToTarget evaluations; a miss has its budget there
// instead, or its whole run time when it had none (an iteration-capped run), and its whole evaluation count
// (rcgexp.Trace.TimeOrBound).
type runLine struct {
	N   int           `json:"n"`
	Run *rcgexp.Trace `json:"run"`
	// Group is the summary line the run belongs to: its method, or rcgexp.FollowedRCG for RCG's followed runs.
	Group         string  `json:"group"`
	Target        float64 `json:"target_f"`
	Reached       bool    `json:"reached"`
	TimeToTarget  float64 `json:"time_to_target_s"`
	EvalsToTarget int     `json:"evals_to_target"`
}

// runLines lists the runs of each method in the order of methods, each method's by seed, then RCG's followed runs
// when there are any, each timed to target.
func runLines(methods []string, runs map[string][]*rcgexp.Trace, target float64) []runLine {
	var out []runLine
	for _, m := range append(methods[:len(methods):len(methods)], rcgexp.FollowedRCG) { // a copy: methods stays as it is
		for _, tr := range runs[m] {
			t, e, ok := tr.TimeOrBound(target)
			out = append(out, runLine{Run: tr, Group: m, Target: target, Reached: ok, TimeToTarget: t,
				EvalsToTarget: e})
		}
	}
	return out
}

// ratio returns a/b, or 0 (left out of the line) when that is not a finite number, which JSON cannot carry.
func ratio(a, b float64) float64 {
	r := a / b
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return 0
	}
	return r
}

// oneBudget reports whether every run of the groups that missed target under a time budget had the same one. A
// sweep gives RCG's followed runs and the other methods one budget (-cap × RCG's median run time), so that their
// misses tie; the parts of a split sweep each have their own, and then misses would be ordered by their budgets,
// which says nothing about their times.
func oneBudget(target float64, groups ...[]*rcgexp.Trace) bool {
	budget := 0.0
	for _, trs := range groups {
		for _, tr := range trs {
			if _, _, reached := tr.TimeOrBound(target); !reached && tr.Limit > 0 {
				if budget > 0 && tr.Limit != budget {
					return false
				}
				budget = tr.Limit
			}
		}
	}
	return true
}

// timeObs returns each run's time-to-target, or for a miss the bound it counts at (rcgexp.Trace.TimeOrBound).
func timeObs(runs []*rcgexp.Trace, target float64) []rcgexp.TimeObs {
	out := make([]rcgexp.TimeObs, len(runs))
	for i, tr := range runs {
		t, _, ok := tr.TimeOrBound(target)
		out[i] = rcgexp.TimeObs{T: t, Reached: ok}
	}
	return out
}

// finals returns the final F of each run.
func finals(runs []*rcgexp.Trace) []float64 {
	out := make([]float64, len(runs))
	for i, tr := range runs {
		out[i] = tr.Final
	}
	return out
}

// rankSums returns the exact one-sided Wilcoxon rank-sum p-value (rcgexp.RankSumLess) of RCG's times-to-target
// against other's for the alternative "RCG reaches the target sooner" (the paper's claim for Fig. 9): p with every run that missed the
// target counted at its budget (rcgexp.Trace.TimeOrBound), worst with RCG's missed runs ranked after every run of
// other instead (NaN when either has no runs).
//
// A missed run's time-to-target is unknown but at least its budget: the cap stopped it first, or it stopped on its
// own at a worse F and never reaches the target. The test uses ranks only, that is, for each pair of an RCG run and
// an other run, which reached the target first, so counting a miss at its budget matters only where it leaves that
// order open:
//
//   - A miss of other at budget B against an RCG time below B: the RCG run was first whatever the true time ≥ B, so
//     when every miss of other lies above every RCG value — the others' budget is -cap × RCG's median run time,
//     above RCG's cap — the ranks are those of the true times in every RCG–other pair. A miss of other below an RCG
//     value counts as first while the truth may be the reverse, which can only raise p (conservative).
//   - A miss of RCG at its budget b (RCG's cap) against a value of other above b: counted as RCG first, which holds
//     only if that RCG run would have reached the target before it. This is the one order that can make p too small.
//
// So p is the p-value of the true times when RCG reached the target in every run (and every miss of other lies
// above every RCG time); when RCG missed some runs, p assumes that those runs would have come first against the
// values of other above RCG's cap. worst drops that assumption: it ranks RCG's misses last, as if they never reached
// the target — the least favourable order the data allow. With every miss of other above every RCG value, the
// p-value of the true times lies between p and worst (the one-sided p-value only grows as RCG values move up past
// values of other). Misses under the same budget tie (mid-ranks): TimeOrBound gives the budget itself, not a cap's
// overshoot, since their order is unknown — as with RCG's followed runs, whose budget is the others'. The target
// being RCG's median final F, about half of RCG's runs can miss it by construction.
func rankSums(rcgRuns, other []*rcgexp.Trace, target float64) (p, worst float64) {
	var a, aw, b []float64
	for _, o := range timeObs(rcgRuns, target) {
		a = append(a, o.T)
		if !o.Reached {
			o.T = math.Inf(1)
		}
		aw = append(aw, o.T)
	}
	for _, o := range timeObs(other, target) {
		b = append(b, o.T)
	}
	return rcgexp.RankSumLess(a, b), rcgexp.RankSumLess(aw, b)
}

// comparatorPairs are the orders among RCG's comparators that the paper states, each pair with the method it finds
// faster first: CG before RG on NFA (§6.8, gate 20), Old before RG and CG on the NSSM (§6.6).
var comparatorPairs = [][2]string{{"CG", "RG"}, {"Old", "CG"}, {"Old", "RG"}}

// pairLine compares two comparators with each other at a level both reach: the worse of their targets (median
// final F + ε), so that at least half of the runs of each reach it. RCG's target is often out of reach for both
// within their budget, so this is where the paper's orders among the comparators (comparatorPairs) can be seen.
type pairLine struct {
	N      int             `json:"n"`
	Pair   string          `json:"pair"`
	Target float64         `json:"pair_target_f"`
	First  rcgplot.Summary `json:"first"`
	Second rcgplot.Summary `json:"second"`
	// PFaster is the one-sided rank-sum p-value for "first reaches the pair's target sooner" (misses at their
	// budget: the two share the budget, so misses tie).
	PFaster float64 `json:"ranksum_p_first_faster"`
}

// pairLines returns the pairLine of each of comparatorPairs whose two methods both ran.
func pairLines(runs map[string][]*rcgexp.Trace, sw rcgexp.Sweep) []pairLine {
	var out []pairLine
	for _, pr := range comparatorPairs {
		if runs[pr[0]] != nil && runs[pr[1]] != nil {
			out = append(out, comparePair(pr[0], pr[1], runs, sw))
		}
	}
	return out
}

// comparePair builds the pairLine of methods a and b.
func comparePair(a, b string, runs map[string][]*rcgexp.Trace, sw rcgexp.Sweep) pairLine {
	target := max(sw.Target(runs[a]), sw.Target(runs[b]))
	p, _ := rankSums(runs[a], runs[b], target) // misses at their budget
	return pairLine{Pair: a + "-" + b, Target: target, First: rcgplot.Summarise(a, runs[a], target),
		Second: rcgplot.Summarise(b, runs[b], target), PFaster: p}
}
