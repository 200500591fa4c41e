package cuda

import "math"

func init() {
	emuKernels["gausshermite.gh_tanh"] = emuGHTanh
	emuKernels["gausshermite.gh_tanh_back"] = emuGHTanhBack
}

// emuGHElements runs body for the elements of the grid-stride loop of a gausshermite.cu kernel, thread by thread:
// element e with its batch item b, row i and column j.
func emuGHElements(e *emuDev, grid, block [3]uint32, shmem uint32, n, R, H int, body func(b, i, j int)) {
	if block[0] != hotThreads || shmem != 0 {
		e.t.Fatalf("gausshermite: block %v, %d bytes of shared memory; want %d threads and none", block, shmem,
			hotThreads)
	}
	threads := int(grid[0]) * int(block[0])
	for th := 0; th < threads; th++ {
		for el := th; el < n; el += threads {
			j, r := el%H, el/H
			body(r/R, r%R, j)
		}
	}
}

// emuGHTanh is gh_tanh.
func emuGHTanh(e *emuDev, grid, block [3]uint32, shmem uint32, a emuArgs) {
	m1, m1bs, m1rs, m2, m2bs, m2rs := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3), a.i64(4), a.i64(5)
	u, ubs, urs, y, ybs, yrs := a.ptr(6), a.i64(7), a.i64(8), a.ptr(9), a.i64(10), a.i64(11)
	sd, sbs, srs, zw, zrs := a.ptr(12), a.i64(13), a.i64(14), a.ptr(15), a.i64(16)
	n, R, H, Q := a.i64(17), a.i64(18), a.i64(19), a.i64(20)
	emuGHElements(e, grid, block, shmem, n, R, H, func(b, i, j int) {
		yv, sv := *e.f(y, b*ybs+i*yrs+j), *e.f(sd, b*sbs+i*srs+j)
		var a1, a2 float64
		for q := range Q {
			t := math.Tanh(yv + *e.f(zw, q)*sv)
			*e.f(u, b*ubs+(q*R+i)*urs+j) = t
			w := *e.f(zw, zrs+q)
			a1 = w*t + a1
			a2 = w*(t*t) + a2
		}
		*e.f(m1, b*m1bs+i*m1rs+j) = a1
		*e.f(m2, b*m2bs+i*m2rs+j) = a2
	})
}

// emuGHTanhBack is gh_tanh_back.
func emuGHTanhBack(e *emuDev, grid, block [3]uint32, shmem uint32, a emuArgs) {
	gy, gybs, gyrs, gs, gsbs, gsrs := a.ptr(0), a.i64(1), a.i64(2), a.ptr(3), a.i64(4), a.i64(5)
	u, ubs, urs, gk, kbs, krs := a.ptr(6), a.i64(7), a.i64(8), a.ptr(9), a.i64(10), a.i64(11)
	gm, mbs, mrs, zw, zrs := a.ptr(12), a.i64(13), a.i64(14), a.ptr(15), a.i64(16)
	n, R, H, Q := a.i64(17), a.i64(18), a.i64(19), a.i64(20)
	emuGHElements(e, grid, block, shmem, n, R, H, func(b, i, j int) {
		kv, mv := *e.f(gk, b*kbs+i*krs+j), *e.f(gm, b*mbs+i*mrs+j)
		var acc, s float64
		for q := range Q {
			t := *e.f(u, b*ubs+(q*R+i)*urs+j)
			d := (1 - t*t) * (kv*t + mv)
			w := *e.f(zw, zrs+q)
			acc = w*d + acc
			s = (w**e.f(zw, q))*d + s
		}
		*e.f(gy, b*gybs+i*gyrs+j) = acc
		*e.f(gs, b*gsbs+i*gsrs+j) = s
	})
}
