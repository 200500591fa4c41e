package lrvga

// Memory of the filter (T14: state of 8d(p+2) bytes, nothing O(d²) allocated;
// T20: one pass, state size independent of t) and the equivalence of the step without a copy of the old factors
// (backend.RecursiveEMFrom) to the in-place recursive EM with its private copy.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/repro"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/models/glm"
	"github.com/geovb/geovb/tensor"
)

// memTracker is an instrumented allocator: it passes every call to the wrapped backend and records the bytes in
// use through Alloc, their peak and the largest single allocation. Wrapping hides the backend's registered kernels
// (they apply to the backend's own type), so the low-rank operations run their references, which allocate all
// their temporaries through Alloc: the tracker sees every buffer a device backend would need.
type memTracker struct {
	backend.Backend
	mu             sync.Mutex
	live           map[*tensor.Tensor]int64
	cur, peak, big int64
	// collect runs the garbage collector when a buffer of 1 MB or more is freed, so that the process's resident
	// set stays near the bytes in use during the d = 1e6 runs (the CPU backend's memory is Go heap).
	collect bool
}

func newMemTracker(b backend.Backend) *memTracker {
	return &memTracker{Backend: b, live: map[*tensor.Tensor]int64{}}
}

func (m *memTracker) Alloc(s tensor.Shape) (*tensor.Tensor, error) {
	x, err := m.Backend.Alloc(s)
	if err != nil {
		return nil, err
	}
	n := int64(s.Len()) * 8
	m.mu.Lock()
	m.live[x] = n
	m.cur += n
	m.peak = max(m.peak, m.cur)
	m.big = max(m.big, n)
	m.mu.Unlock()
	return x, nil
}

func (m *memTracker) Free(x *tensor.Tensor) {
	m.mu.Lock()
	n, ok := m.live[x]
	if ok {
		m.cur -= n
		delete(m.live, x)
	}
	m.mu.Unlock()
	m.Backend.Free(x)
	if ok && m.collect && n >= 1<<20 {
		runtime.GC()
	}
}

func (m *memTracker) MemInUse() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur
}

// resetPeak sets the peak to the bytes in use now.
func (m *memTracker) resetPeak() {
	m.mu.Lock()
	m.peak = m.cur
	m.mu.Unlock()
}

// emCase is one RecursiveEM configuration.
type emCase struct {
	inner       int
	alpha, beta float64
	kc          int // columns of X; 0: no X
}

// RecursiveEMFrom against RecursiveEM on a copy of the old factors (the in-place path, which keeps its own copy of
// W_{t-1}, ψ_{t-1} for the inner loop): W, ψ and the clamp count must agree bit for bit, on the registered kernels
// and on the references (through the tracker), and (w0, psi0) must be left unchanged. Then bad calls: an error,
// nothing written.
func TestRecursiveEMFromMatchesInPlace(t *testing.T) {
	const d, p = 57, 4
	base := testbackend.Open(t)
	r := rand.New(rand.NewPCG(5, 6))
	normal := func(n int, s float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = s * r.NormFloat64()
		}
		return v
	}
	w0h := normal(d*p, 0.7)
	psi0h := make([]float64, d)
	for i := range psi0h {
		psi0h[i] = 0.5 + r.Float64()
	}
	for _, be := range []struct {
		name string
		b    backend.Backend
	}{{"kernels", base}, {"references", newMemTracker(base)}} {
		b := be.b
		for _, c := range []emCase{{1, 1, 1, 1}, {2, 1, 1, 1}, {3, 1, 1, 1}, {5, 0.7, 1.3, 3}, {3, 0.9, 0, 0}, {4, 0, 0.25, 6}} {
			name := fmt.Sprintf("%s/inner=%d/alpha=%g/beta=%g/kc=%d", be.name, c.inner, c.alpha, c.beta, c.kc)
			var x *tensor.Tensor
			if c.kc > 0 {
				x = upload(t, b, normal(d*c.kc, 1), d, c.kc)
			}
			opt := backend.EMOptions{Inner: c.inner}
			// In place on a copy.
			wa, pa := upload(t, b, w0h, d, p), upload(t, b, psi0h, d, 1)
			sa, err := backend.RecursiveEM(b, wa, pa, x, c.alpha, c.beta, opt)
			if err != nil {
				t.Fatalf("%s: RecursiveEM: %v", name, err)
			}
			// From the old factors, kept apart; the outputs start as garbage.
			w0, p0 := upload(t, b, w0h, d, p), upload(t, b, psi0h, d, 1)
			wb, pb := upload(t, b, normal(d*p, 3), d, p), upload(t, b, normal(d, 3), d, 1)
			sb, err := backend.RecursiveEMFrom(b, wb, pb, w0, p0, x, c.alpha, c.beta, opt)
			if err != nil {
				t.Fatalf("%s: RecursiveEMFrom: %v", name, err)
			}
			if !bitsEqual(download(t, b, wa), download(t, b, wb)) || !bitsEqual(download(t, b, pa), download(t, b, pb)) || sa != sb {
				t.Errorf("%s: RecursiveEMFrom differs from RecursiveEM on a copy (clamped %d vs %d)", name, sb.Clamped, sa.Clamped)
			}
			if !bitsEqual(download(t, b, w0), w0h) || !bitsEqual(download(t, b, p0), psi0h) {
				t.Errorf("%s: RecursiveEMFrom changed its inputs w0, psi0", name)
			}
			for _, u := range []*tensor.Tensor{wa, pa, w0, p0, wb, pb, x} {
				if u != nil {
					b.Free(u)
				}
			}
		}
	}

	// Bad calls: the outputs must not be written.
	b := base
	w0, p0 := upload(t, b, w0h, d, p), upload(t, b, psi0h, d, 1)
	w, ps := upload(t, b, normal(d*p, 1), d, p), upload(t, b, psi0h, d, 1)
	x := upload(t, b, normal(d, 1), d, 1)
	wh, ph := download(t, b, w), download(t, b, ps)
	short := alloc(t, b, d-1, p)
	badPsi := upload(t, b, append([]float64{-1}, psi0h[1:]...), d, 1)
	for _, c := range []struct {
		name            string
		w, psi, w0, ps0 *tensor.Tensor
		want            error
	}{
		{"w0 is w", w, ps, w, p0, backend.ErrShape},
		{"psi0 is psi", w, ps, w0, ps, backend.ErrShape},
		{"w0 of another shape", w, ps, short, p0, backend.ErrShape},
		{"psi0 ≤ 0", w, ps, w0, badPsi, backend.ErrDomain},
		{"w0 nil", w, ps, nil, p0, backend.ErrShape},
	} {
		_, err := backend.RecursiveEMFrom(b, c.w, c.psi, c.w0, c.ps0, x, 1, 1, backend.EMOptions{Inner: 3})
		if err == nil || !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
		if !bitsEqual(download(t, b, w), wh) || !bitsEqual(download(t, b, ps), ph) {
			t.Errorf("%s: the outputs were written by a failing call", c.name)
		}
	}
}

// bitsEqual reports whether a and b are equal bit for bit.
func bitsEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// The filter's steps against the same steps written out with the in-place recursive EM (a copy of the factors, then
// backend.RecursiveEM, which keeps its own copy of the old ones), Woodbury solves and the mean updates of (27)
// and (53): μ, W and ψ must agree bit for bit after every observation, on the kernels and on the references.
func TestFilterStepMatchesInPlaceEM(t *testing.T) {
	const d, p, n = 45, 5, 12
	base := testbackend.Open(t)
	lin := linearData(d, n, 8)
	logi := glm.LogisticMixture(glm.NewDesign(d, 1, 9), n, 0.2, 9)
	for _, be := range []struct {
		name string
		b    backend.Backend
	}{{"kernels", base}, {"references", newMemTracker(base)}} {
		b := be.b
		for _, cfg := range []Config{
			{D: d, P: p, Scheme: SchemeLinear, Inner: 3, NoiseStd: 0.8, Seed: 2},
			{D: d, P: p, Scheme: SchemeLogistic, Inner: 2, Sigma0: 3, InitStd: 1e-2, Seed: 2},
		} {
			data := lin
			if cfg.Scheme == SchemeLogistic {
				data = logi
			}
			f, err := New(b, cfg)
			if err != nil {
				t.Fatal(err)
			}
			cfg = f.Config()
			st, _ := f.State()
			mu := upload(t, b, st.Mu, d, 1)
			w := upload(t, b, st.W, d, p)
			psi := upload(t, b, st.Psi, d, 1)
			for i := 0; i < n; i++ {
				xh, y := data.Row(i), data.Y[i]
				if err := f.Update(xh, y); err != nil {
					t.Fatal(err)
				}
				x := upload(t, b, xh, d, 1)
				old, err := backend.NewLowRank(b, w, psi)
				if err != nil {
					t.Fatal(err)
				}
				g := alloc(t, b, d, 1)
				xs := alloc(t, b, d, 1)
				muNew := alloc(t, b, d, 1)
				var coef float64
				if cfg.Scheme == SchemeLinear {
					sw := cfg.NoiseStd
					coef = (y - bdot(t, b, x, mu)) / (sw * sw)
					if err := b.Axpby(xs, 1/sw, x, 0, nil); err != nil {
						t.Fatal(err)
					}
				} else {
					if err := old.Solve(g, x); err != nil {
						t.Fatal(err)
					}
					sol := SolveImplicit(bdot(t, b, x, mu), bdot(t, b, x, g), y)
					k := ProbitK(sol.Nu)
					if err := b.Axpby(muNew, 1, mu, y-Sigmoid(k*sol.Alpha), g); err != nil {
						t.Fatal(err)
					}
					if err := b.Axpby(xs, math.Sqrt(k*SigmoidPrime(k*sol.Alpha)), x, 0, nil); err != nil {
						t.Fatal(err)
					}
				}
				old.Close()
				if _, err := backend.RecursiveEM(b, w, psi, xs, 1, 1, backend.EMOptions{Inner: cfg.Inner}); err != nil {
					t.Fatal(err)
				}
				if cfg.Scheme == SchemeLinear {
					lr, err := backend.NewLowRank(b, w, psi)
					if err != nil {
						t.Fatal(err)
					}
					if err := lr.Solve(g, x); err != nil {
						t.Fatal(err)
					}
					lr.Close()
					if err := b.Axpby(muNew, 1, mu, coef, g); err != nil {
						t.Fatal(err)
					}
				}
				if err := b.Copy(mu, muNew); err != nil {
					t.Fatal(err)
				}
				got, _ := f.State()
				if !bitsEqual(got.Mu, download(t, b, mu)) || !bitsEqual(got.W, download(t, b, w)) || !bitsEqual(got.Psi, download(t, b, psi)) {
					t.Fatalf("%s/%s: step %d differs from the in-place recursive EM", be.name, cfg.Scheme, i+1)
				}
				for _, u := range []*tensor.Tensor{x, g, xs, muNew} {
					b.Free(u)
				}
			}
			for _, u := range []*tensor.Tensor{mu, w, psi} {
				b.Free(u)
			}
			f.Close()
		}
	}
}

// bdot returns aᵀc for d×1 tensors by the backend's GEMM, as the filter computes its scalars.
func bdot(t *testing.T, b backend.Backend, a, c *tensor.Tensor) float64 {
	t.Helper()
	s := alloc(t, b, 1, 1)
	defer b.Free(s)
	if err := b.Gemm(blas.Trans, blas.NoTrans, 1, a, c, 0, s); err != nil {
		t.Fatal(err)
	}
	return download(t, b, s)[0]
}

// heldBytes is what a filter keeps allocated between updates: two sets of μ, W, ψ, the three d-vectors x, g, g2,
// the scalar scratch and the two p×p capacitance factors.
func heldBytes(d, p int) int64 {
	return 8 * (2*int64(d)*int64(p+2) + 3*int64(d) + 1 + 2*int64(p)*int64(p))
}

// checkStepMemory runs one update of f through the tracker m (the filter must have been made on m) and checks T14:
//   - the persistent state (the checkpoint's μ, W, ψ) is 8d(p+2) bytes, and the filter holds heldBytes between
//     updates, before and after the update;
//   - the peak of the bytes in use during the update is ≤ 8d(5p + 5 + 2K)·1.1 (≤ 5 d×p, 5 d-vectors and 2 d×K
//     buffers, T14), K = f's Samples;
//   - the update itself adds at most the reference EM step's two d×p temporaries (C and V of Algorithm 1), the GGN
//     factor and the d×K draws of the nonlinear schemes, and a few d-vectors: no copy of W (extra);
//   - no allocation of d²/100 elements or more.
func checkStepMemory(t *testing.T, m *memTracker, f *Filter, x []float64, y float64) {
	t.Helper()
	c := f.Config()
	d, p := int64(c.D), int64(c.P)
	name := fmt.Sprintf("%s d=%d p=%d", c.Scheme, d, p)
	st, err := f.State()
	if err != nil {
		t.Fatal(err)
	}
	if got := 8 * int64(len(st.Mu)+len(st.W)+len(st.Psi)); got != 8*d*(p+2) || f.StateBytes() != got {
		t.Errorf("%s: state of %d bytes (StateBytes %d), want 8d(p+2) = %d", name, got, f.StateBytes(), 8*d*(p+2))
	}
	held := heldBytes(c.D, c.P)
	if u := m.MemInUse(); u != held {
		t.Errorf("%s: %d bytes held before the update, want %d", name, u, held)
	}
	m.resetPeak()
	if err := f.Update(x, y); err != nil {
		t.Fatal(err)
	}
	if u := m.MemInUse(); u != held {
		t.Errorf("%s: %d bytes held after the update, want %d", name, u, held)
	}
	k := int64(c.Samples)
	bound := int64(1.1 * 8 * float64(d*(5*p+5+2*k)))
	extra := int64(2 * 8 * d * p) // C and V of the reference EM step
	if c.Model != nil {
		kc := int64(c.facCols())
		extra += 8 * d * (2*k + kc) // draws, Jacobian, GGN factor
	}
	extra += 8 * (4*d + 8*p*p + 4*p*k + 64)
	t.Logf("%s: peak in use during the update %.1f MB (bound 8d(5p+5+2K)·1.1 = %.1f MB), held %.1f MB, peak extra %.1f MB (allowed %.1f MB), largest allocation %.1f MB",
		name, float64(m.peak)/1e6, float64(bound)/1e6, float64(held)/1e6, float64(m.peak-held)/1e6, float64(extra)/1e6, float64(m.big)/1e6)
	if m.peak > bound {
		t.Errorf("%s: peak %d bytes in use during the update > 8d(5p+5+2K)·1.1 = %d", name, m.peak, bound)
	}
	if m.peak-held > extra {
		t.Errorf("%s: the update allocated %d bytes at its peak, want ≤ %d (a d×p buffer beyond the EM step's own?)", name, m.peak-held, extra)
	}
	if m.big >= 8*d*d/100 {
		t.Errorf("%s: an allocation of %d bytes ≥ d²/100 elements", name, m.big)
	}
}

// T14 at reduced size (default run): d = 20000, p ∈ {20, 5, 1}, the linear step (n_in = 3), the logistic step
// and one extragrad step with K = 10 draws, through the instrumented allocator.
func TestStepMemory(t *testing.T) {
	const d = 20000
	m := newMemTracker(testbackend.Open(t))
	x := stepInput(d)
	for _, c := range []Config{
		{D: d, P: 20, Inner: 3}, {D: d, P: 5, Inner: 3}, {D: d, P: 1, Inner: 3},
		{D: d, P: 5, Scheme: SchemeLogistic, Sigma0: 4, InitStd: 1e-3},
		{D: d, P: 5, Scheme: SchemeExtragrad, Model: glm.Logistic{}, Samples: 10, InitStd: 1e-2},
		{D: d, P: 5, Scheme: SchemeMirrorProx, Model: generalLogistic{}, Samples: 10, InitStd: 1e-2},
	} {
		f, err := New(m, c)
		if err != nil {
			t.Fatal(err)
		}
		checkStepMemory(t, m, f, x, 1)
		f.Close()
		if u := m.MemInUse(); u != 0 {
			t.Errorf("%d bytes still allocated after Close", u)
		}
	}
}

// T14 at d = 1e6: persistent state 8d(p+2) bytes = 816/96/32/24 MB for p = 100/10/2/1; the peak bytes in
// use during one linear step through the instrumented allocator ≤ 8d(5p+5+2K)·1.1 with no allocation of d²/100
// elements; one extragrad step with K = 10 at p = 10. At p = 100 the step has one inner iteration (every iteration
// of the reference EM allocates the same two d×p temporaries; more iterations add time, not memory; the later
// iterations, which read (W_{t-1}, ψ_{t-1}), are covered at p = 10, 2, 1 with n_in = 3, at d = 2e4 by TestStepMemory
// and at p = 100 by TestReproMemoryD1e6Fused). Peak resident set and time are measured by examples/lrvga-table12
// (docs/benchmarks.md), not here. About 1.5 minutes on 2 cores (the references run the EM step from Backend
// primitives) and up to 5 GB of resident memory (3.3 GB in use at p = 100, the rest not yet returned by the Go
// runtime).
func TestReproMemoryD1e6(t *testing.T) {
	repro.Require(t)
	const d = 1000000
	m := newMemTracker(testbackend.Open(t))
	m.collect = true
	x := stepInput(d)
	for _, c := range []Config{
		{D: d, P: 100, Inner: 1}, {D: d, P: 10, Inner: 3}, {D: d, P: 2, Inner: 3}, {D: d, P: 1, Inner: 3},
		{D: d, P: 10, Scheme: SchemeExtragrad, Model: glm.Logistic{}, Samples: 10, InitStd: 1e-2},
	} {
		start := time.Now()
		f, err := New(m, c)
		if err != nil {
			t.Fatal(err)
		}
		checkStepMemory(t, m, f, x, 1)
		f.Close()
		runtime.GC()
		t.Logf("(%.1f s)", time.Since(start).Seconds())
	}
}

// T14 on the CPU backend's fused kernels, which take their scratch from the Go heap rather than through Alloc: one
// linear step at d = 1e6, p = 100, n_in = 3 allocates less than one d×p buffer in all (the bytes allocated, not a
// peak: an upper bound on the step's temporaries) and leaves the backend's bytes in use unchanged.
func TestReproMemoryD1e6Fused(t *testing.T) {
	repro.Require(t)
	const d, p = 1000000, 100
	b := testbackend.Open(t)
	if b.Name() != "cpu" {
		t.Skipf("the Go-heap bound is for the CPU backend (running on %s)", b.Name())
	}
	f, err := New(b, Config{D: d, P: p, Inner: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	x := stepInput(d)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	inUse := b.MemInUse()
	if err := f.Update(x, 1); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&m1)
	alloc := int64(m1.TotalAlloc - m0.TotalAlloc)
	t.Logf("fused CPU kernels, p = %d, n_in = 3: %.1f MB allocated during the step (a d×p buffer is %.0f MB)", p, float64(alloc)/1e6, 8*float64(d)*p/1e6)
	if alloc >= 8*d*p || b.MemInUse() != inUse {
		t.Errorf("one step allocated %d bytes (want < 8dp = %d) and changed MemInUse by %d", alloc, 8*d*p, b.MemInUse()-inUse)
	}
}

// stepInput is an input of length d with entries of order 1/√d.
func stepInput(d int) []float64 {
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float64, d)
	for i := range x {
		x[i] = r.NormFloat64() / math.Sqrt(float64(d))
	}
	return x
}
