// Exporters' idioms ge-simplify rewrites (transforms/graph/exported_idioms.py):
// GELU written out as its formula (exact and tanh, either association of the
// 0.5), a batched product with an unbatched weight as a 2-D GEMM, and the views
// back to (*b, M, N) moved below the epilogue so that it sits on the GEMM.
// RUN: ge-opt %s -p ge-simplify --split-input-file | filecheck %s

// TorchScript's nn.GELU(): x * (1 + erf(x / sqrt 2)) * 0.5.
// CHECK-LABEL: func.func @gelu_erf_torchscript
// CHECK-NEXT:    %g = ge.gelu %x : (tensor<4x32xf32>) -> tensor<4x32xf32>
// CHECK-NEXT:    func.return %g
func.func @gelu_erf_torchscript(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %sqrt2 = ge.const dense<1.41421354> : tensor<f32>
  %one = ge.const dense<1.0> : tensor<f32>
  %half = ge.const dense<0.5> : tensor<f32>
  %d = ge.div %x, %sqrt2 : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %e = ge.erf %d : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %a = ge.add %e, %one : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %m = ge.mul %x, %a : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %g = ge.mul %m, %half : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  func.return %g : tensor<4x32xf32>
}

// -----

// The 0.5 on x first, 1 / sqrt 2 as a product, the sum the other way round.
// CHECK-LABEL: func.func @gelu_erf_other_order
// CHECK-NEXT:    %g = ge.gelu %x : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT:    func.return %g
func.func @gelu_erf_other_order(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %rsqrt2 = ge.const dense<0.707106769> : tensor<f32>
  %one = ge.const dense<1.0> : tensor<f32>
  %half = ge.const dense<0.5> : tensor<f32>
  %h = ge.mul %half, %x : (tensor<f32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %d = ge.mul %x, %rsqrt2 : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8x16xf32>
  %e = ge.erf %d : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %a = ge.add %one, %e : (tensor<f32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %g = ge.mul %h, %a : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  func.return %g : tensor<2x8x16xf32>
}

// -----

// GPT-2's gelu_new: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 pow(x, 3)))).
// CHECK-LABEL: func.func @gelu_tanh_gpt2
// CHECK-NEXT:    %g = ge.gelu %x {approximate = "tanh"} : (tensor<4x32xf32>) -> tensor<4x32xf32>
// CHECK-NEXT:    func.return %g
func.func @gelu_tanh_gpt2(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %half = ge.const dense<0.5> : tensor<f32>
  %three = ge.const dense<3.0> : tensor<f32>
  %c = ge.const dense<0.0447149985> : tensor<f32>
  %k = ge.const dense<0.797884583> : tensor<f32>
  %one = ge.const dense<1.0> : tensor<f32>
  %h = ge.mul %x, %half : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %p = ge.pow %x, %three : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %pc = ge.mul %p, %c : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %s = ge.add %x, %pc : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %u = ge.mul %s, %k : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %t = ge.tanh %u : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %a = ge.add %t, %one : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %g = ge.mul %h, %a : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %g : tensor<4x32xf32>
}

// -----

// The cube as x * x * x.
// CHECK-LABEL: func.func @gelu_tanh_cube_as_products
// CHECK-NEXT:    %g = ge.gelu %x {approximate = "tanh"} : (tensor<4x32xf32>) -> tensor<4x32xf32>
// CHECK-NEXT:    func.return %g
func.func @gelu_tanh_cube_as_products(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %half = ge.const dense<0.5> : tensor<f32>
  %c = ge.const dense<0.0447149985> : tensor<f32>
  %k = ge.const dense<0.797884583> : tensor<f32>
  %one = ge.const dense<1.0> : tensor<f32>
  %x2 = ge.mul %x, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %x3 = ge.mul %x2, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %pc = ge.mul %c, %x3 : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %s = ge.add %pc, %x : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %u = ge.mul %k, %s : (tensor<f32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %t = ge.tanh %u : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %a = ge.add %t, %one : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %m = ge.mul %x, %a : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %g = ge.mul %m, %half : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  func.return %g : tensor<4x32xf32>
}

// -----

// Not a GELU: the scale of erf's argument is not 1 / sqrt 2; nothing changes.
// CHECK-LABEL: func.func @not_gelu
// CHECK:         ge.erf
// CHECK-NOT:     ge.gelu
func.func @not_gelu(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %two = ge.const dense<2.0> : tensor<f32>
  %one = ge.const dense<1.0> : tensor<f32>
  %half = ge.const dense<0.5> : tensor<f32>
  %d = ge.div %x, %two : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %e = ge.erf %d : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %a = ge.add %e, %one : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  %m = ge.mul %x, %a : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %g = ge.mul %m, %half : (tensor<4x32xf32>, tensor<f32>) -> tensor<4x32xf32>
  func.return %g : tensor<4x32xf32>
}

// -----

// The dynamo exporter's seq-first input projection (batch on the lhs only):
// one 2-D GEMM between views; the bias add moves above the view back.
// CHECK-LABEL: func.func @lhs_batched
// CHECK:         %{{.*}} = ge.reshape %x : (tensor<64x1x32xf32>) -> tensor<64x32xf32>
// CHECK-NEXT:    %{{.*}} = ge.matmul %{{.*}}, %w : (tensor<64x32xf32>, tensor<32x96xf32>) -> tensor<64x96xf32>
// CHECK-NEXT:    %{{.*}} = ge.add %{{.*}}, %b : (tensor<64x96xf32>, tensor<96xf32>) -> tensor<64x96xf32>
// CHECK-NEXT:    %{{.*}} = ge.reshape %{{.*}} : (tensor<64x96xf32>) -> tensor<64x1x96xf32>
// CHECK-NEXT:    func.return
func.func @lhs_batched(%x: tensor<64x1x32xf32>, %w: tensor<32x96xf32>) -> tensor<64x1x96xf32> {
  %b = ge.const dense<0.25> : tensor<96xf32>
  %y = ge.batch_matmul %x, %w : (tensor<64x1x32xf32>, tensor<32x96xf32>) -> tensor<64x1x96xf32>
  %z = ge.add %y, %b : (tensor<64x1x96xf32>, tensor<96xf32>) -> tensor<64x1x96xf32>
  func.return %z : tensor<64x1x96xf32>
}

// -----

// A batched weight stays a batched product.
// CHECK-LABEL: func.func @both_batched
// CHECK-NEXT:    %y = ge.batch_matmul %x, %w
func.func @both_batched(%x: tensor<2x8x32xf32>, %w: tensor<2x32x16xf32>) -> tensor<2x8x16xf32> {
  %y = ge.batch_matmul %x, %w : (tensor<2x8x32xf32>, tensor<2x32x16xf32>) -> tensor<2x8x16xf32>
  func.return %y : tensor<2x8x16xf32>
}

// -----

// BERT's feed-forward as TorchScript writes it: 3-D MatMul, bias Add, erf GELU:
// a 2-D GEMM with the bias and the GELU on it, one view at the end.
// CHECK-LABEL: func.func @bert_ffn
// CHECK:         %{{.*}} = ge.reshape %x : (tensor<1x16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT:    %{{.*}} = ge.matmul
// CHECK-NEXT:    %{{.*}} = ge.add %b, %{{.*}} : (tensor<64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
// CHECK-NEXT:    %{{.*}} = ge.gelu %{{.*}} : (tensor<16x64xf32>) -> tensor<16x64xf32>
// CHECK-NEXT:    %{{.*}} = ge.reshape %{{.*}} : (tensor<16x64xf32>) -> tensor<1x16x64xf32>
// CHECK-NEXT:    func.return
func.func @bert_ffn(%x: tensor<1x16x32xf32>, %w: tensor<32x64xf32>) -> tensor<1x16x64xf32> {
  %b = ge.const dense<0.125> : tensor<64xf32>
  %sqrt2 = ge.const dense<1.41421354> : tensor<f32>
  %one = ge.const dense<1.0> : tensor<f32>
  %half = ge.const dense<0.5> : tensor<f32>
  %y = ge.batch_matmul %x, %w : (tensor<1x16x32xf32>, tensor<32x64xf32>) -> tensor<1x16x64xf32>
  %yb = ge.add %b, %y : (tensor<64xf32>, tensor<1x16x64xf32>) -> tensor<1x16x64xf32>
  %d = ge.div %yb, %sqrt2 : (tensor<1x16x64xf32>, tensor<f32>) -> tensor<1x16x64xf32>
  %e = ge.erf %d : (tensor<1x16x64xf32>) -> tensor<1x16x64xf32>
  %a = ge.add %e, %one : (tensor<1x16x64xf32>, tensor<f32>) -> tensor<1x16x64xf32>
  %m = ge.mul %yb, %a : (tensor<1x16x64xf32>, tensor<1x16x64xf32>) -> tensor<1x16x64xf32>
  %g = ge.mul %m, %half : (tensor<1x16x64xf32>, tensor<f32>) -> tensor<1x16x64xf32>
  func.return %g : tensor<1x16x64xf32>
}

// -----

// Hugging Face's rotary embedding on a head split of q = x W: t * cos +
// rotate_half(t) * sin becomes, on the rows, y * cos' + (x (W P)) * sin' (one
// elementwise kernel and one more product of x), then the head split.
// CHECK-LABEL: func.func @rotary
// CHECK-NOT:     ge.slice
// CHECK-NOT:     ge.concat
// CHECK-NOT:     ge.neg
// CHECK:         %[[Y:.*]] = ge.matmul %[[X:.*]], %w : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
// CHECK:         %[[WP:.*]] = ge.const dense<
// CHECK-NEXT:    %[[YP:.*]] = ge.matmul %[[X]], %[[WP]] : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
// CHECK:         %[[C:.*]] = ge.mul %[[Y]], %{{.*}} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
// CHECK:         %[[S:.*]] = ge.mul %[[YP]], %{{.*}} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
// CHECK-NEXT:    %[[R:.*]] = ge.add %[[C]], %[[S]]
// CHECK-NEXT:    %[[H:.*]] = ge.reshape %[[R]] : (tensor<16x64xf32>) -> tensor<1x16x4x16xf32>
// CHECK-NEXT:    %[[T:.*]] = ge.transpose %[[H]] {perm = [0, 2, 1, 3]}
// CHECK-NEXT:    func.return %[[T]]
func.func @rotary(%x: tensor<1x16x64xf32>) -> tensor<1x4x16x16xf32> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.2> : tensor<64x64xf32>
  %cos = ge.const #ge.random<uniform, seed = 2, low = -1.0, high = 1.0> : tensor<1x1x16x16xf32>
  %sin = ge.const #ge.random<uniform, seed = 3, low = -1.0, high = 1.0> : tensor<1x1x16x16xf32>
  %q = ge.batch_matmul %x, %w : (tensor<1x16x64xf32>, tensor<64x64xf32>) -> tensor<1x16x64xf32>
  %r = ge.reshape %q : (tensor<1x16x64xf32>) -> tensor<1x16x4x16xf32>
  %t = ge.transpose %r {perm = [0, 2, 1, 3]} : (tensor<1x16x4x16xf32>) -> tensor<1x4x16x16xf32>
  %m = ge.mul %t, %cos : (tensor<1x4x16x16xf32>, tensor<1x1x16x16xf32>) -> tensor<1x4x16x16xf32>
  %s1 = ge.slice %t {starts = [0, 0, 0, 0], ends = [1, 4, 16, 8], steps = [1, 1, 1, 1]} : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x8xf32>
  %s2 = ge.slice %t {starts = [0, 0, 0, 8], ends = [1, 4, 16, 16], steps = [1, 1, 1, 1]} : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x8xf32>
  %n = ge.neg %s2 : (tensor<1x4x16x8xf32>) -> tensor<1x4x16x8xf32>
  %c = ge.concat %n, %s1 {axis = -1} : (tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x16x16xf32>
  %m1 = ge.mul %c, %sin : (tensor<1x4x16x16xf32>, tensor<1x1x16x16xf32>) -> tensor<1x4x16x16xf32>
  %a = ge.add %m, %m1 : (tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32>
  func.return %a : tensor<1x4x16x16xf32>
}

// -----

// GPT-2's c_attn: one Gemm (matmul + bias_add), its columns split into Q, K, V:
// three products by the weight's column blocks, no split left.
// CHECK-LABEL: func.func @split_product
// CHECK-NOT:     ge.split
// CHECK-COUNT-3: ge.matmul %x, %{{.*}} : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
// CHECK-NOT:     ge.split
func.func @split_product(%x: tensor<16x32xf32>) -> (tensor<1x16x32xf32>, tensor<1x16x32xf32>, tensor<1x16x32xf32>) {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.2> : tensor<32x96xf32>
  %b = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.1> : tensor<96xf32>
  %y = ge.matmul %x, %w : (tensor<16x32xf32>, tensor<32x96xf32>) -> tensor<16x96xf32>
  %yb = ge.bias_add %y, %b : (tensor<16x96xf32>, tensor<96xf32>) -> tensor<16x96xf32>
  %r = ge.reshape %yb : (tensor<16x96xf32>) -> tensor<1x16x96xf32>
  %q, %k, %v = ge.split %r {axis = 2, sizes = [32, 32, 32]} : (tensor<1x16x96xf32>) -> (tensor<1x16x32xf32>, tensor<1x16x32xf32>, tensor<1x16x32xf32>)
  func.return %q, %k, %v : tensor<1x16x32xf32>, tensor<1x16x32xf32>, tensor<1x16x32xf32>
}

// -----

// A post-norm residual block: the GEMM's result viewed as (1, M, N), the
// residual add and the LayerNorm over the last dim move below the view (the
// residual gets a view of its own), so matmul + residual + norm fusion sees
// them on the GEMM.
// CHECK-LABEL: func.func @residual_norm_below_view
// CHECK-NEXT:    %p = ge.matmul %a, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
// CHECK-NEXT:    %[[R:.*]] = ge.reshape %r : (tensor<1x8x16xf32>) -> tensor<8x16xf32>
// CHECK-NEXT:    %[[S:.*]] = ge.add %p, %[[R]] : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK-NEXT:    %[[N:.*]] = ge.layer_norm %[[S]], %g, %b : (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
// CHECK-NEXT:    %{{.*}} = ge.reshape %[[N]] : (tensor<8x16xf32>) -> tensor<1x8x16xf32>
func.func @residual_norm_below_view(%a: tensor<8x16xf32>, %w: tensor<16x16xf32>, %r: tensor<1x8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<1x8x16xf32> {
  %p = ge.matmul %a, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %v = ge.reshape %p : (tensor<8x16xf32>) -> tensor<1x8x16xf32>
  %s = ge.add %v, %r : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
  %n = ge.layer_norm %s, %g, %b {axis = 2 : i64} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
  func.return %n : tensor<1x8x16xf32>
}

// -----

// An add no norm reads keeps the exporter's shape (a written-out GELU's inner
// sum stays whole for its pattern).
// CHECK-LABEL: func.func @add_without_norm_keeps_view
// CHECK:         ge.add %v, %r : (tensor<1x8x16xf32>, tensor<1x8x16xf32>)
func.func @add_without_norm_keeps_view(%p: tensor<8x16xf32>, %r: tensor<1x8x16xf32>) -> tensor<1x8x16xf32> {
  %v = ge.reshape %p : (tensor<8x16xf32>) -> tensor<1x8x16xf32>
  %s = ge.add %v, %r : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
  func.return %s : tensor<1x8x16xf32>
}

// -----

// Hugging Face's LlamaRMSNorm as exported (after ge-simplify's pow(x,2) -> x*x
// and 1/sqrt -> rsqrt): x * rsqrt(mean(x*x, -1) + eps) is one ge.rms_norm with
// a scale of ones.
// CHECK-LABEL: func.func @rms_norm_written_out
// CHECK-NEXT:    %[[ONES:.*]] = ge.const dense<1.000000e+00> : tensor<16xf32>
// CHECK-NEXT:    %[[N:.*]] = ge.rms_norm %x, %[[ONES]] {epsilon = 9.99999997{{[0-9]*}}e-07} : (tensor<1x8x16xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
// CHECK-NEXT:    func.return %[[N]]
func.func @rms_norm_written_out(%x: tensor<1x8x16xf32>) -> tensor<1x8x16xf32> {
  %two = ge.const dense<2.0> : tensor<f32>
  %eps = ge.const dense<1.0e-06> : tensor<f32>
  %one = ge.const dense<1.0> : tensor<f32>
  %p = ge.pow %x, %two : (tensor<1x8x16xf32>, tensor<f32>) -> tensor<1x8x16xf32>
  %m = ge.reduce_mean %p {axes = [-1]} : (tensor<1x8x16xf32>) -> tensor<1x8x1xf32>
  %a = ge.add %m, %eps : (tensor<1x8x1xf32>, tensor<f32>) -> tensor<1x8x1xf32>
  %s = ge.sqrt %a : (tensor<1x8x1xf32>) -> tensor<1x8x1xf32>
  %r = ge.div %one, %s : (tensor<f32>, tensor<1x8x1xf32>) -> tensor<1x8x1xf32>
  %y = ge.mul %x, %r : (tensor<1x8x16xf32>, tensor<1x8x1xf32>) -> tensor<1x8x16xf32>
  func.return %y : tensor<1x8x16xf32>
}

// -----

// A mean over more than the last dim is not an RMSNorm: left as it is.
// CHECK-LABEL: func.func @mean_square_over_two_dims
// CHECK-NOT:     ge.rms_norm
func.func @mean_square_over_two_dims(%x: tensor<1x8x16xf32>) -> tensor<1x8x16xf32> {
  %eps = ge.const dense<1.0e-06> : tensor<f32>
  %p = ge.mul %x, %x : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
  %m = ge.reduce_mean %p {axes = [1, 2]} : (tensor<1x8x16xf32>) -> tensor<1x1x1xf32>
  %a = ge.add %m, %eps : (tensor<1x1x1xf32>, tensor<f32>) -> tensor<1x1x1xf32>
  %r = ge.rsqrt %a : (tensor<1x1x1xf32>) -> tensor<1x1x1xf32>
  %y = ge.mul %x, %r : (tensor<1x8x16xf32>, tensor<1x1x1xf32>) -> tensor<1x8x16xf32>
  func.return %y : tensor<1x8x16xf32>
}
