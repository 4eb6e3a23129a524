// A 2-D transpose on the tiny preset: each of the two cores moves one 40x48
// tile: one strided copy in (rows of 48), one vtranspose in UB, one contiguous
// copy out. Then the whole pipeline, simulated, against the reference.
// RUN: ge-opt %s -p 'ge-to-npu{hw=tiny}' | filecheck %s
// RUN: ge-sim %s --pipeline 'ge-lower-to-npu{hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=SIM

func.func @main(%x: tensor<40x96xf16> {ge.name = "x"}) -> (tensor<96x40xf16> {ge.name = "y"}) {
  %y = ge.transpose %x {perm = [1, 0]} : (tensor<40x96xf16>) -> tensor<96x40xf16>
  func.return %y : tensor<96x40xf16>
}

// CHECK:      npu.kernel @k0_y(%0: memref<40x96xf16, #npu.space<gm>>, %1: memref<96x40xf16, #npu.space<gm>>) attributes {block_dim = 2, npu.sources = ["ge.transpose"]} {
// CHECK:        %block = npu.block_idx : index
// CHECK-NEXT:   %a0 = npu.alloc : memref<1920xf16, #npu.space<ub>>
// CHECK-NEXT:   %b0 = npu.alloc : memref<1920xf16, #npu.space<ub>>
// CHECK-NEXT:   [[SRC:%.*]] = arith.muli %block, %c48 : index
// CHECK-NEXT:   [[DST:%.*]] = arith.muli %block, %c1920 : index
// CHECK-NEXT:   npu.copy %0[[[SRC]]], %a0[%c0] {rows = 40, cols = 48, strides = [96, 48]}
// CHECK-NEXT:   npu.vtranspose %a0[%c0], %b0[%c0] {rows = 40, cols = 48}
// CHECK-NEXT:   npu.copy %b0[%c0], %1[[[DST]]] {cols = 1920}
// CHECK-NEXT: }
// CHECK:      npu.launch @k0_y(%x, %y) {block_dim = 2, npu.writes = {"1" = "y"}}

// SIM: check: ok (identical)
