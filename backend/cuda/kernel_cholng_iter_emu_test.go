package cuda

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/geovb/geovb/algos/cholng"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/backend/cuda/internal/cu"
)

// emuLogGPU is the emulated device with a log of every operation queued on the stream: kernel launches (by kernel
// name), memsets, host↔device and device↔device copies and every cuBLAS call the backend makes.
type emuLogGPU struct {
	*emuGPU
	log []string
}

func (w *emuLogGPU) launch(module, name string, grid, block [3]uint32, shmem uint32, args ...any) error {
	w.log = append(w.log, name)
	return w.emuGPU.launch(module, name, grid, block, shmem, args...)
}

func (w *emuLogGPU) Memset0(dst cu.DevPtr, bytes int64) error {
	w.log = append(w.log, "memset")
	return w.emuGPU.Memset0(dst, bytes)
}

func (w *emuLogGPU) HtoD(dst cu.DevPtr, src unsafe.Pointer, bytes int64) error {
	w.log = append(w.log, "HtoD")
	return w.emuGPU.HtoD(dst, src, bytes)
}

func (w *emuLogGPU) DtoH(dst unsafe.Pointer, src cu.DevPtr, bytes int64) error {
	w.log = append(w.log, "DtoH")
	return w.emuGPU.DtoH(dst, src, bytes)
}

func (w *emuLogGPU) DtoD(dst, src cu.DevPtr, bytes int64) error {
	w.log = append(w.log, "DtoD")
	return w.emuGPU.DtoD(dst, src, bytes)
}

func (w *emuLogGPU) Dgemm(ta, tb cu.Op, m, n, k int, alpha float64, a cu.DevPtr, lda int, b cu.DevPtr, ldb int,
	beta float64, c cu.DevPtr, ldc int) error {
	w.log = append(w.log, "cublas.gemm")
	return w.emuGPU.Dgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func (w *emuLogGPU) Dsyrk(uplo cu.Fill, trans cu.Op, n, k int, alpha float64, a cu.DevPtr, lda int, beta float64,
	c cu.DevPtr, ldc int) error {
	w.log = append(w.log, "cublas.syrk")
	return w.emuGPU.Dsyrk(uplo, trans, n, k, alpha, a, lda, beta, c, ldc)
}

func (w *emuLogGPU) Dtrsm(side cu.Side, uplo cu.Fill, trans cu.Op, diag cu.Diag, m, n int, alpha float64,
	a cu.DevPtr, lda int, b cu.DevPtr, ldb int) error {
	w.log = append(w.log, "cublas.trsm")
	return w.emuGPU.Dtrsm(side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb)
}

func (w *emuLogGPU) DgemmStridedBatched(ta, tb cu.Op, m, n, k int, alpha float64, a cu.DevPtr, lda int, sa int64,
	b cu.DevPtr, ldb int, sb int64, beta float64, c cu.DevPtr, ldc int, sc int64, batch int) error {
	w.log = append(w.log, "cublas.gemmStridedBatched")
	return w.emuGPU.DgemmStridedBatched(ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch)
}

func (w *emuLogGPU) DtrsmBatched(side cu.Side, uplo cu.Fill, trans cu.Op, diag cu.Diag, m, n int, alpha float64,
	aArray cu.DevPtr, lda int, bArray cu.DevPtr, ldb int, batch int) error {
	w.log = append(w.log, "cublas.trsmBatched")
	return w.emuGPU.DtrsmBatched(side, uplo, trans, diag, m, n, alpha, aArray, lda, bArray, ldb, batch)
}

func (w *emuLogGPU) Dtrmm(side cu.Side, uplo cu.Fill, trans cu.Op, diag cu.Diag, m, n int, alpha float64,
	a cu.DevPtr, lda int, b cu.DevPtr, ldb int, c cu.DevPtr, ldc int) error {
	w.log = append(w.log, "cublas.trmm")
	return w.emuGPU.Dtrmm(side, uplo, trans, diag, m, n, alpha, a, lda, b, ldb, c, ldc)
}

func (w *emuLogGPU) Dgeam(ta, tb cu.Op, m, n int, alpha float64, a cu.DevPtr, lda int, beta float64, b cu.DevPtr,
	ldb int, c cu.DevPtr, ldc int) error {
	w.log = append(w.log, "cublas.geam")
	return w.emuGPU.Dgeam(ta, tb, m, n, alpha, a, lda, beta, b, ldb, c, ldc)
}

// gaussModel is log p(θ) = −½Σ_k s_k θ_k² (s_k in [0.5, 1.5]): any smooth model does for counting and comparing.
type gaussModel struct{ s []float64 }

func (m gaussModel) Dim() int { return len(m.s) }
func (m gaussModel) LogJoint(th, g []float64) float64 {
	var lp float64
	for k, v := range th {
		lp -= 0.5 * m.s[k] * v * v
		g[k] = -m.s[k] * v
	}
	return lp
}

func (m gaussModel) LogDensity(grad, th []float64) (float64, error) { return m.LogJoint(th, grad), nil }

// arrowGradient makes an Arrow family on b with the given local group sizes and d_G = 3, sets a random λ and z
// (the same for every backend) and returns h, the Riemannian norm² and the natural gradient of one Gradient call,
// with the stream operations that call queued when log is set.
func arrowGradient(t *testing.T, b backend.Backend, sizes []int, log *emuLogGPU) (h, n2 float64, grad []float64,
	ops []string) {
	t.Helper()
	const dG = 3
	f, err := cholng.NewArrow(b, sizes, dG, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rnd := rand.New(rand.NewPCG(uint64(len(sizes)), 7))
	// λ: μ, then per group the packed lower T_i (diagonal in ±[0.8, 1.6]) and T_Gi, then T_G.
	lam, err := f.Lambda()
	if err != nil {
		t.Fatal(err)
	}
	d := f.Dim()
	k := 0
	tri := func(r int) {
		for a := 0; a < r; a++ {
			for c := 0; c <= a; c++ {
				lam[k] = 0.3 * rnd.NormFloat64()
				if c == a {
					lam[k] = 0.8 + 0.8*rnd.Float64()
				}
				k++
			}
		}
	}
	for ; k < d; k++ {
		lam[k] = rnd.NormFloat64()
	}
	for _, r := range sizes {
		tri(r)
		for j := 0; j < dG*r; j++ {
			lam[k] = 0.3 * rnd.NormFloat64()
			k++
		}
	}
	tri(dG)
	if err := f.SetLambda(lam); err != nil {
		t.Fatal(err)
	}
	z := make([]float64, d)
	s := make([]float64, d)
	for k := range z {
		z[k], s[k] = rnd.NormFloat64(), 0.5+rnd.Float64()
	}
	if err := f.SetZ(z); err != nil {
		t.Fatal(err)
	}
	if log != nil {
		log.log = nil
	}
	h, n2, err = f.Gradient(gaussModel{s}, cholng.Natural)
	if err != nil {
		t.Fatal(err)
	}
	if log != nil {
		ops = slices.Clone(log.log)
	}
	if grad, err = f.GradLambda(); err != nil {
		t.Fatal(err)
	}
	return h, n2, grad, ops
}

// TestEmuCholNGIterationLaunches counts the stream operations of one natural-gradient evaluation of Alg 2c
// (cholng.Arrow.Gradient: the draw θ = μ + T⁻ᵀz with log q, the model on the host, v = T⁻¹g with its coupling sum, the
// μ/T_i/T_Gi/T_G parts and the Riemannian norm) on the emulated device, with one bucket of groups and with two
// (groups of two sizes). Everything queued is counted: kernel launches, memsets, copies and cuBLAS calls. What one
// more bucket adds is the block work of a bucket; the target is at most 4 launches, and it is exactly
// cholng_draw, cholng_lower and cholng_natgrad (3 launches) and the 4-byte memsets that zero their ticket counters
// (3). The gradient is also compared with the CPU backend's.
func TestEmuCholNGIterationLaunches(t *testing.T) {
	eb := newEmuBackend(t)
	lg := &emuLogGPU{emuGPU: eb.gpu.(*emuGPU)}
	eb.gpu = lg
	cb, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	one := slices.Repeat([]int{2}, 600)
	two := append(slices.Repeat([]int{2}, 600), slices.Repeat([]int{3}, 300)...)
	count := func(ops []string) map[string]int {
		m := map[string]int{}
		for _, o := range ops {
			m[o]++
		}
		return m
	}
	var per [2]map[string]int
	for k, sizes := range [][]int{one, two} {
		h, n2, grad, ops := arrowGradient(t, eb, sizes, lg)
		hc, n2c, gradc, _ := arrowGradient(t, cb, sizes, nil)
		if e := math.Abs(h-hc) / max(1, math.Abs(hc)); e > 1e-12 {
			t.Errorf("%d bucket(s): h = %v on the emulated device, %v on the CPU", k+1, h, hc)
		}
		if e := math.Abs(n2-n2c) / max(1, math.Abs(n2c)); e > 1e-12 {
			t.Errorf("%d bucket(s): norm² = %v on the emulated device, %v on the CPU", k+1, n2, n2c)
		}
		var num, den float64
		for i := range gradc {
			num, den = max(num, math.Abs(grad[i]-gradc[i])), max(den, math.Abs(gradc[i]))
		}
		if e := num / max(1, den); !(e <= 1e-12) {
			t.Errorf("%d bucket(s): gradient differs from the CPU's by %.3g", k+1, e)
		}
		per[k] = count(ops)
		t.Logf("%d bucket(s): %d stream operations: %v", k+1, len(ops), per[k])
	}
	// What the second bucket adds.
	added := map[string]int{}
	for _, o := range slices.Sorted(maps.Keys(per[1])) {
		if d := per[1][o] - per[0][o]; d != 0 {
			added[o] = d
		}
	}
	for o := range per[0] {
		if _, ok := per[1][o]; !ok {
			added[o] = -per[0][o]
		}
	}
	launches := 0
	for o, d := range added {
		if o != "memset" {
			launches += d
		}
	}
	t.Logf("per bucket: %v (%d launches besides memsets)", added, launches)
	if launches > 4 {
		t.Errorf("one bucket adds %d launches (%v), notes J.29 allows 4", launches, added)
	}
	want := map[string]int{"cholng_draw": 1, "cholng_lower": 1, "cholng_natgrad": 1, "memset": 3}
	if !maps.Equal(added, want) {
		t.Errorf("one bucket adds %v, want %v", added, want)
	}
}
