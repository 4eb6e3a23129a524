// RUN: ge-opt %s --split-input-file --verify-diagnostics
// RUN: not ge-opt %s --split-input-file 2>&1 | filecheck %s --check-prefix=PLAIN

func.func @main(%a: tensor<4x64xf16>, %b: tensor<32x8xf16>) -> tensor<4x8xf16> {
  // expected-error @+1 {{contraction dims differ: lhs K=64, rhs K=32}}
  %0 = ge.matmul %a, %b : (tensor<4x64xf16>, tensor<32x8xf16>) -> tensor<4x8xf16>
  func.return %0 : tensor<4x8xf16>
}
// PLAIN: verify-diagnostics.mlir:6:3: error: 'ge.matmul' op contraction dims differ: lhs K=64, rhs K=32

// -----

func.func @main(%a: tensor<4x8xf16>) -> tensor<4x9xf16> {
  // expected-error @+1 {{result type tensor<4x9xf16> does not match the inferred type tensor<4x8xf16>}}
  %0 = ge.relu %a : (tensor<4x8xf16>) -> tensor<4x9xf16>
  func.return %0 : tensor<4x9xf16>
}
