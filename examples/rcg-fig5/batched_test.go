package main

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/models/mog"
)

// TestBatchedLines checks -batched against the host sweep on a small mixture (N = 200, R = 0.3, K = 5, four
// initialisations): RCG's line has the median final F and the median evaluations to target of four host
// rcg.RunMoG runs (final F within 1e-9 relative; evaluation counts equal, since the batched driver repeats the host's
// decisions), and CG's line counts its runs against RCG's target with CG's iteration cap. Unknown methods, and RCG
// not first, are errors before anything runs.
func TestBatchedLines(t *testing.T) {
	const N, seeds = 200, 4
	m, err := mog.New(mog.Synthetic(0.3, N, 0.03, 2024), N, 2, 5, mog.DefaultPrior(2), mog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tol := 1e-7 * N
	var buf bytes.Buffer
	if err := runBatched(&buf, "cpu", m, seeds, []string{"RCG", "CG"}, tol, 3); err != nil {
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
	if len(lines) != 2 || lines[0].Method != "RCG" || lines[1].Method != "CG" {
		t.Fatalf("lines %+v", lines)
	}
	var fin []float64
	var host []*rcg.Trace
	for seed := range seeds {
		x0, err := mog.Init(m, uint64(seed))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := rcg.RunMoG(m, x0, "RCG", tol, 0)
		if err != nil {
			t.Fatal(err)
		}
		host, fin = append(host, tr), append(fin, tr.Final)
	}
	target := rcg.Median(fin) + tol
	var ev []float64
	for _, tr := range host {
		_, e, ok := tr.TimeOrBound(target)
		if !ok {
			e = tr.Evals[len(tr.Evals)-1]
		}
		ev = append(ev, float64(e))
	}
	r := lines[0]
	t.Logf("RCG: batched median final F %.10f, evaluations to target %v; host %.10f, %v", r.MedianFinalF,
		r.MedianEvalsTT, rcg.Median(fin), rcg.Median(ev))
	if !(math.Abs(r.MedianFinalF-rcg.Median(fin)) <= 1e-9*math.Abs(rcg.Median(fin))) || r.MedianEvalsTT != rcg.Median(ev) {
		t.Errorf("RCG line %+v; host median final F %v, evaluations to target %v", r, rcg.Median(fin), rcg.Median(ev))
	}
	if c := lines[1]; c.Target != r.Target || c.MaxIter != max(1, int(3*r.MedianIters)) || c.Runs != seeds {
		t.Errorf("CG line %+v: want RCG's target %v and cap %d", c, r.Target, int(3*r.MedianIters))
	}
	for _, ms := range [][]string{{"RCG", "VBEM"}, {"CG", "RCG"}, nil} {
		if err := runBatched(&buf, "cpu", m, seeds, ms, tol, 3); err == nil {
			t.Errorf("methods %v: no error", ms)
		}
	}
}
