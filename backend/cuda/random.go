package cuda

import (
	"github.com/geovb/geovb/backend/cuda/internal/cu"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// fillRandom writes draws of the stream c into dst (kernels/philox.cu): element (b, i, j) gets draw
// c.Offset + (b·rows + i)·cols + j, numbered as rng.Counter.FillNormal and FillUniform number them, so a counter
// gives the same uniforms and normals, bit for bit, on the CPU and on the GPU.
func (b *Backend) fillRandom(dst *tensor.Tensor, c rng.Counter, normal bool) error {
	op := "fill_uniform"
	if normal {
		op = "fill_normal"
	}
	if err := b.ownsNamed(op, []string{"dst"}, dst); err != nil {
		return err
	}
	if dst == nil || dst.Len() == 0 {
		return nil
	}
	v := hotViewOf(b, dst)
	return b.queue(op, func() error { return rndFill(b.hot(), v, c, normal, 0, 0) })
}

// rndFill launches philox_fill over the view v, one thread per Philox block. A non-zero rowscale multiplies row r
// (of the batch: r = b·rows + i) by 1/√rowscale[r·rsinc].
func rndFill(d hotDev, v hotView, c rng.Counter, normal bool, rowscale cu.DevPtr, rsinc int) error {
	total := uint64(v.batch) * uint64(v.rows) * uint64(v.cols)
	if total == 0 {
		return nil
	}
	nblk := (c.Offset&1+total-1)>>1 + 1 // the blocks the draws touch, as philox_fill counts them
	return d.launch("philox", "philox_fill", hotGrid(int(nblk), hotThreads), hotBlock(hotThreads), 0,
		v.p, v.batch, v.rows, v.cols, v.bs, v.rs, hotBool(v.contiguous()), c.Seed, c.Stream, c.Offset,
		hotBool(normal), rowscale, rsinc)
}
