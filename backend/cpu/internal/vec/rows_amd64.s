#include "textflag.h"

// func scaleRows512(x *float64, ldx int, s *float64, rows int, m1, m2 int)
TEXT ·scaleRows512(SB), NOSPLIT, $0-48
	MOVQ  x+0(FP), DI
	MOVQ  ldx+8(FP), R8
	SHLQ  $3, R8
	MOVQ  s+16(FP), SI
	MOVQ  rows+24(FP), CX
	MOVQ  m1+32(FP), AX
	KMOVW AX, K1
	MOVQ  m2+40(FP), AX
	KMOVW AX, K2

scalerow:
	VBROADCASTSD (SI), Z2
	VMOVUPD.Z    (DI), K1, Z0
	VMOVUPD.Z    64(DI), K2, Z1
	VMULPD       Z2, Z0, Z0
	VMULPD       Z2, Z1, Z1
	VMOVUPD      Z0, K1, (DI)
	VMOVUPD      Z1, K2, 64(DI)
	ADDQ         $8, SI
	ADDQ         R8, DI
	DECQ         CX
	JNZ          scalerow
	VZEROUPPER
	RET

// func addScaledRows512(d *float64, ldd int, t *float64, ldt int, s, m *float64, minc int, rows int, m1, m2 int)
TEXT ·addScaledRows512(SB), NOSPLIT, $0-80
	MOVQ  d+0(FP), DI
	MOVQ  ldd+8(FP), R8
	SHLQ  $3, R8
	MOVQ  t+16(FP), SI
	MOVQ  ldt+24(FP), R9
	SHLQ  $3, R9
	MOVQ  s+32(FP), DX
	MOVQ  m+40(FP), BX
	MOVQ  minc+48(FP), R10
	SHLQ  $3, R10
	MOVQ  rows+56(FP), CX
	MOVQ  m1+64(FP), AX
	KMOVW AX, K1
	MOVQ  m2+72(FP), AX
	KMOVW AX, K2

addrow:
	VBROADCASTSD (DX), Z4
	VBROADCASTSD (BX), Z5
	VMOVUPD.Z    (SI), K1, Z0
	VMOVUPD.Z    64(SI), K2, Z1
	VFMADD213PD  Z5, Z4, Z0   // t·s + m
	VFMADD213PD  Z5, Z4, Z1
	VADDPD.Z     (DI), Z0, K1, Z0
	VADDPD.Z     64(DI), Z1, K2, Z1
	VMOVUPD      Z0, K1, (DI)
	VMOVUPD      Z1, K2, 64(DI)
	ADDQ         $8, DX
	ADDQ         R10, BX
	ADDQ         R9, SI
	ADDQ         R8, DI
	DECQ         CX
	JNZ          addrow
	VZEROUPPER
	RET
