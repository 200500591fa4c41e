package main

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"testing"

	"github.com/geovb/geovb/internal/repro/rcgexp"
	"github.com/geovb/geovb/models/mog"
)

// TestBatchedMatchesHost checks -batched against the host runs of the same sweep: for N = 100 and 200, three seeds,
// the line of each (N, method) has the medians of final F (within 1e-8 relative) and iterations (within 2), and the
// count of converged runs, of rcgexp.RunMoG's runs of the method on the data and initialisations rcgplot.Sweep uses
// (the reference: independent per-run host code; the tolerances are those of TestRunMoGBatch in algos/rcg). The
// closing lines' slopes are the least-squares slopes of the lines' own figures.
func TestBatchedMatchesHost(t *testing.T) {
	const R, K, seeds, epsN = 0.3, 8, 3, 1e-8
	ns := []int{100, 200}
	methods := []string{"RCG", "VBEM"}
	var buf bytes.Buffer
	if err := runBatched(&buf, "cpu", methods, ns, R, K, seeds, epsN, filepath.Join(t.TempDir(), "f8.svg")); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&buf)
	wall, iters := map[string][]float64{}, map[string][]float64{}
	var xs []float64
	for _, N := range ns {
		m, err := mog.New(mog.Synthetic(R, N, 0.03, 2024), N, 2, K, mog.DefaultPrior(2), mog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		xs = append(xs, float64(N))
		for _, meth := range methods {
			var l batchLine
			if err := dec.Decode(&l); err != nil {
				t.Fatal(err)
			}
			var fin, it []float64
			conv := 0
			for i := range seeds {
				x0, err := mog.Init(m, uint64(i))
				if err != nil {
					t.Fatal(err)
				}
				tr, err := rcgexp.RunMoG(m, x0, meth, epsN*float64(N), 0)
				if err != nil {
					t.Fatal(err)
				}
				fin, it = append(fin, tr.Final), append(it, float64(tr.Iters))
				if tr.Reason == "converged" {
					conv++
				}
			}
			f, n := rcgexp.Median(fin), rcgexp.Median(it)
			if l.N != N || l.Runs != seeds || l.Method != meth || l.Converged != conv ||
				!(math.Abs(l.MedianFinalF-f) <= 1e-8*math.Abs(f)) || math.Abs(l.MedianIters-n) > 2 {
				t.Errorf("N = %d, %s: batched %+v; host median final F %.10g, iterations %v, %d converged", N, meth, l,
					f, n, conv)
			}
			wall[meth], iters[meth] = append(wall[meth], l.WallTime), append(iters[meth], l.MedianIters)
		}
	}
	for _, meth := range methods {
		var s slopeLine
		if err := dec.Decode(&s); err != nil {
			t.Fatal(err)
		}
		if s.Method != meth || s.WallSlope != slope(xs, wall[meth]) || s.IterSlope != slope(xs, iters[meth]) {
			t.Errorf("%s: slopes %+v; from the lines %v, %v", meth, s, slope(xs, wall[meth]), slope(xs, iters[meth]))
		}
	}
}

// TestSlope checks the log–log slope on exact powers: y = 3·x^1.5 has slope 1.5.
func TestSlope(t *testing.T) {
	x := []float64{10, 100, 1000}
	y := []float64{3 * math.Pow(10, 1.5), 3 * math.Pow(100, 1.5), 3 * math.Pow(1000, 1.5)}
	if s := slope(x, y); math.Abs(s-1.5) > 1e-12 {
		t.Errorf("slope %v, want 1.5", s)
	}
}

// TestParseGrid checks the N grid: spaces are allowed; a non-number, zero, a negative or a repeated N is an error that
// names it.
func TestParseGrid(t *testing.T) {
	ns, err := parseGrid("100, 200,5000")
	if err != nil || len(ns) != 3 || ns[0] != 100 || ns[1] != 200 || ns[2] != 5000 {
		t.Errorf("parseGrid: %v, %v", ns, err)
	}
	for _, bad := range []string{"100,x", "0", "100,-5", "", "100,200,100"} {
		if _, err := parseGrid(bad); err == nil {
			t.Errorf("parseGrid(%q): no error", bad)
		}
	}
}

// TestBatchedOneN: with a single N there is no slope, and every line is valid JSON (a NaN slope once made the encoder
// fail after the N's lines).
func TestBatchedOneN(t *testing.T) {
	var buf bytes.Buffer
	if err := runBatched(&buf, "cpu", []string{"RCG"}, []int{100}, 0.3, 8, 2, 1e-8, filepath.Join(t.TempDir(), "f8.svg")); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&buf)
	var l batchLine
	if err := dec.Decode(&l); err != nil || l.N != 100 || l.Runs != 2 {
		t.Fatalf("line %+v, %v", l, err)
	}
	if dec.More() {
		t.Errorf("a line after the one N's: %s", buf.String())
	}
}
