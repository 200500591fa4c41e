//go:build !amd64

package nfa

// Without amd64 the scalar functions of prop do every unit and output (a variable, as on amd64, for the tests).
var useAVX = false

func unitsInBlock(at, avt, ap, avp, smq, y, yw, ys, yt, z, tq *float64, nz, in, hp int) { noKernel() }

func nonlinBlock(tq, w, ys, phm, k, phw, m2, pv *float64, nq, hp int) { noKernel() }

func outputsForwardBlock(bt, bvt, A, phm, phw, pv, k, xm, xv, jt *float64, op, in, hid int) {
	noKernel()
}

func outputsForwardBlock8(bt, bvt, a8, phm, phw, pv, k, xm, xv, jt *float64, op, hid int) { noKernel() }

func outputsBackBlock(B, Bv, gB, gBv, at, mt, k, phm, phw, pv, gphm, gphv, gphw, gx, gj *float64, out, in, hp int) {
	noKernel()
}

func unitsBackBlock(at, avt, mt, k, gphv, gy, gyt, gys, gyw, smq, gap, gavp, gAt, gAvt, ts *float64, in, hp int) {
	noKernel()
}

func nonlinBackBlock(tq, w, z, phm, k, m2, ys, yt, gphm, gk, gphw, gy, gyt, gys *float64, nq, hp int) {
	noKernel()
}

func noKernel() { panic("nfa: an AVX kernel called without AVX") }
