// Round trip of the collective ops in a two-device module. Custom form -> generic
// form -> custom form.
// RUN: ge-opt %s --print-op-generic > %t.generic.mlir
// RUN: filecheck %s --check-prefix=GENERIC --input-file %t.generic.mlir
// RUN: ge-opt %t.generic.mlir | filecheck %s

// CHECK: builtin.module attributes {ge.devices = 2 : i64}
builtin.module attributes {ge.devices = 2 : i64} {
  // CHECK-LABEL: func.func @device0(
  func.func @device0(%x: tensor<4x6xf16>) -> tensor<4x6xf16> attributes {ge.device = 0 : i64} {
    // CHECK-NEXT: %sum = ge.all_reduce %x {devices = 2} : (tensor<4x6xf16>) -> tensor<4x6xf16>
    // CHECK-NEXT: %max = ge.all_reduce %x {devices = 2, reduction = "max"} : (tensor<4x6xf16>) -> tensor<4x6xf16>
    // CHECK-NEXT: %gathered = ge.all_gather %x {devices = 2, axis = 1} : (tensor<4x6xf16>) -> tensor<4x12xf16>
    // CHECK-NEXT: %scattered = ge.reduce_scatter %x {devices = 2} : (tensor<4x6xf16>) -> tensor<2x6xf16>
    // CHECK-NEXT: %swapped = ge.all_to_all %x {devices = 2, split_axis = 1} : (tensor<4x6xf16>) -> tensor<8x3xf16>
    // CHECK-NEXT: %root = ge.broadcast %x {devices = 2, group = [1, 0], root = 1} : (tensor<4x6xf16>) -> tensor<4x6xf16>
    // CHECK-NEXT: ge.send %root {peer = 1, tag = 7} : (tensor<4x6xf16>) -> ()
    // GENERIC:      %sum = "ge.all_reduce"(%x) <{devices = 2 : i64, reduction = "sum", group = array<i64>}> : (tensor<4x6xf16>) -> tensor<4x6xf16>
    // GENERIC:      "ge.send"(%root) <{peer = 1 : i64, tag = 7 : i64}> : (tensor<4x6xf16>) -> ()
    %sum = ge.all_reduce %x {devices = 2} : (tensor<4x6xf16>) -> tensor<4x6xf16>
    %max = ge.all_reduce %x {devices = 2, reduction = "max"} : (tensor<4x6xf16>) -> tensor<4x6xf16>
    %gathered = ge.all_gather %x {devices = 2, axis = 1} : (tensor<4x6xf16>) -> tensor<4x12xf16>
    %scattered = ge.reduce_scatter %x {devices = 2} : (tensor<4x6xf16>) -> tensor<2x6xf16>
    %swapped = ge.all_to_all %x {devices = 2, split_axis = 1, concat_axis = 0} : (tensor<4x6xf16>) -> tensor<8x3xf16>
    %root = ge.broadcast %x {devices = 2, group = [1, 0], root = 1} : (tensor<4x6xf16>) -> tensor<4x6xf16>
    ge.send %root {peer = 1, tag = 7} : (tensor<4x6xf16>) -> ()
    func.return %sum : tensor<4x6xf16>
  }
  // CHECK-LABEL: func.func @device1(
  func.func @device1(%x: tensor<4x6xf16>) -> tensor<4x6xf16> attributes {ge.device = 1 : i64} {
    // CHECK-NEXT: %got = ge.recv {peer = 0, tag = 7} : () -> tensor<4x6xf16>
    // GENERIC: %got = "ge.recv"() <{peer = 0 : i64, tag = 7 : i64}> : () -> tensor<4x6xf16>
    %got = ge.recv {peer = 0, tag = 7} : () -> tensor<4x6xf16>
    func.return %got : tensor<4x6xf16>
  }
}
