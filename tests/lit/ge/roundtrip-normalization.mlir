// Round trip of batch_norm, layer_norm, rms_norm, softmax, log_softmax.
// Custom form -> generic form -> custom form.
// RUN: ge-opt %s --print-op-generic > %t.generic.mlir
// RUN: filecheck %s --check-prefix=GENERIC --input-file %t.generic.mlir
// RUN: ge-opt %t.generic.mlir | filecheck %s

// CHECK-LABEL: func.func @batch_norm(
// GENERIC-LABEL: "func.func"() <{sym_name = "batch_norm"
func.func @batch_norm(%x: tensor<2x4x3x3xf32>, %c: tensor<4xf32>, %y: tensor<8x6xf16>, %d: tensor<6xf16>) {
  // CHECK-NEXT: %bn = ge.batch_norm %x, %c, %c, %c, %c : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  // CHECK-NEXT: %bn_default = ge.batch_norm %x, %c, %c, %c, %c : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  // CHECK-NEXT: %bn_eps = ge.batch_norm %y, %d, %d, %d, %d {epsilon = 0.001} : (tensor<8x6xf16>, tensor<6xf16>, tensor<6xf16>, tensor<6xf16>, tensor<6xf16>) -> tensor<8x6xf16>
  // GENERIC:      %bn = "ge.batch_norm"(%x, %c, %c, %c, %c) <{epsilon = 1.000000e-05 : f64}> : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  // GENERIC-NEXT: %bn_default = "ge.batch_norm"(%x, %c, %c, %c, %c) <{epsilon = 1.000000e-05 : f64}> : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  // GENERIC-NEXT: %bn_eps = "ge.batch_norm"(%y, %d, %d, %d, %d) <{epsilon = 1.000000e-03 : f64}> : (tensor<8x6xf16>, tensor<6xf16>, tensor<6xf16>, tensor<6xf16>, tensor<6xf16>) -> tensor<8x6xf16>
  %bn = ge.batch_norm %x, %c, %c, %c, %c : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  %bn_default = ge.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-5} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  %bn_eps = ge.batch_norm %y, %d, %d, %d, %d {epsilon = 1.0e-3} : (tensor<8x6xf16>, tensor<6xf16>, tensor<6xf16>, tensor<6xf16>, tensor<6xf16>) -> tensor<8x6xf16>
  func.return
}

// CHECK-LABEL: func.func @trailing_norms(
// GENERIC-LABEL: "func.func"() <{sym_name = "trailing_norms"
func.func @trailing_norms(%s: tensor<2x8x16xf16>, %g: tensor<16xf16>, %g2: tensor<8x16xf16>, %f: tensor<4x32xf32>, %gf: tensor<32xf32>) {
  // CHECK-NEXT: %ln = ge.layer_norm %s, %g, %g : (tensor<2x8x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
  // CHECK-NEXT: %ln_default = ge.layer_norm %s, %g, %g : (tensor<2x8x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
  // CHECK-NEXT: %ln_axis = ge.layer_norm %s, %g2, %g2 {axis = 1, epsilon = 1.0e-12} : (tensor<2x8x16xf16>, tensor<8x16xf16>, tensor<8x16xf16>) -> tensor<2x8x16xf16>
  // CHECK-NEXT: %rms = ge.rms_norm %f, %gf : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  // CHECK-NEXT: %rms_eps = ge.rms_norm %s, %g {epsilon = 1.0e-06} : (tensor<2x8x16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
  // CHECK-NEXT: %rms_axis = ge.rms_norm %s, %g2 {axis = -2} : (tensor<2x8x16xf16>, tensor<8x16xf16>) -> tensor<2x8x16xf16>
  // GENERIC:      %ln = "ge.layer_norm"(%s, %g, %g) <{axis = -1 : i64, epsilon = 1.000000e-05 : f64}> : (tensor<2x8x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
  // GENERIC-NEXT: %ln_default = "ge.layer_norm"(%s, %g, %g) <{epsilon = 1.000000e-05 : f64, axis = -1 : i64}> : (tensor<2x8x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
  // GENERIC-NEXT: %ln_axis = "ge.layer_norm"(%s, %g2, %g2) <{axis = 1 : i64, epsilon = 1.000000e-12 : f64}> : (tensor<2x8x16xf16>, tensor<8x16xf16>, tensor<8x16xf16>) -> tensor<2x8x16xf16>
  // GENERIC-NEXT: %rms = "ge.rms_norm"(%f, %gf) <{axis = -1 : i64, epsilon = 1.000000e-05 : f64}> : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  // GENERIC-NEXT: %rms_eps = "ge.rms_norm"(%s, %g) <{epsilon = 1.000000e-06 : f64, axis = -1 : i64}> : (tensor<2x8x16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
  // GENERIC-NEXT: %rms_axis = "ge.rms_norm"(%s, %g2) <{axis = -2 : i64, epsilon = 1.000000e-05 : f64}> : (tensor<2x8x16xf16>, tensor<8x16xf16>) -> tensor<2x8x16xf16>
  %ln = ge.layer_norm %s, %g, %g : (tensor<2x8x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
  %ln_default = ge.layer_norm %s, %g, %g {epsilon = 0.00001, axis = -1} : (tensor<2x8x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
  %ln_axis = ge.layer_norm %s, %g2, %g2 {axis = 1, epsilon = 1.0e-12} : (tensor<2x8x16xf16>, tensor<8x16xf16>, tensor<8x16xf16>) -> tensor<2x8x16xf16>
  %rms = ge.rms_norm %f, %gf : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %rms_eps = ge.rms_norm %s, %g {epsilon = 1.0e-6} : (tensor<2x8x16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
  %rms_axis = ge.rms_norm %s, %g2 {axis = -2} : (tensor<2x8x16xf16>, tensor<8x16xf16>) -> tensor<2x8x16xf16>
  func.return
}

// CHECK-LABEL: func.func @softmaxes(
// GENERIC-LABEL: "func.func"() <{sym_name = "softmaxes"
func.func @softmaxes(%s: tensor<2x8x16xf16>, %f: tensor<4x10xf32>) {
  // CHECK-NEXT: %sm = ge.softmax %s : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  // CHECK-NEXT: %sm_default = ge.softmax %f : (tensor<4x10xf32>) -> tensor<4x10xf32>
  // CHECK-NEXT: %sm_axis = ge.softmax %s {axis = 1} : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  // CHECK-NEXT: %lsm = ge.log_softmax %f : (tensor<4x10xf32>) -> tensor<4x10xf32>
  // CHECK-NEXT: %lsm_axis = ge.log_softmax %s {axis = 0} : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  // GENERIC:      %sm = "ge.softmax"(%s) <{axis = -1 : i64}> : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  // GENERIC-NEXT: %sm_default = "ge.softmax"(%f) <{axis = -1 : i64}> : (tensor<4x10xf32>) -> tensor<4x10xf32>
  // GENERIC-NEXT: %sm_axis = "ge.softmax"(%s) <{axis = 1 : i64}> : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  // GENERIC-NEXT: %lsm = "ge.log_softmax"(%f) <{axis = -1 : i64}> : (tensor<4x10xf32>) -> tensor<4x10xf32>
  // GENERIC-NEXT: %lsm_axis = "ge.log_softmax"(%s) <{axis = 0 : i64}> : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  %sm = ge.softmax %s : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  %sm_default = ge.softmax %f {axis = -1} : (tensor<4x10xf32>) -> tensor<4x10xf32>
  %sm_axis = ge.softmax %s {axis = 1} : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  %lsm = ge.log_softmax %f : (tensor<4x10xf32>) -> tensor<4x10xf32>
  %lsm_axis = ge.log_softmax %s {axis = 0} : (tensor<2x8x16xf16>) -> tensor<2x8x16xf16>
  func.return
}
