package rcgexp

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/models/nfa"
)

// smallNSSM is a small NSSM-SYN problem (T = 40, d = 2, H = 6, Gauss–Hermite moments) for the short tests.
func smallNSSM(t *testing.T) *nfa.Model {
	t.Helper()
	const T = 40
	m, err := nfa.New(nfa.SyntheticNSSM(T, 1), T, 21, nfa.Config{Dynamic: true, D: 2, H: 6, Moments: nfa.GaussHermite})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestOldNSSM runs Old on a small NSSM for 60 iterations from Init(seed): the recorded F never rises (the between-
// step update and the accepted steps both lower it), the final F is below F at the initial state (evaluated by the
// model before any update) by at least 10 % of that value's distance to what 60 RCG iterations reach, and Result.F
// agrees with the model's F at Result.X (1e-12 relative). Two runs from the same seed give bit-identical traces; a
// run from another seed differs.
func TestOldNSSM(t *testing.T) {
	m := smallNSSM(t)
	fit := func(meth rcg.Method, seed uint64) (*rcg.Result, []float64, float64) {
		x0, err := m.Init(seed)
		if err != nil {
			t.Fatal(err)
		}
		F0 := m.Value(x0)
		var fs []float64
		res, err := rcg.Minimize(context.Background(), m, x0, rcg.Settings{Method: meth, PowellBeale: 0.2,
			Control: run.Control{MaxIter: 60, Recorder: run.Func(func(r run.Record) {
				fs = append(fs,
					r.Extra["F"])
			})}})
		if err != nil {
			t.Fatal(err)
		}
		return res, fs, F0
	}
	res, fs, F0 := fit(rcg.Old, 3)
	for i := 1; i < len(fs); i++ {
		if fs[i] > fs[i-1]+1e-12*math.Abs(fs[i-1]) {
			t.Errorf("F rose at iteration %d: %.15g → %.15g", i, fs[i-1], fs[i])
		}
	}
	if got := m.Value(res.X); math.Abs(got-res.F) > 1e-12*math.Abs(got) {
		t.Errorf("Result.F %.15g, model F at Result.X %.15g", res.F, got)
	}
	rc, _, _ := fit(rcg.RCG, 3)
	t.Logf("F: initial %.4f, Old after %d iterations %.4f, RCG %.4f", F0, len(fs), res.F, rc.F)
	if !(res.F < F0-0.1*(F0-rc.F)) {
		t.Errorf("Old: F %.6g → %.6g, not 10 %% of the way to RCG's %.6g", F0, res.F, rc.F)
	}
	again, fs2, _ := fit(rcg.Old, 3)
	if len(fs2) != len(fs) || again.F != res.F {
		t.Fatalf("same seed: %d iterations to F %v, then %d to %v", len(fs), res.F, len(fs2), again.F)
	}
	for i := range fs {
		if fs[i] != fs2[i] {
			t.Fatalf("same seed: traces differ at iteration %d: %v vs %v", i, fs[i], fs2[i])
		}
	}
	if other, _, _ := fit(rcg.Old, 4); other.F == res.F {
		t.Errorf("seeds 3 and 4 gave the same final F %v", res.F)
	}
}

// noUpdate hides the model's Update so that Minimize sees the state as given.
type noUpdate struct{ m *nfa.Model }

func (n noUpdate) Dim() int                    { return n.m.Dim() }
func (n noUpdate) Value(x []float64) float64   { return n.m.Value(x) }
func (n noUpdate) Grad(g, x []float64) float64 { return n.m.Grad(g, x) }
func (n noUpdate) NatGrad(d, g, x []float64)   { n.m.NatGrad(d, g, x) }

// TestNFANotFiniteStart: an NSSM state with a negative chain variance has F = NaN, which every method rejects before
// iterating (ErrNotFinite).
func TestNFANotFiniteStart(t *testing.T) {
	m := smallNSSM(t)
	x, err := m.Init(0)
	if err != nil {
		t.Fatal(err)
	}
	m.Ring[3] = -1
	for _, meth := range []rcg.Method{rcg.RCG, rcg.Old} {
		if _, err := rcg.Minimize(context.Background(), noUpdate{m}, x, rcg.Settings{Method: meth,
			Control: run.Control{MaxIter: 3}}); !errors.Is(err, rcg.ErrNotFinite) {
			t.Errorf("%v with a negative variance: err = %v", meth, err)
		}
	}
}

// TestRunNFAMethods: RunNFA accepts every name in NFAMethods and rejects another one.
func TestRunNFAMethods(t *testing.T) {
	m := smallNSSM(t)
	for _, name := range NFAMethods {
		tr, err := RunNFA(m, 0, name, 1e9, 1, 0) // a tolerance that stops after one iteration
		if err != nil || tr.Method != name || tr.Iters != 1 || len(tr.F) != 1 {
			t.Errorf("%s: trace %+v, err %v", name, tr, err)
		}
	}
	if _, err := RunNFA(m, 0, "BFGS", 1, 1, 0); !errors.Is(err, rcg.ErrBadInput) {
		t.Errorf("unknown method: err = %v", err)
	}
}

// TestOldKeepsBacktracking: from an NSSM-SYN start (T = 200, seed 1) where the unit natural step overshoots by
// far more than 2⁸, Old must keep halving its multipliers (below MinAlpha for that step) until F falls, not declare
// convergence: with at most 8 halvings floored at MinAlpha it stopped after 3 iterations at F = 7236.
func TestOldKeepsBacktracking(t *testing.T) {
	X := nfa.SyntheticNSSM(200, 1)
	m, err := nfa.New(X, 200, 21, nfa.Config{Dynamic: true, D: 5, H: 20, Moments: nfa.GaussHermite})
	if err != nil {
		t.Fatal(err)
	}
	x0, err := m.Init(1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := rcg.Minimize(context.Background(), m, x0, rcg.Settings{Method: rcg.Old,
		Control: run.Control{MaxIter: 40}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Old after %d iterations: F %.2f (%v)", res.Iters, res.F, res.Reason)
	if res.Reason != run.MaxIter || !(res.F < 7000) {
		t.Errorf("Old stopped after %d iterations (%v) at F %.2f; want 40 iterations and F < 7000", res.Iters, res.Reason, res.F)
	}
}
