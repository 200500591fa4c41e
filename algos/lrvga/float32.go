package lrvga

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/lapack/lapack64"

	"github.com/geovb/geovb/algos/run"
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/rng"
)

// Linear32 is L-RVGA for Bayesian linear regression (eq. 25–27, the "linear" scheme of Filter) with its state
// stored in float32: μ, W and ψ take 4d(p+2) bytes, half of a Filter's (408 MB at d = 1e6, p = 100). Every
// product and reduction runs in float64 on row blocks converted on the fly (naive float32 sums over 1e6 terms lose
// about 3 digits): only the stored values are rounded, once per update. It runs on the host, in row blocks spread over
// GOMAXPROCS goroutines, whichever backend the program uses, with gonum's BLAS (the CPU backend's kernels once the
// program calls cpu.UseForGonum); its results do not depend on the scheduling.
//
// One update matches a Filter's from the same state to rounding; over a run the two drift apart as far as rounding
// the Filter's own state after each update does (test T18, 2000 observations at d = 1e5, p = 10, n_in = 3:
// means 7e-5 apart, KLs to the posterior 2e-6). Like a Filter it holds a second copy of the state for the update in
// progress, so an update that fails (non-finite input, M + B not positive definite, a value beyond float32's
// range) leaves the state as it was.
type Linear32 struct {
	cfg      Config
	cur, nxt state32
	t        int
	clamped  int         // ψ entries raised to the floor, summed
	xs       []float64   // x/σ_w of the update in progress
	scr      []*blocks32 // per-goroutine scratch of the sweeps
	parts    []emPart    // per-chunk partial sums of a sweep
	stats    []stat32    // per-chunk statistics of a sweep
	alg      algebra32   // the p×p algebra between the sweeps
}

// algebra32 holds the p×p and p-long operands of emStep's and mean's small algebra, made once.
type algebra32 struct {
	mm, z, e, mb, k1, k2 []float64 // p×p
	y, y1                []float64 // p
}

// state32 is one set of the stored state: μ (d), W (d×p, row-major) and ψ (d).
type state32 struct{ mu, w, psi []float32 }

// blocks32 holds four float64 blocks of up to rows32(p) rows by p columns (about 3.2 MiB each).
type blocks32 struct{ b [4][]float64 }

// rows32 is the number of rows per block of a sweep: a block is converted into float64 blocks of about 3.2 MiB,
// so the block products are GEMMs long enough to run near the GEMM rate.
func rows32(p int) int { return min(max(409600/p, 256), 16384) }

// chunks32 is the number of chunks (contiguous row ranges, each with its partial sums) a sweep over d rows cuts
// them into: one per block, at most 64, and fewer when p is so large that the partial sums (3p² + p values each)
// would pass 8 MiB. It depends on d and p only, so the results do not depend on the number of goroutines.
func chunks32(d, p int) int {
	nb := rows32(p)
	return max(1, min((d+nb-1)/nb, 64, (1<<20)/(3*p*p+p)))
}

// NewLinear32 starts a float32 filter at the prior, with the initialisation of Filter (InitFactors: the same
// draws, rounded to float32). c.Scheme must be SchemeLinear (the zero value) and c.Model nil.
func NewLinear32(c Config) (*Linear32, error) {
	if c.Scheme != SchemeLinear {
		return nil, run.ConfigErrorf("lrvga", "Scheme", "Linear32 runs the %q scheme only, not %q", SchemeLinear, c.Scheme)
	}
	if c.Model != nil {
		return nil, run.ConfigErrorf("lrvga", "Model", "Linear32 takes no Model")
	}
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	f := newLinear32(c)
	if err := f.initPrior(); err != nil {
		return nil, err
	}
	return f, nil
}

func newLinear32(c Config) *Linear32 {
	d, p := c.D, c.P
	nc := chunks32(d, p)
	f := &Linear32{cfg: c, xs: make([]float64, d), parts: make([]emPart, nc), stats: make([]stat32, nc)}
	for i := range f.parts {
		f.parts[i] = emPart{m: make([]float64, p*p), z: make([]float64, p*p), e: make([]float64, p*p),
			y: make([]float64, p)}
	}
	for _, s := range []*state32{&f.cur, &f.nxt} {
		s.mu, s.w, s.psi = make([]float32, d), make([]float32, d*p), make([]float32, d)
	}
	a := &f.alg
	for _, m := range []*[]float64{&a.mm, &a.z, &a.e, &a.mb, &a.k1, &a.k2} {
		*m = make([]float64, p*p)
	}
	a.y, a.y1 = make([]float64, p), make([]float64, p)
	return f
}

// initPrior writes μ₀ and the factors of InitFactors: the normal draws of stream streamInit (element (i, j) of W
// takes draw i·p + j, as the backends' FillNormal), scaled in float64, then rounded. It fails when a value does not
// fit float32 (σ₀ or μ₀ far out of its range).
func (f *Linear32) initPrior() error {
	c := f.cfg
	d, p := c.D, c.P
	if len(c.Mu0) > 0 && !narrow(f.cur.mu, c.Mu0) {
		return run.ConfigErrorf("lrvga", "Mu0", "prior mean beyond float32's range")
	}
	cnt := rng.Counter{Seed: c.Seed, Stream: streamInit}
	draws := func(sc *blocks32, lo, hi int) []float64 {
		z := sc.b[0][:(hi-lo)*p]
		cnt.Advance(lo * p).FillNormal(z)
		return z
	}
	scale := make([]float64, p)
	prec := 1 / (c.Sigma0 * c.Sigma0)
	psi0 := (1 - c.Eps) * prec
	if c.InitStd > 0 {
		for j := range scale {
			scale[j] = c.InitStd
		}
		psi0 = prec
	} else {
		// Columns rescaled to norm w₀ = √(εd/p)/σ₀ (App. D).
		f.clearParts()
		f.sweep(func(sc *blocks32, ch, lo, hi int) {
			z, ss := draws(sc, lo, hi), f.parts[ch].y
			for i := 0; i < hi-lo; i++ {
				for j, v := range z[i*p : (i+1)*p] {
					ss[j] += v * v
				}
			}
		})
		w0 := math.Sqrt(c.Eps*float64(d)/float64(p)) / c.Sigma0
		for j := range scale {
			ss := 0.0
			for _, pt := range f.parts {
				ss += pt.y[j]
			}
			scale[j] = w0 / math.Sqrt(ss)
		}
	}
	if u := float32(psi0); !(u > 0) || !finite32(u) {
		return run.ConfigErrorf("lrvga", "Sigma0", "σ₀ = %v: the prior precision %v is not a positive float32", c.Sigma0, psi0)
	}
	f.clearParts()
	f.sweep(func(sc *blocks32, ch, lo, hi int) {
		z := draws(sc, lo, hi)
		for j := range p {
			for i := j; i < len(z); i += p {
				z[i] *= scale[j]
			}
		}
		if !narrow(f.cur.w[lo*p:hi*p], z) {
			f.stats[ch].bad = true
		}
		for i := lo; i < hi; i++ {
			f.cur.psi[i] = float32(psi0)
		}
	})
	for _, st := range f.stats {
		if st.bad {
			return run.ConfigErrorf("lrvga", "Sigma0", "σ₀ = %v: the initial W is beyond float32's range", c.Sigma0)
		}
	}
	return nil
}

// Config returns the configuration with the defaults filled in.
func (f *Linear32) Config() Config { return f.cfg }

// T returns the number of observations consumed.
func (f *Linear32) T() int { return f.t }

// Clamped returns the number of ψ entries raised to the floor so far.
func (f *Linear32) Clamped() int { return f.clamped }

// StateBytes returns the size of the persistent state μ, W, ψ: 4d(p+2).
func (f *Linear32) StateBytes() int64 { return 4 * int64(f.cfg.D) * int64(f.cfg.P+2) }

// Mean returns μ_t in float64 (into dst when it has length d).
func (f *Linear32) Mean(dst []float64) []float64 { return widen(dst, f.cur.mu) }

// Factors returns W_t (d×p, row-major) and ψ_t in float64: the precision is W Wᵀ + Ψ.
func (f *Linear32) Factors() (w, psi []float64) { return widen(nil, f.cur.w), widen(nil, f.cur.psi) }

func widen(dst []float64, src []float32) []float64 {
	if len(dst) != len(src) {
		dst = make([]float64, len(src))
	}
	for i, v := range src {
		dst[i] = float64(v)
	}
	return dst
}

// Update consumes one observation (x_t, y_t): the FA step of (26) with X_t = x_t/σ_w, then the mean
// μ_t = μ_{t−1} + (W_tW_tᵀ + Ψ_t)⁻¹ x_t (y_t − x_tᵀμ_{t−1})/σ_w² (27). On error the state is unchanged.
func (f *Linear32) Update(x []float64, y float64) error {
	if err := checkObservation(f.cfg, f.t, x, y); err != nil {
		return err
	}
	clamped, err := f.step(x, y)
	if err != nil {
		return fmt.Errorf("lrvga: observation %d (linear, float32): %w", f.t, err)
	}
	f.cur, f.nxt = f.nxt, f.cur
	f.t++
	f.clamped += clamped
	return nil
}

// errRange reports a value that float32 cannot hold.
var errRange = errors.New("a factor left float32's range (use Filter, which stores float64)")

// step writes the next state into f.nxt.
func (f *Linear32) step(x []float64, y float64) (int, error) {
	sw := f.cfg.NoiseStd
	a0 := 0.0
	for i, v := range x {
		a0 += v * float64(f.cur.mu[i])
	}
	e := (y - a0) / (sw * sw)
	for i, v := range x {
		f.xs[i] = v / sw
	}
	clamped := 0
	for it := 0; it < f.cfg.Inner; it++ {
		n, err := f.emStep(it == 0)
		clamped += n
		if err != nil {
			return 0, err
		}
	}
	return clamped, f.mean(x, e)
}

// clearParts zeroes the partial sums and statistics of every chunk.
func (f *Linear32) clearParts() {
	for i := range f.parts {
		pt := &f.parts[i]
		clear(pt.m)
		clear(pt.z)
		clear(pt.e)
		clear(pt.y)
		f.stats[i] = stat32{pmin: math.Inf(1)}
	}
}

// sweep runs fn(sc, c, lo, hi) for the blocks [lo, hi) of every chunk c, in order within a chunk, handing the
// chunks to up to GOMAXPROCS goroutines, each with its own scratch sc. Callers add into f.parts[c] and combine the
// chunks in chunk order, so the results do not depend on the scheduling.
func (f *Linear32) sweep(fn func(sc *blocks32, c, lo, hi int)) {
	d, nb, n := f.cfg.D, rows32(f.cfg.P), len(f.parts)
	workers := min(runtime.GOMAXPROCS(0), n)
	for len(f.scr) < workers {
		sc := new(blocks32)
		for k := range sc.b {
			sc.b[k] = make([]float64, min(nb, d)*f.cfg.P)
		}
		f.scr = append(f.scr, sc)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func(sc *blocks32) {
			defer wg.Done()
			for c := int(next.Add(1) - 1); c < n; c = int(next.Add(1) - 1) {
				for lo, hi := c*d/n, (c+1)*d/n; lo < hi; lo += nb {
					fn(sc, c, lo, min(lo+nb, hi))
				}
			}
		}(f.scr[g])
	}
	wg.Wait()
}

// block views scratch k as an r×p matrix holding rows [lo, lo+r) of src (nil: not filled).
func (sc *blocks32) block(k int, src []float32, lo, r, p int) blas64.General {
	g := blas64.General{Rows: r, Cols: p, Stride: p, Data: sc.b[k][:r*p]}
	if src != nil {
		for i, v := range src[lo*p : (lo+r)*p] {
			g.Data[i] = float64(v)
		}
	}
	return g
}

// emPart is one chunk's share of the first pass of emStep.
type emPart struct {
	m, z, e []float64 // p×p: WᵀΨ⁻¹W (lower), W₀ᵀΨ⁻¹W, WᵀΨ⁻¹Ψ₀Ψ⁻¹W (lower)
	y       []float64 // p: WᵀΨ⁻¹X
}

// stat32 is one chunk's share of the second pass of emStep: max diag S_t, min ψ_new, and whether a value left
// float32's range.
type stat32 struct {
	smax, pmin float64
	bad        bool
}

// emStep is one inner iteration of Algorithm 1 with α = β = 1 and K_c = 1 on the stored factors: the SPD (M+B)
// form of the CPU backend's fused EM step (Algorithm 1, SPD form), in which no d×p temporary is kept. With C = Ψ⁻¹W,
// y = XᵀC, Z = W₀ᵀC, E = CᵀΨ₀C and R Rᵀ = M + B:
//
//	B = y yᵀ + ZᵀZ + E                       [first iteration, W = W₀: Z = E = M − I, so ZᵀZ + E = (M − I)M]
//	H = X (y R⁻ᵀ) + W₀ (Z R⁻ᵀ) + (Ψ₀Ψ⁻¹W) R⁻ᵀ  [first: X (y R⁻ᵀ) + W (M R⁻ᵀ)]
//	W_new = H (R⁻¹ M) (20),   ψ_new = diag S_t − ‖h_i‖² (21)
//
// The iterate (W, ψ) is f.cur at the first iteration and f.nxt after; (W₀, ψ₀) = f.cur holds S_t's factors. The
// result goes to f.nxt. It returns the number of ψ entries raised to the floor.
func (f *Linear32) emStep(first bool) (int, error) {
	p := f.cfg.P
	it := &f.nxt
	if first {
		it = &f.cur
	}
	W, ps, W0, ps0, xs := it.w, it.psi, f.cur.w, f.cur.psi, f.xs

	// Pass 1: the Gram matrices and y.
	f.clearParts()
	f.sweep(func(sc *blocks32, c, lo, hi int) {
		r := hi - lo
		wb, sb := sc.block(0, W, lo, r, p), sc.block(1, nil, lo, r, p)
		pt := &f.parts[c]
		for i := 0; i < r; i++ {
			psi := float64(ps[lo+i])
			s, xc := 1/math.Sqrt(psi), xs[lo+i]/psi
			for k, v := range wb.Data[i*p : (i+1)*p] {
				sb.Data[i*p+k] = v * s
				pt.y[k] += v * xc
			}
		}
		blas64.Syrk(blas.Trans, 1, sb, 1, symLower(pt.m, p))
		if !first {
			w0b, cb := sc.block(2, W0, lo, r, p), sc.block(3, nil, lo, r, p)
			for i := 0; i < r; i++ {
				psi := float64(ps[lo+i])
				ci, ei := 1/psi, math.Sqrt(float64(ps0[lo+i]))/psi
				for k, v := range wb.Data[i*p : (i+1)*p] {
					cb.Data[i*p+k] = v * ci
					sb.Data[i*p+k] = v * ei
				}
			}
			blas64.Gemm(blas.Trans, blas.NoTrans, 1, w0b, cb, 1, square(pt.z, p))
			blas64.Syrk(blas.Trans, 1, sb, 1, symLower(pt.e, p))
		}
	})
	al := &f.alg
	mm, y, z, e := al.mm, al.y, al.z, al.e
	for _, v := range [][]float64{mm, y, z, e} {
		clear(v)
	}
	for _, pt := range f.parts {
		floats.Add(mm, pt.m)
		floats.Add(y, pt.y)
		if !first {
			floats.Add(z, pt.z)
			floats.Add(e, pt.e)
		}
	}
	fillUpper(mm, p)
	fillUpper(e, p)

	// p×p algebra: R⁻¹ (lower), K₁ = M R⁻ᵀ or Z R⁻ᵀ, K₂ = R⁻¹ M, y₁ = y R⁻ᵀ.
	mb := al.mb // M + B
	if first {
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, square(mm, p), square(mm, p), 0, square(mb, p))
		floats.Add(mb, mm)
	} else {
		blas64.Gemm(blas.Trans, blas.NoTrans, 1, square(z, p), square(z, p), 0, square(mb, p))
		floats.Add(mb, e)
	}
	for i := 0; i < p; i++ {
		mm[i*p+i]++ // mm = M
		for j := 0; j < p; j++ {
			mb[i*p+j] += y[i]*y[j] + mm[i*p+j]
		}
	}
	rinv, err := cholInverse(mb, p)
	if err != nil {
		return 0, err
	}
	k2, k1 := al.k2, al.k1
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, square(rinv, p), square(mm, p), 0, square(k2, p))
	left := mm
	if !first {
		left = z
	}
	blas64.Gemm(blas.NoTrans, blas.Trans, 1, square(left, p), square(rinv, p), 0, square(k1, p))
	y1 := al.y1
	clear(y1)
	for i := 0; i < p; i++ {
		for j := 0; j <= i; j++ {
			y1[i] += rinv[i*p+j] * y[j]
		}
	}

	// Pass 2: H, ψ_new and W_new, rounded into f.nxt. The floor needs max diag S_t, so it is applied after.
	f.clearParts()
	out := &f.nxt
	f.sweep(func(sc *blocks32, c, lo, hi int) {
		r := hi - lo
		st := &f.stats[c]
		wb, hb := sc.block(0, W, lo, r, p), sc.block(1, nil, lo, r, p)
		w0b := wb
		if !first {
			w0b = sc.block(2, W0, lo, r, p)
		}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, w0b, square(k1, p), 0, hb)
		sdiag := sc.b[3][:r] // diag S_t = ‖w₀_i‖² + ψ₀_i + X_i²
		for i := 0; i < r; i++ {
			w0r := w0b.Data[i*p : (i+1)*p]
			sdiag[i] = floats.Dot(w0r, w0r) + float64(ps0[lo+i]) + xs[lo+i]*xs[lo+i]
		}
		if !first {
			for i := 0; i < r; i++ { // Ψ₀Ψ⁻¹W, before ψ_new overwrites the iterate's ψ
				g := float64(ps0[lo+i]) / float64(ps[lo+i])
				for k := range p {
					wb.Data[i*p+k] *= g
				}
			}
			blas64.Gemm(blas.NoTrans, blas.Trans, 1, wb, square(rinv, p), 1, hb)
		}
		var nf float32 // v − v summed: 0 unless some v is ±Inf or NaN
		for i := 0; i < r; i++ {
			h := hb.Data[i*p : (i+1)*p]
			for k := range h {
				h[k] += xs[lo+i] * y1[k]
			}
			v := float32(sdiag[i] - floats.Dot(h, h))
			st.smax, st.pmin = max(st.smax, sdiag[i]), min(st.pmin, float64(v))
			nf += v - v
			out.psi[lo+i] = v
		}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, hb, square(k2, p), 0, wb)
		if nf != 0 || !narrow(out.w[lo*p:hi*p], wb.Data) {
			st.bad = true
		}
	})
	smax, pmin := 0.0, math.Inf(1)
	for _, st := range f.stats {
		if st.bad {
			return 0, errRange
		}
		smax, pmin = max(smax, st.smax), min(pmin, st.pmin)
	}
	floor := f.cfg.PsiFloor
	if floor <= 0 {
		floor = max(0x1p-126, backend.RelPsiFloor*smax) // the smallest normal float32 at least
	}
	if !(pmin < floor) {
		return 0, nil
	}
	n := 0
	for i, v := range out.psi {
		if float64(v) < floor {
			out.psi[i] = float32(floor)
			n++
		}
	}
	return n, nil
}

// mean writes μ_t = μ_{t−1} + e (WWᵀ + Ψ)⁻¹x into f.nxt.mu with the new factors of f.nxt, by Woodbury:
// (WWᵀ + Ψ)⁻¹x = Ψ⁻¹x − Ψ⁻¹W M⁻¹ WᵀΨ⁻¹x with M = I + WᵀΨ⁻¹W (evaluated right to left; no d×d or W M⁻¹ Wᵀ is formed).
func (f *Linear32) mean(x []float64, e float64) error {
	p := f.cfg.P
	W, ps := f.nxt.w, f.nxt.psi
	f.clearParts()
	f.sweep(func(sc *blocks32, c, lo, hi int) {
		r := hi - lo
		sb := sc.block(0, W, lo, r, p)
		pt := &f.parts[c]
		for i := 0; i < r; i++ {
			psi := float64(ps[lo+i])
			s, xc := 1/math.Sqrt(psi), x[lo+i]/psi
			for k, v := range sb.Data[i*p : (i+1)*p] {
				pt.y[k] += v * xc
				sb.Data[i*p+k] = v * s
			}
		}
		blas64.Syrk(blas.Trans, 1, sb, 1, symLower(pt.m, p))
	})
	m, u := f.alg.mm, f.alg.y
	clear(m)
	clear(u)
	for _, pt := range f.parts {
		floats.Add(m, pt.m)
		floats.Add(u, pt.y)
	}
	for i := 0; i < p; i++ {
		m[i*p+i]++
	}
	if _, ok := lapack64.Potrf(symLower(m, p)); !ok {
		return fmt.Errorf("capacitance I + WᵀΨ⁻¹W: %w", backend.ErrNotPositiveDefinite)
	}
	lapack64.Potrs(blas64.Triangular{Uplo: blas.Lower, Diag: blas.NonUnit, N: p, Stride: p, Data: m},
		blas64.General{Rows: p, Cols: 1, Stride: 1, Data: u}) // u = M⁻¹ WᵀΨ⁻¹x
	f.clearParts()
	f.sweep(func(_ *blocks32, c, lo, hi int) {
		var nf float32
		for i := lo; i < hi; i++ {
			wv := 0.0
			for k, v := range W[i*p : (i+1)*p] {
				wv += float64(v) * u[k]
			}
			mu := float32(float64(f.cur.mu[i]) + e*(x[i]-wv)/float64(ps[i]))
			nf += mu - mu
			f.nxt.mu[i] = mu
		}
		if nf != 0 {
			f.stats[c].bad = true
		}
	})
	for _, st := range f.stats {
		if st.bad {
			return errRange
		}
	}
	return nil
}

// cholInverse returns R⁻¹ (lower, row-major) for the Cholesky factor R of the symmetric a (p×p, symmetrised
// first; a is overwritten).
func cholInverse(a []float64, p int) ([]float64, error) {
	for i := 0; i < p; i++ {
		for j := 0; j < i; j++ {
			v := 0.5 * (a[i*p+j] + a[j*p+i])
			a[i*p+j], a[j*p+i] = v, v
		}
	}
	if _, ok := lapack64.Potrf(symLower(a, p)); !ok {
		return nil, fmt.Errorf("M + B is not positive definite: %w", backend.ErrNotPositiveDefinite)
	}
	for i := 0; i < p; i++ {
		clear(a[i*p+i+1 : (i+1)*p])
	}
	if !lapack64.Trtri(blas64.Triangular{Uplo: blas.Lower, Diag: blas.NonUnit, N: p, Stride: p, Data: a}) {
		return nil, fmt.Errorf("singular Cholesky factor of M + B: %w", backend.ErrNotPositiveDefinite)
	}
	return a, nil
}

func square(a []float64, p int) blas64.General {
	return blas64.General{Rows: p, Cols: p, Stride: p, Data: a}
}

func symLower(a []float64, p int) blas64.Symmetric {
	return blas64.Symmetric{Uplo: blas.Lower, N: p, Stride: p, Data: a}
}

// fillUpper copies the lower triangle of the p×p a onto its upper triangle.
func fillUpper(a []float64, p int) {
	for i := 0; i < p; i++ {
		for j := 0; j < i; j++ {
			a[j*p+i] = a[i*p+j]
		}
	}
}

func finite32(v float32) bool { return v-v == 0 }

// narrow rounds src into dst and reports whether every value is finite in float32.
func narrow(dst []float32, src []float64) bool {
	var nf float32
	for i, v := range src {
		u := float32(v)
		nf += u - u
		dst[i] = u
	}
	return nf == 0
}

// State returns the checkpoint of the filter: the float32 state widened exactly to float64. A Filter built from
// it (FromState) continues in float64 from the same point; Linear32FromState continues in float32 bit for bit.
func (f *Linear32) State() Checkpoint {
	return Checkpoint{Cfg: f.cfg, T: f.t, Clamped: f.clamped, Mu: f.Mean(nil), W: widen(nil, f.cur.w),
		Psi: widen(nil, f.cur.psi), BackendName: "host", BackendLibrary: "float32 (lrvga.Linear32)"}
}

// Linear32FromState rebuilds a float32 filter from a checkpoint (of a Linear32, or of a linear-scheme Filter,
// whose float64 state is then rounded).
func Linear32FromState(st Checkpoint) (*Linear32, error) {
	cfg := st.Cfg
	if cfg.Scheme != SchemeLinear {
		return nil, fmt.Errorf("lrvga: checkpoint of the %q scheme; Linear32 runs %q only: %w", cfg.Scheme, SchemeLinear, run.ErrCheckpoint)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	f := newLinear32(cfg)
	if err := f.restore(st); err != nil {
		return nil, err
	}
	return f, nil
}

// restore puts the state of st, rounded to float32, into the filter. The checkpoint is checked first (lengths,
// values finite in float32, ψ > 0): a bad one leaves the filter as it was.
func (f *Linear32) restore(st Checkpoint) error {
	if err := checkState(st, f.cfg.D, f.cfg.P); err != nil {
		return err
	}
	arrays := []struct {
		name string
		src  []float64
		dst  []float32
	}{{"mu", st.Mu, f.cur.mu}, {"W", st.W, f.cur.w}, {"psi", st.Psi, f.cur.psi}}
	for _, a := range arrays {
		for i, v := range a.src {
			u := float32(v)
			if !finite32(u) {
				return fmt.Errorf("lrvga: checkpoint %s[%d] = %v is not finite in float32: %w", a.name, i, v, run.ErrCheckpoint)
			}
			if a.name == "psi" && !(u > 0) {
				return fmt.Errorf("lrvga: checkpoint psi[%d] = %v, want > 0 in float32: %w", i, v, run.ErrCheckpoint)
			}
		}
	}
	for _, a := range arrays {
		for i, v := range a.src {
			a.dst[i] = float32(v)
		}
	}
	f.t, f.clamped = st.T, st.Clamped
	return nil
}

// SaveCheckpoint writes the filter's state to path atomically (run.SaveCheckpoint), in the format of
// Filter.SaveCheckpoint: a Filter's Run with Control.Resume continues it in float64, a Linear32's in float32.
func (f *Linear32) SaveCheckpoint(path string) error {
	return run.SaveCheckpoint(path, checkpointMethod, checkpointVersion, f.State())
}

// Run streams the source through Update as Filter.Run does (context, MaxIter, progress records with "clamped",
// checkpoints every ctl.CheckpointEvery observations). With ctl.Resume it first restores the state saved at
// ctl.CheckpointPath by a Linear32 or a linear-scheme Filter of the same Config (else an error wrapping
// run.ErrCheckpoint that names the setting that differs) and continues from it bit for bit.
func (f *Linear32) Run(ctx context.Context, ctl run.Control, src Source) (run.Result, error) {
	ctl = ctl.WithContext(ctx)
	if err := ctl.Validate(); err != nil {
		return run.Result{Reason: run.Failed, Err: err}, err
	}
	if ctl.Resume {
		st, err := loadCheckpoint(ctl.CheckpointPath, f.cfg)
		if err == nil {
			err = f.restore(st)
		}
		if err != nil {
			return run.Result{Reason: run.Failed, Err: err}, err
		}
	}
	return runStream(ctl, src, f.t, f.Update, func() int { return f.clamped }, f.SaveCheckpoint)
}
