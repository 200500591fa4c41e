package lrvga

// Acceptance tests for the algorithm layer. T1–T9 and the low-level parts of T14 (Woodbury, log-det,
// trace, Prop. 1 sampler, Algorithm 1 vs the dense fixed point, EM monotonicity, W = 0 stationarity, p = d FA fit,
// memory of the kernels) are in backend/backendtest/lowrank.go and are not repeated here.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/models/glm"
)

// T8 (the filter's part): App. D never gives W₀ = 0 and Tr(W₀W₀ᵀ + Ψ₀) = d/σ₀² to 1e-12; the logistic init has
// ψ₀ = 1/σ₀² and W₀ of the requested scale.
func TestInitAppD(t *testing.T) {
	b := testbackend.Open(t)
	for _, c := range []Config{{D: 300, P: 7, Sigma0: 2}, {D: 50, P: 1, Sigma0: 0.5, Eps: 1e-3}} {
		f, err := New(b, c)
		if err != nil {
			t.Fatal(err)
		}
		w, psi, _ := f.Factors()
		tr, nz := 0.0, 0
		for _, v := range w {
			tr += v * v
			if v != 0 {
				nz++
			}
		}
		for _, v := range psi {
			tr += v
		}
		want := float64(c.D) / (c.Sigma0 * c.Sigma0)
		if math.Abs(tr-want) > 1e-12*want || nz != len(w) {
			t.Errorf("App. D d=%d p=%d: Tr = %.17g want %.17g; %d of %d entries of W non-zero", c.D, c.P, tr, want, nz, len(w))
		}
		f.Close()
	}
	f, err := New(b, Config{D: 100, P: 3, Sigma0: 4, InitStd: 1e-3, Scheme: SchemeLogistic})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, psi, _ := f.Factors()
	ss := 0.0
	for _, v := range w {
		ss += v * v
	}
	if psi[17] != 1.0/16 || math.Abs(math.Sqrt(ss/300)-1e-3) > 3e-4 {
		t.Errorf("logistic init: ψ₀ = %v (want 1/16), rms W₀ = %.3g (want ≈ 1e-3)", psi[17], math.Sqrt(ss/300))
	}
}

// linearData is the Fig. 2 recipe at small size.
func linearData(d, n int, seed uint64) *glm.Data {
	x, _ := glm.Linear(glm.NewDesign(d, 1, seed), n, 1, seed)
	return x
}

// Bad input: an error naming the problem, and the state left bit for bit as before the failing update.
func TestBadInput(t *testing.T) {
	b := testbackend.Open(t)
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{D: 10, P: 10}, "p = 10 ≥ d = 10"},
		{Config{D: 10, P: 12}, "p = 12 ≥ d = 10"},
		{Config{D: 10, P: 2, Sigma0: -1}, "prior variance"},
		{Config{D: 10, P: 2, Sigma0: math.NaN()}, "prior variance"},
		{Config{D: 10, P: 2, Scheme: Scheme(42)}, "unknown scheme Scheme(42)"},
		{Config{D: 10, P: 2, Scheme: -1}, "unknown scheme Scheme(-1)"},
		{Config{D: 10, P: 2, Scheme: SchemeExtragrad}, "needs a Model"},
		{Config{D: 10, P: 2, Mu0: []float64{1}}, "prior mean of length 1"},
	} {
		_, err := New(b, c.cfg)
		if err == nil || !errors.Is(err, run.ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v): error %v, want one containing %q", c.cfg, err, c.want)
		}
	}
	for _, scheme := range []Scheme{SchemeLinear, SchemeLogistic, SchemeLogisticExtragrad, SchemeExtragrad} {
		var model Model
		if scheme == SchemeExtragrad {
			model = glm.Logistic{}
		}
		f, err := New(b, Config{D: 8, P: 2, Scheme: scheme, Model: model, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		x := []float64{1, 2, 3, 4, 5, 6, 7, 8}
		if err := f.Update(x, 1); err != nil {
			t.Fatal(err)
		}
		before, _ := f.State()
		nan := append([]float64(nil), x...)
		nan[5] = math.NaN()
		inf := append([]float64(nil), x...)
		inf[2] = math.Inf(-1)
		for _, c := range []struct {
			x     []float64
			y     float64
			cause error
			want  string
		}{
			{nan, 1, backend.ErrNotFinite, "observation 1: x[5] = NaN"},
			{inf, 1, backend.ErrNotFinite, "observation 1: x[2] = -Inf"},
			{x, math.NaN(), backend.ErrNotFinite, "observation 1: y = NaN"},
			{x[:7], 1, backend.ErrShape, "dimension mismatch"},
		} {
			err := f.Update(c.x, c.y)
			if !errors.Is(err, c.cause) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: Update error %v, want %q", scheme, err, c.want)
			}
		}
		if scheme == SchemeLogistic || scheme == SchemeLogisticExtragrad {
			if err := f.Update(x, 0.5); !errors.Is(err, backend.ErrDomain) || !strings.Contains(err.Error(), "want 0 or 1") {
				t.Errorf("logistic label 0.5: %v", err)
			}
		}
		after, _ := f.State()
		if !reflect.DeepEqual(before, after) {
			t.Errorf("%s: state changed by failing updates", scheme)
		}
		f.Close()
	}
}

// The schemes' names: String and ParseScheme are inverse, the zero value is the linear scheme, an unknown name is
// a settings error, and the text forms (flags, JSON) use the names.
func TestParseScheme(t *testing.T) {
	var zero Config
	if zero.Scheme != SchemeLinear || SchemeLinear.String() != "linear" {
		t.Errorf("zero Scheme %v, want linear", zero.Scheme)
	}
	want := []string{"linear", "logistic", "logistic-extragrad", "explicit", "implicit", "extragrad", "mirror-prox"}
	for i, s := range Schemes {
		got, err := ParseScheme(s.String())
		if s.String() != want[i] || err != nil || got != s {
			t.Errorf("scheme %d: name %q, parsed back as %v (%v); want %q", i, s.String(), got, err, want[i])
		}
		var u Scheme
		text, err := s.MarshalText()
		if err != nil || u.UnmarshalText(text) != nil || u != s {
			t.Errorf("%v: text %q (%v) reads back as %v", s, text, err, u)
		}
	}
	for _, name := range []string{"kalman", "", "Linear"} {
		_, err := ParseScheme(name)
		if !errors.Is(err, run.ErrConfig) || !strings.Contains(err.Error(), fmt.Sprintf("unknown scheme %q", name)) ||
			!strings.Contains(err.Error(), "mirror-prox") {
			t.Errorf("ParseScheme(%q): error %v, want an unknown-scheme error listing the names", name, err)
		}
	}
	if _, err := Scheme(9).MarshalText(); !errors.Is(err, run.ErrConfig) {
		t.Errorf("MarshalText of Scheme(9): %v", err)
	}
}

// The streaming API: progress callback, cancellation through the context, the iteration cap, checkpoint and
// resume bit for bit (RNG position included: the extragrad scheme draws samples at every step), one pass.
func TestStreamCheckpointResume(t *testing.T) {
	b := testbackend.Open(t)
	const d, p, n = 40, 4, 30
	data := glm.LogisticMixture(glm.NewDesign(d, 1, 2), n, 0.2, 2)
	for _, c := range []Config{
		{D: d, P: p, Scheme: SchemeLinear},
		{D: d, P: p, Scheme: SchemeLogistic, Sigma0: 4, InitStd: 1e-3},
		{D: d, P: p, Scheme: SchemeExtragrad, Model: glm.Logistic{}, Samples: 5, Seed: 9},
		{D: d, P: p, Scheme: SchemeMirrorProx, Model: glm.Logistic{}, Samples: 5, Seed: 9},
	} {
		// Uninterrupted.
		full, err := New(b, c)
		if err != nil {
			t.Fatal(err)
		}
		var calls int
		res, err := full.Run(context.Background(), run.Control{Recorder: run.Func(func(run.Record) { calls++ })},
			&SliceSource{X: data.X, Y: data.Y})
		if err != nil || res.Reason != run.Converged || res.Iters != n || calls != n || full.T() != n {
			t.Fatalf("%s: full run %+v err %v, %d callbacks", c.Scheme, res, err, calls)
		}
		want, _ := full.State()
		full.Close()

		// Interrupted at 12 by the context, checkpointed every 4, resumed from the file by a new filter.
		path := filepath.Join(t.TempDir(), "ck")
		f, _ := New(b, c)
		ctx, cancel := context.WithCancel(context.Background())
		src := &SliceSource{X: data.X, Y: data.Y}
		res, _ = f.Run(ctx, run.Control{CheckpointEvery: 4, CheckpointPath: path,
			Recorder: run.Func(func(r run.Record) {
				if r.Iter == 13 {
					cancel()
				}
			})}, src)
		cancel()
		if res.Reason != run.Cancelled || f.T() != 14 {
			t.Fatalf("%s: cancelled run %+v at t = %d", c.Scheme, res, f.T())
		}
		f.Close()
		g, err := New(b, c)
		if err != nil {
			t.Fatal(err)
		}
		src = &SliceSource{X: data.X, Y: data.Y, next: 12}
		ctl := run.Control{MaxIter: 20, CheckpointPath: path, Resume: true}
		if res, err := g.Run(context.Background(), ctl, src); err != nil || g.T() != 20 || res.Iters != 20 || src.next != 20 {
			t.Fatalf("%s: resumed with MaxIter 20: t = %d, %d iterations, source at %d, %v", c.Scheme, g.T(), res.Iters,
				src.next, err)
		}
		if _, err := g.Run(context.Background(), run.Control{}, src); err != nil {
			t.Fatal(err)
		}
		got, _ := g.State()
		g.Close()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: resumed run differs from the uninterrupted run", c.Scheme)
		}
	}
}

// A resume is refused, with the filter left at its start, when the filter's Config is not the one that saved the
// checkpoint (the error names the setting), when the file is of checkpoint version 1 (Config.Scheme was a string),
// and when Resume has no path.
func TestResumeRefused(t *testing.T) {
	b := testbackend.Open(t)
	const d, p = 12, 3
	data := glm.LogisticMixture(glm.NewDesign(d, 1, 2), 10, 0.2, 2)
	c := Config{D: d, P: p, Scheme: SchemeLogistic, Sigma0: 4, InitStd: 1e-3, Seed: 5}
	path := filepath.Join(t.TempDir(), "ck")
	f, _ := New(b, c)
	if _, err := f.Run(context.Background(), run.Control{CheckpointEvery: 5, CheckpointPath: path},
		&SliceSource{X: data.X, Y: data.Y}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	edit := func(e func(*Config)) Config { c2 := c; e(&c2); return c2 }
	for _, cc := range []struct {
		cfg  Config
		want string
	}{
		{edit(func(c *Config) { c.Seed = 6 }), "Seed is 5 in the checkpoint, 6 in this filter"},
		{edit(func(c *Config) { c.P = 2 }), "P is 3 in the checkpoint, 2 in this filter"},
		{edit(func(c *Config) { c.Scheme = SchemeLogisticExtragrad }), "Scheme is logistic in the checkpoint, logistic-extragrad"},
		{edit(func(c *Config) { c.Inner = 2 }), "Inner is 1 in the checkpoint, 2 in this filter"},
		{edit(func(c *Config) { c.Mu0 = make([]float64, d) }), "Mu0 differs"},
		{edit(func(c *Config) { c.Scheme, c.Sigma0, c.InitStd = SchemeLinear, 0, 0 }), "Scheme is logistic in the checkpoint, linear"},
	} {
		g, err := New(b, cc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		before, _ := g.State()
		_, err = g.Run(context.Background(), run.Control{CheckpointPath: path, Resume: true}, &SliceSource{X: data.X, Y: data.Y})
		after, _ := g.State()
		if !errors.Is(err, run.ErrCheckpoint) || !strings.Contains(err.Error(), cc.want) || !reflect.DeepEqual(before, after) {
			t.Errorf("resume into %+v: error %v, want one wrapping run.ErrCheckpoint naming %q, state unchanged", cc.cfg, err, cc.want)
		}
		g.Close()
	}
	// The Config that saved it resumes (the checkpoint was saved at t = 10, the end of the data).
	g, _ := New(b, c)
	if _, err := g.Run(context.Background(), run.Control{CheckpointPath: path, Resume: true, MaxIter: 10}, nil); err != nil || g.T() != 10 {
		t.Errorf("resume with the same Config: t = %d, %v", g.T(), err)
	}
	g.Close()
	old := filepath.Join(t.TempDir(), "v1")
	if err := run.SaveCheckpoint(old, checkpointMethod, 1, struct{ Scheme string }{"logistic"}); err != nil {
		t.Fatal(err)
	}
	g, _ = New(b, c)
	defer g.Close()
	if _, err := g.Run(context.Background(), run.Control{CheckpointPath: old, Resume: true}, nil); !errors.Is(err, run.ErrCheckpoint) ||
		!strings.Contains(err.Error(), "version 1") || g.T() != 0 {
		t.Errorf("resume from a version-1 file: %v (t = %d)", err, g.T())
	}
	if _, err := g.Run(context.Background(), run.Control{Resume: true}, nil); !errors.Is(err, run.ErrConfig) {
		t.Errorf("Resume without a path: %v", err)
	}
}

// T20: the filter's memory does not depend on t or N: the backend's bytes in use are the same after 1 and after
// 200 observations, and the persistent state is 8d(p+2) bytes.
func TestStreamingMemory(t *testing.T) {
	b := testbackend.Open(t)
	const d, p = 200, 5
	data := linearData(d, 200, 1)
	f, _ := New(b, Config{D: d, P: p})
	defer f.Close()
	_ = f.Update(data.Row(0), data.Y[0])
	m1 := b.MemInUse()
	for i := 1; i < 200; i++ {
		if err := f.Update(data.Row(i), data.Y[i]); err != nil {
			t.Fatal(err)
		}
	}
	if m2 := b.MemInUse(); m2 != m1 || f.StateBytes() != 8*d*(p+2) {
		t.Errorf("memory in use %d after 1 step, %d after 200; state %d bytes", m1, m2, f.StateBytes())
	}
	// Two sets of (μ, W, ψ) + four small scratch tensors.
	if want := int64(2*8*d*(p+2) + 3*8*d + 8 + 8*p*p*2); b.MemInUse() > want+1024 {
		t.Errorf("memory in use %d > %d", b.MemInUse(), want)
	}
}
