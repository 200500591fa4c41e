package backendtest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

func init() {
	register("memory", testMemory)
	register("gemm", testGemm)
	register("syrk", testSyrk)
	register("triangular", testTriangular)
	register("cholesky", testCholesky)
	register("qr", testQR)
	register("syev", testSyev)
	register("elementwise", testElementwise)
	register("reduce", testReduce)
	register("random", testRandom)
}

// opT returns element (i, j) of op(x) for matrix bb of a host tensor (batch 1 broadcast).
func opAt(x *tensor.Tensor, tr blas.Transpose, bb, i, j int) float64 {
	if x.Batch() == 1 {
		bb = 0
	}
	if tr == blas.NoTrans {
		return x.At(bb, i, j)
	}
	return x.At(bb, j, i)
}

func testMemory(t *testing.T, b backend.Backend) {
	r := rand.New(rand.NewPCG(1, 1))
	before := b.MemInUse()
	h := randHost(r, 3, 4, 5)
	d := upload(t, b, h)
	if got := b.MemInUse() - before; got != 3*4*5*8 {
		t.Errorf("MemInUse grew by %d bytes after a 3×4×5 allocation, want %d", got, 3*4*5*8)
	}
	near(t, "upload/download round trip", download(t, b, d), h, 0, 1)

	// A strided host view uploads as its logical elements.
	big := randHost(r, 2, 10, 10)
	view := big.Slice(2, 6, 3, 8)
	dv := upload(t, b, view)
	near(t, "strided upload", download(t, b, dv), view.Clone(), 0, 1)

	// Copy with broadcast of a batch-1 source.
	one := randHost(r, 1, 4, 5)
	if err := b.Copy(d, upload(t, b, one)); err != nil {
		t.Fatal(err)
	}
	got := download(t, b, d)
	for bb := 0; bb < 3; bb++ {
		near(t, "broadcast copy", got.Item(bb).Clone(), one, 0, 1)
	}

	// A shape mismatch is an ErrShape error and leaves the destination untouched.
	wrong := randHost(r, 3, 5, 4)
	if err := b.Upload(d, wrong); !errors.Is(err, backend.ErrShape) {
		t.Errorf("upload of %v into %v: err = %v, want ErrShape", wrong.Shape(), d.Shape(), err)
	}
	near(t, "destination after failed upload", download(t, b, d), got, 0, 1)
	// User data with a NaN: UploadFinite names the operand and element and leaves dst alone.
	bad := h.Clone()
	bad.Set(1, 2, 3, math.Inf(-1))
	err := backend.UploadFinite(b, d, bad, "data")
	var oe *backend.OpError
	if !errors.Is(err, backend.ErrNotFinite) || !errors.As(err, &oe) || oe.Operand != "data" || !strings.Contains(err.Error(), "[1, 2, 3]") {
		t.Errorf("UploadFinite of data with -Inf at [1, 2, 3]: err = %v", err)
	}
	near(t, "destination after refused upload", download(t, b, d), got, 0, 1)
	if err := backend.UploadFinite(b, d, h, "data"); err != nil {
		t.Errorf("UploadFinite of finite data: %v", err)
	}
	b.Free(d)
	b.Free(dv)
	b.Free(d) // twice is harmless
	if _, err := b.Alloc(tensor.Shape{Batch: -1, Rows: 2, Cols: 2}); !errors.Is(err, backend.ErrShape) {
		t.Errorf("Alloc with a negative dimension: err = %v, want ErrShape", err)
	}
	if err := b.Sync(); err != nil {
		t.Errorf("Sync: %v", err)
	}
}

// gemmRef computes alpha·op(A)·op(B) + beta·C in plain float64, and the scale Σ|a||b| + |beta c| per element.
func gemmRef(tA, tB blas.Transpose, alpha float64, a, bm *tensor.Tensor, beta float64, c *tensor.Tensor) (ref *tensor.Tensor, scale float64) {
	ref = c.Clone()
	m, n := c.Rows(), c.Cols()
	k := a.Cols()
	if tA != blas.NoTrans {
		k = a.Rows()
	}
	for bb := 0; bb < c.Batch(); bb++ {
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var s, sa float64
				for l := 0; l < k; l++ {
					p := opAt(a, tA, bb, i, l) * opAt(bm, tB, bb, l, j)
					s += p
					sa += math.Abs(p)
				}
				v := alpha * s
				if beta != 0 {
					v += beta * c.At(bb, i, j)
				}
				ref.Set(bb, i, j, v)
				scale = math.Max(scale, math.Abs(alpha)*sa+math.Abs(beta*c.At(bb, i, j)))
			}
		}
	}
	return ref, math.Max(scale, 1e-300)
}

func testGemm(t *testing.T, b backend.Backend) {
	r := rand.New(rand.NewPCG(2, 1))
	type cs struct{ batch, m, n, k, ba, bb int }
	cases := []cs{
		{1, 1, 1, 1, 1, 1}, {1, 3, 5, 4, 1, 1}, {7, 3, 5, 4, 7, 7}, {7, 3, 5, 4, 1, 7}, {7, 3, 5, 4, 7, 1},
		{1, 300, 20, 50, 1, 1},  // split over rows of C
		{1, 10, 500, 40, 1, 1},  // split over columns
		{1, 12, 9, 30000, 1, 1}, // split over the inner dimension (Gram matrices of tall factors)
		{10000, 2, 3, 2, 10000, 10000},
		{1, 0, 3, 2, 1, 1}, {1, 3, 2, 0, 1, 1},
	}
	for _, c := range cases {
		for _, tA := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
				name := fmt.Sprintf("%d×%d×%d batch %d (a %d, b %d) %c%c", c.m, c.n, c.k, c.batch, c.ba, c.bb, tA, tB)
				ar, ac := c.m, c.k
				if tA != blas.NoTrans {
					ar, ac = ac, ar
				}
				br, bc := c.k, c.n
				if tB != blas.NoTrans {
					br, bc = bc, br
				}
				ha, hb, hc := randHost(r, c.ba, ar, ac), randHost(r, c.bb, br, bc), randHost(r, c.batch, c.m, c.n)
				for _, ab := range [][2]float64{{1, 0}, {-0.7, 1.3}} {
					da, db, dc := upload(t, b, ha), upload(t, b, hb), upload(t, b, hc)
					if err := b.Gemm(tA, tB, ab[0], da, db, ab[1], dc); err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					ref, scale := gemmRef(tA, tB, ab[0], ha, hb, ab[1], hc)
					near(t, name, download(t, b, dc), ref, 1e-14*float64(c.k+1), scale)
					b.Free(da)
					b.Free(db)
					b.Free(dc)
				}
			}
		}
	}

	// beta = 0 must not read C: NaN there does not propagate.
	ha, hb := randHost(r, 1, 4, 3), randHost(r, 1, 3, 5)
	hc := tensor.NewHost(1, 4, 5)
	for i := range hc.Storage().Host() {
		hc.Storage().Host()[i] = math.NaN()
	}
	dc := upload(t, b, hc)
	if err := b.Gemm(blas.NoTrans, blas.NoTrans, 1, upload(t, b, ha), upload(t, b, hb), 0, dc); err != nil {
		t.Fatal(err)
	}
	ref, scale := gemmRef(blas.NoTrans, blas.NoTrans, 1, ha, hb, 0, tensor.NewHost(1, 4, 5))
	near(t, "beta = 0 over NaN", download(t, b, dc), ref, 1e-14, scale)

	// Operands that are strided views of larger tensors.
	big := randHost(r, 2, 20, 20)
	va, vb := big.Slice(1, 7, 2, 6), big.Slice(5, 9, 10, 19)
	hc = randHost(r, 2, 6, 9)
	dc = upload(t, b, hc)
	if err := b.Gemm(blas.NoTrans, blas.NoTrans, 1, upload(t, b, va), upload(t, b, vb), 1, dc); err != nil {
		t.Fatal(err)
	}
	ref, scale = gemmRef(blas.NoTrans, blas.NoTrans, 1, va, vb, 1, hc)
	near(t, "strided views", download(t, b, dc), ref, 1e-14, scale)

	// Bad shapes: ErrShape and C untouched.
	before := download(t, b, dc)
	bad := []struct {
		name    string
		a, bm   *tensor.Tensor
		wantErr error
	}{
		{"inner mismatch", randHost(r, 2, 6, 5), randHost(r, 2, 4, 9), backend.ErrShape},
		{"rows of c", randHost(r, 2, 5, 4), randHost(r, 2, 4, 9), backend.ErrShape},
		{"batch", randHost(r, 3, 6, 4), randHost(r, 2, 4, 9), backend.ErrShape},
	}
	for _, c := range bad {
		err := b.Gemm(blas.NoTrans, blas.NoTrans, 1, upload(t, b, c.a), upload(t, b, c.bm), 1, dc)
		if !errors.Is(err, c.wantErr) {
			t.Errorf("gemm with %s: err = %v, want %v", c.name, err, c.wantErr)
		}
		var oe *backend.OpError
		if !errors.As(err, &oe) || oe.Op != "gemm" {
			t.Errorf("gemm with %s: error %v is not an *OpError naming gemm", c.name, err)
		}
	}
	near(t, "c after failed gemm", download(t, b, dc), before, 0, 1)
}

func testSyrk(t *testing.T, b backend.Backend) {
	r := rand.New(rand.NewPCG(3, 1))
	for _, c := range []struct{ batch, n, k, ba int }{{1, 1, 1, 1}, {1, 5, 3, 1}, {4, 6, 9, 4}, {4, 6, 9, 1}, {1, 10, 40000, 1}, {1, 150, 60, 1}, {5000, 3, 2, 5000}} {
		for _, tr := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			name := fmt.Sprintf("n %d k %d batch %d/%d %c", c.n, c.k, c.batch, c.ba, tr)
			ar, ac := c.n, c.k
			if tr != blas.NoTrans {
				ar, ac = ac, ar
			}
			ha := randHost(r, c.ba, ar, ac)
			hc := randHost(r, c.batch, c.n, c.n)
			// Start from a symmetric C so that the reference is symmetric.
			for bb := 0; bb < c.batch; bb++ {
				for i := 0; i < c.n; i++ {
					for j := 0; j < i; j++ {
						hc.Set(bb, j, i, hc.At(bb, i, j))
					}
				}
			}
			da, dc := upload(t, b, ha), upload(t, b, hc)
			if err := b.Syrk(tr, 0.8, da, -0.5, dc); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			tB := blas.Trans
			if tr != blas.NoTrans {
				tB = blas.NoTrans
			}
			ref, scale := gemmRef(tr, tB, 0.8, ha, ha, -0.5, hc)
			near(t, name, download(t, b, dc), ref, 1e-14*float64(c.k+1), scale)
			b.Free(da)
			b.Free(dc)
		}
	}
	// beta = 0: C is not read, so a NaN in it does not survive.
	for _, tr := range []blas.Transpose{blas.NoTrans, blas.Trans} {
		ha := randHost(r, 2, 5, 5)
		hc := tensor.NewHost(2, 5, 5)
		for i := range hc.Storage().Host() {
			hc.Storage().Host()[i] = math.NaN()
		}
		da, dc := upload(t, b, ha), upload(t, b, hc)
		if err := b.Syrk(tr, 1, da, 0, dc); err != nil {
			t.Fatal(err)
		}
		tB := blas.Trans
		if tr != blas.NoTrans {
			tB = blas.NoTrans
		}
		ref, scale := gemmRef(tr, tB, 1, ha, ha, 0, tensor.NewHost(2, 5, 5))
		near(t, fmt.Sprintf("syrk beta 0 over NaN %c", tr), download(t, b, dc), ref, 1e-14*6, scale)
		b.Free(da)
		b.Free(dc)
	}
	if err := b.Syrk(blas.NoTrans, 1, upload(t, b, randHost(r, 1, 4, 3)), 0, upload(t, b, randHost(r, 1, 3, 3))); !errors.Is(err, backend.ErrShape) {
		t.Errorf("syrk with a 4×3 factor into 3×3: err = %v, want ErrShape", err)
	}
}

// randTri returns a well-conditioned triangular host matrix batch (diagonal in [1, 2], off-diagonal small) with the
// other triangle filled with garbage that must not be read.
func randTri(r *rand.Rand, batch, n int, ul blas.Uplo) *tensor.Tensor {
	h := tensor.NewHost(batch, n, n)
	for bb := 0; bb < batch; bb++ {
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				switch {
				case i == j:
					h.Set(bb, i, j, 1+r.Float64())
				case (i > j) == (ul == blas.Lower):
					h.Set(bb, i, j, (2*r.Float64()-1)/float64(n))
				default:
					h.Set(bb, i, j, 1e6*(r.Float64()+1))
				}
			}
		}
	}
	return h
}

// triDense returns the triangle of a as a full matrix batch with the other triangle zero (and a unit diagonal for
// blas.Unit).
func triDense(a *tensor.Tensor, ul blas.Uplo, d blas.Diag) *tensor.Tensor {
	h := a.Clone()
	n := a.Rows()
	for bb := 0; bb < a.Batch(); bb++ {
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if (i != j && (i > j) != (ul == blas.Lower)) || false {
					h.Set(bb, i, j, 0)
				}
				if i == j && d == blas.Unit {
					h.Set(bb, i, j, 1)
				}
			}
		}
	}
	return h
}

func testTriangular(t *testing.T, b backend.Backend) {
	r := rand.New(rand.NewPCG(4, 1))
	for _, c := range []struct{ batch, n, other, ba int }{{1, 1, 1, 1}, {3, 5, 4, 3}, {3, 5, 4, 1}, {1, 40, 2000, 1}, {2000, 3, 2, 2000}} {
		for _, side := range []blas.Side{blas.Left, blas.Right} {
			for _, ul := range []blas.Uplo{blas.Lower, blas.Upper} {
				for _, tr := range []blas.Transpose{blas.NoTrans, blas.Trans} {
					for _, dg := range []blas.Diag{blas.NonUnit, blas.Unit} {
						name := fmt.Sprintf("n %d other %d batch %d/%d %c%c%c%c", c.n, c.other, c.batch, c.ba, side, ul, tr, dg)
						ha := randTri(r, c.ba, c.n, ul)
						br, bc := c.n, c.other
						if side == blas.Right {
							br, bc = bc, br
						}
						hb := randHost(r, c.batch, br, bc)
						full := triDense(ha, ul, dg)
						// Trmm against the dense product.
						da, db := upload(t, b, ha), upload(t, b, hb)
						if err := b.Trmm(side, ul, tr, dg, 1.5, da, db); err != nil {
							t.Fatalf("trmm %s: %v", name, err)
						}
						var ref *tensor.Tensor
						var scale float64
						if side == blas.Left {
							ref, scale = gemmRef(tr, blas.NoTrans, 1.5, full, hb, 0, tensor.NewHost(c.batch, br, bc))
						} else {
							ref, scale = gemmRef(blas.NoTrans, tr, 1.5, hb, full, 0, tensor.NewHost(c.batch, br, bc))
						}
						prod := download(t, b, db)
						near(t, "trmm "+name, prod, ref, 1e-14*float64(c.n+1), scale)
						// Trsm undoes it: solving with the product as right-hand side returns B.
						if err := b.Trsm(side, ul, tr, dg, 1/1.5, da, db); err != nil {
							t.Fatalf("trsm %s: %v", name, err)
						}
						near(t, "trsm "+name, download(t, b, db), hb, 1e-12, 1)
						b.Free(da)
						b.Free(db)
					}
				}
			}
		}
	}
	if err := b.Trsm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, upload(t, b, randTri(r, 1, 3, blas.Lower)), upload(t, b, randHost(r, 1, 4, 2))); !errors.Is(err, backend.ErrShape) {
		t.Errorf("trsm of a 3×3 factor against 4 rows: err = %v, want ErrShape", err)
	}
}

// randSPD returns SPD matrices Q·diag(λ)·Qᵀ with eigenvalues spread geometrically from 1 to cond.
func randSPD(r *rand.Rand, batch, n int, cond float64) *tensor.Tensor {
	h := tensor.NewHost(batch, n, n)
	for bb := 0; bb < batch; bb++ {
		q := randOrtho(r, n)
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				var s float64
				for k := 0; k < n; k++ {
					lam := 1.0
					if n > 1 {
						lam = math.Pow(cond, float64(k)/float64(n-1))
					}
					s += q[i][k] * lam * q[j][k]
				}
				h.Set(bb, i, j, s)
				h.Set(bb, j, i, s)
			}
		}
	}
	return h
}

// randOrtho returns a random orthogonal n×n matrix (Gram–Schmidt twice on a Gaussian matrix).
func randOrtho(r *rand.Rand, n int) [][]float64 {
	q := make([][]float64, n)
	for i := range q {
		q[i] = make([]float64, n)
		for j := range q[i] {
			q[i][j] = r.NormFloat64()
		}
	}
	// Orthonormalise the columns.
	for j := 0; j < n; j++ {
		for pass := 0; pass < 2; pass++ {
			for k := 0; k < j; k++ {
				var d float64
				for i := 0; i < n; i++ {
					d += q[i][k] * q[i][j]
				}
				for i := 0; i < n; i++ {
					q[i][j] -= d * q[i][k]
				}
			}
		}
		var nr float64
		for i := 0; i < n; i++ {
			nr += q[i][j] * q[i][j]
		}
		nr = math.Sqrt(nr)
		for i := 0; i < n; i++ {
			q[i][j] /= nr
		}
	}
	return q
}

func testCholesky(t *testing.T, b backend.Backend) {
	r := rand.New(rand.NewPCG(5, 1))
	for _, c := range []struct {
		batch, n int
		cond     float64
	}{{1, 1, 1}, {5, 4, 10}, {3, 48, 1e4}, {3, 49, 1e4}, {1, 120, 1e8}, {10000, 3, 100}} {
		name := fmt.Sprintf("n %d batch %d cond %.0e", c.n, c.batch, c.cond)
		ha := randSPD(r, c.batch, c.n, c.cond)
		da := upload(t, b, ha)
		if err := b.Potrf(da); err != nil {
			t.Fatalf("potrf %s: %v", name, err)
		}
		l := download(t, b, da)
		for bb := 0; bb < c.batch; bb++ {
			for i := 0; i < c.n; i++ {
				if l.At(bb, i, i) <= 0 {
					t.Fatalf("potrf %s: L[%d][%d,%d] = %v not positive", name, bb, i, i, l.At(bb, i, i))
				}
				for j := i + 1; j < c.n; j++ {
					if l.At(bb, i, j) != 0 {
						t.Fatalf("potrf %s: upper triangle not zeroed at [%d][%d,%d]", name, bb, i, j)
					}
				}
			}
		}
		llt, _ := gemmRef(blas.NoTrans, blas.Trans, 1, l, l, 0, tensor.NewHost(c.batch, c.n, c.n))
		// Backward stability of Cholesky: ‖LLᵀ − A‖ ≤ c·n·ε‖A‖ whatever the condition number.
		near(t, "L·Lᵀ = A "+name, llt, ha, 1e-15*float64(c.n+4), c.cond)
		// Potrs: residual of A·X = B relative to ‖A‖‖X‖.
		hb := randHost(r, c.batch, c.n, 3)
		db := upload(t, b, hb)
		if err := b.Potrs(da, db); err != nil {
			t.Fatalf("potrs %s: %v", name, err)
		}
		x := download(t, b, db)
		ax, _ := gemmRef(blas.NoTrans, blas.NoTrans, 1, ha, x, 0, tensor.NewHost(c.batch, c.n, 3))
		near(t, "A·X = B "+name, ax, hb, 1e-15*float64(c.n+4), c.cond*math.Max(1, maxAbs(x)))
		b.Free(da)
		b.Free(db)
	}
	// A matrix that is not positive definite is reported with its batch index.
	ha := randSPD(r, 4, 5, 10)
	ha.Set(2, 3, 3, -1)
	err := b.Potrf(upload(t, b, ha))
	var oe *backend.OpError
	if !errors.Is(err, backend.ErrNotPositiveDefinite) || !errors.As(err, &oe) || oe.Batch != 2 {
		t.Errorf("potrf of a batch whose item 2 is indefinite: err = %v, want ErrNotPositiveDefinite naming batch 2", err)
	}
	if err := b.Potrf(upload(t, b, randHost(r, 1, 3, 4))); !errors.Is(err, backend.ErrShape) {
		t.Errorf("potrf of 3×4: err = %v, want ErrShape", err)
	}
}

func testQR(t *testing.T, b backend.Backend) {
	r := rand.New(rand.NewPCG(6, 1))
	for _, c := range []struct{ batch, n, p int }{{1, 1, 1}, {3, 5, 5}, {4, 7, 3}, {1, 200000, 4}, {10000, 6, 3}, {2, 60, 1}} {
		name := fmt.Sprintf("%d×%d batch %d", c.n, c.p, c.batch)
		ha := randHost(r, c.batch, c.n, c.p)
		da := upload(t, b, ha)
		dq, _ := b.Alloc(ha.Shape())
		dr, _ := b.Alloc(tensor.Shape{Batch: c.batch, Rows: c.p, Cols: c.p})
		if err := b.QR(dq, dr, da); err != nil {
			t.Fatalf("qr %s: %v", name, err)
		}
		q, rr := download(t, b, dq), download(t, b, dr)
		eye := tensor.NewHost(c.batch, c.p, c.p)
		for bb := 0; bb < c.batch; bb++ {
			for i := 0; i < c.p; i++ {
				eye.Set(bb, i, i, 1)
				if rr.At(bb, i, i) <= 0 {
					t.Fatalf("qr %s: R[%d][%d,%d] = %v, want > 0", name, bb, i, i, rr.At(bb, i, i))
				}
				for j := 0; j < i; j++ {
					if rr.At(bb, i, j) != 0 {
						t.Fatalf("qr %s: R not upper triangular", name)
					}
				}
			}
		}
		qtq, _ := gemmRef(blas.Trans, blas.NoTrans, 1, q, q, 0, tensor.NewHost(c.batch, c.p, c.p))
		near(t, "QᵀQ = I "+name, qtq, eye, 1e-12, 1)
		qr, scale := gemmRef(blas.NoTrans, blas.NoTrans, 1, q, rr, 0, tensor.NewHost(c.batch, c.n, c.p))
		near(t, "Q·R = A "+name, qr, ha, 1e-13, math.Max(scale, 1))
		// In place (q aliasing a), without R.
		if err := b.QR(da, nil, da); err != nil {
			t.Fatalf("qr in place %s: %v", name, err)
		}
		near(t, "in-place Q "+name, download(t, b, da), q, 1e-13, 1)
		b.Free(da)
		b.Free(dq)
		b.Free(dr)
	}
	ha := randHost(r, 1, 3, 5)
	if err := b.QR(upload(t, b, ha), nil, upload(t, b, ha)); !errors.Is(err, backend.ErrDomain) {
		t.Errorf("qr of 3×5 (p > n): err = %v, want ErrDomain", err)
	}
}

func testSyev(t *testing.T, b backend.Backend) {
	r := rand.New(rand.NewPCG(7, 1))
	for _, c := range []struct {
		batch, n int
		cond     float64
	}{{1, 1, 1}, {4, 6, 100}, {1, 60, 1e8}, {2000, 3, 10}} {
		name := fmt.Sprintf("n %d batch %d", c.n, c.batch)
		ha := randSPD(r, c.batch, c.n, c.cond)
		// Make it indefinite: shift by the middle of the spectrum.
		for bb := 0; bb < c.batch; bb++ {
			for i := 0; i < c.n; i++ {
				ha.Set(bb, i, i, ha.At(bb, i, i)-math.Sqrt(c.cond))
			}
		}
		da := upload(t, b, ha)
		dw, _ := b.Alloc(tensor.Shape{Batch: c.batch, Rows: c.n, Cols: 1})
		dv, _ := b.Alloc(ha.Shape())
		if err := b.Syev(dw, dv, da); err != nil {
			t.Fatalf("syev %s: %v", name, err)
		}
		w, v := download(t, b, dw), download(t, b, dv)
		norm := c.cond
		for bb := 0; bb < c.batch; bb++ {
			for i := 1; i < c.n; i++ {
				if w.At(bb, i, 0) < w.At(bb, i-1, 0) {
					t.Fatalf("syev %s: eigenvalues not ascending", name)
				}
			}
		}
		av, _ := gemmRef(blas.NoTrans, blas.NoTrans, 1, ha, v, 0, tensor.NewHost(c.batch, c.n, c.n))
		vl := v.Clone()
		for bb := 0; bb < c.batch; bb++ {
			for i := 0; i < c.n; i++ {
				for j := 0; j < c.n; j++ {
					vl.Set(bb, i, j, v.At(bb, i, j)*w.At(bb, j, 0))
				}
			}
		}
		near(t, "A·V = V·Λ "+name, av, vl, 1e-14*float64(c.n+4), norm)
		eye := tensor.NewHost(c.batch, c.n, c.n)
		for bb := 0; bb < c.batch; bb++ {
			for i := 0; i < c.n; i++ {
				eye.Set(bb, i, i, 1)
			}
		}
		vtv, _ := gemmRef(blas.Trans, blas.NoTrans, 1, v, v, 0, tensor.NewHost(c.batch, c.n, c.n))
		near(t, "VᵀV = I "+name, vtv, eye, 1e-12, 1)
		// Eigenvalues only.
		dw2, _ := b.Alloc(tensor.Shape{Batch: c.batch, Rows: c.n, Cols: 1})
		if err := b.Syev(dw2, nil, da); err != nil {
			t.Fatalf("syev values only %s: %v", name, err)
		}
		near(t, "values without vectors "+name, download(t, b, dw2), w, 1e-13, norm)
	}
}

func testElementwise(t *testing.T, b backend.Backend) {
	r := rand.New(rand.NewPCG(8, 1))
	hx, hy := randHost(r, 3, 17, 9), randHost(r, 3, 17, 9)
	h1 := randHost(r, 1, 17, 9)
	dx, dy, d1 := upload(t, b, hx), upload(t, b, hy), upload(t, b, h1)
	dst, _ := b.Alloc(hx.Shape())
	elem := func(name string, f func(bb, i, j int) float64) {
		t.Helper()
		want := tensor.NewHost(3, 17, 9)
		for bb := 0; bb < 3; bb++ {
			for i := 0; i < 17; i++ {
				for j := 0; j < 9; j++ {
					want.Set(bb, i, j, f(bb, i, j))
				}
			}
		}
		near(t, name, download(t, b, dst), want, 1e-15, math.Max(1, maxAbs(want)))
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.Fill(dst, 2.5))
	elem("fill", func(bb, i, j int) float64 { return 2.5 })
	must(b.Axpby(dst, 2, dx, -3, dy))
	elem("axpby", func(bb, i, j int) float64 { return 2*hx.At(bb, i, j) - 3*hy.At(bb, i, j) })
	must(b.Axpby(dst, 2, dx, 0, nil))
	elem("axpby y=nil", func(bb, i, j int) float64 { return 2 * hx.At(bb, i, j) })
	must(b.Axpby(dst, 1, d1, 1, dy))
	elem("axpby broadcast", func(bb, i, j int) float64 { return h1.At(0, i, j) + hy.At(bb, i, j) })
	must(b.Mul(dst, dx, dy))
	elem("mul", func(bb, i, j int) float64 { return hx.At(bb, i, j) * hy.At(bb, i, j) })
	must(b.Div(dst, dx, d1))
	elem("div broadcast", func(bb, i, j int) float64 { return hx.At(bb, i, j) / h1.At(0, i, j) })
	// Map: every function against package math (inputs scaled into each domain).
	for f := backend.Identity; f <= backend.Step; f++ {
		alpha := 3.0
		if f == backend.Sqrt || f == backend.Log || f == backend.Log1p {
			must(b.Map(dst, backend.Abs, 1, dx))
			must(b.Map(dst, f, 0.9, dst))
			elem("map "+f.String(), func(bb, i, j int) float64 { return refUnary(f, 0.9*math.Abs(hx.At(bb, i, j))) })
			continue
		}
		must(b.Map(dst, f, alpha, dx))
		elem("map "+f.String(), func(bb, i, j int) float64 { return refUnary(f, alpha*hx.At(bb, i, j)) })
	}
	// Extreme arguments of the guarded functions.
	ext := tensor.NewHost(1, 1, 6)
	for j, v := range []float64{-800, -40, 0, 1e-9, 40, 800} {
		ext.Set(0, 0, j, v)
	}
	de := upload(t, b, ext)
	do, _ := b.Alloc(ext.Shape())
	for _, f := range []backend.UnaryOp{backend.Sigmoid, backend.Softplus, backend.Sinc, backend.Step} {
		must(b.Map(do, f, 1, de))
		got := download(t, b, do)
		for j := 0; j < 6; j++ {
			want := refUnary(f, ext.At(0, 0, j))
			if g := got.At(0, 0, j); math.IsNaN(g) || math.Abs(g-want) > 1e-15*math.Max(1, math.Abs(want)) {
				t.Errorf("map %v(%v) = %v, want %v", f, ext.At(0, 0, j), g, want)
			}
		}
	}
	// Step keeps NaN (a NaN must not be masked away) and maps −0 to 1 like +0.
	ext.Set(0, 0, 0, math.NaN())
	ext.Set(0, 0, 1, math.Copysign(0, -1))
	de = upload(t, b, ext)
	must(b.Map(do, backend.Step, 1, de))
	if got := download(t, b, do); !math.IsNaN(got.At(0, 0, 0)) || got.At(0, 0, 1) != 1 {
		t.Errorf("map step(NaN, −0) = %v, %v, want NaN, 1", got.At(0, 0, 0), got.At(0, 0, 1))
	}
	// Row and column scaling, row dots.
	hv := randHost(r, 3, 17, 1)
	hc := randHost(r, 1, 1, 9)
	must(b.ScaleRows(dst, dx, upload(t, b, hv)))
	elem("scale rows", func(bb, i, j int) float64 { return hx.At(bb, i, j) * hv.At(bb, i, 0) })
	must(b.ScaleCols(dst, dx, upload(t, b, hc)))
	elem("scale cols broadcast", func(bb, i, j int) float64 { return hx.At(bb, i, j) * hc.At(0, 0, j) })
	drd, _ := b.Alloc(tensor.Shape{Batch: 3, Rows: 17, Cols: 1})
	must(b.RowDots(drd, dx, dy))
	rd := download(t, b, drd)
	for bb := 0; bb < 3; bb++ {
		for i := 0; i < 17; i++ {
			var s float64
			for j := 0; j < 9; j++ {
				s += hx.At(bb, i, j) * hy.At(bb, i, j)
			}
			if math.Abs(rd.At(bb, i, 0)-s) > 1e-14*9 {
				t.Fatalf("row dots [%d,%d] = %v, want %v", bb, i, rd.At(bb, i, 0), s)
			}
		}
	}
	// Square-matrix helpers.
	hs := randHost(r, 4, 6, 6)
	ds := upload(t, b, hs)
	must(b.AddDiag(ds, 1.5))
	must(b.Symmetrize(ds))
	sym := download(t, b, ds)
	for bb := 0; bb < 4; bb++ {
		for i := 0; i < 6; i++ {
			for j := 0; j < 6; j++ {
				want := 0.5 * (hs.At(bb, i, j) + hs.At(bb, j, i))
				if i == j {
					want += 1.5
				}
				if math.Abs(sym.At(bb, i, j)-want) > 1e-15 || sym.At(bb, i, j) != sym.At(bb, j, i) {
					t.Fatalf("add_diag+symmetrize [%d,%d,%d] = %v, want %v (exactly symmetric)", bb, i, j, sym.At(bb, i, j), want)
				}
			}
		}
	}
	dtr, _ := b.Alloc(tensor.Shape{Batch: 3, Rows: 9, Cols: 17})
	must(b.Transpose(dtr, dx))
	tr := download(t, b, dtr)
	for bb := 0; bb < 3; bb++ {
		for i := 0; i < 17; i++ {
			for j := 0; j < 9; j++ {
				if tr.At(bb, j, i) != hx.At(bb, i, j) {
					t.Fatalf("transpose wrong at [%d,%d,%d]", bb, i, j)
				}
			}
		}
	}
	// Matrices of several thousand elements (longer than the CPU backend's 4096-element flat pieces, not a
	// multiple of them), contiguous, broadcast and as strided views (operand and destination).
	{
		const n, c = 3001, 3
		hb, hb1, hw := randHost(r, 2, n, c), randHost(r, 1, n, c), randHost(r, 2, n, c+2)
		db, db1, dw := upload(t, b, hb), upload(t, b, hb1), upload(t, b, hw)
		dv := dw.Slice(0, n, 1, 1+c) // columns 1..c of an n×(c+2) matrix: row stride c+2
		dbig, _ := b.Alloc(hb.Shape())
		check := func(name string, got *tensor.Tensor, f func(bb, i, j int) float64) {
			t.Helper()
			want := tensor.NewHost(2, n, c)
			for bb := 0; bb < 2; bb++ {
				for i := 0; i < n; i++ {
					for j := 0; j < c; j++ {
						want.Set(bb, i, j, f(bb, i, j))
					}
				}
			}
			near(t, name, got, want, 1e-15, math.Max(1, maxAbs(want)))
		}
		must(b.Axpby(dbig, 2, db, -1, db1))
		check("axpby long, broadcast", download(t, b, dbig), func(bb, i, j int) float64 { return 2*hb.At(bb, i, j) - hb1.At(0, i, j) })
		must(b.Mul(dbig, dv, db))
		check("mul long, strided operand", download(t, b, dbig), func(bb, i, j int) float64 { return hw.At(bb, i, j+1) * hb.At(bb, i, j) })
		must(b.Copy(dbig, db1))
		check("copy long, broadcast", download(t, b, dbig), func(bb, i, j int) float64 { return hb1.At(0, i, j) })
		must(b.Map(dv, backend.Square, 1, db))
		got := download(t, b, dw)
		check("map long into a strided view", got.Slice(0, n, 1, 1+c), func(bb, i, j int) float64 { return hb.At(bb, i, j) * hb.At(bb, i, j) })
		for bb := 0; bb < 2; bb++ {
			for i := 0; i < n; i++ {
				if got.At(bb, i, 0) != hw.At(bb, i, 0) || got.At(bb, i, c+1) != hw.At(bb, i, c+1) {
					t.Fatalf("map into a strided view wrote outside it at [%d,%d]", bb, i)
				}
			}
		}
		must(b.Fill(dv, 0.5))
		check("fill long strided", download(t, b, dv), func(bb, i, j int) float64 { return 0.5 })
	}
	// Bad shapes.
	before := download(t, b, dst)
	if err := b.Mul(dst, dx, upload(t, b, randHost(r, 3, 17, 8))); !errors.Is(err, backend.ErrShape) {
		t.Errorf("mul with a 17×8 operand into 17×9: err = %v, want ErrShape", err)
	}
	if err := b.ScaleRows(dst, dx, upload(t, b, randHost(r, 3, 16, 1))); !errors.Is(err, backend.ErrShape) {
		t.Errorf("scale_rows with 16 scales for 17 rows: err = %v, want ErrShape", err)
	}
	if err := b.Map(dst, backend.UnaryOp(999), 1, dx); err == nil {
		t.Errorf("map with an unknown function: no error")
	}
	near(t, "dst after failed calls", download(t, b, dst), before, 0, 1)
}

// refUnary is the independent float64 reference of each UnaryOp.
func refUnary(f backend.UnaryOp, x float64) float64 {
	switch f {
	case backend.Identity:
		return x
	case backend.Neg:
		return -x
	case backend.Abs:
		return math.Abs(x)
	case backend.Square:
		return x * x
	case backend.Sqrt:
		return math.Sqrt(x)
	case backend.Recip:
		return 1 / x
	case backend.Exp:
		return math.Exp(x)
	case backend.Log:
		return math.Log(x)
	case backend.Log1p:
		return math.Log1p(x)
	case backend.Sigmoid:
		return 0.5 * (1 + math.Tanh(x/2))
	case backend.Softplus:
		if x > 30 {
			return x + math.Exp(-x)
		}
		return math.Log1p(math.Exp(x))
	case backend.Tanh:
		return math.Tanh(x)
	case backend.Sin:
		return math.Sin(x)
	case backend.Cos:
		return math.Cos(x)
	case backend.Sinc:
		if x == 0 {
			return 1
		}
		return math.Sin(x) / x
	case backend.Step:
		if math.IsNaN(x) {
			return x
		}
		if x >= 0 {
			return 1
		}
		return 0
	}
	panic("unknown unary op")
}

func testReduce(t *testing.T, b backend.Backend) {
	r := rand.New(rand.NewPCG(9, 1))
	for _, s := range []tensor.Shape{{Batch: 1, Rows: 1, Cols: 1}, {Batch: 3, Rows: 7, Cols: 5}, {Batch: 1, Rows: 100000, Cols: 3}} {
		hx := randHost(r, s.Batch, s.Rows, s.Cols)
		dx := upload(t, b, hx)
		for _, op := range []backend.ReduceOp{backend.ReduceSum, backend.ReduceMax, backend.ReduceMin, backend.ReduceSumSq} {
			for _, ax := range []backend.Axis{backend.AxisAll, backend.AxisRows, backend.AxisCols} {
				ws := tensor.Shape{Batch: s.Batch, Rows: 1, Cols: 1}
				if ax == backend.AxisRows {
					ws.Cols = s.Cols
				}
				if ax == backend.AxisCols {
					ws.Rows = s.Rows
				}
				want := tensor.NewHost(ws.Batch, ws.Rows, ws.Cols)
				seen := tensor.NewHost(ws.Batch, ws.Rows, ws.Cols)
				for bb := 0; bb < s.Batch; bb++ {
					for ii := 0; ii < s.Rows; ii++ {
						for jj := 0; jj < s.Cols; jj++ {
							i, j := 0, 0
							if ax == backend.AxisRows {
								j = jj
							}
							if ax == backend.AxisCols {
								i = ii
							}
							v, acc := hx.At(bb, ii, jj), want.At(bb, i, j)
							first := seen.At(bb, i, j) == 0
							seen.Set(bb, i, j, 1)
							switch op {
							case backend.ReduceSum:
								acc += v
							case backend.ReduceSumSq:
								acc += v * v
							case backend.ReduceMax:
								if first || v > acc {
									acc = v
								}
							case backend.ReduceMin:
								if first || v < acc {
									acc = v
								}
							}
							want.Set(bb, i, j, acc)
						}
					}
				}
				dd, _ := b.Alloc(ws)
				if err := b.Reduce(dd, op, ax, dx); err != nil {
					t.Fatalf("reduce %v op %d axis %d: %v", s, op, ax, err)
				}
				near(t, fmt.Sprintf("reduce %v op %d axis %d", s, op, ax), download(t, b, dd), want, 1e-15*math.Sqrt(float64(s.Len())), math.Max(1, float64(s.Rows)))
				b.Free(dd)
			}
		}
	}
	// A NaN makes every reduction over it NaN (max and min too, which callers use to find non-finite entries) and
	// leaves the others finite.
	hn := randHost(r, 2, 3, 4)
	hn.Set(1, 2, 1, math.NaN())
	dn := upload(t, b, hn)
	for _, op := range []backend.ReduceOp{backend.ReduceSum, backend.ReduceMax, backend.ReduceMin, backend.ReduceSumSq} {
		for _, c := range []struct {
			ax         backend.Axis
			rows, cols int
			i, j       int // the output over the NaN in item 1
		}{{backend.AxisAll, 1, 1, 0, 0}, {backend.AxisRows, 1, 4, 0, 1}, {backend.AxisCols, 3, 1, 2, 0}} {
			dd, _ := b.Alloc(tensor.Shape{Batch: 2, Rows: c.rows, Cols: c.cols})
			if err := b.Reduce(dd, op, c.ax, dn); err != nil {
				t.Fatalf("reduce with a NaN, op %d axis %d: %v", op, c.ax, err)
			}
			got := download(t, b, dd)
			for bb := range 2 {
				for i := range c.rows {
					for j := range c.cols {
						over := bb == 1 && i == c.i && j == c.j
						if v := got.At(bb, i, j); math.IsNaN(v) != over {
							t.Errorf("reduce with a NaN at [1,2,1], op %d axis %d: [%d,%d,%d] = %v", op, c.ax, bb, i, j, v)
						}
					}
				}
			}
			b.Free(dd)
		}
	}
	bad, _ := b.Alloc(tensor.Shape{Batch: 1, Rows: 2, Cols: 1})
	if err := b.Reduce(bad, backend.ReduceSum, backend.AxisAll, upload(t, b, randHost(r, 1, 2, 2))); !errors.Is(err, backend.ErrShape) {
		t.Errorf("reduce all into 2×1: err = %v, want ErrShape", err)
	}
}

func testRandom(t *testing.T, b backend.Backend) {
	c := rng.Counter{Seed: 12345, Stream: 3, Offset: 5}
	for _, s := range []tensor.Shape{{Batch: 1, Rows: 1, Cols: 1}, {Batch: 2, Rows: 33, Cols: 7}, {Batch: 1, Rows: 1000, Cols: 101}} {
		d, _ := b.Alloc(s)
		if err := b.FillNormal(d, c); err != nil {
			t.Fatal(err)
		}
		gn := download(t, b, d)
		if err := b.FillUniform(d, c); err != nil {
			t.Fatal(err)
		}
		gu := download(t, b, d)
		k := uint64(0)
		for bb := 0; bb < s.Batch; bb++ {
			for i := 0; i < s.Rows; i++ {
				for j := 0; j < s.Cols; j++ {
					// Uniforms and normals are bit-identical on every backend (see package rng).
					if gu.At(bb, i, j) != c.Uniform(k) {
						t.Fatalf("uniform %v [%d,%d,%d] = %v, want %v", s, bb, i, j, gu.At(bb, i, j), c.Uniform(k))
					}
					if w := c.Normal(k); gn.At(bb, i, j) != w {
						t.Fatalf("normal %v [%d,%d,%d] = %v, want %v", s, bb, i, j, gn.At(bb, i, j), w)
					}
					k++
				}
			}
		}
		b.Free(d)
	}
}
