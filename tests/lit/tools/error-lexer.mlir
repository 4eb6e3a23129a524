// A character the lexer rejects, even as the very first token, is a located error.
// RUN: not ge-opt %s --split-input-file 2>&1 | filecheck %s

$ bad first token

// CHECK-NOT: Traceback
// CHECK:     {{^}}{{.*}}error-lexer.mlir:4:1: error: Unexpected character: ${{$}}
// CHECK-NOT: {{.}}
