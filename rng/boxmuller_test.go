package rng

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/geovb/geovb/internal/bigref"
)

// logUnit against ln evaluated in 256-bit arithmetic (internal/bigref): within 1 ulp over random uniforms of every
// binade the generator produces, the ends of (0, 1), powers of two and both sides of the √2 reduction boundary.
// (Measured: 93% of random arguments correctly rounded, the rest 1 ulp off.)
func TestLogUnitAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	us := []float64{toUnit(0, 0), toUnit(math.MaxUint32, math.MaxUint32), 0x1p-53, math.Sqrt2 / 2,
		math.Nextafter(math.Sqrt2/2, 0), math.Nextafter(math.Sqrt2/2, 1), 1 - 0x1p-53, 0.75, 0.9999}
	for e := 1; e <= 54; e++ {
		us = append(us, math.Ldexp(1, -e))
	}
	for i := 0; i < 20000; i++ {
		u := toUnit(r.Uint32(), r.Uint32())
		if i%4 == 0 {
			u = math.Ldexp(u, -r.IntN(53)) // reach the small binades too
		}
		us = append(us, u)
	}
	off := 0
	for _, u := range us {
		got, want := logUnit(u), bigref.Log(u)
		if d := bigref.Ulps(got, want); d > 1 {
			t.Fatalf("logUnit(%v) = %v, want %v: %.2f ulp", u, got, want, d)
		} else if d > 0 {
			off++
		}
	}
	t.Logf("%d of %d not correctly rounded (1 ulp)", off, len(us))
}

// sincos2Pi against sin and cos evaluated in 256-bit arithmetic: within 1 ulp over random uniforms and the
// quadrant boundaries, exact at the quarter turns. (Measured: 96% correctly rounded, the rest 1 ulp off.)
func TestSincos2PiAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	us := []float64{0x1p-53, 1 - 0x1p-53}
	for q := 1; q < 8; q++ {
		us = append(us, float64(q)/8+0x1p-40, float64(q)/8-0x1p-40, math.Nextafter(float64(q)/8, 0))
	}
	for i := 0; i < 20000; i++ {
		us = append(us, toUnit(r.Uint32(), r.Uint32()))
	}
	off := 0
	for _, u := range us {
		gs, gc := sincos2Pi(u)
		ws, wc := bigref.Sincos2Pi(u)
		ds, dc := bigref.Ulps(gs, ws), bigref.Ulps(gc, wc)
		if ds > 1 || dc > 1 {
			t.Fatalf("sincos2Pi(%v) = (%v, %v), want (%v, %v): %.2f, %.2f ulp", u, gs, gc, ws, wc, ds, dc)
		}
		if ds > 0 || dc > 0 {
			off++
		}
	}
	for _, c := range []struct{ u, s, c float64 }{{0, 0, 1}, {0.25, 1, 0}, {0.5, 0, -1}, {0.75, -1, 0}} {
		if s, co := sincos2Pi(c.u); s != c.s || co != c.c {
			t.Fatalf("sincos2Pi(%v) = (%v, %v), want (%v, %v)", c.u, s, co, c.s, c.c)
		}
	}
	t.Logf("%d of %d arguments with a result 1 ulp off", off, len(us))
}

// BoxMuller against the textbook formula through math: within 4e-15 relative (the generator's normals moved by at
// most that when they stopped going through the maths library).
func TestBoxMullerMatchesMath(t *testing.T) {
	c := Counter{Seed: 9, Stream: 2}
	for n := uint64(0); n < 200_000; n++ {
		w := c.Block(n)
		u1, u2 := toUnit(w[0], w[1]), toUnit(w[2], w[3])
		rr := math.Sqrt(-2 * math.Log(u1))
		s, co := math.Sincos(2 * math.Pi * u2)
		e, o := BoxMuller(u1, u2)
		if math.Abs(e-rr*co) > 4e-15*math.Max(1, rr) || math.Abs(o-rr*s) > 4e-15*math.Max(1, rr) {
			t.Fatalf("block %d: BoxMuller = (%v, %v), math = (%v, %v)", n, e, o, rr*co, rr*s)
		}
	}
}

// fillWith returns FillNormal and FillUniform of n values from c, made with kernel k.
func fillWith(k fillKernel, c Counter, n int) (normal, uniform []float64) {
	defer func(k fillKernel) { useKernel = k }(useKernel)
	useKernel = k
	normal, uniform = make([]float64, n), make([]float64, n)
	c.FillNormal(normal)
	c.FillUniform(uniform)
	return normal, uniform
}

// checkFill compares the fills of the kernel in use with those of the Go loops and with the element-wise scalar
// definition (Normal, Uniform), bit for bit.
func checkFill(t *testing.T, c Counter, n int) {
	t.Helper()
	got, gotU := fillWith(useKernel, c, n)
	ref, refU := fillWith(kernelGo, c, n)
	for i := range got {
		if want := c.Normal(uint64(i)); math.Float64bits(got[i]) != math.Float64bits(want) || got[i] != ref[i] {
			t.Fatalf("%+v n=%d: normal %d = %v, Go loops %v, scalar %v", c, n, i, got[i], ref[i], want)
		}
		if want := c.Uniform(uint64(i)); math.Float64bits(gotU[i]) != math.Float64bits(want) || gotU[i] != refU[i] {
			t.Fatalf("%+v n=%d: uniform %d = %v, Go loops %v, scalar %v", c, n, i, gotU[i], refU[i], want)
		}
	}
}

// The vector kernels (those the CPU has) against the Go loops and the scalar definition, bit for bit: every offset
// parity, lengths around the steps of 8 (AVX2) and 16 (AVX-512) values, so that the AVX-512 kernel hands remainders
// to the AVX2 kernel and the Go loops, streams and seeds with high words set, and block numbers that carry into the
// high counter word in every lane of either kernel.
func TestFillKernelsMatchScalar(t *testing.T) {
	forKernels(t, []fillKernel{kernelAVX2, kernelAVX512}, testFillKernelsMatchScalar)
}

func testFillKernelsMatchScalar(t *testing.T) {
	for _, c := range []Counter{{Seed: 1}, {Seed: 0xfedcba9876543210, Stream: 0x0123456789abcdef, Offset: 7},
		{Seed: 3, Stream: 5, Offset: 2*(1<<32) - 6}} {
		for _, n := range []int{8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 40, 47, 48, 49, 64, 1001} {
			checkFill(t, c, n)
		}
	}
	// Block 2³² (the carry into the high counter word) in each lane of each step of a fill of 16 + 16 + 8 + 5
	// values, from either offset parity.
	for d := uint64(0); d < 48; d++ {
		checkFill(t, Counter{Seed: 0x9e3779b97f4a7c15, Stream: 1 << 40, Offset: 2*(1<<32) - d}, 45)
	}
	// Many draws, so that every quadrant and binade of the transform is reached.
	c := Counter{Seed: 11, Stream: 1}
	got := make([]float64, 1<<20)
	c.FillNormal(got)
	for i := 0; i < len(got); i += 2 {
		w := c.Block(uint64(i / 2))
		e, o := BoxMuller(toUnit(w[0], w[1]), toUnit(w[2], w[3]))
		if got[i] != e || got[i+1] != o {
			t.Fatalf("pair %d = (%v, %v), scalar (%v, %v)", i/2, got[i], got[i+1], e, o)
		}
	}
}

// Fills that cross draw number 2⁶⁴, which wraps to draw 0 as Advance and the scalar definition take it, from every
// offset before the wrap up to one AVX-512 step and a half, in each kernel.
func TestFillWrapsAtDraw2To64(t *testing.T) {
	forKernels(t, []fillKernel{kernelGo, kernelAVX2, kernelAVX512}, func(t *testing.T) {
		for back := uint64(1); back <= 40; back++ {
			c := Counter{Seed: 5, Stream: 9, Offset: -back}
			checkFill(t, c, 45)
			got, _ := fillWith(useKernel, c, 45)
			if want := (Counter{Seed: 5, Stream: 9}).Normal(0); got[back] != want {
				t.Fatalf("offset 2⁶⁴ − %d: value %d = %v, draw 0 of the stream is %v", back, back, got[back], want)
			}
		}
	})
}

// The ends of toUnit inside every kernel: blocks whose words are all ones (where (x + ½)·2⁻⁵³ rounds to 1 and the
// cap, constant 47 of fillConsts, must give the largest double below 1), all zeros (2⁻⁵⁴, the smallest logUnit
// argument) and mixtures, found by inverting Philox, and placed at every lane of the AVX-512 and AVX2 steps and in
// the Go loops' tail.
func TestFillKernelsToUnitEnds(t *testing.T) {
	forKernels(t, []fillKernel{kernelGo, kernelAVX2, kernelAVX512}, testFillKernelsToUnitEnds)
}

func testFillKernelsToUnitEnds(t *testing.T) {
	const ones, n = math.MaxUint32, 45 // 16 + 16 by AVX-512, 8 by AVX2, 5 by the Go loops
	for _, w := range [][4]uint32{{ones, ones, ones, ones}, {0, 0, 0, 0}, {ones, ones, 0, 0}, {0, 0, ones, ones},
		{ones, ones - 1<<11, ones, ones}} {
		key := [2]uint32{0x01234567, 0x89abcdef}
		ctr := philoxInverse(w, key)
		for ; ctr[1] >= 1<<31; ctr = philoxInverse(w, key) { // draw 2·blk must not wrap around 2⁶⁴
			key[0]++
		}
		blk := uint64(ctr[0]) | uint64(ctr[1])<<32
		c := Counter{Seed: uint64(key[0]) | uint64(key[1])<<32, Stream: uint64(ctr[2]) | uint64(ctr[3])<<32}
		if c.Block(blk) != w {
			t.Fatalf("philoxInverse(%x) = %x, whose block is %x", w, ctr, c.Block(blk))
		}
		u1, u2 := toUnit(w[0], w[1]), toUnit(w[2], w[3])
		if w[0] == ones && w[1] == ones && u1 != math.Nextafter(1, 0) {
			t.Fatalf("toUnit(all ones) = %v", u1)
		}
		e, o := BoxMuller(u1, u2)
		for i := 0; i < n; i++ { // draw 2·blk at index i of the fill
			cc := c
			cc.Offset = 2*blk - uint64(i)
			checkFill(t, cc, n)
			got, gotU := fillWith(useKernel, cc, n)
			if gotU[i] != u1 || got[i] != e || (i+1 < n && (gotU[i+1] != u2 || got[i+1] != o)) {
				t.Fatalf("block %x at index %d: uniforms (%v, %v), normals (%v, %v), want (%v, %v), (%v, %v)",
					w, i, gotU[i], gotU[min(i+1, n-1)], got[i], got[min(i+1, n-1)], u1, u2, e, o)
			}
		}
	}
}

// philoxInverse returns the counter that Philox4x32 maps to w under key: each round undone, last first (the
// multipliers are odd, so the low words of the products give the inputs back).
func philoxInverse(w [4]uint32, key [2]uint32) [4]uint32 {
	inv := func(m uint32) uint32 { // m⁻¹ mod 2³² by Newton's iteration, each step doubling the correct bits
		x := m
		for range 5 {
			x *= 2 - m*x
		}
		return x
	}
	y0, y1, y2, y3 := w[0], w[1], w[2], w[3]
	for r := uint32(9); r < 10; r-- {
		k0, k1 := key[0]+r*philoxW0, key[1]+r*philoxW1
		c2, c0 := y1*inv(philoxM1), y3*inv(philoxM0)
		c1 := y0 ^ uint32(uint64(c2)*philoxM1>>32) ^ k0
		c3 := y2 ^ uint32(uint64(c0)*philoxM0>>32) ^ k1
		y0, y1, y2, y3 = c0, c1, c2, c3
	}
	return [4]uint32{y0, y1, y2, y3}
}
