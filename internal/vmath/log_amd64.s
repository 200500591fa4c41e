#include "textflag.h"

// Constants of logConsts (log.go), 32 bytes each.
#define LMINN 0(DX)
#define LMAXF 32(DX)
#define LFRAC 64(DX)
#define LHALF 96(DX)
#define LBIAS 128(DX)
#define LMAGIC 160(DX)
#define LHSQRT2 192(DX)
#define LONE 224(DX)
#define LTWO 256(DX)
#define LL1 288(DX)
#define LL2 320(DX)
#define LL3 352(DX)
#define LL4 384(DX)
#define LL5 416(DX)
#define LL6 448(DX)
#define LL7 480(DX)
#define LLN2HI 512(DX)
#define LLN2LO 544(DX)

// func logAVX2(dst, src *float64, n int, consts *[18][4]uint64) int
//
// The operations of math/log_amd64.s on four lanes, in its order: the same bits. It stops before the first group
// of four with an argument that is not a positive normal number and returns how many elements it wrote.
TEXT ·logAVX2(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ consts+24(FP), DX
	XORQ AX, AX

logAVX2loop:
	CMPQ AX, CX
	JGE  logAVX2done
	VMOVUPD   (SI)(AX*8), Y0
	VCMPPD    $0x0d, LMINN, Y0, Y1 // x ≥ smallest normal (false for NaN)
	VCMPPD    $0x02, LMAXF, Y0, Y2 // x ≤ largest finite
	VANDPD    Y2, Y1, Y1
	VMOVMSKPD Y1, BX
	CMPQ      BX, $15
	JNE       logAVX2done

	// f1 = fraction with the exponent of ½; k = exponent − 0x3FE, to double exactly through 2^52 + 2^51.
	VANDPD LFRAC, Y0, Y2
	VORPD  LHALF, Y2, Y2
	VPSRLQ $52, Y0, Y1
	VPSUBQ LBIAS, Y1, Y1
	VPADDQ LMAGIC, Y1, Y1
	VSUBPD LMAGIC, Y1, Y1
	// where !(√2/2 < f1): k −= 1, f1 ·= 2
	VMOVUPD LHSQRT2, Y4
	VCMPPD  $0x05, Y2, Y4, Y3
	VANDPD  LONE, Y3, Y3
	VSUBPD  Y3, Y1, Y1
	VADDPD  LONE, Y3, Y3
	VMULPD  Y3, Y2, Y2
	// f = f1 − 1, s = f/(2 + f), s2 = s², s4 = s2²
	VSUBPD LONE, Y2, Y2
	VADDPD LTWO, Y2, Y5
	VDIVPD Y5, Y2, Y3
	VMULPD Y3, Y3, Y4
	VMULPD Y4, Y4, Y5
	// t1 = s2·(L1 + s4·(L3 + s4·(L5 + s4·L7)))
	VMULPD LL7, Y5, Y6
	VADDPD LL5, Y6, Y6
	VMULPD Y5, Y6, Y6
	VADDPD LL3, Y6, Y6
	VMULPD Y5, Y6, Y6
	VADDPD LL1, Y6, Y6
	VMULPD Y6, Y4, Y4
	// t2 = s4·(L2 + s4·(L4 + s4·L6))
	VMULPD LL6, Y5, Y6
	VADDPD LL4, Y6, Y6
	VMULPD Y5, Y6, Y6
	VADDPD LL2, Y6, Y6
	VMULPD Y6, Y5, Y5
	// R = t1 + t2, hfsq = ½·f·f
	VADDPD Y5, Y4, Y4
	VMULPD LHALF, Y2, Y7
	VMULPD Y2, Y7, Y7
	// k·Ln2Hi − ((hfsq − (s·(hfsq + R) + k·Ln2Lo)) − f)
	VADDPD Y7, Y4, Y4
	VMULPD Y4, Y3, Y3
	VMULPD LLN2LO, Y1, Y4
	VADDPD Y4, Y3, Y3
	VSUBPD Y3, Y7, Y7
	VSUBPD Y2, Y7, Y7
	VMULPD LLN2HI, Y1, Y1
	VSUBPD Y7, Y1, Y1

	VMOVUPD Y1, (DI)(AX*8)
	ADDQ    $4, AX
	JMP     logAVX2loop

logAVX2done:
	MOVQ AX, ret+32(FP)
	VZEROUPPER
	RET
