// ge-fuse runs pattern fusion then automatic fusion, each a pass of its own;
// its options switch either off, and ge-pattern-fuse can pick patterns.
// RUN: ge-opt %s -p ge-fuse | filecheck %s
// RUN: ge-opt %s -p 'ge-fuse{auto=false}' | filecheck %s --check-prefix=PATTERNS
// RUN: ge-opt %s -p 'ge-fuse{patterns=false}' | filecheck %s --check-prefix=AUTO
// RUN: ge-opt %s -p 'ge-pattern-fuse{only=softmax}' | filecheck %s --check-prefix=ONLY
// RUN: ge-opt %s -p 'ge-pattern-fuse{disable=matmul-bias-act}' | filecheck %s --check-prefix=DISABLE
// RUN: ge-opt %s -p ge-fuse --print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=DUMP
// RUN: ge-opt %s -p ge-fuse --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// RUN: not ge-opt %s -p 'ge-pattern-fuse{only=softmax,fma}' 2>&1 | filecheck %s --check-prefix=ERROR
// RUN: ge-sim %s --pipeline ge-fuse --check | filecheck %s --check-prefix=SIM

// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %[[M:.*]] = fused.matmul_bias_act %x, %w bias %b {act = "relu"}
// CHECK-NEXT:    %[[P:.*]] = fused.softmax %[[M]] {scale = 0.5}
// CHECK-NEXT:    %[[G:.*]] = fused.group %[[P]]
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      ge.exp
// CHECK-NEXT:      ge.neg
// CHECK-NEXT:      fused.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[G]]

// PATTERNS:      fused.matmul_bias_act
// PATTERNS-NEXT: fused.softmax
// PATTERNS-NEXT: ge.exp
// PATTERNS-NEXT: ge.neg

// AUTO:          fused.group %x, %w, %b
// AUTO:            ge.matmul
// AUTO-NEXT:       ge.add
// AUTO-NEXT:       ge.relu
// AUTO-NEXT:       ge.mul
// AUTO:          fused.group
// AUTO-NEXT:     ^bb0
// AUTO-NEXT:       ge.softmax
// AUTO-NEXT:       ge.exp
// AUTO-NEXT:       ge.neg
// AUTO-NOT:      fused.matmul_bias_act

// ONLY:          ge.matmul
// ONLY-NEXT:     ge.add
// ONLY-NEXT:     ge.relu
// ONLY-NEXT:     fused.softmax

// DISABLE:       ge.matmul
// DISABLE:       fused.softmax

// DUMP: // -----// IR Dump After ge-pattern-fuse //----- //
// DUMP: // -----// IR Dump After ge-auto-fuse //----- //

// STATS: ge-pattern-fuse: 1 matmul-bias-act fused, 5 ops replaced, 1 softmax fused
// STATS: ge-auto-fuse: 3 candidates rejected, 1 vertical merges, 1 groups formed, 2 ops grouped

// ERROR: error: pass 'ge-pattern-fuse': unknown pattern 'fma' (patterns: flash-attention, matmul-add-norm, gated-matmul, rotary-matmul, matmul-bias-act, conv2d-bias-act, batch-matmul, add-layer-norm, add-rms-norm, softmax, swiglu, sigmoid-gate)

// SIM: check: ok
func.func @main(%x: tensor<8x16xf16>, %w: tensor<16x32xf16>, %b: tensor<32xf16>) -> tensor<8x32xf16> {
  %0 = ge.matmul %x, %w : (tensor<8x16xf16>, tensor<16x32xf16>) -> tensor<8x32xf16>
  %1 = ge.add %0, %b : (tensor<8x32xf16>, tensor<32xf16>) -> tensor<8x32xf16>
  %2 = ge.relu %1 : (tensor<8x32xf16>) -> tensor<8x32xf16>
  %half = ge.const dense<0.5> : tensor<f16>
  %3 = ge.mul %2, %half : (tensor<8x32xf16>, tensor<f16>) -> tensor<8x32xf16>
  %4 = ge.softmax %3 : (tensor<8x32xf16>) -> tensor<8x32xf16>
  %5 = ge.exp %4 : (tensor<8x32xf16>) -> tensor<8x32xf16>
  %6 = ge.neg %5 : (tensor<8x32xf16>) -> tensor<8x32xf16>
  func.return %6 : tensor<8x32xf16>
}
