// ge-graph-opt: every stage has work in this graph; the result computes the same
// numbers, and a second run changes nothing.
// RUN: ge-opt %s -p ge-graph-opt | filecheck %s
// RUN: ge-opt %s -p ge-graph-opt --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// RUN: ge-sim %s --pipeline ge-graph-opt --check | filecheck %s --check-prefix=SIM
// RUN: ge-opt %s -p ge-graph-opt | ge-opt - -p ge-graph-opt --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=AGAIN
// RUN: ge-opt %s -p 'ge-graph-opt{layout=false fold-bn=false}' | filecheck %s --check-prefix=NOLAYOUT
// RUN: rm -rf %t && ge-opt %s -p ge-graph-opt --dump-dir %t && ls %t | filecheck %s --check-prefix=DUMP

// STATS:      ge-simplify: 4 rewrites
// STATS-SAME: no-ops removed
// STATS-NEXT: ge-constant-fold: 1 ops folded, 0 ops over max-bytes left unfolded
// STATS-NEXT: ge-fold-batchnorm: 1 batch norms folded
// STATS-NEXT: cse: 1 ops erased
// STATS-NEXT: dce: 0 ops erased
// STATS-NEXT: ge-layout: {{[0-9]+}} transdata inserted, {{.*}} transdata eliminated

// SIM: check: ok

// AGAIN: ge-layout: 0 transdata inserted, 0 transdata eliminated

// DUMP:      00_input.mlir
// DUMP-NEXT: 01_ge-simplify.mlir
// DUMP-NEXT: 02_ge-constant-fold.mlir
// DUMP-NEXT: 03_ge-fold-batchnorm.mlir
// DUMP-NEXT: 04_cse.mlir
// DUMP-NEXT: 05_dce.mlir
// DUMP-NEXT: 06_ge-layout.mlir
// DUMP-NEXT: 07_ge-simplify.mlir
// DUMP-NEXT: 08_ge-constant-fold.mlir
// DUMP-NEXT: 09_cse.mlir
// DUMP-NOT:  10_

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %x_5hd = ge.transdata %x {src_format = "ND", dst_format = "NC1HWC0"}
// CHECK-NEXT:    %w_fz = ge.const dense<"0x{{[0-9A-F]+}}"> : tensor<16x16x3x3xf16, #ge.format<FRACTAL_Z>>
// CHECK-NEXT:    %conv_5hd = ge.conv2d %x_5hd, %w_fz {pads = [1, 1, 1, 1]}
// CHECK-NEXT:    %bn_bias = ge.const
// CHECK-NEXT:    %bn_5hd = ge.bias_add %conv_5hd, %bn_bias {axis = 1}
// CHECK-NEXT:    %shift = ge.const dense<2.500000e-01> : tensor<f16>
// CHECK-NEXT:    %shifted_5hd = ge.add %bn_5hd, %shift
// CHECK-NEXT:    %act_5hd = ge.relu %shifted_5hd
// CHECK-NEXT:    %sum_5hd = ge.add %act_5hd, %act_5hd
// CHECK-NEXT:    %sum = ge.transdata %sum_5hd {src_format = "NC1HWC0", dst_format = "ND"}
// CHECK-NEXT:    func.return %sum
// NOLAYOUT-NOT: ge.transdata
// NOLAYOUT:     ge.batch_norm
func.func @main(%x: tensor<1x16x8x8xf16> {ge.name = "x"}) -> (tensor<1x16x8x8xf16> {ge.name = "y"}) {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.1> : tensor<16x16x3x3xf16>
  %conv = ge.conv2d %x, %w {pads = [1, 1, 1, 1]} : (tensor<1x16x8x8xf16>, tensor<16x16x3x3xf16>) -> tensor<1x16x8x8xf16>
  %gamma = ge.const #ge.random<uniform, seed = 2, low = 0.5, high = 1.5> : tensor<16xf16>
  %beta = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.1> : tensor<16xf16>
  %mean = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.1> : tensor<16xf16>
  %var = ge.const #ge.random<uniform, seed = 5, low = 0.5, high = 1.5> : tensor<16xf16>
  %bn = ge.batch_norm %conv, %gamma, %beta, %mean, %var : (tensor<1x16x8x8xf16>, tensor<16xf16>, tensor<16xf16>, tensor<16xf16>, tensor<16xf16>) -> tensor<1x16x8x8xf16>
  %quarter = ge.const dense<0.5> : tensor<f16>
  %half = ge.const dense<0.5> : tensor<f16>
  %shift = ge.mul %quarter, %half : (tensor<f16>, tensor<f16>) -> tensor<f16>
  %shifted = ge.add %bn, %shift : (tensor<1x16x8x8xf16>, tensor<f16>) -> tensor<1x16x8x8xf16>
  %dropped = ge.dropout %shifted {ratio = 0.1} : (tensor<1x16x8x8xf16>) -> tensor<1x16x8x8xf16>
  %act = ge.relu %dropped : (tensor<1x16x8x8xf16>) -> tensor<1x16x8x8xf16>
  %act2 = ge.relu %dropped : (tensor<1x16x8x8xf16>) -> tensor<1x16x8x8xf16>
  %one = ge.const dense<1.0> : tensor<f16>
  %same = ge.mul %act2, %one : (tensor<1x16x8x8xf16>, tensor<f16>) -> tensor<1x16x8x8xf16>
  %flat = ge.reshape %same : (tensor<1x16x8x8xf16>) -> tensor<16x64xf16>
  %back = ge.reshape %flat : (tensor<16x64xf16>) -> tensor<1x16x8x8xf16>
  %sum = ge.add %act, %back : (tensor<1x16x8x8xf16>, tensor<1x16x8x8xf16>) -> tensor<1x16x8x8xf16>
  func.return %sum : tensor<1x16x8x8xf16>
}
