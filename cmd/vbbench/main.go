// Command vbbench measures the throughput of geovb's hot operations on every backend asked for, against speed
// limits (floors) measured in the same run.
//
// For each backend it prints the device found, then the floors: memory bandwidth (a large Copy, and a parallel
// element-wise scale, bytes read plus written per second) and the float64 GEMM rate. Each workload (batched QR
// retraction, SPD retraction and transport, Kronecker solve, the low-rank capacitance, Woodbury solve, ensemble
// sampling and recursive-EM step, the sphere geodesic flow) is first checked against its reference implementation
// on a small instance, then timed: warm-up, repeated samples, median and spread, operands rotated over enough
// buffers that caches do not flatter small sizes. With -algos, one iteration of each method named (algos.go) is
// timed the same way, checked for determinism instead of against a reference. The report gives time, GFLOP/s, GB/s and the percentage of the
// workload's floor reached: max(flops / GEMM rate, bytes / bandwidth) / time.
//
// Usage:
//
//	vbbench [flags]
//	vbbench -compare OLD.json NEW.json   compare two earlier runs without running anything
//	vbbench -markdown RUN.json           print an earlier run as the Markdown tables of docs/benchmarks.md
//
// Examples:
//
//	go run ./cmd/vbbench                               # small and medium sizes on the best backend, about a minute
//	go run ./cmd/vbbench -quick                         # a few seconds (CI)
//	go run ./cmd/vbbench -sizes large -ops lowrank      # d = 1e6, p = 100
//	go run ./cmd/vbbench -d 1000000 -p 100 -k 10        # explicit dimensions (the workloads using d, p and k)
//	go run ./cmd/vbbench -algos all                     # one iteration of each method (algo.*) instead of the hot ops
//	go run ./cmd/vbbench -backend cpu,cuda              # side by side, with ratios
//	go run ./cmd/vbbench -json new.json -compare old.json
//
// Exit status: 0 on success, 1 when a workload fails or a kernel disagrees with its reference (reported WRONG),
// 2 for a usage error (unknown flag, backend, workload or size; sizes that do not fit in memory).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/geovb/geovb/backend"
	_ "github.com/geovb/geovb/backend/all"
	"github.com/geovb/geovb/backend/cpu"
)

func main() {
	cpu.UseForGonum() // the models' gonum calls and the backend's LAPACK on the CPU backend's kernels
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is a problem with the command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// config is the parsed command line.
type config struct {
	backends   []string
	ops        []*workload
	sizes      []string // size classes, or ["custom"]
	custom     dims     // explicit dims (0 = not set)
	customSet  []string
	quick      bool
	reps       int
	seed       uint64
	jsonPath   string
	csvPath    string
	compare    string
	markdown   string // -markdown FILE: print an earlier -json FILE as Markdown (no run)
	compareNew string // second file of -compare OLD NEW (no run)
	list       bool
	command    string
}

// intFlag is an integer flag that also takes exponent notation (1e6).
type intFlag struct{ v *int }

func (f intFlag) String() string {
	if f.v == nil {
		return "0"
	}
	return strconv.Itoa(*f.v)
}

func (f intFlag) Set(s string) error {
	if n, err := strconv.Atoi(s); err == nil {
		*f.v = n
		return nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || x != math.Trunc(x) || math.Abs(x) > 1<<53 {
		return fmt.Errorf("not an integer: %q", s)
	}
	*f.v = int(x)
	return nil
}

const sizeClasses = "quick, small, medium, large"

func parseArgs(args []string, stderr io.Writer) (*config, error) {
	cfg := &config{command: strings.Join(append([]string{"vbbench"}, args...), " ")}
	fs := flag.NewFlagSet("vbbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backends := fs.String("backend", "", "backends to run, comma-separated (e.g. cpu,cuda); auto is the best that starts (default $GEOVB_BACKEND, else auto)")
	ops := fs.String("ops", "all", "hot-operation workloads to run, comma-separated names or groups (qr, spd, kron, lowrank, sphere, chain), or all; see -list (default all, or none when -algos is given)")
	algos := fs.String("algos", "", "method steps to run, comma-separated method names (mgvb, nnvb, lrvga, sggmc, cholng, rcg, nssm, nssm.batch) or all: the algo.* workloads (default none)")
	sizes := fs.String("sizes", "small,medium", "size classes, comma-separated: small, medium, large, quick, or all")
	fs.Var(intFlag{&cfg.custom.Batch}, "batch", "explicit dimension `N`: batch count (qr.batch, spd.*, kron.solve, sphere.flow, chain.natgrad, gh.*; for algo.*, -list)")
	fs.Var(intFlag{&cfg.custom.M}, "m", "explicit dimension `N`: rows of G (kron.solve), spheres per state (sphere.flow), chains per state (chain.natgrad), hidden units (gh.*)")
	fs.Var(intFlag{&cfg.custom.N}, "n", "explicit dimension `N`: rows (qr.batch), matrix order (spd.*), columns of G (kron.solve), sphere ambient dimension (sphere.flow), chain length (chain.natgrad), steps (gh.*; for algo.*, -list)")
	fs.Var(intFlag{&cfg.custom.D}, "d", "explicit dimension `N`: rows of W or of the tall matrix (lowrank.*, qr.tall)")
	fs.Var(intFlag{&cfg.custom.P}, "p", "explicit dimension `N`: columns (rank) of W or of the Stiefel matrix (lowrank.*, qr.*)")
	fs.Var(intFlag{&cfg.custom.K}, "k", "explicit dimension `N`: right-hand sides (lowrank.solve), draws (lowrank.sample), new columns X (lowrank.em_step; for algo.*, -list)")
	fs.BoolVar(&cfg.quick, "quick", false, "CI mode: tiny sizes, few repetitions, short floors, a few seconds in all (with explicit dimensions: those, timed briefly)")
	fs.IntVar(&cfg.reps, "reps", 0, "timed samples per workload (0: as many as fit in about a second, at least 5)")
	seed := fs.Uint64("seed", 1, "seed of the random operands")
	fs.StringVar(&cfg.jsonPath, "json", "", "write one JSON record per workload to `FILE`")
	fs.StringVar(&cfg.csvPath, "csv", "", "write one CSV row per workload to `FILE`")
	fs.StringVar(&cfg.compare, "compare", "", "print the change against an earlier -json `FILE` (with a second file argument: compare the two, no run)")
	fs.BoolVar(&cfg.list, "list", false, "list the workloads and their sizes, then exit")
	fs.StringVar(&cfg.markdown, "markdown", "", "print an earlier -json `FILE` as the Markdown tables of docs/benchmarks.md, then exit (no run)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: vbbench [flags]\n       vbbench -compare OLD.json NEW.json\n\n"+
			"Throughput of geovb's hot operations on each backend, against memory-bandwidth and GEMM floors\n"+
			"measured in the same run. Exit status 1 when a kernel disagrees with its reference (WRONG).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	// The flag package's own messages are replaced by one line (and the full usage only on -h).
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
			return nil, err
		}
		return nil, usagef("%v", err)
	}
	cfg.seed = *seed
	if rest := fs.Args(); len(rest) > 0 {
		if cfg.compare == "" || len(rest) != 1 {
			return nil, usagef("unexpected arguments %q (a second file is only taken by -compare OLD.json NEW.json)", rest)
		}
		cfg.compareNew = rest[0]
		return cfg, nil
	}
	if cfg.reps < 0 {
		return nil, usagef("-reps %d: want ≥ 0", cfg.reps)
	}
	// An output file the run could not write is reported now, not after the whole benchmark.
	for _, p := range []string{cfg.jsonPath, cfg.csvPath} {
		if p == "" {
			continue
		}
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return nil, usagef("cannot write %s: it is a folder", p)
		}
		f, err := os.CreateTemp(filepath.Dir(p), ".vbbench-*")
		if err != nil {
			return nil, usagef("cannot write %s: %v", p, err)
		}
		f.Close()
		os.Remove(f.Name())
	}

	// Backends: known names only (checked before anything starts).
	known := backend.Registered()
	for _, name := range strings.Split(*backends, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" {
			name = os.Getenv(backend.EnvVar)
			if name == "" {
				name = "auto"
			}
		}
		if name != "auto" && !slices.Contains(known, name) {
			return nil, usagef("unknown backend %q (compiled in: %s, or auto)", name, strings.Join(known, ", "))
		}
		if slices.Contains(cfg.backends, name) {
			return nil, usagef("backend %q given twice", name)
		}
		cfg.backends = append(cfg.backends, name)
	}

	// Explicit dims replace the size classes.
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(dimNames, f.Name) {
			cfg.customSet = append(cfg.customSet, f.Name)
		}
	})
	sizesSet := false
	fs.Visit(func(f *flag.Flag) { sizesSet = sizesSet || f.Name == "sizes" })
	for _, name := range cfg.customSet {
		if v := *cfg.custom.field(name); v < 1 {
			return nil, usagef("-%s %d: want ≥ 1", name, v)
		}
	}
	switch {
	case len(cfg.customSet) > 0 && sizesSet:
		return nil, usagef("explicit dimensions (-%s) replace -sizes; give one or the other", strings.Join(cfg.customSet, ", -"))
	case len(cfg.customSet) > 0:
		cfg.sizes = []string{"custom"}
	case cfg.quick && sizesSet:
		return nil, usagef("-quick sets the sizes; drop -sizes")
	case cfg.quick:
		cfg.sizes = []string{"quick"}
	default:
		for _, s := range strings.Split(*sizes, ",") {
			s = strings.TrimSpace(s)
			if s == "all" {
				cfg.sizes = append(cfg.sizes, "small", "medium", "large")
				continue
			}
			if !slices.Contains(strings.Split(sizeClasses, ", "), s) {
				return nil, usagef("unknown size %q (want %s, all, or explicit -d, -p, … dimensions)", s, sizeClasses)
			}
			if !slices.Contains(cfg.sizes, s) {
				cfg.sizes = append(cfg.sizes, s)
			}
		}
	}

	// Workloads: names or groups; with explicit dims, "all" means the workloads that use every dim given. -ops
	// selects the hot operations, -algos the method steps; without -ops, -algos runs the methods alone.
	opsSet := false
	fs.Visit(func(f *flag.Flag) { opsSet = opsSet || f.Name == "ops" })
	if !opsSet && *algos != "" {
		*ops = ""
	}
	if err := cfg.selectWorkloads(*ops, false); err != nil {
		return nil, err
	}
	if err := cfg.selectWorkloads(*algos, true); err != nil {
		return nil, err
	}
	for _, w := range cfg.ops {
		for _, name := range cfg.customSet {
			if !slices.Contains(w.uses, name) {
				return nil, usagef("workload %s has no dimension -%s (it uses %s)", w.name, name, strings.Join(w.uses, ", "))
			}
		}
	}
	return cfg, nil
}

// selectWorkloads adds to cfg.ops the workloads a -ops list (algo false: hot operations, by name or group) or an
// -algos list (algo true: method steps, by method name or full name) names.
func (cfg *config) selectWorkloads(list string, algo bool) error {
	if strings.TrimSpace(list) == "" {
		return nil
	}
	var names []string
	for _, w := range workloads {
		if isAlgo(w) == algo {
			names = append(names, w.name)
		}
	}
	flagName := "-ops"
	if algo {
		flagName = "-algos"
	}
	for _, o := range strings.Split(list, ",") {
		o = strings.TrimSpace(o)
		var matched []*workload
		for _, w := range workloads {
			if isAlgo(w) != algo {
				continue
			}
			group, method, _ := strings.Cut(w.name, ".")
			if algo {
				group = method // -algos takes the method name: "mgvb" for algo.mgvb
			}
			switch {
			case o == "all" && len(cfg.customSet) > 0:
				if usesAll(w, cfg.customSet) {
					matched = append(matched, w)
				}
			case o == "all", o == w.name, o == group:
				matched = append(matched, w)
			}
		}
		if len(matched) == 0 {
			if o == "all" {
				return usagef("no %s workload uses all of -%s", flagName, strings.Join(cfg.customSet, ", -"))
			}
			hint := "or a group before the dot, or all"
			if algo {
				hint = "or the method name after the dot, or all"
			}
			return usagef("%s: unknown workload %q (have %s; %s)", flagName, o, strings.Join(names, ", "), hint)
		}
		for _, w := range matched {
			if !slices.Contains(cfg.ops, w) {
				cfg.ops = append(cfg.ops, w)
			}
		}
	}
	return nil
}

func usesAll(w *workload, names []string) bool {
	for _, n := range names {
		if !slices.Contains(w.uses, n) {
			return false
		}
	}
	return true
}

// benchCase is one workload at one size.
type benchCase struct {
	w    *workload
	size string
	d    dims
}

func (cfg *config) cases() []benchCase {
	var out []benchCase
	for _, size := range cfg.sizes {
		for _, w := range cfg.ops {
			var d dims
			if size == "custom" {
				d = w.sizes["medium"]
				for _, name := range cfg.customSet {
					*d.field(name) = *cfg.custom.field(name)
				}
			} else {
				var ok bool
				if d, ok = w.sizes[size]; !ok {
					continue
				}
			}
			out = append(out, benchCase{w: w, size: size, d: d})
		}
	}
	return out
}

func (cfg *config) timingFor(size string) timing {
	tm := timingDefault
	switch {
	case cfg.quick:
		tm = timingQuick
	case size == "large" || size == "custom":
		tm = timingLarge
	}
	if cfg.reps > 0 {
		tm.reps = cfg.reps
	}
	return tm
}

// timingForBackend is timingFor with the rotation span raised to twice the backend's largest cache, when the
// backend reports one (Info.Extra "l3_bytes" or "l2_bytes"), so that rotated operands do not stay in it. -quick
// keeps its small span: its figures are not meant to be read.
func (cfg *config) timingForBackend(size string, in backend.Info) timing {
	tm := cfg.timingFor(size)
	if cfg.quick {
		return tm
	}
	for _, k := range []string{"l3_bytes", "l2_bytes"} {
		if v, err := strconv.ParseFloat(in.Extra[k], 64); err == nil && v > 0 {
			tm.rotate = max(tm.rotate, 2*v)
			break
		}
	}
	return tm
}

// floorTiming is the timing of the floors: quick in -quick mode.
func (cfg *config) floorTiming() timing {
	if cfg.quick {
		return timingQuick
	}
	return timingDefault
}

// buffers returns how many operand sets a case rotates over.
func buffers(tm timing, setBytes float64) int {
	if setBytes <= 0 {
		return 1
	}
	return min(max(int(math.Ceil(tm.rotate/setBytes)), 1), tm.maxBufs)
}

// needBytes estimates the memory a case uses on one backend: its rotated operand sets, the temporaries of a call
// and the Go heap's headroom.
func needBytes(c benchCase, tm timing) float64 {
	set := c.w.setBytes(c.d)
	return 1.25*float64(buffers(tm, set))*set + c.w.tempBytes(c.d)
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseArgs(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "vbbench: %v\n", err)
		fmt.Fprintf(stderr, "run 'vbbench -h' for usage\n")
		return 2
	}
	if cfg.list {
		printList(stdout)
		return 0
	}
	if cfg.markdown != "" {
		rep, err := readReport(cfg.markdown)
		if err != nil {
			fmt.Fprintf(stderr, "vbbench: %v\n", err)
			return 2
		}
		printMarkdown(stdout, rep)
		return 0
	}
	if cfg.compareNew != "" {
		old, err := readReport(cfg.compare)
		if err != nil {
			fmt.Fprintf(stderr, "vbbench: %v\n", err)
			return 2
		}
		cur, err := readReport(cfg.compareNew)
		if err != nil {
			fmt.Fprintf(stderr, "vbbench: %v\n", err)
			return 2
		}
		printCompare(stdout, old, cur, cfg.compare, cfg.compareNew)
		return 0
	}
	var old *report
	if cfg.compare != "" {
		// Read it first: a bad file is a usage error before minutes of measuring.
		if old, err = readReport(cfg.compare); err != nil {
			fmt.Fprintf(stderr, "vbbench: %v\n", err)
			return 2
		}
	}
	rep, code := benchmark(cfg, stdout, stderr)
	if rep == nil {
		return code
	}
	if cfg.jsonPath != "" {
		if err := writeJSON(cfg.jsonPath, rep); err != nil {
			fmt.Fprintf(stderr, "vbbench: %v\n", err)
			return 1
		}
	}
	if cfg.csvPath != "" {
		if err := writeCSV(cfg.csvPath, rep); err != nil {
			fmt.Fprintf(stderr, "vbbench: %v\n", err)
			return 1
		}
	}
	if old != nil {
		fmt.Fprintln(stdout)
		printCompare(stdout, old, rep, cfg.compare, "this run")
	}
	return code
}

// opened is one running backend with its description and floors.
type opened struct {
	asked  string // the name given to -backend
	b      backend.Backend
	info   backend.Info
	floors floors
}

// benchmark opens the backends, checks memory, measures floors and runs every case. It returns the report and the
// exit status; a nil report means nothing was measured.
func benchmark(cfg *config, stdout, stderr io.Writer) (*report, int) {
	prog := newProgress(stderr)
	cases := cfg.cases()
	if len(cases) == 0 {
		fmt.Fprintf(stderr, "vbbench: no workload has size %s\n", strings.Join(cfg.sizes, ", "))
		return nil, 2
	}
	var bes []*opened
	defer func() {
		for _, o := range bes {
			o.b.Close()
		}
	}()
	for _, name := range cfg.backends {
		b, skipped, err := backend.OpenReport(name)
		if err != nil {
			fmt.Fprintf(stderr, "vbbench: %v\n", err)
			return nil, 2
		}
		for _, s := range skipped {
			fmt.Fprintf(stdout, "note: backend %s is not available (%v); %s runs on %s\n", s.Name, s.Err, name, b.Name())
		}
		for _, o := range bes {
			if o.b.Name() == b.Name() {
				fmt.Fprintf(stderr, "vbbench: backends %q and %q are the same (%s)\n", o.asked, name, b.Name())
				b.Close()
				return nil, 2
			}
		}
		bes = append(bes, &opened{asked: name, b: b, info: b.Info()})
	}
	// Memory: every case on every backend, before anything is allocated.
	for _, o := range bes {
		avail := availableBytes(o.b)
		if avail <= 0 {
			continue
		}
		for _, c := range cases {
			if need := needBytes(c, cfg.timingForBackend(c.size, o.info)); need > 0.9*float64(avail) {
				fmt.Fprintf(stderr, "vbbench: %s %s (%s) needs about %s on %s, %s available; choose smaller sizes\n",
					c.w.name, c.size, c.d.label(c.w.uses), fmtBytes(need), o.b.Name(), fmtBytes(float64(avail)))
				return nil, 2
			}
		}
	}

	rep := &report{
		Schema:  schemaVersion,
		Date:    time.Now().UTC().Format(time.RFC3339),
		Command: cfg.command,
		Go:      runtime.Version(),
		OS:      runtime.GOOS,
		Arch:    runtime.GOARCH,
	}
	for _, o := range bes {
		printHeader(stdout, o.info)
		err := measureFloors(o.b, cfg.floorTiming(), &o.floors, func(s string) { prog.set(o.b.Name() + " " + s) })
		prog.clear()
		if err != nil {
			fmt.Fprintf(stderr, "vbbench: %s floors: %v\n", o.b.Name(), err)
			return nil, 1
		}
		printFloors(stdout, "floors:", o.floors)
	}
	fmt.Fprintln(stdout)

	code := 0
	total := len(cases) * len(bes)
	done := 0
	for _, c := range cases {
		for _, o := range bes {
			done++
			tag := fmt.Sprintf("[%d/%d] %s %s %s", done, total, o.b.Name(), c.w.name, c.size)
			rec := runCase(o, c, cfg, func(s string) { prog.set(tag + ": " + s) })
			prog.clear()
			if rec.Status != statusOK {
				code = 1
				prog.log(fmt.Sprintf("%s: %s: %s", tag, strings.ToUpper(rec.Status), rec.Error))
			}
			rep.Records = append(rep.Records, rec)
		}
	}
	// The floors again, after the workloads: the best of both measurements is used.
	for _, o := range bes {
		if !cfg.quick {
			err := measureFloors(o.b, cfg.floorTiming(), &o.floors, func(s string) { prog.set(o.b.Name() + " " + s + " (again)") })
			prog.clear()
			if err != nil {
				fmt.Fprintf(stderr, "vbbench: %s floors: %v\n", o.b.Name(), err)
				return nil, 1
			}
		}
		rep.Backends = append(rep.Backends, newBackendReport(o.info, o.floors))
		for i := range rep.Records {
			if rep.Records[i].Backend == o.b.Name() {
				applyFloors(&rep.Records[i], o.floors)
			}
		}
	}
	printTable(stdout, rep)
	for _, r := range rep.Records {
		if r.Check == checkDeterminism {
			fmt.Fprintln(stdout, "algo.*: method steps have no reference implementation; each is checked for determinism instead (two runs from the same seed agree, no NaN)")
			break
		}
	}
	for _, o := range bes {
		if len(o.floors.Runs) > 1 {
			printFloors(stdout, o.b.Name()+" floors used:", o.floors)
		}
	}
	if len(bes) > 1 {
		printRatios(stdout, rep, bes)
	}
	return rep, code
}

// runCase checks and times one case on one backend.
func runCase(o *opened, c benchCase, cfg *config, progress func(string)) record {
	b := o.b
	tm := cfg.timingForBackend(c.size, o.info)
	rec := record{
		Backend: b.Name(), Device: o.info.Device, Library: o.info.Library,
		Workload: c.w.name, Op: c.w.op, Size: c.size, Dims: c.d, DimsLabel: c.d.label(c.w.uses),
		Dtype: "float64", Kernel: c.w.kernel(b, c.d),
	}
	rec.Flops, rec.Bytes = c.w.cost(c.d)
	releaseMemory()
	rssOK := resetPeakRSS()

	progress("check against the reference")
	relErr, err := checkKernel(b, c.w, c.d, cfg.seed+1000)
	rec.CheckRelErr = relErr
	rec.CheckDims = c.w.check(c.d).label(c.w.uses)
	rec.Check = checkReference
	if c.w.checkKind != "" {
		rec.Check = c.w.checkKind
	}
	if err != nil {
		rec.Status, rec.Error = statusError, err.Error()
		if errors.Is(err, errWrong) {
			rec.Status = statusWrong
		}
		return rec
	}

	progress("allocating")
	nbuf := buffers(tm, c.w.setBytes(c.d))
	f := &filler{b: b, seed: cfg.seed}
	in, err := c.w.setup(b, c.d, c.d, false, nbuf, f)
	if err != nil {
		rec.Status, rec.Error = statusError, err.Error()
		return rec
	}
	rec.Buffers = nbuf
	memIn := b.MemInUse()
	st, err := sample(b, in, tm, progress)
	memIn = max(memIn, b.MemInUse())
	in.close()
	if err != nil {
		rec.Status, rec.Error = statusError, err.Error()
		return rec
	}
	if !(st.Median > 0) || math.IsInf(st.Max, 0) {
		rec.Status, rec.Error = statusError, fmt.Sprintf("clock gave %v s per call", st.Median)
		return rec
	}
	rec.Status = statusOK
	rec.Reps, rec.Inner = st.Reps, st.Inner
	rec.Median, rec.Min, rec.Max, rec.Spread = st.Median, st.Min, st.Max, st.Spread
	rec.GFLOPS = rec.Flops / st.Median / 1e9
	rec.GBps = rec.Bytes / st.Median / 1e9
	rec.BackendMemBytes = memIn
	if rssOK {
		rec.PeakRSSBytes = peakHostBytes()
	}
	return rec
}
