// Round trip of ge.transdata and the #ge.format tensor encodings it converts
// between. Custom form -> generic form -> custom form.
// RUN: ge-opt %s --print-op-generic > %t.generic.mlir
// RUN: filecheck %s --check-prefix=GENERIC --input-file %t.generic.mlir
// RUN: ge-opt %t.generic.mlir | filecheck %s

// CHECK-LABEL: func.func @transdata(
// CHECK-SAME:    %m: tensor<20x33xf16>, %x: tensor<1x3x4x4xf16>, %w: tensor<32x16x3x3xf16>, %z: tensor<1x3x4x4xf32, #ge.format<NC1HWC0>>)
// GENERIC-LABEL: "func.func"() <{sym_name = "transdata"
func.func @transdata(%m: tensor<20x33xf16>, %x: tensor<1x3x4x4xf16>, %w: tensor<32x16x3x3xf16>, %z: tensor<1x3x4x4xf32, #ge.format<NC1HWC0>>) {
  // CHECK-NEXT: %nz = ge.transdata %m {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<20x33xf16>) -> tensor<20x33xf16, #ge.format<FRACTAL_NZ>>
  // CHECK-NEXT: %nd = ge.transdata %nz {src_format = "FRACTAL_NZ", dst_format = "ND"} : (tensor<20x33xf16, #ge.format<FRACTAL_NZ>>) -> tensor<20x33xf16>
  // CHECK-NEXT: %hd = ge.transdata %x {src_format = "ND", dst_format = "NC1HWC0"} : (tensor<1x3x4x4xf16>) -> tensor<1x3x4x4xf16, #ge.format<NC1HWC0>>
  // CHECK-NEXT: %fz = ge.transdata %w {src_format = "ND", dst_format = "FRACTAL_Z"} : (tensor<32x16x3x3xf16>) -> tensor<32x16x3x3xf16, #ge.format<FRACTAL_Z>>
  // CHECK-NEXT: %back = ge.transdata %z {src_format = "NC1HWC0", dst_format = "ND"} : (tensor<1x3x4x4xf32, #ge.format<NC1HWC0>>) -> tensor<1x3x4x4xf32>
  // GENERIC:      %nz = "ge.transdata"(%m) <{src_format = "ND", dst_format = "FRACTAL_NZ"}> : (tensor<20x33xf16>) -> tensor<20x33xf16, #ge.format<FRACTAL_NZ>>
  // GENERIC-NEXT: %nd = "ge.transdata"(%nz) <{src_format = "FRACTAL_NZ", dst_format = "ND"}> : (tensor<20x33xf16, #ge.format<FRACTAL_NZ>>) -> tensor<20x33xf16>
  // GENERIC-NEXT: %hd = "ge.transdata"(%x) <{src_format = "ND", dst_format = "NC1HWC0"}> : (tensor<1x3x4x4xf16>) -> tensor<1x3x4x4xf16, #ge.format<NC1HWC0>>
  // GENERIC-NEXT: %fz = "ge.transdata"(%w) <{src_format = "ND", dst_format = "FRACTAL_Z"}> : (tensor<32x16x3x3xf16>) -> tensor<32x16x3x3xf16, #ge.format<FRACTAL_Z>>
  // GENERIC-NEXT: %back = "ge.transdata"(%z) <{src_format = "NC1HWC0", dst_format = "ND"}> : (tensor<1x3x4x4xf32, #ge.format<NC1HWC0>>) -> tensor<1x3x4x4xf32>
  %nz = ge.transdata %m {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<20x33xf16>) -> tensor<20x33xf16, #ge.format<FRACTAL_NZ>>
  %nd = ge.transdata %nz {src_format = "FRACTAL_NZ", dst_format = "ND"} : (tensor<20x33xf16, #ge.format<FRACTAL_NZ>>) -> tensor<20x33xf16>
  %hd = ge.transdata %x {src_format = "ND", dst_format = "NC1HWC0"} : (tensor<1x3x4x4xf16>) -> tensor<1x3x4x4xf16, #ge.format<NC1HWC0>>
  %fz = ge.transdata %w {src_format = "ND", dst_format = "FRACTAL_Z"} : (tensor<32x16x3x3xf16>) -> tensor<32x16x3x3xf16, #ge.format<FRACTAL_Z>>
  %back = ge.transdata %z {src_format = "NC1HWC0", dst_format = "ND"} : (tensor<1x3x4x4xf32, #ge.format<NC1HWC0>>) -> tensor<1x3x4x4xf32>
  func.return
}
