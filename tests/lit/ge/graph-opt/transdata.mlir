// ge.transdata's canonicalization patterns (run by ge-simplify, ge-layout and
// canonicalize): inverse pairs cancel, identical conversions merge, conversions of
// constants re-type them.
// RUN: ge-opt %s -p ge-simplify | filecheck %s
// RUN: ge-opt %s -p canonicalize | filecheck %s

// CHECK-LABEL: func.func @inverse_pair
// CHECK-NEXT:    func.return %x
func.func @inverse_pair(%x: tensor<20x33xf16>) -> tensor<20x33xf16> {
  %a = ge.transdata %x {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<20x33xf16>) -> tensor<20x33xf16, #ge.format<FRACTAL_NZ>>
  %b = ge.transdata %a {src_format = "FRACTAL_NZ", dst_format = "ND"} : (tensor<20x33xf16, #ge.format<FRACTAL_NZ>>) -> tensor<20x33xf16>
  func.return %b : tensor<20x33xf16>
}

// CHECK-LABEL: func.func @inverse_pair_from_a_physical_format
// CHECK-NEXT:    func.return %x
func.func @inverse_pair_from_a_physical_format(%x: tensor<1x3x4x4xf16, #ge.format<NC1HWC0>>) -> tensor<1x3x4x4xf16, #ge.format<NC1HWC0>> {
  %a = ge.transdata %x {src_format = "NC1HWC0", dst_format = "ND"} : (tensor<1x3x4x4xf16, #ge.format<NC1HWC0>>) -> tensor<1x3x4x4xf16>
  %b = ge.transdata %a {src_format = "ND", dst_format = "NC1HWC0"} : (tensor<1x3x4x4xf16>) -> tensor<1x3x4x4xf16, #ge.format<NC1HWC0>>
  func.return %b : tensor<1x3x4x4xf16, #ge.format<NC1HWC0>>
}

// Two conversions in a row that do not undo each other stay.
// CHECK-LABEL: func.func @not_an_inverse_pair
// CHECK-NEXT:    %a = ge.transdata %x {src_format = "ND", dst_format = "NC1HWC0"}
// CHECK-NEXT:    %b = ge.transdata %a {src_format = "NC1HWC0", dst_format = "FRACTAL_Z"}
func.func @not_an_inverse_pair(%x: tensor<16x3x4x4xf16>) -> tensor<16x3x4x4xf16, #ge.format<FRACTAL_Z>> {
  %a = ge.transdata %x {src_format = "ND", dst_format = "NC1HWC0"} : (tensor<16x3x4x4xf16>) -> tensor<16x3x4x4xf16, #ge.format<NC1HWC0>>
  %b = ge.transdata %a {src_format = "NC1HWC0", dst_format = "FRACTAL_Z"} : (tensor<16x3x4x4xf16, #ge.format<NC1HWC0>>) -> tensor<16x3x4x4xf16, #ge.format<FRACTAL_Z>>
  func.return %b : tensor<16x3x4x4xf16, #ge.format<FRACTAL_Z>>
}

// CHECK-LABEL: func.func @identity_conversion
// CHECK-NEXT:    func.return %x
func.func @identity_conversion(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %a = ge.transdata %x {src_format = "ND", dst_format = "ND"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %a : tensor<4x4xf32>
}

// CHECK-LABEL: func.func @same_conversion_twice
// CHECK-NEXT:    %a = ge.transdata %x
// CHECK-NEXT:    %r = ge.relu %a
// CHECK-NEXT:    %s = ge.sigmoid %a
// CHECK-NEXT:    func.return %r, %s
func.func @same_conversion_twice(%x: tensor<4x4xf32>) -> (tensor<4x4xf32, #ge.format<FRACTAL_NZ>>, tensor<4x4xf32, #ge.format<FRACTAL_NZ>>) {
  %a = ge.transdata %x {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<4x4xf32>) -> tensor<4x4xf32, #ge.format<FRACTAL_NZ>>
  %r = ge.relu %a : (tensor<4x4xf32, #ge.format<FRACTAL_NZ>>) -> tensor<4x4xf32, #ge.format<FRACTAL_NZ>>
  %b = ge.transdata %x {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<4x4xf32>) -> tensor<4x4xf32, #ge.format<FRACTAL_NZ>>
  %s = ge.sigmoid %b : (tensor<4x4xf32, #ge.format<FRACTAL_NZ>>) -> tensor<4x4xf32, #ge.format<FRACTAL_NZ>>
  func.return %r, %s : tensor<4x4xf32, #ge.format<FRACTAL_NZ>>, tensor<4x4xf32, #ge.format<FRACTAL_NZ>>
}

// Conversions of one value into different formats are both needed.
// CHECK-LABEL: func.func @different_conversions
// CHECK-NEXT:    ge.transdata %x {src_format = "ND", dst_format = "NC1HWC0"}
// CHECK-NEXT:    ge.transdata %x {src_format = "ND", dst_format = "FRACTAL_Z"}
func.func @different_conversions(%x: tensor<16x3x4x4xf16>) -> (tensor<16x3x4x4xf16, #ge.format<NC1HWC0>>, tensor<16x3x4x4xf16, #ge.format<FRACTAL_Z>>) {
  %a = ge.transdata %x {src_format = "ND", dst_format = "NC1HWC0"} : (tensor<16x3x4x4xf16>) -> tensor<16x3x4x4xf16, #ge.format<NC1HWC0>>
  %b = ge.transdata %x {src_format = "ND", dst_format = "FRACTAL_Z"} : (tensor<16x3x4x4xf16>) -> tensor<16x3x4x4xf16, #ge.format<FRACTAL_Z>>
  func.return %a, %b : tensor<16x3x4x4xf16, #ge.format<NC1HWC0>>, tensor<16x3x4x4xf16, #ge.format<FRACTAL_Z>>
}

// A weight is re-typed, never materialised: it stays #ge.random.
// CHECK-LABEL: func.func @constant_weight
// CHECK-NEXT:    %a = ge.const #ge.random<normal, seed = 9, mean = 0.0, std = 0.02> : tensor<768x768xf16, #ge.format<FRACTAL_NZ>>
// CHECK-NEXT:    %b = ge.const dense<{{\[\[\[\[}}1.000000e+00]], {{\[\[}}2.000000e+00]]]]> : tensor<1x2x1x1xf32, #ge.format<NC1HWC0>>
// CHECK-NEXT:    func.return %a, %b
func.func @constant_weight() -> (tensor<768x768xf16, #ge.format<FRACTAL_NZ>>, tensor<1x2x1x1xf32, #ge.format<NC1HWC0>>) {
  %w = ge.const #ge.random<normal, seed = 9, mean = 0.0, std = 0.02> : tensor<768x768xf16>
  %a = ge.transdata %w {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<768x768xf16>) -> tensor<768x768xf16, #ge.format<FRACTAL_NZ>>
  %d = ge.const dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf32>
  %b = ge.transdata %d {src_format = "ND", dst_format = "NC1HWC0"} : (tensor<1x2x1x1xf32>) -> tensor<1x2x1x1xf32, #ge.format<NC1HWC0>>
  func.return %a, %b : tensor<768x768xf16, #ge.format<FRACTAL_NZ>>, tensor<1x2x1x1xf32, #ge.format<NC1HWC0>>
}
// CHECK-LABEL: func.func @argument_conversion
// CHECK-NEXT:    ge.transdata %x
func.func @argument_conversion(%x: tensor<4x4xf32>) -> tensor<4x4xf32, #ge.format<FRACTAL_NZ>> {
  %a = ge.transdata %x {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<4x4xf32>) -> tensor<4x4xf32, #ge.format<FRACTAL_NZ>>
  func.return %a : tensor<4x4xf32, #ge.format<FRACTAL_NZ>>
}
