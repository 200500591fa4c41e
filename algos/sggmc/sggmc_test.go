package sggmc

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/models/vmf"
)

// The flow invariants (‖x‖ = 1, xᵀv = 0, group properties, 2e7-step drift) are tested once for
// every backend in backend/backendtest/sphere.go; here the samplers are tested.

func vmfTarget(t testing.TB, d int, kappa, noise float64) (*vmf.Mixture, []float64) {
	mu := make([]float64, d)
	mu[0] = 1
	m, err := vmf.NewMixture([]float64{1}, []float64{kappa}, [][]float64{mu})
	if err != nil {
		t.Fatal(err)
	}
	m.GradNoise, m.Seed = noise, 5
	return m, mu
}

func TestBadInput(t *testing.T) {
	b := testbackend.Open(t)
	tgt, _ := vmfTarget(t, 3, 1, 0)
	hx := randomHost(2, 1, 3, 1)
	x := testbackend.Upload(t, b, hx)
	for name, cfg := range map[string]Config{
		"eps":    {Step: 0, Friction: 1},
		"C":      {Step: 0.1, Friction: -1},
		"vhat":   {Step: 0.1, Friction: 1, VHat: 30}, // 2Cε − V̂ε² = 0.2 − 0.3 < 0
		"method": {Method: 7, Step: 0.1, Friction: 1},
	} {
		if _, err := New(b, tgt, x, cfg); !errors.Is(err, run.ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
	hoff := hx.Clone()
	for j := 0; j < 3; j++ {
		hoff.Set(1, 0, j, hoff.At(1, 0, j)*(1+2e-8))
	}
	off := testbackend.Upload(t, b, hoff)
	if _, err := New(b, tgt, off, Config{Step: 0.1, Friction: 1}); !errors.Is(err, backend.ErrDomain) {
		t.Errorf("point off the sphere: %v", err)
	}
	if _, err := NewGMC(b, tgt, off, 0.1, 3, 1, 0); !errors.Is(err, backend.ErrDomain) {
		t.Errorf("GMC point off the sphere: %v", err)
	}
}

// Starting points with no chain, sphere or coordinate are an error, not a panic in the first gradient.
func TestEmptyStart(t *testing.T) {
	b := testbackend.Open(t)
	tgt, _ := vmfTarget(t, 3, 1, 0)
	// The empty tensors are allocated on b (every backend allocates zero-size tensors), so that the shape is all
	// that is wrong with them.
	for _, x := range []*T{nil, testbackend.Alloc(t, b, 0, 1, 3), testbackend.Alloc(t, b, 2, 0, 3)} {
		if _, err := New(b, tgt, x, Config{Step: 0.1, Friction: 1}); !errors.Is(err, backend.ErrShape) {
			t.Errorf("SGGMC from %v: %v, want ErrShape", x, err)
		}
		if _, err := NewGMC(b, tgt, x, 0.1, 3, 1, 0); !errors.Is(err, backend.ErrShape) {
			t.Errorf("GMC from %v: %v, want ErrShape", x, err)
		}
	}
}

// After many steps with large angles the chains stay on the product of spheres with tangent velocities.
func TestInvariants(t *testing.T) {
	b := testbackend.Open(t)
	tgt, _ := vmfTarget(t, 7, 3, 4)
	for _, m := range []Method{SGGMC, GSGNHT} {
		x := randomPoints(t, b, 3, 4, 7, 2)
		// A product target: the vMF gradient applied row by row (K = 4 rows).
		s, err := New(b, rowTarget{tgt}, x, Config{Method: m, Step: 0.3, Friction: 0.5, L: 7, RenormEvery: -1})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 300; i++ {
			if err := s.Sample(); err != nil {
				t.Fatal(err)
			}
		}
		st, _ := s.State()
		for r := 0; r < 12; r++ {
			var xx, xv float64
			for j := 0; j < 7; j++ {
				xx += st.X[r*7+j] * st.X[r*7+j]
				xv += st.X[r*7+j] * st.V[r*7+j]
			}
			if math.Abs(xx-1) > 1e-12 || math.Abs(xv) > 1e-12 {
				t.Errorf("%v row %d: ‖x‖²−1 = %.3g, xᵀv = %.3g", m, r, xx-1, xv)
			}
		}
		if s.Steps() != 2100 {
			t.Errorf("steps %d", s.Steps())
		}
		s.Close()
	}
}

// rowTarget applies a one-sphere target to every row of a batch×K×n tensor, reshaped to (batch·K)×1×n.
type rowTarget struct{ m *vmf.Mixture }

func (r rowTarget) GradU(b backend.Backend, g, x *T, step uint64) error {
	xr, _ := x.Reshape(x.Batch()*x.Rows(), 1, x.Cols())
	gr, _ := g.Reshape(x.Batch()*x.Rows(), 1, x.Cols())
	return r.m.GradU(b, gr, xr, step)
}

// Run with a checkpoint, resume from it, and land on the same state bit for bit.
func TestCheckpointResume(t *testing.T) {
	b := testbackend.Open(t)
	tgt, _ := vmfTarget(t, 4, 5, 1)
	cfg := Config{Method: GSGNHT, Step: 0.1, Friction: 1, L: 3, Seed: 9}
	x := randomPoints(t, b, 5, 1, 4, 3)
	path := filepath.Join(t.TempDir(), "ck.gob")

	full, err := New(b, tgt, x, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mem run.Memory
	res, _ := full.Run(context.Background(), run.Control{MaxIter: 20, CheckpointEvery: 10, CheckpointPath: path, Recorder: &mem}, nil)
	if res.Err != nil || res.Reason != run.MaxIter || res.Iters != 20 {
		t.Fatalf("run: %+v", res)
	}
	if len(mem.Records) != 20 || mem.Records[19].Extra["xi"] == 0 {
		t.Fatalf("records: %d", len(mem.Records))
	}
	want, err := full.State()
	if err != nil {
		t.Fatal(err)
	}

	// The checkpoint holds iteration 20 (last save at 20): rerun 10 from a fresh sampler, checkpoint at 10, resume.
	half, err := New(b, tgt, x, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := half.Run(context.Background(), run.Control{MaxIter: 10, CheckpointEvery: 10, CheckpointPath: path}, nil); err != nil {
		t.Fatal(err)
	}
	res2, err := New(b, tgt, randomPoints(t, b, 5, 1, 4, 77), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := res2.Run(context.Background(), run.Control{MaxIter: 20, CheckpointPath: path, Resume: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Iters != 20 {
		t.Fatalf("resumed run did %d iterations", r.Iters)
	}
	got, err := res2.State()
	if err != nil {
		t.Fatal(err)
	}
	for i := range want.X {
		if got.X[i] != want.X[i] || got.V[i] != want.V[i] {
			t.Fatalf("resumed state differs at %d: %v vs %v", i, got.X[i], want.X[i])
		}
	}
	if got.Xi[0] != want.Xi[0] {
		t.Fatalf("ξ differs")
	}
	// A checkpoint of another shape is refused.
	other, err := New(b, tgt, randomPoints(t, b, 4, 1, 4, 3), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Run(context.Background(), run.Control{MaxIter: 20, CheckpointPath: path, Resume: true}, nil); !errors.Is(err, backend.ErrShape) {
		t.Errorf("resume into another shape: %v", err)
	}
}

// SGGMC and gSGNHT on vMF(μ, 20) in d = 10, a short run with many batched chains: E[μᵀx] = A₁₀(20)
// within 5 SE (plus the O(ε²) bias of the integrator, measured 3e-4), ‖v‖²/m ≈ 1.
func TestVMFTargetShort(t *testing.T) {
	b := testbackend.Open(t)
	a, _ := vmf.A(10, 20)
	// gSGNHT's splitting bias is larger than SGGMC's: measured E[μᵀx] − A = 0.0074, 0.0019, 0.00025 at ε = 0.1,
	// 0.05, 0.025 (O(ε²)); it is run at ε = 0.025.
	for _, c := range []struct {
		m    Method
		eps  float64
		want float64
	}{{SGGMC, 0.05, a}, {GSGNHT, 0.025, a}} {
		tgt, mu := vmfTarget(t, 10, 20, 0)
		x0 := make([]float64, 10)
		x0[1] = 1 // x₀ ⊥ μ
		s, err := New(b, tgt, pointsAt(t, b, 200, x0), Config{Method: c.m, Step: c.eps, Friction: 1, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		st := newChainStats(200, 1)
		var kin float64
		runChains(t, s, int(100/c.eps), 1500, func(ch int, x []float64) { st.add(ch, x[0]*mu[0]) })
		st.n = 1500
		d, _ := s.Diagnostics()
		kin = d.Kinetic
		m, se := st.mean(0)
		if math.Abs(m-c.want) > 5*se+3e-4 {
			t.Errorf("%v: E[μᵀx] = %.5f ± %.5f, want %.6f", c.m, m, se, c.want)
		}
		if math.Abs(kin-1) > 0.1 {
			t.Errorf("%v: ‖v‖²/m = %.4f", c.m, kin)
		}
		t.Logf("%v: E[μᵀx] = %.5f ± %.5f (A = %.6f), ‖v‖²/m = %.4f", c.m, m, se, c.want, kin)
		s.Close()
	}
}

// GMC on the same vMF target: exact up to Monte Carlo error (MH-corrected), with a high acceptance rate.
func TestGMCvMF(t *testing.T) {
	b := testbackend.Open(t)
	tgt, mu := vmfTarget(t, 10, 20, 0)
	a, _ := vmf.A(10, 20)
	g, err := NewGMC(b, tgt, randomPoints(t, b, 200, 1, 10, 4), 0.1, 10, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	st := newChainStats(200, 1)
	runChains(t, g, 50, 300, func(ch int, x []float64) { st.add(ch, x[0]*mu[0]) })
	st.n = 300
	m, se := st.mean(0)
	if math.Abs(m-a) > 5*se {
		t.Errorf("GMC E[μᵀx] = %.5f ± %.5f, want %.6f", m, se, a)
	}
	if ar := g.AcceptRate(); ar < 0.8 || ar > 1 {
		t.Errorf("acceptance %.3f", ar)
	}
	t.Logf("GMC: E[μᵀx] = %.5f ± %.5f (A = %.6f), acceptance %.4f", m, se, a, g.AcceptRate())
}

// Chains in one batch advance independently: running 3 chains together gives the same law as running them alone,
// and the first chain of a batch run with one chain is the same as the batched chain 0 (same noise stream layout).
func TestBatchLayout(t *testing.T) {
	b := testbackend.Open(t)
	tgt, _ := vmfTarget(t, 3, 2, 0)
	x := randomPoints(t, b, 3, 1, 3, 8)
	s3, err := New(b, tgt, x, Config{Step: 0.1, Friction: 1, L: 2, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := s3.Sample(); err != nil {
			t.Fatal(err)
		}
	}
	st3, err := s3.State()
	if err != nil {
		t.Fatal(err)
	}
	// Chains differ from one another (independent noise).
	if st3.X[0] == st3.X[3] && st3.X[1] == st3.X[4] {
		t.Fatal("chains 0 and 1 identical")
	}
	h := testbackend.Download(t, b, s3.X())
	if h.At(2, 0, 1) != st3.X[7] {
		t.Fatal("state layout")
	}
}
