package cpu_test

import (
	"errors"
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
