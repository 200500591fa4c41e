#include "textflag.h"

// The kernels of prop's passes (mlp_amd64.go): each lane is one hidden unit or output and does the scalar
// function's operations in its order, multiplying and adding without fusing.

DATA one<>+0(SB)/8, $0x3ff0000000000000
GLOBL one<>(SB), RODATA|NOPTR, $8
DATA minusTwo<>+0(SB)/8, $0xc000000000000000
GLOBL minusTwo<>(SB), RODATA|NOPTR, $8
DATA signBit<>+0(SB)/8, $0x8000000000000000
GLOBL signBit<>(SB), RODATA|NOPTR, $8

// func unitsInBlock(at, avt, ap, avp, smq, y, yw, ys, yt, z, tq *float64, nz, in, hp int)
//
// y = a + Σ_j A_j s̄_j;  yw = av + Σ_j Av_j (s̄_j² + s̃_j);  ys = Σ_j (A_j A_j) s̃_j;  yt = ys + yw;
// tq_q = y + √yt z_q for q < nz.
TEXT ·unitsInBlock(SB), NOSPLIT, $0-112
	MOVQ at+0(FP), SI
	MOVQ avt+8(FP), DI
	MOVQ ap+16(FP), AX
	VMOVUPD (AX), Y0 // y
	MOVQ avp+24(FP), AX
	VMOVUPD (AX), Y1 // yw
	VXORPD Y2, Y2, Y2 // ys
	MOVQ smq+32(FP), BX
	MOVQ in+96(FP), CX
	MOVQ hp+104(FP), R14
	SHLQ $3, R14 // a row in bytes
	TESTQ CX, CX
	JLE sums

input:
	VMOVUPD (SI), Y3 // A_j
	VBROADCASTSD (BX), Y4 // s̄_j
	VMULPD Y4, Y3, Y5
	VADDPD Y5, Y0, Y0
	VBROADCASTSD 8(BX), Y4 // s̄_j² + s̃_j
	VMULPD (DI), Y4, Y5
	VADDPD Y5, Y1, Y1
	VBROADCASTSD 16(BX), Y4 // s̃_j
	VMULPD Y3, Y3, Y5
	VMULPD Y4, Y5, Y5
	VADDPD Y5, Y2, Y2
	ADDQ R14, SI
	ADDQ R14, DI
	ADDQ $24, BX
	DECQ CX
	JNZ input

sums:
	VADDPD Y1, Y2, Y3 // yt
	MOVQ y+40(FP), AX
	VMOVUPD Y0, (AX)
	MOVQ yw+48(FP), AX
	VMOVUPD Y1, (AX)
	MOVQ ys+56(FP), AX
	VMOVUPD Y2, (AX)
	MOVQ yt+64(FP), AX
	VMOVUPD Y3, (AX)
	MOVQ nz+88(FP), CX
	TESTQ CX, CX
	JLE unitsdone
	VSQRTPD Y3, Y4
	MOVQ z+72(FP), SI
	MOVQ tq+80(FP), DI

node:
	VBROADCASTSD (SI), Y5
	VMULPD Y5, Y4, Y6
	VADDPD Y6, Y0, Y6
	VMOVUPD Y6, (DI)
	ADDQ $8, SI
	ADDQ R14, DI
	DECQ CX
	JNZ node

unitsdone:
	VZEROUPPER
	RET

// func nonlinBlock(tq, w, ys, phm, k, phw, m2, pv *float64, nq, hp int)
//
// m1 = Σ_q w_q t_q;  k = Σ_q w_q (1 − t_q t_q);  m2 = Σ_q (w_q t_q) t_q;
// phw = max((m2 − m1 m1) − (k k) ys, 0) + 0 (the + 0 makes a −0 +0, as math.Max does);  pv = m1 m1 + ((k k) ys + phw).
TEXT ·nonlinBlock(SB), NOSPLIT, $0-80
	MOVQ tq+0(FP), SI
	MOVQ w+8(FP), DI
	MOVQ nq+64(FP), CX
	MOVQ hp+72(FP), R14
	SHLQ $3, R14
	VXORPD Y0, Y0, Y0 // m1
	VXORPD Y1, Y1, Y1 // k
	VXORPD Y2, Y2, Y2 // m2
	VBROADCASTSD one<>(SB), Y7
	TESTQ CX, CX
	JLE moments

quad:
	VMOVUPD (SI), Y3 // t
	VBROADCASTSD (DI), Y4 // w_q
	VMULPD Y3, Y4, Y5
	VADDPD Y5, Y0, Y0
	VMULPD Y3, Y3, Y6
	VSUBPD Y6, Y7, Y6
	VMULPD Y6, Y4, Y6
	VADDPD Y6, Y1, Y1
	VMULPD Y3, Y5, Y5
	VADDPD Y5, Y2, Y2
	ADDQ R14, SI
	ADDQ $8, DI
	DECQ CX
	JNZ quad

moments:
	MOVQ ys+16(FP), AX
	VMOVUPD (AX), Y3
	VMULPD Y0, Y0, Y4 // m1 m1
	VSUBPD Y4, Y2, Y5
	VMULPD Y1, Y1, Y6
	VMULPD Y3, Y6, Y6 // (k k) ys
	VSUBPD Y6, Y5, Y5
	VXORPD Y8, Y8, Y8
	VMAXPD Y5, Y8, Y5 // the residual where NaN or ±0, else the larger
	VADDPD Y8, Y5, Y5
	VADDPD Y5, Y6, Y6
	VADDPD Y6, Y4, Y6 // pv
	MOVQ phm+24(FP), AX
	VMOVUPD Y0, (AX)
	MOVQ k+32(FP), AX
	VMOVUPD Y1, (AX)
	MOVQ phw+40(FP), AX
	VMOVUPD Y5, (AX)
	MOVQ m2+48(FP), AX
	VMOVUPD Y2, (AX)
	MOVQ pv+56(FP), AX
	VMOVUPD Y6, (AX)
	VZEROUPPER
	RET

// func outputsForwardBlock(bt, bvt, A, phm, phw, pv, k, xm, xv, jt *float64, op, in, hid int)
//
// Unit by unit: xm += B phm;  xv += (B B) phw + Bv pv;  jt_j += (B k) A_j for every input j.
// xm and xv stay in Y0 and Y1; jt is read and written in memory, as it sums over the units.
TEXT ·outputsForwardBlock(SB), NOSPLIT, $0-104
	MOVQ bt+0(FP), SI
	MOVQ bvt+8(FP), R9
	SUBQ SI, R9 // Bvᵀ's rows are reached from Bᵀ's
	MOVQ A+16(FP), DI
	MOVQ phm+24(FP), R10
	MOVQ phw+32(FP), R11
	MOVQ pv+40(FP), R12
	MOVQ k+48(FP), R13
	MOVQ xm+56(FP), AX
	VMOVUPD (AX), Y0
	MOVQ xv+64(FP), AX
	VMOVUPD (AX), Y1
	MOVQ jt+72(FP), BX
	MOVQ op+80(FP), R14
	SHLQ $3, R14
	MOVQ hid+96(FP), R8
	XORQ DX, DX // unit
	TESTQ R8, R8
	JLE fwdstore

unit:
	VMOVUPD (SI), Y2 // B[·, h]
	VMOVUPD (SI)(R9*1), Y3 // Bv[·, h]
	VBROADCASTSD (R10)(DX*8), Y5
	VMULPD Y5, Y2, Y9
	VADDPD Y9, Y0, Y0
	VBROADCASTSD (R11)(DX*8), Y6
	VBROADCASTSD (R12)(DX*8), Y7
	VMULPD Y2, Y2, Y9
	VMULPD Y6, Y9, Y9
	VMULPD Y7, Y3, Y10
	VADDPD Y10, Y9, Y9
	VADDPD Y9, Y1, Y1
	VBROADCASTSD (R13)(DX*8), Y8
	VMULPD Y8, Y2, Y4 // B k
	XORQ CX, CX // jt's row
	MOVQ in+88(FP), AX
	TESTQ AX, AX
	JLE nextunit

jacobian:
	VBROADCASTSD (DI), Y5 // A[h, j]
	VMULPD Y5, Y4, Y9
	VADDPD (BX)(CX*1), Y9, Y9
	VMOVUPD Y9, (BX)(CX*1)
	ADDQ $8, DI
	ADDQ R14, CX
	DECQ AX
	JNZ jacobian

nextunit:
	ADDQ R14, SI
	INCQ DX
	CMPQ DX, R8
	JLT unit

fwdstore:
	MOVQ xm+56(FP), AX
	VMOVUPD Y0, (AX)
	MOVQ xv+64(FP), AX
	VMOVUPD Y1, (AX)
	VZEROUPPER
	RET

// func outputsForwardBlock8(bt, bvt, a8, phm, phw, pv, k, xm, xv, jt *float64, op, hid int)
//
// outputsForwardBlock with J's eight columns in Y0–Y7, xm and xv in Y8 and Y9, over the units; a8's padding
// columns are zero, so the unused columns sum zeros.
TEXT ·outputsForwardBlock8(SB), NOSPLIT, $0-96
	MOVQ bt+0(FP), SI
	MOVQ bvt+8(FP), R9
	SUBQ SI, R9
	MOVQ a8+16(FP), DI
	MOVQ phm+24(FP), R10
	MOVQ phw+32(FP), R11
	MOVQ pv+40(FP), R12
	MOVQ k+48(FP), R13
	MOVQ xm+56(FP), AX
	VMOVUPD (AX), Y8
	MOVQ xv+64(FP), AX
	VMOVUPD (AX), Y9
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	MOVQ op+80(FP), R14
	SHLQ $3, R14
	MOVQ hid+88(FP), R8
	XORQ DX, DX
	TESTQ R8, R8
	JLE fwd8store

unit8:
	VMOVUPD (SI), Y10 // B[·, h]
	VMOVUPD (SI)(R9*1), Y11 // Bv[·, h]
	VBROADCASTSD (R10)(DX*8), Y12
	VMULPD Y12, Y10, Y12
	VADDPD Y12, Y8, Y8
	VMULPD Y10, Y10, Y12
	VBROADCASTSD (R11)(DX*8), Y13
	VMULPD Y13, Y12, Y12
	VBROADCASTSD (R12)(DX*8), Y13
	VMULPD Y13, Y11, Y13
	VADDPD Y13, Y12, Y12
	VADDPD Y12, Y9, Y9
	VBROADCASTSD (R13)(DX*8), Y12
	VMULPD Y12, Y10, Y12 // B k
	VBROADCASTSD 0(DI), Y13
	VMULPD Y13, Y12, Y13
	VADDPD Y13, Y0, Y0
	VBROADCASTSD 8(DI), Y14
	VMULPD Y14, Y12, Y14
	VADDPD Y14, Y1, Y1
	VBROADCASTSD 16(DI), Y15
	VMULPD Y15, Y12, Y15
	VADDPD Y15, Y2, Y2
	VBROADCASTSD 24(DI), Y13
	VMULPD Y13, Y12, Y13
	VADDPD Y13, Y3, Y3
	VBROADCASTSD 32(DI), Y14
	VMULPD Y14, Y12, Y14
	VADDPD Y14, Y4, Y4
	VBROADCASTSD 40(DI), Y15
	VMULPD Y15, Y12, Y15
	VADDPD Y15, Y5, Y5
	VBROADCASTSD 48(DI), Y13
	VMULPD Y13, Y12, Y13
	VADDPD Y13, Y6, Y6
	VBROADCASTSD 56(DI), Y14
	VMULPD Y14, Y12, Y14
	VADDPD Y14, Y7, Y7
	ADDQ $64, DI
	ADDQ R14, SI
	INCQ DX
	CMPQ DX, R8
	JLT unit8

fwd8store:
	MOVQ xm+56(FP), AX
	VMOVUPD Y8, (AX)
	MOVQ xv+64(FP), AX
	VMOVUPD Y9, (AX)
	MOVQ jt+72(FP), AX
	VMOVUPD Y0, (AX)
	ADDQ R14, AX
	VMOVUPD Y1, (AX)
	ADDQ R14, AX
	VMOVUPD Y2, (AX)
	ADDQ R14, AX
	VMOVUPD Y3, (AX)
	ADDQ R14, AX
	VMOVUPD Y4, (AX)
	ADDQ R14, AX
	VMOVUPD Y5, (AX)
	ADDQ R14, AX
	VMOVUPD Y6, (AX)
	ADDQ R14, AX
	VMOVUPD Y7, (AX)
	VZEROUPPER
	RET

// func outputsBackBlock(B, Bv, gB, gBv, at, mt, k, phm, phw, pv, gphm, gphv, gphw, gx, gj *float64, out, in, hp int)
//
// Output by output:
//	gphm += gxm B + ((2 phm) gxv) Bv;  gphv += gxv Bv;  gphw += (gxv B) B;
//	gB += (gxm phm + ((2 gxv) B) phw) + Σ_j (gj_j k) A_j;  mt_j += gj_j B;  gBv += gxv pv
// The three sums over the outputs stay in Y5–Y7; mt is read and written in memory, as it sums over the outputs.
// Rows of Bv, gB and gBv are reached from B's row by their (constant) distance from B.
TEXT ·outputsBackBlock(SB), NOSPLIT, $0-144
	MOVQ B+0(FP), SI
	MOVQ Bv+8(FP), R9
	SUBQ SI, R9
	MOVQ gB+16(FP), R10
	SUBQ SI, R10
	MOVQ gBv+24(FP), R11
	SUBQ SI, R11
	MOVQ at+32(FP), R8
	MOVQ mt+40(FP), BX
	MOVQ k+48(FP), AX
	VMOVUPD (AX), Y0 // k
	MOVQ phm+56(FP), AX
	VMOVUPD (AX), Y2 // phm
	VADDPD Y2, Y2, Y1 // 2 phm
	MOVQ phw+64(FP), AX
	VMOVUPD (AX), Y3 // phw
	MOVQ pv+72(FP), AX
	VMOVUPD (AX), Y4 // pv
	VXORPD Y5, Y5, Y5 // gphm
	VXORPD Y6, Y6, Y6 // gphv
	VXORPD Y7, Y7, Y7 // gphw
	MOVQ gx+104(FP), CX
	MOVQ gj+112(FP), DI
	MOVQ out+120(FP), R12
	MOVQ hp+136(FP), R14
	SHLQ $3, R14 // a row in bytes
	TESTQ R12, R12
	JLE backstore

output:
	VMOVUPD (SI), Y9 // B[i, ·]
	VMOVUPD (SI)(R9*1), Y10 // Bv[i, ·]
	VBROADCASTSD (CX), Y11 // gxm
	VBROADCASTSD 8(CX), Y12 // gxv
	VBROADCASTSD 16(CX), Y13 // 2 gxv
	VMULPD Y9, Y11, Y14
	VMULPD Y12, Y1, Y15
	VMULPD Y10, Y15, Y15
	VADDPD Y15, Y14, Y14
	VADDPD Y14, Y5, Y5
	VMULPD Y10, Y12, Y14
	VADDPD Y14, Y6, Y6
	VMULPD Y9, Y12, Y14
	VMULPD Y9, Y14, Y14
	VADDPD Y14, Y7, Y7
	VMULPD Y2, Y11, Y8 // gB's sum
	VMULPD Y9, Y13, Y14
	VMULPD Y3, Y14, Y14
	VADDPD Y14, Y8, Y8
	XORQ DX, DX // at's and mt's row
	MOVQ in+128(FP), AX
	TESTQ AX, AX
	JLE outputdone

input:
	VBROADCASTSD (DI), Y11 // gj[i, j]
	VMULPD Y0, Y11, Y14
	VMULPD (R8)(DX*1), Y14, Y14
	VADDPD Y14, Y8, Y8
	VMULPD Y9, Y11, Y15
	VADDPD (BX)(DX*1), Y15, Y15
	VMOVUPD Y15, (BX)(DX*1)
	ADDQ $8, DI
	ADDQ R14, DX
	DECQ AX
	JNZ input

outputdone:
	VADDPD (SI)(R10*1), Y8, Y8
	VMOVUPD Y8, (SI)(R10*1)
	VMULPD Y4, Y12, Y14
	VADDPD (SI)(R11*1), Y14, Y14
	VMOVUPD Y14, (SI)(R11*1)
	ADDQ R14, SI
	ADDQ $24, CX
	DECQ R12
	JNZ output

backstore:
	MOVQ gphm+80(FP), AX
	VMOVUPD Y5, (AX)
	MOVQ gphv+88(FP), AX
	VMOVUPD Y6, (AX)
	MOVQ gphw+96(FP), AX
	VMOVUPD Y7, (AX)
	VZEROUPPER
	RET

// func nonlinBackBlock(tq, w, z, phm, k, m2, ys, yt, gphm, gk, gphw, gy, gyt, gys *float64, nq, hp int)
//
// gphw = 0 where (m2 − m1 m1) − (k k) ys < 0 (the clamped branch); gm1 = gphm − (2 m1) gphw;
// gkk = gk − ((2 k) ys) gphw; gys = ((−k) k) gphw; over the nodes, with t1 = 1 − t t and t2 = (−2 t) t1,
// b = w_q ((gm1 t1 + gkk t2) + ((2 gphw) t) t1), gy += b, gs += b z_q; gyt = gs / (2 √yt).
TEXT ·nonlinBackBlock(SB), NOSPLIT, $0-128
	MOVQ phm+24(FP), AX
	VMOVUPD (AX), Y0 // m1
	MOVQ k+32(FP), AX
	VMOVUPD (AX), Y1 // k
	MOVQ m2+40(FP), AX
	VMOVUPD (AX), Y2 // m2
	MOVQ ys+48(FP), AX
	VMOVUPD (AX), Y3 // ys
	MOVQ gphw+80(FP), AX
	VMOVUPD (AX), Y8 // gphw
	VMULPD Y0, Y0, Y4
	VSUBPD Y4, Y2, Y4
	VMULPD Y1, Y1, Y5
	VMULPD Y3, Y5, Y5
	VSUBPD Y5, Y4, Y4 // the residual
	VXORPD Y5, Y5, Y5
	VCMPPD $0x11, Y5, Y4, Y6 // residual < 0 (ordered: false for NaN)
	VANDNPD Y8, Y6, Y8 // gphw = 0 there
	VADDPD Y0, Y0, Y9
	VMULPD Y8, Y9, Y9
	MOVQ gphm+64(FP), AX
	VMOVUPD (AX), Y4
	VSUBPD Y9, Y4, Y9 // gm1
	VADDPD Y1, Y1, Y10
	VMULPD Y3, Y10, Y10
	VMULPD Y8, Y10, Y10
	MOVQ gk+72(FP), AX
	VMOVUPD (AX), Y4
	VSUBPD Y10, Y4, Y10 // gkk
	VBROADCASTSD signBit<>(SB), Y4
	VXORPD Y4, Y1, Y4 // −k
	VMULPD Y1, Y4, Y4
	VMULPD Y8, Y4, Y4
	MOVQ gys+104(FP), AX
	VMOVUPD Y4, (AX)
	VADDPD Y8, Y8, Y12 // 2 gphw
	VXORPD Y13, Y13, Y13 // gy
	VXORPD Y14, Y14, Y14 // gs
	VBROADCASTSD one<>(SB), Y15
	VBROADCASTSD minusTwo<>(SB), Y7
	MOVQ tq+0(FP), SI
	MOVQ w+8(FP), DI
	MOVQ z+16(FP), DX
	MOVQ nq+112(FP), CX
	MOVQ hp+120(FP), R14
	SHLQ $3, R14
	TESTQ CX, CX
	JLE gradients

node:
	VMOVUPD (SI), Y0 // t
	VMULPD Y0, Y0, Y1
	VSUBPD Y1, Y15, Y1 // t1
	VMULPD Y0, Y7, Y2
	VMULPD Y1, Y2, Y2 // t2
	VMULPD Y1, Y9, Y3
	VMULPD Y2, Y10, Y4
	VADDPD Y4, Y3, Y3
	VMULPD Y0, Y12, Y4
	VMULPD Y1, Y4, Y4
	VADDPD Y4, Y3, Y3
	VBROADCASTSD (DI), Y5
	VMULPD Y3, Y5, Y3 // b
	VADDPD Y3, Y13, Y13
	VBROADCASTSD (DX), Y6
	VMULPD Y6, Y3, Y3
	VADDPD Y3, Y14, Y14
	ADDQ R14, SI
	ADDQ $8, DI
	ADDQ $8, DX
	DECQ CX
	JNZ node

gradients:
	MOVQ yt+56(FP), AX
	VSQRTPD (AX), Y0
	VADDPD Y0, Y0, Y0
	VDIVPD Y0, Y14, Y14
	MOVQ gy+88(FP), AX
	VMOVUPD Y13, (AX)
	MOVQ gyt+96(FP), AX
	VMOVUPD Y14, (AX)
	VZEROUPPER
	RET

// func unitsBackBlock(at, avt, mt, k, gphv, gy, gyt, gys, gyw, smq, gap, gavp, gAt, gAvt, ts *float64, in, hp int)
//
// gys' = (k k) gphv + (gys + gyt);  gyw' = gyw + gyt;  gap += gy;  gavp += gyw';  for every input j:
//	gAt_j += (gy s̄_j + ((2 gys') A_j) s̃_j) + mt_j k;  gAvt_j += gyw' (s̄_j² + s̃_j);
//	ts[8j:8j+4] = gy A_j + ((2 gyw') Av_j) s̄_j;  ts[8j+4:8j+8] = gyw' Av_j + (gys' A_j) A_j
TEXT ·unitsBackBlock(SB), NOSPLIT, $0-136
	MOVQ k+24(FP), AX
	VMOVUPD (AX), Y0 // k
	MOVQ gy+40(FP), AX
	VMOVUPD (AX), Y1 // gy
	MOVQ gyt+48(FP), AX
	VMOVUPD (AX), Y6 // gyt
	MOVQ gphv+32(FP), AX
	VMOVUPD (AX), Y7
	VMULPD Y0, Y0, Y8
	VMULPD Y7, Y8, Y8 // (k k) gphv
	MOVQ gys+56(FP), AX
	VMOVUPD (AX), Y9
	VADDPD Y6, Y9, Y9
	VADDPD Y9, Y8, Y2 // gys'
	MOVQ gyw+64(FP), AX
	VMOVUPD (AX), Y9
	VADDPD Y6, Y9, Y3 // gyw'
	MOVQ gap+80(FP), AX
	VADDPD (AX), Y1, Y9
	VMOVUPD Y9, (AX)
	MOVQ gavp+88(FP), AX
	VADDPD (AX), Y3, Y9
	VMOVUPD Y9, (AX)
	VADDPD Y2, Y2, Y4 // 2 gys'
	VADDPD Y3, Y3, Y5 // 2 gyw'
	MOVQ at+0(FP), SI
	MOVQ avt+8(FP), DI
	MOVQ mt+16(FP), R8
	MOVQ smq+72(FP), BX
	MOVQ gAt+96(FP), R9
	MOVQ gAvt+104(FP), R10
	MOVQ ts+112(FP), DX
	MOVQ in+120(FP), CX
	MOVQ hp+128(FP), R14
	SHLQ $3, R14
	XORQ AX, AX // row offset
	TESTQ CX, CX
	JLE unitsbackdone

firstlayer:
	VMOVUPD (SI)(AX*1), Y6 // A_j
	VMOVUPD (DI)(AX*1), Y7 // Av_j
	VBROADCASTSD (BX), Y8 // s̄_j
	VBROADCASTSD 8(BX), Y9 // s̄_j² + s̃_j
	VBROADCASTSD 16(BX), Y10 // s̃_j
	VMULPD Y8, Y1, Y11 // gy s̄
	VMULPD Y6, Y4, Y12
	VMULPD Y10, Y12, Y12
	VADDPD Y12, Y11, Y11
	VMULPD (R8)(AX*1), Y0, Y12 // mt k
	VADDPD Y12, Y11, Y11
	VADDPD (R9)(AX*1), Y11, Y11
	VMOVUPD Y11, (R9)(AX*1)
	VMULPD Y9, Y3, Y11
	VADDPD (R10)(AX*1), Y11, Y11
	VMOVUPD Y11, (R10)(AX*1)
	VMULPD Y6, Y1, Y11 // gy A
	VMULPD Y7, Y5, Y12
	VMULPD Y8, Y12, Y12
	VADDPD Y12, Y11, Y11
	VMOVUPD Y11, (DX)
	VMULPD Y7, Y3, Y11 // gyw' Av
	VMULPD Y6, Y2, Y12
	VMULPD Y6, Y12, Y12
	VADDPD Y12, Y11, Y11
	VMOVUPD Y11, 32(DX)
	ADDQ R14, AX
	ADDQ $24, BX
	ADDQ $64, DX
	DECQ CX
	JNZ firstlayer

unitsbackdone:
	VZEROUPPER
	RET
