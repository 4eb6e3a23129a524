// An `npu.form` that would be dropped is a located error at ge-to-npu: on an op
// no pass chooses the form of, or on one whose form pass has not run.
// RUN: not ge-opt %s -p ge-to-npu 2>&1 | filecheck %s

// CHECK: form-errors.mlir:[[# @LINE + 2]]:3: error: 'fused.softmax' op 'npu.form' = "split-K 2" pins a form, but no pass chooses the form of 'fused.softmax' (fused-split-matmul-norm: fused.matmul_add_layer_norm, fused.matmul_add_rms_norm; fused-split-k: fused.matmul_bias_act)
func.func @main(%x: tensor<16x32xf16>) -> tensor<16x32xf16> {
  %y = fused.softmax %x {axis = -1 : i64, npu.form = "split-K 2"} : (tensor<16x32xf16>) -> tensor<16x32xf16>
  func.return %y : tensor<16x32xf16>
}
