// ge-simplify on elementwise ops: each pattern rewrites the first function of its
// pair and leaves the second (the negative case) alone.
// RUN: ge-opt %s -p ge-simplify | filecheck %s

// CHECK-LABEL: func.func @add_zero
// CHECK-NEXT:    func.return %x
func.func @add_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = ge.const dense<0.0> : tensor<4xf32>
  %y = ge.add %z, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// A zero that broadcasts x to a larger shape is not a no-op.
// CHECK-LABEL: func.func @add_zero_broadcasting
// CHECK:         ge.add %x, %z
func.func @add_zero_broadcasting(%x: tensor<4xf32>) -> tensor<2x4xf32> {
  %z = ge.const dense<0.0> : tensor<2x4xf32>
  %y = ge.add %x, %z : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @add_neg
// CHECK-NEXT:    %s = ge.sub %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %s
func.func @add_neg(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %n = ge.neg %y : (tensor<4xf32>) -> tensor<4xf32>
  %s = ge.add %n, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}
// CHECK-LABEL: func.func @add_abs
// CHECK:         ge.abs
// CHECK-NEXT:    ge.add
func.func @add_abs(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %n = ge.abs %y : (tensor<4xf32>) -> tensor<4xf32>
  %s = ge.add %x, %n : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// CHECK-LABEL: func.func @sub_zero
// CHECK-NEXT:    %y = ge.neg %x : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %x, %y
func.func @sub_zero(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %z = ge.const dense<0.0> : tensor<f32>
  %a = ge.sub %x, %z : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %y = ge.sub %z, %x : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %a, %y : tensor<4xf32>, tensor<4xf32>
}
// x - 1 stays; 0 - x where the zero broadcasts x to a larger shape is no neg(x).
// CHECK-LABEL: func.func @sub_one
// CHECK:         ge.sub %x, %c
// CHECK:         ge.sub %z, %x
func.func @sub_one(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<2x4xf32>) {
  %c = ge.const dense<1.0> : tensor<f32>
  %y = ge.sub %x, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %z = ge.const dense<0.0> : tensor<2x4xf32>
  %w = ge.sub %z, %x : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %y, %w : tensor<4xf32>, tensor<2x4xf32>
}

// CHECK-LABEL: func.func @mul_one
// CHECK-NEXT:    func.return %x
func.func @mul_one(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %one = ge.const dense<1.0> : tensor<3xf16>
  %y = ge.mul %x, %one : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
  func.return %y : tensor<2x3xf16>
}
// CHECK-LABEL: func.func @mul_not_one
// CHECK:         ge.mul %x, %c
func.func @mul_not_one(%x: tensor<2x3xf16>) -> tensor<2x3xf16> {
  %c = ge.const dense<[1.0, 1.0, 2.0]> : tensor<3xf16>
  %y = ge.mul %x, %c : (tensor<2x3xf16>, tensor<3xf16>) -> tensor<2x3xf16>
  func.return %y : tensor<2x3xf16>
}

// CHECK-LABEL: func.func @mul_zero_int
// CHECK-NEXT:    %y = ge.const dense<0> : tensor<2x3xi32>
// CHECK-NEXT:    func.return %y
func.func @mul_zero_int(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %z = ge.const dense<0> : tensor<i32>
  %y = ge.mul %x, %z : (tensor<2x3xi32>, tensor<i32>) -> tensor<2x3xi32>
  func.return %y : tensor<2x3xi32>
}
// Floats keep x * 0: NaN * 0 and inf * 0 are NaN.
// CHECK-LABEL: func.func @mul_zero_float
// CHECK:         ge.mul %x, %z
func.func @mul_zero_float(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %z = ge.const dense<0.0> : tensor<f32>
  %y = ge.mul %x, %z : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @mul_minus_one
// CHECK-NEXT:    %y = ge.neg %x : (tensor<5xf32>) -> tensor<5xf32>
func.func @mul_minus_one(%x: tensor<5xf32>) -> tensor<5xf32> {
  %m = ge.const dense<-1.0> : tensor<f32>
  %y = ge.mul %m, %x : (tensor<f32>, tensor<5xf32>) -> tensor<5xf32>
  func.return %y : tensor<5xf32>
}
// CHECK-LABEL: func.func @mul_minus_two
// CHECK-NOT:     ge.neg
// CHECK:         ge.mul
func.func @mul_minus_two(%x: tensor<5xf32>) -> tensor<5xf32> {
  %m = ge.const dense<-2.0> : tensor<f32>
  %y = ge.mul %m, %x : (tensor<f32>, tensor<5xf32>) -> tensor<5xf32>
  func.return %y : tensor<5xf32>
}

// CHECK-LABEL: func.func @div_one
// CHECK-NEXT:    func.return %x
func.func @div_one(%x: tensor<5xi32>) -> tensor<5xi32> {
  %one = ge.const dense<1> : tensor<i32>
  %y = ge.div %x, %one : (tensor<5xi32>, tensor<i32>) -> tensor<5xi32>
  func.return %y : tensor<5xi32>
}
// CHECK-LABEL: func.func @one_over
// CHECK-NEXT:    %y = ge.reciprocal %x : (tensor<5xf32>) -> tensor<5xf32>
func.func @one_over(%x: tensor<5xf32>) -> tensor<5xf32> {
  %one = ge.const dense<1.0> : tensor<f32>
  %y = ge.div %one, %x : (tensor<f32>, tensor<5xf32>) -> tensor<5xf32>
  func.return %y : tensor<5xf32>
}
// Integer 1 / x truncates: no reciprocal.
// CHECK-LABEL: func.func @one_over_int
// CHECK:         ge.div %one, %x
func.func @one_over_int(%x: tensor<5xi32>) -> tensor<5xi32> {
  %one = ge.const dense<1> : tensor<i32>
  %y = ge.div %one, %x : (tensor<i32>, tensor<5xi32>) -> tensor<5xi32>
  func.return %y : tensor<5xi32>
}

// CHECK-LABEL: func.func @pow_one_two
// CHECK-NEXT:    %b = ge.mul %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    func.return %x, %b
func.func @pow_one_two(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %one = ge.const dense<1.0> : tensor<f32>
  %two = ge.const dense<2.0> : tensor<f32>
  %a = ge.pow %x, %one : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %b = ge.pow %x, %two : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  func.return %a, %b : tensor<3xf32>, tensor<3xf32>
}
// CHECK-LABEL: func.func @pow_three
// CHECK:         ge.pow %x, %three
func.func @pow_three(%x: tensor<3xf32>) -> tensor<3xf32> {
  %three = ge.const dense<3.0> : tensor<f32>
  %a = ge.pow %x, %three : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  func.return %a : tensor<3xf32>
}

// CHECK-LABEL: func.func @neg_neg
// CHECK-NEXT:    func.return %x
func.func @neg_neg(%x: tensor<3xf16>) -> tensor<3xf16> {
  %a = ge.neg %x : (tensor<3xf16>) -> tensor<3xf16>
  %b = ge.neg %a : (tensor<3xf16>) -> tensor<3xf16>
  func.return %b : tensor<3xf16>
}
// CHECK-LABEL: func.func @neg_abs
// CHECK:         ge.abs
// CHECK-NEXT:    ge.neg
func.func @neg_abs(%x: tensor<3xf16>) -> tensor<3xf16> {
  %a = ge.abs %x : (tensor<3xf16>) -> tensor<3xf16>
  %b = ge.neg %a : (tensor<3xf16>) -> tensor<3xf16>
  func.return %b : tensor<3xf16>
}

// CHECK-LABEL: func.func @idempotent
// CHECK-NEXT:    %a = ge.relu %x
// CHECK-NEXT:    %c = ge.abs %x
// CHECK-NEXT:    %e = ge.abs %x
// CHECK-NEXT:    func.return %a, %c, %e
func.func @idempotent(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %a = ge.relu %x : (tensor<3xf32>) -> tensor<3xf32>
  %b = ge.relu %a : (tensor<3xf32>) -> tensor<3xf32>
  %c = ge.abs %x : (tensor<3xf32>) -> tensor<3xf32>
  %d = ge.abs %c : (tensor<3xf32>) -> tensor<3xf32>
  %n = ge.neg %x : (tensor<3xf32>) -> tensor<3xf32>
  %e = ge.abs %n : (tensor<3xf32>) -> tensor<3xf32>
  func.return %b, %d, %e : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}
// relu(abs(x)) is not relu(x) nor abs(x) spelled twice: kept.
// CHECK-LABEL: func.func @relu_of_abs
// CHECK-NEXT:    ge.abs
// CHECK-NEXT:    ge.relu
func.func @relu_of_abs(%x: tensor<3xf32>) -> tensor<3xf32> {
  %a = ge.abs %x : (tensor<3xf32>) -> tensor<3xf32>
  %b = ge.relu %a : (tensor<3xf32>) -> tensor<3xf32>
  func.return %b : tensor<3xf32>
}

// CHECK-LABEL: func.func @dropout_identity
// CHECK-NEXT:    %r = ge.relu %x
// CHECK-NEXT:    func.return %r
func.func @dropout_identity(%x: tensor<3xf32>) -> tensor<3xf32> {
  %a = ge.dropout %x {ratio = 0.1} : (tensor<3xf32>) -> tensor<3xf32>
  %b = ge.identity %a : (tensor<3xf32>) -> tensor<3xf32>
  %r = ge.relu %b : (tensor<3xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// CHECK-LABEL: func.func @cast_same
// CHECK-NEXT:    func.return %x
func.func @cast_same(%x: tensor<3xf16>) -> tensor<3xf16> {
  %a = ge.cast %x : (tensor<3xf16>) -> tensor<3xf16>
  func.return %a : tensor<3xf16>
}
// CHECK-LABEL: func.func @cast_round_trip
// CHECK-NEXT:    func.return %x
func.func @cast_round_trip(%x: tensor<3xf16>) -> tensor<3xf16> {
  %a = ge.cast %x : (tensor<3xf16>) -> tensor<3xf32>
  %b = ge.cast %a : (tensor<3xf32>) -> tensor<3xf16>
  func.return %b : tensor<3xf16>
}
// f32 -> f16 -> f32 rounds: kept.
// CHECK-LABEL: func.func @cast_lossy_round_trip
// CHECK-NEXT:    ge.cast %x : (tensor<3xf32>) -> tensor<3xf16>
// CHECK-NEXT:    ge.cast
func.func @cast_lossy_round_trip(%x: tensor<3xf32>) -> tensor<3xf32> {
  %a = ge.cast %x : (tensor<3xf32>) -> tensor<3xf16>
  %b = ge.cast %a : (tensor<3xf16>) -> tensor<3xf32>
  func.return %b : tensor<3xf32>
}

// CHECK-LABEL: func.func @reciprocal_sqrt
// CHECK-NEXT:    %r = ge.rsqrt %x : (tensor<3xf32>) -> tensor<3xf32>
func.func @reciprocal_sqrt(%x: tensor<3xf32>) -> tensor<3xf32> {
  %s = ge.sqrt %x : (tensor<3xf32>) -> tensor<3xf32>
  %r = ge.reciprocal %s : (tensor<3xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}
// CHECK-LABEL: func.func @reciprocal_exp
// CHECK:         ge.exp
// CHECK-NEXT:    ge.reciprocal
func.func @reciprocal_exp(%x: tensor<3xf32>) -> tensor<3xf32> {
  %s = ge.exp %x : (tensor<3xf32>) -> tensor<3xf32>
  %r = ge.reciprocal %s : (tensor<3xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// CHECK-LABEL: func.func @where_constant
// CHECK-NEXT:    %b = ge.expand %y : (tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %x, %b
func.func @where_constant(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %t = ge.const dense<true> : tensor<2x3xi1>
  %f = ge.const dense<false> : tensor<i1>
  %a = ge.where %t, %x, %y : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %b = ge.where %f, %x, %y : (tensor<i1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %a, %b : tensor<2x3xf32>, tensor<2x3xf32>
}
// CHECK-LABEL: func.func @where_mixed_condition
// CHECK:         ge.where %c, %x, %y
func.func @where_mixed_condition(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<2x3xf32> {
  %c = ge.const dense<[true, false, true]> : tensor<3xi1>
  %a = ge.where %c, %x, %y : (tensor<3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %a : tensor<2x3xf32>
}
