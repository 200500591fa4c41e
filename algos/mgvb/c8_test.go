package mgvb

import (
	"testing"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/internal/testbackend"
)

// TestC8Determinism is acceptance test C8 on the CPU: a fixed seed reproduces the lower-bound trace and the output
// bit for bit (score-function and plain variants), and another seed changes it.
func TestC8Determinism(t *testing.T) {
	b := testbackend.Open(t)
	const d = 4
	m := newLin(t, b, 100, d, 2)
	trace := func(seed uint64, plain bool) ([]float64, []float64) {
		cfg := DefaultConfig()
		cfg.Seed, cfg.Plain, cfg.Patience, cfg.S = seed, plain, 0, 20
		var mem run.Memory
		res, err := fitOne(b, m, make([]float64, d), eye(d, 0.04), cfg, run.Control{MaxIter: 60, Recorder: &mem})
		if err != nil {
			t.Fatal(err)
		}
		var lb []float64
		for _, r := range mem.Records {
			lb = append(lb, r.Objective)
		}
		return lb, res.LastSigma.Storage().Host()
	}
	for _, plain := range []bool{false, true} {
		a, sa := trace(7, plain)
		c, sc := trace(7, plain)
		o, _ := trace(8, plain)
		for i := range a {
			if a[i] != c[i] {
				t.Fatalf("plain=%v: iteration %d: %v then %v with the same seed", plain, i+1, a[i], c[i])
			}
		}
		for i := range sa {
			if sa[i] != sc[i] {
				t.Fatalf("plain=%v: final Σ differs at %d", plain, i)
			}
		}
		if o[len(o)-1] == a[len(a)-1] {
			t.Fatalf("plain=%v: seeds 7 and 8 give the same last LB", plain)
		}
	}
}
