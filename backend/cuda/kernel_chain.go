package cuda

import (
	"github.com/geovb/geovb/backend"
	"github.com/geovb/geovb/tensor"
)

// The chain natural gradient (backend/chain.go; kernels/chain.cu) as one thread per chain running the two
// sequential recurrences: one launch in place of the reference's ≈ 8⌈log₂ n⌉ element-wise launches over the whole
// tensor. The batches of the experiments have tens to thousands of chains of 10²–10⁴ steps.

func init() {
	backend.ChainNatGradOp.Register(backend.Kernel[backend.ChainNatGradFunc]{
		Name: "cuda.chain.natgrad", Backend: Name, Priority: 10,
		Applies: func(b backend.Backend, _ tensor.Shape) bool { _, ok := b.(*Backend); return ok },
		Fn:      chainNatGradCUDA,
	})
}

// chainNatGradCUDA runs kernels/chain.cu; when dst shares memory with breve or ring (which the kernel reads after
// writing dst) or with g other than as the same view, it runs into scratch and copies.
func chainNatGradCUDA(be backend.Backend, dst, g, breve, ring *tensor.Tensor) error {
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
	if err := b.do(func() error { return chainRun(b.hot(), ov, gv, bv, rv) }); err != nil {
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
