// Round trip of the data movement ops: transpose, reshape, expand, concat
// (variadic), split (multi-result), slice, gather, pad.
// Custom form -> generic form -> custom form.
// RUN: ge-opt %s --print-op-generic > %t.generic.mlir
// RUN: filecheck %s --check-prefix=GENERIC --input-file %t.generic.mlir
// RUN: ge-opt %t.generic.mlir | filecheck %s

// CHECK-LABEL: func.func @layout(
// GENERIC-LABEL: "func.func"() <{sym_name = "layout"
func.func @layout(%x: tensor<2x3x4xf32>, %e: tensor<3x1xf16>, %b: tensor<4xi1>) {
  // CHECK-NEXT: %t = ge.transpose %x {perm = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  // CHECK-NEXT: %r = ge.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  // CHECK-NEXT: %r_scalar = ge.reshape %e : (tensor<3x1xf16>) -> tensor<3xf16>
  // CHECK-NEXT: %r_bool = ge.reshape %b : (tensor<4xi1>) -> tensor<2x2xi1>
  // CHECK-NEXT: %ex = ge.expand %e : (tensor<3x1xf16>) -> tensor<2x3x5xf16>
  // GENERIC:      %t = "ge.transpose"(%x) <{perm = array<i64: 2, 0, 1>}> : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  // GENERIC-NEXT: %r = "ge.reshape"(%x) : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  // GENERIC-NEXT: %r_scalar = "ge.reshape"(%e) : (tensor<3x1xf16>) -> tensor<3xf16>
  // GENERIC-NEXT: %r_bool = "ge.reshape"(%b) : (tensor<4xi1>) -> tensor<2x2xi1>
  // GENERIC-NEXT: %ex = "ge.expand"(%e) : (tensor<3x1xf16>) -> tensor<2x3x5xf16>
  %t = ge.transpose %x {perm = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %r = ge.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %r_scalar = ge.reshape %e : (tensor<3x1xf16>) -> tensor<3xf16>
  %r_bool = ge.reshape %b : (tensor<4xi1>) -> tensor<2x2xi1>
  %ex = ge.expand %e : (tensor<3x1xf16>) -> tensor<2x3x5xf16>
  func.return
}

// ge.concat takes any number of inputs; ge.split gives one result per size and
// prints them as a result list (`%p:3` reads back the same).
// CHECK-LABEL: func.func @concat_split(
// GENERIC-LABEL: "func.func"() <{sym_name = "concat_split"
func.func @concat_split(%x: tensor<2x3x4xf32>, %y: tensor<2x5x4xf32>, %i: tensor<6xi64>) -> (tensor<1xi64>, tensor<3xi64>) {
  // CHECK-NEXT: %c = ge.concat %x, %y, %x {axis = 1} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x3x4xf32>) -> tensor<2x11x4xf32>
  // CHECK-NEXT: %c_one = ge.concat %i {axis = 0} : (tensor<6xi64>) -> tensor<6xi64>
  // CHECK-NEXT: %c_neg = ge.concat %x, %x {axis = -1} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
  // CHECK-NEXT: %p, %p_1, %p_2 = ge.split %i {axis = 0, sizes = [1, 2, 3]} : (tensor<6xi64>) -> (tensor<1xi64>, tensor<2xi64>, tensor<3xi64>)
  // CHECK-NEXT: %q, %q_1 = ge.split %x {axis = -1, sizes = [3, 1]} : (tensor<2x3x4xf32>) -> (tensor<2x3x3xf32>, tensor<2x3x1xf32>)
  // CHECK-NEXT: %whole = ge.split %x {axis = 1, sizes = [3]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: func.return %p, %p_2 : tensor<1xi64>, tensor<3xi64>
  // GENERIC:      %c = "ge.concat"(%x, %y, %x) <{axis = 1 : i64}> : (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x3x4xf32>) -> tensor<2x11x4xf32>
  // GENERIC-NEXT: %c_one = "ge.concat"(%i) <{axis = 0 : i64}> : (tensor<6xi64>) -> tensor<6xi64>
  // GENERIC-NEXT: %c_neg = "ge.concat"(%x, %x) <{axis = -1 : i64}> : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
  // GENERIC-NEXT: %p, %p_1, %p_2 = "ge.split"(%i) <{axis = 0 : i64, sizes = array<i64: 1, 2, 3>}> : (tensor<6xi64>) -> (tensor<1xi64>, tensor<2xi64>, tensor<3xi64>)
  // GENERIC-NEXT: %q, %q_1 = "ge.split"(%x) <{axis = -1 : i64, sizes = array<i64: 3, 1>}> : (tensor<2x3x4xf32>) -> (tensor<2x3x3xf32>, tensor<2x3x1xf32>)
  // GENERIC-NEXT: %whole = "ge.split"(%x) <{axis = 1 : i64, sizes = array<i64: 3>}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // GENERIC-NEXT: "func.return"(%p, %p_2) : (tensor<1xi64>, tensor<3xi64>) -> ()
  %c = ge.concat %x, %y, %x {axis = 1} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x3x4xf32>) -> tensor<2x11x4xf32>
  %c_one = ge.concat %i {axis = 0} : (tensor<6xi64>) -> tensor<6xi64>
  %c_neg = ge.concat %x, %x {axis = -1} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
  %p:3 = ge.split %i {axis = 0, sizes = [1, 2, 3]} : (tensor<6xi64>) -> (tensor<1xi64>, tensor<2xi64>, tensor<3xi64>)
  %q:2 = ge.split %x {axis = -1, sizes = [3, 1]} : (tensor<2x3x4xf32>) -> (tensor<2x3x3xf32>, tensor<2x3x1xf32>)
  %whole = ge.split %x {axis = 1, sizes = [3]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %p#0, %p#2 : tensor<1xi64>, tensor<3xi64>
}

// CHECK-LABEL: func.func @slice_gather(
// GENERIC-LABEL: "func.func"() <{sym_name = "slice_gather"
func.func @slice_gather(%x: tensor<2x3x4xf32>, %idx: tensor<2x2xi32>, %one: tensor<i64>, %w: tensor<10x8xf16>) {
  // CHECK-NEXT: %sl = ge.slice %x {starts = [0, 1, 0], ends = [2, 3, 4], steps = [1, 1, 2]} : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  // CHECK-NEXT: %sl_rev = ge.slice %x {starts = [1, 2, 3], ends = [-1, -1, 0], steps = [-1, -2, -1]} : (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>
  // CHECK-NEXT: %g = ge.gather %x, %idx : (tensor<2x3x4xf32>, tensor<2x2xi32>) -> tensor<2x2x3x4xf32>
  // CHECK-NEXT: %g_default = ge.gather %w, %idx : (tensor<10x8xf16>, tensor<2x2xi32>) -> tensor<2x2x8xf16>
  // CHECK-NEXT: %g_axis = ge.gather %x, %idx {axis = 1} : (tensor<2x3x4xf32>, tensor<2x2xi32>) -> tensor<2x2x2x4xf32>
  // CHECK-NEXT: %g_scalar = ge.gather %x, %one {axis = -1} : (tensor<2x3x4xf32>, tensor<i64>) -> tensor<2x3xf32>
  // GENERIC:      %sl = "ge.slice"(%x) <{starts = array<i64: 0, 1, 0>, ends = array<i64: 2, 3, 4>, steps = array<i64: 1, 1, 2>}> : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  // GENERIC-NEXT: %sl_rev = "ge.slice"(%x) <{starts = array<i64: 1, 2, 3>, ends = array<i64: -1, -1, 0>, steps = array<i64: -1, -2, -1>}> : (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>
  // GENERIC-NEXT: %g = "ge.gather"(%x, %idx) <{axis = 0 : i64}> : (tensor<2x3x4xf32>, tensor<2x2xi32>) -> tensor<2x2x3x4xf32>
  // GENERIC-NEXT: %g_default = "ge.gather"(%w, %idx) <{axis = 0 : i64}> : (tensor<10x8xf16>, tensor<2x2xi32>) -> tensor<2x2x8xf16>
  // GENERIC-NEXT: %g_axis = "ge.gather"(%x, %idx) <{axis = 1 : i64}> : (tensor<2x3x4xf32>, tensor<2x2xi32>) -> tensor<2x2x2x4xf32>
  // GENERIC-NEXT: %g_scalar = "ge.gather"(%x, %one) <{axis = -1 : i64}> : (tensor<2x3x4xf32>, tensor<i64>) -> tensor<2x3xf32>
  %sl = ge.slice %x {starts = [0, 1, 0], ends = [2, 3, 4], steps = [1, 1, 2]} : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  %sl_rev = ge.slice %x {starts = [1, 2, 3], ends = [-1, -1, 0], steps = [-1, -2, -1]} : (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>
  %g = ge.gather %x, %idx : (tensor<2x3x4xf32>, tensor<2x2xi32>) -> tensor<2x2x3x4xf32>
  %g_default = ge.gather %w, %idx {axis = 0} : (tensor<10x8xf16>, tensor<2x2xi32>) -> tensor<2x2x8xf16>
  %g_axis = ge.gather %x, %idx {axis = 1} : (tensor<2x3x4xf32>, tensor<2x2xi32>) -> tensor<2x2x2x4xf32>
  %g_scalar = ge.gather %x, %one {axis = -1} : (tensor<2x3x4xf32>, tensor<i64>) -> tensor<2x3xf32>
  func.return
}

// CHECK-LABEL: func.func @pads(
// GENERIC-LABEL: "func.func"() <{sym_name = "pads"
func.func @pads(%x: tensor<2x3x4xf32>, %i: tensor<3xi32>) {
  // CHECK-NEXT: %pd = ge.pad %x {pads = [0, 1, 2, 0, 1, 2]} : (tensor<2x3x4xf32>) -> tensor<2x5x8xf32>
  // CHECK-NEXT: %pd_written = ge.pad %x {pads = [0, 1, 2, 0, 1, 2]} : (tensor<2x3x4xf32>) -> tensor<2x5x8xf32>
  // CHECK-NEXT: %pd_value = ge.pad %x {pads = [0, 1, 2, 0, 1, 2], value = -1.5} : (tensor<2x3x4xf32>) -> tensor<2x5x8xf32>
  // CHECK-NEXT: %pd_reflect = ge.pad %x {pads = [0, 1, 2, 0, 1, 2], mode = "reflect"} : (tensor<2x3x4xf32>) -> tensor<2x5x8xf32>
  // CHECK-NEXT: %pd_edge = ge.pad %i {pads = [2, 1], mode = "edge"} : (tensor<3xi32>) -> tensor<6xi32>
  // GENERIC:      %pd = "ge.pad"(%x) <{pads = array<i64: 0, 1, 2, 0, 1, 2>, mode = "constant", value = 0.000000e+00 : f64}> : (tensor<2x3x4xf32>) -> tensor<2x5x8xf32>
  // GENERIC-NEXT: %pd_written = "ge.pad"(%x) <{pads = array<i64: 0, 1, 2, 0, 1, 2>, mode = "constant", value = 0.000000e+00 : f64}> : (tensor<2x3x4xf32>) -> tensor<2x5x8xf32>
  // GENERIC-NEXT: %pd_value = "ge.pad"(%x) <{pads = array<i64: 0, 1, 2, 0, 1, 2>, value = -1.500000e+00 : f64, mode = "constant"}> : (tensor<2x3x4xf32>) -> tensor<2x5x8xf32>
  // GENERIC-NEXT: %pd_reflect = "ge.pad"(%x) <{pads = array<i64: 0, 1, 2, 0, 1, 2>, mode = "reflect", value = 0.000000e+00 : f64}> : (tensor<2x3x4xf32>) -> tensor<2x5x8xf32>
  // GENERIC-NEXT: %pd_edge = "ge.pad"(%i) <{pads = array<i64: 2, 1>, mode = "edge", value = 0.000000e+00 : f64}> : (tensor<3xi32>) -> tensor<6xi32>
  %pd = ge.pad %x {pads = [0, 1, 2, 0, 1, 2]} : (tensor<2x3x4xf32>) -> tensor<2x5x8xf32>
  %pd_written = ge.pad %x {pads = [0, 1, 2, 0, 1, 2], mode = "constant", value = 0.0} : (tensor<2x3x4xf32>) -> tensor<2x5x8xf32>
  %pd_value = ge.pad %x {pads = [0, 1, 2, 0, 1, 2], value = -1.5} : (tensor<2x3x4xf32>) -> tensor<2x5x8xf32>
  %pd_reflect = ge.pad %x {pads = [0, 1, 2, 0, 1, 2], mode = "reflect"} : (tensor<2x3x4xf32>) -> tensor<2x5x8xf32>
  %pd_edge = ge.pad %i {pads = [2, 1], mode = "edge", value = 0.0} : (tensor<3xi32>) -> tensor<6xi32>
  func.return
}
