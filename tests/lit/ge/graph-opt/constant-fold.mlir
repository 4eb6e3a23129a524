// ge-constant-fold: ops of constants become constants (with their names), within
// max-bytes; random weights that are merely consumed stay #ge.random.
// RUN: ge-opt %s -p ge-constant-fold | filecheck %s
// RUN: ge-opt %s -p 'ge-constant-fold{max-bytes=4000000}' | filecheck %s --check-prefix=LARGE
// RUN: ge-opt %s -p ge-constant-fold --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS

// STATS: ge-constant-fold: 6 ops folded, 1 ops over max-bytes left unfolded

// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %s = ge.const dense<[3.000000e+00, 5.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y = ge.add %x, %s
func.func @chain(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = ge.const dense<[1.0, 2.0]> : tensor<2xf32>
  %b = ge.const dense<[2.0, 3.0]> : tensor<2xf32>
  %s = ge.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %y = ge.add %x, %s : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// Shape-only ops fold too; a concat of constants is a constant.
// CHECK-LABEL: func.func @shape_ops
// CHECK-NEXT:    %c = ge.const dense<{{\[}}[1, 2, 5], [3, 4, 6]]> : tensor<2x3xi64>
// CHECK-NEXT:    func.return %c
func.func @shape_ops() -> tensor<2x3xi64> {
  %a = ge.const dense<[1, 3, 2, 4]> : tensor<4xi64>
  %r = ge.reshape %a : (tensor<4xi64>) -> tensor<2x2xi64>
  %t = ge.transpose %r {perm = [1, 0]} : (tensor<2x2xi64>) -> tensor<2x2xi64>
  %b = ge.const dense<[[5], [6]]> : tensor<2x1xi64>
  %c = ge.concat %t, %b {axis = 1} : (tensor<2x2xi64>, tensor<2x1xi64>) -> tensor<2x3xi64>
  func.return %c : tensor<2x3xi64>
}

// A scalar broadcast to 4 MiB stays one element.
// CHECK-LABEL: func.func @splat
// CHECK-NEXT:    %e = ge.const dense<-2.000000e+00> : tensor<1024x1024xf32>
func.func @splat() -> tensor<1024x1024xf32> {
  %s = ge.const dense<2.0> : tensor<f32>
  %n = ge.neg %s : (tensor<f32>) -> tensor<f32>
  %e = ge.expand %n : (tensor<f32>) -> tensor<1024x1024xf32>
  func.return %e : tensor<1024x1024xf32>
}

// A 2 MiB random weight consumed by a transpose is not materialised (max-bytes
// 1 MiB); with a larger bound it folds into dense data.
// CHECK-LABEL: func.func @random_weight
// CHECK-NEXT:    %w = ge.const #ge.random
// CHECK-NEXT:    %t = ge.transpose %w
// LARGE-LABEL: func.func @random_weight
// LARGE-NEXT:    %t = ge.const dense<"0x
func.func @random_weight() -> tensor<1024x512xf32> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 1.0> : tensor<512x1024xf32>
  %t = ge.transpose %w {perm = [1, 0]} : (tensor<512x1024xf32>) -> tensor<1024x512xf32>
  func.return %t : tensor<1024x512xf32>
}

// An op with a non-constant operand is not folded; the weight stays random.
// CHECK-LABEL: func.func @consumed_weight
// CHECK-NEXT:    %w = ge.const #ge.random
// CHECK-NEXT:    %y = ge.matmul %x, %w
func.func @consumed_weight(%x: tensor<2x4xf16>) -> tensor<2x3xf16> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 1.0> : tensor<4x3xf16>
  %y = ge.matmul %x, %w : (tensor<2x4xf16>, tensor<4x3xf16>) -> tensor<2x3xf16>
  func.return %y : tensor<2x3xf16>
}

// An integer division by zero is left for run time to report.
// CHECK-LABEL: func.func @undefined
// CHECK:         ge.div
func.func @undefined() -> tensor<2xi32> {
  %a = ge.const dense<[4, 5]> : tensor<2xi32>
  %z = ge.const dense<[1, 0]> : tensor<2xi32>
  %q = ge.div %a, %z : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  func.return %q : tensor<2xi32>
}
