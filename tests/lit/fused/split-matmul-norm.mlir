// fused-split-matmul-norm: a matmul + residual + norm stays one kernel, or becomes a
// matmul kernel and a norm kernel, or a split-K matmul and the norm of its partials,
// whichever the tiling estimates fastest on the preset.
// RUN: ge-opt %s --split-input-file --pass-pipeline 'fused-split-matmul-norm{hw=ascend910}' | filecheck %s
// RUN: ge-opt %s --split-input-file --pass-pipeline 'fused-split-matmul-norm{hw=ascend910 debug=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=DEBUG

// Many rows, small K and N: the whole-row kernel.
// CHECK-LABEL: func.func @many_rows(
// CHECK-NEXT: %y, %s = fused.matmul_add_layer_norm %a, %w, %r, %g, %b
// DEBUG: fused ~{{[0-9]+}}, split ~{{[0-9]+}}, split-K 2 ~{{[0-9]+}}, split-K 4 ~{{[0-9]+}} cycles: fused
func.func @many_rows(%a: tensor<512x64xf16>, %w: tensor<64x64xf16>, %r: tensor<512x64xf16>, %g: tensor<64xf16>, %b: tensor<64xf16>) -> tensor<512x64xf16> {
  %y, %s = fused.matmul_add_layer_norm %a, %w, %r, %g, %b : (tensor<512x64xf16>, tensor<64x64xf16>, tensor<512x64xf16>, tensor<64xf16>, tensor<64xf16>) -> (tensor<512x64xf16>, tensor<512x64xf16>)
  func.return %y : tensor<512x64xf16>
}

// -----

// BERT's FFN output: 128 rows, K = 3072. Each K slice's product goes to an fp32
// partial; the norm kernel adds them up with the bias and the residual.
// CHECK-LABEL: func.func @ffn_out(
// CHECK-NEXT: %[[P:.*]] = fused.matmul_partials %a, %w {splits = [[S:[0-9]]]} : (tensor<128x3072xf16>, tensor<3072x768xf16>) -> tensor<[[S]]x128x768xf32>
// CHECK-NEXT: %y, %s = fused.partials_add_rms_norm %[[P]], %r, %g bias %c {epsilon = 1.0e-06} : (tensor<[[S]]x128x768xf32>, tensor<128x768xf16>, tensor<768xf16>, tensor<768xf16>) -> (tensor<128x768xf16>, tensor<128x768xf16>)
// CHECK-NOT: fused.matmul_add_rms_norm
// DEBUG: fused ~{{[0-9]+}}, split ~{{[0-9]+}}, split-K 2 ~{{[0-9]+}}, split-K 4 ~{{[0-9]+}}, split-K 8 ~{{[0-9]+}} cycles: split-K
func.func @ffn_out(%a: tensor<128x3072xf16>, %w: tensor<3072x768xf16>, %r: tensor<128x768xf16>, %g: tensor<768xf16>, %c: tensor<768xf16>) -> tensor<128x768xf16> {
  %y, %s = fused.matmul_add_rms_norm %a, %w, %r, %g bias %c {epsilon = 1.0e-06} : (tensor<128x3072xf16>, tensor<3072x768xf16>, tensor<128x768xf16>, tensor<768xf16>, tensor<768xf16>) -> (tensor<128x768xf16>, tensor<128x768xf16>)
  func.return %y : tensor<128x768xf16>
}

// -----

// K = 40 cuts into no whole 16-element slices: no split-K form is estimated.
// CHECK-LABEL: func.func @short_k(
// DEBUG: fused ~{{[0-9]+}}, split ~{{[0-9]+}} cycles: {{fused|split}}{{$}}
func.func @short_k(%a: tensor<64x40xf16>, %w: tensor<40x300xf16>, %r: tensor<64x300xf16>, %g: tensor<300xf16>, %b: tensor<300xf16>) -> tensor<64x300xf16> {
  %y, %s = fused.matmul_add_layer_norm %a, %w, %r, %g, %b : (tensor<64x40xf16>, tensor<40x300xf16>, tensor<64x300xf16>, tensor<300xf16>, tensor<300xf16>) -> (tensor<64x300xf16>, tensor<64x300xf16>)
  func.return %y : tensor<64x300xf16>
}
