package rcgexp

import "testing"

// TimeOrBound: the first time F ≤ target, else the budget or, without one, the whole run (a lower bound), checked
// on a hand-made trace.
func TestTimeOrBound(t *testing.T) {
	tr := &Trace{T: []float64{1, 2, 3}, F: []float64{5, 3, 1}, Evals: []int{2, 4, 6}, Time: 3.5}
	if a, e, ok := tr.TimeOrBound(3); a != 2 || e != 4 || !ok {
		t.Errorf("target 3: %v, %v, %v; want 2, 4, true", a, e, ok)
	}
	if a, e, ok := tr.TimeOrBound(0); a != 3.5 || e != 6 || ok {
		t.Errorf("target 0: %v, %v, %v; want 3.5, 6, false", a, e, ok)
	}
	// A run with a budget of 10 s that stopped on its own after 3.5 s short of the target never reaches it.
	tr.Limit = 10
	if a, e, ok := tr.TimeOrBound(0); a != 10 || e != 6 || ok {
		t.Errorf("target 0 with a 10 s budget: %v, %v, %v; want 10, 6, false", a, e, ok)
	}
	if a, _, ok := tr.TimeOrBound(3); a != 2 || !ok {
		t.Errorf("target 3 with a budget: %v, %v; want 2, true", a, ok)
	}
	// A run the cap stopped after its budget (the cap acts between iterations) counts at the budget, so that it ties
	// with the other misses under the same budget.
	tr.Limit, tr.Time = 3.2, 3.5
	if a, _, ok := tr.TimeOrBound(0); a != 3.2 || ok {
		t.Errorf("target 0, stopped at 3.5 s by a 3.2 s cap: %v, %v; want 3.2, false", a, ok)
	}
	// Reached only in the iteration that went past the budget (at 3 s, budget 2.5 s): a miss at the budget too.
	tr.Limit = 2.5
	if a, e, ok := tr.TimeOrBound(1); a != 2.5 || e != 6 || ok {
		t.Errorf("target 1 reached at 3 s past a 2.5 s budget: %v, %v, %v; want 2.5, 6, false", a, e, ok)
	}
}
