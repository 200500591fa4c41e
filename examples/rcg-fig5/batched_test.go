package main

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/geovb/geovb/internal/repro/rcgexp"
	"github.com/geovb/geovb/models/mog"
)

// TestBatchedLines checks -batched against the host sweep on a small mixture (N = 200, R = 0.3, K = 5, four
// initialisations): the lines of RCG and VB-EM have the median final F and the median evaluations to RCG's target
// of four host rcgexp.RunMoG runs (final F within 1e-9 relative; evaluation counts equal, since the batched drivers
// repeat the host's decisions), and CG's line counts its runs against RCG's target with CG's iteration cap. Unknown
// methods, and RCG not first, are errors before anything runs.
func TestBatchedLines(t *testing.T) {
	const N, seeds = 200, 4
	m, err := mog.New(mog.Synthetic(0.3, N, 0.03, 2024), N, 2, 5, mog.DefaultPrior(2), mog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tol := 1e-7 * N
	var buf bytes.Buffer
	if err := runBatched(&buf, "cpu", m, seeds, []string{"RCG", "CG", "VBEM"}, tol, 3); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&buf)
	var lines []batchLine
	for dec.More() {
		var l batchLine
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if len(lines) != 3 || lines[0].Method != "RCG" || lines[1].Method != "CG" || lines[2].Method != "VBEM" {
		t.Fatalf("lines %+v", lines)
	}
	// host returns the host runs' median final F and their median evaluations to target (NaN: their own median
	// final F + tol).
	host := func(meth string, target float64) (float64, float64) {
		var fin []float64
		var runs []*rcgexp.Trace
		for seed := range seeds {
			x0, err := mog.Init(m, uint64(seed))
			if err != nil {
				t.Fatal(err)
			}
			tr, err := rcgexp.RunMoG(m, x0, meth, tol, 0)
			if err != nil {
				t.Fatal(err)
			}
			runs, fin = append(runs, tr), append(fin, tr.Final)
		}
		if math.IsNaN(target) {
			target = rcgexp.Median(fin) + tol
		}
		var ev []float64
		for _, tr := range runs {
			_, e, ok := tr.TimeOrBound(target)
			if !ok {
				e = tr.Evals[len(tr.Evals)-1]
			}
			ev = append(ev, float64(e))
		}
		return rcgexp.Median(fin), rcgexp.Median(ev)
	}
	r := lines[0]
	for _, l := range []batchLine{r, lines[2]} {
		fin, ev := host(l.Method, math.NaN())
		if l.Method != "RCG" {
			_, ev = host(l.Method, r.Target)
		}
		t.Logf("%s: batched median final F %.10f, evaluations to target %v; host %.10f, %v", l.Method,
			l.MedianFinalF, l.MedianEvalsTT, fin, ev)
		if !(math.Abs(l.MedianFinalF-fin) <= 1e-9*math.Abs(fin)) || l.MedianEvalsTT != ev || l.Target != r.Target {
			t.Errorf("%s line %+v; host median final F %v, evaluations to target %v", l.Method, l, fin, ev)
		}
	}
	if c := lines[1]; c.Target != r.Target || c.MaxIter != max(1, int(3*r.MedianIters)) || c.Runs != seeds {
		t.Errorf("CG line %+v: want RCG's target %v and cap %d", c, r.Target, int(3*r.MedianIters))
	}
	for _, ms := range [][]string{{"RCG", "Newton"}, {"CG", "RCG"}, nil} {
		if err := runBatched(&buf, "cpu", m, seeds, ms, tol, 3); err == nil {
			t.Errorf("methods %v: no error", ms)
		}
	}
}
