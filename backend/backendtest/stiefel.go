package backendtest

import (
	"fmt"
	"math"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// Conformance of the Stiefel QR retraction qf(X + tV) (paper 000 eq. (3.9)) with diag(R) > 0.

func init() {
	register("stiefel", testStiefel)
	registerBench("stiefel", benchStiefel)
}

// stiefelCase is a batch of orthonormal points W and directions V; the retraction is evaluated at W + tV.
type stiefelCase struct {
	batch, n, p int
	t           float64
	seed        uint64
}

func (c stiefelCase) String() string { return fmt.Sprintf("%dx%dx%d", c.batch, c.n, c.p) }

// data returns the host matrices W, V and A = W + tV.
func (c stiefelCase) data() (w, v, a []*mat.Dense) {
	r := geoRNG(c.seed)
	w, v, a = make([]*mat.Dense, c.batch), make([]*mat.Dense, c.batch), make([]*mat.Dense, c.batch)
	for i := range w {
		w[i] = geoOrtho(r, c.n, c.p)
		v[i] = normalDense(r, c.n, c.p, 1/math.Sqrt(float64(c.n)))
		a[i] = mat.NewDense(c.n, c.p, nil)
		a[i].Add(w[i], scaled(c.t, v[i]))
	}
	return w, v, a
}

func scaled(s float64, m *mat.Dense) *mat.Dense {
	var out mat.Dense
	out.Scale(s, m)
	return &out
}

// qfStats are the worst errors over a batch: against the reference, ‖QᵀQ − I‖_max, min diag(QᵀA) and
// ‖Q·triu(QᵀA) − A‖_F/‖A‖_F.
type qfStats struct{ ref, orth, minDiag, recon float64 }

// checkQF measures q against the independent references ref (nil skips that) and the invariants of qf(a).
func checkQF(q, a, ref []*mat.Dense) qfStats {
	st := qfStats{minDiag: math.Inf(1)}
	for i := range q {
		if ref != nil {
			st.ref = max(st.ref, geoMaxAbs(q[i], ref[i]))
		}
		_, p := q[i].Dims()
		var g, r mat.Dense
		g.Mul(q[i].T(), q[i])
		st.orth = max(st.orth, geoMaxAbs(&g, eye(p)))
		r.Mul(q[i].T(), a[i])
		for j := 0; j < p; j++ {
			st.minDiag = min(st.minDiag, r.At(j, j))
			for k := 0; k < j; k++ {
				r.Set(j, k, 0)
			}
		}
		var qr mat.Dense
		qr.Mul(q[i], &r)
		st.recon = max(st.recon, geoRelErr(&qr, a[i]))
	}
	return st
}

func eye(n int) *mat.Dense {
	m := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		m.Set(i, i, 1)
	}
	return m
}

// qrRun uploads the operands, runs f into a fresh destination and downloads the result.
func qrRun(t *testing.T, b backend.Backend, f backend.QRRetractFunc, x, v *tensor.Tensor, tt float64) []*mat.Dense {
	t.Helper()
	dst, err := b.Alloc(x.Shape())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free(dst)
	if err := f(b, dst, x, v, tt); err != nil {
		t.Fatalf("qr retraction %v: %v", x.Shape(), err)
	}
	return geoDown(t, b, dst)
}

func testStiefel(t *testing.T, b backend.Backend) {
	cases := []stiefelCase{
		{1, 1, 1, 0.3, 1},
		{3, 1, 1, -2, 2},
		{1, 5, 5, 0.3, 3},      // p = n
		{4, 64, 64, 0.3, 4},    // square, O(64)
		{7, 9, 4, 0.3, 5},      //
		{10000, 6, 3, 0.3, 6},  // large batch of small matrices
		{3, 100, 10, 0.3, 7},   // the NN-VB shape
		{1, 512, 16, 0.3, 8},   //
		{1, 200000, 4, 0.3, 9}, // very tall, batch 1
		{1, 20000, 40, 0.3, 10},
		{1, 20000, 7, 0.3, 11}, // tall, on either side of where a CPU kernel's row loops hand over to BLAS
		{1, 20000, 8, 0.3, 12},
		{1, 20000, 32, 0.3, 13},
	}
	// Tolerances: max |Q − Q_ref| ≤ 1e-12 for these well-conditioned A (κ(A) < 10; both sides are backward stable,
	// so the difference is about κ·ε·√n); every kernel the backend registers for the shape agrees with the
	// reference op to the same 1e-12. Orthogonality ‖QᵀQ − I‖_max ≤ 1e-12 and diag(R) > 0.
	const tolRef, tolOrth = 1e-12, 1e-12
	for _, c := range cases {
		t.Run("match/"+c.String(), func(t *testing.T) {
			w, v, a := c.data()
			x, vd := geoUp(t, b, w), geoUp(t, b, v)
			defer b.Free(x)
			defer b.Free(vd)
			ref := make([]*mat.Dense, c.batch)
			for i := range a {
				ref[i] = geoQF(a[i])
			}
			op := func(b backend.Backend, dst, x, v *tensor.Tensor, tt float64) error {
				return backend.QRRetract(b, dst, x, v, tt)
			}
			got := qrRun(t, b, op, x, vd, c.t)
			st := checkQF(got, a, ref)
			_, kname := backend.QRRetractOp.Select(b, x.Shape())
			t.Logf("%v via %s: |Q−Qref| %.2e, |QᵀQ−I| %.2e, min diag R %.3g, recon %.2e", c, kname, st.ref, st.orth, st.minDiag, st.recon)
			if st.ref > tolRef || st.orth > tolOrth || !(st.minDiag > 0) || st.recon > 1e-13 {
				t.Fatalf("%v: |Q−Qref| %.3g (tol %g), |QᵀQ−I| %.3g (tol %g), min diag R %.3g (want > 0), ‖QR−A‖/‖A‖ %.3g (tol 1e-13)",
					c, st.ref, tolRef, st.orth, tolOrth, st.minDiag, st.recon)
			}
			refOut := qrRun(t, b, backend.QRRetractOp.Reference(), x, vd, c.t)
			for _, k := range backend.QRRetractOp.Kernels(b, x.Shape()) {
				kout := qrRun(t, b, k.Fn, x, vd, c.t)
				var d float64
				for i := range kout {
					d = max(d, geoMaxAbs(kout[i], refOut[i]))
				}
				t.Logf("kernel %s vs reference op: %.2e", k.Name, d)
				if d > tolRef {
					t.Errorf("kernel %s: max |Q − Q_reference| %.3g > %g", k.Name, d, tolRef)
				}
			}
		})
	}

	// qf(W) = W for orthonormal W, to 1e-13·√(np) in the Frobenius norm, both with v = nil and t = 0.
	for _, c := range []stiefelCase{{1, 1, 1, 0, 11}, {5, 7, 7, 0, 12}, {10000, 6, 3, 0, 13}, {2, 100, 10, 0, 14}, {1, 200000, 4, 0, 15}} {
		t.Run("identity/"+c.String(), func(t *testing.T) {
			w, v, _ := c.data()
			if c.n == 1 {
				w[0].Set(0, 0, -1) // qf(−1) = −1: R = 1 > 0
			}
			x, vd := geoUp(t, b, w), geoUp(t, b, v)
			defer b.Free(x)
			defer b.Free(vd)
			tol := 1e-13 * math.Sqrt(float64(c.n*c.p))
			fns := map[string]func() []*mat.Dense{
				"nil": func() []*mat.Dense {
					return qrRun(t, b, func(b backend.Backend, d, x, _ *tensor.Tensor, _ float64) error {
						return backend.QRRetract(b, d, x, nil, 0)
					}, x, nil, 0)
				},
				"t=0": func() []*mat.Dense {
					return qrRun(t, b, func(b backend.Backend, d, x, v *tensor.Tensor, _ float64) error {
						return backend.QRRetract(b, d, x, v, 0)
					}, x, vd, 0)
				},
			}
			for _, k := range backend.QRRetractOp.Kernels(b, x.Shape()) {
				fns[k.Name] = func() []*mat.Dense { return qrRun(t, b, k.Fn, x, vd, 0) }
			}
			for name, f := range fns {
				got := f()
				var e float64
				for i := range got {
					var d mat.Dense
					d.Sub(got[i], w[i])
					e = max(e, mat.Norm(&d, 2))
				}
				t.Logf("%s: max ‖qf(W) − W‖_F %.2e", name, e)
				if e > tol {
					t.Errorf("%s: ‖qf(W) − W‖_F = %.3g > %.3g", name, e, tol)
				}
			}
		})
	}
	// The identity test above must catch a missing sign fix: a raw Householder Q differs from W.
	t.Run("identity/detects-missing-sign-fix", func(t *testing.T) {
		w := geoOrtho(geoRNG(16), 7, 7)
		var qr mat.QR
		qr.Factorize(w)
		var q mat.Dense
		qr.QTo(&q)
		var d mat.Dense
		d.Sub(&q, w)
		if e := mat.Norm(&d, 2); e < 0.1 {
			t.Fatalf("raw Householder Q equals W (‖Q − W‖ = %.3g): the identity test would not catch a missing sign fix", e)
		}
	})

	// First order: e(t) = ‖qf(W + tZ) − (W + tZ)‖_F = O(t²) for tangent Z, so e(t)/e(t/2) ∈ [3.8, 4.2].
	for _, c := range []stiefelCase{{4, 20, 5, 0, 17}, {2, 7, 7, 0, 18}, {1, 20000, 3, 0, 19}} {
		t.Run("first-order/"+c.String(), func(t *testing.T) {
			w, g, _ := c.data()
			z := make([]*mat.Dense, c.batch)
			for i := range w {
				// Z = Proj_W(G) = G − W sym(WᵀG).
				var wg, s mat.Dense
				wg.Mul(w[i].T(), g[i])
				s.Add(&wg, wg.T())
				s.Scale(0.5, &s)
				z[i] = mat.NewDense(c.n, c.p, nil)
				z[i].Mul(w[i], &s)
				z[i].Sub(g[i], z[i])
			}
			x, zd := geoUp(t, b, w), geoUp(t, b, z)
			defer b.Free(x)
			defer b.Free(zd)
			op := func(b backend.Backend, d, x, v *tensor.Tensor, tt float64) error {
				return backend.QRRetract(b, d, x, v, tt)
			}
			e := func(tt float64) []float64 {
				q := qrRun(t, b, op, x, zd, tt)
				out := make([]float64, c.batch)
				for i := range q {
					var a mat.Dense
					a.Add(w[i], scaled(tt, z[i]))
					out[i] = geoRelErr(q[i], &a) * mat.Norm(&a, 2)
				}
				return out
			}
			for _, tt := range []float64{1e-1, 1e-2, 1e-3} {
				e1, e2 := e(tt), e(tt/2)
				for i := range e1 {
					ratio := e1[i] / e2[i]
					if i == 0 {
						t.Logf("t = %g: e(t)/e(t/2) = %.4f", tt, ratio)
					}
					if !(ratio >= 3.8 && ratio <= 4.2) {
						t.Errorf("batch %d, t = %g: e(t)/e(t/2) = %.4f, want [3.8, 4.2]", i, tt, ratio)
					}
				}
			}
		})
	}

	// dst may alias x or v; v may have batch 1. Aliased results equal the unaliased ones to 1e-14.
	for _, c := range []stiefelCase{{50, 12, 4, 0.7, 20}, {1, 20000, 3, 0.7, 21}} {
		t.Run("alias/"+c.String(), func(t *testing.T) {
			w, v, _ := c.data()
			op := func(b backend.Backend, d, x, v *tensor.Tensor, tt float64) error {
				return backend.QRRetract(b, d, x, v, tt)
			}
			x, vd := geoUp(t, b, w), geoUp(t, b, v)
			want := qrRun(t, b, op, x, vd, c.t)
			if err := backend.QRRetract(b, x, x, vd, c.t); err != nil {
				t.Fatal(err)
			}
			gx := geoDown(t, b, x)
			b.Free(x)
			x = geoUp(t, b, w)
			if err := backend.QRRetract(b, vd, x, vd, c.t); err != nil {
				t.Fatal(err)
			}
			gv := geoDown(t, b, vd)
			b.Free(x)
			b.Free(vd)
			for i := range want {
				if d := max(geoMaxAbs(gx[i], want[i]), geoMaxAbs(gv[i], want[i])); d > 1e-14 {
					t.Fatalf("batch %d: aliased result differs by %.3g", i, d)
				}
			}
		})
	}
	t.Run("broadcast-v", func(t *testing.T) {
		c := stiefelCase{6, 30, 5, 0.4, 22}
		w, v, _ := c.data()
		x, vd := geoUp(t, b, w), geoUp(t, b, v[:1])
		defer b.Free(x)
		defer b.Free(vd)
		for _, k := range append([]backend.Kernel[backend.QRRetractFunc]{{Name: "dispatch", Fn: func(b backend.Backend, d, x, v *tensor.Tensor, tt float64) error {
			return backend.QRRetract(b, d, x, v, tt)
		}}}, backend.QRRetractOp.Kernels(b, x.Shape())...) {
			got := qrRun(t, b, k.Fn, x, vd, c.t)
			for i := range got {
				var a mat.Dense
				a.Add(w[i], scaled(c.t, v[0]))
				if d := geoMaxAbs(got[i], geoQF(&a)); d > tolRef {
					t.Fatalf("%s batch %d: |Q − Qref| %.3g > %g", k.Name, i, d, tolRef)
				}
			}
		}
	})
	// Strided views (row stride > cols, batch stride with gaps) for x, v and dst.
	for _, c := range []stiefelCase{{20, 11, 3, 0.5, 23}, {1, 15000, 2, 0.5, 24}} {
		t.Run("strided/"+c.String(), func(t *testing.T) {
			w, v, a := c.data()
			view := func(ms []*mat.Dense) (*tensor.Tensor, *tensor.Tensor) {
				h := tensor.NewHost(c.batch, c.n+1, c.p+3)
				hv := h.Slice(1, c.n+1, 2, c.p+2)
				for i, m := range ms {
					hv.Dense(i).Copy(m)
				}
				d := upload(t, b, h)
				return d, d.Slice(1, c.n+1, 2, c.p+2)
			}
			xf, x := view(w)
			vf, vd := view(v)
			df, dst := view(v)
			defer b.Free(xf)
			defer b.Free(vf)
			defer b.Free(df)
			if err := backend.QRRetract(b, dst, x, vd, c.t); err != nil {
				t.Fatal(err)
			}
			got := geoDown(t, b, dst)
			st := checkQF(got, a, nil)
			for i := range got {
				st.ref = max(st.ref, geoMaxAbs(got[i], geoQF(a[i])))
			}
			if st.ref > tolRef || st.orth > tolOrth {
				t.Fatalf("strided: |Q − Qref| %.3g, |QᵀQ − I| %.3g", st.ref, st.orth)
			}
			// The margins around the views are untouched.
			full := download(t, b, df)
			for i := 0; i < c.batch; i++ {
				for j := 0; j < c.p+3; j++ {
					if full.At(i, 0, j) != 0 {
						t.Fatalf("margin row of batch %d written", i)
					}
				}
				for r := 1; r <= c.n; r++ {
					if full.At(i, r, 0) != 0 || full.At(i, r, 1) != 0 || full.At(i, r, c.p+2) != 0 {
						t.Fatalf("margin columns of batch %d row %d written", i, r)
					}
				}
			}
		})
	}

	// Ill-conditioned A: the result must still be a backward-stable qf: ‖QᵀQ − I‖ ≤ 1e-12, diag(R) > 0 and
	// ‖Q·triu(QᵀA) − A‖/‖A‖ ≤ 1e-12. κ = 1e5 stays on the CholeskyQR2 path of a tall kernel, κ = 1e10 needs its
	// Householder fallback.
	for _, cond := range []float64{1e5, 1e10} {
		for _, sh := range [][3]int{{1, 30000, 6}, {3, 40, 6}} {
			name := fmt.Sprintf("ill-conditioned/%dx%dx%d/cond=%g", sh[0], sh[1], sh[2], cond)
			t.Run(name, func(t *testing.T) {
				r := geoRNG(uint64(25 + sh[1]))
				a := make([]*mat.Dense, sh[0])
				for i := range a {
					a[i] = geoWithCond(r, sh[1], sh[2], cond)
				}
				x := geoUp(t, b, a)
				defer b.Free(x)
				fns := []backend.Kernel[backend.QRRetractFunc]{{Name: "reference", Fn: backend.QRRetractOp.Reference()}}
				fns = append(fns, backend.QRRetractOp.Kernels(b, x.Shape())...)
				for _, k := range fns {
					got := qrRun(t, b, k.Fn, x, nil, 0)
					st := checkQF(got, a, nil)
					t.Logf("%s: |QᵀQ−I| %.2e, min diag R %.3g, recon %.2e", k.Name, st.orth, st.minDiag, st.recon)
					if st.orth > 1e-12 || !(st.minDiag > 0) || st.recon > 1e-12 {
						t.Errorf("%s: |QᵀQ − I| %.3g, min diag R %.3g, ‖QR − A‖/‖A‖ %.3g", k.Name, st.orth, st.minDiag, st.recon)
					}
				}
			})
		}
	}

	t.Run("errors", func(t *testing.T) {
		x := upload(t, b, tensor.NewHost(2, 5, 3))
		defer b.Free(x)
		for _, bad := range []struct {
			name    string
			d, v    tensor.Shape
			operand string
		}{
			{"dst batch", tensor.Shape{Batch: 3, Rows: 5, Cols: 3}, tensor.Shape{Batch: 2, Rows: 5, Cols: 3}, "dst"},
			{"dst rows", tensor.Shape{Batch: 2, Rows: 4, Cols: 3}, tensor.Shape{Batch: 2, Rows: 5, Cols: 3}, "dst"},
			{"v cols", tensor.Shape{Batch: 2, Rows: 5, Cols: 3}, tensor.Shape{Batch: 2, Rows: 5, Cols: 2}, "v"},
			{"v batch", tensor.Shape{Batch: 2, Rows: 5, Cols: 3}, tensor.Shape{Batch: 3, Rows: 5, Cols: 3}, "v"},
		} {
			d, v := upload(t, b, tensor.NewHost(bad.d.Batch, bad.d.Rows, bad.d.Cols)), upload(t, b, tensor.NewHost(bad.v.Batch, bad.v.Rows, bad.v.Cols))
			geoSentinel(t, b, d, 7)
			err := backend.QRRetract(b, d, x, v, 1)
			wantErr(t, bad.name, err, backend.ErrShape, bad.operand, -1)
			geoUntouched(t, b, d, 7)
			b.Free(d)
			b.Free(v)
		}
		wantErr(t, "nil x", backend.QRRetract(b, x, nil, nil, 1), backend.ErrShape, "x", -1)
		wide := upload(t, b, tensor.NewHost(2, 3, 5))
		defer b.Free(wide)
		geoSentinel(t, b, wide, 7)
		wantErr(t, "p > n", backend.QRRetract(b, wide, wide, nil, 1), backend.ErrDomain, "x", -1)
		geoUntouched(t, b, wide, 7)
	})
}

// Benchmarks. Flop count: the conventional 4np² − 4p³/3 of a Householder QR with Q formed explicitly, plus 2np
// for X + tV, per matrix, whatever algorithm a kernel uses; bytes: x and v read, dst written (24np per matrix).
func benchStiefel(b *testing.B, be backend.Backend) {
	flops := func(s tensor.Shape) float64 {
		n, p := float64(s.Rows), float64(s.Cols)
		return float64(s.Batch) * (4*n*p*p - 4*p*p*p/3 + 2*n*p)
	}
	for _, c := range []struct {
		class string
		s     tensor.Shape
	}{{"small", tensor.Shape{Batch: 1000, Rows: 20, Cols: 20}}, {"medium", tensor.Shape{Batch: 10000, Rows: 100, Cols: 10}},
		{"large", tensor.Shape{Batch: 1, Rows: 1000000, Cols: 10}}, {"large", tensor.Shape{Batch: 1, Rows: 1000000, Cols: 100}}} {
		s := c.s
		b.Run(fmt.Sprintf("qr_retract/%s/%dx%dx%d", c.class, s.Batch, s.Rows, s.Cols), func(b *testing.B) {
			r := geoRNG(99)
			x, v := upload(b, be, randHost(r, s.Batch, s.Rows, s.Cols)), upload(b, be, randHost(r, s.Batch, s.Rows, s.Cols))
			dst, err := be.Alloc(s)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { be.Free(x); be.Free(v); be.Free(dst) }()
			_, kname := backend.QRRetractOp.Select(be, s)
			b.Logf("kernel %s", kname)
			b.ResetTimer()
			sec := secondsPerCall(b, be, func() error { return backend.QRRetract(be, dst, x, v, 0.1) })
			b.ReportMetric(flops(s)/sec/1e9, "GFLOP/s")
			b.ReportMetric(24*float64(s.Len()/s.Batch)*float64(s.Batch)/sec/1e9, "GB/s")
		})
	}
	// The floor to beat: a serial loop of one LAPACK QR (gonum lapack64 Geqrf + Orgqr, sign fix) per matrix, on host
	// memory, for the 10000 × (100×10) case.
	b.Run("qr_retract/medium/lapack-loop-10000x100x10", func(b *testing.B) {
		s := tensor.Shape{Batch: 10000, Rows: 100, Cols: 10}
		r := geoRNG(99)
		x, v := randHost(r, s.Batch, s.Rows, s.Cols), randHost(r, s.Batch, s.Rows, s.Cols)
		dst := tensor.NewHost(s.Batch, s.Rows, s.Cols)
		n, p := s.Rows, s.Cols
		tau := make([]float64, p)
		work := make([]float64, 1)
		probe := blas64.General{Rows: n, Cols: p, Stride: p, Data: make([]float64, n*p)}
		lapack64.Geqrf(probe, tau, work, -1)
		lw := int(work[0])
		lapack64.Orgqr(probe, tau, work, -1)
		work = make([]float64, max(lw, int(work[0])))
		sign := make([]float64, p)
		xs, vs, ds := x.Storage().Host(), v.Storage().Host(), dst.Storage().Host()
		b.ResetTimer()
		start := time.Now()
		for it := 0; it < b.N; it++ {
			for k := 0; k < s.Batch; k++ {
				a := ds[k*n*p : (k+1)*n*p]
				xk, vk := xs[k*n*p:(k+1)*n*p], vs[k*n*p:(k+1)*n*p]
				for i := range a {
					a[i] = xk[i] + 0.1*vk[i]
				}
				g := blas64.General{Rows: n, Cols: p, Stride: p, Data: a}
				lapack64.Geqrf(g, tau, work, len(work))
				for j := 0; j < p; j++ {
					sign[j] = math.Copysign(1, a[j*p+j])
				}
				lapack64.Orgqr(g, tau, work, len(work))
				for i := 0; i < n; i++ {
					for j := 0; j < p; j++ {
						a[i*p+j] *= sign[j]
					}
				}
			}
		}
		sec := time.Since(start).Seconds() / float64(b.N)
		b.ReportMetric(flops(s)/sec/1e9, "GFLOP/s")
		b.ReportMetric(24*float64(s.Len())/sec/1e9, "GB/s")
	})
}
