// With --split-input-file an error in a later chunk is reported at its line in the
// whole file, and stops the run (exit 1) unless --verify-diagnostics expects it.
// RUN: not ge-opt %s --split-input-file 2>&1 | filecheck %s

func.func @ok(%x: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}

// -----

func.func @bad(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = ge.softmax %x {axis = 1} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK-NOT: Traceback
// CHECK:     {{^}}{{.*}}split-input-file-errors.mlir:12:3: error: 'ge.softmax' op axis 1 is out of range for rank 1{{$}}
// CHECK-NOT: {{.}}
