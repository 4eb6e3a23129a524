// --verify-diagnostics fails (exit 1) on an expected error that is not produced,
// on one whose text differs, and on an error nobody expected; each is reported
// at its line. Expectations may sit on the op's line or point @below / @above.
// RUN: not ge-opt %s --split-input-file --verify-diagnostics 2>%t.stderr
// RUN: filecheck %s --input-file %t.stderr

func.func @wrong_text(%a: tensor<4x64xf16>, %b: tensor<32x8xf16>) -> tensor<4x8xf16> {
  // expected-error @+1 {{contraction dims agree}}
  %0 = ge.matmul %a, %b : (tensor<4x64xf16>, tensor<32x8xf16>) -> tensor<4x8xf16>
  func.return %0 : tensor<4x8xf16>
}

// -----

func.func @never_produced(%a: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{out of range}}
  %0 = ge.relu %a : (tensor<4xf16>) -> tensor<4xf16>
  func.return %0 : tensor<4xf16>
}

// -----

func.func @unexpected(%a: tensor<4xf16>) -> tensor<4xf16> {
  %0 = ge.softmax %a {axis = 2} : (tensor<4xf16>) -> tensor<4xf16>
  func.return %0 : tensor<4xf16>
}

// -----

func.func @wrong_line(%a: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @+2 {{axis 2 is out of range for rank 1}}
  %0 = ge.softmax %a {axis = 2} : (tensor<4xf16>) -> tensor<4xf16>
  func.return %0 : tensor<4xf16>
}

// -----

// These match: same line, @below and @above.
func.func @same_line(%a: tensor<4xf16>) -> tensor<4xf16> {
  %0 = ge.softmax %a {axis = 2} : (tensor<4xf16>) -> tensor<4xf16> // expected-error {{axis 2 is out of range}}
  func.return %0 : tensor<4xf16>
}

// -----

func.func @below(%a: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @below {{axis -2 is out of range}}
  %0 = ge.log_softmax %a {axis = -2} : (tensor<4xf16>) -> tensor<4xf16>
  func.return %0 : tensor<4xf16>
}

// -----

func.func @above(%a: tensor<4xi1>) -> tensor<4xi1> {
  %0 = ge.exp %a : (tensor<4xi1>) -> tensor<4xi1>
  // expected-error @above {{must have a float element type, got i1}}
  func.return %0 : tensor<4xi1>
}

// CHECK-NOT: Traceback
// CHECK:      {{^}}{{.*}}verify-diagnostics-mismatch.mlir:9:3: error: unexpected error: 'ge.matmul' op contraction dims differ: lhs K=64, rhs K=32{{$}}
// CHECK-NEXT: {{^}}{{.*}}verify-diagnostics-mismatch.mlir:9: error: expected error "contraction dims agree" was not produced{{$}}
// CHECK-NEXT: {{^}}{{.*}}verify-diagnostics-mismatch.mlir:17: error: expected error "out of range" was not produced{{$}}
// CHECK-NEXT: {{^}}{{.*}}verify-diagnostics-mismatch.mlir:24:3: error: unexpected error: 'ge.softmax' op axis 2 is out of range for rank 1{{$}}
// CHECK-NEXT: {{^}}{{.*}}verify-diagnostics-mismatch.mlir:32:3: error: unexpected error: 'ge.softmax' op axis 2 is out of range for rank 1{{$}}
// CHECK-NEXT: {{^}}{{.*}}verify-diagnostics-mismatch.mlir:33: error: expected error "axis 2 is out of range for rank 1" was not produced{{$}}
// CHECK-NOT:  {{.}}
