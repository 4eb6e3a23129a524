// The flash-attention pattern: BSH when the head split / merge reshapes and
// transposes are there, BNSD otherwise; scale, boolean or additive masks,
// dropout; format changes looked through; negative cases.
// RUN: ge-opt %s -p ge-pattern-fuse | filecheck %s
// RUN: ge-sim %s --pipeline ge-pattern-fuse --check | filecheck %s --check-prefix=SIM

// BERT-shaped: 8 tokens, 2 heads of 4; key given transposed (perm [1, 2, 0]).
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %[[O:.*]] = fused.flash_attention %q, %k, %v {layout = "BSH", num_heads = 2, scale = 0.5, dropout = 0.1} : (tensor<8x8xf16>, tensor<8x8xf16>, tensor<8x8xf16>) -> tensor<8x8xf16>
// CHECK-NEXT:    func.return %[[O]]
// SIM: check: ok
func.func @main(%q: tensor<8x8xf16>, %k: tensor<8x8xf16>, %v: tensor<8x8xf16>) -> tensor<8x8xf16> {
  %qh = ge.reshape %q : (tensor<8x8xf16>) -> tensor<8x2x4xf16>
  %qt = ge.transpose %qh {perm = [1, 0, 2]} : (tensor<8x2x4xf16>) -> tensor<2x8x4xf16>
  %kh = ge.reshape %k : (tensor<8x8xf16>) -> tensor<8x2x4xf16>
  %kt = ge.transpose %kh {perm = [1, 2, 0]} : (tensor<8x2x4xf16>) -> tensor<2x4x8xf16>
  %vh = ge.reshape %v : (tensor<8x8xf16>) -> tensor<8x2x4xf16>
  %vt = ge.transpose %vh {perm = [1, 0, 2]} : (tensor<8x2x4xf16>) -> tensor<2x8x4xf16>
  %s = ge.batch_matmul %qt, %kt : (tensor<2x8x4xf16>, tensor<2x4x8xf16>) -> tensor<2x8x8xf16>
  %half = ge.const dense<0.5> : tensor<f16>
  %ss = ge.mul %s, %half : (tensor<2x8x8xf16>, tensor<f16>) -> tensor<2x8x8xf16>
  %p = ge.softmax %ss : (tensor<2x8x8xf16>) -> tensor<2x8x8xf16>
  %pd = ge.dropout %p {ratio = 0.1} : (tensor<2x8x8xf16>) -> tensor<2x8x8xf16>
  %c = ge.batch_matmul %pd, %vt : (tensor<2x8x8xf16>, tensor<2x8x4xf16>) -> tensor<2x8x4xf16>
  %ct = ge.transpose %c {perm = [1, 0, 2]} : (tensor<2x8x4xf16>) -> tensor<8x2x4xf16>
  %o = ge.reshape %ct : (tensor<8x2x4xf16>) -> tensor<8x8xf16>
  func.return %o : tensor<8x8xf16>
}

// LLaMA-shaped after the layout pass: format changes around the products, a
// causal boolean mask with a splat fill, transpose_b on the scores.
// CHECK-LABEL: func.func @after_layout(
// CHECK-NEXT:    %[[O:.*]] = fused.flash_attention %q, %k, %v mask %m {layout = "BSH", num_heads = 2, scale = 0.25, mask_value = -10000.0}
// CHECK-NEXT:    func.return %[[O]]
// CHECK-NOT:     ge.transdata
func.func @after_layout(%q: tensor<16x32xf16>, %k: tensor<16x32xf16>, %v: tensor<16x32xf16>, %m: tensor<16x16xi1>) -> tensor<16x32xf16> {
  %qh = ge.reshape %q : (tensor<16x32xf16>) -> tensor<16x2x16xf16>
  %qt = ge.transpose %qh {perm = [1, 0, 2]} : (tensor<16x2x16xf16>) -> tensor<2x16x16xf16>
  %kh = ge.reshape %k : (tensor<16x32xf16>) -> tensor<16x2x16xf16>
  %kt = ge.transpose %kh {perm = [1, 0, 2]} : (tensor<16x2x16xf16>) -> tensor<2x16x16xf16>
  %vh = ge.reshape %v : (tensor<16x32xf16>) -> tensor<16x2x16xf16>
  %vt = ge.transpose %vh {perm = [1, 0, 2]} : (tensor<16x2x16xf16>) -> tensor<2x16x16xf16>
  %qn = ge.transdata %qt {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<2x16x16xf16>) -> tensor<2x16x16xf16, #ge.format<FRACTAL_NZ>>
  %kn = ge.transdata %kt {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<2x16x16xf16>) -> tensor<2x16x16xf16, #ge.format<FRACTAL_NZ>>
  %s = ge.batch_matmul %qn, %kn {transpose_b = true} : (tensor<2x16x16xf16, #ge.format<FRACTAL_NZ>>, tensor<2x16x16xf16, #ge.format<FRACTAL_NZ>>) -> tensor<2x16x16xf16, #ge.format<FRACTAL_NZ>>
  %quarter = ge.const dense<0.25> : tensor<f16>
  %ss = ge.mul %s, %quarter : (tensor<2x16x16xf16, #ge.format<FRACTAL_NZ>>, tensor<f16>) -> tensor<2x16x16xf16, #ge.format<FRACTAL_NZ>>
  %sn = ge.transdata %ss {src_format = "FRACTAL_NZ", dst_format = "ND"} : (tensor<2x16x16xf16, #ge.format<FRACTAL_NZ>>) -> tensor<2x16x16xf16>
  %fill = ge.const dense<-1.0e4> : tensor<f16>
  %ms = ge.where %m, %sn, %fill : (tensor<16x16xi1>, tensor<2x16x16xf16>, tensor<f16>) -> tensor<2x16x16xf16>
  %p = ge.softmax %ms : (tensor<2x16x16xf16>) -> tensor<2x16x16xf16>
  %pn = ge.transdata %p {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<2x16x16xf16>) -> tensor<2x16x16xf16, #ge.format<FRACTAL_NZ>>
  %vn = ge.transdata %vt {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<2x16x16xf16>) -> tensor<2x16x16xf16, #ge.format<FRACTAL_NZ>>
  %c = ge.batch_matmul %pn, %vn : (tensor<2x16x16xf16, #ge.format<FRACTAL_NZ>>, tensor<2x16x16xf16, #ge.format<FRACTAL_NZ>>) -> tensor<2x16x16xf16, #ge.format<FRACTAL_NZ>>
  %cn = ge.transdata %c {src_format = "FRACTAL_NZ", dst_format = "ND"} : (tensor<2x16x16xf16, #ge.format<FRACTAL_NZ>>) -> tensor<2x16x16xf16>
  %ct = ge.transpose %cn {perm = [1, 0, 2]} : (tensor<2x16x16xf16>) -> tensor<16x2x16xf16>
  %o = ge.reshape %ct : (tensor<16x2x16xf16>) -> tensor<16x32xf16>
  func.return %o : tensor<16x32xf16>
}

// Already split into heads, key transposed, an additive mask: BNSD, with a
// transpose giving the fused op its (..., Sk, D) key.
// CHECK-LABEL: func.func @bnsd(
// CHECK-NEXT:    %[[K:.*]] = ge.transpose %kt {perm = [0, 2, 1]} : (tensor<2x4x6xf32>) -> tensor<2x6x4xf32>
// CHECK-NEXT:    %[[O:.*]] = fused.flash_attention %q, %[[K]], %v mask %m : (tensor<2x8x4xf32>, tensor<2x6x4xf32>, tensor<2x6x3xf32>, tensor<2x8x6xf32>) -> tensor<2x8x3xf32>
// CHECK-NEXT:    func.return %[[O]]
func.func @bnsd(%q: tensor<2x8x4xf32>, %kt: tensor<2x4x6xf32>, %v: tensor<2x6x3xf32>, %m: tensor<2x8x6xf32>) -> tensor<2x8x3xf32> {
  %s = ge.batch_matmul %q, %kt : (tensor<2x8x4xf32>, tensor<2x4x6xf32>) -> tensor<2x8x6xf32>
  %ms = ge.add %s, %m : (tensor<2x8x6xf32>, tensor<2x8x6xf32>) -> tensor<2x8x6xf32>
  %p = ge.softmax %ms {axis = 2} : (tensor<2x8x6xf32>) -> tensor<2x8x6xf32>
  %o = ge.batch_matmul %p, %v : (tensor<2x8x6xf32>, tensor<2x6x3xf32>) -> tensor<2x8x3xf32>
  func.return %o : tensor<2x8x3xf32>
}

// The probabilities are returned too (another user): no flash attention; the
// scores product with its scale is still a fused batch_matmul.
// CHECK-LABEL: func.func @probs_used_elsewhere(
// CHECK-NEXT:    %[[S:.*]] = fused.batch_matmul %q, %k {transpose_b = true, scale = 0.5}
// CHECK-NEXT:    ge.softmax %[[S]]
// CHECK-NEXT:    ge.batch_matmul
// CHECK-NOT:     fused.flash_attention
func.func @probs_used_elsewhere(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>) -> (tensor<2x8x4xf32>, tensor<2x8x8xf32>) {
  %s = ge.batch_matmul %q, %k {transpose_b = true} : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x8xf32>
  %half = ge.const dense<0.5> : tensor<f32>
  %ss = ge.mul %s, %half : (tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
  %p = ge.softmax %ss : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o = ge.batch_matmul %p, %v : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  func.return %o, %p : tensor<2x8x4xf32>, tensor<2x8x8xf32>
}

// Shapes flash attention does not take: softmax over the query axis, and
// batch dims that broadcast.
// CHECK-LABEL: func.func @not_attention(
// CHECK-NOT:     fused.flash_attention
// CHECK:         func.return
func.func @not_attention(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>, %v: tensor<2x8x4xf32>, %kb: tensor<1x8x4xf32>) -> (tensor<2x8x4xf32>, tensor<2x8x4xf32>) {
  %s = ge.batch_matmul %q, %k {transpose_b = true} : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x8xf32>
  %p = ge.softmax %s {axis = 1} : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o = ge.batch_matmul %p, %v : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %s2 = ge.batch_matmul %q, %kb {transpose_b = true} : (tensor<2x8x4xf32>, tensor<1x8x4xf32>) -> tensor<2x8x8xf32>
  %p2 = ge.softmax %s2 : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %o2 = ge.batch_matmul %p2, %v : (tensor<2x8x8xf32>, tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  func.return %o, %o2 : tensor<2x8x4xf32>, tensor<2x8x4xf32>
}
