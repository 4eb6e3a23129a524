// A BERT-base encoder layer: sequence 128, hidden 768, 12 heads of 64, FFN 3072,
// post-layer-norm, fp16. Shaped the way ONNX exporters emit it: MatMul + Add for
// every projection, Reshape/Transpose for the heads, Dropout left in (identity at
// inference). Run it:  ge-sim examples/bert_layer.mlir --report
func.func @main(%hidden: tensor<128x768xf16> {ge.name = "hidden"}) -> (tensor<128x768xf16> {ge.name = "out"}) {
  %q_w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.02> : tensor<768x768xf16>
  %q = ge.matmul %hidden, %q_w : (tensor<128x768xf16>, tensor<768x768xf16>) -> tensor<128x768xf16>
  %q_b = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.02> : tensor<768xf16>
  %q_biased = ge.add %q, %q_b : (tensor<128x768xf16>, tensor<768xf16>) -> tensor<128x768xf16>
  %q_heads = ge.reshape %q_biased : (tensor<128x768xf16>) -> tensor<128x12x64xf16>
  %q_t = ge.transpose %q_heads {perm = [1, 0, 2]} : (tensor<128x12x64xf16>) -> tensor<12x128x64xf16>
  %k_w = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.02> : tensor<768x768xf16>
  %k = ge.matmul %hidden, %k_w : (tensor<128x768xf16>, tensor<768x768xf16>) -> tensor<128x768xf16>
  %k_b = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.02> : tensor<768xf16>
  %k_biased = ge.add %k, %k_b : (tensor<128x768xf16>, tensor<768xf16>) -> tensor<128x768xf16>
  %k_heads = ge.reshape %k_biased : (tensor<128x768xf16>) -> tensor<128x12x64xf16>
  %k_t = ge.transpose %k_heads {perm = [1, 2, 0]} : (tensor<128x12x64xf16>) -> tensor<12x64x128xf16>
  %v_w = ge.const #ge.random<normal, seed = 5, mean = 0.0, std = 0.02> : tensor<768x768xf16>
  %v = ge.matmul %hidden, %v_w : (tensor<128x768xf16>, tensor<768x768xf16>) -> tensor<128x768xf16>
  %v_b = ge.const #ge.random<normal, seed = 6, mean = 0.0, std = 0.02> : tensor<768xf16>
  %v_biased = ge.add %v, %v_b : (tensor<128x768xf16>, tensor<768xf16>) -> tensor<128x768xf16>
  %v_heads = ge.reshape %v_biased : (tensor<128x768xf16>) -> tensor<128x12x64xf16>
  %v_t = ge.transpose %v_heads {perm = [1, 0, 2]} : (tensor<128x12x64xf16>) -> tensor<12x128x64xf16>
  %scores = ge.batch_matmul %q_t, %k_t : (tensor<12x128x64xf16>, tensor<12x64x128xf16>) -> tensor<12x128x128xf16>
  %scale = ge.const dense<1.250000e-01> : tensor<f16>
  %scaled = ge.mul %scores, %scale : (tensor<12x128x128xf16>, tensor<f16>) -> tensor<12x128x128xf16>
  %probs = ge.softmax %scaled : (tensor<12x128x128xf16>) -> tensor<12x128x128xf16>
  %probs_drop = ge.dropout %probs {ratio = 0.1} : (tensor<12x128x128xf16>) -> tensor<12x128x128xf16>
  %context = ge.batch_matmul %probs_drop, %v_t : (tensor<12x128x128xf16>, tensor<12x128x64xf16>) -> tensor<12x128x64xf16>
  %context_t = ge.transpose %context {perm = [1, 0, 2]} : (tensor<12x128x64xf16>) -> tensor<128x12x64xf16>
  %context_2d = ge.reshape %context_t : (tensor<128x12x64xf16>) -> tensor<128x768xf16>
  %attn_out_w = ge.const #ge.random<normal, seed = 7, mean = 0.0, std = 0.02> : tensor<768x768xf16>
  %attn_out = ge.matmul %context_2d, %attn_out_w : (tensor<128x768xf16>, tensor<768x768xf16>) -> tensor<128x768xf16>
  %attn_out_b = ge.const #ge.random<normal, seed = 8, mean = 0.0, std = 0.02> : tensor<768xf16>
  %attn_out_biased = ge.add %attn_out, %attn_out_b : (tensor<128x768xf16>, tensor<768xf16>) -> tensor<128x768xf16>
  %attn_drop = ge.dropout %attn_out_biased {ratio = 0.1} : (tensor<128x768xf16>) -> tensor<128x768xf16>
  %attn_residual = ge.add %attn_drop, %hidden : (tensor<128x768xf16>, tensor<128x768xf16>) -> tensor<128x768xf16>
  %ln1_gamma = ge.const #ge.random<uniform, seed = 9, low = 0.9, high = 1.1> : tensor<768xf16>
  %ln1_beta = ge.const #ge.random<normal, seed = 10, mean = 0.0, std = 0.02> : tensor<768xf16>
  %ln1 = ge.layer_norm %attn_residual, %ln1_gamma, %ln1_beta {epsilon = 1.0e-12} : (tensor<128x768xf16>, tensor<768xf16>, tensor<768xf16>) -> tensor<128x768xf16>
  %ffn_in_w = ge.const #ge.random<normal, seed = 11, mean = 0.0, std = 0.02> : tensor<768x3072xf16>
  %ffn_in = ge.matmul %ln1, %ffn_in_w : (tensor<128x768xf16>, tensor<768x3072xf16>) -> tensor<128x3072xf16>
  %ffn_in_b = ge.const #ge.random<normal, seed = 12, mean = 0.0, std = 0.02> : tensor<3072xf16>
  %ffn_in_biased = ge.add %ffn_in, %ffn_in_b : (tensor<128x3072xf16>, tensor<3072xf16>) -> tensor<128x3072xf16>
  %ffn_act = ge.gelu %ffn_in_biased : (tensor<128x3072xf16>) -> tensor<128x3072xf16>
  %ffn_out_w = ge.const #ge.random<normal, seed = 13, mean = 0.0, std = 0.02> : tensor<3072x768xf16>
  %ffn_out = ge.matmul %ffn_act, %ffn_out_w : (tensor<128x3072xf16>, tensor<3072x768xf16>) -> tensor<128x768xf16>
  %ffn_out_b = ge.const #ge.random<normal, seed = 14, mean = 0.0, std = 0.02> : tensor<768xf16>
  %ffn_out_biased = ge.add %ffn_out, %ffn_out_b : (tensor<128x768xf16>, tensor<768xf16>) -> tensor<128x768xf16>
  %ffn_drop = ge.dropout %ffn_out_biased {ratio = 0.1} : (tensor<128x768xf16>) -> tensor<128x768xf16>
  %ffn_residual = ge.add %ffn_drop, %ln1 : (tensor<128x768xf16>, tensor<128x768xf16>) -> tensor<128x768xf16>
  %ln2_gamma = ge.const #ge.random<uniform, seed = 15, low = 0.9, high = 1.1> : tensor<768xf16>
  %ln2_beta = ge.const #ge.random<normal, seed = 16, mean = 0.0, std = 0.02> : tensor<768xf16>
  %ln2 = ge.layer_norm %ffn_residual, %ln2_gamma, %ln2_beta {epsilon = 1.0e-12} : (tensor<128x768xf16>, tensor<768xf16>, tensor<768xf16>) -> tensor<128x768xf16>
  func.return %ln2 : tensor<128x768xf16>
}
