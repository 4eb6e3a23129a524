// A syntax error is one located line, exit code 1, no traceback.
// RUN: not ge-opt %s 2>&1 | filecheck %s
// The same through standard input names <stdin>.
// RUN: not ge-opt - < %s 2>&1 | filecheck %s --check-prefix=STDIN

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = ge.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 tensor<4xf32>
}

// CHECK-NOT: Traceback
// CHECK:     {{^}}{{.*}}error-malformed.mlir:8:18: error: Expected ':'{{$}}
// CHECK-NOT: {{.}}

// STDIN-NOT: Traceback
// STDIN:     {{^}}<stdin>:8:18: error: Expected ':'{{$}}
// STDIN-NOT: {{.}}
