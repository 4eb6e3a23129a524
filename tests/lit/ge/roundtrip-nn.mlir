// Round trip of the cube and CNN ops: matmul, batch_matmul, conv2d, pooling,
// global_avg_pool, bias_add. Custom form -> generic form -> custom form.
// RUN: ge-opt %s --print-op-generic > %t.generic.mlir
// RUN: filecheck %s --check-prefix=GENERIC --input-file %t.generic.mlir
// RUN: ge-opt %t.generic.mlir | filecheck %s

// CHECK-LABEL: func.func @matmuls(
// GENERIC-LABEL: "func.func"() <{sym_name = "matmuls"
func.func @matmuls(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>, %bt: tensor<8x16xf32>, %at: tensor<16x4xf16>, %bh: tensor<16x8xf16>, %ai: tensor<4x16xi32>, %bi: tensor<16x8xi32>, %ba: tensor<2x1x4x16xf32>, %bb: tensor<3x16x8xf32>, %bc: tensor<5x8x4xf16>, %bd: tensor<5x6x8xf16>) {
  // CHECK-NEXT: %mm = ge.matmul %a, %b : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  // CHECK-NEXT: %mm_defaults = ge.matmul %a, %b : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  // CHECK-NEXT: %mm_tb = ge.matmul %a, %bt {transpose_b = true} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  // CHECK-NEXT: %mm_ta = ge.matmul %at, %bh {transpose_a = true} : (tensor<16x4xf16>, tensor<16x8xf16>) -> tensor<4x8xf16>
  // CHECK-NEXT: %mm_int = ge.matmul %ai, %bi : (tensor<4x16xi32>, tensor<16x8xi32>) -> tensor<4x8xi32>
  // CHECK-NEXT: %bmm = ge.batch_matmul %ba, %bb : (tensor<2x1x4x16xf32>, tensor<3x16x8xf32>) -> tensor<2x3x4x8xf32>
  // CHECK-NEXT: %bmm_t = ge.batch_matmul %bc, %bd {transpose_a = true, transpose_b = true} : (tensor<5x8x4xf16>, tensor<5x6x8xf16>) -> tensor<5x4x6xf16>
  // GENERIC:      %mm = "ge.matmul"(%a, %b) <{transpose_a = false, transpose_b = false}> : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  // GENERIC-NEXT: %mm_defaults = "ge.matmul"(%a, %b) <{transpose_a = false, transpose_b = false}> : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  // GENERIC-NEXT: %mm_tb = "ge.matmul"(%a, %bt) <{transpose_b = true, transpose_a = false}> : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  // GENERIC-NEXT: %mm_ta = "ge.matmul"(%at, %bh) <{transpose_a = true, transpose_b = false}> : (tensor<16x4xf16>, tensor<16x8xf16>) -> tensor<4x8xf16>
  // GENERIC-NEXT: %mm_int = "ge.matmul"(%ai, %bi) <{transpose_a = false, transpose_b = false}> : (tensor<4x16xi32>, tensor<16x8xi32>) -> tensor<4x8xi32>
  // GENERIC-NEXT: %bmm = "ge.batch_matmul"(%ba, %bb) <{transpose_a = false, transpose_b = false}> : (tensor<2x1x4x16xf32>, tensor<3x16x8xf32>) -> tensor<2x3x4x8xf32>
  // GENERIC-NEXT: %bmm_t = "ge.batch_matmul"(%bc, %bd) <{transpose_a = true, transpose_b = true}> : (tensor<5x8x4xf16>, tensor<5x6x8xf16>) -> tensor<5x4x6xf16>
  %mm = ge.matmul %a, %b : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %mm_defaults = ge.matmul %a, %b {transpose_a = false, transpose_b = false} : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %mm_tb = ge.matmul %a, %bt {transpose_b = true} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  %mm_ta = ge.matmul %at, %bh {transpose_a = true, transpose_b = false} : (tensor<16x4xf16>, tensor<16x8xf16>) -> tensor<4x8xf16>
  %mm_int = ge.matmul %ai, %bi : (tensor<4x16xi32>, tensor<16x8xi32>) -> tensor<4x8xi32>
  %bmm = ge.batch_matmul %ba, %bb : (tensor<2x1x4x16xf32>, tensor<3x16x8xf32>) -> tensor<2x3x4x8xf32>
  %bmm_t = ge.batch_matmul %bc, %bd {transpose_a = true, transpose_b = true} : (tensor<5x8x4xf16>, tensor<5x6x8xf16>) -> tensor<5x4x6xf16>
  func.return
}

// CHECK-LABEL: func.func @convolutions(
// GENERIC-LABEL: "func.func"() <{sym_name = "convolutions"
func.func @convolutions(%x: tensor<1x4x8x8xf16>, %w: tensor<8x4x3x3xf16>, %wg: tensor<8x2x3x3xf16>, %w1: tensor<6x4x1x1xf16>) {
  // CHECK-NEXT: %conv = ge.conv2d %x, %w {pads = [1, 1, 1, 1]} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x8x8xf16>
  // CHECK-NEXT: %conv_all = ge.conv2d %x, %wg {strides = [2, 2], pads = [1, 1, 1, 1], groups = 2} : (tensor<1x4x8x8xf16>, tensor<8x2x3x3xf16>) -> tensor<1x8x4x4xf16>
  // CHECK-NEXT: %conv_dilated = ge.conv2d %x, %w {pads = [0, 1, 2, 1], dilations = [2, 1]} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x6x8xf16>
  // CHECK-NEXT: %conv_defaults = ge.conv2d %x, %w1 : (tensor<1x4x8x8xf16>, tensor<6x4x1x1xf16>) -> tensor<1x6x8x8xf16>
  // GENERIC:      %conv = "ge.conv2d"(%x, %w) <{pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64}> : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x8x8xf16>
  // GENERIC-NEXT: %conv_all = "ge.conv2d"(%x, %wg) <{strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64}> : (tensor<1x4x8x8xf16>, tensor<8x2x3x3xf16>) -> tensor<1x8x4x4xf16>
  // GENERIC-NEXT: %conv_dilated = "ge.conv2d"(%x, %w) <{pads = array<i64: 0, 1, 2, 1>, dilations = array<i64: 2, 1>, strides = array<i64: 1, 1>, groups = 1 : i64}> : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x6x8xf16>
  // GENERIC-NEXT: %conv_defaults = "ge.conv2d"(%x, %w1) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64}> : (tensor<1x4x8x8xf16>, tensor<6x4x1x1xf16>) -> tensor<1x6x8x8xf16>
  %conv = ge.conv2d %x, %w {pads = [1, 1, 1, 1]} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x8x8xf16>
  %conv_all = ge.conv2d %x, %wg {strides = [2, 2], pads = [1, 1, 1, 1], dilations = [1, 1], groups = 2} : (tensor<1x4x8x8xf16>, tensor<8x2x3x3xf16>) -> tensor<1x8x4x4xf16>
  %conv_dilated = ge.conv2d %x, %w {pads = array<i64: 0, 1, 2, 1>, dilations = [2, 1]} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x6x8xf16>
  %conv_defaults = ge.conv2d %x, %w1 {strides = [1, 1], pads = [0, 0, 0, 0], dilations = [1, 1], groups = 1} : (tensor<1x4x8x8xf16>, tensor<6x4x1x1xf16>) -> tensor<1x6x8x8xf16>
  func.return
}

// CHECK-LABEL: func.func @pooling(
// GENERIC-LABEL: "func.func"() <{sym_name = "pooling"
func.func @pooling(%x: tensor<1x4x8x8xf16>, %v: tensor<2x3x5x4x6xf32>) {
  // CHECK-NEXT: %max = ge.max_pool2d %x {kernel = [2, 2], strides = [2, 2]} : (tensor<1x4x8x8xf16>) -> tensor<1x4x4x4xf16>
  // CHECK-NEXT: %max_ceil = ge.max_pool2d %x {kernel = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], ceil_mode = true} : (tensor<1x4x8x8xf16>) -> tensor<1x4x5x5xf16>
  // CHECK-NEXT: %max_defaults = ge.max_pool2d %x {kernel = [3, 3]} : (tensor<1x4x8x8xf16>) -> tensor<1x4x6x6xf16>
  // CHECK-NEXT: %avg = ge.avg_pool2d %x {kernel = [3, 3], pads = [1, 1, 1, 1], count_include_pad = true} : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  // CHECK-NEXT: %avg_defaults = ge.avg_pool2d %x {kernel = [2, 4]} : (tensor<1x4x8x8xf16>) -> tensor<1x4x7x5xf16>
  // CHECK-NEXT: %gap = ge.global_avg_pool %x : (tensor<1x4x8x8xf16>) -> tensor<1x4x1x1xf16>
  // CHECK-NEXT: %gap3d = ge.global_avg_pool %v : (tensor<2x3x5x4x6xf32>) -> tensor<2x3x1x1x1xf32>
  // GENERIC:      %max = "ge.max_pool2d"(%x) <{kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = false}> : (tensor<1x4x8x8xf16>) -> tensor<1x4x4x4xf16>
  // GENERIC-NEXT: %max_ceil = "ge.max_pool2d"(%x) <{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = true}> : (tensor<1x4x8x8xf16>) -> tensor<1x4x5x5xf16>
  // GENERIC-NEXT: %max_defaults = "ge.max_pool2d"(%x) <{kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = false}> : (tensor<1x4x8x8xf16>) -> tensor<1x4x6x6xf16>
  // GENERIC-NEXT: %avg = "ge.avg_pool2d"(%x) <{kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = true, strides = array<i64: 1, 1>, ceil_mode = false}> : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  // GENERIC-NEXT: %avg_defaults = "ge.avg_pool2d"(%x) <{kernel = array<i64: 2, 4>, count_include_pad = false, ceil_mode = false, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>}> : (tensor<1x4x8x8xf16>) -> tensor<1x4x7x5xf16>
  // GENERIC-NEXT: %gap = "ge.global_avg_pool"(%x) : (tensor<1x4x8x8xf16>) -> tensor<1x4x1x1xf16>
  // GENERIC-NEXT: %gap3d = "ge.global_avg_pool"(%v) : (tensor<2x3x5x4x6xf32>) -> tensor<2x3x1x1x1xf32>
  %max = ge.max_pool2d %x {kernel = [2, 2], strides = [2, 2]} : (tensor<1x4x8x8xf16>) -> tensor<1x4x4x4xf16>
  %max_ceil = ge.max_pool2d %x {kernel = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], ceil_mode = true} : (tensor<1x4x8x8xf16>) -> tensor<1x4x5x5xf16>
  %max_defaults = ge.max_pool2d %x {kernel = [3, 3], strides = [1, 1], pads = [0, 0, 0, 0], ceil_mode = false} : (tensor<1x4x8x8xf16>) -> tensor<1x4x6x6xf16>
  %avg = ge.avg_pool2d %x {kernel = [3, 3], pads = [1, 1, 1, 1], count_include_pad = true} : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  %avg_defaults = ge.avg_pool2d %x {kernel = [2, 4], count_include_pad = false, ceil_mode = false} : (tensor<1x4x8x8xf16>) -> tensor<1x4x7x5xf16>
  %gap = ge.global_avg_pool %x : (tensor<1x4x8x8xf16>) -> tensor<1x4x1x1xf16>
  %gap3d = ge.global_avg_pool %v : (tensor<2x3x5x4x6xf32>) -> tensor<2x3x1x1x1xf32>
  func.return
}

// CHECK-LABEL: func.func @bias(
// GENERIC-LABEL: "func.func"() <{sym_name = "bias"
func.func @bias(%x: tensor<1x4x8x8xf16>, %c: tensor<4xf16>, %m: tensor<4x8xi64>, %b: tensor<8xi64>) {
  // CHECK-NEXT: %last = ge.bias_add %m, %b : (tensor<4x8xi64>, tensor<8xi64>) -> tensor<4x8xi64>
  // CHECK-NEXT: %last_written = ge.bias_add %m, %b : (tensor<4x8xi64>, tensor<8xi64>) -> tensor<4x8xi64>
  // CHECK-NEXT: %channels = ge.bias_add %x, %c {axis = 1} : (tensor<1x4x8x8xf16>, tensor<4xf16>) -> tensor<1x4x8x8xf16>
  // GENERIC:      %last = "ge.bias_add"(%m, %b) <{axis = -1 : i64}> : (tensor<4x8xi64>, tensor<8xi64>) -> tensor<4x8xi64>
  // GENERIC-NEXT: %last_written = "ge.bias_add"(%m, %b) <{axis = -1 : i64}> : (tensor<4x8xi64>, tensor<8xi64>) -> tensor<4x8xi64>
  // GENERIC-NEXT: %channels = "ge.bias_add"(%x, %c) <{axis = 1 : i64}> : (tensor<1x4x8x8xf16>, tensor<4xf16>) -> tensor<1x4x8x8xf16>
  %last = ge.bias_add %m, %b : (tensor<4x8xi64>, tensor<8xi64>) -> tensor<4x8xi64>
  %last_written = ge.bias_add %m, %b {axis = -1} : (tensor<4x8xi64>, tensor<8xi64>) -> tensor<4x8xi64>
  %channels = ge.bias_add %x, %c {axis = 1} : (tensor<1x4x8x8xf16>, tensor<4xf16>) -> tensor<1x4x8x8xf16>
  func.return
}
