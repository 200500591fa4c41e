package cuda

import (
	"math"
	"testing"

	"github.com/geovb/geovb/backend/cpu"
	"github.com/geovb/geovb/rng"
	"github.com/geovb/geovb/tensor"
)

func init() {
	emuKernels["philox.philox_fill"] = emuPhiloxFill
}

// emuPhiloxRound, emuPhilox10 and emuPhiloxUnit are philox_round, philox10 and philox_unit of kernels/philox.cu.
func emuPhiloxRound(c0, c1, c2, c3, k0, k1 uint32) (uint32, uint32, uint32, uint32) {
	p0 := uint64(c0) * 0xD2511F53
	p1 := uint64(c2) * 0xCD9E8D57
	n0 := uint32(p1>>32) ^ c1 ^ k0
	n1 := uint32(p1)
	n2 := uint32(p0>>32) ^ c3 ^ k1
	n3 := uint32(p0)
	return n0, n1, n2, n3
}

func emuPhilox10(c0, c1, c2, c3, k0, k1 uint32) (uint32, uint32, uint32, uint32) {
	for r := uint32(0); r < 10; r++ {
		c0, c1, c2, c3 = emuPhiloxRound(c0, c1, c2, c3, k0+r*0x9E3779B9, k1+r*0xBB67AE85)
	}
	return c0, c1, c2, c3
}

func emuPhiloxUnit(hi, lo uint32) float64 {
	x := (uint64(hi)<<32 | uint64(lo)) >> 11
	return min((float64(x)+0.5)*0x1p-53, 0x1.fffffffffffffp-1)
}

// emuPhiloxFill is philox_fill thread by thread.
func emuPhiloxFill(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
	dst := a.ptr(0)
	batch, rows, cols, bstride, rstride := a.i64(1), a.i64(2), a.i64(3), a.i64(4), a.i64(5)
	contig := a.i32(6)
	seed, stream, offset := a.u64(7), a.u64(8), a.u64(9)
	normal := a.i32(10)
	rowscale, rsinc := a.ptr(11), a.i64(12)
	if batch <= 0 || rows <= 0 || cols <= 0 {
		return
	}
	total := uint64(batch) * uint64(rows) * uint64(cols)
	first, odd := offset>>1, offset&1
	nblk := (odd+total-1)>>1 + 1
	k0, k1 := uint32(seed), uint32(seed>>32)
	s0, s1 := uint32(stream), uint32(stream>>32)
	step := uint64(grid[0]) * uint64(block[0])
	for bx := uint64(0); bx < uint64(grid[0]); bx++ {
		for tx := uint64(0); tx < uint64(block[0]); tx++ {
			for t := bx*uint64(block[0]) + tx; t < nblk; t += step {
				blk := (first + t) & (1<<63 - 1)
				c0, c1, c2, c3 := emuPhilox10(uint32(blk), uint32(blk>>32), s0, s1, k0, k1)
				var v0, v1 float64
				if normal != 0 {
					// philox_log_unit and philox_sincos_2pi are rng's logUnit and sincos2Pi operation for
					// operation; the emulation runs the Go originals.
					v0, v1 = rng.BoxMuller(emuPhiloxUnit(c0, c1), emuPhiloxUnit(c2, c3))
				} else {
					v0, v1 = emuPhiloxUnit(c0, c1), emuPhiloxUnit(c2, c3)
				}
				for h := uint64(0); h < 2; h++ {
					q := 2*t + h
					if q < odd || q-odd >= total {
						continue
					}
					L := int(q - odd)
					r := L / cols
					var addr int
					if contig != 0 {
						addr = L
					} else {
						j := L - r*cols
						b := r / rows
						i := r - b*rows
						addr = b*bstride + i*rstride + j
					}
					v := v0
					if h == 1 {
						v = v1
					}
					if rowscale != 0 {
						v *= 1 / math.Sqrt(*e.f(rowscale, r*rsinc))
					}
					*e.f(dst, addr) = v
				}
			}
		}
	}
}

// TestEmuPhiloxWords checks the emulated Philox block against package rng.
func TestEmuPhiloxWords(t *testing.T) {
	c := rng.Counter{Seed: 0x0123456789abcdef, Stream: 0xfedcba9876543210}
	for _, blk := range []uint64{0, 1, 2, 1<<32 - 1, 1 << 32, 1<<63 + 12345} {
		w := c.Block(blk)
		g0, g1, g2, g3 := emuPhilox10(uint32(blk), uint32(blk>>32), uint32(c.Stream), uint32(c.Stream>>32),
			uint32(c.Seed), uint32(c.Seed>>32))
		if [4]uint32{g0, g1, g2, g3} != w {
			t.Errorf("block %d: emulated %x, rng %x", blk, [4]uint32{g0, g1, g2, g3}, w)
		}
	}
}

// TestEmuFillRandom runs rndFill on the emulated device over contiguous and strided views, even and odd offsets,
// offsets just before draw number 2⁶⁴ (which wraps to draw 0), and compares with the CPU backend's fills bit for
// bit, uniforms and normals.
func TestEmuFillRandom(t *testing.T) {
	cb, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range []struct{ batch, rows, cols, pad, off int }{
		{1, 1, 1, 0, 0}, {1, 7, 5, 0, 0}, {3, 5, 7, 2, 3}, {2, 4, 6, 0, 1}, {4, 1, 9, 1, 0}, {2, 33, 3, 5, 2},
	} {
		for _, c := range []rng.Counter{{Seed: 7, Stream: 3, Offset: 0}, {Seed: 1 << 40, Stream: 0, Offset: 11},
			{Seed: 5, Stream: 1 << 33, Offset: 1<<32 + 1}, {Seed: 2, Stream: 6, Offset: 1<<64 - 7}, // wraps to draw 0
			{Seed: 2, Stream: 6, Offset: 1<<64 - 8}} {
			for _, normal := range []bool{false, true} {
				want := stridedHost(sh.batch, sh.rows, sh.cols, sh.pad, sh.off, func(b, i, j int) float64 { return 0 })
				got := cloneHost(want)
				if normal {
					err = cb.FillNormal(want, c)
				} else {
					err = cb.FillUniform(want, c)
				}
				if err != nil {
					t.Fatal(err)
				}
				e := newEmuDev(t, 1<<16)
				v := e.put(got)
				if err := rndFill(e, v, c, normal, 0, 0); err != nil {
					t.Fatal(err)
				}
				e.get(got, v)
				samePadding(t, "fill", got, want)
				for b := 0; b < sh.batch; b++ {
					for i := 0; i < sh.rows; i++ {
						for j := 0; j < sh.cols; j++ {
							g, w := got.At(b, i, j), want.At(b, i, j)
							if g != w {
								t.Fatalf("%+v %+v normal=%v: element (%d,%d,%d) = %v, CPU %v", sh, c, normal, b, i, j, g, w)
							}
						}
					}
				}
			}
		}
	}
}

// TestEmuFillRowScale checks the fill fused with the row scaling of the ensemble sampler: row i multiplied by
// 1/√ψ_i, bit for bit what the CPU's sampler computes from the same normals.
func TestEmuFillRowScale(t *testing.T) {
	const d, k = 37, 6
	c := rng.Counter{Seed: 99, Stream: 4, Offset: 5}
	z := make([]float64, d*k)
	c.FillNormal(z)
	psi := stridedHost(1, d, 1, 2, 1, func(_, i, _ int) float64 { return 0.5 + float64(i%5) })
	e := newEmuDev(t, 1<<14)
	pv := e.put(psi)
	dst := tensor.NewHost(1, d, k)
	v := e.put(dst)
	if err := rndFill(e, v, c, true, pv.p, pv.rs); err != nil {
		t.Fatal(err)
	}
	e.get(dst, v)
	for i := 0; i < d; i++ {
		f := 1 / math.Sqrt(psi.At(0, i, 0))
		for j := 0; j < k; j++ {
			want := z[i*k+j] * f
			if g := dst.At(0, i, j); math.Abs(g-want) > 2*0x1p-52*math.Max(math.Abs(want), 1e-3) {
				t.Fatalf("(%d,%d) = %v, want %v", i, j, g, want)
			}
		}
	}
}
