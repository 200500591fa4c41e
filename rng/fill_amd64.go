package rng

import (
	"math"

	"github.com/klauspost/cpuid/v2"
)

// bestKernel is the fastest kernel of fill_amd64.s the CPU (and the OS, for the ZMM state) supports. The kernels
// perform the same operations in the same order as the scalar code, so they give the same bits: the AVX2 ones four
// Philox blocks (and four Box–Muller pairs) per step in 256-bit registers, the AVX-512 ones eight in 512-bit
// registers.
var bestKernel = func() fillKernel {
	switch {
	case !cpuid.CPU.Supports(cpuid.AVX2, cpuid.FMA3):
		return kernelGo
	case !cpuid.CPU.Supports(cpuid.AVX512F):
		return kernelAVX2
	}
	return kernelAVX512
}()

// fillArgs is what a kernel reads per call: the blocks of its lanes (the AVX2 kernels read the first four), the
// stream words and the round keys k + r·W of philox10, each replicated over four 64-bit lanes (the AVX-512 kernels
// broadcast the first).
type fillArgs struct {
	ctr    [8]uint64
	s0, s1 [4]uint64
	keys   [10][2][4]uint64
}

// fillConsts are the kernels' constants, each replicated over four lanes (the AVX-512 kernels broadcast the first),
// except the two 8-lane permutations at the end; the byte offsets in fill_amd64.s are 32·index.
var fillConsts = func() (t [53][4]uint64) {
	f := math.Float64bits
	vals := []uint64{
		0xffffffff, philoxM0, philoxM1, 4, // 0–3: low-word mask, multipliers, lane step
		f(0x1p52), f(0x1p32), f(0.5), f(0x1p-53), // 4–7: integer→float magic, toUnit
		1<<52 - 1, f(1), f(0x1p52 + 1023), f(math.Sqrt2), f(2), // 8–12: logUnit reduction
		f(atanh21), f(atanh19), f(atanh17), f(atanh15), f(atanh13), // 13–22: the atanh series
		f(atanh11), f(atanh9), f(atanh7), f(atanh5), f(atanh3),
		f(ln2Lo), f(ln2Hi), f(-2), f(4), 1, // 23–27
		f(sin17), f(sin15), f(sin13), f(sin11), f(sin9), f(sin7), f(sin5), f(sin3), // 28–35
		f(halfPiLo), f(halfPiHi), // 36–37
		f(cos18), f(cos16), f(cos14), f(cos12), f(cos10), f(cos8), f(cos6), f(cos4), f(cos2), // 38–46
		f(belowOne), // 47: toUnit's cap
		8,           // 48: the AVX-512 lane step
	}
	for i, v := range vals {
		t[i] = [4]uint64{v, v, v, v}
	}
	// 49–52: VPERMI2PD indices interleaving two 8-lane vectors (a, b) into (a0, b0, …, a3, b3), (a4, b4, …, a7, b7).
	t[49], t[50] = [4]uint64{0, 8, 1, 9}, [4]uint64{2, 10, 3, 11}
	t[51], t[52] = [4]uint64{4, 12, 5, 13}, [4]uint64{6, 14, 7, 15}
	return t
}()

// fillNormalAVX2 writes 8·groups normals to dst: the pairs of blocks a.ctr[0], …, a.ctr[0] + 4·groups − 1.
//
//go:noescape
func fillNormalAVX2(dst *float64, groups int, a *fillArgs, consts *[53][4]uint64)

// fillUniformAVX2 writes the 8·groups uniforms of blocks a.ctr[0], …, a.ctr[0] + 4·groups − 1 to dst.
//
//go:noescape
func fillUniformAVX2(dst *float64, groups int, a *fillArgs, consts *[53][4]uint64)

// fillNormalAVX512 writes 16·groups normals to dst: the pairs of blocks a.ctr[0], …, a.ctr[0] + 8·groups − 1.
//
//go:noescape
func fillNormalAVX512(dst *float64, groups int, a *fillArgs, consts *[53][4]uint64)

// fillUniformAVX512 writes the 16·groups uniforms of blocks a.ctr[0], …, a.ctr[0] + 8·groups − 1 to dst.
//
//go:noescape
func fillUniformAVX512(dst *float64, groups int, a *fillArgs, consts *[53][4]uint64)

// fillPairs writes the draws of blocks blk, blk+1, … (two per block, normals or uniforms) into a prefix of dst with
// the kernels useKernel allows, and returns how many values it wrote: groups of 16 by the AVX-512 kernel, then
// groups of 8 (at most one after the AVX-512 kernel) by the AVX2 kernel; 0 with kernelGo. The caller's Go loops do
// the rest.
func (c Counter) fillPairs(dst []float64, blk uint64, normal bool) int {
	if useKernel == kernelGo || len(dst) < 8 {
		return 0
	}
	var a fillArgs
	k0, k1 := uint32(c.Seed), uint32(c.Seed>>32)
	w0, w1 := uint32(philoxW0), uint32(philoxW1)
	for j := range a.ctr {
		a.ctr[j] = blk + uint64(j)
	}
	for j := range a.s0 {
		a.s0[j], a.s1[j] = uint64(uint32(c.Stream)), uint64(uint32(c.Stream>>32))
	}
	for r := uint32(0); r < 10; r++ {
		ka, kb := uint64(k0+r*w0), uint64(k1+r*w1)
		a.keys[r] = [2][4]uint64{{ka, ka, ka, ka}, {kb, kb, kb, kb}}
	}
	n := 0
	if groups := len(dst) / 16; useKernel >= kernelAVX512 && groups > 0 {
		if normal {
			fillNormalAVX512(&dst[0], groups, &a, &fillConsts)
		} else {
			fillUniformAVX512(&dst[0], groups, &a, &fillConsts)
		}
		n = 16 * groups
		for j := range a.ctr {
			a.ctr[j] += uint64(n / 2)
		}
	}
	if groups := (len(dst) - n) / 8; groups > 0 {
		if normal {
			fillNormalAVX2(&dst[n], groups, &a, &fillConsts)
		} else {
			fillUniformAVX2(&dst[n], groups, &a, &fillConsts)
		}
		n += 8 * groups
	}
	return n
}
