package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/geovb/geovb/backend"
)

// schemaVersion names the layout of the JSON report; change it when a field changes meaning.
const schemaVersion = "geovb-vbbench/1"

// Record statuses.
const (
	statusOK    = "ok"
	statusWrong = "wrong" // the kernel disagrees with the reference: not timed
	statusError = "error" // the workload failed to run
)

// report is the whole run, as written by -json.
type report struct {
	Schema   string          `json:"schema"`
	Date     string          `json:"date"`
	Command  string          `json:"command"`
	Go       string          `json:"go"`
	OS       string          `json:"os"`
	Arch     string          `json:"arch"`
	Backends []backendReport `json:"backends"`
	Records  []record        `json:"records"`
}

// backendReport describes one backend of the run (from backend.Info) and its floors.
type backendReport struct {
	Name     string            `json:"name"`
	Device   string            `json:"device"`
	Library  string            `json:"library"`
	Cores    int               `json:"cores"`
	Features []string          `json:"features"`
	Memory   int64             `json:"memory_bytes"` // device memory; 0 for host memory
	Extra    map[string]string `json:"extra,omitempty"`
	Floors   floors            `json:"floors"`
}

func newBackendReport(in backend.Info, fl floors) backendReport {
	return backendReport{Name: in.Name, Device: in.Device, Library: in.Library, Cores: in.Cores,
		Features: in.Features, Memory: in.Memory, Extra: in.Extra, Floors: fl}
}

// record is one workload at one size on one backend. Times are seconds per call.
type record struct {
	Backend         string  `json:"backend"`
	Device          string  `json:"device"`
	Library         string  `json:"library"`
	Workload        string  `json:"workload"`
	Op              string  `json:"op"`
	Size            string  `json:"size"`
	Dims            dims    `json:"dims"`
	DimsLabel       string  `json:"dims_label"`
	Dtype           string  `json:"dtype"`
	Kernel          string  `json:"kernel"`
	Status          string  `json:"status"`
	Error           string  `json:"error,omitempty"`
	Check           string  `json:"check"` // "reference", or "determinism" for a method step (no reference)
	CheckDims       string  `json:"check_dims"`
	CheckRelErr     float64 `json:"check_rel_err"`
	Buffers         int     `json:"buffers"`
	Reps            int     `json:"reps"`
	Inner           int     `json:"calls_per_sample"`
	Median          float64 `json:"time_median_s"`
	Min             float64 `json:"time_min_s"`
	Max             float64 `json:"time_max_s"`
	Spread          float64 `json:"spread"` // (max − min) / median
	Flops           float64 `json:"flops"`
	Bytes           float64 `json:"bytes"`
	GFLOPS          float64 `json:"gflops"`
	GBps            float64 `json:"gbps"`
	FloorKind       string  `json:"floor_kind"` // "flop" or "byte": the larger of the two floor times
	FloorSeconds    float64 `json:"floor_s"`
	PercentOfFloor  float64 `json:"percent_of_floor"`
	Suspect         bool    `json:"suspect"` // above 100% of the floor: a measurement error
	PeakRSSBytes    int64   `json:"peak_rss_bytes"`
	BackendMemBytes int64   `json:"backend_mem_bytes"`
}

func (r *record) key() string { return r.Backend + "|" + r.Workload + "|" + r.DimsLabel }

// ---- terminal ----

// progress writes a one-line status to stderr, rewritten in place on a terminal and not at all otherwise (logs
// and tests get the final messages only).
type progress struct {
	w   io.Writer
	tty bool
	n   int // width of the line on screen
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) set(s string) {
	if !p.tty {
		return
	}
	if len(s) > 100 {
		s = s[:100]
	}
	pad := max(p.n-len([]rune(s)), 0)
	fmt.Fprintf(p.w, "\r%s%s", s, strings.Repeat(" ", pad))
	p.n = len([]rune(s))
}

func (p *progress) clear() {
	if p.tty && p.n > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.n))
		p.n = 0
	}
}

// log prints a line that stays.
func (p *progress) log(s string) {
	p.clear()
	fmt.Fprintln(p.w, "vbbench: "+s)
}

func printHeader(w io.Writer, in backend.Info) {
	fmt.Fprintf(w, "backend %s: %s\n", in.Name, in.Device)
	fmt.Fprintf(w, "  library:  %s\n", in.Library)
	cores := fmt.Sprintf("%d", in.Cores)
	if in.Extra != nil {
		var extra []string
		for _, k := range []string{"physical_cores", "logical_cores", "gomaxprocs"} {
			if v, ok := in.Extra[k]; ok {
				extra = append(extra, strings.ReplaceAll(k, "_", " ")+" "+v)
			}
		}
		if len(extra) > 0 {
			cores += " workers (" + strings.Join(extra, ", ") + ")"
		}
	}
	fmt.Fprintf(w, "  cores:    %s\n", cores)
	if len(in.Features) > 0 {
		fmt.Fprintf(w, "  features: %s\n", strings.Join(in.Features, " "))
	}
	if in.Memory > 0 {
		fmt.Fprintf(w, "  memory:   %s\n", fmtBytes(float64(in.Memory)))
	}
	var keys []string
	for k := range in.Extra {
		if !slices.Contains([]string{"physical_cores", "logical_cores", "gomaxprocs"}, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) > 0 {
		var kv []string
		for _, k := range keys {
			v := in.Extra[k]
			if strings.HasSuffix(k, "_bytes") {
				if n, err := strconv.ParseFloat(v, 64); err == nil && n > 0 {
					v = fmtBytes(n)
				}
			}
			kv = append(kv, k+" "+v)
		}
		fmt.Fprintf(w, "  details:  %s\n", strings.Join(kv, ", "))
	}
}

func printFloors(w io.Writer, label string, fl floors) {
	r := fl.Runs[len(fl.Runs)-1]
	if len(fl.Runs) == 1 {
		fmt.Fprintf(w, "  %s   bandwidth %.1f GB/s (read + written, %s: Copy %.1f, scale %.1f, in place %.1f), "+
			"GEMM %.1f GFLOP/s (float64, n = %d, %.2f s)\n",
			label, fl.BandGBps, fmtBytes(float64(fl.BandBytes)), r.CopyGBps, r.ScaleGBps, r.InPlaceGBps,
			fl.GemmGFLOPS, fl.GemmN, r.GemmSeconds)
		return
	}
	var bw, gf []string
	for _, r := range fl.Runs {
		bw = append(bw, fmt.Sprintf("%.1f", r.bandwidth()))
		gf = append(gf, fmt.Sprintf("%.1f", r.GemmGFLOPS))
	}
	fmt.Fprintf(w, "%s bandwidth %.1f GB/s, GEMM %.1f GFLOP/s: the best of the measurements before and after the "+
		"workloads (bandwidth %s GB/s; GEMM %s GFLOP/s)\n", label, fl.BandGBps, fl.GemmGFLOPS,
		strings.Join(bw, ", "), strings.Join(gf, ", "))
}

// table is a text table with left-aligned text columns and right-aligned number columns.
type table struct {
	head  []string
	right []bool
	rows  [][]string
}

func newTable(cols ...string) *table {
	t := &table{}
	for _, c := range cols {
		// A leading '>' marks a right-aligned column.
		r := strings.HasPrefix(c, ">")
		t.head = append(t.head, strings.TrimPrefix(c, ">"))
		t.right = append(t.right, r)
	}
	return t
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	width := make([]int, len(t.head))
	for _, r := range append([][]string{t.head}, t.rows...) {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range append([][]string{t.head}, t.rows...) {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if t.right[i] {
				b.WriteString(pad + c)
			} else if i < len(r)-1 {
				b.WriteString(c + pad)
			} else {
				b.WriteString(c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

func printTable(w io.Writer, rep *report) {
	multi := len(rep.Backends) > 1
	cols := []string{"workload", "size", "dims", "kernel", ">median", ">spread", ">GFLOP/s", ">GB/s", "floor",
		">% floor", ">peak RSS", ">backend mem"}
	if multi {
		cols = append([]string{"backend"}, cols...)
	}
	t := newTable(cols...)
	for _, r := range rep.Records {
		cells := []string{r.Workload, r.Size, r.DimsLabel, r.Kernel}
		if multi {
			cells = append([]string{r.Backend}, cells...)
		}
		switch r.Status {
		case statusOK:
			pct := fmt.Sprintf("%.1f%%", r.PercentOfFloor)
			if r.Suspect {
				pct += " (!)"
			}
			rss := "-"
			if r.PeakRSSBytes > 0 {
				rss = fmtBytes(float64(r.PeakRSSBytes))
			}
			cells = append(cells, fmtSeconds(r.Median), fmt.Sprintf("%.0f%%", 100*r.Spread), fmtRate(r.GFLOPS),
				fmtRate(r.GBps), r.FloorKind, pct, rss, fmtBytes(float64(r.BackendMemBytes)))
		default:
			cells = append(cells, strings.ToUpper(r.Status), "", "", "", "", "", "", "")
		}
		t.add(cells...)
	}
	t.write(w)
	fmt.Fprintln(w, "median: time per call; spread: (max − min)/median of the samples; floor: the larger of "+
		"flops / GEMM rate and bytes / bandwidth;\n% floor: floor time / median (100% = at the floor; (!): above "+
		"100%, a count is wrong or the floor is not the device's limit); peak RSS: process high-water mark during the workload")
	for _, r := range rep.Records {
		if r.Status != statusOK {
			fmt.Fprintf(w, "%s %s %s on %s: %s\n", strings.ToUpper(r.Status), r.Workload, r.Size, r.Backend, r.Error)
		}
	}
}

// printRatios prints, for each case, the time on the first backend divided by the time on each other one.
func printRatios(w io.Writer, rep *report, bes []*opened) {
	fmt.Fprintln(w)
	base := bes[0].b.Name()
	cols := []string{"workload", "size", ">" + base}
	for _, o := range bes[1:] {
		cols = append(cols, ">"+o.b.Name(), ">"+base+"/"+o.b.Name())
	}
	t := newTable(cols...)
	byKey := map[string]record{}
	var order []string
	for _, r := range rep.Records {
		k := r.Workload + "|" + r.Size
		byKey[r.Backend+"|"+k] = r
		if !slices.Contains(order, k) {
			order = append(order, k)
		}
	}
	for _, k := range order {
		wl, size, _ := strings.Cut(k, "|")
		b0 := byKey[base+"|"+k]
		cells := []string{wl, size, timeOrStatus(b0)}
		for _, o := range bes[1:] {
			r := byKey[o.b.Name()+"|"+k]
			ratio := "-"
			if b0.Status == statusOK && r.Status == statusOK {
				ratio = fmt.Sprintf("%.2f×", b0.Median/r.Median)
			}
			cells = append(cells, timeOrStatus(r), ratio)
		}
		t.add(cells...)
	}
	t.write(w)
	fmt.Fprintf(w, "%s/x: time on %s over time on x (above 1: x is faster)\n", base, base)
}

func timeOrStatus(r record) string {
	if r.Status == statusOK {
		return fmtSeconds(r.Median)
	}
	if r.Status == "" {
		return "-"
	}
	return strings.ToUpper(r.Status)
}

func printList(w io.Writer) {
	t := newTable("workload", "op", "size", "dims")
	for _, wl := range workloads {
		first := true
		for _, size := range []string{"quick", "small", "medium", "large"} {
			d, ok := wl.sizes[size]
			if !ok {
				continue
			}
			name, op := "", ""
			if first {
				name, op = wl.name, wl.op
			}
			first = false
			t.add(name, op, size, d.label(wl.uses))
		}
	}
	t.write(w)
	fmt.Fprintln(w)
	for _, wl := range workloads {
		fmt.Fprintf(w, "%-20s %s\n", wl.name, wl.desc)
	}
}

// ---- files ----

// writeAtomic writes a file through a temporary in the same directory and a rename, so a failed run never leaves
// a partial file.
func writeAtomic(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".vbbench-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

func writeJSON(path string, rep *report) error {
	return writeAtomic(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	})
}

// csvHeader lists the CSV columns; csvRow must follow it.
var csvHeader = []string{"backend", "device", "library", "workload", "op", "size", "dims", "dtype", "kernel", "status",
	"time_median_s", "time_min_s", "time_max_s", "spread", "reps", "calls_per_sample", "flops", "bytes", "gflops",
	"gbps", "floor_kind", "floor_s", "percent_of_floor", "suspect", "peak_rss_bytes", "backend_mem_bytes",
	"check_rel_err", "error"}

func csvRow(r record) []string {
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	return []string{r.Backend, r.Device, r.Library, r.Workload, r.Op, r.Size, r.DimsLabel, r.Dtype, r.Kernel,
		r.Status, g(r.Median), g(r.Min), g(r.Max), g(r.Spread), strconv.Itoa(r.Reps), strconv.Itoa(r.Inner),
		g(r.Flops), g(r.Bytes), g(r.GFLOPS), g(r.GBps), r.FloorKind, g(r.FloorSeconds), g(r.PercentOfFloor),
		strconv.FormatBool(r.Suspect), strconv.FormatInt(r.PeakRSSBytes, 10), strconv.FormatInt(r.BackendMemBytes, 10),
		g(r.CheckRelErr), r.Error}
}

func writeCSV(path string, rep *report) error {
	return writeAtomic(path, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.Write(csvHeader); err != nil {
			return err
		}
		for _, r := range rep.Records {
			if err := cw.Write(csvRow(r)); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
}

// readReport reads a -json file and checks that it is one.
func readReport(path string) (*report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseReport(data, path)
}

// parseReport decodes a -json report; errors name the file and, for malformed JSON, the line and column of the
// offending character, for a value of the wrong type those just after the value.
func parseReport(data []byte, path string) (*report, error) {
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			line, col := lineCol(data, syn.Offset-1) // Offset counts the offending byte
			return nil, fmt.Errorf("%s:%d:%d: not a vbbench JSON report: %v", path, line, col, err)
		case errors.As(err, &typ):
			line, col := lineCol(data, typ.Offset)
			return nil, fmt.Errorf("%s:%d:%d: not a vbbench JSON report: %v", path, line, col, err)
		}
		return nil, fmt.Errorf("%s: not a vbbench JSON report: %v", path, err)
	}
	if rep.Schema != schemaVersion {
		return nil, fmt.Errorf("%s: schema %q, want %q", path, rep.Schema, schemaVersion)
	}
	return &rep, nil
}

// lineCol converts a byte offset of data into a 1-based line and column (in bytes).
func lineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte{'\n'})
	return line, int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
}

// printCompare prints, for each record of cur, the change of median time against the record of old with the same
// backend, workload and dims.
func printCompare(w io.Writer, old, cur *report, oldName, curName string) {
	fmt.Fprintf(w, "change from %s (%s) to %s (%s)\n", oldName, old.Date, curName, cur.Date)
	devs := func(r *report) string {
		var s []string
		for _, b := range r.Backends {
			s = append(s, b.Name+": "+b.Device+", "+b.Library)
		}
		return strings.Join(s, "; ")
	}
	if do, dc := devs(old), devs(cur); do != dc {
		fmt.Fprintf(w, "note: different devices or libraries:\n  old: %s\n  new: %s\n", do, dc)
	}
	prev := map[string]record{}
	for _, r := range old.Records {
		prev[r.key()] = r
	}
	t := newTable("backend", "workload", "dims", ">old", ">new", ">change", ">old % floor", ">new % floor")
	seen := map[string]bool{}
	for _, r := range cur.Records {
		seen[r.key()] = true
		o, ok := prev[r.key()]
		change, pctOld, oldT := "new", "-", "-"
		if ok {
			oldT = timeOrStatus(o)
			change = "-"
			if o.Status == statusOK && r.Status == statusOK {
				// Positive is faster: the old time over the new, less one.
				change = fmt.Sprintf("%+.1f%%", 100*(o.Median/r.Median-1))
			}
			if o.Status == statusOK {
				pctOld = fmt.Sprintf("%.1f%%", o.PercentOfFloor)
			}
		}
		pctNew := "-"
		if r.Status == statusOK {
			pctNew = fmt.Sprintf("%.1f%%", r.PercentOfFloor)
		}
		t.add(r.Backend, r.Workload, r.DimsLabel, oldT, timeOrStatus(r), change, pctOld, pctNew)
	}
	for _, o := range old.Records {
		if !seen[o.key()] {
			t.add(o.Backend, o.Workload, o.DimsLabel, timeOrStatus(o), "-", "gone", "-", "-")
		}
	}
	t.write(w)
	fmt.Fprintln(w, "change: speed-up of the median time (+ faster, − slower); differences within the spread are noise")
}

// ---- formatting ----

func fmtSeconds(s float64) string {
	switch {
	case s <= 0 || math.IsNaN(s):
		return "-"
	case s < 1e-6:
		return fmt.Sprintf("%.0f ns", s*1e9)
	case s < 1e-3:
		return fmt.Sprintf("%.1f µs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.2f ms", s*1e3)
	default:
		return fmt.Sprintf("%.2f s", s)
	}
}

func fmtRate(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}

func fmtBytes(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.0f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.0f KiB", b/(1<<10))
	default:
		return fmt.Sprintf("%.0f B", b)
	}
}
