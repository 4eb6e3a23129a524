// ge-group-matmuls leaves experts whose epilogues differ (relu, sigmoid) as they are.
// RUN: ge-opt %s -p 'ge-group-matmuls' | filecheck %s

// CHECK-LABEL: func.func @main(
// CHECK-COUNT-2: ge.matmul
// CHECK:         ge.concat
builtin.module {
  func.func @main(%x: tensor<8x32xf16> {ge.name = "x"}) -> (tensor<8x2x16xf16> {ge.name = "y"}) {
    %w0 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.18> : tensor<32x16xf16>
    %w1 = ge.const #ge.random<normal, seed = 5, mean = 0.0, std = 0.18> : tensor<32x16xf16>
    %m0 = ge.matmul %x, %w0 : (tensor<8x32xf16>, tensor<32x16xf16>) -> tensor<8x16xf16>
    %r0 = ge.relu %m0 : (tensor<8x16xf16>) -> tensor<8x16xf16>
    %m1 = ge.matmul %x, %w1 : (tensor<8x32xf16>, tensor<32x16xf16>) -> tensor<8x16xf16>
    %r1 = ge.sigmoid %m1 : (tensor<8x16xf16>) -> tensor<8x16xf16>
    %s0 = ge.reshape %r0 : (tensor<8x16xf16>) -> tensor<8x1x16xf16>
    %s1 = ge.reshape %r1 : (tensor<8x16xf16>) -> tensor<8x1x16xf16>
    %y = ge.concat %s0, %s1 {axis = 1} : (tensor<8x1x16xf16>, tensor<8x1x16xf16>) -> tensor<8x2x16xf16>
    func.return %y : tensor<8x2x16xf16>
  }
}
