// A verifier failure points at the op, phrased as MLIR does.
// RUN: not ge-opt %s 2>&1 | filecheck %s
// RUN: not ge-opt - < %s 2>&1 | filecheck %s --check-prefix=STDIN

func.func @main(%a: tensor<4x64xf16>, %b: tensor<32x8xf16>) -> tensor<4x8xf16> {
  %0 = ge.matmul %a, %b : (tensor<4x64xf16>, tensor<32x8xf16>) -> tensor<4x8xf16>
  func.return %0 : tensor<4x8xf16>
}

// CHECK-NOT: Traceback
// CHECK:     {{^}}{{.*}}error-verifier.mlir:6:3: error: 'ge.matmul' op contraction dims differ: lhs K=64, rhs K=32{{$}}
// CHECK-NOT: {{.}}

// STDIN-NOT: Traceback
// STDIN:     {{^}}<stdin>:6:3: error: 'ge.matmul' op contraction dims differ: lhs K=64, rhs K=32{{$}}
// STDIN-NOT: {{.}}
