// ge-group-read-through: a cube group made by automatic fusion reads its ND
// operand and converts it on load (the transdata moves into its body in front of
// the cube op), as named fused ops read through format changes: no conversion
// kernel before it. The lowering loads through the change; numbers as the reference.
// Automatic fusion's own predicate accepts such a load conversion
// (legality.load_conversions), so here it forms the group with the transdata
// itself (5 ops) and ge-group-read-through finds nothing left to move.
// RUN: ge-opt %s -p 'ge-graph-opt,ge-fuse{hw=tiny}' | filecheck %s
// RUN: ge-opt %s -p 'ge-graph-opt,ge-fuse{hw=tiny}' --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// RUN: ge-opt %s -p 'ge-compile{hw=tiny merge=false}' | filecheck %s --check-prefix=NPU
// RUN: ge-sim %s --pipeline 'ge-compile{hw=tiny}' --check | filecheck %s --check-prefix=SIM

// CHECK-LABEL: func.func @main(
// CHECK-NOT:     ge.transdata %x
// CHECK:         %y = fused.group %x, %w_nz, %b : (tensor<32x64xf16>,
// CHECK-NEXT:    ^bb0(%[[X:.+]]: tensor<32x64xf16>,
// CHECK-NEXT:      %[[NZ:.+]] = ge.transdata %[[X]] {src_format = "ND", dst_format = "FRACTAL_NZ"}
// CHECK-NEXT:      ge.batch_matmul %[[NZ]],

// STATS: ge-auto-fuse: 4 vertical merges, 1 groups formed, 5 ops grouped
// STATS: ge-group-read-through{{.*}}: 0 operands read before their format change

// NPU:     npu.kernel @k0_y(
// NPU-NOT: npu.kernel

// SIM: check: ok

builtin.module {
  func.func @main(%x: tensor<32x64xf16> {ge.name = "x"}) -> (tensor<3x32x16xf16> {ge.name = "y"}) {
    %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.125> : tensor<3x64x16xf16>
    %m = ge.batch_matmul %x, %w : (tensor<32x64xf16>, tensor<3x64x16xf16>) -> tensor<3x32x16xf16>
    %b = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.1> : tensor<3x1x16xf16>
    %a = ge.add %m, %b : (tensor<3x32x16xf16>, tensor<3x1x16xf16>) -> tensor<3x32x16xf16>
    %y = ge.relu %a : (tensor<3x32x16xf16>) -> tensor<3x32x16xf16>
    func.return %y : tensor<3x32x16xf16>
  }
}
