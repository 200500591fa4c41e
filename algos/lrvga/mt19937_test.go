package lrvga

import "math"

// legacyMT is NumPy's legacy RandomState generator, written from the published algorithms, for the Table 3
// fixture (T12, Table 3 of Sec. 5.4): MT19937 (Matsumoto & Nishimura 1998) seeded with the Knuth-style linear
// recurrence key[i] = 1812433253·(key[i−1] ⊕ key[i−1]≫30) + i, doubles from two 32-bit words as (a≫5·2²⁶ + b≫6)/2⁵³,
// and Gaussians by Marsaglia's polar method returning the second of each pair first and caching the other.
type legacyMT struct {
	key      [624]uint32
	pos      int
	hasGauss bool
	gauss    float64
}

func newLegacyMT(seed uint32) *legacyMT {
	m := &legacyMT{}
	m.seed(seed)
	return m
}

// seed resets the state as RandomState.seed(int) does (the cached Gaussian is dropped).
func (m *legacyMT) seed(s uint32) {
	m.key[0] = s
	for i := 1; i < 624; i++ {
		prev := m.key[i-1]
		m.key[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	m.pos = 624
	m.hasGauss = false
	m.gauss = 0
}

// next32 returns the next tempered 32-bit word, regenerating the 624-word block when it is used up.
func (m *legacyMT) next32() uint32 {
	const upper, lower, matA = 0x80000000, 0x7fffffff, 0x9908b0df
	if m.pos >= 624 {
		for i := 0; i < 624; i++ {
			y := m.key[i]&upper | m.key[(i+1)%624]&lower
			v := m.key[(i+397)%624] ^ (y >> 1)
			if y&1 != 0 {
				v ^= matA
			}
			m.key[i] = v
		}
		m.pos = 0
	}
	y := m.key[m.pos]
	m.pos++
	y ^= y >> 11
	y ^= (y << 7) & 0x9d2c5680
	y ^= (y << 15) & 0xefc60000
	y ^= y >> 18
	return y
}

// uniform is random_sample: 53 random bits in [0, 1).
func (m *legacyMT) uniform() float64 {
	a, b := m.next32()>>5, m.next32()>>6
	return (float64(a)*67108864 + float64(b)) / 9007199254740992
}

// gauss is the legacy polar-method standard normal.
func (m *legacyMT) normal() float64 {
	if m.hasGauss {
		m.hasGauss = false
		return m.gauss
	}
	var x1, x2, r2 float64
	for {
		x1 = 2*m.uniform() - 1
		x2 = 2*m.uniform() - 1
		r2 = x1*x1 + x2*x2
		if r2 < 1 && r2 != 0 {
			break
		}
	}
	f := math.Sqrt(-2 * math.Log(r2) / r2)
	m.gauss, m.hasGauss = f*x1, true
	return f * x2
}
