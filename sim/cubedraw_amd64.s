#include "textflag.h"

// Lane j of the constant vectors below is for node lo + 8m + j.

// low32 masks the low 32 bits of each 64-bit lane.
DATA low32<>+0(SB)/8, $0x00000000ffffffff
GLOBL low32<>(SB), RODATA|NOPTR, $8

// func cubeTargetsAVX512(tg *uint32, n int, lane *[8]uint64, ids *[8]uint64, dim uint64)
//
// For k = 0 … n-1 (n a multiple of 8): with s = lane[k%8] + (k/8)·8·wyInc
// and i = ids[k%8] + 8·(k/8), h = hi ^ lo of the 128-bit product
// s·(s ^ wyXor), and tg[k] = i ^ 1 << (h·dim >> 64): the same numbers as
// syncDraw and cubeBit (see cubeTargets).
TEXT ·cubeTargetsAVX512(SB), NOSPLIT, $0-40
	MOVQ tg+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ lane+16(FP), SI
	MOVQ ids+24(FP), DX
	MOVQ dim+32(FP), AX
	VMOVDQU64 (SI), Z0            // s per lane
	VMOVDQU64 (DX), Z1            // i per lane
	VPBROADCASTQ AX, Z2           // dim
	MOVQ $0xe7037ed1a0b428db, AX
	VPBROADCASTQ AX, Z3           // wyXor
	MOVQ $0xa0761d6478bd642f, AX  // wyInc
	SHLQ $3, AX                   // 8·wyInc mod 2^64
	VPBROADCASTQ AX, Z4
	MOVQ $8, AX
	VPBROADCASTQ AX, Z5           // 8
	VPBROADCASTQ low32<>(SB), Z6  // low 32 bits
	MOVQ $1, AX
	VPBROADCASTQ AX, Z7           // 1
	SHRQ $3, CX
	JZ done

loop:
	// t = s ^ wyXor; s = a1:a0, t = b1:b0 in 32-bit halves.
	VPXORQ Z3, Z0, Z8             // t
	VPSRLQ $32, Z0, Z9            // a1
	VPSRLQ $32, Z8, Z10           // b1
	VPMULUDQ Z8, Z0, Z11          // p00 = a0·b0
	VPMULUDQ Z10, Z0, Z12         // p01 = a0·b1
	VPMULUDQ Z8, Z9, Z13          // p10 = a1·b0
	VPMULUDQ Z10, Z9, Z14         // p11 = a1·b1
	// mid = p00>>32 + low(p01) + low(p10) < 3·2^32
	VPSRLQ $32, Z11, Z15
	VPANDQ Z6, Z12, Z16
	VPADDQ Z16, Z15, Z15
	VPANDQ Z6, Z13, Z16
	VPADDQ Z16, Z15, Z15
	// hi = p11 + p01>>32 + p10>>32 + mid>>32
	VPSRLQ $32, Z12, Z16
	VPADDQ Z16, Z14, Z14
	VPSRLQ $32, Z13, Z16
	VPADDQ Z16, Z14, Z14
	VPSRLQ $32, Z15, Z16
	VPADDQ Z16, Z14, Z14
	// lo = mid<<32 | low(p00)
	VPSLLQ $32, Z15, Z15
	VPANDQ Z6, Z11, Z11
	VPORQ Z11, Z15, Z15
	VPXORQ Z15, Z14, Z14          // h = hi ^ lo
	// k = (h1·dim + (h0·dim)>>32) >> 32, h = h1:h0, dim < 2^32
	VPMULUDQ Z2, Z14, Z16         // h0·dim
	VPSRLQ $32, Z14, Z17
	VPMULUDQ Z2, Z17, Z17         // h1·dim
	VPSRLQ $32, Z16, Z16
	VPADDQ Z16, Z17, Z17
	VPSRLQ $32, Z17, Z17          // k
	VPSLLVQ Z17, Z7, Z17          // 1 << k
	VPXORQ Z1, Z17, Z17           // i ^ 1<<k
	VPMOVQD Z17, (DI)
	VPADDQ Z4, Z0, Z0             // next s
	VPADDQ Z5, Z1, Z1             // next i
	ADDQ $32, DI
	DECQ CX
	JNZ loop

done:
	VZEROUPPER
	RET

// half is 0.5 in both lanes, sign the sign bit of the low lane.
DATA half<>+0(SB)/8, $0x3fe0000000000000
DATA half<>+8(SB)/8, $0x3fe0000000000000
GLOBL half<>(SB), RODATA|NOPTR, $16
DATA sign<>+0(SB)/8, $0x8000000000000000
DATA sign<>+8(SB)/8, $0
GLOBL sign<>(SB), RODATA|NOPTR, $16

// func gaussSeidelSSE(a *xwPair, tg *uint32, n int, all *xwPair, nall int, k int, alpha, lim float64) int
//
// Algorithm 7's inner loop (see gaussSeidel) from node k on: node k halves
// its pair a[k], adds the half to all[tg[k]] and goes on, while its half
// passes the screen of runningMaxErr.below with alpha and lim and its
// target is below nall. It returns the first node that does not (or n),
// untouched, for gaussSeidel to do in Go. The arithmetic is gaussSeidel's,
// in the same order, two lanes at a time: the same bits. It prefetches the
// target of the node 64 places on (past 64 the gain levels off on a 2^20
// hypercube: 1.0 s of CPU against 1.3 s at 16 and 1.6 s at 8), whose pair is otherwise a
// cache miss on a large overlay: this loop waits on memory, not on
// arithmetic.
TEXT ·gaussSeidelSSE(SB), NOSPLIT, $0-72
	MOVQ a+0(FP), SI
	MOVQ tg+8(FP), DI
	MOVQ n+16(FP), CX
	MOVQ all+24(FP), DX
	MOVQ nall+32(FP), R8
	MOVQ k+40(FP), AX
	MOVSD alpha+48(FP), X6
	MOVSD lim+56(FP), X7
	MOVUPD half<>(SB), X5
	MOVUPD sign<>(SB), X4
	MOVQ CX, R12
	SUBQ $64, R12                 // the last node that prefetches: n - 64

loop:
	CMPQ AX, CX
	JGE done
	MOVL (DI)(AX*4), BX           // t
	CMPQ BX, R8
	JAE done                      // out of range: Go's bounds check says so
	CMPQ AX, R12
	JGE nofetch
	MOVL 256(DI)(AX*4), R11       // the target 64 nodes on
	SHLQ $4, R11
	PREFETCHT0 (DX)(R11*1)

nofetch:
	MOVQ AX, R10
	SHLQ $4, R10
	MOVUPD (SI)(R10*1), X0
	MULPD X5, X0                  // [hx, hw]
	MOVAPD X0, X1
	UNPCKHPD X1, X1               // hw
	MOVAPD X1, X2
	MULSD X6, X2                  // alpha·hw
	MOVAPD X0, X3
	SUBSD X2, X3                  // d = hx - alpha·hw
	MULSD X7, X1                  // l = lim·hw
	UCOMISD X3, X1
	JBE done                      // not d < l (or NaN): Go measures this node
	XORPD X4, X3                  // -d
	UCOMISD X3, X1
	JBE done
	MOVUPD X0, (SI)(R10*1)        // a[k] = half
	SHLQ $4, BX
	MOVUPD (DX)(BX*1), X1
	ADDPD X0, X1
	MOVUPD X1, (DX)(BX*1)         // all[t] += half
	INCQ AX
	JMP loop

done:
	MOVQ AX, ret+64(FP)
	RET
