package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/geovb/geovb/backend"
)

// runMain runs the command with args and returns its exit status, stdout and stderr.
func runMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// quickReport runs -quick once per test binary and returns the JSON path and the parsed report.
var quick struct {
	path, csv string
	rep       *report
	out       string
}

func quickRun(t *testing.T) (string, *report) {
	t.Helper()
	if quick.rep != nil {
		return quick.path, quick.rep
	}
	dir, err := os.MkdirTemp("", "vbbench-test-")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "quick.json")
	csvPath := filepath.Join(dir, "quick.csv")
	code, out, errs := runMain(t, "-quick", "-backend", "cpu", "-json", path, "-csv", csvPath)
	if code != 0 {
		t.Fatalf("vbbench -quick: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	rep, err := readReport(path)
	if err != nil {
		t.Fatal(err)
	}
	quick.path, quick.csv, quick.rep, quick.out = path, csvPath, rep, out
	return path, rep
}

// refOnly is the CPU backend under another name, so that no registered kernel applies: every hot operation runs
// its reference. It gives the side-by-side test a second backend.
type refOnly struct{ backend.Backend }

func (refOnly) Name() string { return "cpu-reference" }

func (r refOnly) Info() backend.Info {
	in := r.Backend.Info()
	in.Name = r.Name()
	in.Library += ", reference kernels only"
	return in
}

func TestMain(m *testing.M) {
	backend.RegisterFactory("cpu-reference", -10, func() (backend.Backend, error) {
		b, err := backend.Open("cpu")
		if err != nil {
			return nil, err
		}
		return refOnly{b}, nil
	})
	code := m.Run()
	if quick.path != "" {
		os.RemoveAll(filepath.Dir(quick.path))
	}
	os.Exit(code)
}

func finitePositive(x float64) bool { return x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }

func TestQuickJSON(t *testing.T) {
	path, rep := quickRun(t)
	// The schema: decode into a generic map as well, so that a renamed field is caught.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "date", "command", "go", "backends", "records"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("report has no %q", k)
		}
	}
	recs := raw["records"].([]any)
	for _, k := range []string{"backend", "device", "library", "workload", "dims", "dtype", "kernel", "status",
		"time_median_s", "time_min_s", "time_max_s", "spread", "gflops", "gbps", "floor_kind", "floor_s",
		"percent_of_floor", "peak_rss_bytes", "backend_mem_bytes"} {
		if _, ok := recs[0].(map[string]any)[k]; !ok {
			t.Errorf("record has no %q", k)
		}
	}

	if len(rep.Backends) != 1 || rep.Backends[0].Name != "cpu" {
		t.Fatalf("backends %+v, want cpu alone", rep.Backends)
	}
	fl := rep.Backends[0].Floors
	if !finitePositive(fl.BandGBps) || !finitePositive(fl.GemmGFLOPS) || fl.GemmN < 64 {
		t.Errorf("floors %+v", fl)
	}
	hot := hotWorkloads()
	if len(rep.Records) != len(hot) {
		t.Errorf("%d records, want one per hot-operation workload (%d)", len(rep.Records), len(hot))
	}
	for i, r := range rep.Records {
		if i < len(hot) && r.Workload != hot[i].name {
			t.Errorf("record %d is %s, want %s", i, r.Workload, hot[i].name)
		}
		if r.Status != statusOK {
			t.Errorf("%s: status %s: %s", r.Workload, r.Status, r.Error)
			continue
		}
		if r.Backend != "cpu" || r.Device == "" || r.Library == "" || r.Kernel == "" || r.Dtype != "float64" ||
			r.Size != "quick" || r.DimsLabel == "" {
			t.Errorf("%s: incomplete record %+v", r.Workload, r)
		}
		for name, v := range map[string]float64{"median": r.Median, "min": r.Min, "max": r.Max, "flops": r.Flops,
			"bytes": r.Bytes, "gflops": r.GFLOPS, "gbps": r.GBps, "floor": r.FloorSeconds, "percent": r.PercentOfFloor} {
			if !finitePositive(v) {
				t.Errorf("%s: %s = %v, want finite and > 0", r.Workload, name, v)
			}
		}
		if !(r.Min <= r.Median && r.Median <= r.Max) {
			t.Errorf("%s: min %v, median %v, max %v out of order", r.Workload, r.Min, r.Median, r.Max)
		}
		if r.Spread < 0 || math.IsNaN(r.Spread) {
			t.Errorf("%s: spread %v", r.Workload, r.Spread)
		}
		// A rate above its floor must be flagged (the flag, not the timing, is under test).
		if r.Suspect != (r.PercentOfFloor > 100) {
			t.Errorf("%s: suspect %v at %.1f%% of the floor", r.Workload, r.Suspect, r.PercentOfFloor)
		}
		if r.FloorKind != "flop" && r.FloorKind != "byte" {
			t.Errorf("%s: floor kind %q", r.Workload, r.FloorKind)
		}
		if r.CheckRelErr > checkTol || r.CheckDims == "" {
			t.Errorf("%s: check at %q: relative error %v", r.Workload, r.CheckDims, r.CheckRelErr)
		}
		if r.Reps < 1 || r.Inner < 1 || r.Buffers < 1 || r.BackendMemBytes <= 0 {
			t.Errorf("%s: reps %d, calls %d, buffers %d, backend memory %d", r.Workload, r.Reps, r.Inner, r.Buffers,
				r.BackendMemBytes)
		}
	}
	for _, w := range hot {
		if !strings.Contains(quick.out, w.name) {
			t.Errorf("table has no row for %s", w.name)
		}
	}
	if !strings.Contains(quick.out, "backend cpu:") || !strings.Contains(quick.out, "floors:") {
		t.Errorf("no header or floors in the output:\n%s", quick.out)
	}
}

func TestQuickCSV(t *testing.T) {
	quickRun(t)
	f, err := os.Open(quick.csv)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(hotWorkloads())+1 || !slices.Equal(rows[0], csvHeader) {
		t.Fatalf("%d CSV rows (want %d) with header %v", len(rows), len(hotWorkloads())+1, rows[0])
	}
}

func TestCompareFiles(t *testing.T) {
	oldPath, rep := quickRun(t)
	// A second report: every workload twice as slow, one dropped, one renamed.
	cur := *rep
	cur.Records = nil
	for i, r := range rep.Records {
		switch i {
		case 0:
			continue
		case 1:
			r.Workload = "new.workload"
		}
		r.Median *= 2
		cur.Records = append(cur.Records, r)
	}
	newPath := filepath.Join(t.TempDir(), "new.json")
	if err := writeJSON(newPath, &cur); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runMain(t, "-compare", oldPath, newPath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"-50.0%", "gone", "new.workload", "change from"} {
		if !strings.Contains(out, want) {
			t.Errorf("compare output lacks %q:\n%s", want, out)
		}
	}
}

func TestCompareAfterRun(t *testing.T) {
	oldPath, _ := quickRun(t)
	newPath := filepath.Join(t.TempDir(), "sphere.json")
	code, out, errs := runMain(t, "-quick", "-backend", "cpu", "-ops", "sphere", "-reps", "2", "-compare", oldPath,
		"-json", newPath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "change from "+oldPath) || !strings.Contains(out, "gone") {
		t.Errorf("no comparison in the output:\n%s", out)
	}
	rep, err := readReport(newPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Records) != 1 || rep.Records[0].Workload != "sphere.flow" || rep.Records[0].Reps != 2 {
		t.Errorf("records %+v, want sphere.flow alone with 2 samples", rep.Records)
	}
}

func TestSideBySide(t *testing.T) {
	path := filepath.Join(t.TempDir(), "two.json")
	code, out, errs := runMain(t, "-quick", "-backend", "cpu,cpu-reference", "-ops", "sphere,lowrank.solve", "-reps",
		"2", "-json", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "cpu/cpu-reference") || !strings.Contains(out, "backend cpu-reference:") {
		t.Errorf("no ratio table or second header:\n%s", out)
	}
	rep, err := readReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Backends) != 2 || len(rep.Records) != 4 {
		t.Fatalf("%d backends, %d records; want 2 and 4", len(rep.Backends), len(rep.Records))
	}
	for _, r := range rep.Records {
		if r.Status != statusOK {
			t.Errorf("%s on %s: %s %s", r.Workload, r.Backend, r.Status, r.Error)
		}
		if r.Backend == "cpu-reference" && r.Kernel != "reference" {
			t.Errorf("%s on cpu-reference used kernel %s", r.Workload, r.Kernel)
		}
	}
}

func TestExplicitDims(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dims.json")
	code, out, errs := runMain(t, "-quick", "-backend", "cpu", "-d", "3e3", "-p", "5", "-k", "2", "-reps", "2", "-json", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	rep, err := readReport(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rep.Records {
		got = append(got, r.Workload)
		if r.Size != "custom" || r.Dims.D != 3000 || r.Dims.P != 5 {
			t.Errorf("%s: size %s dims %+v", r.Workload, r.Size, r.Dims)
		}
	}
	want := []string{"lowrank.solve", "lowrank.sample", "lowrank.em_step"}
	if !slices.Equal(got, want) {
		t.Errorf("workloads %v, want those using d, p and k: %v", got, want)
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "never.json")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-nosuchflag"}, "not defined"},
		{[]string{"-backend", "nosuch"}, "unknown backend"},
		{[]string{"-backend", "cpu,cpu"}, "twice"},
		{[]string{"-ops", "nosuch"}, "unknown workload"},
		{[]string{"-algos", "nosuch"}, "-algos: unknown workload"},
		{[]string{"-ops", "algo.mgvb"}, "-ops: unknown workload"},
		{[]string{"-sizes", "huge"}, "unknown size"},
		{[]string{"-quick", "-sizes", "small"}, "-quick"},
		{[]string{"-d", "1000", "-sizes", "small"}, "replace -sizes"},
		{[]string{"-reps", "-1"}, "-reps"},
		{[]string{"-d", "0"}, "want ≥ 1"},
		{[]string{"-d", "1.5"}, "invalid value"},
		{[]string{"-n", "5", "-ops", "lowrank.solve"}, "no dimension -n"},
		{[]string{"-d", "1e12", "-p", "100", "-ops", "lowrank.solve", "-json", jsonPath}, "needs about"},
		{[]string{"stray"}, "unexpected arguments"},
		{[]string{"-quick", "-json", filepath.Join(dir, "missing", "out.json")}, "cannot write"},
		{[]string{"-quick", "-csv", filepath.Join(dir, "missing", "out.csv")}, "cannot write"},
		{[]string{"-compare", filepath.Join(dir, "missing.json"), filepath.Join(dir, "other.json")}, "missing.json"},
		{[]string{"-quick", "-compare", filepath.Join(dir, "missing.json")}, "missing.json"},
	} {
		code, out, errs := runMain(t, tc.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2\nstdout: %s\nstderr: %s", tc.args, code, out, errs)
			continue
		}
		if !strings.Contains(errs, tc.want) {
			t.Errorf("%v: message %q lacks %q", tc.args, errs, tc.want)
		}
	}
	if _, err := os.Stat(jsonPath); !os.IsNotExist(err) {
		t.Errorf("a failed run left %s", jsonPath)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"schema": "something else"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runMain(t, "-compare", bad, bad); code != 2 || !strings.Contains(errs, "schema") {
		t.Errorf("-compare of a foreign file: exit %d, %s", code, errs)
	}
	if code, out, _ := runMain(t, "-list"); code != 0 || !strings.Contains(out, "lowrank.em_step") {
		t.Errorf("-list: exit %d\n%s", code, out)
	}
	if code, _, errs := runMain(t, "-h"); code != 0 || !strings.Contains(errs, "Usage") {
		t.Errorf("-h: exit %d\n%s", code, errs)
	}
}

// TestWrongKernel adds a workload whose "kernel" disagrees with its reference: it must be reported WRONG, not
// timed, and the run must exit 1 with the JSON still written.
func TestWrongKernel(t *testing.T) {
	saved := workloads
	t.Cleanup(func() { workloads = saved })
	bad := &workload{
		name: "test.wrong", op: "test", desc: "x ← 2x, off by 1e-6 outside the reference", uses: []string{"batch", "n"},
		sizes: map[string]dims{"quick": {Batch: 2, N: 8}},
		check: func(d dims) dims { return d },
		cost:  func(d dims) (float64, float64) { return f64(d.Batch, d.N, d.N), 16 * f64(d.Batch, d.N, d.N) },
		setBytes: func(d dims) float64 {
			return 8 * f64(d.Batch, d.N, d.N)
		},
		tempBytes: func(dims) float64 { return 0 },
		kernel:    func(backend.Backend, dims) string { return "test.off-by-a-bit" },
		setup: func(b backend.Backend, d, _ dims, ref bool, nbuf int, f *filler) (*instance, error) {
			in := newInstance(b, nbuf)
			x, err := in.alloc(d.Batch, d.N, d.N)
			if err != nil {
				return fail(in, err)
			}
			if err := f.normal(x, 1); err != nil {
				return fail(in, err)
			}
			alpha := 2.0
			if !ref {
				alpha += 1e-6
			}
			in.run = func(int) error { return b.Axpby(x, alpha, x, 0, nil) }
			in.outputs = func(int) []*T { return []*T{x} }
			return in, nil
		},
	}
	workloads = append(slices.Clone(saved), bad)
	path := filepath.Join(t.TempDir(), "wrong.json")
	code, out, errs := runMain(t, "-quick", "-backend", "cpu", "-ops", "test,sphere", "-json", path)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "WRONG") || !strings.Contains(errs, "WRONG") {
		t.Errorf("no WRONG in the output:\n%s\n%s", out, errs)
	}
	rep, err := readReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Records) != 2 {
		t.Fatalf("%d records, want 2", len(rep.Records))
	}
	for _, r := range rep.Records {
		switch r.Workload {
		case "test.wrong":
			if r.Status != statusWrong || r.Median != 0 || r.Reps != 0 || !(r.CheckRelErr > checkTol) {
				t.Errorf("wrong kernel recorded as %+v", r)
			}
		case "sphere.flow":
			if r.Status != statusOK {
				t.Errorf("sphere.flow: %s %s", r.Status, r.Error)
			}
		}
	}
}

// hotWorkloads are the workloads of the default run: the hot operations, no method step.
func hotWorkloads() []*workload {
	var out []*workload
	for _, w := range workloads {
		if !isAlgo(w) {
			out = append(out, w)
		}
	}
	return out
}

// TestQuickAlgos: -quick -algos all runs every method step (and no hot operation), each checked for
// determinism, with a complete JSON record.
func TestQuickAlgos(t *testing.T) {
	path := filepath.Join(t.TempDir(), "algos.json")
	code, out, errs := runMain(t, "-quick", "-backend", "cpu", "-algos", "all", "-json", path)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	rep, err := readReport(path)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, w := range workloads {
		if isAlgo(w) {
			want = append(want, w.name)
		}
	}
	if got := strings.Join(want, ","); got != "algo.mgvb,algo.nnvb,algo.lrvga,algo.sggmc,algo.cholng,algo.rcg,algo.rcg.batch,algo.nssm,algo.nssm.batch" {
		t.Errorf("method workloads %s, want the six methods, the mixture's batch, the NSSM and its batch", got)
	}
	if len(rep.Records) != len(want) {
		t.Fatalf("%d records, want %d (%v)", len(rep.Records), len(want), want)
	}
	for i, r := range rep.Records {
		if r.Workload != want[i] || r.Status != statusOK || r.Check != checkDeterminism || r.CheckRelErr != 0 {
			t.Errorf("record %d: %s status %s check %s (%v): %s", i, r.Workload, r.Status, r.Check, r.CheckRelErr, r.Error)
		}
		for name, v := range map[string]float64{"median": r.Median, "flops": r.Flops, "bytes": r.Bytes, "percent": r.PercentOfFloor} {
			if !finitePositive(v) {
				t.Errorf("%s: %s = %v, want finite and > 0", r.Workload, name, v)
			}
		}
		if !strings.Contains(out, r.Workload) {
			t.Errorf("table has no row for %s", r.Workload)
		}
	}
	if !strings.Contains(out, "determinism") {
		t.Errorf("no note on the determinism check:\n%s", out)
	}
	// -ops and -algos together: both; -algos by full name.
	cfg, err := parseArgs([]string{"-ops", "qr.batch", "-algos", "algo.rcg,mgvb"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range cfg.ops {
		got = append(got, w.name)
	}
	if strings.Join(got, ",") != "qr.batch,algo.rcg,algo.mgvb" {
		t.Errorf("-ops qr.batch -algos algo.rcg,mgvb selected %v", got)
	}
}

// TestParseReportPositions: malformed JSON and a value of the wrong type are reported with the file, line and
// column where decoding stopped.
func TestParseReportPositions(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"{\n  \"schema\": \"x\",\n  \"records\": [1,}\n", "r.json:3:17: "},
		{"{\n\"schema\": 5}", "r.json:2:12: "},
		{"", "r.json:1:1: "},
	} {
		_, err := parseReport([]byte(c.in), "r.json")
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to start with %q", c.in, err, c.want)
		}
	}
}

// FuzzParseReport: any input is a report or an error naming the file, and comparing a report with itself does not
// panic.
func FuzzParseReport(f *testing.F) {
	f.Add([]byte(`{"schema":"` + schemaVersion + `","records":[{"backend":"cpu","workload":"qr.batch","median_s":0.001,"status":"ok"}]}`))
	f.Add([]byte(`{"schema":"` + schemaVersion + `","records":[{"median_s":0,"status":"ok"},{"status":"failed"}]}`))
	f.Add([]byte(`{"schema":5}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := parseReport(data, "fuzz.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.json") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		printCompare(io.Discard, rep, rep, "a", "b")
	})
}

// TestMarkdown: -markdown prints an earlier run as a Markdown table per backend with the command, one row per
// record (a '|' in a cell escaped), and refuses a missing file with exit status 2.
func TestMarkdown(t *testing.T) {
	path, rep := quickRun(t)
	code, out, errs := runMain(t, "-markdown", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| workload") {
			rows++
			if n := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|"); n != 10 {
				t.Errorf("row with %d cell separators, want 10: %s", n, line)
			}
		}
	}
	if rows != len(rep.Records) {
		t.Errorf("%d table rows for %d records:\n%s", rows, len(rep.Records), out)
	}
	if !strings.Contains(out, "`"+rep.Command+"`") || !strings.Contains(out, "| workload | size |") {
		t.Errorf("markdown lacks the command or the header:\n%s", out)
	}
	if code, _, _ := runMain(t, "-markdown", filepath.Join(t.TempDir(), "missing.json")); code != 2 {
		t.Errorf("missing file: exit %d, want 2", code)
	}
}
