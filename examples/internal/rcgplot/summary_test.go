package rcgplot

import (
	"testing"

	"github.com/geovb/geovb/internal/repro/rcgexp"
)

// TestSummarise checks the medians, the count of runs that reached the target, the lower-bound flag and the
// stop-reason counts on three hand-made traces.
func TestSummarise(t *testing.T) {
	runs := []*rcgexp.Trace{
		{T: []float64{1, 2, 3}, F: []float64{10, 5, 4}, Evals: []int{2, 4, 6}, Final: 4, Iters: 3, Reason: "converged", Time: 3},
		{T: []float64{1, 2}, F: []float64{9, 4.5}, Evals: []int{3, 6}, Final: 4.5, Iters: 2, Reason: "converged", Time: 2},
		{T: []float64{4, 8}, F: []float64{20, 7}, Evals: []int{5, 9}, Final: 7, Iters: 2, Reason: "cancelled", Time: 8},
	}
	s := Summarise("RCG", runs, 5)
	// Times to F ≤ 5: 2, 2 and (not reached) the whole run, 8.
	if s.Reached != 2 || s.MedianTTT != 2 || s.MedianEvalsTTT != 6 || s.TimeToTargetInf {
		t.Errorf("reached %d, median time %v, evals %v, lower bound %v; want 2, 2, 6, false", s.Reached, s.MedianTTT,
			s.MedianEvalsTTT, s.TimeToTargetInf)
	}
	if s.MedianFinalF != 4.5 || s.MedianTime != 3 || s.MedianIters != 2 {
		t.Errorf("median final F %v, time %v, iterations %v; want 4.5, 3, 2", s.MedianFinalF, s.MedianTime, s.MedianIters)
	}
	if len(s.Reasons) != 2 || s.Reasons["converged"] != 2 || s.Reasons["cancelled"] != 1 {
		t.Errorf("stop reasons %v, want converged 2, cancelled 1", s.Reasons)
	}
	if s = Summarise("RG", runs[2:], 5); !s.TimeToTargetInf || s.Reached != 0 || s.MedianTTT != 8 {
		t.Errorf("a run that never reached: %+v", s)
	}
	// With a 20 s budget the run that stopped at 8 s short of the target counts with its budget.
	runs[2].Limit = 20
	if s = Summarise("RG", runs[2:], 5); s.MedianTTT != 20 || s.MedianTime != 8 {
		t.Errorf("a run with a budget that never reached: median time-to-target %v, time %v; want 20, 8", s.MedianTTT, s.MedianTime)
	}
}
