package rcgexp

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geovb/geovb/algos/rcg"
	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/models/nfa"
)

// The point where an NSSM run stopped falsely (docs/rcg.md, "The false stop"): NSSM-SYN at T = 400 (d = 5, H = 20,
// GH), Init(7), batched RCG with the §3.5 rule and the 8 backtracks of a conjugate search also along −g̃, on the
// pure-Go CPU backend, stopped as converged after 27 iterations at F = 1801.28. The run's path amplifies round-off
// (OpenBLAS or another GEMM kernel takes it elsewhere), so the point is stored: its means, then its state, each as a
// little-endian uint32 count and float64 values. GEOVB_REGEN_FALSESTOP=1 reruns the batch and rewrites the file.
const falseStopFile = "testdata/nssm400-seed7-stop.bin"

func falseStopModel(t *testing.T) *nfa.Model { return gateNSSM(t, 400, nfa.GaussHermite) }

var falseStopSettings = rcg.Settings{Tol: Sweep{T: 400}.Tol(), Patience: 5, PowellBeale: 0.2}

func TestFalseStopRegenerate(t *testing.T) {
	if os.Getenv("GEOVB_REGEN_FALSESTOP") == "" {
		t.Skip("set GEOVB_REGEN_FALSESTOP=1 to rerun the batch to the false stop and rewrite " + falseStopFile)
	}
	be, err := backend.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	m := falseStopModel(t)
	x0, err := m.Init(7)
	if err != nil {
		t.Fatal(err)
	}
	bt, err := nfa.NewBatch(be, []*nfa.Model{m})
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Close()
	s := falseStopSettings
	s.LS.MaxBacktrackSteepest = 8
	res, err := rcg.MinimizeBatch(context.Background(), bt, [][]float64{x0}, withControl(s, run.Control{MaxIter: 60}))
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	t.Logf("%v (%v) after %d iterations at F %.6f", r.Reason, r.ConvergedBy, r.Iters, r.F)
	if r.Reason != run.Converged || r.ConvergedBy != rcg.NoDecrease || r.Iters >= 60 {
		t.Fatalf("no false stop on this backend's arithmetic: %v (%v) after %d iterations, want converged "+
			"(no-decrease) within 60", r.Reason, r.ConvergedBy, r.Iters)
	}
	var buf []byte
	for _, v := range [][]float64{r.X, bt.State(0)} {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(v)))
		for _, f := range v {
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(f))
		}
	}
	if err := os.MkdirAll(filepath.Dir(falseStopFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(falseStopFile, buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readFalseStop returns the stored means and state.
func readFalseStop(t *testing.T) (x, state []float64) {
	t.Helper()
	b, err := os.ReadFile(falseStopFile)
	if err != nil {
		t.Fatal(err)
	}
	x, state, err = parseFalseStop(falseStopFile, b)
	if err != nil {
		t.Fatal(err)
	}
	return x, state
}

// parseFalseStop decodes the fixture's two count-prefixed float64 vectors (means, then state). A malformed file gives
// an error naming the file, the byte offset and what was expected there.
func parseFalseStop(name string, b []byte) (x, state []float64, err error) {
	var out [2][]float64
	off := 0
	for k, what := range [2]string{"means", "state"} {
		if len(b)-off < 4 {
			return nil, nil, fmt.Errorf("%s: byte %d: truncated before the %s count (%d bytes left, want 4)",
				name, off, what, len(b)-off)
		}
		n := int(binary.LittleEndian.Uint32(b[off:]))
		off += 4
		if (len(b)-off)/8 < n {
			return nil, nil, fmt.Errorf("%s: byte %d: %s count %d needs %d bytes, %d left", name, off-4, what, n,
				8*n, len(b)-off)
		}
		out[k] = make([]float64, n)
		for i := range out[k] {
			out[k][i] = math.Float64frombits(binary.LittleEndian.Uint64(b[off:]))
			off += 8
		}
	}
	if off != len(b) {
		return nil, nil, fmt.Errorf("%s: byte %d: %d bytes after the state", name, off, len(b)-off)
	}
	return out[0], out[1], nil
}

func TestParseFalseStopErrors(t *testing.T) {
	vec := func(vs ...float64) []byte {
		b := binary.LittleEndian.AppendUint32(nil, uint32(len(vs)))
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
		return b
	}
	b, err := os.ReadFile(falseStopFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := parseFalseStop(falseStopFile, b); err != nil {
		t.Fatalf("the stored fixture: %v", err)
	}
	good := append(vec(1, 2), vec(3)...)
	x, st, err := parseFalseStop("f.bin", good)
	if err != nil || len(x) != 2 || x[1] != 2 || len(st) != 1 || st[0] != 3 {
		t.Fatalf("good file: %v %v %v", x, st, err)
	}
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "f.bin: byte 0: truncated before the means count"},
		{"short count", []byte{1, 0}, "f.bin: byte 0: truncated before the means count"},
		{"short means", vec(1, 2)[:15], "f.bin: byte 0: means count 2 needs 16 bytes, 11 left"},
		{"no state", vec(1, 2), "f.bin: byte 20: truncated before the state count"},
		{"huge count", append(vec(1), 0xff, 0xff, 0xff, 0xff), "f.bin: byte 12: state count 4294967295"},
		{"trailing", append(good, 0), "f.bin: byte 32: 1 bytes after the state"},
	} {
		if _, _, err := parseFalseStop("f.bin", c.b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

// FuzzParseFalseStop: any bytes give vectors that re-encode to exactly those bytes, or an error; never a panic.
func FuzzParseFalseStop(f *testing.F) {
	// Small seeds only: the 61 kB fixture makes each minimisation of a new input take seconds.
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		x, st, err := parseFalseStop("fuzz.bin", b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.bin: byte ") {
				t.Fatalf("error does not name the file and offset: %v", err)
			}
			return
		}
		var re []byte
		for _, v := range [][]float64{x, st} {
			re = binary.LittleEndian.AppendUint32(re, uint32(len(v)))
			for _, f := range v {
				re = binary.LittleEndian.AppendUint64(re, math.Float64bits(f))
			}
		}
		if string(re) != string(b) {
			t.Fatalf("decoded vectors re-encode to %d other bytes", len(re))
		}
	})
}

// TestFalseStop checks why the run stopped and that MaxBacktrackSteepest carries it on, at the stored stop point. There
// the fixed point (13) is rejected (the Update moves at most the 2·21 noise hyperparameters, no variance), and with
// the variances it keeps, the states' natural gradient (at least 90 % of gᵀg̃) makes the unit step overshoot by more
// than 1e4: F falls at α = 1e-6 and rises at 1e-4. The search along −g̃ then fails within 8 backtracks and succeeds
// within 40, and from that point Minimize with 8 stops as converged within 2 iterations, where the default goes on
// through 60 iterations and ends at least 1000 below; the batch on the CPU backend does the same.
func TestFalseStop(t *testing.T) {
	if testing.Short() {
		t.Skip("T = 400 NSSM, 60 iterations four times: not under -short")
	}
	x, st := readFalseStop(t)
	load := func() *nfa.Model {
		m := falseStopModel(t)
		if len(x) != m.Dim() {
			t.Fatalf("%s: %d means, the model has %d", falseStopFile, len(x), m.Dim())
		}
		if err := m.SetState(st); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := load()
	F0 := m.Value(x)
	before := m.State()
	if err := m.Update(x); err != nil {
		t.Fatal(err)
	}
	changed := 0 // state values the Update moved, besides its count
	for i, v := range m.State()[:len(before)-1] {
		if v != before[i] {
			changed++
		}
	}
	n, nS := len(x), 400*5
	g, gt := make([]float64, n), make([]float64, n)
	F1 := m.Grad(g, x)
	m.NatGrad(gt, g, x)
	all, states := dot(g, gt), dot(g[:nS], gt[:nS])
	p := make([]float64, n)
	for i := range gt {
		p[i] = -gt[i]
	}
	y := make([]float64, n)
	along := func(a float64) float64 {
		for i := range x {
			y[i] = x[i] + a*p[i]
		}
		return m.Value(y) - F1
	}
	d6, d5, d4 := along(1e-6), along(1e-5), along(1e-4)
	top := 0 // the state component with the largest share of gᵀg̃
	for i := range nS {
		if g[i]*gt[i] > g[top]*gt[top] {
			top = i
		}
	}
	t.Logf("F %.6f; update rejected %d time(s), %d of %d state values moved; gᵀg̃ %.4g, states' share %.3f, largest "+
		"component's (t = %d, component %d) %.3f with g̃/g = %.3g; F change along −g̃ at α = 1e-6: %.3g, at 1e-5: %.3g, "+
		"at 1e-4: %.3g", F0, m.FixedPointRejected(), changed, len(before)-1, all, states/all, top/5, top%5,
		g[top]*gt[top]/all, gt[top]/g[top], d6, d5, d4)
	if m.FixedPointRejected() != 1 || changed > 2*21 || states < 0.9*all || !(d6 < 0) || !(d4 > 0) {
		t.Errorf("the stop's explanation no longer holds")
	}
	for _, limit := range []int{8, 0} {
		// One RG iteration from x with the state as it is: the search along −g̃ from α₀ = 1 with slope −gᵀg̃.
		var a float64
		res, err := rcg.Minimize(context.Background(), noUpdate{m}, x, rcg.Settings{Method: rcg.RG,
			LS: rcg.LineSearch{MaxBacktrackSteepest: limit}, Control: run.Control{MaxIter: 1,
				Recorder: run.Func(func(r run.Record) { a = r.Step })}})
		if err != nil {
			t.Fatal(err)
		}
		ok := res.ConvergedBy != rcg.NoDecrease
		f := res.F
		if !ok {
			f = math.NaN()
		}
		t.Logf("MaxBacktrackSteepest %d: search along −g̃ ok %v, α %.3g, F change %.3g, %d evaluations", limit, ok, a,
			f-F1, res.FEvals)
		if ok != (limit == 0) || ok && !(f < F1) {
			t.Errorf("MaxBacktrackSteepest %d: search ok = %v (F change %v)", limit, ok, f-F1)
		}
	}

	be, err := backend.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	for _, limit := range []int{8, 0} {
		s := falseStopSettings
		s.LS.MaxBacktrackSteepest = limit
		host, err := rcg.Minimize(context.Background(), load(), x, withControl(s, run.Control{MaxIter: 60}))
		if err != nil {
			t.Fatal(err)
		}
		bm := load()
		bt, err := nfa.NewBatch(be, []*nfa.Model{bm})
		if err != nil {
			t.Fatal(err)
		}
		res, err := rcg.MinimizeBatch(context.Background(), bt, [][]float64{x}, withControl(s,
			run.Control{MaxIter: 60}))
		bt.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []struct {
			name string
			res  rcg.Result
		}{{"host", *host}, {"batch", res[0]}} {
			t.Logf("MaxBacktrackSteepest %d, %s: %v after %d iterations at F %.6f", limit, r.name, r.res.Reason,
				r.res.Iters, r.res.F)
			stopped := r.res.Reason == run.Converged && r.res.ConvergedBy == rcg.NoDecrease && r.res.Iters <= 2 &&
				math.Abs(r.res.F-F0) < 1e-3
			goesOn := r.res.Iters == 60 && r.res.F < F0-1000
			if limit == 8 && !stopped || limit == 0 && !goesOn {
				t.Errorf("MaxBacktrackSteepest %d, %s: %v after %d iterations at F %v (stop at %v)", limit, r.name,
					r.res.Reason, r.res.Iters, r.res.F, F0)
			}
		}
	}
}

// dot is aᵀb, summed in order.
func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
