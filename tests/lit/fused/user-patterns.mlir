// User fusion patterns load from a Python file, run before the built-in ones and
// compile and check like any other (examples/patterns/quick_gelu.py).
// RUN: ge-opt %s --load-patterns %examples/patterns/quick_gelu.py -p 'ge-graph-opt,ge-fuse' --pass-statistics 2>&1 | filecheck %s
// RUN: ge-opt %s -p 'ge-graph-opt,ge-fuse' | filecheck %s --check-prefix=BUILTIN
// RUN: ge-sim %s --load-patterns %examples/patterns/quick_gelu.py --pipeline ge-compile --check | filecheck %s --check-prefix=SIM
// RUN: not ge-opt %s --load-patterns %t.absent.py -p ge-fuse 2>&1 | filecheck %s --check-prefix=ABSENT
// RUN: not ge-opt %s --load-patterns %examples/patterns/quick_gelu.py -p 'ge-pattern-fuse{only=quick-gelu,nope}' 2>&1 | filecheck %s --check-prefix=UNKNOWN

func.func @main(%x: tensor<64x128xf16> {ge.name = "x"}) -> (tensor<64x256xf16> {ge.name = "y"}) {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.05> : tensor<128x256xf16>
  %h = ge.matmul %x, %w : (tensor<64x128xf16>, tensor<128x256xf16>) -> tensor<64x256xf16>
  %k = ge.const dense<1.702> : tensor<f16>
  %s = ge.mul %k, %h : (tensor<f16>, tensor<64x256xf16>) -> tensor<64x256xf16>
  %g = ge.sigmoid %s : (tensor<64x256xf16>) -> tensor<64x256xf16>
  %y = ge.mul %g, %h : (tensor<64x256xf16>, tensor<64x256xf16>) -> tensor<64x256xf16>
  func.return %y : tensor<64x256xf16>
}

// CHECK: ge-pattern-fuse: 1 quick-gelu fused, 5 ops replaced
// The group reads x as it is and converts it on load (ge-group-read-through).
// CHECK: %y = fused.group %x, %w_nz
// CHECK-NEXT: ^bb0
// CHECK-NEXT: ge.transdata
// CHECK: ge.matmul
// CHECK-NEXT: ge.transdata
// CHECK-NEXT: ge.mul
// CHECK-NEXT: ge.sigmoid
// CHECK-NEXT: ge.mul
// CHECK-NEXT: fused.yield

// Without the file the matmul and the activation are separate kernels.
// BUILTIN: fused.matmul_bias_act
// BUILTIN: fused.group %h

// SIM: check: ok

// ABSENT: {{^}}error: --load-patterns '{{.*}}absent.py': No such file{{$}}

// UNKNOWN: error: pass 'ge-pattern-fuse': unknown pattern 'nope' (patterns: quick-gelu, flash-attention,
