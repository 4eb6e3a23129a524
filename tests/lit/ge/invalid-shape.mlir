// Every verifier error of transpose, reshape, expand, concat, split, slice,
// gather and pad, one per chunk.
// RUN: ge-opt %s --split-input-file --verify-diagnostics

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.transpose' op perm [0, 0, 1] is not a permutation of 3 dims}}
  %0 = ge.transpose %x {perm = [0, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.transpose' op perm [1, 0] is not a permutation of 3 dims}}
  %0 = ge.transpose %x {perm = [1, 0]} : (tensor<2x3x4xf32>) -> tensor<3x2xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.transpose' op property 'perm' expected in operation 'ge.transpose'}}
  %0 = ge.transpose %x : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.transpose' op result type tensor<2x3x4xf32> does not match the inferred type tensor<4x3x2xf32>}}
  %0 = ge.transpose %x {perm = [2, 1, 0]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.reshape' op cannot reshape 2x3x4 (24 elements) into 5x5 (25 elements)}}
  %0 = ge.reshape %x : (tensor<2x3x4xf32>) -> tensor<5x5xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.reshape' op result type tensor<24xf16> does not match the inferred type tensor<24xf32>}}
  %0 = ge.reshape %x : (tensor<2x3x4xf32>) -> tensor<24xf16>
  func.return
}

// -----

func.func @main(%x: tensor<3x1xf16>) {
  // expected-error @+1 {{'ge.expand' op cannot expand 3x1 to 1x1}}
  %0 = ge.expand %x : (tensor<3x1xf16>) -> tensor<1x1xf16>
  func.return
}

// -----

func.func @main(%x: tensor<3x2xf16>) {
  // expected-error @+1 {{'ge.expand' op operands are not broadcast-compatible: 3x2 vs 3x5}}
  %0 = ge.expand %x : (tensor<3x2xf16>) -> tensor<3x5xf16>
  func.return
}

// -----

func.func @main() {
  // expected-error @+1 {{'ge.concat' op needs at least one input}}
  %0 = ge.concat {axis = 0} : () -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>, %y: tensor<2x3x4xf16>) {
  // expected-error @+1 {{'ge.concat' op input element types differ: f32 vs f16}}
  %0 = ge.concat %x, %y {axis = 0} : (tensor<2x3x4xf32>, tensor<2x3x4xf16>) -> tensor<4x3x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>, %y: tensor<2x5x4xf32>) {
  // expected-error @+1 {{'ge.concat' op inputs differ outside axis 0: 2x3x4 vs 2x5x4}}
  %0 = ge.concat %x, %y {axis = 0} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<4x3x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>, %y: tensor<2x3xf32>) {
  // expected-error @+1 {{'ge.concat' op inputs differ outside axis 2: 2x3x4 vs 2x3}}
  %0 = ge.concat %x, %y {axis = -1} : (tensor<2x3x4xf32>, tensor<2x3xf32>) -> tensor<2x3x5xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.concat' op axis 3 is out of range for rank 3}}
  %0 = ge.concat %x, %x {axis = 3} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.concat' op property 'axis' expected in operation 'ge.concat'}}
  %0 = ge.concat %x, %x : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<4x3x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<6xi64>) {
  // expected-error @+1 {{'ge.split' op sizes [1, 2] do not add up to dim 0 of size 6}}
  %0:2 = ge.split %x {axis = 0, sizes = [1, 2]} : (tensor<6xi64>) -> (tensor<1xi64>, tensor<2xi64>)
  func.return
}

// -----

func.func @main(%x: tensor<6xi64>) {
  // expected-error @+1 {{'ge.split' op sizes [] do not add up to dim 0 of size 6}}
  %0 = ge.split %x {axis = 0, sizes = []} : (tensor<6xi64>) -> tensor<6xi64>
  func.return
}

// -----

func.func @main(%x: tensor<6xi64>) {
  // expected-error @+1 {{'ge.split' op attribute 'sizes' must be non-negative, got [-1, 7]}}
  %0:2 = ge.split %x {axis = 0, sizes = [-1, 7]} : (tensor<6xi64>) -> (tensor<0xi64>, tensor<7xi64>)
  func.return
}

// -----

func.func @main(%x: tensor<6xi64>) {
  // expected-error @+1 {{'ge.split' op axis 1 is out of range for rank 1}}
  %0:2 = ge.split %x {axis = 1, sizes = [3, 3]} : (tensor<6xi64>) -> (tensor<3xi64>, tensor<3xi64>)
  func.return
}

// -----

func.func @main(%x: tensor<6xi64>) {
  // expected-error @+1 {{'ge.split' op expected 3 results, got 2}}
  %0:2 = ge.split %x {axis = 0, sizes = [2, 2, 2]} : (tensor<6xi64>) -> (tensor<2xi64>, tensor<2xi64>)
  func.return
}

// -----

func.func @main(%x: tensor<6xi64>) {
  // expected-error @+1 {{'ge.split' op result #1 type tensor<2xi64> does not match the inferred type tensor<4xi64>}}
  %0:2 = ge.split %x {axis = 0, sizes = [2, 4]} : (tensor<6xi64>) -> (tensor<2xi64>, tensor<2xi64>)
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.slice' op attribute 'steps' must have 3 values, got 2}}
  %0 = ge.slice %x {starts = [0, 0, 0], ends = [2, 3, 4], steps = [1, 1]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.slice' op attribute 'starts' must have 3 values, got 2}}
  %0 = ge.slice %x {starts = [0, 0], ends = [2, 3, 4], steps = [1, 1, 1]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.slice' op attribute 'ends' must have 3 values, got 4}}
  %0 = ge.slice %x {starts = [0, 0, 0], ends = [2, 3, 4, 5], steps = [1, 1, 1]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.slice' op step of dim 1 is zero}}
  %0 = ge.slice %x {starts = [0, 0, 0], ends = [2, 3, 4], steps = [1, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.slice' op slice [0:5:1] of dim 1 (size 3) is not normalized}}
  %0 = ge.slice %x {starts = [0, 0, 0], ends = [2, 5, 4], steps = [1, 1, 1]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.slice' op slice [0:4:-1] of dim 2 (size 4) is not normalized}}
  %0 = ge.slice %x {starts = [0, 0, 0], ends = [2, 3, 4], steps = [1, 1, -1]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.slice' op result type tensor<2x3x4xf32> does not match the inferred type tensor<2x3x2xf32>}}
  %0 = ge.slice %x {starts = [0, 0, 0], ends = [2, 3, 4], steps = [1, 1, 2]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>, %i: tensor<2xf32>) {
  // expected-error @+1 {{'ge.gather' op indices must be integers, got f32}}
  %0 = ge.gather %x, %i : (tensor<2x3x4xf32>, tensor<2xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<f32>, %i: tensor<2xi32>) {
  // expected-error @+1 {{'ge.gather' op data must have rank >= 1}}
  %0 = ge.gather %x, %i : (tensor<f32>, tensor<2xi32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>, %i: tensor<2xi32>) {
  // expected-error @+1 {{'ge.gather' op axis -4 is out of range for rank 3}}
  %0 = ge.gather %x, %i {axis = -4} : (tensor<2x3x4xf32>, tensor<2xi32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>, %i: tensor<5xi64>) {
  // expected-error @+1 {{'ge.gather' op result type tensor<2x3x4xf32> does not match the inferred type tensor<2x5x4xf32>}}
  %0 = ge.gather %x, %i {axis = 1} : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.pad' op attribute 'pads' must have 6 values, got 2}}
  %0 = ge.pad %x {pads = [1, 1]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.pad' op attribute 'pads' must be non-negative, got [0, 0, -1, 0, 0, 1]}}
  %0 = ge.pad %x {pads = [0, 0, -1, 0, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.pad' op reflect padding must be smaller than the padded dim}}
  %0 = ge.pad %x {pads = [0, 3, 0, 0, 0, 0], mode = "reflect"} : (tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<0x4xf32>) {
  // expected-error @+1 {{'ge.pad' op edge padding of an empty dim}}
  %0 = ge.pad %x {pads = [0, 1, 0, 1], mode = "edge"} : (tensor<0x4xf32>) -> tensor<0x6xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.pad' op attribute 'mode' must be one of constant, reflect, edge, got 'wrap'}}
  %0 = ge.pad %x {pads = [0, 0, 0, 0, 0, 0], mode = "wrap"} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'ge.pad' op result type tensor<2x3x4xf32> does not match the inferred type tensor<4x3x4xf32>}}
  %0 = ge.pad %x {pads = [1, 0, 0, 1, 0, 0]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}
