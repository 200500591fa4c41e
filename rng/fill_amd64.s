#include "textflag.h"

// Constants of fillConsts (fill_amd64.go), 32 bytes each; ILO and IHI are 64 bytes.
#define MASK 0(DX)
#define M0 32(DX)
#define M1 64(DX)
#define STEP 96(DX)
#define MAGIC 128(DX)
#define P32 160(DX)
#define HALF 192(DX)
#define P53 224(DX)
#define MANT 256(DX)
#define ONE 288(DX)
#define EXPMAGIC 320(DX)
#define SQRT2 352(DX)
#define TWO 384(DX)
#define AT21 416(DX)
#define AT19 448(DX)
#define AT17 480(DX)
#define AT15 512(DX)
#define AT13 544(DX)
#define AT11 576(DX)
#define AT9 608(DX)
#define AT7 640(DX)
#define AT5 672(DX)
#define AT3 704(DX)
#define LN2LO 736(DX)
#define LN2HI 768(DX)
#define MTWO 800(DX)
#define FOUR 832(DX)
#define BELOWONE 1504(DX)
#define IONE 864(DX)
#define S17 896(DX)
#define S15 928(DX)
#define S13 960(DX)
#define S11 992(DX)
#define S9 1024(DX)
#define S7 1056(DX)
#define S5 1088(DX)
#define S3 1120(DX)
#define HPLO 1152(DX)
#define HPHI 1184(DX)
#define C18 1216(DX)
#define C16 1248(DX)
#define C14 1280(DX)
#define C12 1312(DX)
#define C10 1344(DX)
#define C8 1376(DX)
#define C6 1408(DX)
#define C4 1440(DX)
#define C2 1472(DX)
#define STEP8 1536(DX)
#define ILO 1568(DX)
#define IHI 1632(DX)

// One Philox round on four lanes (philoxRound): Y0–Y3 hold words c0–c3 in the low halves of 64-bit lanes. The
// high halves carry junk from the products, which VPMULUDQ ignores and toUnit masks off.
#define ROUND(ka, kb) \
	VPMULUDQ M0, Y0, Y4 \
	VPMULUDQ M1, Y2, Y5 \
	VPSRLQ   $32, Y5, Y0 \
	VPXOR    Y1, Y0, Y0 \
	VPXOR    ka(SI), Y0, Y0 \
	VPSRLQ   $32, Y4, Y2 \
	VPXOR    Y3, Y2, Y2 \
	VPXOR    kb(SI), Y2, Y2 \
	VMOVDQU  Y5, Y1 \
	VMOVDQU  Y4, Y3

// toUnit(hi, lo) into out: x = (hi<<32 | lo) >> 11 < 2⁵³, converted exactly as x_h·2³² + x_l (each half through
// the 2⁵² magic number), then (x + 0.5)·2⁻⁵³ capped at the largest double below 1.
#define TOUNIT(hi, lo, out, tmp) \
	VPSLLQ      $32, hi, out \
	VPAND       MASK, lo, tmp \
	VPOR        tmp, out, out \
	VPSRLQ      $11, out, out \
	VPSRLQ      $32, out, tmp \
	VPAND       MASK, out, out \
	VPOR        MAGIC, tmp, tmp \
	VSUBPD      MAGIC, tmp, tmp \
	VPOR        MAGIC, out, out \
	VSUBPD      MAGIC, out, out \
	VFMADD231PD P32, tmp, out \
	VADDPD      HALF, out, out \
	VMULPD      P53, out, out \
	VMINPD      BELOWONE, out, out

// The four Philox blocks of the lanes of Y15 and their uniforms: u1 = toUnit(w0, w1) in Y8, u2 = toUnit(w2, w3)
// in Y7. fillArgs offsets: ctr 0, s0 64, s1 96, keys of round r 128 + 64r and 160 + 64r.
#define BLOCKS4 \
	VMOVDQU Y15, Y0 \
	VPSRLQ  $32, Y15, Y1 \
	VMOVDQU 64(SI), Y2 \
	VMOVDQU 96(SI), Y3 \
	ROUND(128, 160) \
	ROUND(192, 224) \
	ROUND(256, 288) \
	ROUND(320, 352) \
	ROUND(384, 416) \
	ROUND(448, 480) \
	ROUND(512, 544) \
	ROUND(576, 608) \
	ROUND(640, 672) \
	ROUND(704, 736) \
	TOUNIT(Y0, Y1, Y8, Y4) \
	TOUNIT(Y2, Y3, Y7, Y5)

// func fillNormalAVX2(dst *float64, groups int, a *fillArgs, consts *[53][4]uint64)
// Per step: Philox blocks ctr..ctr+3, then BoxMuller of each lane (logUnit, sincos2Pi), interleaved to
// (even, odd) pairs in block order: eight normals.
TEXT ·fillNormalAVX2(SB), NOSPLIT, $0-32
	MOVQ    dst+0(FP), DI
	MOVQ    groups+8(FP), CX
	MOVQ    a+16(FP), SI
	MOVQ    consts+24(FP), DX
	VMOVDQU (SI), Y15

loop:
	BLOCKS4

	// logUnit(u1): fe, m in [√½, √2), f = m − 1, s = f/(2 + f), z = s².
	VPSRLQ      $52, Y8, Y9
	VPOR        MAGIC, Y9, Y9
	VSUBPD      EXPMAGIC, Y9, Y9
	VPAND       MANT, Y8, Y10
	VPOR        ONE, Y10, Y10
	VCMPPD      $0x1e, SQRT2, Y10, Y11
	VMULPD      HALF, Y10, Y12
	VBLENDVPD   Y11, Y12, Y10, Y10
	VANDPD      ONE, Y11, Y12
	VADDPD      Y12, Y9, Y9
	VSUBPD      ONE, Y10, Y10
	VADDPD      TWO, Y10, Y12
	VDIVPD      Y12, Y10, Y11
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

	// r = √(−2 ln u1)
	VMULPD  MTWO, Y10, Y10
	VSQRTPD Y10, Y10

	// sincos2Pi(u2): 4u2 = q + x, Y9 keeps q in its low bits.
	VMULPD   FOUR, Y7, Y7
	VADDPD   HALF, Y7, Y9
	VROUNDPD $3, Y9, Y9
	VSUBPD   Y9, Y7, Y7
	VADDPD   MAGIC, Y9, Y9
	VMULPD   Y7, Y7, Y11
	VMOVUPD  S17, Y12
	VFMADD213PD S15, Y11, Y12
	VFMADD213PD S13, Y11, Y12
	VFMADD213PD S11, Y11, Y12
	VFMADD213PD S9, Y11, Y12
	VFMADD213PD S7, Y11, Y12
	VFMADD213PD S5, Y11, Y12
	VFMADD213PD S3, Y11, Y12
	VFMADD213PD HPLO, Y11, Y12
	VMULPD      Y12, Y7, Y12
	VFMADD231PD HPHI, Y7, Y12
	VMOVUPD     C18, Y13
	VFMADD213PD C16, Y11, Y13
	VFMADD213PD C14, Y11, Y13
	VFMADD213PD C12, Y11, Y13
	VFMADD213PD C10, Y11, Y13
	VFMADD213PD C8, Y11, Y13
	VFMADD213PD C6, Y11, Y13
	VFMADD213PD C4, Y11, Y13
	VFMADD213PD C2, Y11, Y13
	VFMADD213PD ONE, Y11, Y13

	// Quadrants: bit 0 of q swaps sin and cos; bit 1 of q negates sin, bit 1 of q + 1 negates cos.
	VPSLLQ    $63, Y9, Y14
	VBLENDVPD Y14, Y13, Y12, Y4
	VBLENDVPD Y14, Y12, Y13, Y5
	VPSRLQ    $1, Y9, Y6
	VPSLLQ    $63, Y6, Y6
	VXORPD    Y6, Y4, Y4
	VPADDQ    IONE, Y9, Y6
	VPSRLQ    $1, Y6, Y6
	VPSLLQ    $63, Y6, Y6
	VXORPD    Y6, Y5, Y5

	// (r·cos, r·sin) per lane, stored in block order.
	VMULPD     Y10, Y5, Y5
	VMULPD     Y10, Y4, Y4
	VUNPCKLPD  Y4, Y5, Y0
	VUNPCKHPD  Y4, Y5, Y1
	VPERM2F128 $0x20, Y1, Y0, Y2
	VPERM2F128 $0x31, Y1, Y0, Y3
	VMOVUPD    Y2, (DI)
	VMOVUPD    Y3, 32(DI)
	ADDQ       $64, DI
	VPADDQ     STEP, Y15, Y15
	DECQ       CX
	JNZ        loop

	VZEROUPPER
	RET

// func fillUniformAVX2(dst *float64, groups int, a *fillArgs, consts *[53][4]uint64)
// Per step: Philox blocks ctr..ctr+3 and their two uniforms each, stored in block order: eight uniforms.
TEXT ·fillUniformAVX2(SB), NOSPLIT, $0-32
	MOVQ    dst+0(FP), DI
	MOVQ    groups+8(FP), CX
	MOVQ    a+16(FP), SI
	MOVQ    consts+24(FP), DX
	VMOVDQU (SI), Y15

uloop:
	BLOCKS4
	VUNPCKLPD  Y7, Y8, Y0
	VUNPCKHPD  Y7, Y8, Y1
	VPERM2F128 $0x20, Y1, Y0, Y2
	VPERM2F128 $0x31, Y1, Y0, Y3
	VMOVUPD    Y2, (DI)
	VMOVUPD    Y3, 32(DI)
	ADDQ       $64, DI
	VPADDQ     STEP, Y15, Y15
	DECQ       CX
	JNZ        uloop

	VZEROUPPER
	RET

// The AVX-512 kernels: the operations of the AVX2 ones on eight lanes, constants and keys broadcast from their
// first lane (.BCST). Mask registers replace the blends: K1 marks m > √2, K2 an odd quadrant.

// ROUND on eight lanes (Z0–Z3).
#define ROUNDZ(ka, kb) \
	VPMULUDQ.BCST M0, Z0, Z4 \
	VPMULUDQ.BCST M1, Z2, Z5 \
	VPSRLQ        $32, Z5, Z0 \
	VPXORQ        Z1, Z0, Z0 \
	VPXORQ.BCST   ka(SI), Z0, Z0 \
	VPSRLQ        $32, Z4, Z2 \
	VPXORQ        Z3, Z2, Z2 \
	VPXORQ.BCST   kb(SI), Z2, Z2 \
	VMOVDQA64     Z5, Z1 \
	VMOVDQA64     Z4, Z3

// TOUNIT on eight lanes.
#define TOUNITZ(hi, lo, out, tmp) \
	VPSLLQ           $32, hi, out \
	VPANDQ.BCST      MASK, lo, tmp \
	VPORQ            tmp, out, out \
	VPSRLQ           $11, out, out \
	VPSRLQ           $32, out, tmp \
	VPANDQ.BCST      MASK, out, out \
	VPORQ.BCST       MAGIC, tmp, tmp \
	VSUBPD.BCST      MAGIC, tmp, tmp \
	VPORQ.BCST       MAGIC, out, out \
	VSUBPD.BCST      MAGIC, out, out \
	VFMADD231PD.BCST P32, tmp, out \
	VADDPD.BCST      HALF, out, out \
	VMULPD.BCST      P53, out, out \
	VMINPD.BCST      BELOWONE, out, out

// The eight Philox blocks of the lanes of Z15: u1 in Z8, u2 in Z7.
#define BLOCKS8 \
	VMOVDQA64    Z15, Z0 \
	VPSRLQ       $32, Z15, Z1 \
	VPBROADCASTQ 64(SI), Z2 \
	VPBROADCASTQ 96(SI), Z3 \
	ROUNDZ(128, 160) \
	ROUNDZ(192, 224) \
	ROUNDZ(256, 288) \
	ROUNDZ(320, 352) \
	ROUNDZ(384, 416) \
	ROUNDZ(448, 480) \
	ROUNDZ(512, 544) \
	ROUNDZ(576, 608) \
	ROUNDZ(640, 672) \
	ROUNDZ(704, 736) \
	TOUNITZ(Z0, Z1, Z8, Z4) \
	TOUNITZ(Z2, Z3, Z7, Z5)

// func fillNormalAVX512(dst *float64, groups int, a *fillArgs, consts *[53][4]uint64)
// Per step: Philox blocks ctr..ctr+7 and their Box–Muller pairs, as in fillNormalAVX2: sixteen normals.
TEXT ·fillNormalAVX512(SB), NOSPLIT, $0-32
	MOVQ      dst+0(FP), DI
	MOVQ      groups+8(FP), CX
	MOVQ      a+16(FP), SI
	MOVQ      consts+24(FP), DX
	VMOVDQU64 (SI), Z15

zloop:
	BLOCKS8

	// logUnit(u1); where K1, m/2 for m and fe + 1 for fe (the AVX2 kernel's blends; fe ≠ 0, so fe + 0 = fe).
	VPSRLQ           $52, Z8, Z9
	VPORQ.BCST       MAGIC, Z9, Z9
	VSUBPD.BCST      EXPMAGIC, Z9, Z9
	VPANDQ.BCST      MANT, Z8, Z10
	VPORQ.BCST       ONE, Z10, Z10
	VCMPPD.BCST      $0x1e, SQRT2, Z10, K1
	VMULPD.BCST      HALF, Z10, K1, Z10
	VADDPD.BCST      ONE, Z9, K1, Z9
	VSUBPD.BCST      ONE, Z10, Z10
	VADDPD.BCST      TWO, Z10, Z12
	VDIVPD           Z12, Z10, Z11
	VMULPD           Z11, Z11, Z12
	VBROADCASTSD     AT21, Z13
	VFMADD213PD.BCST AT19, Z12, Z13
	VFMADD213PD.BCST AT17, Z12, Z13
	VFMADD213PD.BCST AT15, Z12, Z13
	VFMADD213PD.BCST AT13, Z12, Z13
	VFMADD213PD.BCST AT11, Z12, Z13
	VFMADD213PD.BCST AT9, Z12, Z13
	VFMADD213PD.BCST AT7, Z12, Z13
	VFMADD213PD.BCST AT5, Z12, Z13
	VFMADD213PD.BCST AT3, Z12, Z13
	VMULPD           Z13, Z12, Z13
	VSUBPD           Z13, Z10, Z13
	VMULPD.BCST      LN2LO, Z9, Z12
	VFMSUB231PD      Z13, Z11, Z12
	VSUBPD           Z12, Z10, Z10
	VFMADD231PD.BCST LN2HI, Z9, Z10

	// r = √(−2 ln u1)
	VMULPD.BCST MTWO, Z10, Z10
	VSQRTPD     Z10, Z10

	// sincos2Pi(u2): 4u2 = q + x, Z9 keeps q in its low bits.
	VMULPD.BCST      FOUR, Z7, Z7
	VADDPD.BCST      HALF, Z7, Z9
	VRNDSCALEPD      $3, Z9, Z9
	VSUBPD           Z9, Z7, Z7
	VADDPD.BCST      MAGIC, Z9, Z9
	VMULPD           Z7, Z7, Z11
	VBROADCASTSD     S17, Z12
	VFMADD213PD.BCST S15, Z11, Z12
	VFMADD213PD.BCST S13, Z11, Z12
	VFMADD213PD.BCST S11, Z11, Z12
	VFMADD213PD.BCST S9, Z11, Z12
	VFMADD213PD.BCST S7, Z11, Z12
	VFMADD213PD.BCST S5, Z11, Z12
	VFMADD213PD.BCST S3, Z11, Z12
	VFMADD213PD.BCST HPLO, Z11, Z12
	VMULPD           Z12, Z7, Z12
	VFMADD231PD.BCST HPHI, Z7, Z12
	VBROADCASTSD     C18, Z13
	VFMADD213PD.BCST C16, Z11, Z13
	VFMADD213PD.BCST C14, Z11, Z13
	VFMADD213PD.BCST C12, Z11, Z13
	VFMADD213PD.BCST C10, Z11, Z13
	VFMADD213PD.BCST C8, Z11, Z13
	VFMADD213PD.BCST C6, Z11, Z13
	VFMADD213PD.BCST C4, Z11, Z13
	VFMADD213PD.BCST C2, Z11, Z13
	VFMADD213PD.BCST ONE, Z11, Z13

	// Quadrants: K2 = bit 0 of q swaps sin and cos; bit 1 of q negates sin, bit 1 of q + 1 negates cos.
	VPTESTMQ.BCST IONE, Z9, K2
	VBLENDMPD     Z13, Z12, K2, Z4
	VBLENDMPD     Z12, Z13, K2, Z5
	VPSRLQ        $1, Z9, Z6
	VPSLLQ        $63, Z6, Z6
	VPXORQ        Z6, Z4, Z4
	VPADDQ.BCST   IONE, Z9, Z6
	VPSRLQ        $1, Z6, Z6
	VPSLLQ        $63, Z6, Z6
	VPXORQ        Z6, Z5, Z5

	// (r·cos, r·sin) per lane, stored in block order.
	VMULPD      Z10, Z5, Z5
	VMULPD      Z10, Z4, Z4
	VMOVDQU64   ILO, Z0
	VPERMI2PD   Z4, Z5, Z0
	VMOVDQU64   IHI, Z1
	VPERMI2PD   Z4, Z5, Z1
	VMOVUPD     Z0, (DI)
	VMOVUPD     Z1, 64(DI)
	ADDQ        $128, DI
	VPADDQ.BCST STEP8, Z15, Z15
	DECQ        CX
	JNZ         zloop

	VZEROUPPER
	RET

// func fillUniformAVX512(dst *float64, groups int, a *fillArgs, consts *[53][4]uint64)
// Per step: Philox blocks ctr..ctr+7 and their two uniforms each, stored in block order: sixteen uniforms.
TEXT ·fillUniformAVX512(SB), NOSPLIT, $0-32
	MOVQ      dst+0(FP), DI
	MOVQ      groups+8(FP), CX
	MOVQ      a+16(FP), SI
	MOVQ      consts+24(FP), DX
	VMOVDQU64 (SI), Z15

zuloop:
	BLOCKS8
	VMOVDQU64   ILO, Z0
	VPERMI2PD   Z7, Z8, Z0
	VMOVDQU64   IHI, Z1
	VPERMI2PD   Z7, Z8, Z1
	VMOVUPD     Z0, (DI)
	VMOVUPD     Z1, 64(DI)
	ADDQ        $128, DI
	VPADDQ.BCST STEP8, Z15, Z15
	DECQ        CX
	JNZ         zuloop

	VZEROUPPER
	RET
