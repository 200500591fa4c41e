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
	b.eachRow(dst, 30, func(bb, i int) {
		rc := c.Advance((bb*rows + i) * cols)
		if normal {
			rc.FillNormal(row(dst, bb, i))
		} else {
			rc.FillUniform(row(dst, bb, i))
		}
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
