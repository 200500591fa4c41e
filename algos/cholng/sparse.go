package cholng

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"

	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/model"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// Sparse is a Gaussian family with a structured Cholesky factor held on a backend: Block (Alg 1c) and Arrow
// (Alg 2c). FitSparse drives them with Snngm or Adam. Gradients are exact natural gradients of the *restricted*
// family (Fisher of the pattern entries solved, (12)): masking the dense formula (9) is wrong (≈ 30 % error) and
// is not done.
//
// The groups (blocks) are bucketed by size once, at construction: internally θ, z and the parameters are ordered
// bucket by bucket (sizes in order of first appearance, groups in the user's order within a bucket), so each
// distinct size is one batch of the backend's block operations however the sizes alternate. The permutation stays
// inside: θ and ∇log p cross to the model in the user's order, draw k of Sample goes to the user's coordinate k,
// and Lambda/SetLambda use the user's order. When every size already forms one consecutive run the permutation is
// the identity and costs nothing.
//
// The parameters live in one flat backend buffer (μ, then the blocks of each bucket, then the global block;
// padded), with the gradient in a second buffer of the same layout, so that the optimiser updates all of λ with a
// few element-wise passes. Lambda and SetLambda convert to the paper's order λ = (μ, factor entries of the pattern)
// on the host.
type Sparse interface {
	Dim() int
	// NumParams is ℓ_λ counting only the free entries of the pattern (§7: α = 0.001√ℓ_λ).
	NumParams() int
	Param() Param
	Backend() backend.Backend
	// Sample draws z from stream c: coordinate k of θ gets draw c.Offset + k (the numbers a host
	// c.FillNormal(z[:Dim()]) gives).
	Sample(c rng.Counter) error
	// SetZ sets the draw z explicitly (length Dim()).
	SetZ(z []float64) error
	// Gradient evaluates h(θ) at the current z and leaves the single-draw gradient of the requested kind in the
	// family's gradient buffer (GradLambda reads it). norm2 is the Snngm norm²: Euclidean for C families,
	// Riemannian ⟨ĝ, g̃⟩ for T families (Table 4, with the square root); for the Euclidean kind it is ‖ĝ‖².
	Gradient(m model.Density, kind Kind) (h, norm2 float64, err error)
	// Eval returns h(θ) at the current z.
	Eval(m model.Density) (float64, error)
	// Lambda returns λ in the paper's order (see the family's doc); SetLambda sets it.
	Lambda() ([]float64, error)
	SetLambda(lam []float64) error
	// GradLambda returns the last gradient in the order of λ.
	GradLambda() ([]float64, error)
	// Close frees the backend buffers.
	Close()

	core() *sparseCore
}

const log2Pi = 1.8378770664093453

// lowIdx is the packed row-major position of (a, b), a ≥ b, inside a lower-triangular block.
func lowIdx(a, b int) int { return a*(a+1)/2 + b }

// flatW is the row length of the wide views of flat buffers: element-wise passes, reductions and transfers work on
// rows of flatW elements rather than on d rows of one.
const flatW = 256

func padW(n int) int { return (n + flatW - 1) / flatW * flatW }

// viewOf returns a view of the storage of base (offsets relative to base).
func viewOf(base *T, off int, s tensor.Shape, bs, rs int) *T {
	t, err := tensor.New(base.Storage(), base.Offset()+off, s, bs, rs)
	if err != nil {
		panic(err) // the layouts are computed here; a failure is a bug
	}
	return t
}

// colView is n column vectors of length r starting at off, one after the other.
func colView(base *T, off, n, r int) *T {
	return viewOf(base, off, tensor.Shape{Batch: n, Rows: r, Cols: 1}, r, 1)
}

// wideView is the length elements at off (length a multiple of flatW) as 1 × length/flatW × flatW.
func wideView(base *T, off, length int) *T {
	return viewOf(base, off, tensor.Shape{Batch: 1, Rows: length / flatW, Cols: flatW}, length, flatW)
}

// blockView is n square r×r matrices at off.
func blockView(base *T, off, n, r int) *T {
	return viewOf(base, off, tensor.Shape{Batch: n, Rows: r, Cols: r}, r*r, r)
}

// diagOf is the diagonals of the square matrices of t as n × r × 1.
func diagOf(t *T) *T {
	return viewOf(t, 0, tensor.Shape{Batch: t.Batch(), Rows: t.Rows(), Cols: 1}, t.BatchStride(), t.RowStride()+1)
}

// bucket is the groups (blocks) of one size r, consecutive in the internal order: its blocks form one batch of the
// block operations.
type bucket struct {
	n, r       int
	zoff       int   // first coordinate in the internal θ
	loff, moff int   // offsets in the parameter buffer of the diagonal blocks (n·r²) and coupling blocks (n·q·r)
	groups     []int // the user's index of each group of the bucket

	l, m, gl, gm          *T // parameter and gradient blocks (m, gm: Arrow only)
	leff, diagL, diagLeff *T // Block with LogDiag: C with the diagonal exponentiated, and the diagonal views
	diagGL                *T
	z, w, v, a, gp, gm0   *T // n × r × 1 views of the d-vectors and of the μ part of the gradient
}

// sparseCore is the backend state shared by Block and Arrow.
type sparseCore struct {
	b     backend.Backend
	d, np int
	dpad  int // d padded to flatW
	plen  int // padded length of the parameter buffer
	tail  int // offset of the parameters after the runs (Arrow: T_G)
	sizes []int
	bk    []*bucket

	pbuf, gbuf         *T // parameter and gradient buffers (1 × plen/flatW × flatW)
	pw, gw             *T // the same as plen/flatW × 1 × flatW, for the optimiser
	muW, gmuW          *T // their μ parts, wide
	z, w, th, gp, v, a *T // d-vectors (1 × dpad/flatW × flatW, zero padding)
	zFull, zTail       *T // the first ⌊d/flatW⌋ rows and the rest of z, for Sample
	scal               *T // 1 × 1 × nscal scalar results
	slots              []*T
	extra              []*T

	hth, hgp, hz, hscal []float64 // host copies in the internal order
	hthT, hgpT, hzT     *T
	hscalT              *T

	// The group permutation (nil cperm: identity). cperm maps an internal coordinate to the user's; where maps a
	// user group to (bucket, index in the bucket). θ and ∇log p meet the model in hthU and hgpU (the user's order;
	// the same slices as hth and hgp when the permutation is the identity). Sample draws into zU in the user's
	// order and moves the draws with the strided copies zseg — or, when the sizes are so irregular that the copies
	// would be many (hostZ), draws on the host.
	cperm          []int32
	where          [][2]int
	hthU, hgpU     []float64
	zU             *T
	zUFull, zUTail *T
	zseg           [][2]*T // (dst in z, src in zU)
	hostZ          bool
	hzU            []float64
}

// maxZSegments is the number of strided copies above which Sample draws z on the host and uploads it.
const maxZSegments = 64

func (c *sparseCore) core() *sparseCore        { return c }
func (c *sparseCore) Dim() int                 { return c.d }
func (c *sparseCore) NumParams() int           { return c.np }
func (c *sparseCore) Backend() backend.Backend { return c.b }

// slot is scalar result k (a 1×1×1 view of scal).
func (c *sparseCore) slot(k int) *T { return c.slots[k] }

// bucketSizes groups the indices of sizes by size, sizes in order of first appearance and indices ascending within
// a size: the internal order of the groups.
func bucketSizes(sizes []int) [][]int {
	var out [][]int
	at := map[int]int{}
	for g, s := range sizes {
		k, ok := at[s]
		if !ok {
			k = len(out)
			at[s] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], g)
	}
	return out
}

// newCore lays out and allocates the buffers: μ (dpad), then per bucket the diagonal blocks and (coupling q > 0)
// the coupling blocks, then tail more parameters (the global block of Arrow); nscal0 + nscalB per bucket scalar
// slots.
func newCore(b backend.Backend, sizes []int, q, tail, nscal0, nscalB int) (*sparseCore, error) {
	c := &sparseCore{b: b, sizes: append([]int(nil), sizes...)}
	uoff := make([]int, len(sizes)) // the user's offset of each group
	for g, s := range sizes {
		uoff[g] = c.d
		c.d += s
	}
	c.d += q
	if c.d == 0 {
		return nil, fmt.Errorf("cholng: empty family")
	}
	c.dpad = padW(c.d)
	c.np = c.d
	off := c.dpad
	zoff := 0
	buckets := bucketSizes(sizes)
	nscal := nscal0 + nscalB*len(buckets)
	c.where = make([][2]int, len(sizes))
	ident := true
	cperm := make([]int32, c.d)
	for k := range cperm {
		cperm[k] = int32(k) // the global block keeps its place
	}
	for bi, gs := range buckets {
		r := sizes[gs[0]]
		bk := &bucket{n: len(gs), r: r, zoff: zoff, groups: gs, loff: off}
		for j, g := range gs {
			c.where[g] = [2]int{bi, j}
			io := zoff + j*r
			if io != uoff[g] {
				ident = false
			}
			for a := 0; a < r; a++ {
				cperm[io+a] = int32(uoff[g] + a)
			}
		}
		off += bk.n * r * r
		c.np += bk.n * r * (r + 1) / 2
		if q > 0 {
			bk.moff = off
			off += bk.n * q * r
			c.np += bk.n * q * r
		}
		zoff += bk.n * r
		c.bk = append(c.bk, bk)
	}
	c.tail = off
	off += tail
	c.plen = padW(off)
	var err error
	alloc := func(n int) *T {
		if err != nil {
			return nil
		}
		var t *T
		t, err = b.Alloc(tensor.Shape{Batch: 1, Rows: n / flatW, Cols: flatW})
		return t
	}
	c.pbuf, c.gbuf = alloc(c.plen), alloc(c.plen)
	c.z, c.w, c.th, c.gp, c.v, c.a = alloc(c.dpad), alloc(c.dpad), alloc(c.dpad), alloc(c.dpad), alloc(c.dpad), alloc(c.dpad)
	if err == nil {
		c.scal, err = b.Alloc(tensor.Shape{Batch: 1, Rows: 1, Cols: nscal})
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	for k := 0; k < nscal; k++ {
		c.slots = append(c.slots, c.scal.Slice(0, 1, k, k+1))
	}
	c.pw = viewOf(c.pbuf, 0, tensor.Shape{Batch: c.plen / flatW, Rows: 1, Cols: flatW}, flatW, flatW)
	c.gw = viewOf(c.gbuf, 0, tensor.Shape{Batch: c.plen / flatW, Rows: 1, Cols: flatW}, flatW, flatW)
	c.muW, c.gmuW = wideView(c.pbuf, 0, c.dpad), wideView(c.gbuf, 0, c.dpad)
	if full := c.d / flatW * flatW; full > 0 {
		c.zFull = wideView(c.z, 0, full)
	}
	if rem := c.d % flatW; rem > 0 {
		c.zTail = viewOf(c.z, c.d/flatW*flatW, tensor.Shape{Batch: 1, Rows: 1, Cols: rem}, rem, rem)
	}
	for _, bk := range c.bk {
		bk.l, bk.gl = blockView(c.pbuf, bk.loff, bk.n, bk.r), blockView(c.gbuf, bk.loff, bk.n, bk.r)
		if q > 0 {
			s := tensor.Shape{Batch: bk.n, Rows: q, Cols: bk.r}
			bk.m = viewOf(c.pbuf, bk.moff, s, q*bk.r, bk.r)
			bk.gm = viewOf(c.gbuf, bk.moff, s, q*bk.r, bk.r)
		}
		bk.z, bk.w, bk.v = colView(c.z, bk.zoff, bk.n, bk.r), colView(c.w, bk.zoff, bk.n, bk.r), colView(c.v, bk.zoff, bk.n, bk.r)
		bk.a, bk.gp = colView(c.a, bk.zoff, bk.n, bk.r), colView(c.gp, bk.zoff, bk.n, bk.r)
		bk.gm0 = colView(c.gbuf, bk.zoff, bk.n, bk.r)
		bk.diagL, bk.diagGL = diagOf(bk.l), diagOf(bk.gl)
	}
	c.hth, c.hgp, c.hz, c.hscal = make([]float64, c.dpad), make([]float64, c.dpad), make([]float64, c.dpad), make([]float64, nscal)
	c.hthT, _ = tensor.FromSlice(c.hth, 1, c.dpad/flatW, flatW)
	c.hgpT, _ = tensor.FromSlice(c.hgp, 1, c.dpad/flatW, flatW)
	c.hzT, _ = tensor.FromSlice(c.hz, 1, c.dpad/flatW, flatW)
	c.hscalT, _ = tensor.FromSlice(c.hscal, 1, 1, nscal)
	c.hthU, c.hgpU = c.hth, c.hgp
	if !ident {
		if err := c.permSetup(cperm, uoff, q); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// permSetup prepares a non-identity group permutation: the user-order host buffers and the moves of the draws.
// Within a bucket the groups are in the user's order, so a run of them at evenly spaced user offsets is one strided
// copy from zU; the global block (q) is one more.
func (c *sparseCore) permSetup(cperm []int32, uoff []int, q int) error {
	c.cperm = cperm
	c.hthU, c.hgpU, c.hzU = make([]float64, c.d), make([]float64, c.d), make([]float64, c.d)
	type seg struct{ io, uo, n, r, stride int }
	var segs []seg
	for _, bk := range c.bk {
		for j := 0; j < bk.n; {
			s := seg{io: bk.zoff + j*bk.r, uo: uoff[bk.groups[j]], n: 1, r: bk.r, stride: bk.r}
			if j+1 < bk.n {
				s.stride = uoff[bk.groups[j+1]] - s.uo
				for j+s.n < bk.n && uoff[bk.groups[j+s.n]]-uoff[bk.groups[j+s.n-1]] == s.stride {
					s.n++
				}
			}
			segs = append(segs, s)
			j += s.n
		}
	}
	if q > 0 {
		segs = append(segs, seg{io: c.d - q, uo: c.d - q, n: 1, r: q, stride: q})
	}
	if len(segs) > maxZSegments {
		c.hostZ = true
		return nil
	}
	var err error
	if c.zU, err = c.b.Alloc(tensor.Shape{Batch: 1, Rows: c.dpad / flatW, Cols: flatW}); err != nil {
		return err
	}
	c.extra = append(c.extra, c.zU)
	if full := c.d / flatW * flatW; full > 0 {
		c.zUFull = wideView(c.zU, 0, full)
	}
	if rem := c.d % flatW; rem > 0 {
		c.zUTail = viewOf(c.zU, c.d/flatW*flatW, tensor.Shape{Batch: 1, Rows: 1, Cols: rem}, rem, rem)
	}
	for _, s := range segs {
		sh := tensor.Shape{Batch: s.n, Rows: s.r, Cols: 1}
		c.zseg = append(c.zseg, [2]*T{viewOf(c.z, s.io, sh, s.r, 1), viewOf(c.zU, s.uo, sh, s.stride, 1)})
	}
	return nil
}

// toUser returns the user-order copy of an internal-order d-vector; fromUser writes the internal order of u into h.
func (c *sparseCore) toUser(h []float64) []float64 {
	out := make([]float64, c.d)
	if c.cperm == nil {
		copy(out, h[:c.d])
		return out
	}
	for i, u := range c.cperm {
		out[u] = h[i]
	}
	return out
}

func (c *sparseCore) fromUser(h, u []float64) {
	if c.cperm == nil {
		copy(h[:c.d], u)
		return
	}
	for i, k := range c.cperm {
		h[i] = u[k]
	}
}

// Close frees the backend buffers; the family must not be used afterwards. A second Close does nothing.
func (c *sparseCore) Close() {
	for _, t := range []**T{&c.pbuf, &c.gbuf, &c.z, &c.w, &c.th, &c.gp, &c.v, &c.a, &c.scal} {
		if *t != nil {
			c.b.Free(*t)
			*t = nil
		}
	}
	for _, t := range c.extra {
		c.b.Free(t)
	}
	c.extra = nil
}

// Sample draws z from stream c (draw c.Offset + k for the user's coordinate k).
func (c *sparseCore) Sample(ctr rng.Counter) error {
	if c.hostZ {
		ctr.FillNormal(c.hzU)
		c.fromUser(c.hz, c.hzU)
		return c.b.Upload(c.z, c.hzT)
	}
	full, tail := c.zFull, c.zTail
	if c.cperm != nil {
		full, tail = c.zUFull, c.zUTail
	}
	if full != nil {
		if err := c.b.FillNormal(full, ctr); err != nil {
			return err
		}
	}
	if tail != nil {
		if err := c.b.FillNormal(tail, ctr.Advance(c.d/flatW*flatW)); err != nil {
			return err
		}
	}
	for _, s := range c.zseg {
		if err := c.b.Copy(s[0], s[1]); err != nil {
			return err
		}
	}
	return nil
}

// SetZ sets z (length d, the user's order).
func (c *sparseCore) SetZ(z []float64) error {
	if len(z) != c.d {
		return fmt.Errorf("cholng: z has %d entries, want %d", len(z), c.d)
	}
	c.fromUser(c.hz, z) // the padding stays 0
	return c.b.Upload(c.z, c.hzT)
}

// downFlat downloads a flat buffer of n (a multiple of flatW) elements.
func (c *sparseCore) downFlat(t *T, n int) ([]float64, error) {
	h := make([]float64, n)
	ht, _ := tensor.FromSlice(h, 1, n/flatW, flatW)
	return h, c.b.Download(ht, wideView(t, 0, n))
}

func (c *sparseCore) upFlat(t *T, h []float64) error {
	ht, err := tensor.FromSlice(h, 1, len(h)/flatW, flatW)
	if err != nil {
		return err
	}
	return c.b.Upload(wideView(t, 0, len(h)), ht)
}

// finishDraw sets θ = μ + w and brings θ to the host (hthU, the user's order).
func (c *sparseCore) finishDraw() error {
	if err := c.b.Axpby(c.th, 1, c.w, 1, c.muW); err != nil {
		return err
	}
	if err := c.b.Download(c.hthT, c.th); err != nil {
		return err
	}
	if c.cperm != nil {
		for i, u := range c.cperm {
			c.hthU[u] = c.hth[i]
		}
	}
	return nil
}

// evalModel evaluates the model at the host θ (the user's order), leaving ∇log p in hgpU.
func (c *sparseCore) evalModel(m model.Density) (float64, error) {
	return m.LogDensity(c.hgpU[:c.d], c.hthU[:c.d])
}

// logJoint evaluates the model at the host θ and uploads its gradient (in the internal order).
func (c *sparseCore) logJoint(m model.Density) (float64, error) {
	lp, err := c.evalModel(m)
	if err != nil {
		return 0, err
	}
	if c.cperm != nil {
		c.fromUser(c.hgp, c.hgpU)
	}
	return lp, c.b.Upload(c.gp, c.hgpT)
}

// scalars downloads the scalar results.
func (c *sparseCore) scalars() ([]float64, error) {
	return c.hscal, c.b.Download(c.hscalT, c.scal)
}

func firstError(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func checkLambda(lam []float64, np int) error {
	if len(lam) != np {
		return fmt.Errorf("cholng: λ has %d entries, want %d", len(lam), np)
	}
	for k, v := range lam {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("cholng: λ[%d] = %g is not finite", k, v)
		}
	}
	return nil
}

// ---- Block (Alg 1c) ----

// Block is the block-diagonal covariance family Σ = CCᵀ, C = blockdiag(C_1 … C_N) of Alg 1c (§6). λ = (μ,
// packed lower C_1, …, packed lower C_N), each block row-major. With LogDiag the diagonal entries are stored as
// log C_ii (the C′ of §5's end; C_ii > 0 always). The blocks of each size are one batch of the backend's block
// operations, wherever they stand (see Sparse).
type Block struct {
	*sparseCore
	LogDiag bool
}

// Block scalar slots: ‖z‖², ‖ĝ‖²/‖g̃‖², then Σ log|C_ii| per bucket.
const (
	bsZZ = iota
	bsNorm
	bsFixed
)

// NewBlock makes the family on b with blocks of the given sizes, μ = 0 and C = diag0·I (diag0 > 0 with LogDiag).
func NewBlock(b backend.Backend, sizes []int, diag0 float64, logDiag bool) (*Block, error) {
	for k, s := range sizes {
		if s < 1 {
			return nil, fmt.Errorf("cholng: block %d has size %d", k, s)
		}
	}
	if len(sizes) == 0 {
		return nil, fmt.Errorf("cholng: no blocks")
	}
	if diag0 == 0 || math.IsNaN(diag0) || math.IsInf(diag0, 0) || (logDiag && diag0 < 0) {
		return nil, fmt.Errorf("%w: initial diagonal %g", ErrFactor, diag0)
	}
	c, err := newCore(b, sizes, 0, 0, bsFixed, 1)
	if err != nil {
		return nil, err
	}
	f := &Block{sparseCore: c, LogDiag: logDiag}
	for _, bk := range c.bk {
		bk.leff, bk.diagLeff = bk.l, bk.diagL
		if logDiag {
			if bk.leff, err = b.Alloc(bk.l.Shape()); err != nil {
				f.Close()
				return nil, err
			}
			c.extra = append(c.extra, bk.leff)
			bk.diagLeff = diagOf(bk.leff)
		}
	}
	v := diag0
	if logDiag {
		v = math.Log(diag0)
	}
	for _, bk := range c.bk {
		if err := b.Fill(bk.diagL, v); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// NewBlockDiag is NewBlock with initial diagonal diag0[k] for block k (the RVB initialisation of §8.2: 1
// for the transformed locals, 0.1 for the global block).
func NewBlockDiag(b backend.Backend, sizes []int, diag0 []float64, logDiag bool) (*Block, error) {
	if len(diag0) != len(sizes) {
		return nil, fmt.Errorf("cholng: %d initial diagonals for %d blocks", len(diag0), len(sizes))
	}
	f, err := NewBlock(b, sizes, 1, logDiag)
	if err != nil {
		return nil, err
	}
	lam, err := f.Lambda()
	if err == nil {
		k := f.d
		for g, s := range sizes {
			v := diag0[g]
			if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) || (logDiag && v < 0) {
				err = fmt.Errorf("%w: initial diagonal %g of block %d", ErrFactor, v, g)
				break
			}
			if logDiag {
				v = math.Log(v)
			}
			for a := 0; a < s; a++ {
				lam[k+lowIdx(a, a)] = v
			}
			k += s * (s + 1) / 2
		}
	}
	if err == nil {
		err = f.SetLambda(lam)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Param is Covariance.
func (f *Block) Param() Param { return Covariance }

// Sizes returns the block sizes.
func (f *Block) Sizes() []int { return f.sizes }

// Lambda returns λ = (μ, packed lower C_1, …) (log diagonal under LogDiag).
func (f *Block) Lambda() ([]float64, error) { return f.toLambda(f.pbuf) }

// GradLambda returns the last gradient in λ order.
func (f *Block) GradLambda() ([]float64, error) { return f.toLambda(f.gbuf) }

func (f *Block) toLambda(buf *T) ([]float64, error) {
	h, err := f.downFlat(buf, f.plen)
	if err != nil {
		return nil, err
	}
	out := make([]float64, 0, f.np)
	out = append(out, f.toUser(h)...)
	for _, w := range f.where {
		bk := f.bk[w[0]]
		r := bk.r
		blk := h[bk.loff+w[1]*r*r:]
		for a := 0; a < r; a++ {
			out = append(out, blk[a*r:a*r+a+1]...)
		}
	}
	return out, nil
}

// SetLambda sets λ (see Lambda). Without LogDiag a zero diagonal entry is an error.
func (f *Block) SetLambda(lam []float64) error {
	if err := checkLambda(lam, f.np); err != nil {
		return err
	}
	h := make([]float64, f.plen)
	f.fromUser(h, lam[:f.d])
	k := f.d
	for g, w := range f.where {
		bk := f.bk[w[0]]
		r := bk.r
		blk := h[bk.loff+w[1]*r*r:]
		for a := 0; a < r; a++ {
			copy(blk[a*r:a*r+a+1], lam[k:k+a+1])
			k += a + 1
			if !f.LogDiag && blk[a*r+a] == 0 {
				return fmt.Errorf("%w: block %d diagonal %d is 0", ErrFactor, g, a)
			}
		}
	}
	return f.upFlat(f.pbuf, h)
}

// SetBlock sets block k from an s×s row-major lower-triangular matrix (tests).
func (f *Block) SetBlock(k int, c []float64) error {
	s := f.sizes[k]
	lam, err := f.Lambda()
	if err != nil {
		return err
	}
	o := f.d
	for j := 0; j < k; j++ {
		o += f.sizes[j] * (f.sizes[j] + 1) / 2
	}
	for a := 0; a < s; a++ {
		for b := 0; b < s; b++ {
			v := c[a*s+b]
			if b > a && v != 0 {
				return fmt.Errorf("%w: entry (%d,%d) above the diagonal", ErrFactor, a, b)
			}
			if b > a {
				continue
			}
			if a == b {
				if v == 0 || (f.LogDiag && v < 0) {
					return fmt.Errorf("%w: diagonal %g", ErrFactor, v)
				}
				if f.LogDiag {
					v = math.Log(v)
				}
			}
			lam[o+lowIdx(a, b)] = v
		}
	}
	return f.SetLambda(lam)
}

// draw sets θ = μ + Cz on the backend (C_ii = exp of the stored diagonal under LogDiag), brings θ to the host and
// queues the scalars of log q = −(d/2)log2π − Σ log|C_ii| − ½zᵀz.
func (f *Block) draw() error {
	b := f.b
	for k, bk := range f.bk {
		if f.LogDiag {
			if err := firstError(b.Copy(bk.leff, bk.l), b.Map(bk.diagLeff, backend.Exp, 1, bk.diagL)); err != nil {
				return err
			}
		}
		if err := firstError(
			backend.BlockLower(b, false, bk.w, nil, bk.leff, nil, bk.z, 0),
			backend.BlockLogAbsDiag(b, f.slot(bsFixed+k), bk.leff)); err != nil {
			return err
		}
	}
	if err := b.Reduce(f.slot(bsZZ), backend.ReduceSumSq, backend.AxisAll, f.z); err != nil {
		return err
	}
	return f.finishDraw()
}

func (f *Block) logQ(s []float64) float64 {
	lq := -0.5*float64(f.d)*log2Pi - 0.5*s[bsZZ]
	for k := range f.bk {
		lq -= s[bsFixed+k]
	}
	return lq
}

// Eval returns h(θ) for the current z.
func (f *Block) Eval(m model.Density) (float64, error) {
	if err := f.draw(); err != nil {
		return 0, err
	}
	lp, err := f.evalModel(m)
	if err != nil {
		return 0, err
	}
	s, err := f.scalars()
	if err != nil {
		return 0, err
	}
	return lp - f.logQ(s), nil
}

// Gradient (see Sparse). Natural, per block (Lemma 1 per block, Alg 1c): a_k = C_kᵀ∇log p + z_k (BlockUpper; no solve), μ part
// C_k a_k (BlockLower), factor part C_k H̿_k with H̿_k = dbar(lower(a_k z_kᵀ)) (CholNGTri, the O(s²) row scan); with
// LogDiag the diagonal part is pushed forward by (4): (C H̿)_aa / C_aa = a_a z_a / 2 (the Jacobian of C′ ↦ C is diag(vech R̃_C)
// with R̃_C's diagonal 1/C_ii).
// Euclidean: g = ∇log p + C⁻ᵀz (STL; BlockUpper solve), factor part lower(g zᵀ) per block (LowerOuter; times C_aa
// on the log diagonal). The norm² is ‖·‖₂² of the whole gradient (Table 4: Euclidean for C families).
func (f *Block) Gradient(m model.Density, kind Kind) (float64, float64, error) {
	b := f.b
	if err := f.draw(); err != nil {
		return 0, 0, err
	}
	lp, err := f.logJoint(m)
	if err != nil {
		return 0, 0, err
	}
	if kind == Natural {
		for _, bk := range f.bk {
			if err := backend.BlockUpper(b, false, bk.a, bk.leff, nil, nil, bk.gp); err != nil {
				return 0, 0, err
			}
		}
		if err := b.Axpby(f.a, 1, f.a, 1, f.z); err != nil {
			return 0, 0, err
		}
		for _, bk := range f.bk {
			if err := firstError(
				backend.BlockLower(b, false, bk.gm0, nil, bk.leff, nil, bk.a, 0),
				backend.CholNGTri(b, bk.gl, bk.leff, bk.a, bk.z, 1)); err != nil {
				return 0, 0, err
			}
			if f.LogDiag {
				if err := firstError(b.Mul(bk.diagGL, bk.a, bk.z), b.Axpby(bk.diagGL, 0.5, bk.diagGL, 0, nil)); err != nil {
					return 0, 0, err
				}
			}
		}
	} else {
		for _, bk := range f.bk {
			if err := backend.BlockUpper(b, true, bk.a, bk.leff, nil, nil, bk.z); err != nil {
				return 0, 0, err
			}
		}
		if err := b.Axpby(f.gmuW, 1, f.gp, 1, f.a); err != nil {
			return 0, 0, err
		}
		for _, bk := range f.bk {
			if err := backend.LowerOuter(b, bk.gl, bk.gm0, bk.z, 1); err != nil {
				return 0, 0, err
			}
			if f.LogDiag {
				if err := b.Mul(bk.diagGL, bk.diagGL, bk.diagLeff); err != nil {
					return 0, 0, err
				}
			}
		}
	}
	if err := b.Reduce(f.slot(bsNorm), backend.ReduceSumSq, backend.AxisAll, f.gbuf); err != nil {
		return 0, 0, err
	}
	s, err := f.scalars()
	if err != nil {
		return 0, 0, err
	}
	return lp - f.logQ(s), s[bsNorm], nil
}

// ---- Arrow (Alg 2c) ----

// Arrow is the GLMM local–global sparse precision family of Alg 2c (§6, eq. (11)): Σ⁻¹ = TTᵀ with T
// lower triangular, diagonal blocks T_i (local, r_i×r_i) and T_G (global, d_G×d_G) and a last block row of dense
// T_Gi (d_G×r_i); θ = (b_1, …, b_n, θ_G). λ = (μ, [packed lower T_i, row-major T_Gi]_{i=1..n}, packed lower T_G):
// this order makes the Fisher block diagonal. Memory and work per iteration are O(Σ_i (r_i² + r_i d_G) + d_G²).
// The groups of each size form one batch of the backend's block operations, wherever they stand (see Sparse).
type Arrow struct {
	*sparseCore
	dG, dl     int
	tg, gtg    *T // T_G and its gradient (1×dG×dG views of the buffers)
	zG, wG, vG *T // global parts of z, w (= u_G), v
	gpG, gmuG  *T // global parts of ∇log p and of the μ gradient
	sG, tGz    *T // Σ_i T_Gi(·)_i and T_G z_G (1×dG×1)
	goff       int
}

// Arrow scalar slots.
const (
	asZZ = iota
	asLdG
	asVV
	asVVG
	asZZG
	asTriG
	asNorm
	asFixed // then per bucket: Σ log|T_ii|, tri-norm
)

// NewArrow makes the family on b for local blocks of the given sizes and a global block of size dG, with μ = 0
// and T = diag0·I (§8.2: T = 10·I). One size and a count can be given with UniformArrow.
func NewArrow(b backend.Backend, sizes []int, dG int, diag0 float64) (*Arrow, error) {
	if dG < 1 {
		return nil, fmt.Errorf("cholng: global block size %d < 1", dG)
	}
	if diag0 == 0 || math.IsNaN(diag0) || math.IsInf(diag0, 0) {
		return nil, fmt.Errorf("%w: initial diagonal %g", ErrFactor, diag0)
	}
	for i, s := range sizes {
		if s < 1 {
			return nil, fmt.Errorf("cholng: group %d has %d local variables", i, s)
		}
	}
	c, err := newCore(b, sizes, dG, dG*dG, asFixed, 2)
	if err != nil {
		return nil, err
	}
	f := &Arrow{sparseCore: c, dG: dG, dl: c.d - dG}
	c.np += dG * (dG + 1) / 2
	f.goff = c.tail
	f.tg = viewOf(c.pbuf, f.goff, tensor.Shape{Batch: 1, Rows: dG, Cols: dG}, dG*dG, dG)
	f.gtg = viewOf(c.gbuf, f.goff, tensor.Shape{Batch: 1, Rows: dG, Cols: dG}, dG*dG, dG)
	f.zG, f.wG, f.vG = colView(c.z, f.dl, 1, dG), colView(c.w, f.dl, 1, dG), colView(c.v, f.dl, 1, dG)
	f.gpG, f.gmuG = colView(c.gp, f.dl, 1, dG), colView(c.gbuf, f.dl, 1, dG)
	for _, t := range []**T{&f.sG, &f.tGz} {
		if err == nil {
			if *t, err = b.Alloc(tensor.Shape{Batch: 1, Rows: dG, Cols: 1}); err == nil {
				c.extra = append(c.extra, *t)
			}
		}
	}
	if err == nil {
		for _, bk := range c.bk {
			if err = b.Fill(bk.diagL, diag0); err != nil {
				break
			}
		}
	}
	if err == nil {
		err = b.Fill(diagOf(f.tg), diag0)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// UniformArrow is NewArrow with n groups of r local variables each.
func UniformArrow(b backend.Backend, n, r, dG int, diag0 float64) (*Arrow, error) {
	s := make([]int, n)
	for i := range s {
		s[i] = r
	}
	return NewArrow(b, s, dG, diag0)
}

// Param is Precision.
func (f *Arrow) Param() Param { return Precision }

// Groups returns the local block sizes; GlobalDim returns d_G.
func (f *Arrow) Groups() []int  { return f.sizes }
func (f *Arrow) GlobalDim() int { return f.dG }

// Lambda returns λ = (μ, [packed lower T_i, row-major T_Gi]_i, packed lower T_G).
func (f *Arrow) Lambda() ([]float64, error) { return f.toLambda(f.pbuf) }

// GradLambda returns the last gradient in λ order.
func (f *Arrow) GradLambda() ([]float64, error) { return f.toLambda(f.gbuf) }

func (f *Arrow) toLambda(buf *T) ([]float64, error) {
	h, err := f.downFlat(buf, f.plen)
	if err != nil {
		return nil, err
	}
	out := make([]float64, 0, f.np)
	out = append(out, f.toUser(h)...)
	q := f.dG
	for _, w := range f.where {
		bk, j := f.bk[w[0]], w[1]
		r := bk.r
		blk := h[bk.loff+j*r*r:]
		for a := 0; a < r; a++ {
			out = append(out, blk[a*r:a*r+a+1]...)
		}
		out = append(out, h[bk.moff+j*q*r:bk.moff+(j+1)*q*r]...)
	}
	for a := 0; a < q; a++ {
		out = append(out, h[f.goff+a*q:f.goff+a*q+a+1]...)
	}
	return out, nil
}

// SetLambda sets λ (see Lambda); a zero factor diagonal entry is an error.
func (f *Arrow) SetLambda(lam []float64) error {
	if err := checkLambda(lam, f.np); err != nil {
		return err
	}
	h := make([]float64, f.plen)
	f.fromUser(h, lam[:f.d])
	k, q := f.d, f.dG
	tri := func(dst []float64, r int, what string) error {
		for a := 0; a < r; a++ {
			copy(dst[a*r:a*r+a+1], lam[k:k+a+1])
			k += a + 1
			if dst[a*r+a] == 0 {
				return fmt.Errorf("%w: %s diagonal %d is 0", ErrFactor, what, a)
			}
		}
		return nil
	}
	for g, w := range f.where {
		bk, j := f.bk[w[0]], w[1]
		r := bk.r
		if err := tri(h[bk.loff+j*r*r:], r, fmt.Sprintf("group %d", g)); err != nil {
			return err
		}
		copy(h[bk.moff+j*q*r:bk.moff+(j+1)*q*r], lam[k:k+q*r])
		k += q * r
	}
	if err := tri(h[f.goff:], q, "global block"); err != nil {
		return err
	}
	return f.upFlat(f.pbuf, h)
}

// Dense returns T as a d×d row-major matrix (tests and diagnostics).
func (f *Arrow) Dense() ([]float64, error) {
	lam, err := f.Lambda()
	if err != nil {
		return nil, err
	}
	d, k := f.d, f.d
	t := make([]float64, d*d)
	o := 0
	for _, s := range f.sizes {
		for a := 0; a < s; a++ {
			for b := 0; b <= a; b++ {
				t[(o+a)*d+o+b] = lam[k]
				k++
			}
		}
		for a := 0; a < f.dG; a++ {
			for b := 0; b < s; b++ {
				t[(f.dl+a)*d+o+b] = lam[k]
				k++
			}
		}
		o += s
	}
	for a := 0; a < f.dG; a++ {
		for b := 0; b <= a; b++ {
			t[(f.dl+a)*d+f.dl+b] = lam[k]
			k++
		}
	}
	return t, nil
}

// SetDense sets T (and keeps μ) from a d×d row-major matrix, which must have the arrow pattern and a non-zero
// diagonal.
func (f *Arrow) SetDense(t []float64) error {
	d := f.d
	if len(t) != d*d {
		return fmt.Errorf("cholng: factor has %d entries, want %d", len(t), d*d)
	}
	blk := make([]int, d) // block of each coordinate (len(sizes) = global)
	o := 0
	for i, s := range f.sizes {
		for a := 0; a < s; a++ {
			blk[o+a] = i
		}
		o += s
	}
	for a := f.dl; a < d; a++ {
		blk[a] = len(f.sizes)
	}
	for a := 0; a < d; a++ {
		if t[a*d+a] == 0 || math.IsNaN(t[a*d+a]) || math.IsInf(t[a*d+a], 0) {
			return fmt.Errorf("%w: diagonal entry %d is %g", ErrFactor, a, t[a*d+a])
		}
		for b := 0; b < d; b++ {
			in := b <= a && (blk[a] == blk[b] || a >= f.dl)
			if !in && t[a*d+b] != 0 {
				return fmt.Errorf("%w: entry (%d,%d) = %g outside the arrow pattern", ErrFactor, a, b, t[a*d+b])
			}
		}
	}
	lam, err := f.Lambda()
	if err != nil {
		return err
	}
	k := d
	o = 0
	for _, s := range f.sizes {
		for a := 0; a < s; a++ {
			for b := 0; b <= a; b++ {
				lam[k] = t[(o+a)*d+o+b]
				k++
			}
		}
		for a := 0; a < f.dG; a++ {
			for b := 0; b < s; b++ {
				lam[k] = t[(f.dl+a)*d+o+b]
				k++
			}
		}
		o += s
	}
	for a := 0; a < f.dG; a++ {
		for b := 0; b <= a; b++ {
			lam[k] = t[(f.dl+a)*d+f.dl+b]
			k++
		}
	}
	return f.SetLambda(lam)
}

// draw sets θ by the block formulas of (11) — u_G = T_G⁻ᵀz_G, w_i = T_i⁻ᵀ(z_i − T_Giᵀu_G) with Σ log|T_ii| of
// the same blocks (BlockDraw: one pass per bucket) — leaving w = θ − μ, brings θ to the host and queues the scalars of log q = −(d/2)log2π + Σ log|T_ii| − ½zᵀz
// (Appendix D with n for N).
func (f *Arrow) draw() error {
	b := f.b
	if err := firstError(
		b.Copy(f.wG, f.zG),
		b.Trsm(blas.Left, blas.Lower, blas.Trans, blas.NonUnit, 1, f.tg, f.wG),
		backend.BlockLogAbsDiag(b, f.slot(asLdG), f.tg),
		b.Reduce(f.slot(asZZ), backend.ReduceSumSq, backend.AxisAll, f.z)); err != nil {
		return err
	}
	for k, bk := range f.bk {
		if err := backend.BlockDraw(b, bk.w, f.slot(asFixed+2*k), bk.l, bk.m, f.wG, bk.z); err != nil {
			return err
		}
	}
	return f.finishDraw()
}

func (f *Arrow) logQ(s []float64) float64 {
	lq := -0.5*float64(f.d)*log2Pi - 0.5*s[asZZ] + s[asLdG]
	for k := range f.bk {
		lq += s[asFixed+2*k]
	}
	return lq
}

// Eval returns h(θ) for the current z.
func (f *Arrow) Eval(m model.Density) (float64, error) {
	if err := f.draw(); err != nil {
		return 0, err
	}
	lp, err := f.evalModel(m)
	if err != nil {
		return 0, err
	}
	s, err := f.scalars()
	if err != nil {
		return 0, err
	}
	return lp - f.logQ(s), nil
}

// localSum runs BlockLower over the buckets, accumulating Σ_i T_Gi(·)_i into sG (zero with no groups).
func (f *Arrow) localSum(solve bool, dst, x func(*bucket) *T) error {
	if len(f.bk) == 0 {
		return f.b.Fill(f.sG, 0)
	}
	for k, bk := range f.bk {
		beta := 1.0
		if k == 0 {
			beta = 0
		}
		if err := backend.BlockLower(f.b, solve, dst(bk), f.sG, bk.l, bk.m, x(bk), beta); err != nil {
			return err
		}
	}
	return nil
}

// Gradient (see Sparse).
//
// Natural (Appendix D / eq. (12), fused): v_i = T_i⁻¹∇_i log p + z_i, v_G = T_G⁻¹(∇_G log p −
// Σ_i T_Gi(v_i − z_i)) + z_G (= T⁻¹g with the STL g, so Tz is never formed; BlockLower solve with its coupling sum);
// μ part Σg = T⁻ᵀv by x_G = T_G⁻ᵀv_G, x_i = T_i⁻ᵀ(v_i − T_Giᵀx_G); T_i part T_i H̿_i with H̿_i =
// −dbar(lower(z_i v_iᵀ)); T_Gi part T_Gi H̿_i − T_G z_G v_iᵀ — u_i = T_i⁻ᵀz_i enters, not w_i = θ_i − μ_i (which
// gives a plausible but wrong direction), and no
// contribution from other groups (which is what masking the dense formula would add); T_G part the dense scan with
// (z_G, v_G). Riemannian norm² = ‖v‖² + Σ_i [Σ_{a>b} z_ia²v_ib² + ½Σ_a z_ia²v_ia²] + ‖z_G‖²Σ_i‖v_i‖² + the same
// triangular sum for (z_G, v_G). The local parts of the μ, T_i and T_Gi parts and the pattern sum read the same
// blocks and are one BlockNatGrad per bucket (BlockUpper solve, CholNGTri, BlockCoupledTri and BlockTriNorm2 fused),
// so an iteration passes over each bucket three times: BlockDraw, BlockLower, BlockNatGrad.
//
// Euclidean (masked dense G₂ = −(θ−μ)vᵀ, allowed for Euclidean gradients, (9)): g = ∇log p + Tz (BlockLower
// product with its coupling sum), v = T⁻¹g; T_i part lower(−w_i v_iᵀ) (LowerOuter), T_Gi part −u_G v_iᵀ
// (BlockCoupledTri without the product term), T_G part lower(−u_G v_Gᵀ).
func (f *Arrow) Gradient(m model.Density, kind Kind) (float64, float64, error) {
	b := f.b
	if err := f.draw(); err != nil {
		return 0, 0, err
	}
	lp, err := f.logJoint(m)
	if err != nil {
		return 0, 0, err
	}
	var norm func(s []float64) float64
	if kind == Natural {
		if err := firstError(
			f.localSum(true, func(bk *bucket) *T { return bk.v }, func(bk *bucket) *T { return bk.gp }),
			b.Axpby(f.vG, 1, f.gpG, -1, f.sG),
			b.Trsm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, f.tg, f.vG),
			b.Axpby(f.v, 1, f.v, 1, f.z),
			b.Copy(f.gmuG, f.vG),
			b.Trsm(blas.Left, blas.Lower, blas.Trans, blas.NonUnit, 1, f.tg, f.gmuG),
			b.Copy(f.tGz, f.zG),
			b.Trmm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, f.tg, f.tGz)); err != nil {
			return 0, 0, err
		}
		for k, bk := range f.bk {
			if err := backend.BlockNatGrad(b, bk.gm0, bk.gl, bk.gm, f.slot(asFixed+2*k+1), bk.l, bk.m, f.gmuG, f.tGz,
				bk.z, bk.v, -1); err != nil {
				return 0, 0, err
			}
		}
		if err := firstError(
			backend.CholNGTri(b, f.gtg, f.tg, f.zG, f.vG, -1),
			backend.BlockTriNorm2(b, f.slot(asTriG), f.zG, f.vG),
			b.Reduce(f.slot(asVV), backend.ReduceSumSq, backend.AxisAll, f.v),
			b.Reduce(f.slot(asVVG), backend.ReduceSumSq, backend.AxisAll, f.vG),
			b.Reduce(f.slot(asZZG), backend.ReduceSumSq, backend.AxisAll, f.zG)); err != nil {
			return 0, 0, err
		}
		norm = func(s []float64) float64 {
			n2 := s[asVV] + s[asTriG] + s[asZZG]*(s[asVV]-s[asVVG])
			for k := range f.bk {
				n2 += s[asFixed+2*k+1]
			}
			return n2
		}
	} else {
		if err := firstError(
			f.localSum(false, func(bk *bucket) *T { return bk.gm0 }, func(bk *bucket) *T { return bk.z }),
			b.Copy(f.gmuG, f.zG),
			b.Trmm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, f.tg, f.gmuG),
			b.Axpby(f.gmuG, 1, f.gmuG, 1, f.sG),
			b.Axpby(f.gmuW, 1, f.gp, 1, f.gmuW),
			f.localSum(true, func(bk *bucket) *T { return bk.v }, func(bk *bucket) *T { return bk.gm0 }),
			b.Axpby(f.vG, 1, f.gmuG, -1, f.sG),
			b.Trsm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, 1, f.tg, f.vG)); err != nil {
			return 0, 0, err
		}
		for _, bk := range f.bk {
			if err := firstError(
				backend.LowerOuter(b, bk.gl, bk.w, bk.v, -1),
				backend.BlockCoupledTri(b, bk.gm, nil, nil, bk.v, f.wG, -1)); err != nil {
				return 0, 0, err
			}
		}
		if err := firstError(
			backend.LowerOuter(b, f.gtg, f.wG, f.vG, -1),
			b.Reduce(f.slot(asNorm), backend.ReduceSumSq, backend.AxisAll, f.gbuf)); err != nil {
			return 0, 0, err
		}
		norm = func(s []float64) float64 { return s[asNorm] }
	}
	s, err := f.scalars()
	if err != nil {
		return 0, 0, err
	}
	return lp - f.logQ(s), norm(s), nil
}
