package cuda

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/backendtest"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/backend/cuda/internal/cu"
	"github.com/geovb/geovb/kernels"
)

// requireGPU is set on GPU machines: a missing device then fails the tests instead of skipping them.
func requireGPU() bool { return os.Getenv("GEOVB_REQUIRE_GPU") == "1" }

// newBackend starts the backend on the first GPU or skips (fails under GEOVB_REQUIRE_GPU=1).
func newBackend(tb testing.TB) *Backend {
	tb.Helper()
	b, err := New()
	if err != nil {
		if requireGPU() {
			tb.Fatalf("GEOVB_REQUIRE_GPU=1 but the CUDA backend does not start: %v", err)
		}
		tb.Skipf("no GPU: %v", err)
	}
	in := b.Info()
	tb.Logf("backend cuda: %s (%s, %d SMs, %.1f GiB), %s, driver %s, NVRTC %s", in.Device, in.Features[0], in.Cores,
		float64(in.Memory)/(1<<30), in.Library, in.Extra["driver"], in.Extra["nvrtc"])
	tb.Cleanup(func() { _ = b.Close() })
	return b
}

// TestConformance runs the shared suite on the GPU: every primitive and every registered kernel against the
// references on the same inputs, with the CPU backends' tolerances.
func TestConformance(t *testing.T) { backendtest.Run(t, newBackend(t)) }

// BenchmarkConformance runs the shared benchmarks (hot operations at small, medium and large sizes) on the GPU.
func BenchmarkConformance(b *testing.B) { backendtest.Bench(b, newBackend(b)) }

// TestNoDevice checks what a machine without a usable GPU sees: New and Open("cuda") return an error wrapping
// backend.ErrNoDevice (no panic), and Open("auto") falls back to the CPU and reports why.
func TestNoDevice(t *testing.T) {
	b, err := New()
	if err == nil {
		_ = b.Close()
		t.Skip("a GPU is present; the no-device path is exercised on machines without one")
	}
	if !errors.Is(err, backend.ErrNoDevice) {
		t.Fatalf("New() = %v, want an error wrapping ErrNoDevice", err)
	}
	if _, err := backend.Open("cuda"); err == nil || !errors.Is(err, backend.ErrNoDevice) {
		t.Fatalf(`Open("cuda") = %v, want an ErrNoDevice error`, err)
	}
	var _ = cpu.Name // the CPU backend is linked in, so "auto" has somewhere to fall back to
	got, skipped, err := backend.OpenReport("auto")
	if err != nil {
		t.Fatalf(`OpenReport("auto"): %v`, err)
	}
	if got.Name() != cpu.Name {
		t.Fatalf(`OpenReport("auto") started %q, want the CPU`, got.Name())
	}
	if len(skipped) == 0 || skipped[0].Name != Name || !strings.Contains(skipped[0].String(), "cuda") {
		t.Fatalf(`OpenReport("auto") skipped %v, want cuda first with its reason`, skipped)
	}
	t.Logf("auto fell back: %v", skipped)
}

// TestBadOrdinal checks that a malformed GEOVB_CUDA_DEVICE is an error naming the variable.
func TestBadOrdinal(t *testing.T) {
	t.Setenv(DeviceEnv, "first")
	_, err := New()
	if err == nil || !errors.Is(err, backend.ErrNoDevice) || !strings.Contains(err.Error(), DeviceEnv) {
		t.Fatalf("New() with %s=first = %v", DeviceEnv, err)
	}
}

// TestKernelsCompile compiles every kernel module with NVRTC for the architectures the backend targets. It needs
// only libnvrtc, not a GPU; it skips when the library is not found unless GEOVB_REQUIRE_NVRTC=1.
func TestKernelsCompile(t *testing.T) {
	nv, err := cu.LoadNVRTC()
	if err != nil {
		if os.Getenv("GEOVB_REQUIRE_NVRTC") == "1" || requireGPU() {
			t.Fatalf("NVRTC required but not loaded: %v", err)
		}
		t.Skipf("NVRTC not found (set GEOVB_LIBNVRTC to a libnvrtc.so to run this test): %v", err)
	}
	major, minor := nv.Version()
	t.Logf("NVRTC %d.%d from %s", major, minor, nv.Path())
	modules := kernels.Modules()
	if len(modules) == 0 {
		t.Fatal("no embedded kernels")
	}
	for _, m := range modules {
		src, err := kernels.Source(m)
		if err != nil {
			t.Fatal(err)
		}
		f := m + ".cu"
		for _, arch := range []string{"sm_80", "sm_90"} {
			img, err := nv.Compile(f, src, arch)
			if err != nil {
				t.Errorf("%s for %s: %v", f, arch, err)
				continue
			}
			if len(img) < 4 || string(img[1:4]) != "ELF" {
				t.Errorf("%s for %s: NVRTC returned %d bytes that are not a CUBIN", f, arch, len(img))
			}
		}
	}
}

// TestVersions checks the rendering of the integer versions CUDA reports.
func TestVersions(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{driverVersion(13000), "13.0"}, {driverVersion(12080), "12.8"}, {blasVersion(130100), "13.1.0"},
		{blasVersion(120804), "12.8.4"}, {solverVersion(11401), "11.4.1"}, {solverVersion(12000), "12.0.0"},
		{driverVersion(0), "unknown"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
