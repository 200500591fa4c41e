// Command cholng-scaling measures the per-iteration cost of Alg 2c (the GLMM local–global sparse precision of
// paper 003, natural gradient + Snngm) on synthetic Epilepsy-like Poisson random-slope data (4 visits per group,
// p = 6, r = 2) as the number of groups n grows, and prints one JSON line per n: seconds per iteration (median of
// repeats), per group, and the log–log slope against the previous n (≈ 1 for linear growth). It also times the
// Euclidean gradient for the natural/Euclidean cost ratio (notes §9 J.27). Host float64 code.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/geovb/geovb/algos/cholng"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/models/glmm"
)

func main() {
	ns := flag.String("n", "1000,10000,100000,1000000", "comma-separated numbers of groups")
	iters := flag.Int("iters", 20, "iterations per timing")
	reps := flag.Int("reps", 3, "timings per n (the median is reported)")
	flag.Parse()
	if err := mainErr(*ns, *iters, *reps); err != nil {
		fmt.Fprintln(os.Stderr, "cholng-scaling:", err)
		os.Exit(1)
	}
}

// timeIt returns the median over reps of (time of iters+1 iterations − time of 1 iteration)/iters, so that the
// setup (allocation, the final one-draw evaluation) cancels.
func timeIt(m *glmm.Model, kind cholng.Kind, opt cholng.Optimizer, iters, reps int) (float64, error) {
	fit := func(k int, seed uint64) (float64, error) {
		f, err := cholng.NewArrow(m.Groups(), m.GlobalDim(), 10)
		if err != nil {
			return 0, err
		}
		start := time.Now()
		_, err = cholng.FitSparse(f, m, cholng.Config{Optimizer: opt, Kind: kind, Seed: seed, NoStop: true, EvalDraws: 1},
			run.Control{MaxIter: k}, false)
		return time.Since(start).Seconds(), err
	}
	var ts []float64
	for r := 0; r < reps; r++ {
		t1, err := fit(1, uint64(r+1))
		if err != nil {
			return 0, err
		}
		tk, err := fit(iters+1, uint64(r+1))
		if err != nil {
			return 0, err
		}
		ts = append(ts, (tk-t1)/float64(iters))
	}
	slices.Sort(ts)
	return ts[len(ts)/2], nil
}

func mainErr(list string, iters, reps int) error {
	enc := json.NewEncoder(os.Stdout)
	prevN, prevT := 0.0, 0.0
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("bad -n entry %q", s)
		}
		m, err := glmm.SyntheticEpilepsy(n, 1)
		if err != nil {
			return err
		}
		tn, err := timeIt(m, cholng.Natural, cholng.Snngm, iters, reps)
		if err != nil {
			return err
		}
		te, err := timeIt(m, cholng.Euclidean, cholng.Adam, iters, reps)
		if err != nil {
			return err
		}
		out := map[string]any{"groups": n, "d": m.Dim(), "obs": len(m.Y), "sec_per_iter_natural_snngm": tn,
			"sec_per_iter_euclidean_adam": te, "ns_per_group_natural": tn / float64(n) * 1e9, "natural_over_euclidean": tn / te}
		if prevN > 0 {
			out["loglog_slope"] = math.Log(tn/prevT) / math.Log(float64(n)/prevN)
		}
		if err := enc.Encode(out); err != nil {
			return err
		}
		prevN, prevT = float64(n), tn
	}
	return nil
}
