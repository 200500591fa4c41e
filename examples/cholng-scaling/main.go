// Command cholng-scaling measures the per-iteration cost of Alg 2c (the GLMM local–global sparse precision of
// paper 003, natural gradient + Snngm) on synthetic Epilepsy-like Poisson random-slope data (4 visits per group,
// p = 6, r = 2) as the number of groups n grows, and prints one JSON line per n: seconds per iteration (median over
// the timed iterations of all repeats), per group, and the log–log slope against the previous n (≈ 1 for linear
// growth). It also times the Euclidean gradient with Adam for comparison. The family's algebra and
// the optimiser run on the backend chosen with -backend (the model's log joint on the host), in float64.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/geovb/geovb/algos/cholng"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/all"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/models/glmm"
)

func main() {
	cpu.UseForGonum() // the models' gonum calls and the backend's LAPACK on the CPU backend's kernels
	ns := flag.String("n", "1000,10000,100000,1000000", "comma-separated numbers of groups")
	iters := flag.Int("iters", 20, "iterations per timing")
	reps := flag.Int("reps", 3, "timings per n (the median is reported)")
	bname := flag.String("backend", "", "backend (cpu, cuda, auto; default $GEOVB_BACKEND)")
	flag.Parse()
	if err := mainErr(*bname, *ns, *iters, *reps); err != nil {
		fmt.Fprintln(os.Stderr, "cholng-scaling:", err)
		os.Exit(1)
	}
}

// timeIt returns the median time of one iteration (run.Record.IterTime) over reps fits of iters+1 iterations each,
// the first iteration of every fit left out (it touches freshly allocated buffers for the first time).
func timeIt(b backend.Backend, m *glmm.Model, kind cholng.Kind, opt cholng.Optimizer, iters, reps int) (float64, error) {
	var ts []float64
	for r := 0; r < reps; r++ {
		f, err := cholng.NewArrow(b, m.Groups(), m.GlobalDim(), 10)
		if err != nil {
			return 0, err
		}
		rec := run.Func(func(rc run.Record) {
			if rc.Iter > 0 {
				ts = append(ts, rc.IterTime.Seconds())
			}
		})
		_, err = cholng.FitSparse(context.Background(), f, m, cholng.Config{Optimizer: opt, Kind: kind, Seed: uint64(r + 1), NoStop: true,
			EvalDraws: 1, Control: run.Control{MaxIter: iters + 1, Recorder: rec}})
		f.Close()
		if err != nil {
			return 0, err
		}
	}
	if len(ts) == 0 {
		return 0, fmt.Errorf("no iterations timed")
	}
	slices.Sort(ts)
	return ts[len(ts)/2], nil
}

func mainErr(bname, list string, iters, reps int) error {
	// The settings are checked before the first (possibly long) timing.
	if iters < 1 || reps < 1 {
		return fmt.Errorf("-iters %d, -reps %d: want at least 1 of each", iters, reps)
	}
	var groups []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("bad -n entry %q: want a number of groups ≥ 1", s)
		}
		groups = append(groups, n)
	}
	b, err := backend.Open(bname)
	if err != nil {
		return err
	}
	defer b.Close()
	fmt.Fprintf(os.Stderr, "backend: %s (%s)\n", b.Name(), b.Info().Library)
	enc := json.NewEncoder(os.Stdout)
	prevN, prevT := 0.0, 0.0
	for _, n := range groups {
		m, err := glmm.SyntheticEpilepsy(n, 1)
		if err != nil {
			return err
		}
		tn, err := timeIt(b, m, cholng.Natural, cholng.Snngm, iters, reps)
		if err != nil {
			return err
		}
		te, err := timeIt(b, m, cholng.Euclidean, cholng.Adam, iters, reps)
		if err != nil {
			return err
		}
		out := map[string]any{"backend": b.Name(), "groups": n, "d": m.Dim(), "obs": len(m.Y), "sec_per_iter_natural_snngm": tn,
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
