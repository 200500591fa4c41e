package lrvga

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/models/glm"
)

// densePrec returns W Wᵀ + Ψ (d×d) from row-major W and ψ (test reference, small d).
func densePrec(w, psi []float64, d, p int) *mat.SymDense {
	prec := mat.NewSymDense(d, nil)
	prec.SymOuterK(1, mat.NewDense(d, p, w))
	for i, v := range psi {
		prec.SetSym(i, i, prec.At(i, i)+v)
	}
	return prec
}

// precDiff returns ‖P_a − P_b‖/‖P_b‖ (Frobenius) for the precisions of two factor pairs.
func precDiff(wa, psia, wb, psib []float64, d, p int) float64 {
	var diff mat.Dense
	b := densePrec(wb, psib, d, p)
	diff.Sub(densePrec(wa, psia, d, p), b)
	return mat.Norm(&diff, 2) / mat.Norm(b, 2)
}

// Linear32 computes what the float64 Filter computes, up to the rounding of its stored state:
//   - the initial W₀ and ψ₀ are the Filter's rounded to float32 (within half an ulp);
//   - one update from a shared state (the Filter rebuilt from Linear32's checkpoint before every observation)
//     gives precisions W Wᵀ + Ψ and means that agree to 1e-6 relative over 60 observations (measured: at most
//     5.3e-8 and 1.7e-7);
//   - over the whole run the two drift apart by about what rounding the Filter's own state to float32 after every
//     update does (within 4× of it, plus 1e-6). That drift grows with n_in: after 60 observations it was 2e-7 with
//     one inner iteration and 1e-3 in the mean with three at σ₀ = 2, σ_w = 0.5 (a warm-started, unconverged EM
//     amplifies perturbations of its start).
//
// Configurations: one and three inner iterations (the first iteration's shortcut and the general iteration), both
// initialisations, a prior mean.
func TestLinear32MatchesFilter(t *testing.T) {
	b := testbackend.Open(t)
	const d, p, n = 80, 6, 60
	data := linearData(d, n, 3)
	mu0 := make([]float64, d)
	for i := range mu0 {
		mu0[i] = 0.1 * math.Sin(float64(i))
	}
	// diffs returns the relative differences of the precisions and of the means of a float32 and a float64 filter.
	diffs := func(f32 *Linear32, f64 *Filter) (prec, mean float64) {
		w64, psi64, _ := f64.Factors()
		w32, psi32 := f32.Factors()
		m64, _ := f64.MeanHost(nil)
		return precDiff(w32, psi32, w64, psi64, d, p), relDiff(f32.Mean(nil), m64)
	}
	for _, c := range []Config{
		{D: d, P: p, Inner: 1, Seed: 4},
		{D: d, P: p, Inner: 3, Seed: 5, Sigma0: 2, NoiseStd: 0.5, Mu0: mu0},
		{D: d, P: p, Inner: 2, Seed: 6, InitStd: 1e-2},
	} {
		f32, err := NewLinear32(c)
		if err != nil {
			t.Fatal(err)
		}
		full, err := New(b, c) // float64 throughout
		if err != nil {
			t.Fatal(err)
		}
		w64, psi64, _ := full.Factors()
		w32, psi32 := f32.Factors()
		for i, v := range append(w64, psi64...) {
			got := append(w32, psi32...)[i]
			if math.Abs(got-v) > 0x1p-24*math.Abs(v) {
				t.Fatalf("inner %d: initial factor %d: float32 %v, float64 %v", c.Inner, i, got, v)
			}
		}
		rounded, _ := New(b, c) // float64 with the state rounded to float32 after every update
		stepPrec, stepMean := 0.0, 0.0
		for i := 0; i < n; i++ {
			x, y := data.Row(i), data.Y[i]
			one, err := FromState(b, f32.State(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []*Filter{one, full, rounded} {
				if err := f.Update(x, y); err != nil {
					t.Fatal(err)
				}
			}
			if err := f32.Update(x, y); err != nil {
				t.Fatal(err)
			}
			dp, dm := diffs(f32, one)
			stepPrec, stepMean = max(stepPrec, dp), max(stepMean, dm)
			one.Close()
			st, _ := rounded.State()
			for _, a := range [][]float64{st.Mu, st.W, st.Psi} {
				for k, v := range a {
					a[k] = float64(float32(v))
				}
			}
			rounded.Close()
			if rounded, err = FromState(b, st, nil); err != nil {
				t.Fatal(err)
			}
		}
		dp, dm := diffs(f32, full)
		var rp, rm float64
		{
			w, psi, _ := rounded.Factors()
			m, _ := rounded.MeanHost(nil)
			w64, psi64, _ := full.Factors()
			m64, _ := full.MeanHost(nil)
			rp, rm = precDiff(w, psi, w64, psi64, d, p), relDiff(m, m64)
		}
		t.Logf("inner %d: one step: precision %.2g, mean %.2g; whole run: %.2g, %.2g (float64 with rounded state: %.2g, %.2g)",
			c.Inner, stepPrec, stepMean, dp, dm, rp, rm)
		if stepPrec > 1e-6 || stepMean > 1e-6 {
			t.Errorf("inner %d: one step from a shared state: precision rel diff %.3g, mean %.3g (want ≤ 1e-6)",
				c.Inner, stepPrec, stepMean)
		}
		if dp > 4*rp+1e-6 || dm > 4*rm+1e-6 {
			t.Errorf("inner %d: whole run: precision rel diff %.3g, mean %.3g; rounding the float64 state gives %.3g, %.3g",
				c.Inner, dp, dm, rp, rm)
		}
		if f32.T() != n || f32.Clamped() != 0 {
			t.Errorf("inner %d: t = %d, %d clamps", c.Inner, f32.T(), f32.Clamped())
		}
		full.Close()
		rounded.Close()
	}
}

// Bad configurations and observations give an error naming the problem, and a failing update (bad input, or a
// value beyond float32's range in the middle of the step) leaves the state exactly as before.
func TestLinear32BadInput(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{D: 10, P: 10}, "p = 10 ≥ d = 10"},
		{Config{D: 10, P: 2, Sigma0: -1}, "prior variance"},
		{Config{D: 10, P: 2, Scheme: SchemeLogistic}, `runs the "linear" scheme only`},
		{Config{D: 10, P: 2, Model: glm.Logistic{}}, "takes no Model"},
		{Config{D: 10, P: 2, Mu0: []float64{1}}, "prior mean of length 1"},
		{Config{D: 10, P: 2, Sigma0: 1e-30}, "not a positive float32"},
		{Config{D: 10, P: 2, Sigma0: 1e30}, "not a positive float32"},
		{Config{D: 10, P: 2, Mu0: []float64{0, 0, 0, 1e300, 0, 0, 0, 0, 0, 0}}, "prior mean beyond float32"},
	} {
		_, err := NewLinear32(c.cfg)
		if err == nil || !errors.Is(err, run.ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewLinear32(%+v): error %v, want one containing %q", c.cfg, err, c.want)
		}
	}
	f, err := NewLinear32(Config{D: 8, P: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	if err := f.Update(x, 1); err != nil {
		t.Fatal(err)
	}
	before := f.State()
	nan := append([]float64(nil), x...)
	nan[5] = math.NaN()
	huge := append([]float64(nil), x...)
	huge[3] = 1e20 // finite in float64; ψ_new ≈ 1e40 is not in float32
	for _, c := range []struct {
		x     []float64
		y     float64
		cause error
		want  string
	}{
		{nan, 1, backend.ErrNotFinite, "x[5] = NaN"},
		{x, math.Inf(1), backend.ErrNotFinite, "y = +Inf"},
		{x[:7], 1, backend.ErrShape, "dimension mismatch"},
		{huge, 1, errRange, "float32's range"},
	} {
		err := f.Update(c.x, c.y)
		if !errors.Is(err, c.cause) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Update error %v, want %q", err, c.want)
		}
	}
	if after := f.State(); !reflect.DeepEqual(before, after) {
		t.Error("state changed by failing updates")
	}
	st := f.State()
	st.Psi[2] = -1
	if _, err := Linear32FromState(st); err == nil || !strings.Contains(err.Error(), "psi[2]") {
		t.Errorf("checkpoint with ψ < 0: %v", err)
	}
	st = f.State()
	st.W[3] = 1e300
	if _, err := Linear32FromState(st); err == nil || !strings.Contains(err.Error(), "W[3]") {
		t.Errorf("checkpoint with W beyond float32: %v", err)
	}
	st = f.State()
	st.Cfg.Scheme = SchemeLogistic
	if _, err := Linear32FromState(st); err == nil || !errors.Is(err, run.ErrCheckpoint) {
		t.Errorf("checkpoint of the logistic scheme: %v", err)
	}
}

// A run cancelled and resumed from its checkpoint file ends bit for bit where the uninterrupted run ends; the same
// checkpoint resumes as a float64 Filter at the same step and state.
func TestLinear32CheckpointResume(t *testing.T) {
	const d, p, n = 40, 4, 30
	data := linearData(d, n, 2)
	c := Config{D: d, P: p, Seed: 7}
	full, _ := NewLinear32(c)
	var calls int
	res, err := full.Run(context.Background(), run.Control{Recorder: run.Func(func(run.Record) { calls++ })},
		&SliceSource{X: data.X, Y: data.Y})
	if err != nil || res.Reason != run.Converged || calls != n || full.T() != n {
		t.Fatalf("full run %+v err %v, %d callbacks", res, err, calls)
	}
	path := filepath.Join(t.TempDir(), "ck")
	f, _ := NewLinear32(c)
	ctx, cancel := context.WithCancel(context.Background())
	res, _ = f.Run(ctx, run.Control{CheckpointEvery: 4, CheckpointPath: path,
		Recorder: run.Func(func(r run.Record) {
			if r.Iter == 13 {
				cancel()
			}
		})}, &SliceSource{X: data.X, Y: data.Y})
	cancel()
	if res.Reason != run.Cancelled || f.T() != 14 {
		t.Fatalf("cancelled run %+v at t = %d", res, f.T())
	}
	resume := run.Control{CheckpointPath: path, Resume: true}
	g, _ := NewLinear32(c)
	src := &SliceSource{X: data.X, Y: data.Y, next: 12}
	if res, err := g.Run(context.Background(), resume, src); err != nil || res.Iters != n || src.next != n {
		t.Fatalf("resumed run %+v, source at %d: %v", res, src.next, err)
	}
	if !reflect.DeepEqual(g.State(), full.State()) {
		t.Error("resumed run differs from the uninterrupted run")
	}
	// The same file, restored by a float64 Filter (MaxIter 12: restore only) and by Linear32FromState.
	h, err := New(testbackend.Open(t), c)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	resume.MaxIter = 12
	if _, err := h.Run(context.Background(), resume, nil); err != nil {
		t.Fatal(err)
	}
	st, _ := h.State()
	var saved Checkpoint
	if err := run.LoadCheckpoint(path, checkpointMethod, checkpointVersion, &saved); err != nil {
		t.Fatal(err)
	}
	want, err := Linear32FromState(saved)
	if err != nil || want.T() != 12 {
		t.Fatalf("Linear32FromState: t = %v, %v", want, err)
	}
	if h.T() != 12 || !reflect.DeepEqual(st.Mu, want.Mean(nil)) {
		t.Errorf("float64 resume at t = %d, mean equal: %v", h.T(), reflect.DeepEqual(st.Mu, want.Mean(nil)))
	}
	// A Linear32 of another Config refuses the file and keeps its state.
	k, _ := NewLinear32(Config{D: d, P: p, Seed: 8})
	before := k.State()
	if _, err := k.Run(context.Background(), resume, nil); !errors.Is(err, run.ErrCheckpoint) ||
		!strings.Contains(err.Error(), "Seed is 7 in the checkpoint, 8 in this filter") || !reflect.DeepEqual(k.State(), before) {
		t.Errorf("resume into another Config: %v", err)
	}
}

// T14/T20 for the float32 state: 4d(p+2) bytes, and an update allocates nothing proportional to d (its scratch,
// a few row blocks per goroutine and the per-chunk partial sums, is made once): at d = 2e5, p = 10 three updates
// allocate under 1% of the 8 MB W.
func TestLinear32Memory(t *testing.T) {
	const d, p = 200000, 10
	f, err := NewLinear32(Config{D: d, P: p, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if f.StateBytes() != 4*d*(p+2) {
		t.Errorf("state %d bytes, want 4d(p+2) = %d", f.StateBytes(), 4*d*(p+2))
	}
	x := make([]float64, d)
	for i := range x {
		x[i] = float64(i%7-3) / 1000
	}
	if err := f.Update(x, 1); err != nil { // makes the scratch
		t.Fatal(err)
	}
	if raceEnabled {
		t.Skip("allocation bound skipped under the race detector (it empties sync.Pool at random)")
	}
	// The least of three measurements: TotalAlloc counts the whole process, and on a loaded machine a sync.Pool
	// emptied by a collection between updates can refill once (a CI run saw 114032 bytes); an update that allocates
	// in proportion to d exceeds the bound every time.
	least := uint64(math.MaxUint64)
	for range 3 {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for i := 0; i < 3; i++ {
			if err := f.Update(x, float64(i%2)); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&m1)
		least = min(least, m1.TotalAlloc-m0.TotalAlloc)
	}
	if least > 4*d*p/100 {
		t.Errorf("three updates allocated at least %d bytes, want < %d", least, 4*d*p/100)
	}
}
