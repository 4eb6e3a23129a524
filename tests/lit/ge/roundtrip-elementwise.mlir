// Round trip of the elementwise ops: custom form -> generic form -> custom form.
// The custom form elides attributes equal to their default; the generic form
// carries every attribute as a property.
// RUN: ge-opt %s --print-op-generic > %t.generic.mlir
// RUN: filecheck %s --check-prefix=GENERIC --input-file %t.generic.mlir
// RUN: ge-opt %t.generic.mlir | filecheck %s

// CHECK-LABEL: func.func @binary(
// GENERIC-LABEL: "func.func"() <{sym_name = "binary"
func.func @binary(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %i: tensor<4xi32>, %h: tensor<2x2xf16>, %l: tensor<5xi64>) {
  // CHECK-NEXT: %add = ge.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %sub = ge.sub %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  // CHECK-NEXT: %mul = ge.mul %h, %h : (tensor<2x2xf16>, tensor<2x2xf16>) -> tensor<2x2xf16>
  // CHECK-NEXT: %div = ge.div %l, %l : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  // CHECK-NEXT: %pow = ge.pow %b, %a : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %max = ge.maximum %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  // CHECK-NEXT: %min = ge.minimum %h, %h : (tensor<2x2xf16>, tensor<2x2xf16>) -> tensor<2x2xf16>
  // CHECK-NEXT: func.return
  // GENERIC:      %add = "ge.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // GENERIC-NEXT: %sub = "ge.sub"(%i, %i) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  // GENERIC-NEXT: %mul = "ge.mul"(%h, %h) : (tensor<2x2xf16>, tensor<2x2xf16>) -> tensor<2x2xf16>
  // GENERIC-NEXT: %div = "ge.div"(%l, %l) : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  // GENERIC-NEXT: %pow = "ge.pow"(%b, %a) : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // GENERIC-NEXT: %max = "ge.maximum"(%i, %i) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  // GENERIC-NEXT: %min = "ge.minimum"(%h, %h) : (tensor<2x2xf16>, tensor<2x2xf16>) -> tensor<2x2xf16>
  // GENERIC-NEXT: "func.return"() : () -> ()
  %add = ge.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %sub = ge.sub %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %mul = ge.mul %h, %h : (tensor<2x2xf16>, tensor<2x2xf16>) -> tensor<2x2xf16>
  %div = ge.div %l, %l : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  %pow = ge.pow %b, %a : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %max = ge.maximum %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %min = ge.minimum %h, %h : (tensor<2x2xf16>, tensor<2x2xf16>) -> tensor<2x2xf16>
  func.return
}

// CHECK-LABEL: func.func @unary(
// GENERIC-LABEL: "func.func"() <{sym_name = "unary"
func.func @unary(%f: tensor<8xf32>, %h: tensor<2x4xf16>, %i: tensor<3xi32>, %l: tensor<3xi64>, %d: tensor<2xf64>) {
  // CHECK-NEXT: %neg = ge.neg %l : (tensor<3xi64>) -> tensor<3xi64>
  // CHECK-NEXT: %abs = ge.abs %i : (tensor<3xi32>) -> tensor<3xi32>
  // CHECK-NEXT: %exp = ge.exp %f : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK-NEXT: %log = ge.log %h : (tensor<2x4xf16>) -> tensor<2x4xf16>
  // CHECK-NEXT: %sqrt = ge.sqrt %f : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK-NEXT: %rsqrt = ge.rsqrt %h : (tensor<2x4xf16>) -> tensor<2x4xf16>
  // CHECK-NEXT: %recip = ge.reciprocal %d : (tensor<2xf64>) -> tensor<2xf64>
  // CHECK-NEXT: %tanh = ge.tanh %f : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK-NEXT: %sigmoid = ge.sigmoid %h : (tensor<2x4xf16>) -> tensor<2x4xf16>
  // CHECK-NEXT: %relu = ge.relu %i : (tensor<3xi32>) -> tensor<3xi32>
  // CHECK-NEXT: %silu = ge.silu %f : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK-NEXT: %erf = ge.erf %d : (tensor<2xf64>) -> tensor<2xf64>
  // CHECK-NEXT: %id = ge.identity %l : (tensor<3xi64>) -> tensor<3xi64>
  // CHECK-NEXT: func.return
  // GENERIC:      %neg = "ge.neg"(%l) : (tensor<3xi64>) -> tensor<3xi64>
  // GENERIC-NEXT: %abs = "ge.abs"(%i) : (tensor<3xi32>) -> tensor<3xi32>
  // GENERIC-NEXT: %exp = "ge.exp"(%f) : (tensor<8xf32>) -> tensor<8xf32>
  // GENERIC-NEXT: %log = "ge.log"(%h) : (tensor<2x4xf16>) -> tensor<2x4xf16>
  // GENERIC-NEXT: %sqrt = "ge.sqrt"(%f) : (tensor<8xf32>) -> tensor<8xf32>
  // GENERIC-NEXT: %rsqrt = "ge.rsqrt"(%h) : (tensor<2x4xf16>) -> tensor<2x4xf16>
  // GENERIC-NEXT: %recip = "ge.reciprocal"(%d) : (tensor<2xf64>) -> tensor<2xf64>
  // GENERIC-NEXT: %tanh = "ge.tanh"(%f) : (tensor<8xf32>) -> tensor<8xf32>
  // GENERIC-NEXT: %sigmoid = "ge.sigmoid"(%h) : (tensor<2x4xf16>) -> tensor<2x4xf16>
  // GENERIC-NEXT: %relu = "ge.relu"(%i) : (tensor<3xi32>) -> tensor<3xi32>
  // GENERIC-NEXT: %silu = "ge.silu"(%f) : (tensor<8xf32>) -> tensor<8xf32>
  // GENERIC-NEXT: %erf = "ge.erf"(%d) : (tensor<2xf64>) -> tensor<2xf64>
  // GENERIC-NEXT: %id = "ge.identity"(%l) : (tensor<3xi64>) -> tensor<3xi64>
  %neg = ge.neg %l : (tensor<3xi64>) -> tensor<3xi64>
  %abs = ge.abs %i : (tensor<3xi32>) -> tensor<3xi32>
  %exp = ge.exp %f : (tensor<8xf32>) -> tensor<8xf32>
  %log = ge.log %h : (tensor<2x4xf16>) -> tensor<2x4xf16>
  %sqrt = ge.sqrt %f : (tensor<8xf32>) -> tensor<8xf32>
  %rsqrt = ge.rsqrt %h : (tensor<2x4xf16>) -> tensor<2x4xf16>
  %recip = ge.reciprocal %d : (tensor<2xf64>) -> tensor<2xf64>
  %tanh = ge.tanh %f : (tensor<8xf32>) -> tensor<8xf32>
  %sigmoid = ge.sigmoid %h : (tensor<2x4xf16>) -> tensor<2x4xf16>
  %relu = ge.relu %i : (tensor<3xi32>) -> tensor<3xi32>
  %silu = ge.silu %f : (tensor<8xf32>) -> tensor<8xf32>
  %erf = ge.erf %d : (tensor<2xf64>) -> tensor<2xf64>
  %id = ge.identity %l : (tensor<3xi64>) -> tensor<3xi64>
  func.return
}

// Attributes: written defaults disappear from the custom form, other values stay;
// an integer where a float is expected is read as that float.
// CHECK-LABEL: func.func @attributes(
// GENERIC-LABEL: "func.func"() <{sym_name = "attributes"
func.func @attributes(%x: tensor<4x4xf32>) {
  // CHECK-NEXT: %gelu = ge.gelu %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK-NEXT: %gelu_none = ge.gelu %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK-NEXT: %gelu_tanh = ge.gelu %x {approximate = "tanh"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK-NEXT: %leaky = ge.leaky_relu %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK-NEXT: %leaky_default = ge.leaky_relu %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK-NEXT: %leaky_alpha = ge.leaky_relu %x {alpha = 0.2} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK-NEXT: %leaky_int = ge.leaky_relu %x {alpha = 1.0} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK-NEXT: %leaky_neg = ge.leaky_relu %x {alpha = -1.0e-07} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK-NEXT: %drop = ge.dropout %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK-NEXT: %drop_default = ge.dropout %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK-NEXT: %drop_ratio = ge.dropout %x {ratio = 0.1} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // GENERIC:      %gelu = "ge.gelu"(%x) <{approximate = "none"}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // GENERIC-NEXT: %gelu_none = "ge.gelu"(%x) <{approximate = "none"}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // GENERIC-NEXT: %gelu_tanh = "ge.gelu"(%x) <{approximate = "tanh"}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // GENERIC-NEXT: %leaky = "ge.leaky_relu"(%x) <{alpha = 1.000000e-02 : f64}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // GENERIC-NEXT: %leaky_default = "ge.leaky_relu"(%x) <{alpha = 1.000000e-02 : f64}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // GENERIC-NEXT: %leaky_alpha = "ge.leaky_relu"(%x) <{alpha = 2.000000e-01 : f64}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // GENERIC-NEXT: %leaky_int = "ge.leaky_relu"(%x) <{alpha = 1.000000e+00 : f64}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // GENERIC-NEXT: %leaky_neg = "ge.leaky_relu"(%x) <{alpha = -1.000000e-07 : f64}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // GENERIC-NEXT: %drop = "ge.dropout"(%x) <{ratio = 5.000000e-01 : f64}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // GENERIC-NEXT: %drop_default = "ge.dropout"(%x) <{ratio = 5.000000e-01 : f64}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // GENERIC-NEXT: %drop_ratio = "ge.dropout"(%x) <{ratio = 1.000000e-01 : f64}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %gelu = ge.gelu %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %gelu_none = ge.gelu %x {approximate = "none"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %gelu_tanh = ge.gelu %x {approximate = "tanh"} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %leaky = ge.leaky_relu %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %leaky_default = ge.leaky_relu %x {alpha = 0.01} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %leaky_alpha = ge.leaky_relu %x {alpha = 0.2} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %leaky_int = ge.leaky_relu %x {alpha = 1} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %leaky_neg = ge.leaky_relu %x {alpha = -1.0e-7} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %drop = ge.dropout %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %drop_default = ge.dropout %x {ratio = 0.5} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %drop_ratio = ge.dropout %x {ratio = 0.1} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return
}

// CHECK-LABEL: func.func @cast_where(
// GENERIC-LABEL: "func.func"() <{sym_name = "cast_where"
func.func @cast_where(%f: tensor<2x3xf32>, %h: tensor<3xf16>, %i: tensor<2x3xi32>, %c: tensor<2x1xi1>, %l: tensor<3xi64>) {
  // CHECK-NEXT: %to_i32 = ge.cast %f : (tensor<2x3xf32>) -> tensor<2x3xi32>
  // CHECK-NEXT: %to_f16 = ge.cast %i : (tensor<2x3xi32>) -> tensor<2x3xf16>
  // CHECK-NEXT: %to_i1 = ge.cast %h : (tensor<3xf16>) -> tensor<3xi1>
  // CHECK-NEXT: %from_i1 = ge.cast %c : (tensor<2x1xi1>) -> tensor<2x1xf32>
  // CHECK-NEXT: %to_f64 = ge.cast %l : (tensor<3xi64>) -> tensor<3xf64>
  // CHECK-NEXT: %where = ge.where %c, %f, %f : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %where_bc = ge.where %to_i1, %i, %i : (tensor<3xi1>, tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  // GENERIC:      %to_i32 = "ge.cast"(%f) <{saturate = true, round_mode = "up"}> : (tensor<2x3xf32>) -> tensor<2x3xi32>
  // GENERIC-NEXT: %to_f16 = "ge.cast"(%i) <{saturate = true, round_mode = "up"}> : (tensor<2x3xi32>) -> tensor<2x3xf16>
  // GENERIC-NEXT: %to_i1 = "ge.cast"(%h) <{saturate = true, round_mode = "up"}> : (tensor<3xf16>) -> tensor<3xi1>
  // GENERIC-NEXT: %from_i1 = "ge.cast"(%c) <{saturate = true, round_mode = "up"}> : (tensor<2x1xi1>) -> tensor<2x1xf32>
  // GENERIC-NEXT: %to_f64 = "ge.cast"(%l) <{saturate = true, round_mode = "up"}> : (tensor<3xi64>) -> tensor<3xf64>
  // GENERIC-NEXT: %where = "ge.where"(%c, %f, %f) : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // GENERIC-NEXT: %where_bc = "ge.where"(%to_i1, %i, %i) : (tensor<3xi1>, tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  %to_i32 = ge.cast %f : (tensor<2x3xf32>) -> tensor<2x3xi32>
  %to_f16 = ge.cast %i : (tensor<2x3xi32>) -> tensor<2x3xf16>
  %to_i1 = ge.cast %h : (tensor<3xf16>) -> tensor<3xi1>
  %from_i1 = ge.cast %c : (tensor<2x1xi1>) -> tensor<2x1xf32>
  %to_f64 = ge.cast %l : (tensor<3xi64>) -> tensor<3xf64>
  %where = ge.where %c, %f, %f : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %where_bc = ge.where %to_i1, %i, %i : (tensor<3xi1>, tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return
}

// Discardable attributes (dialect-prefixed names) ride along after the op's own.
// CHECK-LABEL: func.func @discardable(
// GENERIC-LABEL: "func.func"() <{sym_name = "discardable"
func.func @discardable(%x: tensor<4xf32>) {
  // CHECK-NEXT: %r = ge.relu %x {ge.tag = "keep"} : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK-NEXT: %g = ge.gelu %x {approximate = "tanh", ge.tag = "keep", test.n = 3 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  // CHECK-NEXT: %d = ge.dropout %x {ge.tag = "keep"} : (tensor<4xf32>) -> tensor<4xf32>
  // GENERIC:      %r = "ge.relu"(%x) {ge.tag = "keep"} : (tensor<4xf32>) -> tensor<4xf32>
  // GENERIC-NEXT: %g = "ge.gelu"(%x) <{approximate = "tanh"}> {ge.tag = "keep", test.n = 3 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  // GENERIC-NEXT: %d = "ge.dropout"(%x) <{ratio = 5.000000e-01 : f64}> {ge.tag = "keep"} : (tensor<4xf32>) -> tensor<4xf32>
  %r = ge.relu %x {ge.tag = "keep"} : (tensor<4xf32>) -> tensor<4xf32>
  %g = ge.gelu %x {approximate = "tanh", ge.tag = "keep", test.n = 3} : (tensor<4xf32>) -> tensor<4xf32>
  %d = ge.dropout %x {ge.tag = "keep", ratio = 0.5} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// Comparisons (i1 results, operands broadcast, i1 operands too), logic on masks, mod.
// CHECK-LABEL: func.func @logic(
// GENERIC-LABEL: "func.func"() <{sym_name = "logic"
func.func @logic(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %m: tensor<2x3xi1>, %n: tensor<3xi1>, %i: tensor<4xi32>, %u: tensor<4xui8>, %h: tensor<2x3xf16>) {
  // CHECK-NEXT: %eq = ge.compare %a, %b {predicate = "eq"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // CHECK-NEXT: %ne = ge.compare %m, %n {predicate = "ne"} : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  // CHECK-NEXT: %lt = ge.compare %i, %i {predicate = "lt"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  // CHECK-NEXT: %le = ge.compare %u, %u {predicate = "le"} : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  // CHECK-NEXT: %gt = ge.compare %h, %h {predicate = "gt"} : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xi1>
  // CHECK-NEXT: %ge = ge.compare %b, %a {predicate = "ge"} : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK-NEXT: %and = ge.and %eq, %n : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  // CHECK-NEXT: %or = ge.or %m, %gt : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // CHECK-NEXT: %not = ge.not %lt : (tensor<4xi1>) -> tensor<4xi1>
  // CHECK-NEXT: %mod = ge.mod %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  // CHECK-NEXT: %fmod = ge.mod %a, %b {fmod = true} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: func.return
  // GENERIC:      %eq = "ge.compare"(%a, %b) <{predicate = "eq"}> : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  // GENERIC-NEXT: %ne = "ge.compare"(%m, %n) <{predicate = "ne"}> : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  // GENERIC-NEXT: %lt = "ge.compare"(%i, %i) <{predicate = "lt"}> : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  // GENERIC-NEXT: %le = "ge.compare"(%u, %u) <{predicate = "le"}> : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  // GENERIC-NEXT: %gt = "ge.compare"(%h, %h) <{predicate = "gt"}> : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xi1>
  // GENERIC-NEXT: %ge = "ge.compare"(%b, %a) <{predicate = "ge"}> : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  // GENERIC-NEXT: %and = "ge.and"(%eq, %n) : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  // GENERIC-NEXT: %or = "ge.or"(%m, %gt) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // GENERIC-NEXT: %not = "ge.not"(%lt) : (tensor<4xi1>) -> tensor<4xi1>
  // GENERIC-NEXT: %mod = "ge.mod"(%i, %i) <{fmod = false}> : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  // GENERIC-NEXT: %fmod = "ge.mod"(%a, %b) <{fmod = true}> : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  // GENERIC-NEXT: "func.return"() : () -> ()
  %eq = ge.compare %a, %b {predicate = "eq"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %ne = ge.compare %m, %n {predicate = "ne"} : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %lt = ge.compare %i, %i {predicate = "lt"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %le = ge.compare %u, %u {predicate = "le"} : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xi1>
  %gt = ge.compare %h, %h {predicate = "gt"} : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xi1>
  %ge = ge.compare %b, %a {predicate = "ge"} : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %and = ge.and %eq, %n : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
  %or = ge.or %m, %gt : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %not = ge.not %lt : (tensor<4xi1>) -> tensor<4xi1>
  %mod = ge.mod %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %fmod = ge.mod %a, %b {fmod = true} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return
}

// Bitwise logic and shifts on integers (operands broadcast).
// CHECK-LABEL: func.func @bitwise(
// GENERIC-LABEL: "func.func"() <{sym_name = "bitwise"
func.func @bitwise(%u: tensor<2x4xui8>, %v: tensor<4xui8>, %i: tensor<3xi32>) {
  // CHECK-NEXT: %and = ge.bitwise_and %u, %v : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
  // CHECK-NEXT: %or = ge.bitwise_or %i, %i : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  // CHECK-NEXT: %xor = ge.bitwise_xor %v, %u : (tensor<4xui8>, tensor<2x4xui8>) -> tensor<2x4xui8>
  // CHECK-NEXT: %not = ge.bitwise_not %i : (tensor<3xi32>) -> tensor<3xi32>
  // CHECK-NEXT: %shl = ge.bit_shift %u, %v : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
  // CHECK-NEXT: %shr = ge.bit_shift %u, %v {direction = "right"} : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
  // CHECK-NEXT: func.return
  // GENERIC:      %and = "ge.bitwise_and"(%u, %v) : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
  // GENERIC-NEXT: %or = "ge.bitwise_or"(%i, %i) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  // GENERIC-NEXT: %xor = "ge.bitwise_xor"(%v, %u) : (tensor<4xui8>, tensor<2x4xui8>) -> tensor<2x4xui8>
  // GENERIC-NEXT: %not = "ge.bitwise_not"(%i) : (tensor<3xi32>) -> tensor<3xi32>
  // GENERIC-NEXT: %shl = "ge.bit_shift"(%u, %v) <{direction = "left"}> : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
  // GENERIC-NEXT: %shr = "ge.bit_shift"(%u, %v) <{direction = "right"}> : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
  // GENERIC-NEXT: "func.return"() : () -> ()
  %and = ge.bitwise_and %u, %v : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
  %or = ge.bitwise_or %i, %i : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %xor = ge.bitwise_xor %v, %u : (tensor<4xui8>, tensor<2x4xui8>) -> tensor<2x4xui8>
  %not = ge.bitwise_not %i : (tensor<3xi32>) -> tensor<3xi32>
  %shl = ge.bit_shift %u, %v : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
  %shr = ge.bit_shift %u, %v {direction = "right"} : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
  func.return
}

// Sign on integers and floats, rounding and the trigonometric ops (float only).
// CHECK-LABEL: func.func @rounding(
// GENERIC-LABEL: "func.func"() <{sym_name = "rounding"
func.func @rounding(%f: tensor<8xf32>, %h: tensor<2x4xf16>, %i: tensor<3xi32>, %d: tensor<2xf64>) {
  // CHECK-NEXT: %sign = ge.sign %i : (tensor<3xi32>) -> tensor<3xi32>
  // CHECK-NEXT: %sign_f = ge.sign %h : (tensor<2x4xf16>) -> tensor<2x4xf16>
  // CHECK-NEXT: %floor = ge.floor %f : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK-NEXT: %ceil = ge.ceil %h : (tensor<2x4xf16>) -> tensor<2x4xf16>
  // CHECK-NEXT: %round = ge.round %d : (tensor<2xf64>) -> tensor<2xf64>
  // CHECK-NEXT: %sin = ge.sin %f : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK-NEXT: %cos = ge.cos %h : (tensor<2x4xf16>) -> tensor<2x4xf16>
  // CHECK-NEXT: %tan = ge.tan %d : (tensor<2xf64>) -> tensor<2xf64>
  // CHECK-NEXT: %asin = ge.asin %f : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK-NEXT: %acos = ge.acos %f : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK-NEXT: %atan = ge.atan %f : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK-NEXT: %sinh = ge.sinh %f : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK-NEXT: %cosh = ge.cosh %f : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK-NEXT: %asinh = ge.asinh %f : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK-NEXT: %acosh = ge.acosh %f : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK-NEXT: %atanh = ge.atanh %f : (tensor<8xf32>) -> tensor<8xf32>
  // CHECK-NEXT: func.return
  // GENERIC:      %sign = "ge.sign"(%i) : (tensor<3xi32>) -> tensor<3xi32>
  // GENERIC-NEXT: %sign_f = "ge.sign"(%h) : (tensor<2x4xf16>) -> tensor<2x4xf16>
  // GENERIC-NEXT: %floor = "ge.floor"(%f) : (tensor<8xf32>) -> tensor<8xf32>
  // GENERIC-NEXT: %ceil = "ge.ceil"(%h) : (tensor<2x4xf16>) -> tensor<2x4xf16>
  // GENERIC-NEXT: %round = "ge.round"(%d) : (tensor<2xf64>) -> tensor<2xf64>
  // GENERIC-NEXT: %sin = "ge.sin"(%f) : (tensor<8xf32>) -> tensor<8xf32>
  // GENERIC-NEXT: %cos = "ge.cos"(%h) : (tensor<2x4xf16>) -> tensor<2x4xf16>
  // GENERIC-NEXT: %tan = "ge.tan"(%d) : (tensor<2xf64>) -> tensor<2xf64>
  // GENERIC-NEXT: %asin = "ge.asin"(%f) : (tensor<8xf32>) -> tensor<8xf32>
  // GENERIC-NEXT: %acos = "ge.acos"(%f) : (tensor<8xf32>) -> tensor<8xf32>
  // GENERIC-NEXT: %atan = "ge.atan"(%f) : (tensor<8xf32>) -> tensor<8xf32>
  // GENERIC-NEXT: %sinh = "ge.sinh"(%f) : (tensor<8xf32>) -> tensor<8xf32>
  // GENERIC-NEXT: %cosh = "ge.cosh"(%f) : (tensor<8xf32>) -> tensor<8xf32>
  // GENERIC-NEXT: %asinh = "ge.asinh"(%f) : (tensor<8xf32>) -> tensor<8xf32>
  // GENERIC-NEXT: %acosh = "ge.acosh"(%f) : (tensor<8xf32>) -> tensor<8xf32>
  // GENERIC-NEXT: %atanh = "ge.atanh"(%f) : (tensor<8xf32>) -> tensor<8xf32>
  // GENERIC-NEXT: "func.return"() : () -> ()
  %sign = ge.sign %i : (tensor<3xi32>) -> tensor<3xi32>
  %sign_f = ge.sign %h : (tensor<2x4xf16>) -> tensor<2x4xf16>
  %floor = ge.floor %f : (tensor<8xf32>) -> tensor<8xf32>
  %ceil = ge.ceil %h : (tensor<2x4xf16>) -> tensor<2x4xf16>
  %round = ge.round %d : (tensor<2xf64>) -> tensor<2xf64>
  %sin = ge.sin %f : (tensor<8xf32>) -> tensor<8xf32>
  %cos = ge.cos %h : (tensor<2x4xf16>) -> tensor<2x4xf16>
  %tan = ge.tan %d : (tensor<2xf64>) -> tensor<2xf64>
  %asin = ge.asin %f : (tensor<8xf32>) -> tensor<8xf32>
  %acos = ge.acos %f : (tensor<8xf32>) -> tensor<8xf32>
  %atan = ge.atan %f : (tensor<8xf32>) -> tensor<8xf32>
  %sinh = ge.sinh %f : (tensor<8xf32>) -> tensor<8xf32>
  %cosh = ge.cosh %f : (tensor<8xf32>) -> tensor<8xf32>
  %asinh = ge.asinh %f : (tensor<8xf32>) -> tensor<8xf32>
  %acosh = ge.acosh %f : (tensor<8xf32>) -> tensor<8xf32>
  %atanh = ge.atanh %f : (tensor<8xf32>) -> tensor<8xf32>
  func.return
}
