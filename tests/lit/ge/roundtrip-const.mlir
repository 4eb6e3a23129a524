// Round trip of ge.const: dense lists, splats, hex, scalars, empty tensors and
// seeded random values, in every element type. The custom form prints a value that
// is all one element as a splat and a large one (over 100 elements) as hex.
// RUN: ge-opt %s --print-op-generic > %t.generic.mlir
// RUN: filecheck %s --check-prefix=GENERIC --input-file %t.generic.mlir
// RUN: ge-opt %t.generic.mlir | filecheck %s

// CHECK-LABEL: func.func @dense(
// GENERIC-LABEL: "func.func"() <{sym_name = "dense"
func.func @dense() {
  // CHECK-NEXT: %f32 = ge.const dense<[[1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.500000e+00, -6.000000e+00]]> : tensor<2x3xf32>
  // CHECK-NEXT: %f16 = ge.const dense<[2.500000e-01, -1.000000e+00]> : tensor<2xf16>
  // CHECK-NEXT: %f64 = ge.const dense<[1.000000e-01, 2.000000e+00]> : tensor<2xf64>
  // CHECK-NEXT: %i32 = ge.const dense<[1, -2, 3]> : tensor<3xi32>
  // CHECK-NEXT: %i64 = ge.const dense<[[9223372036854775807], [-9223372036854775808]]> : tensor<2x1xi64>
  // CHECK-NEXT: %i8 = ge.const dense<[-128, 127]> : tensor<2xi8>
  // CHECK-NEXT: %i1 = ge.const dense<[true, false]> : tensor<2xi1>
  // CHECK-NEXT: %from_hex = ge.const dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  // CHECK-NEXT: %empty = ge.const dense<> : tensor<0x3xf32>
  // GENERIC:      %f32 = "ge.const"() <{value = dense<[[1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.500000e+00, -6.000000e+00]]> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
  // GENERIC-NEXT: %f16 = "ge.const"() <{value = dense<[2.500000e-01, -1.000000e+00]> : tensor<2xf16>}> : () -> tensor<2xf16>
  // GENERIC-NEXT: %f64 = "ge.const"() <{value = dense<[1.000000e-01, 2.000000e+00]> : tensor<2xf64>}> : () -> tensor<2xf64>
  // GENERIC-NEXT: %i32 = "ge.const"() <{value = dense<[1, -2, 3]> : tensor<3xi32>}> : () -> tensor<3xi32>
  // GENERIC-NEXT: %i64 = "ge.const"() <{value = dense<[[9223372036854775807], [-9223372036854775808]]> : tensor<2x1xi64>}> : () -> tensor<2x1xi64>
  // GENERIC-NEXT: %i8 = "ge.const"() <{value = dense<[-128, 127]> : tensor<2xi8>}> : () -> tensor<2xi8>
  // GENERIC-NEXT: %i1 = "ge.const"() <{value = dense<[true, false]> : tensor<2xi1>}> : () -> tensor<2xi1>
  // GENERIC-NEXT: %from_hex = "ge.const"() <{value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>}> : () -> tensor<2xf32>
  // GENERIC-NEXT: %empty = "ge.const"() <{value = dense<> : tensor<0x3xf32>}> : () -> tensor<0x3xf32>
  %f32 = ge.const dense<[[1.0, 2.0, 3.0], [4.0, 5.5, -6.0]]> : tensor<2x3xf32>
  %f16 = ge.const dense<[0.25, -1.0]> : tensor<2xf16>
  %f64 = ge.const dense<[0.1, 2.0]> : tensor<2xf64>
  %i32 = ge.const dense<[1, -2, 3]> : tensor<3xi32>
  %i64 = ge.const dense<[[9223372036854775807], [-9223372036854775808]]> : tensor<2x1xi64>
  %i8 = ge.const dense<[-128, 127]> : tensor<2xi8>
  %i1 = ge.const dense<[true, false]> : tensor<2xi1>
  %from_hex = ge.const dense<"0x0000803F00000040"> : tensor<2xf32>
  %empty = ge.const dense<> : tensor<0x3xf32>
  func.return
}

// CHECK-LABEL: func.func @splat(
// GENERIC-LABEL: "func.func"() <{sym_name = "splat"
func.func @splat() {
  // CHECK-NEXT: %f16 = ge.const dense<1.500000e+00> : tensor<4x4xf16>
  // CHECK-NEXT: %f32_list = ge.const dense<1.000000e+00> : tensor<2x2xf32>
  // CHECK-NEXT: %i64 = ge.const dense<7> : tensor<2x2xi64>
  // CHECK-NEXT: %i32_list = ge.const dense<-3> : tensor<3xi32>
  // CHECK-NEXT: %i1 = ge.const dense<true> : tensor<3xi1>
  // CHECK-NEXT: %i1_list = ge.const dense<false> : tensor<2xi1>
  // CHECK-NEXT: %scalar = ge.const dense<2.000000e+00> : tensor<f32>
  // CHECK-NEXT: %big = ge.const dense<-2.500000e-01> : tensor<64x64xf32>
  // GENERIC:      %f16 = "ge.const"() <{value = dense<1.500000e+00> : tensor<4x4xf16>}> : () -> tensor<4x4xf16>
  // GENERIC-NEXT: %f32_list = "ge.const"() <{value = dense<1.000000e+00> : tensor<2x2xf32>}> : () -> tensor<2x2xf32>
  // GENERIC-NEXT: %i64 = "ge.const"() <{value = dense<7> : tensor<2x2xi64>}> : () -> tensor<2x2xi64>
  // GENERIC-NEXT: %i32_list = "ge.const"() <{value = dense<-3> : tensor<3xi32>}> : () -> tensor<3xi32>
  // GENERIC-NEXT: %i1 = "ge.const"() <{value = dense<true> : tensor<3xi1>}> : () -> tensor<3xi1>
  // GENERIC-NEXT: %i1_list = "ge.const"() <{value = dense<false> : tensor<2xi1>}> : () -> tensor<2xi1>
  // GENERIC-NEXT: %scalar = "ge.const"() <{value = dense<2.000000e+00> : tensor<f32>}> : () -> tensor<f32>
  // GENERIC-NEXT: %big = "ge.const"() <{value = dense<-2.500000e-01> : tensor<64x64xf32>}> : () -> tensor<64x64xf32>
  %f16 = ge.const dense<1.5> : tensor<4x4xf16>
  %f32_list = ge.const dense<[[1.0, 1.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %i64 = ge.const dense<7> : tensor<2x2xi64>
  %i32_list = ge.const dense<[-3, -3, -3]> : tensor<3xi32>
  %i1 = ge.const dense<true> : tensor<3xi1>
  %i1_list = ge.const dense<[false, false]> : tensor<2xi1>
  %scalar = ge.const dense<2.0> : tensor<f32>
  %big = ge.const dense<-0.25> : tensor<64x64xf32>
  func.return
}

// Over 100 elements, not all equal: hex in both forms.
// CHECK-LABEL: func.func @hex(
// GENERIC-LABEL: "func.func"() <{sym_name = "hex"
func.func @hex() {
  // CHECK-NEXT: %bytes = ge.const dense<"0xC0C1C2C3C4C5C6C7C8C9CACBCCCDCECFD0D1D2D3D4D5D6D7D8D9DADBDCDDDEDFE0E1E2E3E4E5E6E7E8E9EAEBECEDEEEFF0F1F2F3F4F5F6F7F8F9FAFBFCFDFEFF000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F"> : tensor<128xi8>
  // CHECK-NEXT: %tagged = ge.const dense<"0xC0C1C2C3C4C5C6C7C8C9CACBCCCDCECFD0D1D2D3D4D5D6D7D8D9DADBDCDDDEDFE0E1E2E3E4E5E6E7E8E9EAEBECEDEEEFF0F1F2F3F4F5F6F7F8F9FAFBFCFDFEFF000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F"> : tensor<2x64xi8> {ge.name = "w"}
  // GENERIC:      %bytes = "ge.const"() <{value = dense<"0xC0C1C2C3C4C5C6C7C8C9CACBCCCDCECFD0D1D2D3D4D5D6D7D8D9DADBDCDDDEDFE0E1E2E3E4E5E6E7E8E9EAEBECEDEEEFF0F1F2F3F4F5F6F7F8F9FAFBFCFDFEFF000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F"> : tensor<128xi8>}> : () -> tensor<128xi8>
  // GENERIC-NEXT: %tagged = "ge.const"() <{value = dense<"0xC0C1C2C3C4C5C6C7C8C9CACBCCCDCECFD0D1D2D3D4D5D6D7D8D9DADBDCDDDEDFE0E1E2E3E4E5E6E7E8E9EAEBECEDEEEFF0F1F2F3F4F5F6F7F8F9FAFBFCFDFEFF000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F"> : tensor<2x64xi8>}> {ge.name = "w"} : () -> tensor<2x64xi8>
  %bytes = ge.const dense<"0xC0C1C2C3C4C5C6C7C8C9CACBCCCDCECFD0D1D2D3D4D5D6D7D8D9DADBDCDDDEDFE0E1E2E3E4E5E6E7E8E9EAEBECEDEEEFF0F1F2F3F4F5F6F7F8F9FAFBFCFDFEFF000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F"> : tensor<128xi8>
  %tagged = ge.const dense<"0xC0C1C2C3C4C5C6C7C8C9CACBCCCDCECFD0D1D2D3D4D5D6D7D8D9DADBDCDDDEDFE0E1E2E3E4E5E6E7E8E9EAEBECEDEEEFF0F1F2F3F4F5F6F7F8F9FAFBFCFDFEFF000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F"> : tensor<2x64xi8> {ge.name = "w"}
  func.return
}

// CHECK-LABEL: func.func @random(
// GENERIC-LABEL: "func.func"() <{sym_name = "random"
func.func @random() {
  // CHECK-NEXT: %normal = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.02> : tensor<64x64xf16>
  // CHECK-NEXT: %uniform = ge.const #ge.random<uniform, seed = 7, low = -1.0, high = 1.0> : tensor<8xf32>
  // CHECK-NEXT: %ints = ge.const #ge.random<uniform, seed = 0, low = 0.0, high = 10.0> : tensor<3x3xi32>
  // CHECK-NEXT: %mask = ge.const #ge.random<uniform, seed = 3, low = 0.0, high = 1.0> : tensor<16xi1> {ge.name = "mask"}
  // CHECK-NEXT: %tiny = ge.const #ge.random<normal, seed = 123456789, mean = -1.5, std = 1.0e-08> : tensor<2xf64>
  // GENERIC:      %normal = "ge.const"() <{value = #ge.random<normal, seed = 1, mean = 0.0, std = 0.02>}> : () -> tensor<64x64xf16>
  // GENERIC-NEXT: %uniform = "ge.const"() <{value = #ge.random<uniform, seed = 7, low = -1.0, high = 1.0>}> : () -> tensor<8xf32>
  // GENERIC-NEXT: %ints = "ge.const"() <{value = #ge.random<uniform, seed = 0, low = 0.0, high = 10.0>}> : () -> tensor<3x3xi32>
  // GENERIC-NEXT: %mask = "ge.const"() <{value = #ge.random<uniform, seed = 3, low = 0.0, high = 1.0>}> {ge.name = "mask"} : () -> tensor<16xi1>
  // GENERIC-NEXT: %tiny = "ge.const"() <{value = #ge.random<normal, seed = 123456789, mean = -1.5, std = 1.0e-08>}> : () -> tensor<2xf64>
  %normal = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.02> : tensor<64x64xf16>
  %uniform = ge.const #ge.random<uniform, seed = 7, low = -1.0, high = 1.0> : tensor<8xf32>
  %ints = ge.const #ge.random<uniform, seed = 0, low = 0, high = 10> : tensor<3x3xi32>
  %mask = ge.const #ge.random<uniform, seed = 3, low = 0.0, high = 1.0> : tensor<16xi1> {ge.name = "mask"}
  %tiny = ge.const #ge.random<normal, seed = 123456789, mean = -1.5, std = 1.0e-8> : tensor<2xf64>
  func.return
}
