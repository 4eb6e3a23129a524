// fused-setup-groups: a vector group whose one result another vector group reads
// as one vector for every row (a squeeze-and-excitation block's squeeze, read
// whole by every channel of the excitation) becomes that group's setup, computed
// once per core by its kernel, where the estimates make that faster than a kernel
// (a phase) of its own. Few channels (96 -> 4) join; 480 x 20 weights loaded by
// every core would cost more than the phase; a result read per row (the rows are
// the reader's own) cannot be a setup (the group template's answer).
// RUN: ge-opt %s --split-input-file --pass-pipeline 'fused-setup-groups{hw=ascend910}' | filecheck %s
// RUN: ge-opt %s --split-input-file --pass-pipeline 'fused-setup-groups{hw=ascend910 debug=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=DEBUG

// CHECK-LABEL: func.func @small(
// CHECK: %z = fused.group %mean, %w1, %w2, %y {setup = 6 : i64} : (tensor<1x1x96xf32>, tensor<4x96xf32>, tensor<96x4xf32>, tensor<1x96x8x8xf32>) -> tensor<1x96x8x8xf32> {
// CHECK-NEXT: ^bb0(%[[M:.*]]: tensor<1x1x96xf32>, %[[W1:.*]]: tensor<4x96xf32>, %[[W2:.*]]: tensor<96x4xf32>, %[[Y:.*]]: tensor<1x96x8x8xf32>):
// CHECK-NEXT: %p = ge.mul %[[M]], %[[W1]]
// CHECK-NEXT: ge.reduce_sum %p {axes = [2]}
// CHECK-NEXT: ge.reshape
// CHECK-NEXT: ge.sigmoid
// CHECK-NEXT: %x = ge.mul
// CHECK-NEXT: %s3 = ge.reshape %x : (tensor<1x4x1x1xf32>) -> tensor<1x1x4xf32>
// CHECK-NEXT: ge.mul %s3, %[[W2]]
// CHECK: fused.yield
// CHECK-NEXT: }
// CHECK-NEXT: func.return %z
// DEBUG: two kernels ~{{[0-9]+}}, setup in the reader's kernel ~{{[0-9]+}} cycles: setup in the reader's kernel
func.func @small(%y: tensor<1x96x8x8xf32>, %mean: tensor<1x1x96xf32>) -> tensor<1x96x8x8xf32> {
  %w1 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.3> : tensor<4x96xf32>
  %w2 = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.3> : tensor<96x4xf32>
  %s = fused.group %mean, %w1 : (tensor<1x1x96xf32>, tensor<4x96xf32>) -> tensor<1x4x1x1xf32> {
  ^bb0(%a: tensor<1x1x96xf32>, %q: tensor<4x96xf32>):
    %p = ge.mul %a, %q : (tensor<1x1x96xf32>, tensor<4x96xf32>) -> tensor<1x4x96xf32>
    %r = ge.reduce_sum %p {axes = [2]} : (tensor<1x4x96xf32>) -> tensor<1x4x1xf32>
    %r4 = ge.reshape %r : (tensor<1x4x1xf32>) -> tensor<1x4x1x1xf32>
    %g = ge.sigmoid %r4 : (tensor<1x4x1x1xf32>) -> tensor<1x4x1x1xf32>
    %x = ge.mul %r4, %g : (tensor<1x4x1x1xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x1xf32>
    fused.yield %x : tensor<1x4x1x1xf32>
  }
  %s3 = ge.reshape %s : (tensor<1x4x1x1xf32>) -> tensor<1x1x4xf32>
  %z = fused.group %s3, %w2, %y : (tensor<1x1x4xf32>, tensor<96x4xf32>, tensor<1x96x8x8xf32>) -> tensor<1x96x8x8xf32> {
  ^bb0(%a: tensor<1x1x4xf32>, %q: tensor<96x4xf32>, %v: tensor<1x96x8x8xf32>):
    %p = ge.mul %a, %q : (tensor<1x1x4xf32>, tensor<96x4xf32>) -> tensor<1x96x4xf32>
    %e = ge.reduce_sum %p {axes = [2]} : (tensor<1x96x4xf32>) -> tensor<1x96x1xf32>
    %g = ge.sigmoid %e : (tensor<1x96x1xf32>) -> tensor<1x96x1xf32>
    %g4 = ge.reshape %g : (tensor<1x96x1xf32>) -> tensor<1x96x1x1xf32>
    %m = ge.mul %g4, %v : (tensor<1x96x1x1xf32>, tensor<1x96x8x8xf32>) -> tensor<1x96x8x8xf32>
    fused.yield %m : tensor<1x96x8x8xf32>
  }
  func.return %z : tensor<1x96x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @large(
// CHECK: %s = fused.group %mean, %w1 :
// CHECK: %s3 = ge.reshape %s
// CHECK: %z = fused.group %s3, %w2, %y :
// CHECK-NOT: setup
// DEBUG: two kernels ~{{[0-9]+}}, setup in the reader's kernel ~{{[0-9]+}} cycles: two kernels
func.func @large(%y: tensor<1x480x4x4xf32>, %mean: tensor<1x1x480xf32>) -> tensor<1x480x4x4xf32> {
  %w1 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.3> : tensor<20x480xf32>
  %w2 = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.3> : tensor<480x20xf32>
  %s = fused.group %mean, %w1 : (tensor<1x1x480xf32>, tensor<20x480xf32>) -> tensor<1x20x1x1xf32> {
  ^bb0(%a: tensor<1x1x480xf32>, %q: tensor<20x480xf32>):
    %p = ge.mul %a, %q : (tensor<1x1x480xf32>, tensor<20x480xf32>) -> tensor<1x20x480xf32>
    %r = ge.reduce_sum %p {axes = [2]} : (tensor<1x20x480xf32>) -> tensor<1x20x1xf32>
    %r4 = ge.reshape %r : (tensor<1x20x1xf32>) -> tensor<1x20x1x1xf32>
    %g = ge.sigmoid %r4 : (tensor<1x20x1x1xf32>) -> tensor<1x20x1x1xf32>
    %x = ge.mul %r4, %g : (tensor<1x20x1x1xf32>, tensor<1x20x1x1xf32>) -> tensor<1x20x1x1xf32>
    fused.yield %x : tensor<1x20x1x1xf32>
  }
  %s3 = ge.reshape %s : (tensor<1x20x1x1xf32>) -> tensor<1x1x20xf32>
  %z = fused.group %s3, %w2, %y : (tensor<1x1x20xf32>, tensor<480x20xf32>, tensor<1x480x4x4xf32>) -> tensor<1x480x4x4xf32> {
  ^bb0(%a: tensor<1x1x20xf32>, %q: tensor<480x20xf32>, %v: tensor<1x480x4x4xf32>):
    %p = ge.mul %a, %q : (tensor<1x1x20xf32>, tensor<480x20xf32>) -> tensor<1x480x20xf32>
    %e = ge.reduce_sum %p {axes = [2]} : (tensor<1x480x20xf32>) -> tensor<1x480x1xf32>
    %g = ge.sigmoid %e : (tensor<1x480x1xf32>) -> tensor<1x480x1xf32>
    %g4 = ge.reshape %g : (tensor<1x480x1xf32>) -> tensor<1x480x1x1xf32>
    %m = ge.mul %g4, %v : (tensor<1x480x1x1xf32>, tensor<1x480x4x4xf32>) -> tensor<1x480x4x4xf32>
    fused.yield %m : tensor<1x480x4x4xf32>
  }
  func.return %z : tensor<1x480x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @per_row(
// CHECK: %e = fused.group %x :
// CHECK: %z = fused.group %e, %y :
// CHECK-NOT: setup
// DEBUG: two kernels ~{{[0-9]+}} cycles: two kernels
func.func @per_row(%y: tensor<1x32x16xf32>, %x: tensor<1x32x16xf32>) -> tensor<1x32x16xf32> {
  %e = fused.group %x : (tensor<1x32x16xf32>) -> tensor<1x32x1xf32> {
  ^bb0(%a: tensor<1x32x16xf32>):
    %r = ge.reduce_max %a {axes = [2]} : (tensor<1x32x16xf32>) -> tensor<1x32x1xf32>
    %g = ge.sigmoid %r : (tensor<1x32x1xf32>) -> tensor<1x32x1xf32>
    fused.yield %g : tensor<1x32x1xf32>
  }
  %z = fused.group %e, %y : (tensor<1x32x1xf32>, tensor<1x32x16xf32>) -> tensor<1x32x16xf32> {
  ^bb0(%a: tensor<1x32x1xf32>, %v: tensor<1x32x16xf32>):
    %m = ge.mul %a, %v : (tensor<1x32x1xf32>, tensor<1x32x16xf32>) -> tensor<1x32x16xf32>
    fused.yield %m : tensor<1x32x16xf32>
  }
  func.return %z : tensor<1x32x16xf32>
}
