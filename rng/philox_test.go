package rng

import (
	"math"
	"testing"
)

// Known-answer vectors of Philox4x32-10 published with Random123 (kat_vectors).
func TestPhiloxKnownAnswers(t *testing.T) {
	cases := []struct {
		ctr  [4]uint32
		key  [2]uint32
		want [4]uint32
	}{
		{[4]uint32{0, 0, 0, 0}, [2]uint32{0, 0}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	}
	for _, c := range cases {
		if got := Philox4x32(c.ctr, c.key); got != c.want {
			t.Errorf("Philox4x32(%x, %x) = %x, want %x", c.ctr, c.key, got, c.want)
		}
	}
}

// A fill from any offset must equal the element-wise definition bit for bit, so split fills reproduce one long fill.
func TestFillMatchesElementwise(t *testing.T) {
	forKernels(t, []fillKernel{kernelGo, kernelAVX2, kernelAVX512}, testFillMatchesElementwise)
}

// forKernels runs f as one subtest per kernel, named after it, with useKernel set to it; kernels the CPU lacks are
// skipped.
func forKernels(t *testing.T, kernels []fillKernel, f func(t *testing.T)) {
	defer func(k fillKernel) { useKernel = k }(useKernel)
	for _, k := range kernels {
		t.Run(k.String(), func(t *testing.T) {
			if k > bestKernel {
				t.Skipf("no %v kernel: the CPU (or the OS) lacks %s", k,
					map[fillKernel]string{kernelAVX2: "AVX2 or FMA3", kernelAVX512: "AVX-512F"}[k])
			}
			useKernel = k
			f(t)
		})
	}
}

func testFillMatchesElementwise(t *testing.T) {
	c := Counter{Seed: 42, Stream: 7, Offset: 3}
	for _, n := range []int{0, 1, 2, 5, 8, 15, 16, 17, 24, 31, 33, 64} {
		for _, off := range []uint64{0, 1, 2, 3} {
			cc := c
			cc.Offset = off
			nb := make([]float64, n)
			ub := make([]float64, n)
			cc.FillNormal(nb)
			cc.FillUniform(ub)
			for i := 0; i < n; i++ {
				if nb[i] != cc.Normal(uint64(i)) {
					t.Fatalf("n=%d off=%d: FillNormal[%d]=%v, Normal=%v", n, off, i, nb[i], cc.Normal(uint64(i)))
				}
				if ub[i] != cc.Uniform(uint64(i)) {
					t.Fatalf("n=%d off=%d: FillUniform[%d]=%v, Uniform=%v", n, off, i, ub[i], cc.Uniform(uint64(i)))
				}
			}
		}
	}
	long := make([]float64, 100)
	c.FillNormal(long)
	a, b := make([]float64, 37), make([]float64, 63)
	c.FillNormal(a)
	c.Advance(37).FillNormal(b)
	for i := range long {
		v := a
		j := i
		if i >= 37 {
			v, j = b, i-37
		}
		if long[i] != v[j] {
			t.Fatalf("split fill differs at %d: %v vs %v", i, long[i], v[j])
		}
	}
}

// Moments of 2e5 normals and uniforms within 5 standard errors of N(0,1) and U(0,1).
func TestMoments(t *testing.T) {
	const n = 200000
	c := Counter{Seed: 1}
	z := make([]float64, n)
	u := make([]float64, n)
	c.FillNormal(z)
	c.Advance(n).FillUniform(u)
	var m1, m2, m4, um, uv float64
	for i := range z {
		m1 += z[i]
		m2 += z[i] * z[i]
		m4 += z[i] * z[i] * z[i] * z[i]
		um += u[i]
		if u[i] <= 0 || u[i] >= 1 {
			t.Fatalf("uniform %v outside (0,1)", u[i])
		}
	}
	m1, m2, m4, um = m1/n, m2/n, m4/n, um/n
	for i := range u {
		uv += (u[i] - um) * (u[i] - um)
	}
	uv /= n
	check := func(name string, got, want, se float64) {
		if math.Abs(got-want) > 5*se {
			t.Errorf("%s = %v, want %v ± 5·%v", name, got, want, se)
		}
	}
	check("normal mean", m1, 0, 1/math.Sqrt(n))
	check("normal variance", m2, 1, math.Sqrt(2.0/n))
	check("normal 4th moment", m4, 3, math.Sqrt(96.0/n))
	check("uniform mean", um, 0.5, math.Sqrt(1.0/12/n))
	check("uniform variance", uv, 1.0/12, math.Sqrt(1.0/180/n))
	// Adjacent normals of one Box–Muller pair must be uncorrelated.
	var cor float64
	for i := 0; i+1 < n; i += 2 {
		cor += z[i] * z[i+1]
	}
	check("pair correlation", cor/(n/2), 0, 1/math.Sqrt(n/2))
}

func TestSourceStreamsDiffer(t *testing.T) {
	a, b := NewSource(1, 0), NewSource(1, 1)
	same := 0
	for i := 0; i < 100; i++ {
		if a.Uint64() == b.Uint64() {
			same++
		}
	}
	if same > 0 {
		t.Fatalf("streams 0 and 1 agree on %d of 100 words", same)
	}
}

func BenchmarkBlock(b *testing.B) {
	c := Counter{Seed: 1}
	var s uint32
	for i := 0; i < b.N; i++ {
		w := c.Block(uint64(i))
		s += w[0]
	}
	_ = s
}

// BenchmarkFillNormal and BenchmarkFillUniform fill 2¹⁶ values with each kernel the CPU has, side by side.
func BenchmarkFillNormal(b *testing.B)  { benchFill(b, Counter.FillNormal) }
func BenchmarkFillUniform(b *testing.B) { benchFill(b, Counter.FillUniform) }

func benchFill(b *testing.B, fill func(Counter, []float64)) {
	defer func(k fillKernel) { useKernel = k }(useKernel)
	c := Counter{Seed: 1}
	buf := make([]float64, 1<<16)
	for _, k := range []fillKernel{kernelAVX512, kernelAVX2, kernelGo} {
		b.Run(k.String(), func(b *testing.B) {
			if k > bestKernel {
				b.Skipf("no %v kernel on this CPU", k)
			}
			useKernel = k
			b.SetBytes(8 << 16)
			for b.Loop() {
				fill(c, buf)
			}
		})
	}
}

// TestToUnitOpenInterval checks both ends of toUnit: all-zero bits give 2⁻⁵⁴, all-one bits (where (x + ½)·2⁻⁵³
// rounds to 1) the largest double below 1, and the value below them is unchanged by the cap.
func TestToUnitOpenInterval(t *testing.T) {
	if u := toUnit(0, 0); u != 0x1p-54 {
		t.Errorf("toUnit(0, 0) = %v, want 2⁻⁵⁴", u)
	}
	if u := toUnit(math.MaxUint32, math.MaxUint32); u != math.Nextafter(1, 0) {
		t.Errorf("toUnit(all ones) = %v, want the largest double below 1", u)
	}
	if u, want := toUnit(math.MaxUint32, math.MaxUint32-1<<11), (float64(1<<53-2)+0.5)*0x1p-53; u != want || u >= 1 {
		t.Errorf("toUnit(all ones − 1) = %v, want %v", u, want)
	}
}

// FillWords gives the words that the draws are made from: Unit of word n is uniform draw n, for every alignment of
// the start (even and odd offsets) and lengths that end on either half of a block.
func TestFillWordsMatchUniform(t *testing.T) {
	for _, off := range []uint64{0, 1, 6, 7, 1 << 40} {
		for _, n := range []int{1, 2, 5, 8} {
			c := Counter{Seed: 12, Stream: 3, Offset: off}
			w := make([]uint64, n)
			c.FillWords(w)
			for i, x := range w {
				if got, want := Unit(x), c.Uniform(uint64(i)); got != want {
					t.Fatalf("offset %d, word %d of %d: Unit %v, Uniform %v", off, i, n, got, want)
				}
			}
		}
	}
}
