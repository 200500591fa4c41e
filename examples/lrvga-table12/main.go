// Command lrvga-table12 measures Tables 1 and 2 of paper 002 (Sec. 5.1–5.2) at d = 1e6: per method, the persistent
// state, the peak resident set of the process (VmHWM, reset before each method), the backend memory in use and the
// time of each step, with the GEMM floor of the same run: the time the step's multiply-adds would take at the rate
// measured for one d×p by d×p Gram GEMM. The methods (-methods, comma list):
//
//   - recursive-em: one recursive-EM step in covariance mode (Table 1, 1 inner iteration, App. C); state W, ψ =
//     8d(p+1) bytes; floor 7dp² multiply-adds (Algorithm 1).
//   - online-em: one step of the online EM of Cappé–Moulines (Table 1's baseline, App. E, (110)–(116)); state W,
//     S2ᵀ, ψ, S1 = 8d(2p+2) bytes (Polyak–Ruppert averages, 8d(p+1) more, only once averaging starts);
//     floor 2dp² (the M-step W = S2ᵀS3⁻¹ and the capacitance of the next E-step).
//   - lrvga-linear: one L-RVGA linear-regression step with -inner iterations (Table 2, eq. (25)–(27)); state μ,
//     W, ψ = 8d(p+2) bytes; floor (6 n_in + 1)dp².
//   - lrvga-linear32: the same step with the state stored in float32 (lrvga.Linear32, on the host whatever
//     -backend says; the products in float64); state 4d(p+2) bytes; the same floor.
//   - lrvga-logistic: one implicit logistic-regression step with 1 inner iteration (Sec. 5.3, the README's fit;
//     "identical costs" to the linear case per inner iteration); state 8d(p+2) bytes; floor 7dp².
//
// Peak RSS counts everything the process holds during the method: the state, the working buffers of the step (for
// L-RVGA a second W, ψ, μ: the update is built beside the state so that a failing update leaves it unchanged), the
// input, the Go runtime and the garbage not yet collected; go_alloc_bytes is the Go heap allocated during the step and
// gc_heap_goal_bytes the heap size at which the collector runs next (set GOMEMLIMIT to bound it). It prints JSON
// lines.
//
//	go build -tags netlib -o bin/lrvga-table12 ./examples/lrvga-table12 && bin/lrvga-table12 -d 1000000 -p 100
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/algos/lrvga"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/examples/internal/lrvgacli"
	"github.com/geovb/geovb/tensor"
)

func main() {
	cpu.UseForGonum() // the models' gonum calls and the backend's LAPACK on the CPU backend's kernels
	fl := lrvgacli.Register(lrvgacli.Flags{D: 1000000, N: 2, P: 100, Inner: 3, Seed: 1})
	methods := flag.String("methods", "recursive-em,online-em,lrvga-linear", "comma list: recursive-em, online-em, lrvga-linear, lrvga-linear32, lrvga-logistic")
	flag.Parse()
	if err := fl.Check(); err != nil {
		lrvgacli.Usage("%v", err)
	}
	list, err := parseMethods(*methods)
	if err != nil {
		lrvgacli.Usage("%v", err)
	}
	d, p := fl.D, fl.P
	b := lrvgacli.Open(fl.Backend)
	defer b.Close()
	r := rand.New(rand.NewPCG(fl.Seed, 1))
	x := make([]float64, d)
	for i := range x {
		x[i] = r.NormFloat64() / 1000
	}
	rate := gemmRate(b, d, p)
	lrvgacli.Emit(map[string]any{"gemm_gmacs": rate / 1e9})
	m := &meter{b: b, d: d, p: p, rate: rate}
	for _, meth := range list {
		name := meth.String()
		switch meth {
		case recursiveEM:
			m.start()
			fa, err := lrvga.NewRecursiveFA(b, lrvga.FAConfig{D: d, P: p, Inner: 1, Seed: fl.Seed})
			check(err)
			for t := 0; t < fl.N; t++ {
				m.step(name, 1, t, 7, 8*int64(d)*int64(p+1), func() error { return fa.Update(x) })
			}
			fa.Close()
		case onlineEM:
			m.start()
			o, err := lrvga.NewOnlineFA(b, lrvga.FAConfig{D: d, P: p, Seed: fl.Seed}, 500)
			check(err)
			for t := 0; t < fl.N; t++ {
				m.step(name, 1, t, 2, o.StateBytes(), func() error { return o.Update(x) })
			}
			o.Close()
		case lrvgaLinear:
			m.start()
			f, err := lrvga.New(b, lrvga.Config{D: d, P: p, Inner: fl.Inner, Seed: fl.Seed})
			check(err)
			for t := 0; t < fl.N; t++ {
				m.step(name, fl.Inner, t, float64(6*fl.Inner+1), f.StateBytes(), func() error { return f.Update(x, 1) })
			}
			f.Close()
		case lrvgaLinear32:
			m.start()
			f, err := lrvga.NewLinear32(lrvga.Config{D: d, P: p, Inner: fl.Inner, Seed: fl.Seed})
			check(err)
			for t := 0; t < fl.N; t++ {
				m.step(name, fl.Inner, t, float64(6*fl.Inner+1), f.StateBytes(), func() error { return f.Update(x, 1) })
			}
		case lrvgaLogistic:
			m.start()
			f, err := lrvga.New(b, lrvga.Config{D: d, P: p, Scheme: lrvga.SchemeLogistic, Inner: 1, Sigma0: 4,
				InitStd: 1e-3, Seed: fl.Seed})
			check(err)
			for t := 0; t < fl.N; t++ {
				y := float64(t % 2)
				m.step(name, 1, t, 7, f.StateBytes(), func() error { return f.Update(x, y) })
			}
			f.Close()
		}
	}
}

// tableMethod is a method -methods may name.
type tableMethod int

const (
	recursiveEM tableMethod = iota
	onlineEM
	lrvgaLinear
	lrvgaLinear32
	lrvgaLogistic
)

var tableMethodNames = []string{"recursive-em", "online-em", "lrvga-linear", "lrvga-linear32", "lrvga-logistic"}

func (m tableMethod) String() string { return tableMethodNames[m] }

// parseMethods reads the comma list of -methods.
func parseMethods(list string) ([]tableMethod, error) {
	var out []tableMethod
	for _, name := range strings.Split(list, ",") {
		i := slices.Index(tableMethodNames, name)
		if i < 0 {
			return nil, fmt.Errorf("-methods: unknown method %q (want %s)", name, strings.Join(tableMethodNames, ", "))
		}
		out = append(out, tableMethod(i))
	}
	return out, nil
}

func check(err error) {
	if err != nil {
		lrvgacli.Fatal(err)
	}
}

// gemmRate returns multiply-adds per second of the Gram GEMM Wᵀ W of a d×p factor (best of three).
func gemmRate(b backend.Backend, d, p int) float64 {
	w, err := b.Alloc(tensor.Shape{Batch: 1, Rows: d, Cols: p})
	check(err)
	defer b.Free(w)
	g, err := b.Alloc(tensor.Shape{Batch: 1, Rows: p, Cols: p})
	check(err)
	defer b.Free(g)
	check(b.Fill(w, 0.5))
	best := 0.0
	for range 3 {
		start := time.Now()
		check(b.Gemm(blas.Trans, blas.NoTrans, 1, w, w, 0, g))
		check(b.Sync())
		best = max(best, float64(d)*float64(p)*float64(p)/time.Since(start).Seconds())
	}
	return best
}

// meter times steps and reads the memory figures.
type meter struct {
	b       backend.Backend
	d, p    int
	rate    float64
	rssBase int64 // resident set after the reset, before the method allocates anything
}

// start releases the garbage of the previous method and resets the peak resident set.
func (m *meter) start() {
	if !lrvgacli.ResetPeak() {
		lrvgacli.Emit(map[string]any{"warning": "could not reset the peak resident set (/proc/self/clear_refs)"})
	}
	m.rssBase = lrvgacli.RSS()
}

// step times one call and prints one line; macs is the floor's multiply-adds in units of dp².
func (m *meter) step(method string, inner, t int, macs float64, state int64, f func() error) {
	var ms0, ms runtime.MemStats
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	check(f())
	check(m.b.Sync())
	sec := time.Since(start).Seconds()
	runtime.ReadMemStats(&ms)
	floor := macs * float64(m.d) * float64(m.p) * float64(m.p) / m.rate
	lrvgacli.Emit(map[string]any{"method": method, "d": m.d, "p": m.p, "inner": inner, "step": t + 1,
		"seconds": sec, "gemm_floor_seconds": floor, "ratio_to_floor": sec / floor,
		"state_bytes": state, "backend_bytes_in_use": m.b.MemInUse(),
		"peak_rss_bytes": lrvgacli.PeakRSS(), "rss_bytes": lrvgacli.RSS(), "rss_before_bytes": m.rssBase,
		"go_heap_sys_bytes": ms.HeapSys, "go_alloc_bytes": ms.TotalAlloc - ms0.TotalAlloc, "gc_cycles": ms.NumGC - ms0.NumGC,
		"gc_heap_goal_bytes": heapGoal()})
}

// heapGoal returns the Go collector's current heap goal: the heap size at which the next collection starts.
func heapGoal() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
