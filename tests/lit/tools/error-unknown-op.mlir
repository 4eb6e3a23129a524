// An op no dialect defines.
// RUN: not ge-opt %s 2>&1 | filecheck %s

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = ge.frobnicate %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// CHECK-NOT: Traceback
// CHECK:     {{^}}{{.*}}error-unknown-op.mlir:5:8: error: Operation ge.frobnicate is not registered{{$}}
// CHECK-NOT: {{.}}
