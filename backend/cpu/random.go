package cpu

import (
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

// fill writes draws of c into dst, element (b, i, j) taking draw c.Offset + (b·rows + i)·cols + j.
func (b *Backend) fill(op string, dst *tensor.Tensor, c rng.Counter, normal bool) error {
	if err := b.prepElementwise(op, dst, nil); err != nil {
		return err
	}
	rows, cols := dst.Rows(), dst.Cols()
	gen := rng.Counter.FillUniform
	if normal {
		gen = rng.Counter.FillNormal
	}
	if dst.RowsContiguous() && cols > 0 {
		// Whole runs of rows per call, so that short rows (K = 10 draws per row in the low-rank sampler) still
		// reach the generator's vector loop.
		per := max(1, 8192/cols)
		chunks := (rows + per - 1) / per
		b.parallelWork(dst.Batch()*chunks, 30*float64(per*cols), func(lo, hi int) {
			for k := lo; k < hi; k++ {
				bb, r0 := k/chunks, (k%chunks)*per
				r1 := min(r0+per, rows)
				data, _, _, _ := matrix(dst, bb)
				gen(c.Advance((bb*rows+r0)*cols), data[r0*cols:r1*cols])
			}
		})
		return nil
	}
	b.eachRow(dst, 30, func(bb, i int) {
		gen(c.Advance((bb*rows+i)*cols), row(dst, bb, i))
	})
	return nil
}

// FillNormal writes standard normal draws of c into dst.
func (b *Backend) FillNormal(dst *tensor.Tensor, c rng.Counter) error {
	return b.fill("fill_normal", dst, c, true)
}

// FillUniform writes uniform draws of c on (0, 1) into dst.
func (b *Backend) FillUniform(dst *tensor.Tensor, c rng.Counter) error {
	return b.fill("fill_uniform", dst, c, false)
}
