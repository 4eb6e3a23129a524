// Parse errors of the custom form: operand and result counts that do not match
// the type list or the op, unknown attribute names, attribute values of the wrong
// kind. Each is a located error on the op's line.
// RUN: ge-opt %s --split-input-file --verify-diagnostics

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{ge.add has 1 operands but its type lists 2}}
  %0 = ge.add %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{ge.relu takes 1 operand, got 2}}
  %0 = ge.relu %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{ge.where takes 3 operands, got 2}}
  %0 = ge.where %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{ge.relu takes 1 result, got 2}}
  %0:2 = ge.relu %a : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{function type expected}}
  %0 = ge.relu %a : tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{operand is used with type tensor<4xf16>, but has been previously used or defined with type tensor<4xf32>}}
  %0 = ge.relu %a : (tensor<4xf16>) -> tensor<4xf16>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{ge.softmax has no attribute 'dim' (it has: axis)}}
  %0 = ge.softmax %a {dim = 0} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{ge.conv2d has no attribute 'padding' (it has: strides, pads, dilations, groups)}}
  %0 = ge.conv2d %a, %a {padding = [1, 1]} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{ge.relu has no attribute 'alpha'}}
  %0 = ge.relu %a {alpha = 0.1} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{ge.softmax attribute 'axis': expected an integer, got 1.500000e+00 : f64}}
  %0 = ge.softmax %a {axis = 1.5} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{ge.softmax attribute 'axis': expected an integer, got unit}}
  %0 = ge.softmax %a {axis} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{ge.matmul attribute 'transpose_a': expected a boolean, got 1 : i64}}
  %0 = ge.matmul %a, %a {transpose_a = 1} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{ge.leaky_relu attribute 'alpha': expected a float, got true}}
  %0 = ge.leaky_relu %a {alpha = true} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{ge.transpose attribute 'perm': expected a list of integers, got [1.000000e+00 : f64, 0.000000e+00 : f64]}}
  %0 = ge.transpose %a {perm = [1.0, 0.0]} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{ge.gelu attribute 'approximate': expected a string, got 1 : i64}}
  %0 = ge.gelu %a {approximate = 1} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{Duplicate key 'axis' in dictionary attribute}}
  %0 = ge.softmax %a {axis = 0, axis = 0} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @main(%a: tensor<4xf32>) {
  // expected-error @+1 {{Operation ge.softmaxx is not registered}}
  %0 = ge.softmaxx %a : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}
