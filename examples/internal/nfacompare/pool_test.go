package nfacompare

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geovb/geovb/datasets"
	"github.com/geovb/geovb/internal/repro/rcgexp"
)

// splitSweep returns the runs of a sweep over seeds 0–5 at n = 300 (target F = 2): RCG capped at 4 s with misses
// at seeds 1 and 4, followed with the others' budget (seed 4 still misses, at its budget); the budgets 40 s (seeds
// 0–2) and budget2 (seeds 3–5, another process when not 40 s); CG with two reaches and misses by the cap and on its
// own; RG with no budget.
func splitSweep(budget2 float64) map[string][]*rcgexp.Trace {
	seeded := func(m string, seed int, tr *rcgexp.Trace, reason string) *rcgexp.Trace {
		tr.Method, tr.Seed, tr.Reason, tr.Iters = m, seed, reason, 10*seed+3
		return tr
	}
	runs := map[string][]*rcgexp.Trace{}
	for s, tt := range []float64{1, -1, 3, 2.5, -1, 1.5} {
		runs["RCG"] = append(runs["RCG"], seeded("RCG", s, traceTo(tt, 4, 0), "max-iter"))
		if tt < 0 {
			limit := []float64{40, budget2}[s/3]
			tt = []float64{6, -1}[s/4]
			runs[rcgexp.FollowedRCG] = append(runs[rcgexp.FollowedRCG],
				seeded("RCG", s, traceTo(tt, limit, limit), "converged"))
		} else {
			runs[rcgexp.FollowedRCG] = append(runs[rcgexp.FollowedRCG], runs["RCG"][s])
		}
	}
	for s, tt := range []float64{-1, 12, -1, -1, 30, -1} {
		limit := []float64{40, budget2}[s/3]
		end, why := limit+0.02, "cancelled"
		if s == 2 {
			end, why = 25, "converged"
		}
		if tt > 0 {
			end = tt + 1
		}
		runs["CG"] = append(runs["CG"], seeded("CG", s, traceTo(tt, end, limit), why))
		runs["RG"] = append(runs["RG"], seeded("RG", s, traceTo([]float64{-1, 7}[s%2], 9, 0), "converged"))
	}
	return runs
}

// writeRunLines writes the run lines of the seeds in [lo, hi) of runs, after a summary line, as a sweep over them
// with -runs prints, and returns the path; legacy drops the group field, as in files written before it.
func writeRunLines(t *testing.T, runs map[string][]*rcgexp.Trace, lo, hi int, legacy bool) string {
	part := map[string][]*rcgexp.Trace{}
	for g, trs := range runs {
		part[g] = trs[lo:hi]
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, l := range lines([]string{"RCG", "CG", "RG"}, part, 2) {
		l.N = 300
		if err := enc.Encode(l); err != nil {
			t.Fatal(err)
		}
	}
	for _, rl := range runLines([]string{"RCG", "CG", "RG"}, part, 2) {
		rl.N = 300
		if legacy {
			rl.Group = ""
		}
		if err := enc.Encode(rl); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "part.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPoolMatchesOneSweep: the lines pooled from two files over seeds 0–2 and 3–5 (the second also in the form
// written before the group field) are, byte for byte, the lines of one sweep over all six seeds, computed from the
// runs' whole traces; with budgets that differ between the files, those lines lack the followed runs' rank sum,
// which needs a common budget.
// Their medians, ratio and Gehan p-values are checked by hand too.
func TestPoolMatchesOneSweep(t *testing.T) {
	for _, budget2 := range []float64{40, 44} {
		runs := splitSweep(budget2)
		var want bytes.Buffer
		for _, l := range lines([]string{"RCG", "CG", "RG"}, runs, 2) {
			l.N = 300
			if err := json.NewEncoder(&want).Encode(l); err != nil {
				t.Fatal(err)
			}
		}
		for _, legacy := range []bool{false, true} {
			var got bytes.Buffer
			err := Pool([]string{writeRunLines(t, runs, 3, 6, legacy), writeRunLines(t, runs, 0, 3, false)}, &got)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("budget %v, legacy %v: pooled lines\n%s\nwant\n%s", budget2, legacy, got.String(),
					want.String())
			}
			// CG's line: its misses and the followed runs' tie only at one budget. (RG has none: its misses count at
			// their run times, as in one sweep.)
			cg := strings.Split(got.String(), "\n")[1]
			if has := strings.Contains(cg, `"ranksum_p_rcg_followed_faster"`); has != (budget2 == 40) {
				t.Errorf("budget %v: followed rank sum at the budgets printed for CG: %v", budget2, has)
			}
			if !strings.Contains(cg, `"ranksum_p_rcg_faster"`) {
				t.Errorf("budget %v: rank sum of RCG's capped runs left out for CG", budget2)
			}
		}
	}
	// By hand: RCG's times-to-target {1, 4, 3, 2.5, 4, 1.5} (misses at their 4 s run time), median 2.75; followed
	// {1, 6, 3, 2.5, 44, 1.5}, median 2.75 too; CG's {40, 12, 40, 44, 30, 44} (the miss that stopped at 25 s counts
	// at its 40 s budget), median 40.
	//
	// Gehan, followed RCG against CG, the pooled 12 with ⊥ marking bounds: 1, 1.5, 2.5, 3, 6, 44⊥ (RCG); 40⊥, 12,
	// 40⊥, 44⊥, 30, 44⊥ (CG). Mantel scores (known after − known before): 1 → 11, 1.5 → 9, 2.5 → 7, 3 → 5, 6 → 3,
	// 12 → 1, 30 → −1, and each of the five bounds −7 (after the 7 reached times, unordered among themselves).
	// RCG's sum 11 + 9 + 7 + 5 + 3 − 7 = 28. Of the C(12, 6) = 924 splits, those at least that high hold 11, 9, 7, 5
	// and two of {3, 1, −1, −7 ×5} summing to ≥ −4 ({3, 1}, {3, −1}, {3, −7} ×5, {1, −1}: 8), or 11, 9 and one of
	// 7, 5 with {3, 1, −1} (2): p = 10/924.
	runs := splitSweep(44)
	ls := lines([]string{"RCG", "CG", "RG"}, runs, 2)
	if ls[0].MedianTTT != 2.75 || ls[1].MedianTTT != 40 || ls[1].Reached != 2 || ls[3].Reached != 5 ||
		ls[1].Ratio != 40/2.75 || ls[1].RatioFollowed != 40/2.75 {
		t.Errorf("lines %+v", ls)
	}
	if got := ls[1].GehanFollowed; math.Abs(got-10.0/924) > 1e-12 {
		t.Errorf("CG: Gehan p with RCG followed %v, want 10/924", got)
	}
}

// TestPoolErrors: every malformed or unpoolable input is an error naming the file and, for a line's content, the
// line and column.
func TestPoolErrors(t *testing.T) {
	const run = `{"n":300,"run":{"method":"CG","seed":0,"final_f":5,"iters":3,"reason":"cancelled","time_s":40.1,` +
		`"limit_s":40},"group":"CG","target_f":2,"reached":false,"time_to_target_s":40,"evals_to_target":4}`
	const rcgRun = `{"n":300,"run":{"method":"RCG","seed":0,"final_f":1,"iters":3,"reason":"max-iter","time_s":4,` +
		`"limit_s":0},"group":"RCG","target_f":2,"reached":true,"time_to_target_s":3,"evals_to_target":4}`
	for _, c := range []struct {
		name, text, want string
	}{
		{"syntax", "{\"method\":\"RCG\"}\n  {\"n\":3,,}", "f.jsonl:2:10: not a JSON line"},
		{"not an object", `[1, 2]`, "f.jsonl:1:2: json: cannot unmarshal array"},
		{"null", `null`, "f.jsonl:1:1: null"},
		{"trailing", rcgRun + ` x`, "f.jsonl:1:"},
		{"wrong type", strings.Replace(run, `"seed":0`, `"seed":"a"`, 1), "f.jsonl:1:41: json: cannot unmarshal string"},
		{"unknown field", strings.Replace(run, `"iters":3`, `"iters":3,"T":[1]`, 1), `unknown field "T"`},
		{"null run", `{"n":300,"run":null}`, "f.jsonl:1:1: run is null"},
		{"size", strings.Replace(run, `"n":300`, `"n":0`, 1), "size n 0"},
		{"no method", strings.Replace(run, `"method":"CG"`, `"method":""`, 1), "no method"},
		{"group", strings.Replace(run, `"group":"CG"`, `"group":"RG"`, 1), `group "RG" for a run of CG`},
		{"seed", strings.Replace(run, `"seed":0`, `"seed":-1`, 1), "seed -1"},
		{"iters", strings.Replace(run, `"iters":3`, `"iters":-3`, 1), "iterations -3"},
		{"reason", strings.Replace(run, `"reason":"cancelled"`, `"reason":""`, 1), "no stop reason"},
		{"time", strings.Replace(run, `"time_s":40.1`, `"time_s":-1`, 1), "want finite and ≥ 0"},
		{"miss time", strings.Replace(run, `"time_to_target_s":40`, `"time_to_target_s":39`, 1),
			"a miss at 39 s, want its budget or run time 40 s"},
		{"late reach", strings.Replace(run, `"reached":false`, `"reached":true`, 1) + "\n" +
			strings.Replace(strings.Replace(run, `"reached":false`, `"reached":true`, 1), `"time_to_target_s":40`,
				`"time_to_target_s":41`, 1), "f.jsonl:2:1: reached at 41 s, after its budget 40 s"},
		{"reach after end", strings.Replace(rcgRun, `"time_to_target_s":3`, `"time_to_target_s":5`, 1),
			"after its run's end at 4 s"},
		{"two targets", rcgRun + "\n" + strings.Replace(run, `"target_f":2`, `"target_f":3`, 1),
			"f.jsonl:2:1: target F 3 at n = 300, but f.jsonl:1 has 2"},
		{"seed twice", rcgRun + "\n" + run + "\n" + run, "f.jsonl:3:1: CG seed 0 at n = 300 again (first at f.jsonl:2)"},
		{"no RCG", run, "no RCG runs at n = 300 (first run line f.jsonl:1)"},
		{"other seeds", rcgRun + "\n" + strings.Replace(run, `"seed":0`, `"seed":1`, 1), "CG ran seeds [1], RCG [0]"},
		{"no runs", `{"method":"RCG","n":300}`, "no run lines"},
		{"long line", "{}\n" + strings.Repeat(" ", maxLine+1), "f.jsonl:2: a line longer than"},
	} {
		var p pool
		err := p.read("f.jsonl", strings.NewReader(c.text))
		if err == nil {
			err = p.write(io.Discard)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
	if err := Pool(nil, io.Discard); err == nil {
		t.Error("no files: no error")
	}
	if err := Pool([]string{filepath.Join(t.TempDir(), "missing.jsonl")}, io.Discard); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// FuzzPoolRead: any file gives pooled lines or an error that names the file and line (and for a line's content, the
// column), never a panic.
func FuzzPoolRead(f *testing.F) {
	f.Add([]byte(`{"n":300,"run":{"method":"RCG","seed":0,"final_f":1,"iters":3,"reason":"max-iter","time_s":4,` +
		`"limit_s":0},"target_f":2,"reached":true,"time_to_target_s":3,"evals_to_target":4}`))
	f.Add([]byte("{\"method\":\"CG\",\"n\":300}\n\n{\"n\":1,\"run\":{}}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p pool
		err := p.read("f.jsonl", bytes.NewReader(b))
		if err != nil {
			var pe *datasets.ParseError
			if !errors.As(err, &pe) || pe.File != "f.jsonl" || pe.Line < 1 {
				t.Fatalf("error without file and line: %v", err)
			}
			return
		}
		_ = p.write(io.Discard) // may fail (no RCG runs, other seeds): must not panic
	})
}
