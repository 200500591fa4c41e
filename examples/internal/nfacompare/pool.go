package nfacompare

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"

	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/repro/rcgexp"
)

// Pool reads the per-run lines (Options.Runs) of the JSON-lines files paths, written by sweeps over parts of the
// seeds timed to one fixed target (Options.FirstSeed, Options.Target). For each size, in the order first seen, it
// writes to w the lines one sweep over all their runs would have printed for its methods (line: medians, ratios
// and tests): the figures of a split sweep, which the parts' own summary lines cannot give. Summary and pair lines
// in the files are skipped; pair lines are not rebuilt, as their target depends on ε, which run lines do not carry.
//
// The parts' budgets differ (each is -cap × its own RCG median run time), so the misses of RCG's followed runs and
// the method's no longer tie at one budget. The rank sum of the followed runs would order two misses by their
// budgets, which says nothing about their times, so lines leaves it out; the Gehan p-value, which needs no common
// budget, is the one to read. The rank sums of RCG's capped runs stay: their misses count at RCG's cap (or, capped in
// iterations, at their run time), below every part's budget, as in one sweep.
//
// Errors name the file, line and column (for a value of the wrong type, the column just after it).
func Pool(paths []string, w io.Writer) error {
	if len(paths) == 0 {
		return errors.New("pool: no files named")
	}
	var p pool
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		err = p.read(path, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return p.write(w)
}

// pooledRun is one run line with where it was read.
type pooledRun struct {
	tr    *rcgexp.Trace
	where string // file:line
}

// poolSize holds the runs of one size.
type poolSize struct {
	n       int
	target  float64
	where   string                  // the line that set target
	methods []string                // in the order first seen
	runs    map[string][]*pooledRun // by group: method, or rcgexp.FollowedRCG
}

// pool gathers the runs of every size.
type pool struct {
	sizes []*poolSize
}

// maxLine bounds a line's length: a run line has some 300 bytes.
const maxLine = 1 << 20

// read adds the run lines of one file.
func (p *pool) read(name string, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	type sizeSeed struct{ n, seed int }
	seen := map[sizeSeed]bool{} // the RCG runs of this file: a second one of a size and seed is the followed run
	ln := 0
	for sc.Scan() {
		ln++
		raw := sc.Bytes()
		b := bytes.TrimSpace(raw)
		if len(b) == 0 {
			continue
		}
		col := 1 + len(raw) - len(bytes.TrimLeft(raw, " \t\r\v\f"))
		rl, err := decodeRunLine(b)
		if err != nil {
			var syn *json.SyntaxError
			var typ *json.UnmarshalTypeError
			switch {
			case errors.As(err, &syn):
				return datasets.Errorf(name, ln, col+int(syn.Offset)-1, "not a JSON line: %v", err)
			case errors.As(err, &typ):
				return datasets.Errorf(name, ln, col+int(typ.Offset), "%v", err)
			}
			return datasets.Errorf(name, ln, col, "%v", err)
		}
		if rl == nil {
			continue // a summary or pair line
		}
		group := rl.Group
		if group == "" { // lines written before the field: runLines lists RCG's followed runs after its capped ones
			group = rl.Run.Method
			key := sizeSeed{rl.N, rl.Run.Seed}
			if group == "RCG" && seen[key] {
				group = rcgexp.FollowedRCG
			}
			if group == "RCG" {
				seen[key] = true
			}
		}
		if err := p.add(rl, group, fmt.Sprintf("%s:%d", name, ln)); err != nil {
			return datasets.Errorf(name, ln, col, "%v", err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return datasets.Errorf(name, ln+1, 0, "a line longer than %d bytes", maxLine)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// decodeRunLine returns the run line b holds, nil when b is a JSON object without a run (a summary or pair line),
// or an error when b is no JSON object, has fields a run line does not, or values a run cannot have.
func decodeRunLine(b []byte) (*runLine, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, err
	}
	if probe == nil {
		return nil, errors.New("null, not a JSON object")
	}
	if _, ok := probe["run"]; !ok {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var rl runLine
	if err := dec.Decode(&rl); err != nil {
		return nil, err
	}
	tr := rl.Run
	switch {
	case tr == nil:
		return nil, errors.New("run is null")
	case rl.N < 1:
		return nil, fmt.Errorf("size n %d, want ≥ 1", rl.N)
	case tr.Method == "":
		return nil, errors.New("run has no method")
	case rl.Group != "" && rl.Group != tr.Method && !(rl.Group == rcgexp.FollowedRCG && tr.Method == "RCG"):
		return nil, fmt.Errorf("group %q for a run of %s", rl.Group, tr.Method)
	case tr.Seed < 0:
		return nil, fmt.Errorf("seed %d, want ≥ 0", tr.Seed)
	case tr.Iters < 0 || rl.EvalsToTarget < 0:
		return nil, fmt.Errorf("iterations %d, evaluations %d: want ≥ 0", tr.Iters, rl.EvalsToTarget)
	case tr.Reason == "":
		return nil, errors.New("run has no stop reason")
	case !finiteNonNeg(tr.Time) || !finiteNonNeg(tr.Limit) || !finiteNonNeg(rl.TimeToTarget):
		return nil, fmt.Errorf("times %v, %v, %v: want finite and ≥ 0", tr.Time, tr.Limit, rl.TimeToTarget)
	case math.IsNaN(tr.Final) || math.IsInf(tr.Final, 0) || math.IsNaN(rl.Target) || math.IsInf(rl.Target, 0):
		return nil, errors.New("final or target F not finite")
	}
	// The fields of rcgexp.Trace.TimeOrBound must agree: a reach within the budget at or below the target, a miss
	// counted at its budget or, without one, at its whole run time.
	if rl.Reached {
		if tr.Limit > 0 && rl.TimeToTarget > tr.Limit {
			return nil, fmt.Errorf("reached at %v s, after its budget %v s", rl.TimeToTarget, tr.Limit)
		}
		if rl.TimeToTarget > tr.Time {
			return nil, fmt.Errorf("reached at %v s, after its run's end at %v s", rl.TimeToTarget, tr.Time)
		}
		// The F that reached the target, its time and count; the final F, time and iterations stay the run's.
		tr.T, tr.F, tr.Evals = []float64{rl.TimeToTarget}, []float64{rl.Target}, []int{rl.EvalsToTarget}
		return &rl, nil
	}
	bound := tr.Time
	if tr.Limit > 0 {
		bound = tr.Limit
	}
	if rl.TimeToTarget != bound {
		return nil, fmt.Errorf("a miss at %v s, want its budget or run time %v s", rl.TimeToTarget, bound)
	}
	tr.T, tr.F, tr.Evals = []float64{tr.Time}, []float64{math.Inf(1)}, []int{rl.EvalsToTarget}
	return &rl, nil
}

// seedList returns the runs' seeds in their order.
func seedList(runs []*rcgexp.Trace) []int {
	out := make([]int, len(runs))
	for i, tr := range runs {
		out[i] = tr.Seed
	}
	return out
}

func finiteNonNeg(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

// add files one run of group under its size; a size's runs share one target, and a seed runs once per group.
func (p *pool) add(rl *runLine, group, where string) error {
	var s *poolSize
	for _, c := range p.sizes {
		if c.n == rl.N {
			s = c
		}
	}
	if s == nil {
		s = &poolSize{n: rl.N, target: rl.Target, where: where, runs: map[string][]*pooledRun{}}
		p.sizes = append(p.sizes, s)
	}
	if rl.Target != s.target {
		return fmt.Errorf("target F %v at n = %d, but %s has %v: only runs timed to one target pool", rl.Target,
			rl.N, s.where, s.target)
	}
	for _, o := range s.runs[group] {
		if o.tr.Seed == rl.Run.Seed {
			return fmt.Errorf("%s seed %d at n = %d again (first at %s)", group, rl.Run.Seed, rl.N, o.where)
		}
	}
	if s.runs[group] == nil && group != rcgexp.FollowedRCG {
		s.methods = append(s.methods, group)
	}
	s.runs[group] = append(s.runs[group], &pooledRun{tr: rl.Run, where: where})
	return nil
}

// write prints the pooled lines of each size, runs in seed order.
func (p *pool) write(w io.Writer) error {
	if len(p.sizes) == 0 {
		return errors.New("pool: the files hold no run lines (written with -runs)")
	}
	enc := json.NewEncoder(w)
	for _, s := range p.sizes {
		if s.runs["RCG"] == nil {
			return fmt.Errorf("pool: no RCG runs at n = %d (first run line %s)", s.n, s.where)
		}
		methods := []string{"RCG"}
		for _, m := range s.methods {
			if m != "RCG" {
				methods = append(methods, m)
			}
		}
		runs := map[string][]*rcgexp.Trace{}
		for g, prs := range s.runs {
			sort.Slice(prs, func(i, j int) bool { return prs[i].tr.Seed < prs[j].tr.Seed })
			for _, pr := range prs {
				runs[g] = append(runs[g], pr.tr)
			}
		}
		// The lines compare the methods over the same initialisations, as one sweep does.
		want := seedList(runs["RCG"])
		for _, g := range append(slices.Clip(methods), rcgexp.FollowedRCG) {
			if got := seedList(runs[g]); runs[g] != nil && !slices.Equal(got, want) {
				return fmt.Errorf("pool: at n = %d %s ran seeds %v, RCG %v: pool files that ran the same methods "+
					"(and -follow) over parts of one seed range", s.n, g, got, want)
			}
		}
		for _, l := range lines(methods, runs, s.target) {
			l.N = s.n
			if err := enc.Encode(l); err != nil {
				return err
			}
		}
	}
	return nil
}
