// The flash-attention pattern reads a causal mask from its values: a constant
// lower-triangular mask (here 8 queries at the end of 16 keys: offset 8), or one
// computed from constants (key index <= query index, as exporters write it), gives
// `causal = true` and its offset; the same shape upper-triangular does not.
// RUN: ge-opt %s -p ge-pattern-fuse | filecheck %s
// RUN: ge-sim %s --pipeline 'ge-lower-to-npu{hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=SIM

// CHECK-LABEL: func.func @main(
// CHECK:         fused.flash_attention %q, %k, %v mask %m {scale = 0.25, mask_value = -10000.0, causal = true, causal_offset = 8}
// SIM: check: ok
func.func @main(%q: tensor<2x8x16xf16>, %k: tensor<2x16x16xf16>, %v: tensor<2x16x16xf16>) -> tensor<2x8x16xf16> {
  %m = ge.const dense<"0xFFFFFFFFFFFFFFFFFF00000000000000FFFFFFFFFFFFFFFFFFFF000000000000FFFFFFFFFFFFFFFFFFFFFF0000000000FFFFFFFFFFFFFFFFFFFFFFFF00000000FFFFFFFFFFFFFFFFFFFFFFFFFF000000FFFFFFFFFFFFFFFFFFFFFFFFFFFF0000FFFFFFFFFFFFFFFFFFFFFFFFFFFFFF00FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"> : tensor<8x16xi1>
  %s = ge.batch_matmul %q, %k {transpose_b = true} : (tensor<2x8x16xf16>, tensor<2x16x16xf16>) -> tensor<2x8x16xf16>
  %c = ge.const dense<0.25> : tensor<f16>
  %ss = ge.mul %s, %c : (tensor<2x8x16xf16>, tensor<f16>) -> tensor<2x8x16xf16>
  %fill = ge.const dense<-1.0e4> : tensor<f16>
  %ms = ge.where %m, %ss, %fill : (tensor<8x16xi1>, tensor<2x8x16xf16>, tensor<f16>) -> tensor<2x8x16xf16>
  %p = ge.softmax %ms : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  %o = ge.batch_matmul %p, %v : (tensor<2x8x16xf16>, tensor<2x16x16xf16>) -> tensor<2x8x16xf16>
  func.return %o : tensor<2x8x16xf16>
}

// CHECK-LABEL: func.func @iota(
// CHECK:         fused.flash_attention %q, %k, %v mask %m {scale = 0.25, mask_value = -10000.0, causal = true}
func.func @iota(%q: tensor<2x8x16xf16>, %k: tensor<2x8x16xf16>, %v: tensor<2x8x16xf16>) -> tensor<2x8x16xf16> {
  %kj = ge.const dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi32>
  %qi = ge.const dense<[[0], [1], [2], [3], [4], [5], [6], [7]]> : tensor<8x1xi32>
  %m = ge.compare %kj, %qi {predicate = "le"} : (tensor<8xi32>, tensor<8x1xi32>) -> tensor<8x8xi1>
  %s = ge.batch_matmul %q, %k {transpose_b = true} : (tensor<2x8x16xf16>, tensor<2x8x16xf16>) -> tensor<2x8x8xf16>
  %c = ge.const dense<0.25> : tensor<f16>
  %ss = ge.mul %s, %c : (tensor<2x8x8xf16>, tensor<f16>) -> tensor<2x8x8xf16>
  %fill = ge.const dense<-1.0e4> : tensor<f16>
  %ms = ge.where %m, %ss, %fill : (tensor<8x8xi1>, tensor<2x8x8xf16>, tensor<f16>) -> tensor<2x8x8xf16>
  %p = ge.softmax %ms : (tensor<2x8x8xf16>) -> tensor<2x8x8xf16>
  %o = ge.batch_matmul %p, %v : (tensor<2x8x8xf16>, tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  func.return %o : tensor<2x8x16xf16>
}

// CHECK-LABEL: func.func @upper(
// CHECK:         fused.flash_attention %q, %k, %v mask %m {scale = 0.25, mask_value = -10000.0} :
func.func @upper(%q: tensor<2x8x16xf16>, %k: tensor<2x8x16xf16>, %v: tensor<2x8x16xf16>) -> tensor<2x8x16xf16> {
  %m = ge.const dense<"0xFFFFFFFFFFFFFFFF00FFFFFFFFFFFFFF0000FFFFFFFFFFFF000000FFFFFFFFFF00000000FFFFFFFF0000000000FFFFFF000000000000FFFF00000000000000FF"> : tensor<8x8xi1>
  %s = ge.batch_matmul %q, %k {transpose_b = true} : (tensor<2x8x16xf16>, tensor<2x8x16xf16>) -> tensor<2x8x8xf16>
  %c = ge.const dense<0.25> : tensor<f16>
  %ss = ge.mul %s, %c : (tensor<2x8x8xf16>, tensor<f16>) -> tensor<2x8x8xf16>
  %fill = ge.const dense<-1.0e4> : tensor<f16>
  %ms = ge.where %m, %ss, %fill : (tensor<8x8xi1>, tensor<2x8x8xf16>, tensor<f16>) -> tensor<2x8x8xf16>
  %p = ge.softmax %ms : (tensor<2x8x8xf16>) -> tensor<2x8x8xf16>
  %o = ge.batch_matmul %p, %v : (tensor<2x8x8xf16>, tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  func.return %o : tensor<2x8x16xf16>
}
