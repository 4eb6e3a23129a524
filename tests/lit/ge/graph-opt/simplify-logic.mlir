// ge-simplify on masks: not(not m) -> m, not of a comparison -> the inverse
// comparison (any predicate on integers and i1; only eq / ne on floats, where
// NaN makes not(a < b) differ from a >= b). ge-constant-fold evaluates a mask
// of constants with the ops' own reference semantics.
// RUN: ge-opt %s -p ge-simplify | filecheck %s
// RUN: ge-opt %s -p ge-constant-fold | filecheck %s --check-prefix=FOLD

// CHECK-LABEL: func.func @not_not
// CHECK-NEXT:    func.return %m
func.func @not_not(%m: tensor<4xi1>) -> tensor<4xi1> {
  %0 = ge.not %m : (tensor<4xi1>) -> tensor<4xi1>
  %1 = ge.not %0 : (tensor<4xi1>) -> tensor<4xi1>
  func.return %1 : tensor<4xi1>
}

// CHECK-LABEL: func.func @not_less_integer
// CHECK-NEXT:    %{{.*}} = ge.compare %i, %j {predicate = "ge"} : (tensor<4xi32>, tensor<1xi32>) -> tensor<4xi1>
// CHECK-NEXT:    func.return
func.func @not_less_integer(%i: tensor<4xi32>, %j: tensor<1xi32>) -> tensor<4xi1> {
  %0 = ge.compare %i, %j {predicate = "lt"} : (tensor<4xi32>, tensor<1xi32>) -> tensor<4xi1>
  %1 = ge.not %0 : (tensor<4xi1>) -> tensor<4xi1>
  func.return %1 : tensor<4xi1>
}

// CHECK-LABEL: func.func @not_equal_float
// CHECK-NEXT:    %{{.*}} = ge.compare %a, %b {predicate = "ne"}
// CHECK-NEXT:    func.return
func.func @not_equal_float(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xi1> {
  %0 = ge.compare %a, %b {predicate = "eq"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %1 = ge.not %0 : (tensor<4xi1>) -> tensor<4xi1>
  func.return %1 : tensor<4xi1>
}

// A float order is kept under its not.
// CHECK-LABEL: func.func @not_less_float
// CHECK-NEXT:    %{{.*}} = ge.compare %a, %b {predicate = "lt"}
// CHECK-NEXT:    %{{.*}} = ge.not
func.func @not_less_float(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xi1> {
  %0 = ge.compare %a, %b {predicate = "lt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %1 = ge.not %0 : (tensor<4xi1>) -> tensor<4xi1>
  func.return %1 : tensor<4xi1>
}

// A causal mask of constant positions folds to a constant; so does python-style mod.
// FOLD-LABEL: func.func @causal
// FOLD-NEXT:    %{{.*}} = ge.const dense<{{\[}}[true, false, false], [true, true, false], [true, true, true]]> : tensor<3x3xi1>
// FOLD-NEXT:    %{{.*}} = ge.const dense<[1, 0, 2]> : tensor<3xi32>
func.func @causal() -> (tensor<3x3xi1>, tensor<3xi32>) {
  %q = ge.const dense<[[0], [1], [2]]> : tensor<3x1xi32>
  %k = ge.const dense<[0, 1, 2]> : tensor<3xi32>
  %future = ge.compare %k, %q {predicate = "gt"} : (tensor<3xi32>, tensor<3x1xi32>) -> tensor<3x3xi1>
  %mask = ge.not %future : (tensor<3x3xi1>) -> tensor<3x3xi1>
  %x = ge.const dense<[-5, 6, -1]> : tensor<3xi32>
  %three = ge.const dense<3> : tensor<3xi32>
  %mod = ge.mod %x, %three : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  func.return %mask, %mod : tensor<3x3xi1>, tensor<3xi32>
}
