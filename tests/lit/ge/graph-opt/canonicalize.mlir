// Upstream `canonicalize` finds the ge ops' patterns through their
// HasCanonicalizationPatternsTrait, exactly as ge-simplify does.
// RUN: ge-opt %s -p canonicalize | filecheck %s

// CHECK-LABEL: func.func @exported_noise
// CHECK-NEXT:    %y = ge.matmul %x, %w {transpose_b = true} : (tensor<4x8xf16>, tensor<16x8xf16>) -> tensor<4x16xf16>
// CHECK-NEXT:    %r = ge.reshape %y : (tensor<4x16xf16>) -> tensor<64xf16>
// CHECK-NEXT:    func.return %r
func.func @exported_noise(%x: tensor<4x8xf16>, %w: tensor<16x8xf16>) -> tensor<64xf16> {
  %d = ge.dropout %x {ratio = 0.1} : (tensor<4x8xf16>) -> tensor<4x8xf16>
  %one = ge.const dense<1.0> : tensor<f16>
  %m = ge.mul %d, %one : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
  %wt = ge.transpose %w {perm = [1, 0]} : (tensor<16x8xf16>) -> tensor<8x16xf16>
  %y = ge.matmul %m, %wt : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %u = ge.reshape %y : (tensor<4x16xf16>) -> tensor<1x4x16xf16>
  %r = ge.reshape %u : (tensor<1x4x16xf16>) -> tensor<64xf16>
  func.return %r : tensor<64xf16>
}

// Nothing to do: the graph comes back unchanged.
// CHECK-LABEL: func.func @already_canonical
// CHECK-NEXT:    %a = ge.mul %x, %x
// CHECK-NEXT:    %b = ge.softmax %a
// CHECK-NEXT:    func.return %b
func.func @already_canonical(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %a = ge.mul %x, %x : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  %b = ge.softmax %a : (tensor<4x8xf16>) -> tensor<4x8xf16>
  func.return %b : tensor<4x8xf16>
}
