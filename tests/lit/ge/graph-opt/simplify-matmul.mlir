// ge-simplify moves transposes of the last two dims into the matmul flags.
// RUN: ge-opt %s -p ge-simplify | filecheck %s

// CHECK-LABEL: func.func @matmul_transposed_weight
// CHECK-NEXT:    %y = ge.matmul %x, %w {transpose_b = true} : (tensor<4x8xf16>, tensor<16x8xf16>) -> tensor<4x16xf16>
// CHECK-NEXT:    func.return %y
func.func @matmul_transposed_weight(%x: tensor<4x8xf16>, %w: tensor<16x8xf16>) -> tensor<4x16xf16> {
  %wt = ge.transpose %w {perm = [1, 0]} : (tensor<16x8xf16>) -> tensor<8x16xf16>
  %y = ge.matmul %x, %wt : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  func.return %y : tensor<4x16xf16>
}

// A flag already set is toggled off.
// CHECK-LABEL: func.func @matmul_transposed_lhs
// CHECK-NEXT:    %y = ge.matmul %x, %w : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
func.func @matmul_transposed_lhs(%x: tensor<4x8xf16>, %w: tensor<8x16xf16>) -> tensor<4x16xf16> {
  %xt = ge.transpose %x {perm = [1, 0]} : (tensor<4x8xf16>) -> tensor<8x4xf16>
  %y = ge.matmul %xt, %w {transpose_a = true} : (tensor<8x4xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  func.return %y : tensor<4x16xf16>
}

// Attention's K^T: (seq, heads, dim) -> (heads, dim, seq) is "heads first, then swap".
// CHECK-LABEL: func.func @attention_scores
// CHECK-NEXT:    %k_t = ge.transpose %k {perm = [1, 0, 2]} : (tensor<8x2x4xf16>) -> tensor<2x8x4xf16>
// CHECK-NEXT:    %s = ge.batch_matmul %q, %k_t {transpose_b = true} : (tensor<2x8x4xf16>, tensor<2x8x4xf16>) -> tensor<2x8x8xf16>
func.func @attention_scores(%q: tensor<2x8x4xf16>, %k: tensor<8x2x4xf16>) -> tensor<2x8x8xf16> {
  %k_t = ge.transpose %k {perm = [1, 2, 0]} : (tensor<8x2x4xf16>) -> tensor<2x4x8xf16>
  %s = ge.batch_matmul %q, %k_t : (tensor<2x8x4xf16>, tensor<2x4x8xf16>) -> tensor<2x8x8xf16>
  func.return %s : tensor<2x8x8xf16>
}

// The innermost dim does not end up second to last: no flag can express it.
// CHECK-LABEL: func.func @batch_permutation_only
// CHECK-NEXT:    ge.transpose %x {perm = [1, 0, 2]}
// CHECK-NEXT:    ge.batch_matmul %xt, %w :
func.func @batch_permutation_only(%x: tensor<8x2x4xf16>, %w: tensor<2x4x3xf16>) -> tensor<2x8x3xf16> {
  %xt = ge.transpose %x {perm = [1, 0, 2]} : (tensor<8x2x4xf16>) -> tensor<2x8x4xf16>
  %y = ge.batch_matmul %xt, %w : (tensor<2x8x4xf16>, tensor<2x4x3xf16>) -> tensor<2x8x3xf16>
  func.return %y : tensor<2x8x3xf16>
}

// Keeping the transpose for its other user and adding a second one is no gain.
// CHECK-LABEL: func.func @shared_transpose
// CHECK-NEXT:    %k_t = ge.transpose %k {perm = [1, 2, 0]}
// CHECK-NEXT:    %s = ge.batch_matmul %q, %k_t :
func.func @shared_transpose(%q: tensor<2x8x4xf16>, %k: tensor<8x2x4xf16>) -> (tensor<2x8x8xf16>, tensor<2x4x8xf16>) {
  %k_t = ge.transpose %k {perm = [1, 2, 0]} : (tensor<8x2x4xf16>) -> tensor<2x4x8xf16>
  %s = ge.batch_matmul %q, %k_t : (tensor<2x8x4xf16>, tensor<2x4x8xf16>) -> tensor<2x8x8xf16>
  func.return %s, %k_t : tensor<2x8x8xf16>, tensor<2x4x8xf16>
}
