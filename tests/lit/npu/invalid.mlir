// Verifier errors of the npu dialect, each with its message.
// RUN: ge-opt %s --split-input-file --verify-diagnostics

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %l = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<l0a>>
  // expected-error @+1 {{cannot copy gm->l0a}}
  npu.copy %g[%c0], %l[%c0] {cols = 1024}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %u = npu.alloc {offset = 0} : memref<1024xf32, #npu.space<ub>>
  // expected-error @+1 {{operands must have one element type, got f16, f32}}
  npu.copy %g[%c0], %u[%c0] {cols = 1024}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %u = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<ub>>
  // expected-error @+1 {{operand #0 touches 1920 elements from its offset but its buffer memref<1024xf16, #npu.space<gm>> has 1024}}
  npu.copy %g[%c0], %u[%c0] {rows = 8, cols = 128, strides = [256, 128]}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %u = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<ub>>
  // expected-error @+1 {{'strides' needs one row stride per buffer operand (2), got 1}}
  npu.copy %g[%c0], %u[%c0] {cols = 1024, strides = [1024]}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %u = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<ub>>
  // expected-error @+1 {{operand #1 is written: its row stride 16 must be >= its 32 columns}}
  npu.copy %g[%c0], %u[%c0] {rows = 4, cols = 32, strides = [32, 16]}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %u = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<ub>>
  // expected-error @+1 {{'col_strides' entries must be 0 (broadcast) or 1, got [1, 2, 1]}}
  npu.vadd %u[%c0], %u[%c0], %u[%c0] {cols = 64, col_strides = [1, 2, 1]}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %u = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<ub>>
  // expected-error @+1 {{the destination (last operand) is written: its column stride must be 1}}
  npu.vadd %u[%c0], %u[%c0], %u[%c0] {cols = 64, col_strides = [1, 1, 0]}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %l = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<l1>>
  // expected-error @+1 {{operand #0 must be in ub, got a buffer in l1}}
  npu.vexp %l[%c0], %l[%c0] {cols = 64}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %u = npu.alloc {offset = 0} : memref<1024xi32, #npu.space<ub>>
  // expected-error @+1 {{needs a float element type, got i32}}
  npu.vexp %u[%c0], %u[%c0] {cols = 64}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %u = npu.alloc {offset = 0} : memref<1024xi32, #npu.space<ub>>
  // expected-error @+1 {{needs a float element type, got i32}}
  npu.vsin %u[%c0], %u[%c0] {cols = 64}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %u = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<ub>>
  // expected-error @+1 {{the mask (operand #2) must be i1, got f16}}
  npu.vcmp %u[%c0], %u[%c0], %u[%c0] {cols = 64, cmp = "lt"}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %u = npu.alloc {offset = 0} : memref<1024xi1, #npu.space<ub>>
  // expected-error @+1 {{attribute 'cmp' must be one of eq, ne, lt, le, gt, ge, got 'less'}}
  npu.vcmps %u[%c0], %u[%c0] {cols = 64, cmp = "less", scalar = 0.0}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %l = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<l1>>
  %a = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<l0a>>
  // expected-error @+1 {{operand #0 in nz layout needs a multiple of 16 columns, got 24}}
  npu.load_l0 %l[%c0], %a[%c0] {rows = 16, cols = 24, layout = "nz"}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %a = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<l0a>>
  %b = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<l0b>>
  %c = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<l0c>>
  // expected-error @+1 {{C must be f32 for f16 inputs, got f16}}
  npu.mmad %a[%c0], %b[%c0], %c[%c0] {m = 16, n = 16, k = 16}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %a = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<l0b>>
  %c = npu.alloc {offset = 0} : memref<1024xf32, #npu.space<l0c>>
  // expected-error @+1 {{A must be in l0a, got a buffer in l0b}}
  npu.mmad %a[%c0], %a[%c0], %c[%c0] {m = 16, n = 16, k = 16}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %c = npu.alloc {offset = 0} : memref<1024xf32, #npu.space<l0c>>
  %u = npu.alloc {offset = 0} : memref<1024xi32, #npu.space<ub>>
  // expected-error @+1 {{cannot convert f32 to i32 (allowed: f32, f16, bf16)}}
  npu.fixpipe %c[%c0], %u[%c0] {rows = 16, cols = 16}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  // expected-error @+1 {{a flag links two different pipes, got V -> V}}
  npu.set_flag {src = "V", dst = "V", event = 0}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  // expected-error @+1 {{attribute 'pipe' must be one of S, MTE1, MTE2, MTE3, M, V, FIX, ALL, got 'VEC'}}
  npu.pipe_barrier {pipe = "VEC"}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 2} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %c2 step %c1 {
    // expected-error @+1 {{must stand at the top level of the npu.kernel body (every block must meet it the same number of times), not inside a loop or a branch}}
    npu.sync_all
  }
}

// -----

npu.kernel @k() attributes {block_dim = 1} {
  // expected-error @+1 {{must be followed by its 'npu.sync_all_wait' before any other barrier}}
  npu.sync_all_arrive
  npu.sync_all
}

// -----

npu.kernel @k() attributes {block_dim = 1} {
  // expected-error @+1 {{must follow its 'npu.sync_all_arrive', with no other barrier between them}}
  npu.sync_all_wait
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  // expected-error @+1 {{the result must be in l1, l0a, l0b, l0c, ub, got a buffer in gm}}
  %a = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<gm>>
}

// -----

func.func @main() {
  // expected-error @+1 {{must be inside an npu.kernel}}
  %a = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<ub>>
  func.return
}

// -----

// expected-error @+1 {{argument #0 must be a memref in gm, got memref<1024xf16, #npu.space<ub>>}}
npu.kernel @k(%u: memref<1024xf16, #npu.space<ub>>) attributes {block_dim = 1} {
}

// -----

// expected-error @+1 {{block_dim must be >= 1, got 0}}
npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 0} {
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
}
func.func @main(%x: memref<1024xf16, #npu.space<gm>>) {
  // expected-error @+1 {{@nope is not an npu.kernel of this module}}
  npu.launch @nope(%x)
  func.return
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
}
func.func @main(%x: memref<512xf16, #npu.space<gm>>) {
  // expected-error @+1 {{argument #0 is memref<512xf16, #npu.space<gm>>, @k expects memref<1024xf16, #npu.space<gm>>}}
  npu.launch @k(%x)
  func.return
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  // expected-error @+1 {{belongs to the host plan (a func.func), not to a kernel}}
  %t = npu.gm_buffer {offset = 0} : memref<1024xf16, #npu.space<gm>>
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %l = npu.alloc {offset = 0} : memref<1024xi32, #npu.space<l1>>
  // expected-error @+1 {{operand must be in ub, gm, got a buffer in l1}}
  %s = npu.read_scalar %l[%c0] : index
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %u = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<ub>>
  // expected-error @+1 {{npu.vadd has no attribute 'size' (it has: rows, cols, strides, col_strides)}}
  npu.vadd %u[%c0], %u[%c0], %u[%c0] {size = 64}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %u = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<ub>>
  // expected-error @+1 {{npu.vadd takes %lhs[%offset], %rhs[%offset], %dst[%offset]}}
  npu.vadd %u[%c0], %u, %u[%c0] {cols = 64}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %u = npu.alloc {offset = 0} : memref<1024xi32, #npu.space<ub>>
  // expected-error @+1 {{npu.read_scalar needs its result type: ': <type>'}}
  %s = npu.read_scalar %u[%c0]
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{value %nope is used before it is defined}}
  npu.copy %g[%c0], %nope[%c0] {cols = 64}
}

// -----

func.func @main() {
  // expected-error @+1 {{result shape [16, 16] is not the physical shape [1, 1, 16, 16] of tensor<16x16xf16, #ge.format<FRACTAL_NZ>>}}
  %w = npu.gm_constant {value = #ge.random<normal, seed = 3, mean = 0.0, std = 0.02>, logical = tensor<16x16xf16, #ge.format<FRACTAL_NZ>>} : memref<16x16xf16, #npu.space<gm>>
  func.return
}

// -----

func.func @main() {
  // expected-error @+1 {{element type f32 differs from the value's f16}}
  %w = npu.gm_constant {value = #ge.random<normal, seed = 3, mean = 0.0, std = 0.02>, logical = tensor<16xf16>} : memref<16xf32, #npu.space<gm>>
  func.return
}

// -----

func.func @main() {
  // expected-error @+1 {{npu.gm_constant needs 'logical' in its attribute dictionary}}
  %w = npu.gm_constant {value = dense<1.0> : tensor<4xf32>} : memref<4xf32, #npu.space<gm>>
  func.return
}

// -----

func.func @main(%x: memref<512xf16, #npu.space<gm>>) {
  // expected-error @+1 {{cannot view memref<512xf16, #npu.space<gm>> as memref<4x64xf16, #npu.space<gm>>: element type and count must agree}}
  %v = npu.gm_view %x : memref<4x64xf16, #npu.space<gm>>
  func.return
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %u = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<ub>>
  // expected-error @+1 {{needs an integer element type, got f16}}
  npu.vxor %u[%c0], %u[%c0], %u[%c0] {cols = 256}
}

// -----

npu.kernel @k(%g: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
  %c0 = arith.constant 0 : index
  %u = npu.alloc {offset = 0} : memref<1024xf32, #npu.space<ub>>
  // expected-error @+1 {{needs an integer element type, got f32}}
  npu.vnot %u[%c0], %u[%c0] {cols = 256}
}
