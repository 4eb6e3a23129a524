// -o writes the result to a file and nothing to stdout; an unwritable output or
// dump directory is a one-line error.
// RUN: ge-opt %s -p cse -o %t.out.mlir | filecheck %s --check-prefix=STDOUT --allow-empty
// RUN: filecheck %s --input-file %t.out.mlir
// RUN: not ge-opt %s -o %t.missing/dir/out.mlir 2>&1 | filecheck %s --check-prefix=UNWRITABLE
// RUN: not ge-opt %s -p cse --dump-dir %s/sub 2>&1 | filecheck %s --check-prefix=DUMPDIR

func.func @main(%x: tensor<2x2xf16>) -> tensor<2x2xf16> {
  %a = ge.abs %x : (tensor<2x2xf16>) -> tensor<2x2xf16>
  %b = ge.abs %x : (tensor<2x2xf16>) -> tensor<2x2xf16>
  %y = ge.mul %a, %b : (tensor<2x2xf16>, tensor<2x2xf16>) -> tensor<2x2xf16>
  func.return %y : tensor<2x2xf16>
}

// STDOUT-NOT: {{.}}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @main(%x: tensor<2x2xf16>) -> tensor<2x2xf16> {
// CHECK-NEXT:     %a = ge.abs %x : (tensor<2x2xf16>) -> tensor<2x2xf16>
// CHECK-NEXT:     %y = ge.mul %a, %a : (tensor<2x2xf16>, tensor<2x2xf16>) -> tensor<2x2xf16>
// CHECK-NEXT:     func.return %y : tensor<2x2xf16>

// UNWRITABLE-NOT: Traceback
// UNWRITABLE:     {{^}}error: cannot write '{{.*}}.missing/dir/out.mlir': No such file or directory{{$}}
// UNWRITABLE-NOT: {{.}}

// DUMPDIR-NOT: Traceback
// DUMPDIR:     {{^}}error: cannot create dump directory '{{.*}}output-file.mlir/sub': Not a directory{{$}}
// DUMPDIR-NOT: {{.}}
