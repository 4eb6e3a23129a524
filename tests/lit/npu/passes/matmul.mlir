// The npu passes on a small cube kernel: C (32x32) = A (32x64) @ B (64x32) in
// four k steps of 16, written without sync and without buffer offsets. Each
// step copies the A and B tiles to L1 (MTE2), loads them into L0A / L0B (MTE1)
// and multiplies into the L0C accumulator (M; the first step overwrites it,
// the others accumulate); the FixPipe writes C after the loop.
// RUN: ge-opt %s -p npu-double-buffer | filecheck %s --check-prefix=DB
// RUN: ge-opt %s -p npu-insert-sync | filecheck %s --check-prefix=SYNC
// RUN: ge-opt %s -p npu-plan-local-memory | filecheck %s --check-prefix=PLAN
// RUN: ge-opt %s -p npu-double-buffer,npu-plan-local-memory,npu-insert-sync | filecheck %s --check-prefix=ALL
// RUN: ge-sim %s --pipeline npu-double-buffer,npu-plan-local-memory,npu-insert-sync --seed 5 --outputs %t.npz | filecheck %s --check-prefix=SIM
// RUN: python %S/../inputs/expect.py %s %t.npz --seed 5 | filecheck %s --check-prefix=NUMERICS
// EXPECT: c = a @ b

// Double buffering: the L1 and L0 tiles alternate between two copies, the loop
// runs two k steps per iteration (4 is even: no remainder); the accumulator, read
// by every step after the first and by the FixPipe, keeps its single copy.
// DB-LABEL: npu.kernel @matmul
// DB:         %a1 = npu.alloc : memref<32x16xf16, #npu.space<l1>>
// DB-NEXT:    %a1_pong = npu.alloc : memref<32x16xf16, #npu.space<l1>>
// DB-NEXT:    %b1 = npu.alloc
// DB-NEXT:    %b1_pong = npu.alloc
// DB-NEXT:    %a0 = npu.alloc
// DB-NEXT:    %a0_pong = npu.alloc
// DB-NEXT:    %b0 = npu.alloc
// DB-NEXT:    %b0_pong = npu.alloc
// DB-NEXT:    %acc = npu.alloc : memref<32x32xf32, #npu.space<l0c>>
// DB-NEXT:    %step2 = arith.constant 2 : index
// DB-NEXT:    %pairs_end = arith.constant 4 : index
// DB-NEXT:    scf.for %k = %c0 to %pairs_end step %step2 {
// DB:           npu.mmad %a0[%c0], %b0[%c0], %acc[%c0] {m = 32, n = 32, k = 16, accumulate = true}
// DB:           %k_pong = arith.addi %k, %c1 : index
// DB:           npu.load_l0 %a1_pong[%c0], %a0_pong[%c0] {rows = 32, cols = 16}
// DB:           %first_1 = arith.cmpi eq, %k_pong, %c0 : index
// DB:           npu.mmad %a0_pong[%c0], %b0_pong[%c0], %acc[%c0] {m = 32, n = 32, k = 16, accumulate = true}
// DB-NEXT:      }
// DB-NEXT:    }
// DB-NEXT:    npu.fixpipe %acc[%c0], %c[%c0] {rows = 32, cols = 32}

// Sync: tiles in L1 (MTE2 -> MTE1) and in L0 (MTE1 -> M); L1 free again once MTE1
// has read it and L0 once the cube has (both waited at the end of the body, where
// the waiting pipe has nothing left to do); the accumulator done before the
// FixPipe reads it. The mmad inside the scf.if is waited for around the if.
// SYNC-LABEL: npu.kernel @matmul
// SYNC:         scf.for %k = %c0 to %c4 step %c1 {
// SYNC:           npu.copy %b[%bo], %b1[%c0] {rows = 16, cols = 32}
// SYNC-NEXT:      npu.set_flag {src = "MTE2", dst = "MTE1", event = 0}
// SYNC-NEXT:      npu.wait_flag {src = "MTE2", dst = "MTE1", event = 0}
// SYNC-NEXT:      npu.load_l0 %a1[%c0], %a0[%c0] {rows = 32, cols = 16}
// SYNC-NEXT:      npu.load_l0 %b1[%c0], %b0[%c0] {rows = 16, cols = 32}
// SYNC-NEXT:      npu.set_flag {src = "MTE1", dst = "M", event = 0}
// SYNC-NEXT:      npu.set_flag {src = "MTE1", dst = "MTE2", event = 0}
// SYNC-NEXT:      npu.wait_flag {src = "MTE1", dst = "M", event = 0}
// SYNC-NEXT:      %first = arith.cmpi eq, %k, %c0 : index
// SYNC-NEXT:      scf.if %first {
// SYNC-NEXT:        npu.mmad %a0[%c0], %b0[%c0], %acc[%c0] {m = 32, n = 32, k = 16}
// SYNC-NEXT:      } else {
// SYNC-NEXT:        npu.mmad %a0[%c0], %b0[%c0], %acc[%c0] {m = 32, n = 32, k = 16, accumulate = true}
// SYNC-NEXT:      }
// SYNC-NEXT:      npu.set_flag {src = "M", dst = "MTE1", event = 0}
// SYNC-NEXT:      npu.wait_flag {src = "MTE1", dst = "MTE2", event = 0}
// SYNC-NEXT:      npu.wait_flag {src = "M", dst = "MTE1", event = 0}
// SYNC-NEXT:    }
// SYNC-NEXT:    npu.set_flag {src = "M", dst = "FIX", event = 0}
// SYNC-NEXT:    npu.wait_flag {src = "M", dst = "FIX", event = 0}
// SYNC-NEXT:    npu.fixpipe

// Planning: L0 buffers at L0's 512-byte alignment, the two L1 tiles side by side.
// PLAN:       %a1 = npu.alloc {offset = 0} : memref<32x16xf16, #npu.space<l1>>
// PLAN-NEXT:  %b1 = npu.alloc {offset = 1024} : memref<16x32xf16, #npu.space<l1>>
// PLAN-NEXT:  %a0 = npu.alloc {offset = 0} : memref<32x16xf16, #npu.space<l0a>>
// PLAN-NEXT:  %b0 = npu.alloc {offset = 0} : memref<16x32xf16, #npu.space<l0b>>
// PLAN-NEXT:  %acc = npu.alloc {offset = 0} : memref<32x32xf32, #npu.space<l0c>>

// All three: ping and pong get their own flags (event ids 0 and 1). The pong
// half's "L1 / L0 free" flags are waited before its own loads in the next
// iteration (MTE2 / MTE1 have the ping half's work before them), so they are set
// once before the loop and waited once after it.
// ALL:        %a1_pong = npu.alloc {offset = 1024} : memref<32x16xf16, #npu.space<l1>>
// ALL:        %a0_pong = npu.alloc {offset = 1024} : memref<32x16xf16, #npu.space<l0a>>
// ALL:        npu.set_flag {src = "MTE1", dst = "MTE2", event = 0}
// ALL-NEXT:   npu.set_flag {src = "M", dst = "MTE1", event = 0}
// ALL-NEXT:   scf.for %k = %c0 to %pairs_end step %step2 {
// ALL:          npu.set_flag {src = "MTE1", dst = "MTE2", event = 1}
// ALL:          npu.set_flag {src = "M", dst = "MTE1", event = 1}
// ALL-NEXT:     npu.wait_flag {src = "MTE1", dst = "MTE2", event = 0}
// ALL:          npu.copy %a[%ao_1], %a1_pong[%c0]
// ALL:          npu.wait_flag {src = "M", dst = "MTE1", event = 0}
// ALL-NEXT:     npu.load_l0 %a1_pong[%c0], %a0_pong[%c0] {rows = 32, cols = 16}
// ALL:          npu.wait_flag {src = "MTE1", dst = "MTE2", event = 1}
// ALL-NEXT:     npu.wait_flag {src = "M", dst = "MTE1", event = 1}
// ALL-NEXT:   }
// ALL-NEXT:   npu.wait_flag {src = "MTE1", dst = "MTE2", event = 0}
// ALL-NEXT:   npu.wait_flag {src = "M", dst = "MTE1", event = 0}
// ALL-NEXT:   npu.set_flag {src = "M", dst = "FIX", event = 0}
// ALL-NEXT:   npu.wait_flag {src = "M", dst = "FIX", event = 0}
// ALL-NEXT:   npu.fixpipe

// SIM: c: tensor<32x32xf16>
// NUMERICS: ok: c matches a @ b

npu.kernel @matmul(%a: memref<32x64xf16, #npu.space<gm>>, %b: memref<64x32xf16, #npu.space<gm>>,
                   %c: memref<32x32xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c512 = arith.constant 512 : index
  %a1 = npu.alloc : memref<32x16xf16, #npu.space<l1>>
  %b1 = npu.alloc : memref<16x32xf16, #npu.space<l1>>
  %a0 = npu.alloc : memref<32x16xf16, #npu.space<l0a>>
  %b0 = npu.alloc : memref<16x32xf16, #npu.space<l0b>>
  %acc = npu.alloc : memref<32x32xf32, #npu.space<l0c>>
  scf.for %k = %c0 to %c4 step %c1 {
    %ao = arith.muli %k, %c16 : index                 // A[0, 16k]
    %bo = arith.muli %k, %c512 : index                // B[16k, 0]
    npu.copy %a[%ao], %a1[%c0] {rows = 32, cols = 16, strides = [64, 16]}
    npu.copy %b[%bo], %b1[%c0] {rows = 16, cols = 32}
    npu.load_l0 %a1[%c0], %a0[%c0] {rows = 32, cols = 16}
    npu.load_l0 %b1[%c0], %b0[%c0] {rows = 16, cols = 32}
    %first = arith.cmpi eq, %k, %c0 : index
    scf.if %first {
      npu.mmad %a0[%c0], %b0[%c0], %acc[%c0] {m = 32, n = 32, k = 16}
    } else {
      npu.mmad %a0[%c0], %b0[%c0], %acc[%c0] {m = 32, n = 32, k = 16, accumulate = true}
    }
  }
  npu.fixpipe %acc[%c0], %c[%c0] {rows = 32, cols = 32}
}

func.func @main(%a: memref<32x64xf16, #npu.space<gm>> {ge.name = "a"},
                %b: memref<64x32xf16, #npu.space<gm>> {ge.name = "b"},
                %c: memref<32x32xf16, #npu.space<gm>> {ge.name = "c", npu.output}) {
  npu.launch @matmul(%a, %b, %c)
  func.return
}
