package rcg

import (
	"errors"
	"math"
	"testing"
	"time"
)

// FollowRCG reruns exactly RCG's misses, and a rerun retraces its first run bit for bit before going on: the runs
// are deterministic, so the followed trace extends the capped one. Following needs both caps.
func TestSweepFollowRCG(t *testing.T) {
	s := Sweep{Dynamic: true, T: 30, Seeds: 4, Methods: []string{"RCG"}, RCGCap: 20 * time.Millisecond,
		CapFactor: 20, FollowRCG: true}
	runs, err := SweepNFA(s)
	if err != nil {
		t.Fatal(err)
	}
	capped, followed := runs["RCG"], runs[FollowedRCG]
	if len(followed) != len(capped) {
		t.Fatalf("%d followed runs for %d RCG runs", len(followed), len(capped))
	}
	target := s.Target(capped)
	reruns := 0
	for i, c := range capped {
		f := followed[i]
		_, _, reached := c.TimeOrBound(target)
		if rerun := f != c; rerun == reached {
			t.Fatalf("seed %d: rerun %v, though reached %v", c.Seed, rerun, reached)
		}
		if f == c {
			continue
		}
		reruns++
		if f.Seed != c.Seed || f.Limit <= c.Limit || len(f.F) < len(c.F) {
			t.Fatalf("seed %d: rerun seed %d, budget %gs (capped %gs), %d iterations (capped %d)", c.Seed, f.Seed,
				f.Limit, c.Limit, len(f.F), len(c.F))
		}
		for k := range c.F {
			if math.Float64bits(f.F[k]) != math.Float64bits(c.F[k]) {
				t.Fatalf("seed %d: iteration %d: F %v in the rerun, %v in the capped run", c.Seed, k, f.F[k], c.F[k])
			}
		}
	}
	t.Logf("target %.4f; %d of %d runs rerun", target, reruns, len(capped))
	if reruns == 0 {
		t.Skip("no RCG run was capped short of the target on this machine; nothing followed")
	}
	s.CapFactor = 0
	if _, err := SweepNFA(s); !errors.Is(err, ErrBadInput) {
		t.Errorf("following without the others' cap: %v, want ErrBadInput", err)
	}
}
