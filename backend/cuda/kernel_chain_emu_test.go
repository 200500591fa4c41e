package cuda

import "math"

func init() { emuKernels["chain.chain_natgrad"] = emuChainNatGrad }

// emuChainNatGrad is chain_natgrad: every thread of the grid takes chains c = thread, thread + threads, … and runs
// the two recurrences in place in dst, with fma as the kernel's.
func emuChainNatGrad(e *emuDev, grid, block [3]uint32, _ uint32, a emuArgs) {
	d, dbs, drs, g, gbs, grs := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3), a.i64(4), a.i64(5)
	br, bbs, brs, ri, rbs, rrs := a.ptr(6), a.i64(7), a.i64(8), a.ptr(9), a.i64(10), a.i64(11)
	nchains, K, n := a.i64(12), a.i64(13), a.i64(14)
	threads := int(grid[0]) * int(block[0])
	for th := 0; th < threads; th++ {
		for c := th; c < nchains; c += threads {
			b, i := c/K, c%K
			y := func(t int) *float64 { return e.f(d, b*dbs+i*drs+t) }
			gc := func(t int) float64 { return *e.f(g, b*gbs+i*grs+t) }
			bc := func(t int) float64 { return *e.f(br, b*bbs+i*brs+t) }
			rc := func(t int) float64 { return *e.f(ri, b*rbs+i*rrs+t) }
			v := gc(n - 1)
			*y(n - 1) = v
			for t := n - 2; t >= 0; t-- {
				v = math.FMA(bc(t+1), v, gc(t))
				*y(t) = v
			}
			v = rc(0) * *y(0)
			*y(0) = v
			for t := 1; t < n; t++ {
				v = math.FMA(bc(t), v, rc(t)**y(t))
				*y(t) = v
			}
		}
	}
}
