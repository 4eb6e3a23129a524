// Every verifier error of the elementwise ops, one per chunk.
// RUN: ge-opt %s --split-input-file --verify-diagnostics

func.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf16>) {
  // expected-error @+1 {{'ge.add' op operand element types differ: f32 vs f16}}
  %0 = ge.add %a, %b : (tensor<2x3xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @main(%a: tensor<2x3xi32>, %b: tensor<4xi32>) {
  // expected-error @+1 {{'ge.sub' op operands are not broadcast-compatible: 2x3 vs 4}}
  %0 = ge.sub %a, %b : (tensor<2x3xi32>, tensor<4xi32>) -> tensor<2x3xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi1>) {
  // expected-error @+1 {{'ge.mul' op operand must be numeric, got i1}}
  %0 = ge.mul %a, %a : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ge.div' op result type tensor<4xf16> does not match the inferred type tensor<4xf32>}}
  %0 = ge.div %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf16>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>, %b: tensor<4x1xf32>) {
  // expected-error @+1 {{'ge.pow' op result type tensor<4xf32> does not match the inferred type tensor<4x4xf32>}}
  %0 = ge.pow %a, %b : (tensor<4xf32>, tensor<4x1xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi64>, %b: tensor<4xi32>) {
  // expected-error @+1 {{'ge.maximum' op operand element types differ: i64 vs i32}}
  %0 = ge.maximum %a, %b : (tensor<4xi64>, tensor<4xi32>) -> tensor<4xi64>
  func.return
}

// -----

func.func @main(%a: tensor<3xf16>, %b: tensor<2x2xf16>) {
  // expected-error @+1 {{'ge.minimum' op operands are not broadcast-compatible: 3 vs 2x2}}
  %0 = ge.minimum %a, %b : (tensor<3xf16>, tensor<2x2xf16>) -> tensor<2x3xf16>
  func.return
}

// -----

func.func @main(%a: tensor<4xi1>) {
  // expected-error @+1 {{'ge.neg' op operand must be numeric, got i1}}
  %0 = ge.neg %a : (tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.abs' op result type tensor<4xi64> does not match the inferred type tensor<4xi32>}}
  %0 = ge.abs %a : (tensor<4xi32>) -> tensor<4xi64>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.exp' op operand must have a float element type, got i32}}
  %0 = ge.exp %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi64>) {
  // expected-error @+1 {{'ge.log' op operand must have a float element type, got i64}}
  %0 = ge.log %a : (tensor<4xi64>) -> tensor<4xi64>
  func.return
}

// -----

func.func @main(%a: tensor<4xi1>) {
  // expected-error @+1 {{'ge.sqrt' op operand must have a float element type, got i1}}
  %0 = ge.sqrt %a : (tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

func.func @main(%a: tensor<4xi8>) {
  // expected-error @+1 {{'ge.rsqrt' op operand must have a float element type, got i8}}
  %0 = ge.rsqrt %a : (tensor<4xi8>) -> tensor<4xi8>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.reciprocal' op operand must have a float element type, got i32}}
  %0 = ge.reciprocal %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.tanh' op operand must have a float element type, got i32}}
  %0 = ge.tanh %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.sigmoid' op operand must have a float element type, got i32}}
  %0 = ge.sigmoid %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi1>) {
  // expected-error @+1 {{'ge.relu' op operand must be numeric, got i1}}
  %0 = ge.relu %a : (tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.silu' op operand must have a float element type, got i32}}
  %0 = ge.silu %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi64>) {
  // expected-error @+1 {{'ge.erf' op operand must have a float element type, got i64}}
  %0 = ge.erf %a : (tensor<4xi64>) -> tensor<4xi64>
  func.return
}

// -----

func.func @main(%a: tensor<4xi1>) {
  // expected-error @+1 {{'ge.identity' op result type tensor<4xf32> does not match the inferred type tensor<4xi1>}}
  %0 = ge.identity %a : (tensor<4xi1>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.leaky_relu' op operand must have a float element type, got i32}}
  %0 = ge.leaky_relu %a {alpha = 0.1} : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.gelu' op operand must have a float element type, got i32}}
  %0 = ge.gelu %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ge.gelu' op attribute 'approximate' must be one of none, tanh, got 'fast'}}
  %0 = ge.gelu %a {approximate = "fast"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ge.dropout' op ratio must be in [0, 1), got 1.0}}
  %0 = ge.dropout %a {ratio = 1.0} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ge.dropout' op ratio must be in [0, 1), got -0.5}}
  %0 = ge.dropout %a {ratio = -0.5} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi1>) {
  // expected-error @+1 {{'ge.dropout' op operand must be numeric, got i1}}
  %0 = ge.dropout %a : (tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

func.func @main(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'ge.cast' op result type tensor<3x2xi32> does not match the inferred type tensor<2x3xi32>}}
  %0 = ge.cast %a : (tensor<2x3xf32>) -> tensor<3x2xi32>
  func.return
}

// -----

func.func @main(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'ge.cast' op unsupported element type tf32}}
  %0 = ge.cast %a : (tensor<2x3xf32>) -> tensor<2x3xtf32>
  func.return
}

// -----

func.func @main(%c: tensor<4xi32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'ge.where' op condition must have element type i1, got i32}}
  %0 = ge.where %c, %a, %a : (tensor<4xi32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'ge.where' op value element types differ: f32 vs f16}}
  %0 = ge.where %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%c: tensor<2x1xi1>, %a: tensor<3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'ge.where' op operands are not broadcast-compatible: 2x1 vs 3 vs 4}}
  %0 = ge.where %c, %a, %b : (tensor<2x1xi1>, tensor<3xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>, %b: tensor<4xi32>) {
  // expected-error @+1 {{'ge.compare' op operand element types differ: f32 vs i32}}
  %0 = ge.compare %a, %b {predicate = "lt"} : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xi1>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ge.compare' op attribute 'predicate' must be one of eq, ne, lt, le, gt, ge, got 'less'}}
  %0 = ge.compare %a, %a {predicate = "less"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ge.compare' op result type tensor<4xf32> does not match the inferred type tensor<4xi1>}}
  %0 = ge.compare %a, %a {predicate = "eq"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi1>, %b: tensor<4xi32>) {
  // expected-error @+1 {{'ge.and' op operand must have element type i1, got i32}}
  %0 = ge.and %a, %b : (tensor<4xi1>, tensor<4xi32>) -> tensor<4xi1>
  func.return
}

// -----

func.func @main(%a: tensor<2xi1>, %b: tensor<3xi1>) {
  // expected-error @+1 {{'ge.or' op operands are not broadcast-compatible: 2 vs 3}}
  %0 = ge.or %a, %b : (tensor<2xi1>, tensor<3xi1>) -> tensor<3xi1>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ge.not' op operand must have element type i1, got f32}}
  %0 = ge.not %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi1>) {
  // expected-error @+1 {{'ge.mod' op operand must be numeric, got i1}}
  %0 = ge.mod %a, %a : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{'ge.bitwise_and' op operand must have an integer element type, got f32}}
  %0 = ge.bitwise_and %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xui8>, %b: tensor<4xui16>) {
  // expected-error @+1 {{'ge.bitwise_or' op}}
  %0 = ge.bitwise_or %a, %b : (tensor<4xui8>, tensor<4xui16>) -> tensor<4xui8>
  func.return
}

// -----

func.func @main(%a: tensor<4xf16>) {
  // expected-error @+1 {{'ge.bitwise_xor' op operand must have an integer element type, got f16}}
  %0 = ge.bitwise_xor %a, %a : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  func.return
}

// -----

func.func @main(%a: tensor<4xi1>) {
  // expected-error @+1 {{'ge.bitwise_not' op operand must have an integer element type, got i1}}
  %0 = ge.bitwise_not %a : (tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

func.func @main(%a: tensor<4xui8>) {
  // expected-error @+1 {{'ge.bit_shift' op attribute 'direction'}}
  %0 = ge.bit_shift %a, %a {direction = "up"} : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  func.return
}

// -----

func.func @main(%a: tensor<4xi1>) {
  // expected-error @+1 {{'ge.sign' op operand must be numeric, got i1}}
  %0 = ge.sign %a : (tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.floor' op operand must have a float element type, got i32}}
  %0 = ge.floor %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.ceil' op operand must have a float element type, got i32}}
  %0 = ge.ceil %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.round' op operand must have a float element type, got i32}}
  %0 = ge.round %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.sin' op operand must have a float element type, got i32}}
  %0 = ge.sin %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.cos' op operand must have a float element type, got i32}}
  %0 = ge.cos %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.tan' op operand must have a float element type, got i32}}
  %0 = ge.tan %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.asin' op operand must have a float element type, got i32}}
  %0 = ge.asin %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.acos' op operand must have a float element type, got i32}}
  %0 = ge.acos %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.atan' op operand must have a float element type, got i32}}
  %0 = ge.atan %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.sinh' op operand must have a float element type, got i32}}
  %0 = ge.sinh %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.cosh' op operand must have a float element type, got i32}}
  %0 = ge.cosh %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.asinh' op operand must have a float element type, got i32}}
  %0 = ge.asinh %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.acosh' op operand must have a float element type, got i32}}
  %0 = ge.acosh %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}

// -----

func.func @main(%a: tensor<4xi32>) {
  // expected-error @+1 {{'ge.atanh' op operand must have a float element type, got i32}}
  %0 = ge.atanh %a : (tensor<4xi32>) -> tensor<4xi32>
  func.return
}
