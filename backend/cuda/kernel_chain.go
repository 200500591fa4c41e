package cuda

import (
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// The chain natural gradient (backend/chain.go; kernels/chain.cu) in one launch in place of the reference's
// ≈ 8⌈log₂ n⌉ element-wise launches over the whole tensor. The batches of the experiments have tens to thousands
// of chains of 10²–10⁴ steps. One thread per chain running the two sequential recurrences waits on a dependent
// global load per step (on an H200 about 0.2 µs: 198 µs for 5 chains of 1000 steps, docs/benchmarks.md), so chains
// of 32 steps or more run one warp per chain with the recurrences scanned 32 steps at a time; shorter ones keep a
// thread each.

func init() {
	isCUDA := func(b backend.Backend) bool { _, ok := b.(*Backend); return ok }
	backend.ChainNatGradOp.Register(backend.Kernel[backend.ChainNatGradFunc]{
		Name: "cuda.chain.natgrad", Backend: Name, Priority: 20,
		Applies: func(b backend.Backend, s tensor.Shape) bool { return isCUDA(b) && s.Cols < chainWarpMin },
		Fn: func(be backend.Backend, dst, g, breve, ring *tensor.Tensor) error {
			return chainNatGradCUDA(be, dst, g, breve, ring, chainRun)
		},
	})
	backend.ChainNatGradOp.Register(backend.Kernel[backend.ChainNatGradFunc]{
		Name: "cuda.chain.natgrad.warp", Backend: Name, Priority: 10,
		Applies: func(b backend.Backend, _ tensor.Shape) bool { return isCUDA(b) },
		Fn: func(be backend.Backend, dst, g, breve, ring *tensor.Tensor) error {
			return chainNatGradCUDA(be, dst, g, breve, ring, chainRunWarp)
		},
	})
}

// chainWarpMin is the chain length from which a warp per chain is used (one tile of the warp scan).
const chainWarpMin = 32

// chainNatGradCUDA runs a kernel of kernels/chain.cu through run; when dst shares memory with breve or ring (which
// the kernels read after writing dst) or with g other than as the same view, it runs into scratch and copies.
func chainNatGradCUDA(be backend.Backend, dst, g, breve, ring *tensor.Tensor,
	run func(d hotDev, dst, g, breve, ring hotView) error) error {
	const op = "chain.natgrad"
	b := be.(*Backend)
	if err := b.ownsNamed(op, []string{"dst", "g", "breve", "ring"}, dst, g, breve, ring); err != nil {
		return err
	}
	if g.Len() == 0 {
		return nil
	}
	out := dst
	shares := func(t *tensor.Tensor) bool { return dst.Storage() == t.Storage() }
	same := dst.Offset() == g.Offset() && dst.BatchStride() == g.BatchStride() && dst.RowStride() == g.RowStride()
	if shares(breve) || shares(ring) || shares(g) && !same {
		t, err := b.Alloc(g.Shape())
		if err != nil {
			return err
		}
		defer b.Free(t)
		out = t
	}
	ov, gv, bv, rv := hotViewOf(b, out), hotViewOf(b, g), hotViewOf(b, breve), hotViewOf(b, ring)
	if err := b.queue(op, func() error { return run(b.hot(), ov, gv, bv, rv) }); err != nil {
		return err
	}
	if out != dst {
		return b.Copy(dst, out)
	}
	return nil
}

func chainRun(d hotDev, dst, g, breve, ring hotView) error {
	nchains := g.batch * g.rows
	return d.launch("chain", "chain_natgrad", hotGrid(nchains, hotThreads), hotBlock(hotThreads), 0,
		dst.p, dst.bs, dst.rs, g.p, g.bs, g.rs, breve.p, breve.bs, breve.rs, ring.p, ring.bs, ring.rs,
		nchains, g.rows, g.cols)
}

// chainRunWarp launches chain_natgrad_warp: hotThreads/32 chains per block.
func chainRunWarp(d hotDev, dst, g, breve, ring hotView) error {
	nchains := g.batch * g.rows
	return d.launch("chain", "chain_natgrad_warp", hotGrid(nchains, hotThreads/32), hotBlock(hotThreads), 0,
		dst.p, dst.bs, dst.rs, g.p, g.bs, g.rs, breve.p, breve.bs, breve.rs, ring.p, ring.bs, ring.rs,
		nchains, g.rows, g.cols)
}
