// Every verifier error of ge.const (custom and generic form) and of its
// #ge.random value, one per chunk. In the custom form the dense value carries
// the result type, so the type mismatches can only be written generically.
// RUN: ge-opt %s --split-input-file --verify-diagnostics

func.func @main() {
  // expected-error @+1 {{'ge.const' op unsupported element type si8}}
  %0 = ge.const dense<1> : tensor<4xsi8>
  func.return
}

// -----

func.func @main() {
  // expected-error @+1 {{'ge.const' op unsupported element type f80}}
  %0 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 1.0> : tensor<4xf80>
  func.return
}

// -----

func.func @main() {
  // expected-error @+1 {{'ge.const' op value of type tensor<2xf32> does not match the result type tensor<4xf32>}}
  %0 = "ge.const"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<4xf32>
  func.return
}

// -----

func.func @main() {
  // expected-error @+1 {{'ge.const' op value of type tensor<2xf32> does not match the result type tensor<2xf16>}}
  %0 = "ge.const"() <{value = dense<[1.0, 2.0]> : tensor<2xf32>}> : () -> tensor<2xf16>
  func.return
}

// -----

func.func @main() {
  // expected-error @+1 {{'ge.const' op Unexpected attribute 1.000000e+00 : f32}}
  %0 = "ge.const"() <{value = 1.0 : f32}> : () -> tensor<2xf32>
  func.return
}

// -----

func.func @main() {
  // expected-error @+1 {{'ge.const' op property 'value' expected in operation 'ge.const'}}
  %0 = "ge.const"() : () -> tensor<2xf32>
  func.return
}

// -----

func.func @main() {
  // expected-error @+1 {{unknown distribution 'gamma' (expected normal or uniform)}}
  %0 = ge.const #ge.random<gamma, seed = 1, k = 2.0, theta = 1.0> : tensor<4xf32>
  func.return
}

// -----

func.func @main() {
  // expected-error @+1 {{Expected 'low'}}
  %0 = ge.const #ge.random<uniform, seed = 1, mean = 0.0, std = 1.0> : tensor<4xf32>
  func.return
}
