// Masks on the vector unit: a causal mask from run-time positions (vcmp with a
// broadcast column), a key mask from Mod and a comparison, And of the two (vmin
// on i1), Where into the scores (vsel), Softmax; and Cos, Floor, Sign on a float
// tensor. Compiled for both presets and eagerly, simulated, checked against the
// reference interpreter.
// RUN: ge-opt %s -p 'ge-compile{hw=tiny}' | filecheck %s
// RUN: ge-sim %s --pipeline 'ge-compile{hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=SIM
// RUN: ge-sim %s --pipeline ge-compile --check --seed 3 | filecheck %s --check-prefix=SIM
// RUN: ge-sim %s --pipeline 'ge-compile{fuse=false reuse=false streams=1 hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=SIM

// One merged launch (one stream is the fastest plan): the mask and softmax phases, then the math;
// the key mask (mod, compare) is the mask group's setup (fused-setup-groups), no phase of its own.
// CHECK-LABEL: npu.kernel @k0_keep_to_k2_phase
// CHECK:       npu.vcmp {{.*}} {rows = 8, cols = 16, strides = [0, 1, 16], col_strides = [1, 0, 1], cmp = "le"}
// CHECK:       npu.vmin {{.*}} {rows = 8, cols = 16, strides = [16, 0, 16]}
// CHECK:       npu.vsel
// CHECK:       npu.vcos
// CHECK:       npu.vcast {{.*}} {rows = 16, cols = 16, round = "floor"}
// SIM:         check: ok
func.func @main(%s: tensor<2x16x16xf16> {ge.name = "scores"}, %q: tensor<16x1xi32> {ge.name = "q_pos"}, %k: tensor<16xi32> {ge.name = "k_pos"}, %x: tensor<2x16x16xf16> {ge.name = "x"}) -> (tensor<2x16x16xf16> {ge.name = "y"}, tensor<2x16x16xf16> {ge.name = "phase"}) {
  %causal = ge.compare %k, %q {predicate = "le"} : (tensor<16xi32>, tensor<16x1xi32>) -> tensor<16x16xi1>
  %seven = ge.const dense<7> : tensor<16xi32>
  %odd = ge.mod %k, %seven : (tensor<16xi32>, tensor<16xi32>) -> tensor<16xi32>
  %zero = ge.const dense<0> : tensor<16xi32>
  %keep_k = ge.compare %odd, %zero {predicate = "ne"} : (tensor<16xi32>, tensor<16xi32>) -> tensor<16xi1>
  %keep = ge.and %causal, %keep_k : (tensor<16x16xi1>, tensor<16xi1>) -> tensor<16x16xi1>
  %minus = ge.const dense<-1.0e4> : tensor<f16>
  %masked = ge.where %keep, %s, %minus : (tensor<16x16xi1>, tensor<2x16x16xf16>, tensor<f16>) -> tensor<2x16x16xf16>
  %y = ge.softmax %masked {axis = -1} : (tensor<2x16x16xf16>) -> tensor<2x16x16xf16>
  %c = ge.cos %x : (tensor<2x16x16xf16>) -> tensor<2x16x16xf16>
  %f = ge.floor %c : (tensor<2x16x16xf16>) -> tensor<2x16x16xf16>
  %phase = ge.sign %f : (tensor<2x16x16xf16>) -> tensor<2x16x16xf16>
  func.return %y, %phase : tensor<2x16x16xf16>, tensor<2x16x16xf16>
}
