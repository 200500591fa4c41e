package rcgplot

import (
	"math"
	"time"

	"github.com/geovb/geovb/internal/repro/rcgexp"
	"github.com/geovb/geovb/models/mog"
)

// Sweep runs methods over seeds on one synthetic mixture (R, N, K, tolerance ε = epsN·N) and returns one Summary
// per method with time-to-target measured against RCG's median final F (or the best median final F when RCG is not
// among the methods). limit caps each run's process CPU time (0: none); times are CPU seconds (rcgexp.RunMoG).
func Sweep(R float64, N, K, seeds int, epsN float64, methods []string, limit time.Duration) ([]Summary, error) {
	m, err := mog.New(mog.Synthetic(R, N, 0.03, 2024), N, 2, K, mog.DefaultPrior(2), mog.Options{})
	if err != nil {
		return nil, err
	}
	runs := map[string][]*rcgexp.Trace{}
	for _, meth := range methods {
		for seed := range seeds {
			x0, err := mog.Init(m, uint64(seed))
			if err != nil {
				return nil, err
			}
			tr, err := rcgexp.RunMoG(m, x0, meth, epsN*float64(N), limit)
			if err != nil {
				return nil, err
			}
			runs[meth] = append(runs[meth], tr)
		}
	}
	target := math.Inf(1)
	for _, meth := range methods {
		var f []float64
		for _, tr := range runs[meth] {
			f = append(f, tr.Final)
		}
		if md := rcgexp.Median(f); meth == "RCG" || md < target && runs["RCG"] == nil {
			target = md
		}
	}
	target += epsN * float64(N)
	var out []Summary
	for _, meth := range methods {
		s := Summarise(meth, runs[meth], target)
		s.R, s.N = R, N
		out = append(out, s)
	}
	return out, nil
}
