package rcg

import (
	"context"
	"fmt"
	"time"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/models/nfa"
)

// NFAMethods are the methods RunNFA accepts: the paper's RCG, RG, CG, plain gradient descent and the heuristic Old
// of Valpola & Karhunen (2002).
var NFAMethods = []string{"RCG", "RG", "CG", "GD", "Old"}

// methodByName returns the Method called name (Method.String).
func methodByName(name string) (Method, error) {
	for i, n := range methodNames {
		if n == name {
			return Method(i), nil
		}
	}
	return 0, fmt.Errorf("%w: method %q", ErrBadInput, name)
}

// RunNFA fits the NFA or NSSM model m from m.Init(seed) with one method: the joint step on all means (Powell–Beale
// restart (7) for the conjugate methods), the between-step updates of the model's Update, and the rule |ΔF| < tol
// for patience consecutive iterations (§3.5: tol = 1e-5·T/80, patience 5), within a cap of limit process CPU time
// (0: none), measured with run.CPUTime and enforced by cancelling the run's context. It returns the F(t) trace for
// time-to-target summaries, t in seconds of process CPU time (the paper's measure).
func RunNFA(m *nfa.Model, seed uint64, method string, tol float64, patience int, limit time.Duration) (*Trace, error) {
	meth, err := methodByName(method)
	if err != nil {
		return nil, err
	}
	x0, err := m.Init(seed)
	if err != nil {
		return nil, err
	}
	s := Settings{Method: meth, Tol: tol, Patience: patience, PowellBeale: 0.2}
	tr := &Trace{Method: method, Seed: int(seed), Limit: limit.Seconds()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := run.CPUTime()
	ctl := run.Control{Ctx: ctx, MaxIter: 1 << 30, Recorder: run.Func(func(r run.Record) {
		el := run.CPUTime() - start
		tr.T = append(tr.T, el.Seconds())
		tr.F = append(tr.F, r.Extra["F"])
		tr.Evals = append(tr.Evals, int(r.Extra["f_evals"]+r.Extra["g_evals"]))
		if limit > 0 && el >= limit {
			cancel() // the loop stops before the next iteration
		}
	})}
	res, err := Minimize(m, x0, s, ctl)
	if res == nil {
		return nil, err
	}
	tr.Final, tr.Iters, tr.Reason, tr.Time = res.F, res.Iters, res.Reason.String(), (run.CPUTime() - start).Seconds()
	return tr, nil
}

// SweepNFA runs methods over seeds on one synthetic data set of size T (nfa.SyntheticNSSM when dyn, else
// nfa.SyntheticNFA) fitted with d = 5, H = 20 and the §3.5 rule ε = 1e-5·T/80 over 5 iterations. RCG runs first,
// capped at rcgCap (0: none); the other methods are capped at capFactor × RCG's median run time (the §6.7 budget
// form), so a method that never converges within it has a lower-bound time. It returns the traces per method.
func SweepNFA(dyn bool, T, seeds int, methods []string, rcgCap time.Duration, capFactor float64, mo nfa.Moments) (map[string][]*Trace, error) {
	X := nfa.SyntheticNFA(T, 1)
	if dyn {
		X = nfa.SyntheticNSSM(T, 1)
	}
	m, err := nfa.New(X, T, 21, nfa.Config{Dynamic: dyn, D: 5, H: 20, Moments: mo})
	if err != nil {
		return nil, err
	}
	out := map[string][]*Trace{}
	var rcgTimes []float64
	for _, meth := range methods {
		limit := rcgCap
		if meth != "RCG" && len(rcgTimes) > 0 {
			limit = time.Duration(capFactor * Median(rcgTimes) * float64(time.Second))
		}
		for seed := range seeds {
			tr, err := RunNFA(m, uint64(seed), meth, 1e-5*float64(T)/80, 5, limit)
			if err != nil {
				return nil, err
			}
			out[meth] = append(out[meth], tr)
			if meth == "RCG" {
				rcgTimes = append(rcgTimes, tr.Time)
			}
		}
	}
	return out, nil
}
