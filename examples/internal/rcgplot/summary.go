// Package rcgplot holds what the paper 004 examples share: the JSON-lines summary of time-to-target per method, the
// synthetic-mixture sweep behind the size and overlap figures, its batched runs (RunBatch, StatsOf), the -methods
// list and the backend of the batched runs, and one colour per method, so that the figures (drawn with
// examples/internal/svgplot) show a method alike throughout.
package rcgplot

import (
	"github.com/geovb/geovb/internal/repro/rcgexp"
)

// Summary is the JSON line an example prints per method (and setting).
type Summary struct {
	Method string `json:"method"`
	// Setting fields (zero when unused).
	R    float64 `json:"r,omitempty"`
	N    int     `json:"n,omitempty"`
	Runs int     `json:"runs"`
	// Target is the free energy the time-to-target refers to.
	Target float64 `json:"target_f"`
	// Reached counts the runs that reached Target; the medians count the others with their budget, or their whole
	// run when they had none (rcgexp.Trace.TimeOrBound: a lower bound).
	Reached         int     `json:"reached"`
	MedianTTT       float64 `json:"median_time_to_target_s"`
	MedianEvalsTTT  float64 `json:"median_evals_to_target"`
	MedianTime      float64 `json:"median_time_s"`
	MedianFinalF    float64 `json:"median_final_f"`
	MedianIters     float64 `json:"median_iters"`
	TimeToTargetInf bool    `json:"lower_bound"` // true when the median run did not reach the target
	// Reasons counts the runs by why they stopped (run.StopReason names; a run ended by its time cap is
	// "cancelled"), so that a run that ended early at a poor F can be told from one that ran out of time.
	Reasons map[string]int `json:"stop_reasons"`
}

// Summarise computes the medians over runs.
func Summarise(method string, runs []*rcgexp.Trace, target float64) Summary {
	s := Summary{Method: method, Runs: len(runs), Target: target, Reasons: map[string]int{}}
	var ttt, ev, tm, fin, it []float64
	for _, tr := range runs {
		a, e, ok := tr.TimeOrBound(target)
		if ok {
			s.Reached++
		}
		ttt = append(ttt, a)
		ev = append(ev, float64(e))
		tm = append(tm, tr.Time)
		fin = append(fin, tr.Final)
		it = append(it, float64(tr.Iters))
		s.Reasons[tr.Reason]++
	}
	s.MedianTTT, s.MedianEvalsTTT = rcgexp.Median(ttt), rcgexp.Median(ev)
	s.MedianTime, s.MedianFinalF, s.MedianIters = rcgexp.Median(tm), rcgexp.Median(fin), rcgexp.Median(it)
	s.TimeToTargetInf = 2*s.Reached <= len(runs)
	return s
}
