// Package rcgexp holds the experiments of paper 004 (Honkela et al. 2010) around algos/rcg: the drivers of the
// mixture (RunMoG, RunMoGBatch) and NFA/NSSM runs (RunNFA, SweepNFA, SweepNFABatched), their traces, the rank tests
// of the time-to-target summaries, and the reproductions and tests of the optimisers on models/mog and models/nfa.
// See docs/rcg.md.
package rcgexp

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/models/mog"
)

// Trace is the F(t) history of one run in the experiments: MoG (§6.2–6.5) and NFA/NSSM (§6.6–6.8).
type Trace struct {
	Method string    `json:"method"`
	Seed   int       `json:"seed"`
	T      []float64 `json:"-"` // seconds of process CPU time since the start, per iteration
	F      []float64 `json:"-"` // free energy after each iteration
	Evals  []int     `json:"-"` // cumulative F + gradient evaluations
	Final  float64   `json:"final_f"`
	Iters  int       `json:"iters"`
	Reason string    `json:"reason"`
	// ConvergedBy names the test that ended a converged run of a gradient method (Result.ConvergedBy).
	ConvergedBy string  `json:"converged_by,omitempty"`
	Time        float64 `json:"time_s"`  // total run time (process CPU seconds)
	Limit       float64 `json:"limit_s"` // the run's CPU-time budget in seconds (0: none)
}

// TimeToTarget returns the first time (seconds) and evaluation count at which the run reached F ≤ target, or +Inf
// and −1 when it never did.
func (tr *Trace) TimeToTarget(target float64) (float64, int) {
	for i, f := range tr.F {
		if f <= target {
			return tr.T[i], tr.Evals[i]
		}
	}
	return math.Inf(1), -1
}

// TimeOrBound returns TimeToTarget and reached = true when the run reached F ≤ target; otherwise a lower bound on
// its time-to-target — its budget (Limit) when it had one, whether the cap stopped it or it stopped earlier at a
// worse F (and so never reaches the target), else its whole run time — with its evaluation count, and reached =
// false. The budget itself, not the run time past it where the cap stopped the run (a cap acts between iterations),
// so that misses under the same budget tie: which of them would have reached the target first is unknown. For the
// same reason a run that reached the target only in the iteration that took it past its budget counts as a miss at
// the budget.
func (tr *Trace) TimeOrBound(target float64) (float64, int, bool) {
	a, e := tr.TimeToTarget(target)
	if !math.IsInf(a, 1) && (tr.Limit <= 0 || a <= tr.Limit) {
		return a, e, true
	}
	n := 0
	if len(tr.Evals) > 0 {
		n = tr.Evals[len(tr.Evals)-1]
	}
	if tr.Limit > 0 {
		return tr.Limit, n, false
	}
	return tr.Time, n, false
}

// MoGMethods are the methods RunMoG accepts.
var MoGMethods = []string{"RCG", "RG", "CG", "GD", "VBEM"}

// RunMoG runs one method on the mixture m from x0 (see mog.Init) with the |ΔF| < tol rule over 2 iterations and a
// cap of limit process CPU time (0: none). RCG and CG use the √n restart of §6.2; all gradient methods run the
// VB-EM updates inside the line search (the collapsed objective), as App. B.3 does for RCG (an assumption for the comparators). Times in the trace are
// seconds of process CPU time (run.CPUTime), the paper's measure.
func RunMoG(m *mog.Model, x0 []float64, method string, tol float64, limit time.Duration) (*Trace, error) {
	tr := &Trace{Method: method, Limit: limit.Seconds()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := run.CPUTime()
	rec := func(f, evals float64) {
		el := run.CPUTime() - start
		tr.T = append(tr.T, el.Seconds())
		tr.F = append(tr.F, f)
		tr.Evals = append(tr.Evals, int(evals))
		if limit > 0 && el >= limit {
			cancel() // the loop stops before the next iteration
		}
	}
	ctl := run.Control{Ctx: ctx, MaxIter: 1 << 30}
	var res run.Result
	switch method {
	case "VBEM":
		n := 0.0
		ctl.Recorder = run.Func(func(r run.Record) { n += 2; rec(r.Extra["F"], n) })
		v, err := mog.VBEM(m, x0, mog.VBEMSettings{Tol: tol, Patience: 2}, ctl)
		if v == nil {
			return nil, err
		}
		tr.Final, res = v.F, v.Result
	default:
		s, err := mogSettings(method, tol)
		if err != nil {
			return nil, err
		}
		ctl.Recorder = run.Func(func(r run.Record) { rec(r.Extra["F"], r.Extra["f_evals"]+r.Extra["g_evals"]) })
		s.Control = ctl
		out, err := rcg.Minimize(ctx, mog.NewCollapsed(m), x0, s)
		if out == nil {
			return nil, err
		}
		tr.Final, res, tr.ConvergedBy = out.F, out.Result, out.ConvergedBy.String()
	}
	tr.Iters, tr.Reason, tr.Time = res.Iters, res.Reason.String(), (run.CPUTime() - start).Seconds()
	return tr, nil
}

// mogSettings are RunMoG's settings of the gradient method called name: tolerance tol, the √n restart of §6.2.
func mogSettings(name string, tol float64) (rcg.Settings, error) {
	s := rcg.Settings{Tol: tol, RestartEvery: rcg.SqrtN}
	switch name {
	case "RCG":
		s.Method = rcg.RCG
	case "RG":
		s.Method = rcg.RG
	case "CG":
		s.Method = rcg.CG
	case "GD":
		s.Method = rcg.GD
	default:
		return s, fmt.Errorf("%w: method %q (want one of %v)", rcg.ErrBadInput, name, MoGMethods)
	}
	return s, nil
}

// Median returns the median of xs (+Inf entries sort last); NaN for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	for i := 1; i < len(s); i++ { // insertion sort: small inputs
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// RunMoGBatch is RunMoG for every run of bt at once on its backend: one method ("RCG", "RG", "CG", "GD" through
// MinimizeBatch with RunMoG's settings, "VBEM" through mog.VBEMBatch) from xs[i] with the |ΔF| < tol rule over 2
// iterations and at most maxIter iterations per run (0: the drivers' defaults). record, if not nil, gets run i's F
// and cumulative evaluation count (F and gradient evaluations; VB-EM counts 2 per iteration, as RunMoG) after each
// of its iterations. A batch has no per-run times. VB-EM's results carry F, the final point (log r, m) and the stop
// reason; their evaluation counts are 0.
func RunMoGBatch(ctx context.Context, bt *mog.Batch, xs [][]float64, method string, tol float64, maxIter int,
	record func(i int, F float64, evals int)) ([]rcg.Result, error) {
	if method == "VBEM" {
		var rec func(int, float64)
		if record != nil {
			iters := make([]int, len(xs))
			rec = func(i int, F float64) {
				iters[i]++
				record(i, F, 2*iters[i])
			}
		}
		vs, err := mog.VBEMBatch(bt, xs, mog.VBEMSettings{Tol: tol, Patience: 2}, run.Control{Ctx: ctx, MaxIter: maxIter}, rec)
		if vs == nil {
			return nil, err
		}
		out := make([]rcg.Result, len(vs))
		for i, v := range vs {
			out[i] = rcg.Result{X: append(append([]float64(nil), v.LogR...), v.Mu...), F: v.F, Result: v.Result}
		}
		return out, err
	}
	s, err := mogSettings(method, tol)
	if err != nil {
		return nil, err
	}
	s.Control.MaxIter = maxIter
	if record != nil {
		s.Control.Recorder = run.Func(func(r run.Record) {
			record(r.Run, r.Extra["F"], int(r.Extra["f_evals"]+r.Extra["g_evals"]))
		})
	}
	return rcg.MinimizeBatch(ctx, bt, xs, s)
}
