#include "textflag.h"

// func copyNT64(dst, src unsafe.Pointer, n uintptr)
// One 64-byte block an iteration: four unaligned 16-byte loads, four
// non-temporal 16-byte stores (MOVNTDQ, spelled MOVNTO); SFENCE at the
// end orders the stores before anything the caller does next.
TEXT ·copyNT64(SB), NOSPLIT, $0-24
	MOVQ	dst+0(FP), DI
	MOVQ	src+8(FP), SI
	MOVQ	n+16(FP), CX
	SHRQ	$6, CX
	JZ	done
loop:
	MOVOU	0(SI), X0
	MOVOU	16(SI), X1
	MOVOU	32(SI), X2
	MOVOU	48(SI), X3
	MOVNTO	X0, 0(DI)
	MOVNTO	X1, 16(DI)
	MOVNTO	X2, 32(DI)
	MOVNTO	X3, 48(DI)
	ADDQ	$64, SI
	ADDQ	$64, DI
	DECQ	CX
	JNZ	loop
	SFENCE
done:
	RET
