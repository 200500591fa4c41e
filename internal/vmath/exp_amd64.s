#include "textflag.h"

// Constants of expConsts (exp.go), 32 bytes each.
#define XABS 0(DX)
#define XLIMIT 32(DX)
#define XLOG2E 64(DX)
#define XLN2U 96(DX)
#define XLN2L 128(DX)
#define XSIXTEENTH 160(DX)
#define XC8 192(DX)
#define XC7 224(DX)
#define XC6 256(DX)
#define XC5 288(DX)
#define XC4 320(DX)
#define XC3 352(DX)
#define XHALF 384(DX)
#define XONE 416(DX)
#define XTWO 448(DX)

// func expAVX2(dst, src *float64, n int, consts *[15][4]uint64) int
//
// The operations of math/exp_amd64.s (FMA path) on four lanes, in its order: the same bits. It stops before the
// first group of four with |x| > 708 or a NaN and returns how many elements it wrote.
TEXT ·expAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ consts+24(FP), DX
	XORQ AX, AX
	MOVQ $1023, BX
	MOVQ BX, X15
	VPBROADCASTQ X15, Y15 // the exponent bias in each 64-bit lane

expAVX2loop:
	CMPQ AX, CX
	JGE  expAVX2done
	VMOVUPD   (SI)(AX*8), Y0
	VANDPD    XABS, Y0, Y1
	VCMPPD    $0x02, XLIMIT, Y1, Y1 // |x| ≤ 708, false for NaN
	VMOVMSKPD Y1, BX
	CMPQ      BX, $15
	JNE       expAVX2done

	// k = round(x·log2 e) as int32 (CVTSD2SL) and back to double.
	VMULPD     XLOG2E, Y0, Y1
	VCVTPD2DQY Y1, X2
	VCVTDQ2PD  X2, Y1
	// r = (x − k·LN2U − k·LN2L)/16
	VFNMADD231PD XLN2U, Y1, Y0
	VFNMADD231PD XLN2L, Y1, Y0
	VMULPD       XSIXTEENTH, Y0, Y0
	// Taylor polynomial p with p·r = e^r − 1
	VMOVUPD     XC8, Y3
	VFMADD213PD XC7, Y0, Y3
	VFMADD213PD XC6, Y0, Y3
	VFMADD213PD XC5, Y0, Y3
	VFMADD213PD XC4, Y0, Y3
	VFMADD213PD XC3, Y0, Y3
	VFMADD213PD XHALF, Y0, Y3
	VFMADD213PD XONE, Y0, Y3
	VMULPD      Y3, Y0, Y0
	// four times t = t·(t + 2), (1 + t)² − 1, the last with the 1 added in the same FMA
	VADDPD      XTWO, Y0, Y3
	VMULPD      Y3, Y0, Y0
	VADDPD      XTWO, Y0, Y3
	VMULPD      Y3, Y0, Y0
	VADDPD      XTWO, Y0, Y3
	VMULPD      Y3, Y0, Y0
	VADDPD      XTWO, Y0, Y3
	VFMADD213PD XONE, Y3, Y0
	// times 2^k, built in the exponent field
	VPMOVSXDQ X2, Y4
	VPADDQ    Y15, Y4, Y4
	VPSLLQ    $52, Y4, Y4
	VMULPD    Y4, Y0, Y0

	VMOVUPD Y0, (DI)(AX*8)
	ADDQ    $4, AX
	JMP     expAVX2loop

expAVX2done:
	MOVQ AX, ret+32(FP)
	VZEROUPPER
	RET
