// Named fusions of vector ops: add-layer-norm, add-rms-norm, softmax, swiglu,
// positive and negative (another user, a cycle).
// RUN: ge-opt %s -p ge-pattern-fuse | filecheck %s
// RUN: ge-opt %s -p 'ge-pattern-fuse{debug=true}' --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=DEBUG

// The residual add's sum stays available as the second result (it feeds the
// next residual); its user is moved after the fused op.
// CHECK-LABEL: func.func @add_layer_norm(
// CHECK-NEXT:    %[[Y:.*]], %[[S:.*]] = fused.add_layer_norm %x, %r, %g, %b {epsilon = 1.0e-12} : (tensor<4x8xf16>, tensor<4x8xf16>, tensor<8xf16>, tensor<8xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>)
// CHECK-NEXT:    %[[T:.*]] = ge.relu %[[S]]
// CHECK-NEXT:    func.return %[[Y]], %[[T]]
func.func @add_layer_norm(%x: tensor<4x8xf16>, %r: tensor<4x8xf16>, %g: tensor<8xf16>, %b: tensor<8xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>) {
  %s = ge.add %x, %r : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  %t = ge.relu %s : (tensor<4x8xf16>) -> tensor<4x8xf16>
  %y = ge.layer_norm %s, %g, %b {epsilon = 1.0e-12} : (tensor<4x8xf16>, tensor<8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
  func.return %y, %t : tensor<4x8xf16>, tensor<4x8xf16>
}

// CHECK-LABEL: func.func @add_rms_norm(
// CHECK-NEXT:    %[[Y:.*]], %{{.*}} = fused.add_rms_norm %x, %r, %g {axis = 1, epsilon = 1.0e-06}
// CHECK-NEXT:    func.return %[[Y]]
func.func @add_rms_norm(%x: tensor<2x4x8xf32>, %r: tensor<2x4x8xf32>, %g: tensor<4x8xf32>) -> tensor<2x4x8xf32> {
  %s = ge.add %x, %r : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y = ge.rms_norm %s, %g {axis = 1, epsilon = 1.0e-6} : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  func.return %y : tensor<2x4x8xf32>
}

// gamma computed from the sum: fusing would need the sum before and after the
// fused op, so the add and the norm stay.
// CHECK-LABEL: func.func @add_norm_cycle(
// CHECK-NEXT:    ge.add
// CHECK-NEXT:    ge.reduce_mean
// CHECK-NEXT:    ge.layer_norm
// DEBUG: add-layer-norm: not fused at {{.*}}pattern-vector.mlir:38:3: an operand depends on the matched 'ge.add': fusing would form a cycle
func.func @add_norm_cycle(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %s = ge.add %x, %r : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %g = ge.reduce_mean %s {axes = [0], keepdims = false} : (tensor<4x8xf32>) -> tensor<8xf32>
  %y = ge.layer_norm %s, %g, %b : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// Scale, an additive mask (either operand order) and a dropout around softmax.
// CHECK-LABEL: func.func @softmax(
// CHECK-NEXT:    %[[P:.*]] = fused.softmax %x mask %m {scale = 0.5, dropout = 0.1} : (tensor<2x4x8xf16>, tensor<4x8xf16>) -> tensor<2x4x8xf16>
// CHECK-NEXT:    func.return %[[P]]
func.func @softmax(%x: tensor<2x4x8xf16>, %m: tensor<4x8xf16>) -> tensor<2x4x8xf16> {
  %half = ge.const dense<0.5> : tensor<f16>
  %0 = ge.mul %half, %x : (tensor<f16>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  %1 = ge.add %m, %0 : (tensor<4x8xf16>, tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  %2 = ge.softmax %1 : (tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  %3 = ge.dropout %2 {ratio = 0.1} : (tensor<2x4x8xf16>) -> tensor<2x4x8xf16>
  func.return %3 : tensor<2x4x8xf16>
}

// A boolean mask with a splat fill, softmax on axis 1.
// CHECK-LABEL: func.func @softmax_where(
// CHECK-NEXT:    %[[P:.*]] = fused.softmax %x mask %m {axis = 1, mask_value = -1000.0}
// CHECK-NEXT:    func.return %[[P]]
func.func @softmax_where(%x: tensor<4x8xf32>, %m: tensor<4x8xi1>) -> tensor<4x8xf32> {
  %fill = ge.const dense<-1000.0> : tensor<f32>
  %0 = ge.where %m, %x, %fill : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = ge.softmax %0 {axis = 1} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}

// A lone softmax has nothing to fuse; a scaled value used elsewhere stays.
// CHECK-LABEL: func.func @softmax_not_fused(
// CHECK:         ge.mul
// CHECK-NEXT:    ge.softmax
// CHECK-NEXT:    ge.softmax
// CHECK-NOT:     fused.softmax
func.func @softmax_not_fused(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %two = ge.const dense<2.0> : tensor<f32>
  %0 = ge.mul %x, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = ge.softmax %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = ge.softmax %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %1, %0, %2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @swiglu(
// CHECK-NEXT:    %[[Y:.*]] = fused.swiglu %g, %u : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK-NEXT:    func.return %[[Y]]
func.func @swiglu(%g: tensor<4x8xf16>, %u: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %a = ge.silu %g : (tensor<4x8xf16>) -> tensor<4x8xf16>
  %y = ge.mul %u, %a : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  func.return %y : tensor<4x8xf16>
}

// The silu's value is returned too: the match is rejected.
// CHECK-LABEL: func.func @swiglu_other_user(
// CHECK-NEXT:    ge.silu
// CHECK-NEXT:    ge.mul
// DEBUG: swiglu: not fused at {{.*}}: the intermediate value of 'ge.silu' has another user ('func.return')
// DEBUG: ge-pattern-fuse: {{.*}}1 add-layer-norm rejected
func.func @swiglu_other_user(%g: tensor<4x8xf16>, %u: tensor<4x8xf16>) -> (tensor<4x8xf16>, tensor<4x8xf16>) {
  %a = ge.silu %g : (tensor<4x8xf16>) -> tensor<4x8xf16>
  %y = ge.mul %a, %u : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  func.return %y, %a : tensor<4x8xf16>, tensor<4x8xf16>
}

// SiLU spelled x * sigmoid(x), then the gate: sigmoid-gate makes the swiglu.
// CHECK-LABEL: func.func @sigmoid_gate(
// CHECK-NEXT:    %[[Y:.*]] = fused.swiglu %g, %u : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @sigmoid_gate(%g: tensor<4x8xf32>, %u: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = ge.sigmoid %g : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = ge.mul %s, %g : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = ge.mul %u, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// sigmoid of another value is no SiLU.
// CHECK-LABEL: func.func @not_a_sigmoid_gate(
// CHECK-NEXT:    ge.sigmoid
// CHECK-NEXT:    ge.mul
// CHECK-NEXT:    ge.mul
func.func @not_a_sigmoid_gate(%g: tensor<4x8xf32>, %h: tensor<4x8xf32>, %u: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = ge.sigmoid %h : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = ge.mul %g, %s : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = ge.mul %a, %u : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
