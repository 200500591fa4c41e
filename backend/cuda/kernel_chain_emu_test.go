package cuda

import "math"

func init() {
	emuKernels["chain.chain_natgrad"] = emuChainNatGrad
	emuKernels["chain.chain_natgrad_warp"] = emuChainNatGradWarp
}

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

// emuChainNatGradWarp is chain_natgrad_warp: warp w of the grid takes chains w, w + warps, …; its 32 lanes run in
// lock step, each round of the shuffle scan reading the values every lane held before it (__shfl_up_sync), and a
// lane whose step lies outside the chain holds the identity map and stores nothing.
func emuChainNatGradWarp(e *emuDev, grid, block [3]uint32, shmem uint32, a emuArgs) {
	if block[0]%32 != 0 || shmem != 0 {
		e.t.Fatalf("chain_natgrad_warp: block %v, %d bytes of shared memory; want whole warps and none", block, shmem)
	}
	d, dbs, drs, g, gbs, grs := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3), a.i64(4), a.i64(5)
	br, bbs, brs, ri, rbs, rrs := a.ptr(6), a.i64(7), a.i64(8), a.ptr(9), a.i64(10), a.i64(11)
	nchains, K, n := a.i64(12), a.i64(13), a.i64(14)
	warps := int(grid[0]) * int(block[0]) / 32
	// scan is chain_affine_scan over the warp: lane l returns its composed map applied to carry.
	scan := func(av, cv *[32]float64, carry float64) (x [32]float64) {
		for off := 1; off < 32; off <<= 1 {
			ap, cp := *av, *cv
			for l := off; l < 32; l++ {
				cv[l] = math.FMA(av[l], cp[l-off], cv[l])
				av[l] *= ap[l-off]
			}
		}
		for l := range x {
			x[l] = math.FMA(av[l], carry, cv[l])
		}
		return x
	}
	for w := 0; w < warps; w++ {
		for c := w; c < nchains; c += warps {
			b, i := c/K, c%K
			y := func(t int) *float64 { return e.f(d, b*dbs+i*drs+t) }
			gc := func(t int) float64 { return *e.f(g, b*gbs+i*grs+t) }
			bc := func(t int) float64 { return *e.f(br, b*bbs+i*brs+t) }
			rc := func(t int) float64 { return *e.f(ri, b*rbs+i*rrs+t) }
			carry := 0.0
			for u0 := 0; u0 < n; u0 += 32 {
				var av, cv [32]float64
				for l := range av {
					av[l] = 1
					if t := n - 1 - (u0 + l); t >= 0 {
						cv[l] = gc(t)
						if t+1 < n {
							av[l] = bc(t + 1)
						} else {
							av[l] = 0
						}
					}
				}
				x := scan(&av, &cv, carry)
				for l := range x {
					if t := n - 1 - (u0 + l); t >= 0 {
						*y(t) = x[l]
					}
				}
				carry = x[31]
			}
			carry = 0
			for t0 := 0; t0 < n; t0 += 32 {
				var av, cv [32]float64
				for l := range av {
					av[l] = 1
					if t := t0 + l; t < n {
						cv[l] = rc(t) * *y(t)
						if t > 0 {
							av[l] = bc(t)
						} else {
							av[l] = 0
						}
					}
				}
				x := scan(&av, &cv, carry)
				for l := range x {
					if t := t0 + l; t < n {
						*y(t) = x[l]
					}
				}
				carry = x[31]
			}
		}
	}
}
