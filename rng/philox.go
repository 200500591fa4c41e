// Package rng is the counter-based random number generator every backend shares: Philox4x32-10 (Salmon et al.,
// "Parallel random numbers: as easy as 1, 2, 3", SC 2011). Draw n of a stream is a pure function of (seed, stream,
// n), so a GPU thread can compute it without state and the CPU and GPU backends fill tensors with the same numbers.
//
// Layout: the 128-bit Philox counter is (block, stream) with block in the low 64 bits; the 64-bit key is the seed.
// Each block gives four 32-bit words; uniform n uses words (0,1) of block n/2 when n is even and (2,3) when odd.
// Normal n is the cosine (n even) or sine (n odd) half of a Box–Muller pair built from the two uniforms of block n/2.
// The integer words, the uniforms and the normals are bit-identical on every backend: the Box–Muller transform uses
// this package's own logarithm and sine/cosine with a fixed order of roundings (boxmuller.go), not a maths library.
package rng

const (
	philoxM0 = 0xD2511F53
	philoxM1 = 0xCD9E8D57
	philoxW0 = 0x9E3779B9
	philoxW1 = 0xBB67AE85
)

// Philox4x32 returns the ten-round Philox4x32 bijection of counter ctr under key.
func Philox4x32(ctr [4]uint32, key [2]uint32) [4]uint32 {
	c0, c1, c2, c3 := philox10(ctr[0], ctr[1], ctr[2], ctr[3], key[0], key[1])
	return [4]uint32{c0, c1, c2, c3}
}

// philoxRound is one Philox S-box/P-box round: two 32×32→64-bit products mixed with the other words and the key.
func philoxRound(c0, c1, c2, c3, k0, k1 uint32) (uint32, uint32, uint32, uint32) {
	p0 := uint64(c0) * philoxM0
	p1 := uint64(c2) * philoxM1
	return uint32(p1>>32) ^ c1 ^ k0, uint32(p1), uint32(p0>>32) ^ c3 ^ k1, uint32(p0)
}

// philox10 is the ten rounds, unrolled with the key schedule (k + r·W) folded in, so the whole block is
// straight-line code.
func philox10(c0, c1, c2, c3, k0, k1 uint32) (uint32, uint32, uint32, uint32) {
	w0, w1 := uint32(philoxW0), uint32(philoxW1) // variables, so that r·w wraps modulo 2³² as the key schedule requires
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0, k1)
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0+1*w0, k1+1*w1)
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0+2*w0, k1+2*w1)
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0+3*w0, k1+3*w1)
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0+4*w0, k1+4*w1)
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0+5*w0, k1+5*w1)
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0+6*w0, k1+6*w1)
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0+7*w0, k1+7*w1)
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0+8*w0, k1+8*w1)
	return philoxRound(c0, c1, c2, c3, k0+9*w0, k1+9*w1)
}

// Counter names a position in a random stream: draws Offset, Offset+1, … of stream Stream under Seed. Draw numbers
// are taken modulo 2⁶⁴, as Advance takes them: the draw after 2⁶⁴ − 1 is draw 0.
type Counter struct {
	Seed   uint64
	Stream uint64
	Offset uint64
}

// Advance returns the counter n draws further on.
func (c Counter) Advance(n int) Counter {
	c.Offset += uint64(n)
	return c
}

// Block returns the four words of block blk of the stream.
func (c Counter) Block(blk uint64) [4]uint32 {
	w0, w1, w2, w3 := philox10(uint32(blk), uint32(blk>>32), uint32(c.Stream), uint32(c.Stream>>32),
		uint32(c.Seed), uint32(c.Seed>>32))
	return [4]uint32{w0, w1, w2, w3}
}

// belowOne is the largest float64 below 1.
const belowOne = 1 - 0x1p-53

// toUnit maps two 32-bit words to a uniform in the open interval (0, 1): Unit of the 64-bit word hi·2³² + lo.
func toUnit(hi, lo uint32) float64 { return Unit(uint64(hi)<<32 | uint64(lo)) }

// Unit maps a 64-bit word to a uniform in the open interval (0, 1) from its 53 leading bits x: (x + ½)·2⁻⁵³. For
// x = 2⁵³ − 1 the sum rounds to 2⁵³ (ties to even), so the result is capped at belowOne to keep 1 out. Uniform
// draw n of a stream is Unit of its word n (FillWords).
func Unit(w uint64) float64 {
	return min((float64(w>>11)+0.5)*(1.0/(1<<53)), belowOne)
}

// FillWords fills dst with the raw 64-bit words Offset, Offset+1, … of the stream: word n is the high (n even) or
// low half of Philox block n/2, the bits that uniform and normal draw n are made from.
func (c Counter) FillWords(dst []uint64) {
	k := c.Offset
	for i := 0; i < len(dst); {
		w := c.Block(k >> 1)
		if k&1 == 0 {
			dst[i] = uint64(w[0])<<32 | uint64(w[1])
			i, k = i+1, k+1
			if i == len(dst) {
				break
			}
		}
		dst[i] = uint64(w[2])<<32 | uint64(w[3])
		i, k = i+1, k+1
	}
}

// Uniform returns uniform draw Offset+n of the stream, in (0, 1).
func (c Counter) Uniform(n uint64) float64 {
	k := c.Offset + n
	w := c.Block(k >> 1)
	if k&1 == 0 {
		return toUnit(w[0], w[1])
	}
	return toUnit(w[2], w[3])
}

// Normal returns standard normal draw Offset+n of the stream.
func (c Counter) Normal(n uint64) float64 {
	k := c.Offset + n
	w := c.Block(k >> 1)
	return boxMuller(w, k&1 == 1)
}

func boxMuller(w [4]uint32, odd bool) float64 {
	even, o := BoxMuller(toUnit(w[0], w[1]), toUnit(w[2], w[3]))
	if odd {
		return o
	}
	return even
}

// words returns block blk of the stream as four words, without building an array.
func (c Counter) words(blk uint64) (uint32, uint32, uint32, uint32) {
	return philox10(uint32(blk), uint32(blk>>32), uint32(c.Stream), uint32(c.Stream>>32), uint32(c.Seed), uint32(c.Seed>>32))
}

// words2 returns blocks blk and blk+1 of the stream. The two ten-round chains are interleaved so that their
// multiplications overlap in the pipeline; each block is computed exactly as words computes it.
func (c Counter) words2(blk uint64) (a0, a1, a2, a3, b0, b1, b2, b3 uint32) {
	k0, k1 := uint32(c.Seed), uint32(c.Seed>>32)
	s0, s1 := uint32(c.Stream), uint32(c.Stream>>32)
	n := blk + 1
	a0, a1, a2, a3 = uint32(blk), uint32(blk>>32), s0, s1
	b0, b1, b2, b3 = uint32(n), uint32(n>>32), s0, s1
	w0, w1 := uint32(philoxW0), uint32(philoxW1)
	for r := uint32(0); r < 10; r++ {
		ka, kb := k0+r*w0, k1+r*w1
		pa0, pa1 := uint64(a0)*philoxM0, uint64(a2)*philoxM1
		pb0, pb1 := uint64(b0)*philoxM0, uint64(b2)*philoxM1
		a0, a1, a2, a3 = uint32(pa1>>32)^a1^ka, uint32(pa1), uint32(pa0>>32)^a3^kb, uint32(pa0)
		b0, b1, b2, b3 = uint32(pb1>>32)^b1^ka, uint32(pb1), uint32(pb0>>32)^b3^kb, uint32(pb0)
	}
	return
}

// wrapSplit returns how many of n draws from c come before draw number 2⁶⁴ wraps to 0 (n when none wrap), so that the
// fills, whose block counters run on past 2⁶³, never cross the wrap.
func (c Counter) wrapSplit(n int) int {
	if room := -c.Offset; c.Offset != 0 && uint64(n) > room {
		return int(room)
	}
	return n
}

// FillNormal writes draws Offset, Offset+1, … into dst.
func (c Counter) FillNormal(dst []float64) {
	if m := c.wrapSplit(len(dst)); m < len(dst) {
		c.FillNormal(dst[:m])
		c.Advance(m).FillNormal(dst[m:])
		return
	}
	i := 0
	k := c.Offset
	if k&1 == 1 && len(dst) > 0 {
		dst[0] = c.Normal(0)
		i, k = 1, k+1
	}
	n := c.fillPairs(dst[i:], k>>1, true)
	i, k = i+n, k+uint64(n)
	for ; i+3 < len(dst); i, k = i+4, k+4 {
		a0, a1, a2, a3, b0, b1, b2, b3 := c.words2(k >> 1)
		dst[i], dst[i+1] = BoxMuller(toUnit(a0, a1), toUnit(a2, a3))
		dst[i+2], dst[i+3] = BoxMuller(toUnit(b0, b1), toUnit(b2, b3))
	}
	if i+1 < len(dst) {
		w0, w1, w2, w3 := c.words(k >> 1)
		dst[i], dst[i+1] = BoxMuller(toUnit(w0, w1), toUnit(w2, w3))
		i, k = i+2, k+2
	}
	if i < len(dst) {
		dst[i] = boxMuller(c.Block(k>>1), false)
	}
}

// FillUniform writes uniform draws Offset, Offset+1, … into dst.
func (c Counter) FillUniform(dst []float64) {
	if m := c.wrapSplit(len(dst)); m < len(dst) {
		c.FillUniform(dst[:m])
		c.Advance(m).FillUniform(dst[m:])
		return
	}
	i := 0
	k := c.Offset
	if k&1 == 1 && len(dst) > 0 {
		dst[0] = c.Uniform(0)
		i, k = 1, k+1
	}
	n := c.fillPairs(dst[i:], k>>1, false)
	i, k = i+n, k+uint64(n)
	for ; i+3 < len(dst); i, k = i+4, k+4 {
		a0, a1, a2, a3, b0, b1, b2, b3 := c.words2(k >> 1)
		dst[i], dst[i+1], dst[i+2], dst[i+3] = toUnit(a0, a1), toUnit(a2, a3), toUnit(b0, b1), toUnit(b2, b3)
	}
	if i+1 < len(dst) {
		w0, w1, w2, w3 := c.words(k >> 1)
		dst[i], dst[i+1] = toUnit(w0, w1), toUnit(w2, w3)
		i, k = i+2, k+2
	}
	if i < len(dst) {
		w0, w1, _, _ := c.words(k >> 1)
		dst[i] = toUnit(w0, w1)
	}
}

// Source is a math/rand/v2 Source reading the 64-bit words of one stream in order, for code that wants a
// rand.Rand (gonum's distuv, for example) on the same generator.
type Source struct {
	c   Counter
	buf [4]uint32
	n   int // words of buf consumed; 4 means empty
}

// NewSource returns a Source for stream of seed, starting at its first block.
func NewSource(seed, stream uint64) *Source {
	return &Source{c: Counter{Seed: seed, Stream: stream}, n: 4}
}

// Uint64 returns the next 64 random bits.
func (s *Source) Uint64() uint64 {
	if s.n >= 4 {
		s.buf = s.c.Block(s.c.Offset)
		s.c.Offset++
		s.n = 0
	}
	v := uint64(s.buf[s.n])<<32 | uint64(s.buf[s.n+1])
	s.n += 2
	return v
}
