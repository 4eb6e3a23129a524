// RUN: ge-opt %s --split-input-file --verify-diagnostics

func.func @main(%x: tensor<4x4xf16>) -> tensor<4x4xf16, #ge.format<FRACTAL_NZ>> {
  // expected-error @+1 {{input format ND does not match src_format NC1HWC0}}
  %a = ge.transdata %x {src_format = "NC1HWC0", dst_format = "FRACTAL_NZ"} : (tensor<4x4xf16>) -> tensor<4x4xf16, #ge.format<FRACTAL_NZ>>
  func.return %a : tensor<4x4xf16, #ge.format<FRACTAL_NZ>>
}

// -----

func.func @main(%x: tensor<4x4xf16>) -> tensor<4x4xf16> {
  // expected-error @+1 {{result format ND does not match dst_format FRACTAL_NZ}}
  %a = ge.transdata %x {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<4x4xf16>) -> tensor<4x4xf16>
  func.return %a : tensor<4x4xf16>
}

// -----

func.func @main(%x: tensor<4x4xf16>) -> tensor<4x4xf16, #ge.format<NC1HWC0>> {
  // expected-error @+1 {{format NC1HWC0 needs a rank-4 tensor, got rank 2}}
  %a = ge.transdata %x {src_format = "ND", dst_format = "NC1HWC0"} : (tensor<4x4xf16>) -> tensor<4x4xf16, #ge.format<NC1HWC0>>
  func.return %a : tensor<4x4xf16, #ge.format<NC1HWC0>>
}

// -----

func.func @main(%x: tensor<4x4xf16>) -> tensor<4x4xf16> {
  // expected-error @+1 {{attribute 'dst_format' must be one of ND, NC1HWC0, FRACTAL_NZ, FRACTAL_Z, got 'NHWC'}}
  %a = ge.transdata %x {src_format = "ND", dst_format = "NHWC"} : (tensor<4x4xf16>) -> tensor<4x4xf16>
  func.return %a : tensor<4x4xf16>
}
