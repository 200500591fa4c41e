package cu

import (
	"errors"
	"math"
	"os"
	"testing"
	"unsafe"
)

// openGPU opens device 0 of the real libraries, or skips when CUDA is unavailable; with GEOVB_REQUIRE_GPU=1 it
// fails instead, so a GPU machine cannot pass by skipping.
func openGPU(t *testing.T) *Device {
	t.Helper()
	d, err := Open(0)
	if err != nil {
		if errors.Is(err, ErrUnavailable) && os.Getenv("GEOVB_REQUIRE_GPU") != "1" {
			t.Skipf("no usable GPU (set GEOVB_REQUIRE_GPU=1 to make this a failure): %v", err)
		}
		t.Fatalf("Open(0): %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	i := d.Info()
	t.Logf("%s (%s, %d SMs, %.1f GiB), driver %d, cuBLAS %d, cuSOLVER %d, NVRTC %d.%d, compiling for %s; %v",
		i.Name, d.Arch(), i.SMs, float64(i.TotalMem)/(1<<30), i.DriverVersion, i.BLASVersion, i.SolverVersion,
		i.NVRTCMajor, i.NVRTCMinor, d.compileArch, i.Paths)
	return d
}

func TestGPUSmoke(t *testing.T) {
	d := openGPU(t)
	smoke(t, d)
}

// TestGPUKernel launches a kernel with every argument type and checks what it computed.
func TestGPUKernel(t *testing.T) {
	d := openGPU(t)
	const src = `
extern "C" __global__ void mix(double* out, long long n, int i32, unsigned u32, unsigned long long u64, double f64, float f32, long long i64) {
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) out[i] = (double)i + (double)i32 + (double)u32 + (double)u64 + f64 + (double)f32 + (double)i64;
}
`
	const n = 1000
	got := make([]float64, n)
	err := d.Do(func() error {
		m, err := d.Module("mix.cu", src)
		if err != nil {
			return err
		}
		f, err := m.Func("mix")
		if err != nil {
			return err
		}
		out, err := d.MemAlloc(8 * n)
		if err != nil {
			return err
		}
		defer d.MemFree(out)
		if err := d.Launch(f, [3]uint32{(n + 127) / 128, 1, 1}, [3]uint32{128, 1, 1}, 0,
			out, n, int32(-3), uint32(5), uint64(1<<40), 0.25, float32(0.5), int64(-(1 << 40))); err != nil {
			return err
		}
		return d.DtoH(unsafe.Pointer(&got[0]), out, 8*n)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		if want := float64(i) - 3 + 5 + 0.25 + 0.5; g != want {
			t.Fatalf("out[%d] = %g, want %g", i, g, want)
		}
	}
}

// TestGPUSolvers checks Dpotrf, DpotrfBatched, Dgeqrf/Dorgqr, Dsyevd and DsyevjBatched on small matrices against
// identities (L Lᵀ = A, QᵀQ = I, A v = λ v).
func TestGPUSolvers(t *testing.T) {
	d := openGPU(t)
	const n = 5
	// A = B Bᵀ + n I, symmetric positive definite, column-major.
	a := make([]float64, n*n)
	for i := range n {
		for j := range n {
			s := 0.0
			for k := range n {
				s += math.Sin(float64(i*n+k+1)) * math.Sin(float64(j*n+k+1))
			}
			a[i+n*j] = s
		}
		a[i+n*i] += n
	}
	l := make([]float64, n*n)
	q := make([]float64, n*n)
	vec := make([]float64, 2*n*n)
	w := make([]float64, 2*n)
	w2 := make([]float64, n)
	infos := make([]int32, 4)
	err := d.Do(func() error {
		pa, err := d.MemAlloc(8 * 2 * n * n)
		if err != nil {
			return err
		}
		defer d.MemFree(pa)
		pw, err := d.MemAlloc(8 * 2 * n)
		if err != nil {
			return err
		}
		defer d.MemFree(pw)
		pinfo, err := d.MemAlloc(4 * 4)
		if err != nil {
			return err
		}
		defer d.MemFree(pinfo)
		ptau, err := d.MemAlloc(8 * n)
		if err != nil {
			return err
		}
		defer d.MemFree(ptau)
		put := func() error {
			if err := d.HtoD(pa, unsafe.Pointer(&a[0]), 8*n*n); err != nil {
				return err
			}
			return d.HtoD(pa+DevPtr(8*n*n), unsafe.Pointer(&a[0]), 8*n*n)
		}
		if err := put(); err != nil {
			return err
		}
		if err := d.Dpotrf(Lower, n, pa, n, pinfo); err != nil {
			return err
		}
		if err := d.DtoH(unsafe.Pointer(&l[0]), pa, 8*n*n); err != nil {
			return err
		}
		if err := put(); err != nil {
			return err
		}
		if err := d.Dgeqrf(n, n, pa, n, ptau, pinfo+4); err != nil {
			return err
		}
		if err := d.Dorgqr(n, n, n, pa, n, ptau, pinfo+4); err != nil {
			return err
		}
		if err := d.DtoH(unsafe.Pointer(&q[0]), pa, 8*n*n); err != nil {
			return err
		}
		if err := put(); err != nil {
			return err
		}
		if err := d.Dsyevd(false, Lower, n, pa, n, pw, pinfo+8); err != nil {
			return err
		}
		if err := d.DtoH(unsafe.Pointer(&w2[0]), pw, 8*n); err != nil {
			return err
		}
		if err := put(); err != nil {
			return err
		}
		if err := d.DsyevjBatched(true, Lower, n, pa, n, pw, pinfo+8, 2); err != nil {
			return err
		}
		if err := d.DtoH(unsafe.Pointer(&vec[0]), pa, 8*2*n*n); err != nil {
			return err
		}
		if err := d.DtoH(unsafe.Pointer(&w[0]), pw, 8*2*n); err != nil {
			return err
		}
		return d.DtoH(unsafe.Pointer(&infos[0]), pinfo, 4*4)
	})
	if err != nil {
		t.Fatal(err)
	}
	if infos[0] != 0 || infos[1] != 0 || infos[2] != 0 || infos[3] != 0 {
		t.Fatalf("info = %v", infos)
	}
	tol := 1e-10 * n * n
	for i := range n {
		for j := 0; j <= i; j++ {
			s := 0.0
			for k := 0; k <= j; k++ {
				s += l[i+n*k] * l[j+n*k]
			}
			if math.Abs(s-a[i+n*j]) > tol {
				t.Fatalf("Dpotrf: (L Lᵀ)[%d,%d] = %g, want %g", i, j, s, a[i+n*j])
			}
		}
	}
	for i := range n {
		for j := range n {
			s := 0.0
			for k := range n {
				s += q[k+n*i] * q[k+n*j]
			}
			if want := b2f(i == j); math.Abs(s-want) > tol {
				t.Fatalf("Dorgqr: (QᵀQ)[%d,%d] = %g, want %g", i, j, s, want)
			}
		}
	}
	for b := range 2 {
		for k := range n {
			if k > 0 && w[b*n+k] < w[b*n+k-1] {
				t.Fatalf("DsyevjBatched: eigenvalues not ascending: %v", w)
			}
			if math.Abs(w[b*n+k]-w2[k]) > tol*math.Abs(w2[k]) {
				t.Fatalf("DsyevjBatched eigenvalue %g, Dsyevd %g", w[b*n+k], w2[k])
			}
			for i := range n {
				av := 0.0
				for j := range n {
					av += a[i+n*j] * vec[b*n*n+j+n*k]
				}
				if r := av - w[b*n+k]*vec[b*n*n+i+n*k]; math.Abs(r) > tol*math.Abs(w[b*n+k]) {
					t.Fatalf("DsyevjBatched: (A v - λ v)[%d] = %g for eigenpair %d of batch %d", i, r, k, b)
				}
			}
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
