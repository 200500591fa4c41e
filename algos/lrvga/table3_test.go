package lrvga

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/internal/repro"
	"github.com/geovb/geovb/internal/testbackend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// The legacy generator against values NumPy documents widely: seed(1) gives random_sample() = 0.417022004702574
// and randn() = 1.6243453636632417; MT19937 seeded 5489 starts with 3499211612.
func TestLegacyMT(t *testing.T) {
	if v := newLegacyMT(5489).next32(); v != 3499211612 {
		t.Errorf("MT19937(5489) first word %d, want 3499211612", v)
	}
	if v := newLegacyMT(1).uniform(); math.Abs(v-0.417022004702574) > 1e-15 {
		t.Errorf("seed 1 uniform %.17g, want 0.417022004702574", v)
	}
	if v := newLegacyMT(1).normal(); math.Abs(v-1.6243453636632417) > 1e-15 {
		t.Errorf("seed 1 normal %.17g, want 1.6243453636632417", v)
	}
}

// table3Setup builds the factors of Table 3 (Sec. 5.4) with the legacy generator: ψ_i = i, W = U(0,1)^{d×p}
// row-major, μ = U(0,1)^d after seed(1); and the draws of test Sampling3: K×d normals, d uniforms for
// x = 5·U/d, K×p normals, all after a first seed(1).
func table3Setup(d, p, k int) (w, psi, mu, x, z, eps []float64) {
	g := newLegacyMT(1)
	z = make([]float64, k*d)
	for i := range z {
		z[i] = g.normal()
	}
	x = make([]float64, d)
	for i := range x {
		x[i] = 5 * g.uniform() / float64(d)
	}
	eps = make([]float64, k*p)
	for i := range eps {
		eps[i] = g.normal()
	}
	g.seed(1)
	psi = make([]float64, d)
	for i := range psi {
		psi[i] = float64(i + 1)
	}
	w = make([]float64, d*p)
	for i := range w {
		w[i] = g.uniform()
	}
	mu = make([]float64, d)
	for i := range mu {
		mu[i] = g.uniform()
	}
	return
}

// T12: Table 3 of paper 002 reproduced exactly (to 1e-6): Tr (WWᵀ+Ψ)⁻¹ = 9.245581 (LowRank.Trace), the probit
// baseline σ(k xᵀμ) = 0.773801 with ν = xᵀPx by Woodbury, and the ensemble estimate 0.773855 from the Prop. 1 map
// (corrected, x + L(ε − Wᵀx)) applied to the legacy draws. T13: the backend's own sampler (Philox) with 10⁴ draws
// gives mean ‖x⁺‖² within 3·√(2 Tr P²/K) of Tr P.
func TestReproTable3(t *testing.T) {
	repro.Require(t)
	const d, p, k = 10000, 10, 10
	b := testbackend.Open(t)
	w, psi, mu, x, z, eps := table3Setup(d, p, k)
	wt := upload(t, b, w, d, p)
	pt := upload(t, b, psi, d, 1)
	lr, err := backend.NewLowRank(b, wt, pt)
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	tr, err := lr.Trace()
	if err != nil {
		t.Fatal(err)
	}
	xt := upload(t, b, x, d, 1)
	px := alloc(t, b, d, 1)
	if err := lr.Solve(px, xt); err != nil {
		t.Fatal(err)
	}
	nu := dotHost(download(t, b, px), x)
	xmu := dotHost(x, mu)
	base := Sigmoid(ProbitK(nu) * xmu)

	// Prop. 1 on the legacy draws: x_i = z_i/√ψ, x⁺_i = x_i + Ψ⁻¹W M⁻¹(ε_i − Wᵀx_i), θ_i = μ + x⁺_i.
	wm := mat.NewDense(d, p, w)
	m := mat.NewSymDense(p, nil)
	for i := 0; i < d; i++ {
		for a := 0; a < p; a++ {
			for c := a; c < p; c++ {
				m.SetSym(a, c, m.At(a, c)+w[i*p+a]*w[i*p+c]/psi[i])
			}
		}
	}
	for a := 0; a < p; a++ {
		m.SetSym(a, a, m.At(a, a)+1)
	}
	var ch mat.Cholesky
	if !ch.Factorize(m) {
		t.Fatal("M not SPD")
	}
	ens := 0.0
	sq := 0.0
	for s := 0; s < k; s++ {
		xs := make([]float64, d)
		for i := range xs {
			xs[i] = z[s*d+i] / math.Sqrt(psi[i])
		}
		r := mat.NewVecDense(p, append([]float64(nil), eps[s*p:(s+1)*p]...))
		var wtx mat.VecDense
		wtx.MulVec(wm.T(), mat.NewVecDense(d, xs))
		r.SubVec(r, &wtx)
		var v mat.VecDense
		if err := ch.SolveVecTo(&v, r); err != nil {
			t.Fatal(err)
		}
		var wv mat.VecDense
		wv.MulVec(wm, &v)
		a := 0.0
		for i := range xs {
			xs[i] += wv.AtVec(i) / psi[i]
			sq += xs[i] * xs[i]
			a += x[i] * (mu[i] + xs[i])
		}
		ens += Sigmoid(a)
	}
	ens /= k
	t.Logf("T12: Tr P = %.6f, ν = %.4g, xᵀμ = %.6f, baseline %.6f, ensemble %.6f, mean ‖x⁺‖² over the 10 draws %.4f",
		tr, nu, xmu, base, ens, sq/k)
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"trace", tr, 9.245581}, {"baseline", base, 0.773801}, {"ensemble", ens, 0.773855}} {
		if math.Abs(c.got-c.want) > 1e-6 {
			t.Errorf("T12 %s = %.7f, want %.6f (±1e-6)", c.name, c.got, c.want)
		}
	}

	// T13: the backend sampler, 10⁴ draws in blocks of 500. Tr P² ≤ Σ 1/ψ_i² bounds the variance.
	const kk, blk = 10000, 500
	dr := alloc(t, b, d, blk)
	tot := 0.0
	for s := 0; s < kk/blk; s++ {
		if err := lr.Sample(dr, nil, rng.Counter{Seed: 3, Stream: 1, Offset: uint64(s * (d + p) * blk)}); err != nil {
			t.Fatal(err)
		}
		for _, v := range download(t, b, dr) {
			tot += v * v
		}
	}
	trP2 := 0.0
	for _, v := range psi {
		trP2 += 1 / (v * v)
	}
	tol := 3 * math.Sqrt(2*trP2/kk)
	t.Logf("T13: mean ‖x⁺‖² over %d Philox draws %.4f vs Tr P %.4f (tolerance %.3f)", kk, tot/kk, tr, tol)
	if math.Abs(tot/kk-tr) > tol {
		t.Errorf("T13: mean ‖x⁺‖² %.4f vs Tr P %.4f: off by more than %.3f", tot/kk, tr, tol)
	}
}

func dotHost(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func upload(t testing.TB, b backend.Backend, v []float64, r, c int) *tensor.Tensor {
	t.Helper()
	d := alloc(t, b, r, c)
	h, err := tensor.FromSlice(append([]float64(nil), v...), 1, r, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Upload(d, h); err != nil {
		t.Fatal(err)
	}
	return d
}

func alloc(t testing.TB, b backend.Backend, r, c int) *tensor.Tensor {
	t.Helper()
	d, err := b.Alloc(tensor.Shape{Batch: 1, Rows: r, Cols: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free(d) })
	return d
}

func download(t testing.TB, b backend.Backend, x *tensor.Tensor) []float64 {
	t.Helper()
	out := make([]float64, x.Len())
	h, _ := tensor.FromSlice(out, 1, x.Rows(), x.Cols())
	if err := b.Download(h, x); err != nil {
		t.Fatal(err)
	}
	return out
}
