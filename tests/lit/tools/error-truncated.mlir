// A file cut short says so, at its end: one located line, exit code 1.
// RUN: head -n 6 %s | not ge-opt - 2>&1 | filecheck %s --check-prefix=BLOCK
// RUN: head -n 5 %s | not ge-opt - 2>&1 | filecheck %s --check-prefix=BODY
func.func @main(%x: tensor<4xf16> {ge.name = "x"}) -> (tensor<4xf16> {ge.name = "y"}) {
  %y = ge.relu %x : (tensor<4xf16>) -> tensor<4xf16>
  func.return %y : tensor<4xf16>
}

// BLOCK-NOT: Traceback
// BLOCK:     {{^}}<stdin>:7:1: error: unexpected end of file in block definition{{$}}
// BLOCK-NOT: {{.}}

// BODY-NOT: Traceback
// BODY:     {{^}}<stdin>:6:1: error: unexpected end of file in block definition{{$}}
// BODY-NOT: {{.}}
