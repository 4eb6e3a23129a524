// --split-input-file handles each `// -----` chunk as its own module and joins
// the outputs with `// -----`; a chunk holding only comments is an empty module.
// Errors keep the line numbers of the whole file.
// RUN: ge-opt %s --split-input-file | filecheck %s
// RUN: ge-opt %s --split-input-file | ge-opt --split-input-file - | filecheck %s
// Without the flag the markers are comments and @first / @second share one module.
// RUN: ge-opt %s | filecheck %s --check-prefix=WHOLE

func.func @first(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = ge.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @second(%x: tensor<4xi32>) -> tensor<4xi32> {
  %0 = ge.neg %x : (tensor<4xi32>) -> tensor<4xi32>
  func.return %0 : tensor<4xi32>
}

// -----

// Only a comment here.

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @first(%x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:     %0 = ge.relu %x : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:     func.return %0 : tensor<4xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-EMPTY:
// CHECK-NEXT: // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @second(%x: tensor<4xi32>) -> tensor<4xi32> {
// CHECK-NEXT:     %0 = ge.neg %x : (tensor<4xi32>) -> tensor<4xi32>
// CHECK-NEXT:     func.return %0 : tensor<4xi32>
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-EMPTY:
// CHECK-NEXT: // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT: }
// CHECK-NOT:  // -----

// WHOLE:     builtin.module {
// WHOLE:       func.func @first
// WHOLE:       func.func @second
// WHOLE-NOT: // -----
// WHOLE-NOT: builtin.module
