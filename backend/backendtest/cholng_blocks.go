package backendtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// Conformance of the batched block operations of the sparse Cholesky-factor families (backend/cholng_blocks.go;
// paper 003 Algs 1c/2c): BlockLower, BlockUpper, BlockCoupledTri, BlockTriNorm2, BlockLogAbsDiag against
// plain float64 loops (triangular solves by gonum's TriDense), and every registered kernel against the same loops
// and against the operation's reference. Cases cover batch-1 broadcast of each operand, broadcast views (batch
// stride 0), strided views (row and batch strides larger than packed), dst aliasing x where allowed, batches that
// span several chunks of the CPU kernels, and bad shapes.

func init() {
	register("cholng_blocks", testCholNGBlocks)
	registerBench("cholng_blocks", benchCholNGBlocks)
}

// blkCase is one test configuration: n items of r×r diagonal blocks with q×r coupling blocks; the b… fields are the
// batches of the operands (1 = broadcast); strided stores every operand in a padded view; bcast gives l as a
// Broadcast view (batch n, batch stride 0) instead of batch 1.
type blkCase struct {
	n, r, q            int
	bl, bm, bx, by, bc int
	strided, bcast     bool
}

func (c blkCase) String() string {
	s := fmt.Sprintf("n=%d,r=%d,q=%d/l%d,m%d,x%d,y%d,c%d", c.n, c.r, c.q, c.bl, c.bm, c.bx, c.by, c.bc)
	if c.strided {
		s += "/strided"
	}
	if c.bcast {
		s += "/bcast-view"
	}
	return s
}

// blkHost holds the host operands of a case.
type blkHost struct {
	l, m, x, y, c, s0 *tensor.Tensor
}

// blkLowerHost returns lower-triangular blocks with diagonal magnitudes in [0.5, 1.5] of mixed sign (Lemma 1
// needs only an invertible Λ), off-diagonal entries 0.3·N(0, 1) and NaN above the diagonal (which must not be read).
func blkLowerHost(r *rand.Rand, n, d int) *tensor.Tensor {
	h := tensor.NewHost(n, d, d)
	for i := 0; i < n; i++ {
		for a := 0; a < d; a++ {
			for k := 0; k < d; k++ {
				switch {
				case k > a:
					h.Set(i, a, k, math.NaN())
				case k == a:
					v := 0.5 + r.Float64()
					if r.IntN(2) == 0 {
						v = -v
					}
					h.Set(i, a, k, v)
				default:
					h.Set(i, a, k, 0.3*r.NormFloat64())
				}
			}
		}
	}
	return h
}

func blkNormalHost(r *rand.Rand, n, rows, cols int) *tensor.Tensor {
	h := tensor.NewHost(n, rows, cols)
	d := h.Storage().Host()
	for i := range d {
		d[i] = r.NormFloat64()
	}
	return h
}

func newBlkHost(c blkCase, seed uint64) blkHost {
	r := geoRNG(seed)
	return blkHost{
		l:  blkLowerHost(r, c.bl, c.r),
		m:  blkNormalHost(r, c.bm, c.q, c.r),
		x:  blkNormalHost(r, c.bx, c.r, 1),
		y:  blkNormalHost(r, c.by, c.r, 1),
		c:  blkNormalHost(r, c.bc, c.q, 1),
		s0: blkNormalHost(r, 1, c.q, 1),
	}
}

// blkDev is a backend copy of a host operand: view is what the operation sees, base what to free.
type blkDev struct{ view, base *tensor.Tensor }

// blkUpload copies h into backend memory, into a padded strided view when strided (rows and columns padded, so the
// row stride exceeds the column count and the batch stride exceeds rows × row stride).
func blkUpload(t testing.TB, b backend.Backend, h *tensor.Tensor, strided bool) blkDev {
	t.Helper()
	s := h.Shape()
	if !strided {
		d := upload(t, b, h)
		return blkDev{d, d}
	}
	base, err := b.Alloc(tensor.Shape{Batch: s.Batch, Rows: s.Rows + 1, Cols: s.Cols + 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Fill(base, math.NaN()); err != nil {
		t.Fatal(err)
	}
	v := base.Slice(1, s.Rows+1, 2, s.Cols+2)
	if err := b.Upload(v, h); err != nil {
		t.Fatal(err)
	}
	return blkDev{v, base}
}

// blkAllocOut allocates a destination (strided when asked) filled with a sentinel.
func blkAllocOut(t testing.TB, b backend.Backend, s tensor.Shape, strided bool, fill float64) blkDev {
	t.Helper()
	d := blkUpload(t, b, tensor.NewHost(s.Batch, s.Rows, s.Cols), strided)
	if err := b.Fill(d.view, fill); err != nil {
		t.Fatal(err)
	}
	return d
}

// at returns element (i, a, k) of a host tensor with batch-1 broadcast.
func at(h *tensor.Tensor, i, a, k int) float64 { return h.At(min(i, h.Batch()-1), a, k) }

// triOf returns item i of a host tensor of lower-triangular blocks as a gonum TriDense (lower part only).
func triOf(h *tensor.Tensor, i int) *mat.TriDense {
	d := h.Rows()
	t := mat.NewTriDense(d, mat.Lower, nil)
	for a := 0; a < d; a++ {
		for k := 0; k <= a; k++ {
			t.SetTri(a, k, at(h, i, a, k))
		}
	}
	return t
}

func colOf(h *tensor.Tensor, i int) *mat.Dense {
	d := h.Rows()
	v := mat.NewDense(d, 1, nil)
	for a := 0; a < d; a++ {
		v.Set(a, 0, at(h, i, a, 0))
	}
	return v
}

// refBlockLower: dst_i = Λ_i x_i or Λ_i⁻¹x_i (gonum triangular solve); s = β s0 + Σ_i M_i (x_i or dst_i).
func refBlockLower(h blkHost, n int, solve, withM bool, beta float64) (*tensor.Tensor, []float64) {
	r, q := h.l.Rows(), h.m.Rows()
	out := tensor.NewHost(n, r, 1)
	s := make([]float64, q)
	if withM {
		for a := range s {
			s[a] = beta * h.s0.At(0, a, 0)
		}
	}
	for i := 0; i < n; i++ {
		var y mat.Dense
		if solve {
			if err := triOf(h.l, i).SolveTo(&y, false, colOf(h.x, i)); err != nil {
				panic(err)
			}
		} else {
			y.Mul(triOf(h.l, i), colOf(h.x, i))
		}
		for a := 0; a < r; a++ {
			out.Set(i, a, 0, y.At(a, 0))
		}
		if withM {
			for a := 0; a < q; a++ {
				for k := 0; k < r; k++ {
					u := at(h.x, i, k, 0)
					if solve {
						u = y.At(k, 0)
					}
					s[a] += at(h.m, i, a, k) * u
				}
			}
		}
	}
	return out, s
}

// refBlockUpper: dst_i = Λ_iᵀ x_i + M_iᵀc or Λ_i⁻ᵀ(x_i − M_iᵀc).
func refBlockUpper(h blkHost, n int, solve, withM bool) *tensor.Tensor {
	r, q := h.l.Rows(), h.m.Rows()
	out := tensor.NewHost(n, r, 1)
	for i := 0; i < n; i++ {
		mc := make([]float64, r)
		if withM {
			for k := 0; k < r; k++ {
				for a := 0; a < q; a++ {
					mc[k] += at(h.m, i, a, k) * at(h.c, i, a, 0)
				}
			}
		}
		var y mat.Dense
		if solve {
			rhs := colOf(h.x, i)
			for k := 0; k < r; k++ {
				rhs.Set(k, 0, rhs.At(k, 0)-mc[k])
			}
			if err := triOf(h.l, i).SolveTo(&y, true, rhs); err != nil {
				panic(err)
			}
		} else {
			y.Mul(triOf(h.l, i).T(), colOf(h.x, i))
			for k := 0; k < r; k++ {
				y.Set(k, 0, y.At(k, 0)+mc[k])
			}
		}
		for a := 0; a < r; a++ {
			out.Set(i, a, 0, y.At(a, 0))
		}
	}
	return out
}

// refBlockCoupled: dst_i = α(M_i H_i + q y_iᵀ) with H_i = lower(x_i y_iᵀ), diagonal halved, formed explicitly.
func refBlockCoupled(h blkHost, n int, withM, withQ bool, alpha float64) *tensor.Tensor {
	r, p := h.y.Rows(), h.m.Rows()
	if !withM {
		p = h.c.Rows()
	}
	out := tensor.NewHost(n, p, r)
	for i := 0; i < n; i++ {
		for a := 0; a < p; a++ {
			for k := 0; k < r; k++ {
				var v float64
				if withM {
					for c := k; c < r; c++ {
						hck := at(h.x, i, c, 0) * at(h.y, i, k, 0)
						if c == k {
							hck /= 2
						}
						v += at(h.m, i, a, c) * hck
					}
				}
				if withQ {
					v += at(h.c, i, a, 0) * at(h.y, i, k, 0)
				}
				out.Set(i, a, k, alpha*v)
			}
		}
	}
	return out
}

// refBlockTri is CholNGTri (dst_i = α Λ_i dbar(lower(x_i y_iᵀ))) or, with outer, LowerOuter (α lower(x_i y_iᵀ))
// by loops over the lower triangle; the strict upper triangle is 0.
func refBlockTri(h blkHost, n int, outer bool, alpha float64) *tensor.Tensor {
	r := h.l.Rows()
	out := tensor.NewHost(n, r, r)
	for i := 0; i < n; i++ {
		for a := 0; a < r; a++ {
			for k := 0; k <= a; k++ {
				if outer {
					out.Set(i, a, k, alpha*at(h.x, i, a, 0)*at(h.y, i, k, 0))
					continue
				}
				var v float64
				for c := k; c <= a; c++ {
					hck := at(h.x, i, c, 0) * at(h.y, i, k, 0)
					if c == k {
						hck /= 2
					}
					v += at(h.l, i, a, c) * hck
				}
				out.Set(i, a, k, alpha*v)
			}
		}
	}
	return out
}

// triImplNames lists the implementations of CholNGTri (or LowerOuter) checked on shape s: the reference, the
// kernels, and the public entry point; runTriImpl runs implementation k of that list.
func triImplNames(b backend.Backend, s tensor.Shape, outer bool) []string {
	var names []string
	if outer {
		for _, im := range implsOf(backend.LowerOuterOp, b, s) {
			names = append(names, im.name)
		}
	} else {
		for _, im := range implsOf(backend.CholNGTriOp, b, s) {
			names = append(names, im.name)
		}
	}
	return append(names, "public")
}

func runTriImpl(b backend.Backend, outer bool, k int, dst, l, x, y *tensor.Tensor, alpha float64) error {
	if outer {
		ims := implsOf(backend.LowerOuterOp, b, dst.Shape())
		if k == len(ims) {
			return backend.LowerOuter(b, dst, x, y, alpha)
		}
		return ims[k].fn(b, dst, x, y, alpha)
	}
	ims := implsOf(backend.CholNGTriOp, b, l.Shape())
	if k == len(ims) {
		return backend.CholNGTri(b, dst, l, x, y, alpha)
	}
	return ims[k].fn(b, dst, l, x, y, alpha)
}

func refBlockTriNorm2(h blkHost, n int) float64 {
	r := h.x.Rows()
	var s float64
	for i := 0; i < n; i++ {
		for k := 0; k < r; k++ {
			for l := 0; l <= k; l++ {
				w := 1.0
				if l == k {
					w = 0.5
				}
				xk, yl := at(h.x, i, k, 0), at(h.y, i, l, 0)
				s += w * xk * xk * yl * yl
			}
		}
	}
	return s
}

func refBlockLogAbsDiag(l *tensor.Tensor, n int) float64 {
	var s float64
	for i := 0; i < n; i++ {
		for a := 0; a < l.Rows(); a++ {
			s += math.Log(math.Abs(at(l, i, a, a)))
		}
	}
	return s
}

// blkRel is max|a − b| / max(1, max|b|) over all elements (NaN counts as infinite).
func blkRel(a, b []float64) float64 {
	var num, den float64
	for i := range a {
		d := math.Abs(a[i] - b[i])
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		num = max(num, d)
		den = max(den, math.Abs(b[i]))
	}
	return num / max(1, den)
}

func hostData(h *tensor.Tensor) []float64 { return h.Clone().Storage().Host() }

func testCholNGBlocks(t *testing.T, b backend.Backend) {
	// Tolerances (rel = max abs error / max(1, max |reference|)): products and scans sum O(r + q) terms of O(1)
	// entries: 1e-13. Solves with the well-conditioned blocks of blkLowerHost (|diag| ≥ 0.5, off-diagonal 0.3σ,
	// r ≤ 8): 1e-12. Batch sums of up to 5000·r terms: 1e-12.
	const tolMul, tolSolve, tolSum = 1e-13, 1e-12, 1e-12
	cases := []blkCase{
		{n: 1, r: 1, q: 1, bl: 1, bm: 1, bx: 1, by: 1, bc: 1},
		{n: 5, r: 3, q: 2, bl: 5, bm: 5, bx: 5, by: 5, bc: 1},
		{n: 7, r: 2, q: 9, bl: 1, bm: 7, bx: 7, by: 7, bc: 7},
		{n: 4, r: 4, q: 3, bl: 4, bm: 1, bx: 1, by: 4, bc: 1},
		{n: 6, r: 5, q: 4, bl: 6, bm: 6, bx: 6, by: 1, bc: 1, strided: true},
		{n: 3, r: 8, q: 1, bl: 1, bm: 1, bx: 3, by: 3, bc: 3, bcast: true},
		{n: 5000, r: 2, q: 9, bl: 5000, bm: 5000, bx: 5000, by: 5000, bc: 1},
		{n: 2500, r: 3, q: 2, bl: 2500, bm: 2500, bx: 2500, by: 2500, bc: 1, strided: true},
		{n: 3000, r: 4, q: 3, bl: 1, bm: 3000, bx: 1, by: 3000, bc: 3000, bcast: true},
	}
	for ci, c := range cases {
		h := newBlkHost(c, uint64(1000+ci))
		t.Run(c.String(), func(t *testing.T) {
			devs := []blkDev{}
			up := func(x *tensor.Tensor) *tensor.Tensor {
				d := blkUpload(t, b, x, c.strided)
				devs = append(devs, d)
				return d.view
			}
			defer func() {
				for _, d := range devs {
					b.Free(d.base)
				}
			}()
			l, m, x, y, cv := up(h.l), up(h.m), up(h.x), up(h.y), up(h.c)
			if c.bcast {
				l = l.Broadcast(c.n)
			}
			s0 := up(h.s0)
			colShape := tensor.Shape{Batch: c.n, Rows: c.r, Cols: 1}
			t.Run("lower", func(t *testing.T) {
				for _, solve := range []bool{false, true} {
					for _, withM := range []bool{false, true} {
						for _, beta := range []float64{0, 0.5} {
							if !withM && beta != 0 {
								continue
							}
							want, wantS := refBlockLower(h, c.n, solve, withM, beta)
							tol := tolMul
							if solve {
								tol = tolSolve
							}
							var mm *tensor.Tensor
							if withM {
								mm = m
							}
							var refOut []float64
							impls := append(implsOf(backend.BlockLowerOp, b, colShape), impl[backend.BlockLowerFunc]{"public", backend.BlockLower})
							for k, im := range impls {
								dst := blkAllocOut(t, b, colShape, c.strided, math.NaN())
								s := blkAllocOut(t, b, h.s0.Shape(), c.strided, math.NaN())
								var ss *tensor.Tensor
								if withM {
									ss = s.view
									if beta != 0 {
										if err := b.Copy(s.view, s0); err != nil {
											t.Fatal(err)
										}
									}
								}
								if err := im.fn(b, solve, dst.view, ss, l, mm, x, beta); err != nil {
									t.Fatalf("%s: %v", im.name, err)
								}
								got := hostData(download(t, b, dst.view))
								if e := blkRel(got, hostData(want)); e > tol {
									t.Errorf("%s solve=%v m=%v β=%g: dst rel err %.3g > %g", im.name, solve, withM, beta, e, tol)
								}
								if withM {
									gs := hostData(download(t, b, s.view))
									if e := blkRel(gs, wantS); e > tolSum {
										t.Errorf("%s solve=%v β=%g: s rel err %.3g > %g", im.name, solve, beta, e, tolSum)
									}
								}
								if k == 0 {
									refOut = got
								} else if e := blkRel(got, refOut); e > tol {
									t.Errorf("kernel %s vs reference: rel err %.3g", im.name, e)
								}
								b.Free(dst.base)
								b.Free(s.base)
							}
						}
					}
				}
				// dst aliasing x (the same view) is allowed.
				if c.bx == c.n && !c.bcast {
					want, wantS := refBlockLower(h, c.n, true, true, 0)
					for _, im := range implsOf(backend.BlockLowerOp, b, colShape) {
						xa := blkUpload(t, b, h.x, c.strided)
						s := blkAllocOut(t, b, h.s0.Shape(), false, math.NaN())
						if err := im.fn(b, true, xa.view, s.view, l, m, xa.view, 0); err != nil {
							t.Fatal(err)
						}
						if e := blkRel(hostData(download(t, b, xa.view)), hostData(want)); e > tolSolve {
							t.Errorf("%s in place: rel err %.3g", im.name, e)
						}
						if e := blkRel(hostData(download(t, b, s.view)), wantS); e > tolSum {
							t.Errorf("%s in place: s rel err %.3g", im.name, e)
						}
						b.Free(xa.base)
						b.Free(s.base)
					}
				}
			})
			t.Run("upper", func(t *testing.T) {
				for _, solve := range []bool{false, true} {
					for _, withM := range []bool{false, true} {
						want := refBlockUpper(h, c.n, solve, withM)
						tol := tolMul
						if solve {
							tol = tolSolve
						}
						var mm, cc *tensor.Tensor
						if withM {
							mm, cc = m, cv
						}
						var refOut []float64
						impls := append(implsOf(backend.BlockUpperOp, b, colShape), impl[backend.BlockUpperFunc]{"public", backend.BlockUpper})
						for k, im := range impls {
							dst := blkAllocOut(t, b, colShape, c.strided, math.NaN())
							if err := im.fn(b, solve, dst.view, l, mm, cc, x); err != nil {
								t.Fatalf("%s: %v", im.name, err)
							}
							got := hostData(download(t, b, dst.view))
							if e := blkRel(got, hostData(want)); e > tol {
								t.Errorf("%s solve=%v m=%v: rel err %.3g > %g", im.name, solve, withM, e, tol)
							}
							if k == 0 {
								refOut = got
							} else if e := blkRel(got, refOut); e > tol {
								t.Errorf("kernel %s vs reference: rel err %.3g", im.name, e)
							}
							b.Free(dst.base)
						}
					}
				}
				if c.bx == c.n && !c.bcast {
					want := refBlockUpper(h, c.n, true, true)
					for _, im := range implsOf(backend.BlockUpperOp, b, colShape) {
						xa := blkUpload(t, b, h.x, c.strided)
						if err := im.fn(b, true, xa.view, l, m, cv, xa.view); err != nil {
							t.Fatal(err)
						}
						if e := blkRel(hostData(download(t, b, xa.view)), hostData(want)); e > tolSolve {
							t.Errorf("%s in place: rel err %.3g", im.name, e)
						}
						b.Free(xa.base)
					}
				}
			})
			t.Run("coupled", func(t *testing.T) {
				for _, mode := range []struct{ m, q bool }{{true, true}, {true, false}, {false, true}} {
					alpha := -1.0
					if !mode.q {
						alpha = 0.75
					}
					want := refBlockCoupled(h, c.n, mode.m, mode.q, alpha)
					var mm, xx, qq *tensor.Tensor
					p := c.q
					if mode.m {
						mm, xx = m, x
					}
					if mode.q {
						qq = cv
					}
					shape := tensor.Shape{Batch: c.n, Rows: p, Cols: c.r}
					var refOut []float64
					impls := append(implsOf(backend.BlockCoupledTriOp, b, shape), impl[backend.BlockCoupledTriFunc]{"public", backend.BlockCoupledTri})
					for k, im := range impls {
						dst := blkAllocOut(t, b, shape, c.strided, math.NaN())
						if err := im.fn(b, dst.view, mm, xx, y, qq, alpha); err != nil {
							t.Fatalf("%s: %v", im.name, err)
						}
						got := hostData(download(t, b, dst.view))
						if e := blkRel(got, hostData(want)); e > tolMul {
							t.Errorf("%s m=%v q=%v: rel err %.3g > %g", im.name, mode.m, mode.q, e, tolMul)
						}
						if k == 0 {
							refOut = got
						} else if e := blkRel(got, refOut); e > tolMul {
							t.Errorf("kernel %s vs reference: rel err %.3g", im.name, e)
						}
						b.Free(dst.base)
					}
				}
			})
			// CholNGTri and LowerOuter over the same batches: the small-block kernels meet broadcast and strided
			// operands here.
			t.Run("tri", func(t *testing.T) {
				sq := tensor.Shape{Batch: c.n, Rows: c.r, Cols: c.r}
				for _, outer := range []bool{false, true} {
					want := refBlockTri(h, c.n, outer, -0.5)
					var refOut []float64
					for k, name := range triImplNames(b, sq, outer) {
						dst := blkAllocOut(t, b, sq, c.strided, math.NaN())
						if err := runTriImpl(b, outer, k, dst.view, l, x, y, -0.5); err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						got := hostData(download(t, b, dst.view))
						if e := blkRel(got, hostData(want)); e > tolMul {
							t.Errorf("%s: rel err %.3g > %g", name, e, tolMul)
						}
						if k == 0 {
							refOut = got
						} else if e := blkRel(got, refOut); e > tolMul {
							t.Errorf("kernel %s vs reference: rel err %.3g", name, e)
						}
						b.Free(dst.base)
					}
				}
			})
			t.Run("trinorm2", func(t *testing.T) {
				want := refBlockTriNorm2(h, c.n)
				var refOut float64
				// x and y keep their own batches; the operation's batch is the larger (c.n when either has it).
				xx, yy := x, y
				if c.bx == 1 && c.by == 1 {
					xx = x.Broadcast(c.n)
				}
				public := func(_ backend.Backend, dst, x, y *tensor.Tensor, _ int) error {
					return backend.BlockTriNorm2(b, dst, x, y)
				}
				impls := append(implsOf(backend.BlockTriNorm2Op, b, colShape), impl[backend.BlockTriNorm2Func]{"public", public})
				for k, im := range impls {
					dst := blkAllocOut(t, b, scalarShapeT, false, math.NaN())
					if err := im.fn(b, dst.view, xx, yy, c.n); err != nil {
						t.Fatalf("%s: %v", im.name, err)
					}
					got := download(t, b, dst.view).At(0, 0, 0)
					if e := math.Abs(got-want) / max(1, math.Abs(want)); e > tolSum {
						t.Errorf("%s: %v, want %v (rel %.3g)", im.name, got, want, e)
					}
					if k == 0 {
						refOut = got
					} else if e := math.Abs(got-refOut) / max(1, math.Abs(refOut)); e > tolSum {
						t.Errorf("kernel %s vs reference: rel err %.3g", im.name, e)
					}
					b.Free(dst.base)
				}
			})
			t.Run("logabsdiag", func(t *testing.T) {
				nl := l.Batch()
				want := refBlockLogAbsDiag(h.l, nl)
				var refOut float64
				impls := append(implsOf(backend.BlockLogAbsDiagOp, b, l.Shape()), impl[backend.BlockLogAbsDiagFunc]{"public", backend.BlockLogAbsDiag})
				for k, im := range impls {
					dst := blkAllocOut(t, b, scalarShapeT, false, math.NaN())
					if err := im.fn(b, dst.view, l); err != nil {
						t.Fatalf("%s: %v", im.name, err)
					}
					got := download(t, b, dst.view).At(0, 0, 0)
					if e := math.Abs(got-want) / max(1, math.Abs(want)); e > tolSum {
						t.Errorf("%s: %v, want %v (rel %.3g)", im.name, got, want, e)
					}
					if k == 0 {
						refOut = got
					} else if e := math.Abs(got-refOut) / max(1, math.Abs(refOut)); e > tolSum {
						t.Errorf("kernel %s vs reference: rel err %.3g", im.name, e)
					}
					b.Free(dst.base)
				}
			})
			// The fused operations against the unfused sequence on the same backend and against the host loops.
			t.Run("draw", func(t *testing.T) { testBlockDraw(t, b, c, h, l, m, x, cv) })
			t.Run("natgrad", func(t *testing.T) { testBlockNatGrad(t, b, c, h, l, m, x, y, cv, s0) })
		})
	}
	t.Run("errors", func(t *testing.T) { testCholNGBlocksErrors(t, b) })
}

// blkScalar downloads a 1×1×1 tensor.
func blkScalar(t testing.TB, b backend.Backend, d *tensor.Tensor) float64 {
	t.Helper()
	return download(t, b, d).At(0, 0, 0)
}

// relScalar is |a − b| / max(1, |b|) (NaN counts as infinite).
func relScalar(a, b float64) float64 {
	e := math.Abs(a-b) / max(1, math.Abs(b))
	if math.IsNaN(e) {
		return math.Inf(1)
	}
	return e
}

// testBlockDraw checks BlockDraw (every implementation and the public entry point) against BlockUpper (solve) and
// BlockLogAbsDiag run one after the other, and against the host loops. l gets batch n (a broadcast view when the case
// has one block): the log-determinant sums over l's batch.
func testBlockDraw(t *testing.T, b backend.Backend, c blkCase, h blkHost, l, m, x, cv *tensor.Tensor) {
	const tolSolve, tolSum = 1e-12, 1e-12
	if l.Batch() == 1 && c.n > 1 {
		l = l.Broadcast(c.n)
	}
	colShape := tensor.Shape{Batch: c.n, Rows: c.r, Cols: 1}
	for _, withM := range []bool{false, true} {
		var mm, cc *tensor.Tensor
		if withM {
			mm, cc = m, cv
		}
		// The unfused sequence.
		seq := blkAllocOut(t, b, colShape, c.strided, math.NaN())
		seqLD := blkAllocOut(t, b, scalarShapeT, false, math.NaN())
		if err := backend.BlockUpper(b, true, seq.view, l, mm, cc, x); err != nil {
			t.Fatal(err)
		}
		if err := backend.BlockLogAbsDiag(b, seqLD.view, l); err != nil {
			t.Fatal(err)
		}
		wantW, wantLD := hostData(download(t, b, seq.view)), blkScalar(t, b, seqLD.view)
		b.Free(seq.base)
		b.Free(seqLD.base)
		if e := blkRel(wantW, hostData(refBlockUpper(h, c.n, true, withM))); e > tolSolve {
			t.Errorf("unfused BlockUpper vs host loops: rel err %.3g", e)
		}
		if e := relScalar(wantLD, refBlockLogAbsDiag(h.l, c.n)); e > tolSum {
			t.Errorf("unfused BlockLogAbsDiag vs host loops: rel err %.3g", e)
		}
		impls := append(implsOf(backend.BlockDrawOp, b, colShape), impl[backend.BlockDrawFunc]{"public", backend.BlockDraw})
		for _, im := range impls {
			dst := blkAllocOut(t, b, colShape, c.strided, math.NaN())
			ld := blkAllocOut(t, b, scalarShapeT, false, math.NaN())
			if err := im.fn(b, dst.view, ld.view, l, mm, cc, x); err != nil {
				t.Fatalf("%s: %v", im.name, err)
			}
			if e := blkRel(hostData(download(t, b, dst.view)), wantW); e > tolSolve {
				t.Errorf("%s m=%v: dst differs from BlockUpper by %.3g > %g", im.name, withM, e, tolSolve)
			}
			if e := relScalar(blkScalar(t, b, ld.view), wantLD); e > tolSum {
				t.Errorf("%s m=%v: ld differs from BlockLogAbsDiag by %.3g > %g", im.name, withM, e, tolSum)
			}
			b.Free(dst.base)
			b.Free(ld.base)
		}
	}
	// dst aliasing x (the same view) is allowed.
	if c.bx == c.n && !c.bcast {
		want := hostData(refBlockUpper(h, c.n, true, true))
		for _, im := range implsOf(backend.BlockDrawOp, b, colShape) {
			xa := blkUpload(t, b, h.x, c.strided)
			ld := blkAllocOut(t, b, scalarShapeT, false, math.NaN())
			if err := im.fn(b, xa.view, ld.view, l, m, cv, xa.view); err != nil {
				t.Fatal(err)
			}
			if e := blkRel(hostData(download(t, b, xa.view)), want); e > tolSolve {
				t.Errorf("%s in place: rel err %.3g", im.name, e)
			}
			b.Free(xa.base)
			b.Free(ld.base)
		}
	}
}

// testBlockNatGrad checks BlockNatGrad (every implementation and the public entry point; z = x, v = y, c = cv and
// q = s0 or nil) against BlockUpper (solve), CholNGTri, BlockCoupledTri and BlockTriNorm2 run one after the other,
// and against the host loops.
func testBlockNatGrad(t *testing.T, b backend.Backend, c blkCase, h blkHost, l, m, x, y, cv, s0 *tensor.Tensor) {
	const tolMul, tolSolve, tolSum = 1e-13, 1e-12, 1e-12
	const alpha = -1.0
	colShape := tensor.Shape{Batch: c.n, Rows: c.r, Cols: 1}
	sqShape := tensor.Shape{Batch: c.n, Rows: c.r, Cols: c.r}
	cpShape := tensor.Shape{Batch: c.n, Rows: c.q, Cols: c.r}
	hv := h
	hv.x = h.y // the μ part solves with v
	hq := h
	hq.c = h.s0 // the coupling part's q
	xx := x     // the operation's batch for the unfused BlockTriNorm2
	if x.Batch() == 1 && y.Batch() == 1 && c.n > 1 {
		xx = x.Broadcast(c.n)
	}
	for _, withQ := range []bool{true, false} {
		var qq *tensor.Tensor
		if withQ {
			qq = s0
		}
		// The unfused sequence.
		du := blkAllocOut(t, b, colShape, c.strided, math.NaN())
		dl := blkAllocOut(t, b, sqShape, c.strided, math.NaN())
		dm := blkAllocOut(t, b, cpShape, c.strided, math.NaN())
		tn := blkAllocOut(t, b, scalarShapeT, false, math.NaN())
		for _, err := range []error{
			backend.BlockUpper(b, true, du.view, l, m, cv, y),
			backend.CholNGTri(b, dl.view, l, x, y, alpha),
			backend.BlockCoupledTri(b, dm.view, m, x, y, qq, alpha),
			backend.BlockTriNorm2(b, tn.view, xx, y),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
		want := [][]float64{hostData(download(t, b, du.view)), hostData(download(t, b, dl.view)),
			hostData(download(t, b, dm.view))}
		wantTN := blkScalar(t, b, tn.view)
		for _, d := range []blkDev{du, dl, dm, tn} {
			b.Free(d.base)
		}
		host := [][]float64{hostData(refBlockUpper(hv, c.n, true, true)), hostData(refBlockTri(h, c.n, false, alpha)),
			hostData(refBlockCoupled(hq, c.n, true, withQ, alpha))}
		names := []string{"dmu", "dl", "dm"}
		tols := []float64{tolSolve, tolMul, tolMul}
		for k := range want {
			if e := blkRel(want[k], host[k]); e > tols[k] {
				t.Errorf("unfused %s vs host loops: rel err %.3g", names[k], e)
			}
		}
		if e := relScalar(wantTN, refBlockTriNorm2(h, c.n)); e > tolSum {
			t.Errorf("unfused tn vs host loops: rel err %.3g", e)
		}
		impls := append(implsOf(backend.BlockNatGradOp, b, colShape),
			impl[backend.BlockNatGradFunc]{"public", backend.BlockNatGrad})
		for _, im := range impls {
			du := blkAllocOut(t, b, colShape, c.strided, math.NaN())
			dl := blkAllocOut(t, b, sqShape, c.strided, math.NaN())
			dm := blkAllocOut(t, b, cpShape, c.strided, math.NaN())
			tn := blkAllocOut(t, b, scalarShapeT, false, math.NaN())
			if err := im.fn(b, du.view, dl.view, dm.view, tn.view, l, m, cv, qq, x, y, alpha); err != nil {
				t.Fatalf("%s: %v", im.name, err)
			}
			got := [][]float64{hostData(download(t, b, du.view)), hostData(download(t, b, dl.view)),
				hostData(download(t, b, dm.view))}
			for k := range got {
				if e := blkRel(got[k], want[k]); e > tols[k] {
					t.Errorf("%s q=%v: %s differs from the unfused sequence by %.3g > %g", im.name, withQ, names[k], e, tols[k])
				}
			}
			if e := relScalar(blkScalar(t, b, tn.view), wantTN); e > tolSum {
				t.Errorf("%s q=%v: tn differs from BlockTriNorm2 by %.3g > %g", im.name, withQ, e, tolSum)
			}
			for _, d := range []blkDev{du, dl, dm, tn} {
				b.Free(d.base)
			}
		}
	}
}

var scalarShapeT = tensor.Shape{Batch: 1, Rows: 1, Cols: 1}

func testCholNGBlocksErrors(t *testing.T, b backend.Backend) {
	mk := func(n, r, c int) *tensor.Tensor { return upload(t, b, tensor.NewHost(n, r, c)) }
	var all []*tensor.Tensor
	keep := func(x *tensor.Tensor) *tensor.Tensor { all = append(all, x); return x }
	defer func() {
		for _, x := range all {
			b.Free(x)
		}
	}()
	const n, r, q = 3, 2, 4
	dst := keep(mk(n, r, 1))
	l := keep(mk(n, r, r))
	m := keep(mk(n, q, r))
	x := keep(mk(n, r, 1))
	s := keep(mk(1, q, 1))
	cd := keep(mk(n, q, r))
	sc := keep(mk(1, 1, 1))
	geoSentinel(t, b, dst, 7)
	geoSentinel(t, b, s, 7)
	geoSentinel(t, b, cd, 7)
	geoSentinel(t, b, sc, 7)
	wrongB := keep(mk(2, r, 1))
	wrongL := keep(mk(n, r+1, r+1))
	rect := keep(mk(n, r, r+1))
	wrongM := keep(mk(n, q, r+1))
	wrongS := keep(mk(1, q+1, 1))
	s2 := keep(mk(2, q, 1))
	wide := keep(mk(n, r, 2))

	// BlockLower
	wantErr(t, "lower nil dst", backend.BlockLower(b, true, nil, s, l, m, x, 0), backend.ErrShape, "dst", -1)
	wantErr(t, "lower nil l", backend.BlockLower(b, true, dst, s, nil, m, x, 0), backend.ErrShape, "l", -1)
	wantErr(t, "lower dst not a column", backend.BlockLower(b, true, wide, s, l, m, x, 0), backend.ErrShape, "dst", -1)
	wantErr(t, "lower l order", backend.BlockLower(b, true, dst, s, wrongL, m, x, 0), backend.ErrShape, "l", -1)
	wantErr(t, "lower l batch", backend.BlockLower(b, true, dst, s, keep(mk(2, r, r)), m, x, 0), backend.ErrShape, "l", -1)
	wantErr(t, "lower x batch", backend.BlockLower(b, true, dst, s, l, m, wrongB, 0), backend.ErrShape, "x", -1)
	wantErr(t, "lower m without s", backend.BlockLower(b, true, dst, nil, l, m, x, 0), backend.ErrShape, "s", -1)
	wantErr(t, "lower s without m", backend.BlockLower(b, true, dst, s, l, nil, x, 0), backend.ErrShape, "m", -1)
	wantErr(t, "lower m columns", backend.BlockLower(b, true, dst, s, l, wrongM, x, 0), backend.ErrShape, "m", -1)
	wantErr(t, "lower s length", backend.BlockLower(b, true, dst, wrongS, l, m, x, 0), backend.ErrShape, "s", -1)
	wantErr(t, "lower s batch", backend.BlockLower(b, true, dst, s2, l, m, x, 0), backend.ErrShape, "s", -1)
	wantErr(t, "lower beta", backend.BlockLower(b, true, dst, s, l, m, x, math.Inf(1)), backend.ErrDomain, "beta", -1)
	// BlockUpper
	wantErr(t, "upper nil x", backend.BlockUpper(b, true, dst, l, m, s, nil), backend.ErrShape, "x", -1)
	wantErr(t, "upper l not square", backend.BlockUpper(b, true, dst, rect, m, s, x), backend.ErrShape, "l", -1)
	wantErr(t, "upper c without m", backend.BlockUpper(b, true, dst, l, nil, s, x), backend.ErrShape, "m", -1)
	wantErr(t, "upper m without c", backend.BlockUpper(b, true, dst, l, m, nil, x), backend.ErrShape, "c", -1)
	wantErr(t, "upper c length", backend.BlockUpper(b, true, dst, l, m, wrongS, x), backend.ErrShape, "c", -1)
	wantErr(t, "upper c batch", backend.BlockUpper(b, true, dst, l, m, s2, x), backend.ErrShape, "c", -1)
	wantErr(t, "upper m columns", backend.BlockUpper(b, false, dst, l, wrongM, s, x), backend.ErrShape, "m", -1)
	// BlockCoupledTri
	wantErr(t, "coupled m and q nil", backend.BlockCoupledTri(b, cd, nil, x, x, nil, 1), backend.ErrShape, "m", -1)
	wantErr(t, "coupled nil y", backend.BlockCoupledTri(b, cd, m, x, nil, s, 1), backend.ErrShape, "y", -1)
	wantErr(t, "coupled nil x", backend.BlockCoupledTri(b, cd, m, nil, x, s, 1), backend.ErrShape, "x", -1)
	wantErr(t, "coupled m shape", backend.BlockCoupledTri(b, cd, wrongM, x, x, s, 1), backend.ErrShape, "m", -1)
	wantErr(t, "coupled y length", backend.BlockCoupledTri(b, cd, m, x, keep(mk(n, r+1, 1)), s, 1), backend.ErrShape, "y", -1)
	wantErr(t, "coupled x batch", backend.BlockCoupledTri(b, cd, m, wrongB, x, s, 1), backend.ErrShape, "x", -1)
	wantErr(t, "coupled q length", backend.BlockCoupledTri(b, cd, m, x, x, wrongS, 1), backend.ErrShape, "q", -1)
	wantErr(t, "coupled alpha", backend.BlockCoupledTri(b, cd, m, x, x, s, math.NaN()), backend.ErrDomain, "alpha", -1)
	// BlockTriNorm2, BlockLogAbsDiag
	wantErr(t, "trinorm2 batches", backend.BlockTriNorm2(b, sc, x, wrongB), backend.ErrShape, "y", -1)
	wantErr(t, "trinorm2 lengths", backend.BlockTriNorm2(b, sc, x, keep(mk(n, r+1, 1))), backend.ErrShape, "y", -1)
	wantErr(t, "trinorm2 not columns", backend.BlockTriNorm2(b, sc, wide, wide), backend.ErrShape, "x", -1)
	wantErr(t, "trinorm2 dst", backend.BlockTriNorm2(b, s, x, x), backend.ErrShape, "dst", -1)
	wantErr(t, "logabsdiag not square", backend.BlockLogAbsDiag(b, sc, rect), backend.ErrShape, "l", -1)
	wantErr(t, "logabsdiag dst", backend.BlockLogAbsDiag(b, dst, l), backend.ErrShape, "dst", -1)
	wantErr(t, "logabsdiag nil", backend.BlockLogAbsDiag(b, sc, nil), backend.ErrShape, "l", -1)
	// BlockDraw, BlockNatGrad
	sq := keep(mk(n, r, r))
	geoSentinel(t, b, sq, 7)
	wantErr(t, "draw nil ld", backend.BlockDraw(b, dst, nil, l, m, s, x), backend.ErrShape, "ld", -1)
	wantErr(t, "draw c without m", backend.BlockDraw(b, dst, sc, l, nil, s, x), backend.ErrShape, "m", -1)
	wantErr(t, "draw l batch 1", backend.BlockDraw(b, dst, sc, keep(mk(1, r, r)), m, s, x), backend.ErrShape, "l", -1)
	wantErr(t, "draw ld shape", backend.BlockDraw(b, dst, s, l, m, s, x), backend.ErrShape, "ld", -1)
	wantErr(t, "natgrad nil m", backend.BlockNatGrad(b, dst, sq, cd, sc, l, nil, s, s, x, x, -1), backend.ErrShape, "m", -1)
	wantErr(t, "natgrad dl shape", backend.BlockNatGrad(b, dst, rect, cd, sc, l, m, s, s, x, x, -1), backend.ErrShape, "dl", -1)
	wantErr(t, "natgrad dm shape", backend.BlockNatGrad(b, dst, sq, wrongM, sc, l, m, s, s, x, x, -1), backend.ErrShape, "dm", -1)
	wantErr(t, "natgrad c length", backend.BlockNatGrad(b, dst, sq, cd, sc, l, m, wrongS, s, x, x, -1), backend.ErrShape, "c", -1)
	wantErr(t, "natgrad q length", backend.BlockNatGrad(b, dst, sq, cd, sc, l, m, s, wrongS, x, x, -1), backend.ErrShape, "q", -1)
	wantErr(t, "natgrad v batch", backend.BlockNatGrad(b, dst, sq, cd, sc, l, m, s, s, x, wrongB, -1), backend.ErrShape, "v", -1)
	wantErr(t, "natgrad tn", backend.BlockNatGrad(b, dst, sq, cd, s, l, m, s, s, x, x, -1), backend.ErrShape, "tn", -1)
	wantErr(t, "natgrad alpha", backend.BlockNatGrad(b, dst, sq, cd, sc, l, m, s, s, x, x, math.Inf(-1)), backend.ErrDomain, "alpha", -1)
	geoUntouched(t, b, sq, 7)
	geoUntouched(t, b, dst, 7)
	geoUntouched(t, b, s, 7)
	geoUntouched(t, b, cd, 7)
	geoUntouched(t, b, sc, 7)

	// Empty batches: the coupling sum is β·s, the scalar reductions 0.
	empty := keep(mk(0, r, 1))
	emptyL := keep(mk(0, r, r))
	emptyM := keep(mk(0, q, r))
	sv := keep(upload(t, b, blkNormalHost(geoRNG(5), 1, q, 1)))
	before := hostData(download(t, b, sv))
	if err := backend.BlockLower(b, true, empty, sv, emptyL, emptyM, empty, 0.5); err != nil {
		t.Fatal(err)
	}
	after := hostData(download(t, b, sv))
	for a := range before {
		if after[a] != 0.5*before[a] {
			t.Fatalf("empty BlockLower: s[%d] = %g, want β·s = %g", a, after[a], 0.5*before[a])
		}
	}
	if err := backend.BlockTriNorm2(b, sc, empty, empty); err != nil {
		t.Fatal(err)
	}
	if v := download(t, b, sc).At(0, 0, 0); v != 0 {
		t.Fatalf("empty BlockTriNorm2 = %g, want 0", v)
	}
	geoSentinel(t, b, sc, 7)
	if err := backend.BlockDraw(b, empty, sc, emptyL, emptyM, sv, empty); err != nil {
		t.Fatal(err)
	}
	if v := download(t, b, sc).At(0, 0, 0); v != 0 {
		t.Fatalf("empty BlockDraw: ld = %g, want 0", v)
	}
	geoSentinel(t, b, sc, 7)
	if err := backend.BlockNatGrad(b, empty, emptyL, emptyM, sc, emptyL, emptyM, sv, sv, empty, empty, -1); err != nil {
		t.Fatal(err)
	}
	if v := download(t, b, sc).At(0, 0, 0); v != 0 {
		t.Fatalf("empty BlockNatGrad: tn = %g, want 0", v)
	}
}

// benchCholNGBlocks times every implementation (reference and kernels) of the block operations on a GLMM-sized
// batch (n = 1e5 groups of r = 2 with q = 9 global parameters: the synthetic Epilepsy model) and on larger blocks
// (n = 1000, r = 16, q = 4). GB/s counts the operands read and the destination written once.
func benchCholNGBlocks(bb *testing.B, be backend.Backend) {
	for _, c := range []struct{ n, r, q int }{{100000, 2, 9}, {1000, 16, 4}} {
		h := newBlkHost(blkCase{n: c.n, r: c.r, q: c.q, bl: c.n, bm: c.n, bx: c.n, by: c.n, bc: 1}, 7)
		for i := 0; i < c.n; i++ { // the benchmarks want finite upper triangles out of the way: zero them
			for a := 0; a < c.r; a++ {
				for k := a + 1; k < c.r; k++ {
					h.l.Set(i, a, k, 0)
				}
			}
		}
		l, m, x, y, cv := upload(bb, be, h.l), upload(bb, be, h.m), upload(bb, be, h.x), upload(bb, be, h.y), upload(bb, be, h.c)
		s := mustAlloc(bb, be, h.s0.Shape())
		dst := mustAlloc(bb, be, x.Shape())
		cd := mustAlloc(bb, be, m.Shape())
		sc := mustAlloc(bb, be, scalarShapeT)
		n, r, q := float64(c.n), float64(c.r), float64(c.q)
		vecB, lB, mB := 8*n*r, 8*n*r*r, 8*n*q*r
		name := fmt.Sprintf("n=%d,r=%d,q=%d", c.n, c.r, c.q)
		timed := func(sub string, bytes float64, f func() error) {
			bb.Run(name+"/"+sub, func(b *testing.B) {
				b.ReportMetric(bytes/secondsPerCall(b, be, f)/1e9, "GB/s")
			})
		}
		colShape := x.Shape()
		for _, im := range implsOf(backend.BlockLowerOp, be, colShape) {
			timed("lower-solve-sum/"+im.name, lB+mB+2*vecB, func() error { return im.fn(be, true, dst, s, l, m, x, 0) })
		}
		for _, im := range implsOf(backend.BlockUpperOp, be, colShape) {
			timed("upper-solve/"+im.name, lB+mB+2*vecB, func() error { return im.fn(be, true, dst, l, m, cv, x) })
		}
		for _, im := range implsOf(backend.BlockCoupledTriOp, be, cd.Shape()) {
			timed("coupled/"+im.name, 2*mB+2*vecB, func() error { return im.fn(be, cd, m, x, y, cv, -1) })
		}
		for _, im := range implsOf(backend.BlockTriNorm2Op, be, colShape) {
			timed("trinorm2/"+im.name, 2*vecB, func() error { return im.fn(be, sc, x, y, c.n) })
		}
		for _, im := range implsOf(backend.BlockLogAbsDiagOp, be, l.Shape()) {
			timed("logabsdiag/"+im.name, lB, func() error { return im.fn(be, sc, l) })
		}
		for _, im := range implsOf(backend.CholNGTriOp, be, l.Shape()) {
			dt := mustAlloc(bb, be, l.Shape())
			timed("tri/"+im.name, 2*lB+2*vecB, func() error { return im.fn(be, dt, l, x, y, -1) })
			be.Free(dt)
		}
		// The fused operations, each next to the unfused sequence it replaces (public entry points).
		dt := mustAlloc(bb, be, l.Shape())
		for _, im := range implsOf(backend.BlockDrawOp, be, colShape) {
			timed("draw/"+im.name, lB+mB+2*vecB, func() error { return im.fn(be, dst, sc, l, m, cv, x) })
		}
		timed("draw/unfused", lB+mB+2*vecB, func() error {
			if err := backend.BlockUpper(be, true, dst, l, m, cv, x); err != nil {
				return err
			}
			return backend.BlockLogAbsDiag(be, sc, l)
		})
		for _, im := range implsOf(backend.BlockNatGradOp, be, colShape) {
			timed("natgrad/"+im.name, 2*lB+3*mB+3*vecB, func() error {
				return im.fn(be, dst, dt, cd, sc, l, m, cv, cv, x, y, -1)
			})
		}
		timed("natgrad/unfused", 2*lB+3*mB+3*vecB, func() error {
			if err := backend.BlockUpper(be, true, dst, l, m, cv, y); err != nil {
				return err
			}
			if err := backend.CholNGTri(be, dt, l, x, y, -1); err != nil {
				return err
			}
			if err := backend.BlockCoupledTri(be, cd, m, x, y, cv, -1); err != nil {
				return err
			}
			return backend.BlockTriNorm2(be, sc, x, y)
		})
		for _, t := range []*tensor.Tensor{l, m, x, y, cv, s, dst, cd, sc, dt} {
			be.Free(t)
		}
	}
}
