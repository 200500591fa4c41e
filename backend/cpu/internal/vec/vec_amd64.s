#include "textflag.h"

// func dotFMA(x, y []float64) float64
// Four 256-bit accumulators over 16 elements a step, then 4 and 1 at a time.
TEXT ·dotFMA(SB), NOSPLIT, $0-56
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	MOVQ   y_base+24(FP), DI
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	XORQ   AX, AX
	MOVQ   CX, DX
	ANDQ   $-16, DX

dot16:
	CMPQ        AX, DX
	JGE         dot4start
	VMOVUPD     (SI)(AX*8), Y4
	VMOVUPD     32(SI)(AX*8), Y5
	VMOVUPD     64(SI)(AX*8), Y6
	VMOVUPD     96(SI)(AX*8), Y7
	VFMADD231PD (DI)(AX*8), Y4, Y0
	VFMADD231PD 32(DI)(AX*8), Y5, Y1
	VFMADD231PD 64(DI)(AX*8), Y6, Y2
	VFMADD231PD 96(DI)(AX*8), Y7, Y3
	ADDQ        $16, AX
	JMP         dot16

dot4start:
	MOVQ CX, DX
	ANDQ $-4, DX

dot4:
	CMPQ        AX, DX
	JGE         dotreduce
	VMOVUPD     (SI)(AX*8), Y4
	VFMADD231PD (DI)(AX*8), Y4, Y0
	ADDQ        $4, AX
	JMP         dot4

dotreduce:
	VADDPD       Y1, Y0, Y0
	VADDPD       Y3, Y2, Y2
	VADDPD       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VHADDPD      X0, X0, X0

dot1:
	CMPQ        AX, CX
	JGE         dotdone
	VMOVSD      (SI)(AX*8), X2
	VFMADD231SD (DI)(AX*8), X2, X0
	INCQ        AX
	JMP         dot1

dotdone:
	VZEROUPPER
	MOVSD X0, ret+48(FP)
	RET

// func axpyFMA(alpha float64, x, y []float64)
TEXT ·axpyFMA(SB), NOSPLIT, $0-56
	VBROADCASTSD alpha+0(FP), Y0
	MOVQ         x_base+8(FP), SI
	MOVQ         x_len+16(FP), CX
	MOVQ         y_base+32(FP), DI
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-8, DX

axpy8:
	CMPQ        AX, DX
	JGE         axpy4start
	VMOVUPD     (DI)(AX*8), Y1
	VMOVUPD     32(DI)(AX*8), Y2
	VFMADD231PD (SI)(AX*8), Y0, Y1
	VFMADD231PD 32(SI)(AX*8), Y0, Y2
	VMOVUPD     Y1, (DI)(AX*8)
	VMOVUPD     Y2, 32(DI)(AX*8)
	ADDQ        $8, AX
	JMP         axpy8

axpy4start:
	MOVQ CX, DX
	ANDQ $-4, DX

axpy4:
	CMPQ        AX, DX
	JGE         axpy1
	VMOVUPD     (DI)(AX*8), Y1
	VFMADD231PD (SI)(AX*8), Y0, Y1
	VMOVUPD     Y1, (DI)(AX*8)
	ADDQ        $4, AX
	JMP         axpy4

axpy1:
	CMPQ        AX, CX
	JGE         axpydone
	VMOVSD      (DI)(AX*8), X1
	VFMADD231SD (SI)(AX*8), X0, X1
	VMOVSD      X1, (DI)(AX*8)
	INCQ        AX
	JMP         axpy1

axpydone:
	VZEROUPPER
	RET
