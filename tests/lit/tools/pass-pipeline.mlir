// The same pipeline spelled two ways: -p, and --pass-pipeline with MLIR's
// builtin.module(...) wrapper and the spaces MLIR allows; both run dce then cse.
// RUN: ge-opt %s -p dce,cse | filecheck %s
// RUN: ge-opt %s --pass-pipeline ' builtin.module( dce, cse ) ' --print-ir-after-all 2> %t.stderr | filecheck %s
// RUN: filecheck %s --check-prefix=ORDER --input-file %t.stderr
// An empty wrapper runs no pass.
// RUN: ge-opt %s --pass-pipeline 'builtin.module()' | filecheck %s --check-prefix=EMPTY

func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = ge.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = ge.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %dead = ge.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = ge.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// CHECK:      func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:   %a = ge.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:   %y = ge.add %a, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:   func.return %y : tensor<4x8xf32>

// ORDER:     IR Dump After dce
// ORDER:     IR Dump After cse
// ORDER-NOT: IR Dump

// EMPTY:      %a = ge.relu %x
// EMPTY-NEXT: %b = ge.relu %x
// EMPTY-NEXT: %dead = ge.exp %x
