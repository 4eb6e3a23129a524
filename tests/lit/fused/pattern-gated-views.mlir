// LLaMA's feed-forward as exported: each product viewed as (1, M, N) before the
// activation, SiLU written out as g * sigmoid(g), and the gated product viewed
// back to (M, N) for the down projection. gated-matmul sees through the views
// and the written-out activation: one fused.gated_matmul, no swiglu kernel and
// no view left between it and the next product; the same numbers.
// RUN: ge-opt %s -p 'ge-fuse{auto=false merge-matmuls=false}' | filecheck %s
// RUN: ge-sim %s --pipeline 'ge-compile{hw=tiny}' --check --report | filecheck %s --check-prefix=SIM

// CHECK-LABEL: func.func @main(
// CHECK:         %[[H:.*]] = fused.gated_matmul %x, %wg, %wu : (tensor<32x64xf16>, tensor<64x96xf16>, tensor<64x96xf16>) -> tensor<32x96xf16>
// CHECK-NEXT:    %{{.*}} = fused.matmul_bias_act %[[H]], %wd
// CHECK-NOT:     fused.swiglu
// CHECK-NOT:     ge.sigmoid
// SIM:      check: ok
func.func @main(%x: tensor<32x64xf16> {ge.name = "x"}, %r: tensor<32x64xf16> {ge.name = "r"}) -> (tensor<32x64xf16> {ge.name = "y"}) {
  %wg = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.1> : tensor<64x96xf16>
  %wu = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.1> : tensor<64x96xf16>
  %wd = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.1> : tensor<96x64xf16>
  %g = ge.matmul %x, %wg : (tensor<32x64xf16>, tensor<64x96xf16>) -> tensor<32x96xf16>
  %g3 = ge.reshape %g : (tensor<32x96xf16>) -> tensor<1x32x96xf16>
  %s = ge.sigmoid %g3 : (tensor<1x32x96xf16>) -> tensor<1x32x96xf16>
  %a = ge.mul %g3, %s : (tensor<1x32x96xf16>, tensor<1x32x96xf16>) -> tensor<1x32x96xf16>
  %u = ge.matmul %x, %wu : (tensor<32x64xf16>, tensor<64x96xf16>) -> tensor<32x96xf16>
  %u3 = ge.reshape %u : (tensor<32x96xf16>) -> tensor<1x32x96xf16>
  %h3 = ge.mul %a, %u3 : (tensor<1x32x96xf16>, tensor<1x32x96xf16>) -> tensor<1x32x96xf16>
  %h = ge.reshape %h3 : (tensor<1x32x96xf16>) -> tensor<32x96xf16>
  %d = ge.matmul %h, %wd : (tensor<32x96xf16>, tensor<96x64xf16>) -> tensor<32x64xf16>
  %y = ge.add %d, %r : (tensor<32x64xf16>, tensor<32x64xf16>) -> tensor<32x64xf16>
  func.return %y : tensor<32x64xf16>
}
