package cpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// The fused SPD kernels against the reference operations of backend/spd.go, on both of their paths (plain loops
// and BLAS), at orders around each switch-over, for condition
// numbers up to 1e8, with broadcast operands, every aliasing of dst and failing inputs.

// spdRandSPD returns scale·Q diag(λ) Qᵀ with λ geometric from 1 down to 1/cond and Q random orthogonal.
func spdRandSPD(r *rand.Rand, n int, cond, scale float64) []float64 {
	g := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			g.Set(i, j, r.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	var q mat.Dense
	qr.QTo(&q)
	a := make([]float64, n*n)
	for k := 0; k < n; k++ {
		lam := scale
		if n > 1 {
			lam *= math.Pow(cond, -float64(k)/float64(n-1))
		}
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				a[i*n+j] += lam * q.At(i, k) * q.At(j, k)
			}
		}
	}
	// Exactly symmetric, as the references' inputs are in practice.
	for i := 0; i < n; i++ {
		for j := 0; j < i; j++ {
			s := 0.5 * (a[i*n+j] + a[j*n+i])
			a[i*n+j], a[j*n+i] = s, s
		}
	}
	return a
}

func spdRandSym(r *rand.Rand, n int, scale float64) []float64 {
	a := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			v := scale * r.NormFloat64()
			a[i*n+j], a[j*n+i] = v, v
		}
	}
	return a
}

// spdTensor packs matrices of order n into a new CPU tensor.
func spdTensor(t *testing.T, b *Backend, n int, ms ...[]float64) *tensor.Tensor {
	t.Helper()
	x, err := b.Alloc(tensor.Shape{Batch: len(ms), Rows: n, Cols: n})
	if err != nil {
		t.Fatal(err)
	}
	h := x.Storage().Host()
	for i, m := range ms {
		copy(h[i*n*n:(i+1)*n*n], m)
	}
	return x
}

func spdClone(t *testing.T, b *Backend, x *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	y, err := b.Alloc(x.Shape())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Copy(y, x); err != nil {
		t.Fatal(err)
	}
	return y
}

// spdRelErr is the largest relative Frobenius distance between the items of got and want.
func spdRelErr(got, want *tensor.Tensor) float64 {
	var worst float64
	for bb := 0; bb < got.Batch(); bb++ {
		var num, den float64
		for i := 0; i < got.Rows(); i++ {
			for j := 0; j < got.Cols(); j++ {
				d := got.At(bb, i, j) - want.At(bb, i, j)
				num += d * d
				den += want.At(bb, i, j) * want.At(bb, i, j)
			}
		}
		worst = math.Max(worst, math.Sqrt(num/den))
	}
	return worst
}

func spdExactlySymmetric(x *tensor.Tensor) bool {
	for bb := 0; bb < x.Batch(); bb++ {
		for i := 0; i < x.Rows(); i++ {
			for j := 0; j < i; j++ {
				if x.At(bb, i, j) != x.At(bb, j, i) {
					return false
				}
			}
		}
	}
	return true
}

// spdPaths runs f with the kernels forced onto each of their paths in turn: the defaults, plain loops at every
// order, and BLAS at every order.
func spdPaths(t *testing.T, f func(t *testing.T)) {
	loop := spdLoopMax
	defer func() { spdLoopMax = loop }()
	for _, p := range []struct {
		name string
		loop int
	}{{"default", loop}, {"loops", 1 << 20}, {"blas", 0}} {
		spdLoopMax = p.loop
		t.Run(p.name, f)
	}
}

// spdTol is the stated tolerance of the kernels against the references, relative Frobenius error per item:
// 1e-16·max(n, 10)·max(κ, 100), κ the condition number of the SPD operands. The retraction's Σ⁻¹ξ solve and the
// transport's whitening by L₁ and eigen-decomposition of N (whose condition number is up to κ(S₁)·κ(S₂)) lose
// about κ digits in both implementations; the largest error observed is below a fifth of the tolerance.
func spdTol(n int, cond float64) float64 { return 1e-16 * float64(max(n, 10)) * max(cond, 100) }

func newTestBackend(t *testing.T) *Backend {
	t.Helper()
	b, err := NewWithWorkers(2)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// spdInputs returns batch random SPD Σ (or S₁) with condition number cond, S₂ with condition number min(cond, 1e4)
// (so that N = L₁⁻¹S₂L₁⁻ᵀ, whose condition number can reach their product, stays SPD to working accuracy) and
// symmetric ξ, of order n.
func spdInputs(r *rand.Rand, batch, n int, cond float64) (sig, s2, xi [][]float64) {
	sig, s2, xi = make([][]float64, batch), make([][]float64, batch), make([][]float64, batch)
	for i := range sig {
		sig[i] = spdRandSPD(r, n, cond, 1+r.Float64())
		s2[i] = spdRandSPD(r, n, min(cond, 1e4), 0.1+r.Float64())
		xi[i] = spdRandSym(r, n, 0.1+r.Float64())
	}
	return sig, s2, xi
}

func TestSPDKernelsMatchReference(t *testing.T) {
	b := newTestBackend(t)
	orders := []int{1, 2, 3, 5, 8, 9, 10, 16, 17, 24, 33, 40, 41, 50, 64, 65, 100}
	if !testing.Short() {
		orders = append(orders, 200)
	}
	spdPaths(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		var worstR, worstT float64
		for _, n := range orders {
			for _, cond := range []float64{1, 1e3, 1e8} {
				batch := 3
				if n >= 100 {
					batch = 2
				}
				sig, s2, xi := spdInputs(r, batch, n, cond)
				ts, t2, tx := spdTensor(t, b, n, sig...), spdTensor(t, b, n, s2...), spdTensor(t, b, n, xi...)
				got, want := spdClone(t, b, tx), spdClone(t, b, tx)
				tol := spdTol(n, cond)

				if err := spdRetractFused(b, got, ts, tx); err != nil {
					t.Fatalf("n=%d cond=%g: retract: %v", n, cond, err)
				}
				if err := backend.SPDRetractOp.Reference()(b, want, ts, tx); err != nil {
					t.Fatal(err)
				}
				e := spdRelErr(got, want)
				worstR = max(worstR, e/tol)
				if e > tol || !spdExactlySymmetric(got) {
					t.Errorf("retract n=%d cond=%g: rel err %.3g (tol %.3g), symmetric %v", n, cond, e, tol, spdExactlySymmetric(got))
				}

				if err := spdTransportFused(b, got, ts, t2, tx); err != nil {
					t.Fatalf("n=%d cond=%g: transport: %v", n, cond, err)
				}
				if err := backend.SPDTransportOp.Reference()(b, want, ts, t2, tx); err != nil {
					t.Fatal(err)
				}
				e = spdRelErr(got, want)
				worstT = max(worstT, e/tol)
				if e > tol || !spdExactlySymmetric(got) {
					t.Errorf("transport n=%d cond=%g: rel err %.3g (tol %.3g), symmetric %v", n, cond, e, tol, spdExactlySymmetric(got))
				}
			}
		}
		t.Logf("largest error / tolerance: retract %.3g, transport %.3g", worstR, worstT)
	})
}

// Accuracy against the truth where it is known: the transport of S₁ along its own geodesic is S₂. The
// kernel's error is held to that of the reference (it takes another, equally stable route: E formed explicitly),
// for condition numbers up to 1e8: at each condition number, to 3× the reference's largest error over the sizes.
// The reference's error at one size is one draw from a spread of about 3× (at κ = 1e3: 2.7e-14 to 1.0e-13 over the
// sizes and BLAS builds), so a bound from it alone fails a kernel as accurate as the reference by chance: with
// OpenBLAS 0.3.21 at n = 10, κ = 1e3 the kernel's 1.2e-13 was 3.5× the reference's 3.4e-14 there.
func TestSPDTransportAccuracy(t *testing.T) {
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(21, 22))
	sizes := []int{3, 10, 20, 50, 70}
	// κ(S₁), κ(S₂): N = L₁⁻¹S₂L₁⁻ᵀ has a condition number up to their product, which must stay well inside double
	// precision for S₂ to be SPD to working accuracy at all.
	conds := [][2]float64{{10, 10}, {1e3, 1e3}, {1e6, 1e6}, {1e8, 10}, {10, 1e8}}
	kernelErr, refWorst := make([][]float64, len(conds)), make([]float64, len(conds))
	for _, n := range sizes {
		for c, cond := range conds {
			sig, s2 := make([][]float64, 4), make([][]float64, 4)
			for i := range sig {
				sig[i], s2[i] = spdRandSPD(r, n, cond[0], 1+r.Float64()), spdRandSPD(r, n, cond[1], 0.1+r.Float64())
			}
			t1, t2 := spdTensor(t, b, n, sig...), spdTensor(t, b, n, s2...)
			got, want := spdClone(t, b, t1), spdClone(t, b, t1)
			if err := spdTransportFused(b, got, t1, t2, t1); err != nil {
				t.Fatal(err)
			}
			if err := backend.SPDTransportOp.Reference()(b, want, t1, t2, t1); err != nil {
				t.Fatal(err)
			}
			kernelErr[c] = append(kernelErr[c], spdRelErr(got, t2))
			refWorst[c] = max(refWorst[c], spdRelErr(want, t2))
		}
	}
	for c, cond := range conds {
		for i, ek := range kernelErr[c] {
			if ek > 3*refWorst[c]+1e-15 {
				t.Errorf("n=%d κ=%g: Γ(S₁) vs S₂: kernel %.3g, reference at most %.3g over the sizes", sizes[i], cond,
					ek, refWorst[c])
			}
		}
	}
}

// A batch large enough to be split over the workers, with one matrix pair broadcast, against the reference.
func TestSPDKernelsBroadcast(t *testing.T) {
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{4, 12, 40} {
		const batch = 40
		tol := spdTol(n, 1e3)
		sig, s2, xi := spdInputs(r, batch, n, 1e3)
		full := [3]*tensor.Tensor{spdTensor(t, b, n, sig...), spdTensor(t, b, n, s2...), spdTensor(t, b, n, xi...)}
		one := [3]*tensor.Tensor{spdTensor(t, b, n, sig[5]), spdTensor(t, b, n, s2[7]), spdTensor(t, b, n, xi[9])}
		// Every choice of operands with batch 1 (mask bit k: operand k broadcast), dst always of the full batch.
		for mask := 0; mask < 8; mask++ {
			var ops [3]*tensor.Tensor
			for k := range ops {
				ops[k] = full[k]
				if mask&(1<<k) != 0 {
					ops[k] = one[k]
				}
			}
			got, want := spdClone(t, b, full[2]), spdClone(t, b, full[2])
			if mask&2 == 0 { // the retraction has no S₂
				if err := spdRetractFused(b, got, ops[0], ops[2]); err != nil {
					t.Fatal(err)
				}
				if err := backend.SPDRetractOp.Reference()(b, want, ops[0], ops[2]); err != nil {
					t.Fatal(err)
				}
				if e := spdRelErr(got, want); e > tol || !spdExactlySymmetric(got) {
					t.Errorf("retract n=%d broadcast mask %03b: rel err %.3g (tol %.3g)", n, mask, e, tol)
				}
			}
			if err := spdTransportFused(b, got, ops[0], ops[1], ops[2]); err != nil {
				t.Fatal(err)
			}
			if err := backend.SPDTransportOp.Reference()(b, want, ops[0], ops[1], ops[2]); err != nil {
				t.Fatal(err)
			}
			if e := spdRelErr(got, want); e > tol || !spdExactlySymmetric(got) {
				t.Errorf("transport n=%d broadcast mask %03b: rel err %.3g (tol %.3g)", n, mask, e, tol)
			}
		}
	}
}

// dst may be any operand, a broadcast operand may be a matrix of dst (the kernels read every operand before they
// write dst), and every tensor may be a strided view. The expected values come from the reference on copies.
func TestSPDKernelsAlias(t *testing.T) {
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(15, 16))
	for _, n := range []int{3, 10, 20} {
		const batch = 6
		tol := spdTol(n, 100)
		sig, s2, xi := spdInputs(r, batch, n, 100)
		// Operands as they would be without aliasing.
		ref := func(kind string, dst *tensor.Tensor, ops ...*tensor.Tensor) *tensor.Tensor {
			cp := make([]*tensor.Tensor, len(ops))
			for i, o := range ops {
				cp[i] = spdClone(t, b, o)
			}
			out := spdClone(t, b, dst)
			var err error
			if kind == "retract" {
				err = backend.SPDRetractOp.Reference()(b, out, cp[0], cp[1])
			} else {
				err = backend.SPDTransportOp.Reference()(b, out, cp[0], cp[1], cp[2])
			}
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		check := func(what string, got, want *tensor.Tensor) {
			t.Helper()
			if e := spdRelErr(got, want); e > tol || !spdExactlySymmetric(got) {
				t.Errorf("n=%d %s: rel err %.3g (tol %.3g), symmetric %v", n, what, e, tol, spdExactlySymmetric(got))
			}
		}
		// dst is each operand in turn.
		for k, name := range []string{"sigma", "xi"} {
			ops := []*tensor.Tensor{spdTensor(t, b, n, sig...), spdTensor(t, b, n, xi...)}
			want := ref("retract", ops[k], ops...)
			if err := spdRetractFused(b, ops[k], ops[0], ops[1]); err != nil {
				t.Fatal(err)
			}
			check("retract dst="+name, ops[k], want)
		}
		for k, name := range []string{"s1", "s2", "xi"} {
			ops := []*tensor.Tensor{spdTensor(t, b, n, sig...), spdTensor(t, b, n, s2...), spdTensor(t, b, n, xi...)}
			want := ref("transport", ops[k], ops...)
			if err := spdTransportFused(b, ops[k], ops[0], ops[1], ops[2]); err != nil {
				t.Fatal(err)
			}
			check("transport dst="+name, ops[k], want)
		}
		// A broadcast operand that is matrix 0 of dst, and one that is matrix 1 of dst: every item reads them,
		// and items 0 and 1 overwrite them.
		{
			dst := spdTensor(t, b, n, xi...)
			copy(dst.Storage().Host()[n*n:2*n*n], sig[0])
			ops := []*tensor.Tensor{dst.Item(1), dst.Item(0)}
			want := ref("retract", dst, ops...)
			if err := spdRetractFused(b, dst, ops[0], ops[1]); err != nil {
				t.Fatal(err)
			}
			check("retract sigma=dst[1], xi=dst[0] broadcast", dst, want)
			// The reference too (the CUDA backend runs it).
			rd := spdTensor(t, b, n, xi...)
			copy(rd.Storage().Host()[n*n:2*n*n], sig[0])
			if err := backend.SPDRetractOp.Reference()(b, rd, rd.Item(1), rd.Item(0)); err != nil {
				t.Fatal(err)
			}
			check("reference retract sigma=dst[1], xi=dst[0] broadcast", rd, want)
		}
		{
			dst := spdTensor(t, b, n, xi...)
			copy(dst.Storage().Host()[n*n:2*n*n], sig[0])
			copy(dst.Storage().Host()[2*n*n:3*n*n], s2[0])
			ops := []*tensor.Tensor{dst.Item(1), dst.Item(2), dst}
			want := ref("transport", dst, ops...)
			if err := spdTransportFused(b, dst, ops[0], ops[1], ops[2]); err != nil {
				t.Fatal(err)
			}
			check("transport s1=dst[1], s2=dst[2] broadcast, xi=dst", dst, want)
		}
		// Strided views: every matrix a corner of a larger one.
		{
			view := func(ms [][]float64) *tensor.Tensor {
				big, err := b.Alloc(tensor.Shape{Batch: batch, Rows: n + 2, Cols: n + 3})
				if err != nil {
					t.Fatal(err)
				}
				v := big.Slice(1, n+1, 2, n+2)
				for bb, m := range ms {
					for i := 0; i < n; i++ {
						for j := 0; j < n; j++ {
							v.Set(bb, i, j, m[i*n+j])
						}
					}
				}
				return v
			}
			ops := []*tensor.Tensor{view(sig), view(s2), view(xi)}
			dst := view(xi)
			want := ref("transport", dst, ops...)
			if err := spdTransportFused(b, dst, ops[0], ops[1], ops[2]); err != nil {
				t.Fatal(err)
			}
			check("transport strided views", dst, want)
			want = ref("retract", dst, ops[0], ops[2])
			if err := spdRetractFused(b, dst, ops[0], ops[2]); err != nil {
				t.Fatal(err)
			}
			check("retract strided views", dst, want)
		}
	}
}

// spdSameError reports whether two errors wrap the same cause and name the same operation, operand and item.
func spdSameError(got, want error) error {
	var g, w *backend.OpError
	if !errors.As(got, &g) || !errors.As(want, &w) {
		return fmt.Errorf("got %v, want %v (not both *OpError)", got, want)
	}
	if !errors.Is(got, w.Err) || g.Op != w.Op || g.Operand != w.Operand || g.Batch != w.Batch {
		return fmt.Errorf("got %v, want %v", got, want)
	}
	return nil
}

// Non-SPD operands give the reference's errors (cause, operation, operand, lowest batch item; a failed Cholesky of
// S₁ before a bad S₂ whatever their items), and dst is left as it was.
func TestSPDKernelsErrors(t *testing.T) {
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(17, 18))
	for _, n := range []int{3, 12, 70} {
		const batch = 5
		sig, s2, xi := spdInputs(r, batch, n, 10)
		indefinite := func(m []float64) []float64 {
			m = append([]float64(nil), m...)
			m[(n-1)*n+n-1] = -1
			return m
		}
		withBad := func(ms [][]float64, items ...int) *tensor.Tensor {
			cp := append([][]float64(nil), ms...)
			for _, i := range items {
				cp[i] = indefinite(ms[i])
			}
			return spdTensor(t, b, n, cp...)
		}
		nan := append([]float64(nil), s2[2]...)
		nan[1] = math.NaN()
		nanS2 := spdTensor(t, b, n, s2[0], s2[1], nan, s2[3], s2[4])
		good1, good2, x := spdTensor(t, b, n, sig...), spdTensor(t, b, n, s2...), spdTensor(t, b, n, xi...)
		bad1 := spdTensor(t, b, n, indefinite(sig[0]))
		cases := []struct {
			name       string
			s1, s2, xi *tensor.Tensor
			operand    string
			item       int
		}{
			{"sigma/s1 items 1 and 3", withBad(sig, 3, 1), good2, x, "s1", 1},
			{"s2 item 4", good1, withBad(s2, 4), x, "s2", 4},
			{"s1 item 3 before s2 item 1", withBad(sig, 3), withBad(s2, 1), x, "s1", 3},
			{"broadcast s1", bad1, good2, x, "s1", 0},
			{"NaN in s2", good1, nanS2, x, "", 2},
		}
		for _, c := range cases {
			dst := spdClone(t, b, x)
			if err := b.Fill(dst, 7); err != nil {
				t.Fatal(err)
			}
			untouched := func(what string) {
				t.Helper()
				for _, v := range dst.Storage().Host() {
					if v != 7 {
						t.Fatalf("n=%d %s %s: dst written by a call that failed", n, c.name, what)
					}
				}
			}
			want := backend.SPDTransportOp.Reference()(b, spdClone(t, b, x), c.s1, c.s2, c.xi)
			got := spdTransportFused(b, dst, c.s1, c.s2, c.xi)
			if got == nil || want == nil {
				t.Fatalf("n=%d transport %s: error %v, reference %v", n, c.name, got, want)
			}
			if err := spdSameError(got, want); err != nil {
				t.Errorf("n=%d transport %s: %v", n, c.name, err)
			}
			if c.operand != "" {
				var oe *backend.OpError
				if !errors.As(got, &oe) || oe.Operand != c.operand || oe.Batch != c.item || !errors.Is(got, backend.ErrNotPositiveDefinite) {
					t.Errorf("n=%d transport %s: %v, want ErrNotPositiveDefinite naming %s item %d", n, c.name, got, c.operand, c.item)
				}
			}
			untouched("transport")
			if c.operand != "s1" {
				continue
			}
			// The retraction's Σ is the transport's S₁.
			want = backend.SPDRetractOp.Reference()(b, spdClone(t, b, x), c.s1, c.xi)
			got = spdRetractFused(b, dst, c.s1, c.xi)
			if err := spdSameError(got, want); err != nil {
				t.Errorf("n=%d retract %s: %v", n, c.name, err)
			}
			var oe *backend.OpError
			if !errors.As(got, &oe) || oe.Operand != "sigma" || oe.Batch != c.item || !errors.Is(got, backend.ErrNotPositiveDefinite) {
				t.Errorf("n=%d retract %s: %v, want ErrNotPositiveDefinite naming sigma item %d", n, c.name, got, c.item)
			}
			untouched("retract")
		}
	}
}

// spdCheckEig checks spdEig on the symmetric a: eigenvalues ascending and equal to LAPACK's, residual ‖Av − λv‖
// and orthogonality of the vectors, all to 1e-14·n relative to max|a_ij|.
func spdCheckEig(t *testing.T, name string, a0 []float64, n int) {
	t.Helper()
	a := append([]float64(nil), a0...)
	w, zt := make([]float64, n), make([]float64, n*n)
	if !spdEig(newSPDEigWork(n), n, a, w, zt) {
		t.Fatalf("%s n=%d: no convergence", name, n)
	}
	wl := make([]float64, n)
	al := append([]float64(nil), a0...)
	sym := blas64.Symmetric{N: n, Stride: n, Data: al, Uplo: blas.Lower}
	q := make([]float64, 1)
	// With vectors: gonum's eigenvalue-only path (Dsterf) panics on matrices it has to scale.
	lapack64.Syev(lapack.EVCompute, sym, wl, q, -1)
	if !lapack64.Syev(lapack.EVCompute, sym, wl, make([]float64, int(q[0])), int(q[0])) {
		t.Fatal("LAPACK reference failed")
	}
	var anorm float64
	for _, x := range a0 {
		anorm = max(anorm, math.Abs(x))
	}
	if anorm == 0 {
		anorm = 1
	}
	var dw, res, orth float64
	for k := 0; k < n; k++ {
		dw = max(dw, math.Abs(w[k]-wl[k])/anorm)
		if k > 0 && w[k] < w[k-1] {
			t.Fatalf("%s n=%d: eigenvalues not ascending", name, n)
		}
		v := zt[k*n : (k+1)*n]
		for i := 0; i < n; i++ {
			var s float64
			for j := 0; j < n; j++ {
				s += a0[i*n+j] * v[j]
			}
			res = max(res, math.Abs(s-w[k]*v[i])/anorm)
		}
		for l := 0; l <= k; l++ {
			var s float64
			for j := 0; j < n; j++ {
				s += v[j] * zt[l*n+j]
			}
			if k == l {
				s--
			}
			orth = max(orth, math.Abs(s))
		}
	}
	if tol := 1e-14 * float64(max(n, 4)); dw > tol || res > tol || orth > tol {
		t.Errorf("%s n=%d: eigenvalues %.3g, residual %.3g, orthogonality %.3g (tol %.3g)", name, n, dw, res, orth, tol)
	}
}

// TestSPDEig checks the eigenvectors' layout (rows of zt) and the eigen-solver's ends through spdEig.
func TestSPDEig(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	for _, n := range []int{1, 2, 3, 4, 7, 10, 16, 31, 50, 65, 120} {
		scaled := func(f float64) []float64 {
			a := spdRandSym(r, n, f)
			return a
		}
		diag := make([]float64, n*n)
		ident := make([]float64, n*n)
		cluster := spdRandSym(r, n, 1e-13)
		graded := spdRandSPD(r, n, 1e16, 1)
		for i := 0; i < n; i++ {
			diag[i*n+i] = float64(n - i)
			ident[i*n+i] = 1
			cluster[i*n+i] += 1
		}
		// A matrix with one eigenvalue repeated n−1 times: I + uuᵀ.
		rank1 := append([]float64(nil), ident...)
		u := spdRandSym(r, n, 1)[:n]
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				rank1[i*n+j] += u[i] * u[j]
			}
		}
		for _, c := range []struct {
			name string
			a    []float64
		}{{"random", scaled(1)}, {"tiny", scaled(1e-200)}, {"huge", scaled(1e200)}, {"diagonal", diag},
			{"identity", ident}, {"cluster", cluster}, {"graded", graded}, {"rank-one update of I", rank1},
			{"zero", make([]float64, n*n)}} {
			spdCheckEig(t, c.name, c.a, n)
		}
	}
	// NaN: no convergence, as LAPACK, and no endless loop.
	a := spdRandSym(r, 6, 1)
	a[7] = math.NaN()
	if spdEig(newSPDEigWork(6), 6, a, make([]float64, 6), make([]float64, 36)) {
		t.Error("NaN input reported as converged")
	}
}

// The kernels are the ones the operations select on the CPU backend, at every order.
func TestSPDKernelsSelected(t *testing.T) {
	b := newTestBackend(t)
	for _, n := range []int{1, 10, 50, 200, 1000} {
		s := tensor.Shape{Batch: 7, Rows: n, Cols: n}
		if _, name := backend.SPDRetractOp.Select(b, s); name != "cpu.spd.retract.fused" {
			t.Errorf("n=%d: spd.retract selects %s", n, name)
		}
		if _, name := backend.SPDTransportOp.Select(b, s); name != "cpu.spd.transport.fused" {
			t.Errorf("n=%d: spd.transport selects %s", n, name)
		}
	}
}
