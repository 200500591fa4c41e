package cuda

import (
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/backend/cuda/internal/cu"
	"github.com/geovb/geovb/tensor"
)

// Kernels for the batched block operations of the sparse Cholesky-factor families (backend/cholng_blocks.go; paper
// 003 Algs 1c and 2c) and the small-block forms of CholNGTri and LowerOuter (backend/cholng.go),
// in kernels/cholng.cu: each operation is one launch, one thread per block (per row of a block for the row scans),
// in place of the references' chains of copies, batched TRMM/TRSM/GEMM, element-wise maps and reductions over
// scratch tensors. The sums over the batch (the coupling sum of BlockLower, BlockTriNorm2, BlockLogAbsDiag) finish
// in the same launch: per-block totals, and the last block to finish adds them in block order (the counter it takes
// its ticket from is zeroed by a 4-byte memset first). The grid is a function of the batch only, so the results
// depend on n only, never on scheduling.
//
// Sizes the kernels do not take run the reference: BlockLower and BlockUpper keep a block in registers and take
// r ≤ cngRMax (Applies); BlockLower takes q ≤ cngQMax coupling rows (its shared memory; q is not part of the
// shape Applies sees, so the check is in the kernel function); CholNGTri and LowerOuter take blocks of order up to
// cngTriMax (a thread per row suits small blocks, not the dense d = 4096 factors of Alg 1b).

// Limits of kernels/cholng.cu (CNG_RMAX, CNG_QMAX) and of the row-scan registrations.
const (
	cngRMax   = 16
	cngQMax   = 512
	cngTriMax = 32
	cngWarps  = hotThreads / 32
)

// cngMaxBlocks caps the grid of the summing kernels: the rest of the batch is taken in grid-stride rounds, and the
// last block adds at most this many partial sums (a variable so that tests can run several rounds on small batches).
var cngMaxBlocks = 1024

func init() {
	isCUDA := func(b backend.Backend) bool { _, ok := b.(*Backend); return ok }
	smallR := func(b backend.Backend, s tensor.Shape) bool { return isCUDA(b) && s.Rows <= cngRMax }
	always := func(b backend.Backend, _ tensor.Shape) bool { return isCUDA(b) }
	smallTri := func(b backend.Backend, s tensor.Shape) bool { return isCUDA(b) && s.Rows <= cngTriMax }
	backend.BlockLowerOp.Register(backend.Kernel[backend.BlockLowerFunc]{
		Name: "cuda.cholng.blocks.lower", Backend: Name, Priority: 10, Applies: smallR, Fn: blockLowerCUDA})
	backend.BlockUpperOp.Register(backend.Kernel[backend.BlockUpperFunc]{
		Name: "cuda.cholng.blocks.upper", Backend: Name, Priority: 10, Applies: smallR, Fn: blockUpperCUDA})
	backend.BlockCoupledTriOp.Register(backend.Kernel[backend.BlockCoupledTriFunc]{
		Name: "cuda.cholng.blocks.coupled", Backend: Name, Priority: 10, Applies: always, Fn: blockCoupledCUDA})
	backend.BlockTriNorm2Op.Register(backend.Kernel[backend.BlockTriNorm2Func]{
		Name: "cuda.cholng.blocks.trinorm2", Backend: Name, Priority: 10, Applies: always, Fn: blockTriNorm2CUDA})
	backend.BlockLogAbsDiagOp.Register(backend.Kernel[backend.BlockLogAbsDiagFunc]{
		Name: "cuda.cholng.blocks.logabsdiag", Backend: Name, Priority: 10, Applies: always, Fn: blockLogAbsDiagCUDA})
	backend.BlockDrawOp.Register(backend.Kernel[backend.BlockDrawFunc]{
		Name: "cuda.cholng.blocks.draw", Backend: Name, Priority: 10, Applies: smallR, Fn: blockDrawCUDA})
	backend.BlockNatGradOp.Register(backend.Kernel[backend.BlockNatGradFunc]{
		Name: "cuda.cholng.blocks.natgrad", Backend: Name, Priority: 10, Applies: smallR, Fn: blockNatGradCUDA})
	backend.CholNGTriOp.Register(backend.Kernel[backend.CholNGTriFunc]{
		Name: "cuda.cholng.tri.blocks", Backend: Name, Priority: 10, Applies: smallTri, Fn: cholNGTriCUDA})
	backend.LowerOuterOp.Register(backend.Kernel[backend.LowerOuterFunc]{
		Name: "cuda.cholng.lowerouter.blocks", Backend: Name, Priority: 10, Applies: smallTri, Fn: lowerOuterCUDA})
}

// cngView is t's hotView with batch stride 0 for a batch-1 operand (broadcast over the batch); the zero view for nil.
func cngView(b *Backend, t *tensor.Tensor) hotView {
	v := hotViewOf(b, t)
	if t != nil && t.Batch() == 1 {
		v.bs = 0
	}
	return v
}

// cngSumGrid returns the grid of a summing kernel over n items.
func cngSumGrid(n int) [3]uint32 {
	g := hotGrid(n, hotThreads)
	g[0] = uint32(min(int(g[0]), cngMaxBlocks))
	return g
}

// cngPartials returns the scratch of a summing kernel: g·q partial sums followed by the ticket counter, zeroed.
func cngPartials(d hotDev, g, q int) (part, count cu.DevPtr, err error) {
	part, err = d.Scratch(hotSlotA, int64(8*(g*q+1)))
	if err != nil {
		return 0, 0, err
	}
	count = part + cu.DevPtr(8*g*q)
	return part, count, d.Memset0(count, 4)
}

// blockLowerCUDA is BlockLower (operands checked by backend.BlockLower or the caller).
func blockLowerCUDA(be backend.Backend, solve bool, dst, s, l, m, x *tensor.Tensor, beta float64) error {
	b := be.(*Backend)
	if err := b.ownsNamed("cholng.blocks.lower", []string{"dst", "s", "l", "m", "x"}, dst, s, l, m, x); err != nil {
		return err
	}
	if m != nil && m.Rows() > cngQMax {
		return backend.BlockLowerOp.Reference()(be, solve, dst, s, l, m, x, beta)
	}
	dv, sv, lv, mv, xv := cngView(b, dst), cngView(b, s), cngView(b, l), cngView(b, m), cngView(b, x)
	return b.queue("cholng.blocks.lower", func() error { return cngLowerRun(b.hot(), solve, dv, sv, lv, mv, xv, beta) })
}

// cngLowerRun launches cholng_lower over dst's batch; m.p = 0 means no coupling sum.
func cngLowerRun(d hotDev, solve bool, dst, s, l, m, x hotView, beta float64) error {
	n, r := dst.batch, dst.rows
	q := 0
	if m.p != 0 {
		q = m.rows
	}
	g := cngSumGrid(n)
	var part, count cu.DevPtr
	if q > 0 {
		var err error
		if part, count, err = cngPartials(d, int(g[0]), q); err != nil {
			return err
		}
	}
	return d.launch("cholng", "cholng_lower", g, hotBlock(hotThreads), uint32(8*(cngWarps+1)*q),
		dst.p, dst.bs, dst.rs, l.p, l.bs, l.rs, x.p, x.bs, x.rs, m.p, m.bs, m.rs, s.p, s.rs, part, count,
		n, r, q, hotBool(solve), beta)
}

// blockUpperCUDA is BlockUpper (operands checked).
func blockUpperCUDA(be backend.Backend, solve bool, dst, l, m, c, x *tensor.Tensor) error {
	b := be.(*Backend)
	if err := b.ownsNamed("cholng.blocks.upper", []string{"dst", "l", "m", "c", "x"}, dst, l, m, c, x); err != nil {
		return err
	}
	dv, lv, mv, cv, xv := cngView(b, dst), cngView(b, l), cngView(b, m), cngView(b, c), cngView(b, x)
	return b.queue("cholng.blocks.upper", func() error { return cngUpperRun(b.hot(), solve, dv, lv, mv, cv, xv) })
}

func cngUpperRun(d hotDev, solve bool, dst, l, m, c, x hotView) error {
	q := 0
	if m.p != 0 {
		q = m.rows
	}
	return d.launch("cholng", "cholng_upper", hotGrid(dst.batch, hotThreads), hotBlock(hotThreads), 0,
		dst.p, dst.bs, dst.rs, l.p, l.bs, l.rs, x.p, x.bs, x.rs, m.p, m.bs, m.rs, c.p, c.bs, c.rs,
		dst.batch, dst.rows, q, hotBool(solve))
}

// Modes of cholng_rowscan.
const (
	cngCoupled = 0
	cngTri     = 1
	cngOuter   = 2
)

// blockCoupledCUDA is BlockCoupledTri (operands checked).
func blockCoupledCUDA(be backend.Backend, dst, m, x, y, q *tensor.Tensor, alpha float64) error {
	b := be.(*Backend)
	if err := b.ownsNamed("cholng.blocks.coupled", []string{"dst", "m", "x", "y", "q"}, dst, m, x, y, q); err != nil {
		return err
	}
	dv, mv, xv, yv, qv := cngView(b, dst), cngView(b, m), cngView(b, x), cngView(b, y), cngView(b, q)
	return b.queue("cholng.blocks.coupled", func() error { return cngRowScanRun(b.hot(), cngCoupled, dv, mv, xv, yv, qv, alpha) })
}

// cholNGTriCUDA is CholNGTri for small blocks (operands checked by backend.CholNGTri).
func cholNGTriCUDA(be backend.Backend, dst, l, x, y *tensor.Tensor, alpha float64) error {
	b := be.(*Backend)
	if err := b.ownsNamed("cholng.tri", []string{"dst", "l", "x", "y"}, dst, l, x, y); err != nil {
		return err
	}
	dv, lv, xv, yv := cngView(b, dst), cngView(b, l), cngView(b, x), cngView(b, y)
	return b.queue("cholng.tri", func() error { return cngRowScanRun(b.hot(), cngTri, dv, lv, xv, yv, hotView{}, alpha) })
}

// lowerOuterCUDA is LowerOuter for small blocks (operands checked by backend.LowerOuter).
func lowerOuterCUDA(be backend.Backend, dst, x, y *tensor.Tensor, alpha float64) error {
	b := be.(*Backend)
	if err := b.ownsNamed("cholng.lowerouter", []string{"dst", "x", "y"}, dst, x, y); err != nil {
		return err
	}
	dv, xv, yv := cngView(b, dst), cngView(b, x), cngView(b, y)
	return b.queue("cholng.lowerouter", func() error { return cngRowScanRun(b.hot(), cngOuter, dv, hotView{}, xv, yv, hotView{}, alpha) })
}

// cngRowScanRun launches cholng_rowscan over the dst.batch·dst.rows rows of dst.
func cngRowScanRun(d hotDev, mode int32, dst, m, x, y, q hotView, alpha float64) error {
	rows := dst.batch * dst.rows
	if rows == 0 || dst.cols == 0 {
		return nil
	}
	return d.launch("cholng", "cholng_rowscan", hotGrid(rows, hotThreads), hotBlock(hotThreads), 0,
		dst.p, dst.bs, dst.rs, m.p, m.bs, m.rs, x.p, x.bs, x.rs, y.p, y.bs, y.rs, q.p, q.bs, q.rs,
		dst.batch, dst.rows, dst.cols, mode, alpha)
}

// blockTriNorm2CUDA is BlockTriNorm2 over n items (operands checked; x and y have batch n or 1).
func blockTriNorm2CUDA(be backend.Backend, dst, x, y *tensor.Tensor, n int) error {
	b := be.(*Backend)
	if err := b.ownsNamed("cholng.blocks.trinorm2", []string{"dst", "x", "y"}, dst, x, y); err != nil {
		return err
	}
	dv, xv, yv := cngView(b, dst), cngView(b, x), cngView(b, y)
	return b.queue("cholng.blocks.trinorm2", func() error { return cngTriNorm2Run(b.hot(), dv, xv, yv, n) })
}

func cngTriNorm2Run(d hotDev, dst, x, y hotView, n int) error {
	g := cngSumGrid(n)
	part, count, err := cngPartials(d, int(g[0]), 1)
	if err != nil {
		return err
	}
	return d.launch("cholng", "cholng_trinorm2", g, hotBlock(hotThreads), uint32(8*(cngWarps+1)),
		dst.p, x.p, x.bs, x.rs, y.p, y.bs, y.rs, part, count, n, x.rows)
}

// blockLogAbsDiagCUDA is BlockLogAbsDiag (operands checked).
func blockLogAbsDiagCUDA(be backend.Backend, dst, l *tensor.Tensor) error {
	b := be.(*Backend)
	if err := b.ownsNamed("cholng.blocks.logabsdiag", []string{"dst", "l"}, dst, l); err != nil {
		return err
	}
	dv, lv := cngView(b, dst), cngView(b, l)
	return b.queue("cholng.blocks.logabsdiag", func() error { return cngLogAbsDiagRun(b.hot(), dv, lv) })
}

func cngLogAbsDiagRun(d hotDev, dst, l hotView) error {
	g := cngSumGrid(l.batch)
	part, count, err := cngPartials(d, int(g[0]), 1)
	if err != nil {
		return err
	}
	return d.launch("cholng", "cholng_logabsdiag", g, hotBlock(hotThreads), uint32(8*(cngWarps+1)),
		dst.p, l.p, l.bs, l.rs, part, count, l.batch, l.rows)
}

// blockDrawCUDA is BlockDraw (operands checked): cholng_draw, one launch (and the counter's memset).
func blockDrawCUDA(be backend.Backend, dst, ld, l, m, c, x *tensor.Tensor) error {
	b := be.(*Backend)
	if err := b.ownsNamed("cholng.blocks.draw", []string{"dst", "ld", "l", "m", "c", "x"}, dst, ld, l, m, c, x); err != nil {
		return err
	}
	dv, ldv, lv, mv, cv, xv := cngView(b, dst), cngView(b, ld), cngView(b, l), cngView(b, m), cngView(b, c), cngView(b, x)
	return b.queue("cholng.blocks.draw", func() error { return cngDrawRun(b.hot(), dv, ldv, lv, mv, cv, xv) })
}

func cngDrawRun(d hotDev, dst, ld, l, m, c, x hotView) error {
	q := 0
	if m.p != 0 {
		q = m.rows
	}
	g := cngSumGrid(dst.batch)
	part, count, err := cngPartials(d, int(g[0]), 1)
	if err != nil {
		return err
	}
	return d.launch("cholng", "cholng_draw", g, hotBlock(hotThreads), uint32(8*(cngWarps+1)),
		dst.p, dst.bs, dst.rs, ld.p, l.p, l.bs, l.rs, x.p, x.bs, x.rs, m.p, m.bs, m.rs, c.p, c.bs, c.rs, part, count,
		dst.batch, dst.rows, q)
}

// blockNatGradCUDA is BlockNatGrad (operands checked): cholng_natgrad, one launch (and the counter's memset).
func blockNatGradCUDA(be backend.Backend, dmu, dl, dm, tn, l, m, c, q, z, v *tensor.Tensor, alpha float64) error {
	b := be.(*Backend)
	if err := b.ownsNamed("cholng.blocks.natgrad", []string{"dmu", "dl", "dm", "tn", "l", "m", "c", "q", "z", "v"},
		dmu, dl, dm, tn, l, m, c, q, z, v); err != nil {
		return err
	}
	vs := [10]hotView{}
	for k, t := range []*tensor.Tensor{dmu, dl, dm, tn, l, m, c, q, z, v} {
		vs[k] = cngView(b, t)
	}
	return b.queue("cholng.blocks.natgrad", func() error { return cngNatGradRun(b.hot(), vs, alpha) })
}

// cngNatGradRun launches cholng_natgrad on the views of (dmu, dl, dm, tn, l, m, c, q, z, v).
func cngNatGradRun(d hotDev, vs [10]hotView, alpha float64) error {
	du, dl, dm, tn, l, m, c, q, z, v := vs[0], vs[1], vs[2], vs[3], vs[4], vs[5], vs[6], vs[7], vs[8], vs[9]
	g := cngSumGrid(du.batch)
	part, count, err := cngPartials(d, int(g[0]), 1)
	if err != nil {
		return err
	}
	return d.launch("cholng", "cholng_natgrad", g, hotBlock(hotThreads), uint32(8*(cngWarps+1)),
		du.p, du.bs, du.rs, dl.p, dl.bs, dl.rs, dm.p, dm.bs, dm.rs, tn.p, l.p, l.bs, l.rs, m.p, m.bs, m.rs,
		c.p, c.bs, c.rs, q.p, q.bs, q.rs, z.p, z.bs, z.rs, v.p, v.bs, v.rs, part, count, du.batch, du.rows, m.rows,
		alpha)
}
