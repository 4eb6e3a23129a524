// Every verifier error of batch_norm, layer_norm, rms_norm, softmax and
// log_softmax, one per chunk.
// RUN: ge-opt %s --split-input-file --verify-diagnostics

func.func @main(%x: tensor<4xf32>, %c: tensor<4xf32>) {
  // expected-error @+1 {{'ge.batch_norm' op input must have rank >= 2 (N, C, ...), got tensor<4xf32>}}
  %0 = ge.batch_norm %x, %c, %c, %c, %c : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x4xi32>, %c: tensor<4xi32>) {
  // expected-error @+1 {{'ge.batch_norm' op input must have a float element type, got i32}}
  %0 = ge.batch_norm %x, %c, %c, %c, %c : (tensor<2x4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) -> tensor<2x4xi32>
  func.return
}

// -----

func.func @main(%x: tensor<2x4x3x3xf32>, %c: tensor<4xf32>, %h: tensor<4xf16>) {
  // expected-error @+1 {{'ge.batch_norm' op operand element types differ: f32 vs f32 vs f32 vs f16 vs f32}}
  %0 = ge.batch_norm %x, %c, %c, %h, %c : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x4x3x3xf32>, %c: tensor<4xf32>) {
  // expected-error @+1 {{'ge.batch_norm' op epsilon must be positive, got 0.0}}
  %0 = ge.batch_norm %x, %c, %c, %c, %c {epsilon = 0.0} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x4x3x3xf32>, %c: tensor<4xf32>, %m: tensor<3xf32>) {
  // expected-error @+1 {{'ge.batch_norm' op mean must have shape (4) to match the channels, got tensor<3xf32>}}
  %0 = ge.batch_norm %x, %c, %c, %m, %c : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x4x3x3xf32>, %c: tensor<4xf32>, %v: tensor<1x4xf32>) {
  // expected-error @+1 {{'ge.batch_norm' op variance must have shape (4) to match the channels, got tensor<1x4xf32>}}
  %0 = ge.batch_norm %x, %c, %c, %c, %v : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<1x4xf32>) -> tensor<2x4x3x3xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x4x3x3xf32>, %c: tensor<4xf32>, %s: tensor<2xf32>) {
  // expected-error @+1 {{'ge.batch_norm' op scale must have shape (4) to match the channels, got tensor<2xf32>}}
  %0 = ge.batch_norm %x, %s, %c, %c, %c : (tensor<2x4x3x3xf32>, tensor<2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x4x3x3xf32>, %c: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'ge.batch_norm' op bias must have shape (4) to match the channels, got tensor<8xf32>}}
  %0 = ge.batch_norm %x, %c, %b, %c, %c : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
  func.return
}

// -----

func.func @main(%x: tensor<2x8xi32>, %g: tensor<8xi32>) {
  // expected-error @+1 {{'ge.layer_norm' op input must have a float element type, got i32}}
  %0 = ge.layer_norm %x, %g, %g : (tensor<2x8xi32>, tensor<8xi32>, tensor<8xi32>) -> tensor<2x8xi32>
  func.return
}

// -----

func.func @main(%x: tensor<2x8x16xf16>, %g: tensor<16xf16>, %b: tensor<16xf32>) {
  // expected-error @+1 {{'ge.layer_norm' op operand element types differ: f16 vs f16 vs f32}}
  %0 = ge.layer_norm %x, %g, %b : (tensor<2x8x16xf16>, tensor<16xf16>, tensor<16xf32>) -> tensor<2x8x16xf16>
  func.return
}

// -----

func.func @main(%x: tensor<2x8x16xf16>, %g: tensor<16xf16>) {
  // expected-error @+1 {{'ge.layer_norm' op epsilon must be positive, got -1e-05}}
  %0 = ge.layer_norm %x, %g, %g {epsilon = -1.0e-05} : (tensor<2x8x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
  func.return
}

// -----

func.func @main(%x: tensor<2x8x16xf16>, %g: tensor<16xf16>) {
  // expected-error @+1 {{'ge.layer_norm' op axis 3 is out of range for rank 3}}
  %0 = ge.layer_norm %x, %g, %g {axis = 3} : (tensor<2x8x16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
  func.return
}

// -----

func.func @main(%x: tensor<2x8x16xf16>, %g: tensor<8xf16>, %b: tensor<16xf16>) {
  // expected-error @+1 {{'ge.layer_norm' op scale must have the normalized shape (16), got tensor<8xf16>}}
  %0 = ge.layer_norm %x, %g, %b : (tensor<2x8x16xf16>, tensor<8xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
  func.return
}

// -----

func.func @main(%x: tensor<2x8x16xf16>, %g: tensor<8x16xf16>, %b: tensor<16xf16>) {
  // expected-error @+1 {{'ge.layer_norm' op bias must have the normalized shape (8, 16), got tensor<16xf16>}}
  %0 = ge.layer_norm %x, %g, %b {axis = -2} : (tensor<2x8x16xf16>, tensor<8x16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
  func.return
}

// -----

func.func @main(%x: tensor<2x8xi64>, %g: tensor<8xi64>) {
  // expected-error @+1 {{'ge.rms_norm' op input must have a float element type, got i64}}
  %0 = ge.rms_norm %x, %g : (tensor<2x8xi64>, tensor<8xi64>) -> tensor<2x8xi64>
  func.return
}

// -----

func.func @main(%x: tensor<2x8x16xf16>, %g: tensor<16xf32>) {
  // expected-error @+1 {{'ge.rms_norm' op operand element types differ: f16 vs f32}}
  %0 = ge.rms_norm %x, %g : (tensor<2x8x16xf16>, tensor<16xf32>) -> tensor<2x8x16xf16>
  func.return
}

// -----

func.func @main(%x: tensor<2x8x16xf16>, %g: tensor<16xf16>) {
  // expected-error @+1 {{'ge.rms_norm' op epsilon must be positive, got 0.0}}
  %0 = ge.rms_norm %x, %g {epsilon = 0.0} : (tensor<2x8x16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
  func.return
}

// -----

func.func @main(%x: tensor<2x8x16xf16>, %g: tensor<16xf16>) {
  // expected-error @+1 {{'ge.rms_norm' op axis -4 is out of range for rank 3}}
  %0 = ge.rms_norm %x, %g {axis = -4} : (tensor<2x8x16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
  func.return
}

// -----

func.func @main(%x: tensor<2x8x16xf16>, %g: tensor<16xf16>) {
  // expected-error @+1 {{'ge.rms_norm' op scale must have the normalized shape (8, 16), got tensor<16xf16>}}
  %0 = ge.rms_norm %x, %g {axis = 1} : (tensor<2x8x16xf16>, tensor<16xf16>) -> tensor<2x8x16xf16>
  func.return
}

// -----

func.func @main(%x: tensor<4x8xi32>) {
  // expected-error @+1 {{'ge.softmax' op input must have a float element type, got i32}}
  %0 = ge.softmax %x : (tensor<4x8xi32>) -> tensor<4x8xi32>
  func.return
}

// -----

func.func @main(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'ge.softmax' op axis 2 is out of range for rank 2}}
  %0 = ge.softmax %x {axis = 2} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @main(%x: tensor<4x8xi1>) {
  // expected-error @+1 {{'ge.log_softmax' op input must have a float element type, got i1}}
  %0 = ge.log_softmax %x : (tensor<4x8xi1>) -> tensor<4x8xi1>
  func.return
}

// -----

func.func @main(%x: tensor<4x8xf16>) {
  // expected-error @+1 {{'ge.log_softmax' op axis -3 is out of range for rank 2}}
  %0 = ge.log_softmax %x {axis = -3} : (tensor<4x8xf16>) -> tensor<4x8xf16>
  func.return
}

// -----

func.func @main(%x: tensor<4x8xf16>) {
  // expected-error @+1 {{'ge.log_softmax' op result type tensor<4x8xf32> does not match the inferred type tensor<4x8xf16>}}
  %0 = ge.log_softmax %x : (tensor<4x8xf16>) -> tensor<4x8xf32>
  func.return
}
