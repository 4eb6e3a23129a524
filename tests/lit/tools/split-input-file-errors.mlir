// With --split-input-file an error in a chunk is reported at its line in the whole
// file and the other chunks still run, as in mlir-opt: their results are printed
// and the run fails (exit 1) unless --verify-diagnostics expects the error. A
// failed run writes no -o file.
// RUN: not ge-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: rm -f %t.mlir && not ge-opt %s --split-input-file -o %t.mlir 2>&1 && not test -e %t.mlir

func.func @ok(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// -----

func.func @bad(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = ge.softmax %x {axis = 1} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @bad_too(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = ge.softmax %x {axis = 2} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @also_ok(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// CHECK-NOT: Traceback
// CHECK:     {{^}}{{.*}}split-input-file-errors.mlir:15:3: error: 'ge.softmax' op axis 1 is out of range for rank 1{{$}}
// CHECK-NEXT: {{^}}{{.*}}split-input-file-errors.mlir:22:3: error: 'ge.softmax' op axis 2 is out of range for rank 1{{$}}
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @ok(
// CHECK:      // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @also_ok(
// CHECK-NOT: Traceback
