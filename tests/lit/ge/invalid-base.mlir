// The checks every ge op shares (GEOp.verify_ and IRDL): element types, static
// shapes, tensor operands, and attributes written in the generic form with an
// unknown name, the wrong kind or a value outside their choices.
// RUN: ge-opt %s --split-input-file --verify-diagnostics

func.func @main(%a: tensor<4xsi16>) {
  // expected-error @+1 {{'ge.relu' op unsupported element type si16}}
  %0 = ge.relu %a : (tensor<4xsi16>) -> tensor<4xsi16>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ge.cast' op unsupported element type f80}}
  %0 = ge.cast %a : (tensor<4xf32>) -> tensor<4xf80>
  func.return
}

// -----

func.func @main(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{'ge.relu' op dynamic dimensions are not supported, got tensor<?x4xf32>}}
  %0 = ge.relu %a : (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<?x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'ge.add' op dynamic dimensions are not supported, got tensor<?x4xf32>}}
  %0 = ge.add %a, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<*xf32>) {
  // expected-error @+1 {{'ge.relu' op operand 'input' at position 0 does not verify: tensor<*xf32> should be of base attribute tensor}}
  %0 = ge.relu %a : (tensor<*xf32>) -> tensor<*xf32>
  func.return
}

// -----

func.func @main(%a: memref<4xf32>) {
  // expected-error @+1 {{'ge.exp' op operand 'input' at position 0 does not verify: memref<4xf32> should be of base attribute tensor}}
  %0 = ge.exp %a : (memref<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ge.exp' op result 'result' at position 0 does not verify: memref<4xf32> should be of base attribute tensor}}
  %0 = ge.exp %a : (tensor<4xf32>) -> memref<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'ge.softmax' op result type tensor<8x4xf32> does not match the inferred type tensor<4x8xf32>}}
  %0 = ge.softmax %a : (tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'ge.softmax' op property 'dim' is not defined by the operation 'ge.softmax'}}
  %0 = "ge.softmax"(%a) <{dim = 1 : i64}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'ge.softmax' op 1.500000e+00 : f64 should be of base attribute integer}}
  %0 = "ge.softmax"(%a) <{axis = 1.5 : f64}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'ge.softmax' op attribute 'axis': expected an integer, got true}}
  %0 = "ge.softmax"(%a) <{axis = true}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'ge.matmul' op attribute 'transpose_a': expected a boolean, got 1 : i64}}
  %0 = "ge.matmul"(%a, %a) <{transpose_a = 1 : i64, transpose_b = false}> : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'ge.transpose' op [1 : i64, 0 : i64] should be of base attribute array}}
  %0 = "ge.transpose"(%a) <{perm = [1, 0]}> : (tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'ge.gelu' op attribute 'approximate' must be one of none, tanh, got 'fast'}}
  %0 = "ge.gelu"(%a) <{approximate = "fast"}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'ge.gelu' op 1 : i64 should be of base attribute string}}
  %0 = "ge.gelu"(%a) <{approximate = 1 : i64}> : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'ge.transpose' op property 'perm' expected in operation 'ge.transpose'}}
  %0 = "ge.transpose"(%a) : (tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'ge.matmul' op Expected 2 operands, but got 1}}
  %0 = "ge.matmul"(%a) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return
}
