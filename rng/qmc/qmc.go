// Package qmc generates randomised quasi-Monte Carlo points: the Sobol' sequence with the direction numbers of Joe
// and Kuo, scrambled by Matoušek's random linear scramble and a random digital shift, and mapped to standard normals
// by Φ⁻¹. Paper 000's reference code draws MGVB's Monte Carlo samples so (MATLAB's sobolset with the
// "MatousekAffineOwen" scramble, 2^⌈log₂ S⌉ points of which the first S are kept, blocks of at most 1111
// dimensions).
//
// A scrambled set keeps the sequence's stratification: the first 2^m points still put exactly one point in each of
// the 2^m intervals [k/2^m, (k+1)/2^m) of every coordinate, and in each elementary box of area 2^-m of the first two
// coordinates; and each point is uniform on (0, 1)^dims. The randomness comes from an rng.Counter, so a set is
// reproducible from its counter.
package qmc

import (
	"fmt"
	"math"
	"math/bits"
	"sync"

	"github.com/geovb/geovb/rng"
)

// MaxDim is the number of dimensions with their own direction numbers; Uniform and Normal go beyond it by blocks of
// MaxDim dimensions, each block scrambled independently (as the reference code concatenates sobolset blocks).
const MaxDim = 1111

// maxBits is the number of direction numbers per dimension: at most 2³² points per set.
const maxBits = 32

// MaxPoints is the largest n a set may have.
const MaxPoints = 1 << maxBits

// dirInit is one row of the Joe–Kuo table.
type dirInit struct {
	poly uint16
	m    []uint16
}

var (
	dirOnce sync.Once
	dirs    [MaxDim][maxBits]uint64
)

// directions returns the direction numbers of every dimension as 64-bit binary fractions (bit 63 is 2⁻¹): v_k =
// m_k·2^(64−k), with m_k from the recurrence of the dimension's primitive polynomial
// x^s + a₁x^(s−1) + … + a_(s−1)x + 1: m_k = m_(k−s) ⊕ 2^s m_(k−s) ⊕ ⊕_j 2^j a_j m_(k−j), which for v reads
// v_k = v_(k−s) ⊕ (v_(k−s) >> s) ⊕ ⊕_j a_j v_(k−j).
func directions() *[MaxDim][maxBits]uint64 {
	dirOnce.Do(func() {
		for k := 0; k < maxBits; k++ {
			dirs[0][k] = 1 << (63 - k) // van der Corput
		}
		for j := 1; j < MaxDim; j++ {
			row := joeKuo[j-1]
			s := len(row.m)
			v := &dirs[j]
			for k := 0; k < maxBits; k++ {
				if k < s {
					v[k] = uint64(row.m[k]) << (63 - k)
					continue
				}
				x := v[k-s] ^ v[k-s]>>s
				for i := 1; i < s; i++ {
					if row.poly>>(s-i)&1 == 1 {
						x ^= v[k-i]
					}
				}
				v[k] = x
			}
		}
	})
	return &dirs
}

// digits is the number of leading binary digits that reach a float64 (the conversion keeps 53).
const digits = 53

// scrambleBits is how many random bits the scramble matrix of one dimension takes: row r (r = 2 … 53) has r − 1
// bits below its unit diagonal.
const scrambleBits = digits * (digits - 1) / 2

// WordsPerDim is how many 64-bit words of the counter's stream scrambling one dimension takes (the matrix's bits
// packed, then the shift): a set in dims dimensions takes WordsPerDim·dims words from c.Offset on, so successive
// sets can take disjoint parts of one stream.
const WordsPerDim = (scrambleBits+63)/64 + 1

// scramble returns Matoušek's linear scramble of the direction numbers v — y = Lv over GF(2) with L lower
// triangular with a unit diagonal and random bits below it, digit 1 (bit 63) first — and the random digital shift.
// Digit r of y depends on digits 1 … r of v only, which is why the stratification survives. Only the first used
// direction numbers are scrambled (n points need ⌈log₂ n⌉), and only the digits a float64 keeps.
func scramble(v *[maxBits]uint64, used int, c rng.Counter) (out [maxBits]uint64, shift uint64) {
	var buf [WordsPerDim]uint64
	c.FillWords(buf[:])
	// Row r (digit r + 1) takes the next r bits of the packed words as its entries for digits 1 … r.
	var rows [digits]uint64
	pos := 0
	for r := 1; r < digits; r++ {
		w, off := pos/64, pos%64
		bitsOf := buf[w] << off
		if off+r > 64 {
			bitsOf |= buf[w+1] >> (64 - off)
		}
		rows[r] = bitsOf &^ (^uint64(0) >> r) // keep the r leading bits: digits 1 … r
		pos += r
	}
	for k := 0; k < used; k++ {
		y := v[k]
		for r := 1; r < digits; r++ {
			y ^= uint64(bits.OnesCount64(rows[r]&v[k])&1) << (63 - r)
		}
		out[k] = y
	}
	return out, buf[WordsPerDim-1]
}

// check validates a request for n points in dims dimensions into dst.
func check(dst []float64, dims, n int) error {
	switch {
	case dims < 1:
		return fmt.Errorf("qmc: %d dimensions, need at least 1", dims)
	case n < 0 || uint64(n) > MaxPoints:
		return fmt.Errorf("qmc: %d points, want 0 … 2^%d", n, maxBits)
	case len(dst) != dims*n:
		return fmt.Errorf("qmc: destination holds %d values, want dims·n = %d·%d", len(dst), dims, n)
	}
	return nil
}

// Sobol writes the first n points of the unscrambled sequence in dims ≤ MaxDim dimensions into dst, dims rows of n
// values (dst[i*n+s] is coordinate i of point s), in Gray-code order (the first 2^m points are the same set as in
// natural order). Point 0 is the origin; values are exact binary fractions.
func Sobol(dst []float64, dims, n int) error {
	if err := check(dst, dims, n); err != nil {
		return err
	}
	if dims > MaxDim {
		return fmt.Errorf("qmc: %d dimensions, the unscrambled sequence has %d", dims, MaxDim)
	}
	d := directions()
	for i := 0; i < dims; i++ {
		gray(dst[i*n:(i+1)*n], &d[i], 0, func(x uint64) float64 { return float64(x>>11) * 0x1p-53 })
	}
	return nil
}

// gray writes x_s = shift ⊕ (⊕ of v_k over the bits k of the Gray code of s) for s < len(dst), mapped by conv.
func gray(dst []float64, v *[maxBits]uint64, shift uint64, conv func(uint64) float64) {
	x := shift
	for s := range dst {
		if s > 0 {
			x ^= v[bits.TrailingZeros64(uint64(s))]
		}
		dst[s] = conv(x)
	}
}

// Uniform writes the first n points of a Sobol' sequence in dims dimensions, scrambled afresh from c, into dst
// (dims rows of n values, as Sobol). Every value lies in the open interval (0, 1): the 53 leading digits plus half a
// unit of the last (rng.Unit), as rng's uniforms. Dimension i takes words WordsPerDim·i … WordsPerDim·(i+1) − 1 of c.
func Uniform(dst []float64, dims, n int, c rng.Counter) error {
	return fill(dst, dims, n, c, rng.Unit)
}

// Normal is Uniform mapped through Φ⁻¹(u) = −√2 erfc⁻¹(2u): randomised QMC standard normals. The extreme values are
// ±8.29 (u = 2⁻⁵⁴ and its mirror).
func Normal(dst []float64, dims, n int, c rng.Counter) error {
	return fill(dst, dims, n, c, func(x uint64) float64 { return -math.Sqrt2 * math.Erfcinv(2*rng.Unit(x)) })
}

func fill(dst []float64, dims, n int, c rng.Counter, conv func(uint64) float64) error {
	if err := check(dst, dims, n); err != nil {
		return err
	}
	d := directions()
	used := bits.Len(uint(max(n, 1) - 1))
	for i := 0; i < dims; i++ {
		ci := c
		ci.Offset += WordsPerDim * uint64(i)
		v, shift := scramble(&d[i%MaxDim], used, ci)
		gray(dst[i*n:(i+1)*n], &v, shift, conv)
	}
	return nil
}
