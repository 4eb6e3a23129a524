// ge-group-matmuls (grouped experts, CANN's GroupedMatmul): three expert MLPs of
// one input, two layers each (matmul + bias + relu, weights of one shape), stacked
// by a concat, become one batched product per layer over the stacked weights; the
// stack is the last layer's result with the group axis moved (a transpose). Each
// layer is one cube kernel after lowering, with the same numbers as the reference.
// RUN: ge-opt %s -p 'ge-group-matmuls' | filecheck %s
// RUN: ge-opt %s -p 'ge-group-matmuls' --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// RUN: ge-sim %s --pipeline 'ge-compile{hw=tiny}' --check | filecheck %s --check-prefix=SIM
// RUN: ge-opt %s -p 'ge-compile{hw=tiny}' --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS

// CHECK-LABEL: func.func @main(
// CHECK:         %[[W1:.+]] = ge.const dense<{{.*}}> : tensor<3x32x16xf16>
// CHECK:         %[[M1:.+]] = ge.batch_matmul %x, %[[W1]] : (tensor<8x32xf16>, tensor<3x32x16xf16>) -> tensor<3x8x16xf16>
// CHECK:         %[[B1:.+]] = ge.const dense<{{.*}}> : tensor<3x1x16xf16>
// CHECK:         %[[A1:.+]] = ge.add %[[M1]], %[[B1]] : (tensor<3x8x16xf16>, tensor<3x1x16xf16>) -> tensor<3x8x16xf16>
// CHECK:         %[[R1:.+]] = ge.relu %[[A1]]
// CHECK:         %[[W2:.+]] = ge.const dense<{{.*}}> : tensor<3x16x16xf16>
// CHECK:         %[[M2:.+]] = ge.batch_matmul %[[R1]], %[[W2]] : (tensor<3x8x16xf16>, tensor<3x16x16xf16>) -> tensor<3x8x16xf16>
// CHECK:         %[[B2:.+]] = ge.const
// CHECK:         %[[A2:.+]] = ge.add %[[M2]], %[[B2]]
// CHECK:         %[[R2:.+]] = ge.relu %[[A2]]
// CHECK:         %[[T:.+]] = ge.transpose %[[R2]] {perm = [1, 0, 2]} : (tensor<3x8x16xf16>) -> tensor<8x3x16xf16>
// CHECK:         ge.reduce_sum %[[T]]
// CHECK-NOT:     ge.matmul
// CHECK-NOT:     ge.concat
// CHECK:         func.return

// STATS: ge-group-matmuls: 1 expert groups

// SIM: check: ok

builtin.module {
  func.func @main(%x: tensor<8x32xf16> {ge.name = "x"}) -> (tensor<8x1x16xf16> {ge.name = "y"}) {
    %w0 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.18> : tensor<32x16xf16>
    %c0 = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.1> : tensor<16xf16>
    %v0 = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.25> : tensor<16x16xf16>
    %d0 = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.1> : tensor<16xf16>
    %w1 = ge.const #ge.random<normal, seed = 5, mean = 0.0, std = 0.18> : tensor<32x16xf16>
    %c1 = ge.const #ge.random<normal, seed = 6, mean = 0.0, std = 0.1> : tensor<16xf16>
    %v1 = ge.const #ge.random<normal, seed = 7, mean = 0.0, std = 0.25> : tensor<16x16xf16>
    %d1 = ge.const #ge.random<normal, seed = 8, mean = 0.0, std = 0.1> : tensor<16xf16>
    %w2 = ge.const #ge.random<normal, seed = 9, mean = 0.0, std = 0.18> : tensor<32x16xf16>
    %c2 = ge.const #ge.random<normal, seed = 10, mean = 0.0, std = 0.1> : tensor<16xf16>
    %v2 = ge.const #ge.random<normal, seed = 11, mean = 0.0, std = 0.25> : tensor<16x16xf16>
    %d2 = ge.const #ge.random<normal, seed = 12, mean = 0.0, std = 0.1> : tensor<16xf16>
    %m0 = ge.matmul %x, %w0 : (tensor<8x32xf16>, tensor<32x16xf16>) -> tensor<8x16xf16>
    %a0 = ge.bias_add %m0, %c0 : (tensor<8x16xf16>, tensor<16xf16>) -> tensor<8x16xf16>
    %r0 = ge.relu %a0 : (tensor<8x16xf16>) -> tensor<8x16xf16>
    %n0 = ge.matmul %r0, %v0 : (tensor<8x16xf16>, tensor<16x16xf16>) -> tensor<8x16xf16>
    %b0 = ge.bias_add %n0, %d0 : (tensor<8x16xf16>, tensor<16xf16>) -> tensor<8x16xf16>
    %e0 = ge.relu %b0 : (tensor<8x16xf16>) -> tensor<8x16xf16>
    %m1 = ge.matmul %x, %w1 : (tensor<8x32xf16>, tensor<32x16xf16>) -> tensor<8x16xf16>
    %a1 = ge.bias_add %m1, %c1 : (tensor<8x16xf16>, tensor<16xf16>) -> tensor<8x16xf16>
    %r1 = ge.relu %a1 : (tensor<8x16xf16>) -> tensor<8x16xf16>
    %n1 = ge.matmul %r1, %v1 : (tensor<8x16xf16>, tensor<16x16xf16>) -> tensor<8x16xf16>
    %b1 = ge.bias_add %n1, %d1 : (tensor<8x16xf16>, tensor<16xf16>) -> tensor<8x16xf16>
    %e1 = ge.relu %b1 : (tensor<8x16xf16>) -> tensor<8x16xf16>
    %m2 = ge.matmul %x, %w2 : (tensor<8x32xf16>, tensor<32x16xf16>) -> tensor<8x16xf16>
    %a2 = ge.bias_add %m2, %c2 : (tensor<8x16xf16>, tensor<16xf16>) -> tensor<8x16xf16>
    %r2 = ge.relu %a2 : (tensor<8x16xf16>) -> tensor<8x16xf16>
    %n2 = ge.matmul %r2, %v2 : (tensor<8x16xf16>, tensor<16x16xf16>) -> tensor<8x16xf16>
    %b2 = ge.bias_add %n2, %d2 : (tensor<8x16xf16>, tensor<16xf16>) -> tensor<8x16xf16>
    %e2 = ge.relu %b2 : (tensor<8x16xf16>) -> tensor<8x16xf16>
    %s0 = ge.reshape %e0 : (tensor<8x16xf16>) -> tensor<8x1x16xf16>
    %s1 = ge.reshape %e1 : (tensor<8x16xf16>) -> tensor<8x1x16xf16>
    %s2 = ge.reshape %e2 : (tensor<8x16xf16>) -> tensor<8x1x16xf16>
    %stack = ge.concat %s0, %s2, %s1 {axis = 1} : (tensor<8x1x16xf16>, tensor<8x1x16xf16>, tensor<8x1x16xf16>) -> tensor<8x3x16xf16>
    %y = ge.reduce_sum %stack {axes = [1]} : (tensor<8x3x16xf16>) -> tensor<8x1x16xf16>
    func.return %y : tensor<8x1x16xf16>
  }
}
