// Automatic fusion decisions on small graphs: what groups form, and why the
// others do not (the `debug` lines give each decision with its benefit).
// RUN: ge-opt %s -p ge-auto-fuse | filecheck %s
// RUN: ge-opt %s -p 'ge-auto-fuse{debug=true}' --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=DEBUG
// RUN: ge-sim %s --pipeline ge-auto-fuse --check | filecheck %s --check-prefix=SIM

// An elementwise chain is one group; the splat constant becomes an immediate
// inside it. Each merge saves a launch and the intermediate's round trip.
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %[[G:.*]] = fused.group %x, %b : (tensor<16x32xf16>, tensor<32xf16>) -> tensor<16x32xf16> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: tensor<16x32xf16>, %[[B:.*]]: tensor<32xf16>):
// CHECK-NEXT:      %[[TWO:.*]] = ge.const dense<2.000000e+00> : tensor<f16>
// CHECK-NEXT:      %[[A:.*]] = ge.add %[[X]], %[[B]]
// CHECK-NEXT:      %[[R:.*]] = ge.relu %[[A]]
// CHECK-NEXT:      %[[M:.*]] = ge.mul %[[R]], %[[TWO]]
// CHECK-NEXT:      fused.yield %[[M]] : tensor<16x32xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[G]]
// DEBUG: fuse vertical {ge.add@{{[0-9]+}}} + {ge.relu@{{[0-9]+}}}: benefit 3002 cycles = gm 2 (2048 B) + launch 3000 - tiling 0
// DEBUG: fuse vertical {ge.add@{{[0-9]+}}, ge.relu@{{[0-9]+}}} + {ge.mul@{{[0-9]+}}}: benefit 3002 cycles
// DEBUG: group 0: 3 ops: ge.add, ge.relu, ge.mul
// SIM: check: ok (identical)
func.func @main(%x: tensor<16x32xf16>, %b: tensor<32xf16>) -> tensor<16x32xf16> {
  %two = ge.const dense<2.0> : tensor<f16>
  %0 = ge.add %x, %b : (tensor<16x32xf16>, tensor<32xf16>) -> tensor<16x32xf16>
  %1 = ge.relu %0 : (tensor<16x32xf16>) -> tensor<16x32xf16>
  %2 = ge.mul %1, %two : (tensor<16x32xf16>, tensor<f16>) -> tensor<16x32xf16>
  func.return %2 : tensor<16x32xf16>
}

// Siblings reading the same input: one kernel reading it once, two results.
// CHECK-LABEL: func.func @horizontal(
// CHECK-NEXT:    %{{.*}}, %{{.*}} = fused.group %x : (tensor<16x32xf16>) -> (tensor<16x32xf16>, tensor<16x32xf16>)
// DEBUG: fuse horizontal {ge.exp@{{[0-9]+}}} + {ge.neg@{{[0-9]+}}}: benefit 3001 cycles = gm 1 (1024 B)
func.func @horizontal(%x: tensor<16x32xf16>) -> (tensor<16x32xf16>, tensor<16x32xf16>) {
  %0 = ge.exp %x : (tensor<16x32xf16>) -> tensor<16x32xf16>
  %1 = ge.neg %x : (tensor<16x32xf16>) -> tensor<16x32xf16>
  func.return %0, %1 : tensor<16x32xf16>, tensor<16x32xf16>
}

// Reduce legality: a row reduction (softmax on the last axis) fuses with its
// elementwise producer; a transpose moving the rows and a reduction over the
// leading axis do not join it.
// CHECK-LABEL: func.func @rows(
// CHECK-NEXT:    %[[E:.*]], %[[S:.*]] = fused.group %x
// CHECK:           ge.exp
// CHECK-NEXT:      ge.softmax
// CHECK:         ge.transpose %[[S]]
// CHECK-NEXT:    ge.reduce_sum %[[E]]
// DEBUG: reject vertical {ge.exp@{{[0-9]+}}} + {ge.reduce_sum@{{[0-9]+}}}: 'ge.reduce_sum' reduces non-trailing axes [0]
// DEBUG: reject vertical {ge.softmax@{{[0-9]+}}} + {ge.transpose@{{[0-9]+}}}: 'ge.transpose' does not keep the rows [4, 8] a reduction needs whole
func.func @rows(%x: tensor<4x8x16xf32>) -> (tensor<8x4x16xf32>, tensor<1x8x16xf32>) {
  %0 = ge.exp %x : (tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %1 = ge.softmax %0 : (tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %2 = ge.transpose %1 {perm = [1, 0, 2]} : (tensor<4x8x16xf32>) -> tensor<8x4x16xf32>
  %3 = ge.reduce_sum %0 {axes = [0]} : (tensor<4x8x16xf32>) -> tensor<1x8x16xf32>
  func.return %2, %3 : tensor<8x4x16xf32>, tensor<1x8x16xf32>
}

// A cube op takes an elementwise epilogue (even one no named pattern knows,
// such as sigmoid), but no prologue and no reduction.
// CHECK-LABEL: func.func @cube_epilogue(
// CHECK-NEXT:    %[[R:.*]] = ge.relu %x
// CHECK-NEXT:    %[[G:.*]] = fused.group %[[R]], %w, %b
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      ge.matmul
// CHECK-NEXT:      ge.add
// CHECK-NEXT:      ge.sigmoid
// CHECK-NEXT:      fused.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    ge.reduce_sum %[[G]]
// DEBUG: reject vertical {ge.relu@{{[0-9]+}}} + {ge.matmul@{{[0-9]+}}}: 'ge.matmul' reads its operands from global memory (no prologue)
// DEBUG: reject vertical {ge.matmul@{{[0-9]+}}, ge.add@{{[0-9]+}}, ge.sigmoid@{{[0-9]+}}} + {ge.reduce_sum@{{[0-9]+}}}: 'ge.reduce_sum' is not elementwise: a cube op takes an elementwise epilogue only
func.func @cube_epilogue(%x: tensor<16x32xf16>, %w: tensor<32x32xf16>, %b: tensor<32xf16>) -> tensor<16x1xf16> {
  %0 = ge.relu %x : (tensor<16x32xf16>) -> tensor<16x32xf16>
  %1 = ge.matmul %0, %w : (tensor<16x32xf16>, tensor<32x32xf16>) -> tensor<16x32xf16>
  %2 = ge.add %1, %b : (tensor<16x32xf16>, tensor<32xf16>) -> tensor<16x32xf16>
  %3 = ge.sigmoid %2 : (tensor<16x32xf16>) -> tensor<16x32xf16>
  %4 = ge.reduce_sum %3 {axes = [1]} : (tensor<16x32xf16>) -> tensor<16x1xf16>
  func.return %4 : tensor<16x1xf16>
}

// relu -> pool -> add(relu, pool): relu and add would be one kernel both
// before and after the pool (opaque): a cycle.
// CHECK-LABEL: func.func @cycle(
// CHECK-NEXT:    ge.relu
// CHECK-NEXT:    ge.max_pool2d
// CHECK-NEXT:    ge.add
// DEBUG: reject vertical {ge.relu@{{[0-9]+}}} + {ge.max_pool2d@{{[0-9]+}}}: 'ge.max_pool2d' is opaque to fusion
// DEBUG: reject vertical {ge.relu@{{[0-9]+}}} + {ge.add@{{[0-9]+}}}: it would form a cycle
func.func @cycle(%x: tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16> {
  %0 = ge.relu %x : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  %1 = ge.max_pool2d %0 {kernel = [1, 1]} : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  %2 = ge.add %0, %1 : (tensor<1x4x8x8xf16>, tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  func.return %2 : tensor<1x4x8x8xf16>
}

// No group kernel runs an expand, so the exp is not fused into it (the lowering's
// own predicate says so); reading x once for both expands would also make both
// 128 KiB tensors live at once (the peak-memory check: test_fusion_auto.py).
// CHECK-LABEL: func.func @peak_memory(
// CHECK-NEXT:    ge.exp
// CHECK-NEXT:    ge.expand
// DEBUG: reject vertical {ge.exp@{{[0-9]+}}} + {ge.expand@{{[0-9]+}}}: no kernel for the group: {{.*}}'ge.expand' inside the group
func.func @peak_memory(%x: tensor<1x4x32x32xf32>) -> (tensor<1x4x32x32xf32>, tensor<1x4x32x32xf32>) {
  %a = ge.exp %x : (tensor<1x4x32x32xf32>) -> tensor<1x4x32x32xf32>
  %e = ge.expand %a : (tensor<1x4x32x32xf32>) -> tensor<8x4x32x32xf32>
  %m = ge.reduce_mean %e {axes = [0]} : (tensor<8x4x32x32xf32>) -> tensor<1x4x32x32xf32>
  %b = ge.expand %x : (tensor<1x4x32x32xf32>) -> tensor<8x4x32x32xf32>
  %n = ge.reduce_max %b {axes = [0]} : (tensor<8x4x32x32xf32>) -> tensor<1x4x32x32xf32>
  func.return %m, %n : tensor<1x4x32x32xf32>, tensor<1x4x32x32xf32>
}

// Named fused ops are opaque: nothing joins them.
// CHECK-LABEL: func.func @opaque(
// CHECK-NEXT:    fused.swiglu
// CHECK-NEXT:    ge.relu
// DEBUG: reject vertical {fused.swiglu@{{[0-9]+}}} + {ge.relu@{{[0-9]+}}}: 'fused.swiglu' is opaque to fusion
// DEBUG: ge-auto-fuse: {{.*}}rejected: cycle{{.*}}rejected: peak memory
func.func @opaque(%g: tensor<4x8xf16>, %u: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %0 = fused.swiglu %g, %u : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  %1 = ge.relu %0 : (tensor<4x8xf16>) -> tensor<4x8xf16>
  func.return %1 : tensor<4x8xf16>
}
