// Every verifier error of matmul, batch_matmul, conv2d, pooling, global_avg_pool
// and bias_add, one per chunk.
// RUN: ge-opt %s --split-input-file --verify-diagnostics

func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{'ge.matmul' op lhs must have rank 2, got tensor<2x3x4xf32>}}
  %0 = ge.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
  func.return
}

// -----

func.func @main(%a: tensor<3x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'ge.matmul' op rhs must have rank 2, got tensor<4xf32>}}
  %0 = ge.matmul %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @main(%a: tensor<3x4xf32>, %b: tensor<4x8xf16>) {
  // expected-error @+1 {{'ge.matmul' op operand element types differ: f32 vs f16}}
  %0 = ge.matmul %a, %b : (tensor<3x4xf32>, tensor<4x8xf16>) -> tensor<3x8xf32>
  func.return
}

// -----

func.func @main(%a: tensor<3x4xi1>, %b: tensor<4x8xi1>) {
  // expected-error @+1 {{'ge.matmul' op operand must be numeric, got i1}}
  %0 = ge.matmul %a, %b : (tensor<3x4xi1>, tensor<4x8xi1>) -> tensor<3x8xi1>
  func.return
}

// -----

func.func @main(%a: tensor<64x4xf16>, %b: tensor<32x8xf16>) {
  // expected-error @+1 {{'ge.matmul' op contraction dims differ: lhs K=64, rhs K=32}}
  %0 = ge.matmul %a, %b {transpose_a = true} : (tensor<64x4xf16>, tensor<32x8xf16>) -> tensor<4x8xf16>
  func.return
}

// -----

func.func @main(%a: tensor<4x16xf16>, %b: tensor<8x16xf16>) {
  // expected-error @+1 {{'ge.matmul' op result type tensor<4x16xf16> does not match the inferred type tensor<4x8xf16>}}
  %0 = ge.matmul %a, %b {transpose_b = true} : (tensor<4x16xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>, %b: tensor<4x4xf32>) {
  // expected-error @+1 {{'ge.batch_matmul' op operands must have rank >= 2, got tensor<4xf32> and tensor<4x4xf32>}}
  %0 = ge.batch_matmul %a, %b : (tensor<4xf32>, tensor<4x4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xi32>) {
  // expected-error @+1 {{'ge.batch_matmul' op operand element types differ: f32 vs i32}}
  %0 = ge.batch_matmul %a, %b : (tensor<2x3x4xf32>, tensor<2x4x5xi32>) -> tensor<2x3x5xf32>
  func.return
}

// -----

func.func @main(%a: tensor<2x3x4xi1>) {
  // expected-error @+1 {{'ge.batch_matmul' op operand must be numeric, got i1}}
  %0 = ge.batch_matmul %a, %a {transpose_b = true} : (tensor<2x3x4xi1>, tensor<2x3x4xi1>) -> tensor<2x3x3xi1>
  func.return
}

// -----

func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<2x5x6xf32>) {
  // expected-error @+1 {{'ge.batch_matmul' op contraction dims differ: lhs K=4, rhs K=5}}
  %0 = ge.batch_matmul %a, %b : (tensor<2x3x4xf32>, tensor<2x5x6xf32>) -> tensor<2x3x6xf32>
  func.return
}

// -----

func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<3x4x5xf32>) {
  // expected-error @+1 {{'ge.batch_matmul' op operands are not broadcast-compatible: 2 vs 3}}
  %0 = ge.batch_matmul %a, %b : (tensor<2x3x4xf32>, tensor<3x4x5xf32>) -> tensor<2x3x5xf32>
  func.return
}

// -----

func.func @main(%x: tensor<4x8x8xf16>, %w: tensor<8x4x3x3xf16>) {
  // expected-error @+1 {{'ge.conv2d' op input must have rank 4, got tensor<4x8x8xf16>}}
  %0 = ge.conv2d %x, %w : (tensor<4x8x8xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x6x6xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>, %w: tensor<8x4x3xf16>) {
  // expected-error @+1 {{'ge.conv2d' op weight must have rank 4, got tensor<8x4x3xf16>}}
  %0 = ge.conv2d %x, %w : (tensor<1x4x8x8xf16>, tensor<8x4x3xf16>) -> tensor<1x8x6x6xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>, %w: tensor<8x4x3x3xf32>) {
  // expected-error @+1 {{'ge.conv2d' op operand element types differ: f16 vs f32}}
  %0 = ge.conv2d %x, %w : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xi32>, %w: tensor<8x4x3x3xi32>) {
  // expected-error @+1 {{'ge.conv2d' op input must have a float element type, got i32}}
  %0 = ge.conv2d %x, %w : (tensor<1x4x8x8xi32>, tensor<8x4x3x3xi32>) -> tensor<1x8x6x6xi32>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>, %w: tensor<8x4x3x3xf16>) {
  // expected-error @+1 {{'ge.conv2d' op attribute 'strides' must have 2 values, got 3}}
  %0 = ge.conv2d %x, %w {strides = [1, 1, 1]} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x6x6xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>, %w: tensor<8x4x3x3xf16>) {
  // expected-error @+1 {{'ge.conv2d' op attribute 'strides' must be positive, got [0, 1]}}
  %0 = ge.conv2d %x, %w {strides = [0, 1]} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x6x6xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>, %w: tensor<8x4x3x3xf16>) {
  // expected-error @+1 {{'ge.conv2d' op attribute 'pads' must have 4 values, got 2}}
  %0 = ge.conv2d %x, %w {pads = [1, 1]} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x6x6xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>, %w: tensor<8x4x3x3xf16>) {
  // expected-error @+1 {{'ge.conv2d' op attribute 'pads' must be non-negative, got [1, -1, 1, 1]}}
  %0 = ge.conv2d %x, %w {pads = [1, -1, 1, 1]} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x6x6xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>, %w: tensor<8x4x3x3xf16>) {
  // expected-error @+1 {{'ge.conv2d' op attribute 'dilations' must have 2 values, got 1}}
  %0 = ge.conv2d %x, %w {dilations = [2]} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x6x6xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>, %w: tensor<8x4x3x3xf16>) {
  // expected-error @+1 {{'ge.conv2d' op attribute 'dilations' must be positive, got [1, 0]}}
  %0 = ge.conv2d %x, %w {dilations = [1, 0]} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x6x6xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>, %w: tensor<6x1x3x3xf16>) {
  // expected-error @+1 {{'ge.conv2d' op groups=3 must divide input channels 4 and output channels 6}}
  %0 = ge.conv2d %x, %w {groups = 3} : (tensor<1x4x8x8xf16>, tensor<6x1x3x3xf16>) -> tensor<1x8x6x6xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>, %w: tensor<8x4x3x3xf16>) {
  // expected-error @+1 {{'ge.conv2d' op groups=0 must divide input channels 4 and output channels 8}}
  %0 = ge.conv2d %x, %w {groups = 0} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x6x6xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>, %w: tensor<8x4x3x3xf16>) {
  // expected-error @+1 {{'ge.conv2d' op weight expects 8 input channels (4 x 2 groups), input has 4}}
  %0 = ge.conv2d %x, %w {groups = 2} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x6x6xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>, %w: tensor<8x4x3x3xf16>) {
  // expected-error @+1 {{'ge.conv2d' op window of 9 does not fit an input of 8 padded to 8}}
  %0 = ge.conv2d %x, %w {dilations = [4, 4]} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x6x6xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>, %w: tensor<8x4x3x3xf16>) {
  // expected-error @+1 {{'ge.conv2d' op result type tensor<1x8x6x6xf16> does not match the inferred type tensor<1x8x8x8xf16>}}
  %0 = ge.conv2d %x, %w {pads = [1, 1, 1, 1]} : (tensor<1x4x8x8xf16>, tensor<8x4x3x3xf16>) -> tensor<1x8x6x6xf16>
  func.return
}

// -----

func.func @main(%x: tensor<4x8x8xf16>) {
  // expected-error @+1 {{'ge.max_pool2d' op input must have rank 4, got tensor<4x8x8xf16>}}
  %0 = ge.max_pool2d %x {kernel = [2, 2]} : (tensor<4x8x8xf16>) -> tensor<1x4x4x4xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xi1>) {
  // expected-error @+1 {{'ge.max_pool2d' op input must be numeric, got i1}}
  %0 = ge.max_pool2d %x {kernel = [2, 2]} : (tensor<1x4x8x8xi1>) -> tensor<1x4x7x7xi1>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xi32>) {
  // expected-error @+1 {{'ge.avg_pool2d' op input must have a float element type, got i32}}
  %0 = ge.avg_pool2d %x {kernel = [2, 2]} : (tensor<1x4x8x8xi32>) -> tensor<1x4x7x7xi32>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>) {
  // expected-error @+1 {{'ge.max_pool2d' op attribute 'kernel' must have 2 values, got 1}}
  %0 = ge.max_pool2d %x {kernel = [2]} : (tensor<1x4x8x8xf16>) -> tensor<1x4x4x4xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>) {
  // expected-error @+1 {{'ge.max_pool2d' op attribute 'kernel' must be positive, got [0, 2]}}
  %0 = ge.max_pool2d %x {kernel = [0, 2]} : (tensor<1x4x8x8xf16>) -> tensor<1x4x4x4xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>) {
  // expected-error @+1 {{'ge.max_pool2d' op attribute 'strides' must be positive, got [2, -2]}}
  %0 = ge.max_pool2d %x {kernel = [2, 2], strides = [2, -2]} : (tensor<1x4x8x8xf16>) -> tensor<1x4x4x4xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>) {
  // expected-error @+1 {{'ge.max_pool2d' op pads [0, 2, 0, 0] must be smaller than the kernel [2, 2]}}
  %0 = ge.max_pool2d %x {kernel = [2, 2], pads = [0, 2, 0, 0]} : (tensor<1x4x8x8xf16>) -> tensor<1x4x4x4xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>) {
  // expected-error @+1 {{'ge.max_pool2d' op property 'kernel' expected in operation 'ge.max_pool2d'}}
  %0 = ge.max_pool2d %x : (tensor<1x4x8x8xf16>) -> tensor<1x4x8x8xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>) {
  // expected-error @+1 {{'ge.avg_pool2d' op window of 9 does not fit an input of 8 padded to 8}}
  %0 = ge.avg_pool2d %x {kernel = [9, 9], pads = [0, 0, 0, 0]} : (tensor<1x4x8x8xf16>) -> tensor<1x4x4x4xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>) {
  // expected-error @+1 {{'ge.avg_pool2d' op attribute 'pads' must have 4 values, got 3}}
  %0 = ge.avg_pool2d %x {kernel = [2, 2], pads = [0, 0, 0]} : (tensor<1x4x8x8xf16>) -> tensor<1x4x4x4xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>) {
  // expected-error @+1 {{'ge.avg_pool2d' op attribute 'strides' must have 2 values, got 1}}
  %0 = ge.avg_pool2d %x {kernel = [2, 2], strides = [2]} : (tensor<1x4x8x8xf16>) -> tensor<1x4x4x4xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>) {
  // expected-error @+1 {{'ge.avg_pool2d' op attribute 'pads' must be non-negative, got [-1, 0, 0, 0]}}
  %0 = ge.avg_pool2d %x {kernel = [3, 3], pads = [-1, 0, 0, 0]} : (tensor<1x4x8x8xf16>) -> tensor<1x4x4x4xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>) {
  // expected-error @+1 {{'ge.avg_pool2d' op result type tensor<1x4x4x4xf16> does not match the inferred type tensor<1x4x5x5xf16>}}
  %0 = ge.avg_pool2d %x {kernel = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], ceil_mode = true} : (tensor<1x4x8x8xf16>) -> tensor<1x4x4x4xf16>
  func.return
}

// -----

func.func @main(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'ge.global_avg_pool' op input must have rank >= 3 (N, C, spatial...), got tensor<4x8xf32>}}
  %0 = ge.global_avg_pool %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xi64>) {
  // expected-error @+1 {{'ge.global_avg_pool' op input must have a float element type, got i64}}
  %0 = ge.global_avg_pool %x : (tensor<1x4x8x8xi64>) -> tensor<1x4x1x1xi64>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>) {
  // expected-error @+1 {{'ge.global_avg_pool' op result type tensor<1x4xf16> does not match the inferred type tensor<1x4x1x1xf16>}}
  %0 = ge.global_avg_pool %x : (tensor<1x4x8x8xf16>) -> tensor<1x4xf16>
  func.return
}

// -----

func.func @main(%x: tensor<4x8xf32>, %b: tensor<1x8xf32>) {
  // expected-error @+1 {{'ge.bias_add' op bias must have rank 1, got tensor<1x8xf32>}}
  %0 = ge.bias_add %x, %b : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @main(%x: tensor<4x8xf32>, %b: tensor<8xf16>) {
  // expected-error @+1 {{'ge.bias_add' op operand element types differ: f32 vs f16}}
  %0 = ge.bias_add %x, %b : (tensor<4x8xf32>, tensor<8xf16>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @main(%x: tensor<4x8xi1>, %b: tensor<8xi1>) {
  // expected-error @+1 {{'ge.bias_add' op operand must be numeric, got i1}}
  %0 = ge.bias_add %x, %b : (tensor<4x8xi1>, tensor<8xi1>) -> tensor<4x8xi1>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'ge.bias_add' op axis 4 is out of range for rank 4}}
  %0 = ge.bias_add %x, %b {axis = 4} : (tensor<1x4x8x8xf16>, tensor<4xf16>) -> tensor<1x4x8x8xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x8x8xf16>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'ge.bias_add' op bias has 4 values, dim 3 of the input is 8}}
  %0 = ge.bias_add %x, %b : (tensor<1x4x8x8xf16>, tensor<4xf16>) -> tensor<1x4x8x8xf16>
  func.return
}
