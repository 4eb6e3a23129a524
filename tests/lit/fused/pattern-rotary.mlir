// The rotary embedding as ge-simplify leaves it (exported_idioms.py, RotaryOnRows):
// (x @ W) * cos + (x @ W') * sin, W' the weight with each head's columns rotated
// by half. ge-pattern-fuse makes it one fused.rotary_matmul (both products on
// each x tile, the rotation in the epilogue): one kernel, the same numbers.
// RUN: ge-opt %s -p 'ge-fuse{auto=false}' | filecheck %s
// RUN: ge-sim %s --pipeline 'ge-compile{hw=tiny}' --check --report | filecheck %s --check-prefix=SIM

// CHECK-LABEL: func.func @main(
// CHECK:         %{{.*}} = fused.rotary_matmul %x, %cos, %sin, %w, %wr : (tensor<32x64xf16>, tensor<32x64xf16>, tensor<32x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<32x64xf16>
// CHECK-NOT:     ge.add
// CHECK:         func.return
// SIM:      instructions: {{[0-9]+}} in 1 launches
// SIM:      check: ok
func.func @main(%x: tensor<32x64xf16> {ge.name = "x"}) -> (tensor<32x64xf16> {ge.name = "q"}) {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.1> : tensor<64x64xf16>
  %wr = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.1> : tensor<64x64xf16>
  %cos = ge.const #ge.random<uniform, seed = 3, low = -1.0, high = 1.0> : tensor<32x64xf16>
  %sin = ge.const #ge.random<uniform, seed = 4, low = -1.0, high = 1.0> : tensor<32x64xf16>
  %y = ge.matmul %x, %w : (tensor<32x64xf16>, tensor<64x64xf16>) -> tensor<32x64xf16>
  %yr = ge.matmul %x, %wr : (tensor<32x64xf16>, tensor<64x64xf16>) -> tensor<32x64xf16>
  %a = ge.mul %y, %cos : (tensor<32x64xf16>, tensor<32x64xf16>) -> tensor<32x64xf16>
  %b = ge.mul %yr, %sin : (tensor<32x64xf16>, tensor<32x64xf16>) -> tensor<32x64xf16>
  %q = ge.add %a, %b : (tensor<32x64xf16>, tensor<32x64xf16>) -> tensor<32x64xf16>
  func.return %q : tensor<32x64xf16>
}

