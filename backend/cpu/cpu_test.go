package cpu_test

import (
	"errors"
	"testing"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/backendtest"
	"github.com/geovb/geovb/backend/cpu"
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
