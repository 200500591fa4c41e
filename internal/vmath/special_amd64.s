#include "textflag.h"

// Constants of specialConsts (special.go), 32 bytes each.
#define ABSMASK 0(DX)
#define LOG2E 32(DX)
#define LN2HI 64(DX)
#define LN2LO 96(DX)
#define MAGICEXP 128(DX)
#define LIMIT 160(DX)
#define E13 192(DX)
#define E12 224(DX)
#define E11 256(DX)
#define E10 288(DX)
#define E9 320(DX)
#define E8 352(DX)
#define E7 384(DX)
#define E6 416(DX)
#define E5 448(DX)
#define E4 480(DX)
#define E3 512(DX)
#define E2 544(DX)
#define E1 576(DX)
#define E0 608(DX)
#define ONE 640(DX)
#define SQRT2 672(DX)
#define HALF 704(DX)
#define TWO 736(DX)
#define AT21 768(DX)
#define AT19 800(DX)
#define AT17 832(DX)
#define AT15 864(DX)
#define AT13 896(DX)
#define AT11 928(DX)
#define AT9 960(DX)
#define AT7 992(DX)
#define AT5 1024(DX)
#define AT3 1056(DX)

// EXPNEG, the start of every kernel: x = alpha·src in Y0, a = min(|x|, 708) in Y1 (Y2 marks lanes with |x| > 708
// or NaN, which store x itself for the caller to redo; Y14 collects them), y = e^(−a) in Y5: a·log2(e) = m + f with
// m an integer, e^(−a) = 2^(−m)·e^(m·ln2 − a), the reduced argument in two FMAs (ln 2 = LN2HI + LN2LO), e^r by
// Horner on the Taylor coefficients, 2^(−m) built in the exponent field.
#define EXPNEG \
	VMOVUPD     (SI)(AX*1), Y0 \
	VMULPD      Y15, Y0, Y0 \
	VANDPD      ABSMASK, Y0, Y1 \
	VCMPPD      $0x06, LIMIT, Y1, Y2 \
	VORPD       Y2, Y14, Y14 \
	VMINPD      LIMIT, Y1, Y1 \
	VMULPD      LOG2E, Y1, Y3 \
	VROUNDPD    $0, Y3, Y3 \
	VMOVUPD     Y1, Y4 \
	VFMSUB231PD LN2HI, Y3, Y4 \
	VFMADD231PD LN2LO, Y3, Y4 \
	VMOVUPD     E13, Y5 \
	VFMADD213PD E12, Y4, Y5 \
	VFMADD213PD E11, Y4, Y5 \
	VFMADD213PD E10, Y4, Y5 \
	VFMADD213PD E9, Y4, Y5 \
	VFMADD213PD E8, Y4, Y5 \
	VFMADD213PD E7, Y4, Y5 \
	VFMADD213PD E6, Y4, Y5 \
	VFMADD213PD E5, Y4, Y5 \
	VFMADD213PD E4, Y4, Y5 \
	VFMADD213PD E3, Y4, Y5 \
	VFMADD213PD E2, Y4, Y5 \
	VFMADD213PD E1, Y4, Y5 \
	VFMADD213PD E0, Y4, Y5 \
	VMOVUPD     MAGICEXP, Y6 \
	VSUBPD      Y3, Y6, Y6 \
	VPSLLQ      $52, Y6, Y6 \
	VMULPD      Y6, Y5, Y5

// func softplusAVX2(dst, src *float64, n int, alpha float64, consts *[34][4]uint64) bool
TEXT ·softplusAVX2(SB), NOSPLIT, $0-41
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	SHLQ         $3, CX
	VBROADCASTSD alpha+24(FP), Y15
	MOVQ         consts+32(FP), DX
	VXORPD       Y14, Y14, Y14
	XORQ         AX, AX

softplusAVX2loop:
	EXPNEG
	// log1p(y): u = 1 + y, c = y − (u − 1); u = 2^e·m, m in [√½, √2), ln m by the atanh series; + c/u.
	VADDPD      ONE, Y5, Y7
	VSUBPD      ONE, Y7, Y8
	VSUBPD      Y8, Y5, Y8
	VCMPPD      $0x1e, SQRT2, Y7, Y9
	VMULPD      HALF, Y7, Y10
	VBLENDVPD   Y9, Y10, Y7, Y10
	VANDPD      ONE, Y9, Y9
	VSUBPD      ONE, Y10, Y10
	VADDPD      TWO, Y10, Y11
	VDIVPD      Y11, Y10, Y11
	VMULPD      Y11, Y11, Y12
	VMOVUPD     AT21, Y13
	VFMADD213PD AT19, Y12, Y13
	VFMADD213PD AT17, Y12, Y13
	VFMADD213PD AT15, Y12, Y13
	VFMADD213PD AT13, Y12, Y13
	VFMADD213PD AT11, Y12, Y13
	VFMADD213PD AT9, Y12, Y13
	VFMADD213PD AT7, Y12, Y13
	VFMADD213PD AT5, Y12, Y13
	VFMADD213PD AT3, Y12, Y13
	VMULPD      Y13, Y12, Y13
	VSUBPD      Y13, Y10, Y13
	VMULPD      LN2LO, Y9, Y12
	VFMSUB231PD Y13, Y11, Y12
	VSUBPD      Y12, Y10, Y10
	VFMADD231PD LN2HI, Y9, Y10
	VDIVPD      Y7, Y8, Y8
	VADDPD      Y8, Y10, Y10
	// softplus = max(x, 0) + log1p(e^(−|x|))
	VXORPD      Y3, Y3, Y3
	VMAXPD      Y3, Y0, Y3
	VADDPD      Y10, Y3, Y3
	VBLENDVPD   Y2, Y0, Y3, Y3
	VMOVUPD     Y3, (DI)(AX*1)
	ADDQ $32, AX
	CMPQ AX, CX
	JLT  softplusAVX2loop

	VMOVMSKPD Y14, BX
	TESTQ     BX, BX
	SETNE     ret+40(FP)
	VZEROUPPER
	RET

// func sigmoidAVX2(dst, src *float64, n int, alpha float64, consts *[34][4]uint64) bool
TEXT ·sigmoidAVX2(SB), NOSPLIT, $0-41
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	SHLQ         $3, CX
	VBROADCASTSD alpha+24(FP), Y15
	MOVQ         consts+32(FP), DX
	VXORPD       Y14, Y14, Y14
	XORQ         AX, AX

sigmoidAVX2loop:
	EXPNEG
	// 1/(1 + y) for x ≥ 0, y/(1 + y) for x < 0 (the sign bit of x picks).
	VADDPD    ONE, Y5, Y7
	VMOVUPD   ONE, Y8
	VDIVPD    Y7, Y8, Y8
	VDIVPD    Y7, Y5, Y9
	VBLENDVPD Y0, Y9, Y8, Y8
	VBLENDVPD Y2, Y0, Y8, Y8
	VMOVUPD   Y8, (DI)(AX*1)
	ADDQ $32, AX
	CMPQ AX, CX
	JLT  sigmoidAVX2loop

	VMOVMSKPD Y14, BX
	TESTQ     BX, BX
	SETNE     ret+40(FP)
	VZEROUPPER
	RET

// func tanhAVX2(dst, src *float64, n int, alpha float64, consts *[34][4]uint64, coef *[19][4]uint64) bool
//
// EXPNEG on 2·alpha·src gives x2 = 2x (Y0), a2 = min(|2x|, 708) (Y1) and y = e^(−a2) (Y5). m = expm1(−a2): y − 1
// where a2 ≥ 1, the Taylor series r·(1 + r/2! + … + r^18/19!) with r = −a2 (Horner, coefficients at R8) where a2 < 1.
// tanh|x| = −m/(2 + m), given the sign of x; lanes flagged by EXPNEG store x2.
TEXT ·tanhAVX2(SB), NOSPLIT, $0-49
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	SHLQ         $3, CX
	VBROADCASTSD alpha+24(FP), Y15
	VADDPD       Y15, Y15, Y15
	MOVQ         consts+32(FP), DX
	MOVQ         coef+40(FP), R8
	VMOVUPD      ABSMASK, Y13
	VXORPD       Y14, Y14, Y14
	XORQ         AX, AX

tanhAVX2loop:
	EXPNEG
	VSUBPD      ONE, Y5, Y6
	// The series only where some lane has |x| < ½ (the others take m from the exponential): the same lanes
	// computed the same way, without its 19 dependent FMAs for the many rows of nodes away from 0.
	VCMPPD      $0x01, ONE, Y1, Y9
	VMOVMSKPD   Y9, BX
	TESTQ       BX, BX
	JZ          tanhAVX2ratio
	VXORPD      Y7, Y7, Y7
	VSUBPD      Y1, Y7, Y7
	VMOVUPD     0(R8), Y8
	VFMADD213PD 32(R8), Y7, Y8
	VFMADD213PD 64(R8), Y7, Y8
	VFMADD213PD 96(R8), Y7, Y8
	VFMADD213PD 128(R8), Y7, Y8
	VFMADD213PD 160(R8), Y7, Y8
	VFMADD213PD 192(R8), Y7, Y8
	VFMADD213PD 224(R8), Y7, Y8
	VFMADD213PD 256(R8), Y7, Y8
	VFMADD213PD 288(R8), Y7, Y8
	VFMADD213PD 320(R8), Y7, Y8
	VFMADD213PD 352(R8), Y7, Y8
	VFMADD213PD 384(R8), Y7, Y8
	VFMADD213PD 416(R8), Y7, Y8
	VFMADD213PD 448(R8), Y7, Y8
	VFMADD213PD 480(R8), Y7, Y8
	VFMADD213PD 512(R8), Y7, Y8
	VFMADD213PD 544(R8), Y7, Y8
	VFMADD213PD 576(R8), Y7, Y8
	VMULPD      Y7, Y8, Y8
	VBLENDVPD   Y9, Y8, Y6, Y6

tanhAVX2ratio:
	// |tanh x| = |m/(2 + m)|, then the sign of x2.
	VADDPD      TWO, Y6, Y10
	VDIVPD      Y10, Y6, Y11
	VANDPD      Y13, Y11, Y11
	VANDNPD     Y0, Y13, Y12
	VORPD       Y12, Y11, Y11
	VBLENDVPD   Y2, Y0, Y11, Y11
	VMOVUPD     Y11, (DI)(AX*1)
	ADDQ $32, AX
	CMPQ AX, CX
	JLT  tanhAVX2loop

	VMOVMSKPD Y14, BX
	TESTQ     BX, BX
	SETNE     ret+48(FP)
	VZEROUPPER
	RET
