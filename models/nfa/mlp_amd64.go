package nfa

import "github.com/klauspost/cpuid/v2"

// useAVX reports that the CPU has AVX, so that prop's passes take four hidden units or outputs at a time with the
// kernels of mlp_amd64.s. Each kernel is the scalar function named in its comment for four units or outputs, with the
// same operations in the same order, multiplying and adding without fusing: the bits are the scalar path's.
var useAVX = cpuid.CPU.Supports(cpuid.AVX)

// unitsInBlock is prop.unitIn for the four units whose values start at the pointers given: at and avt at column h of
// rows of hp elements, tq at column h of nz rows of hp (nz = 0: no node arguments, z unused); ap, avp, y, yw, ys and
// yt at element h; smq and z whole.
//
//go:noescape
func unitsInBlock(at, avt, ap, avp, smq, y, yw, ys, yt, z, tq *float64, nz, in, hp int)

// nonlinBlock is prop.nonlinGH for four units: tq at column h of nq rows of hp elements, w whole, the rest at
// element h.
//
//go:noescape
func nonlinBlock(tq, w, ys, phm, k, phw, m2, pv *float64, nq, hp int)

// outputsForwardBlock is prop.outputForward for the four outputs whose values start at the pointers given: bt, bvt
// and jt at column i of rows of op elements, xm and xv at element i; A (row-major hid×in), phm, phw, pv and k whole.
//
//go:noescape
func outputsForwardBlock(bt, bvt, A, phm, phw, pv, k, xm, xv, jt *float64, op, in, hid int)

// outputsForwardBlock8 is outputsForwardBlock for in ≤ 8, with A's rows padded to 8 columns (a8): the eight
// columns of J are summed in registers and stored to the first 8 rows of jt.
//
//go:noescape
func outputsForwardBlock8(bt, bvt, a8, phm, phw, pv, k, xm, xv, jt *float64, op, hid int)

// outputsBackBlock is prop.outputsBackUnit for four units: B, Bv, gB, gBv, at and mt at column h of rows of hp
// elements, k, phm, phw, pv, gphm, gphv and gphw at element h; gx (out×3) and gj (out×in) whole.
//
//go:noescape
func outputsBackBlock(B, Bv, gB, gBv, at, mt, k, phm, phw, pv, gphm, gphv, gphw, gx, gj *float64, out, in, hp int)

// nonlinBackBlock is prop.nonlinBack (Gauss–Hermite) for four units, without gyw (zero there): tq at column h of nq
// rows of hp elements, w and z whole, the rest at element h.
//
//go:noescape
func nonlinBackBlock(tq, w, z, phm, k, m2, ys, yt, gphm, gk, gphw, gy, gyt, gys *float64, nq, hp int)

// unitsBackBlock is prop.unitBack for four units, except that it writes their terms of ∂C/∂s̄_j and ∂C/∂s̃_j into
// ts[8j : 8j+4] and ts[8j+4 : 8j+8] (by lane) for backward to add in unit order: at, avt, mt, gAt and gAvt at column
// h of rows of hp elements, k, gphv, gy, gyt, gys, gyw, gap and gavp at element h, smq and ts whole.
//
//go:noescape
func unitsBackBlock(at, avt, mt, k, gphv, gy, gyt, gys, gyw, smq, gap, gavp, gAt, gAvt, ts *float64, in, hp int)
