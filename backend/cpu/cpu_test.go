package cpu_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/backendtest"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/tensor"
)

func newBackend(tb testing.TB) *cpu.Backend {
	b, err := cpu.New()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Logf("backend %s: %s, %d workers", b.Name(), b.Info().Library, b.Workers())
	return b
}

// TestConformance runs the shared suite on the CPU backend (pure Go, or OpenBLAS under -tags netlib).
func TestConformance(t *testing.T) { backendtest.Run(t, newBackend(t)) }

// BenchmarkConformance runs the shared benchmarks (hot operations at small, medium and large sizes).
func BenchmarkConformance(b *testing.B) { backendtest.Bench(b, newBackend(b)) }

func TestOpen(t *testing.T) {
	b, err := backend.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != "cpu" {
		t.Fatalf("Open(cpu).Name() = %q", b.Name())
	}
	t.Setenv(backend.EnvVar, "cpu")
	if b, err = backend.Open(""); err != nil || b.Name() != "cpu" {
		t.Fatalf("Open(\"\") with %s=cpu: %v, %v", backend.EnvVar, b, err)
	}
	t.Setenv(backend.EnvVar, "")
	if b, err = backend.Open("auto"); err != nil {
		t.Fatalf("Open(auto): %v", err)
	}
	if _, err := backend.Open("tpu"); err == nil || !errors.Is(err, backend.ErrNoDevice) {
		t.Fatalf("Open(tpu) = %v, want an ErrNoDevice error", err)
	}
}

// A whole-tensor reduction keeps its rows-long partials in pooled scratch: once warm, ten calls allocate less than
// half a partial each on average (8·rows bytes per call without pooling: 8 MB for a d = 1e6 vector; one miss of the
// per-P pool costs a tenth). The collector is off during the count so that it cannot empty the pools.
func TestReduceAllReusesScratch(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled buffers at random")
	}
	b := newBackend(t)
	const rows = 1 << 17
	x, err := b.Alloc(tensor.Shape{Batch: 1, Rows: rows, Cols: 1})
	if err != nil {
		t.Fatal(err)
	}
	dst, err := b.Alloc(tensor.Shape{Batch: 1, Rows: 1, Cols: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Fill(x, 0.5); err != nil {
		t.Fatal(err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC() // finish any cycle that started before the collector was switched off
	reduce := func() {
		if err := b.Reduce(dst, backend.ReduceSum, backend.AxisAll, x); err != nil {
			t.Fatal(err)
		}
	}
	reduce()
	reduce()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		reduce()
	}
	runtime.ReadMemStats(&after)
	if got := dst.At(0, 0, 0); got != rows*0.5 {
		t.Fatalf("sum = %v, want %v", got, rows*0.5)
	}
	per := float64(after.TotalAlloc-before.TotalAlloc) / 10
	if per > 0.5*8*rows {
		t.Fatalf("Reduce(AxisAll) allocates %.0f bytes per call, want < %d", per, 8*rows/2)
	}
	t.Logf("%.0f bytes per call (a partial is %d)", per, 8*rows)
}

// Map of Exp and Log gives Unary's bits, math.Exp's and math.Log's, though it takes them four at a time
// (internal/vmath): arguments over the whole range and beyond it, a strided view, alpha ≠ 1, in place.
func TestMapExpLogBits(t *testing.T) {
	b := newBackend(t)
	r := rand.New(rand.NewPCG(11, 12))
	x := tensor.NewHost(3, 50, 41)
	for i, h := 0, x.Storage().Host(); i < len(h); i++ {
		h[i] = (r.Float64()*2 - 1) * 400
		if i%97 == 0 {
			h[i] = []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, -1e-310}[i/97%5]
		}
	}
	xv := x.Slice(0, 50, 1, 40) // strided rows of 39
	for _, f := range []backend.UnaryOp{backend.Exp, backend.Log} {
		for _, alpha := range []float64{1, -1.7, 0.3} {
			want := tensor.NewHost(3, 50, 39)
			for bb := 0; bb < 3; bb++ {
				for i := 0; i < 50; i++ {
					for j := 0; j < 39; j++ {
						want.Set(bb, i, j, cpu.Unary(f, alpha*xv.At(bb, i, j)))
					}
				}
			}
			got := tensor.NewHost(3, 50, 39)
			if err := b.Map(got, f, alpha, xv); err != nil {
				t.Fatal(err)
			}
			in := xv.Clone()
			if err := b.Map(in, f, alpha, in); err != nil {
				t.Fatal(err)
			}
			for bb := 0; bb < 3; bb++ {
				for i := 0; i < 50; i++ {
					for j := 0; j < 39; j++ {
						w := math.Float64bits(want.At(bb, i, j))
						if math.Float64bits(got.At(bb, i, j)) != w || math.Float64bits(in.At(bb, i, j)) != w {
							t.Fatalf("map %v, alpha %v, (%d, %d, %d): %v and in place %v, Unary %v", f, alpha, bb, i,
								j, got.At(bb, i, j), in.At(bb, i, j), want.At(bb, i, j))
						}
					}
				}
			}
		}
	}
}
