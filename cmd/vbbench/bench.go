package main

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// timing controls how long each measurement runs.
type timing struct {
	reps       int           // samples per workload; 0 picks from budget
	minReps    int           // fewest samples when reps is 0
	maxReps    int           // most samples when reps is 0
	budget     time.Duration // time spent sampling one workload when reps is 0
	minSample  time.Duration // a sample repeats the call until it lasts about this long (timer resolution)
	copyBytes  int           // size of the bandwidth test buffer
	floorReps  int           // calls per floor measurement (the best counts)
	gemmTarget time.Duration // the GEMM floor's size is chosen so one call takes about this long
	gemmMaxN   int
	rotate     float64 // operand sets rotate until they span this many bytes (caches do not flatter)
	maxBufs    int
}

var (
	timingDefault = timing{minReps: 5, maxReps: 25, budget: time.Second, minSample: 2 * time.Millisecond,
		copyBytes: 256 << 20, floorReps: 5, gemmTarget: 300 * time.Millisecond, gemmMaxN: 4096, rotate: 64 << 20,
		maxBufs: 64}
	timingQuick = timing{minReps: 3, maxReps: 5, budget: 20 * time.Millisecond, minSample: 200 * time.Microsecond,
		copyBytes: 64 << 20, floorReps: 3, gemmTarget: 20 * time.Millisecond, gemmMaxN: 1024, rotate: 4 << 20, maxBufs: 8}
	// timingLarge is used for large sizes, where one call can take seconds.
	timingLarge = timing{minReps: 3, maxReps: 10, budget: 3 * time.Second, minSample: 2 * time.Millisecond,
		copyBytes: 256 << 20, floorReps: 5, gemmTarget: 300 * time.Millisecond, gemmMaxN: 4096, rotate: 64 << 20,
		maxBufs: 64}
)

// floorRun is one measurement of a backend's speed limits.
type floorRun struct {
	CopyGBps    float64 `json:"copy_gbps"`    // backend Copy: bytes read + written per second, in GB/s
	ScaleGBps   float64 `json:"scale_gbps"`   // dst = 1·x through Axpby (parallel on the CPU backend)
	InPlaceGBps float64 `json:"inplace_gbps"` // x = 1·x in place: no write-allocate reads of a separate destination
	GemmGFLOPS  float64 `json:"gemm_gflops"`
	GemmSeconds float64 `json:"gemm_seconds"`
}

// bandwidth is the fastest of the three read + write patterns.
func (r floorRun) bandwidth() float64 { return max(r.CopyGBps, r.ScaleGBps, r.InPlaceGBps) }

// floors are the speed limits of one backend, measured in the same run: before the workloads and, except with
// -quick, again after them. The best of the measurements is used, so that a burst of other work on a shared
// machine during one of them does not lower the floor.
type floors struct {
	BandGBps   float64    `json:"bandwidth_gbps"` // the fastest of Copy, scale and in-place scale: the byte floor's rate
	BandBytes  int64      `json:"bandwidth_buffer_bytes"`
	GemmGFLOPS float64    `json:"gemm_gflops"` // float64 square GEMM: the flop floor's rate
	GemmN      int        `json:"gemm_n"`
	Runs       []floorRun `json:"runs"`
}

func (fl *floors) add(r floorRun) {
	fl.Runs = append(fl.Runs, r)
	fl.BandGBps = max(fl.BandGBps, r.bandwidth())
	fl.GemmGFLOPS = max(fl.GemmGFLOPS, r.GemmGFLOPS)
}

// measureFloors measures the memory bandwidth (Copy, a parallel scale and an in-place scale of a large buffer)
// and the float64 GEMM rate of b, and adds the measurement to fl. The first call chooses the GEMM size; later calls reuse it.
func measureFloors(b backend.Backend, tm timing, fl *floors, progress func(string)) error {
	var r floorRun
	elems := tm.copyBytes / 8
	cols := 4096
	rows := max(elems/cols, 1)
	fl.BandBytes = int64(rows * cols * 8)
	progress("floor: memory bandwidth")
	src, err := b.Alloc(tensor.Shape{Batch: 1, Rows: rows, Cols: cols})
	if err != nil {
		return err
	}
	defer b.Free(src)
	dst, err := b.Alloc(src.Shape())
	if err != nil {
		return err
	}
	defer b.Free(dst)
	f := &filler{b: b, seed: 7}
	if err := f.normal(src, 1); err != nil {
		return err
	}
	moved := 2 * float64(fl.BandBytes) // read + written
	tcopy, err := bestOf(b, tm.floorReps, func() error { return b.Copy(dst, src) })
	if err != nil {
		return err
	}
	tscale, err := bestOf(b, tm.floorReps, func() error { return b.Axpby(dst, 1, src, 0, nil) })
	if err != nil {
		return err
	}
	// In place, the written lines are the ones just read: a kernel that updates its operands in place (sphere.flow,
	// the QR retraction) moves bytes at this rate, above a copy's, which also reads each destination line before
	// writing it on most CPUs.
	tin, err := bestOf(b, tm.floorReps, func() error { return b.Axpby(src, 1, src, 0, nil) })
	if err != nil {
		return err
	}
	r.CopyGBps = moved / tcopy / 1e9
	r.ScaleGBps = moved / tscale / 1e9
	r.InPlaceGBps = moved / tin / 1e9

	progress("floor: GEMM rate")
	n := fl.GemmN
	for n == 0 {
		n = 256
		for {
			t, err := gemmTime(b, n, 1)
			if err != nil {
				return err
			}
			if t >= tm.gemmTarget.Seconds()/8 || n >= tm.gemmMaxN {
				// Scale to the target time (t ∝ n³), on a multiple of 64.
				n = int(float64(n) * math.Cbrt(tm.gemmTarget.Seconds()/t))
				n = min(max(64*((n+32)/64), 64), tm.gemmMaxN)
				break
			}
			n *= 2
		}
	}
	t, err := gemmTime(b, n, max(tm.floorReps-2, 1))
	if err != nil {
		return err
	}
	fl.GemmN, r.GemmSeconds = n, t
	r.GemmGFLOPS = 2 * float64(n) * float64(n) * float64(n) / t / 1e9
	fl.add(r)
	return nil
}

// applyFloors sets a record's floor and percentage from the backend's floors.
func applyFloors(rec *record, fl floors) {
	if rec.Status != statusOK {
		return
	}
	flopFloor := rec.Flops / (fl.GemmGFLOPS * 1e9)
	byteFloor := rec.Bytes / (fl.BandGBps * 1e9)
	if flopFloor >= byteFloor {
		rec.FloorKind, rec.FloorSeconds = "flop", flopFloor
	} else {
		rec.FloorKind, rec.FloorSeconds = "byte", byteFloor
	}
	rec.PercentOfFloor = 100 * rec.FloorSeconds / rec.Median
	// Above 100% a stated count is wrong or the floor is not the device's limit (or caches flattered the run):
	// flag it, never hide it.
	rec.Suspect = rec.PercentOfFloor > 100
}

// gemmTime returns the shortest time of reps calls of an n×n×n float64 GEMM (after one warm-up call). A floor is a
// peak rate: the shortest time is the least disturbed by other work on the machine.
func gemmTime(b backend.Backend, n, reps int) (float64, error) {
	s := tensor.Shape{Batch: 1, Rows: n, Cols: n}
	var ts []*T
	defer func() {
		for _, t := range ts {
			b.Free(t)
		}
	}()
	f := &filler{b: b, seed: 11}
	for range 3 {
		t, err := b.Alloc(s)
		if err != nil {
			return 0, err
		}
		ts = append(ts, t)
		if err := f.normal(t, 1); err != nil {
			return 0, err
		}
	}
	return bestOf(b, reps, func() error { return b.Gemm(blas.NoTrans, blas.NoTrans, 1, ts[0], ts[1], 0, ts[2]) })
}

// bestOf returns the shortest of reps timed calls, after one warm-up call.
func bestOf(b backend.Backend, reps int, call func() error) (float64, error) {
	if err := call(); err != nil {
		return 0, err
	}
	best := math.Inf(1)
	for range reps {
		t, err := timeCalls(b, 1, call)
		if err != nil {
			return 0, err
		}
		best = min(best, t)
	}
	return best, nil
}

// timeCalls runs call n times between two device synchronisations and returns the mean time per call in seconds.
func timeCalls(b backend.Backend, n int, call func() error) (float64, error) {
	if err := b.Sync(); err != nil {
		return 0, err
	}
	t0 := time.Now()
	for range n {
		if err := call(); err != nil {
			return 0, err
		}
	}
	if err := b.Sync(); err != nil {
		return 0, err
	}
	return time.Since(t0).Seconds() / float64(n), nil
}

// stats are the samples of one workload, in seconds per call.
type stats struct {
	Median, Min, Max, Spread float64
	Reps, Inner              int
}

// sample times in.run: warm-up over every operand set, then reps samples of inner calls each, rotating the operand
// sets call by call.
func sample(b backend.Backend, in *instance, tm timing, progress func(string)) (stats, error) {
	next := 0
	call := func() error {
		err := in.run(next)
		next = (next + 1) % in.nbuf
		return err
	}
	// Warm-up: every operand set once (pages touched, kernels compiled, the backend's caches filled), and a second
	// call unless one call takes long enough that a second warm-up call would only cost time.
	progress("warm-up")
	var one float64
	for i := 0; i < max(in.nbuf, 2); i++ {
		t, err := timeCalls(b, 1, call)
		if err != nil {
			return stats{}, err
		}
		one = t
		if i == 0 && in.nbuf == 1 && t > tm.budget.Seconds()/4 {
			break
		}
	}
	inner := 1
	if one > 0 && one < tm.minSample.Seconds() {
		inner = min(int(math.Ceil(tm.minSample.Seconds()/one)), 10000)
	}
	reps := tm.reps
	if reps <= 0 {
		reps = int(tm.budget.Seconds() / (one * float64(inner)))
		reps = min(max(reps, tm.minReps), tm.maxReps)
	}
	samples := make([]float64, 0, reps)
	for i := range reps {
		progress(fmt.Sprintf("sample %d/%d", i+1, reps))
		t, err := timeSample(b, in, inner, call)
		if err != nil {
			return stats{}, err
		}
		samples = append(samples, t)
	}
	slices.Sort(samples)
	st := stats{Min: samples[0], Max: samples[len(samples)-1], Reps: reps, Inner: inner}
	if len(samples)%2 == 1 {
		st.Median = samples[len(samples)/2]
	} else {
		st.Median = (samples[len(samples)/2-1] + samples[len(samples)/2]) / 2
	}
	st.Spread = (st.Max - st.Min) / st.Median
	return st, nil
}

// timeSample runs call inner times and returns the time per call: the clock around the calls, or, for an
// instance that times itself (instance.selfTimed), the mean of the times the calls measured.
func timeSample(b backend.Backend, in *instance, inner int, call func() error) (float64, error) {
	if in.selfTimed == nil {
		return timeCalls(b, inner, call)
	}
	sum := 0.0
	for range inner {
		if _, err := timeCalls(b, 1, call); err != nil {
			return 0, err
		}
		sum += in.selfTimed()
	}
	return sum / float64(inner), nil
}

// checkTol is the largest accepted difference between kernel and reference, relative to the largest magnitude of
// the reference output.
const checkTol = 1e-8

// errWrong marks a kernel whose output differs from the reference.
var errWrong = errors.New("output differs from the reference")

// checkKernel runs the kernel selected for the timed dims (sel) and the reference once each on identical random
// operands at the check dims, and returns the largest relative difference of their outputs.
func checkKernel(b backend.Backend, w *workload, sel dims, seed uint64) (float64, error) {
	cd := w.check(sel)
	outs := make([][]*T, 2)
	for i, ref := range []bool{false, true} {
		f := &filler{b: b, seed: seed}
		in, err := w.setup(b, cd, sel, ref, 1, f)
		if err != nil {
			return 0, err
		}
		err = in.run(0)
		if err == nil {
			for _, t := range in.outputs(0) {
				h := tensor.NewHost(t.Batch(), t.Rows(), t.Cols())
				if err = b.Download(h, t); err != nil {
					break
				}
				outs[i] = append(outs[i], h)
			}
		}
		in.close()
		if err != nil {
			return 0, fmt.Errorf("check at %s (reference=%v): %w", cd.label(w.uses), ref, err)
		}
	}
	worst := 0.0
	for j := range outs[0] {
		a, r := outs[0][j].Storage().Host(), outs[1][j].Storage().Host()
		scale, diff := 0.0, 0.0
		for k := range r {
			scale = max(scale, math.Abs(r[k]))
			d := math.Abs(a[k] - r[k])
			if math.IsNaN(d) || math.IsInf(d, 0) {
				d = math.MaxFloat64 // a NaN or an infinity in either output (JSON has no Inf)
			}
			diff = max(diff, d)
		}
		if scale == 0 {
			scale = 1
		}
		worst = max(worst, min(diff/scale, math.MaxFloat64))
	}
	if !(worst <= checkTol) {
		return worst, fmt.Errorf("%w at %s: relative difference %.3g > %.0e", errWrong, cd.label(w.uses), worst, checkTol)
	}
	return worst, nil
}

// ---- memory ----

// resetPeakRSS resets the kernel's high-water mark of this process's resident set (Linux); it reports whether
// the reset worked.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// procStatus returns a field of /proc/self/status in bytes (e.g. "VmHWM"), or 0.
func procStatus(field string) int64 {
	return procKB("/proc/self/status", field)
}

// procKB reads "field: N kB" from a /proc file and returns N·1024, or 0.
func procKB(path, field string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			fs := strings.Fields(rest)
			if len(fs) == 0 {
				return 0
			}
			v, err := strconv.ParseInt(fs[0], 10, 64)
			if err != nil {
				return 0
			}
			return v * 1024
		}
	}
	return 0
}

// peakHostBytes returns the process's peak resident set since the last reset, or, where /proc is missing, the
// Go runtime's memory obtained from the OS.
func peakHostBytes() int64 {
	if v := procStatus("VmHWM"); v > 0 {
		return v
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.Sys)
}

// availableBytes returns the memory a workload may use on b: device memory for a device backend, else the
// host's available memory (0 when unknown, which skips the check).
func availableBytes(b backend.Backend) int64 {
	if m := b.Info().Memory; m > 0 {
		return m
	}
	return procKB("/proc/meminfo", "MemAvailable")
}

// releaseMemory returns the garbage of the previous workload to the OS, so that peak RSS is per workload.
func releaseMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}
