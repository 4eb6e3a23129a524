// Every verifier error of the fused ops and fused.group, and the parse errors of
// the optional-operand syntax, one per chunk.
// RUN: ge-opt %s --split-input-file --verify-diagnostics

func.func @main(%x: tensor<8x16xf16>, %w: tensor<16x32xf16>, %b: tensor<16xf16>) {
  // expected-error @+1 {{'fused.matmul_bias_act' op bias must have shape (32) or (1, 32), got tensor<16xf16>}}
  %0 = fused.matmul_bias_act %x, %w bias %b : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<16xf16>) -> tensor<8x32xf16>
  func.return
}

// -----

func.func @main(%x: tensor<8x16xf16>, %w: tensor<16x32xf16>, %r: tensor<2x8x32xf16>) {
  // expected-error @+1 {{'fused.matmul_bias_act' op residual of shape 2x8x32 does not broadcast to 8x32}}
  %0 = fused.matmul_bias_act %x, %w residual %r : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<2x8x32xf16>) -> tensor<8x32xf16>
  func.return
}

// -----

func.func @main(%x: tensor<8x16xf16>, %w: tensor<16x32xf16>, %r: tensor<8x32xf32>) {
  // expected-error @+1 {{'fused.matmul_bias_act' op residual element type f32 differs from f16}}
  %0 = fused.matmul_bias_act %x, %w residual %r : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<8x32xf32>) -> tensor<8x32xf16>
  func.return
}

// -----

func.func @main(%x: tensor<8x16xf16>, %w: tensor<8x32xf16>) {
  // expected-error @+1 {{'fused.matmul_bias_act' op contraction dims differ: lhs K=16, rhs K=8}}
  %0 = fused.matmul_bias_act %x, %w : (tensor<8x16xf16>, tensor<8x32xf16>) -> tensor<8x32xf16>
  func.return
}

// -----

func.func @main(%x: tensor<8x16xf16>, %w: tensor<16x32xf16>) {
  // expected-error @+1 {{'fused.matmul_bias_act' op attribute 'act' must be one of none, relu, gelu, gelu_tanh, silu, sigmoid, relu6, hard_swish, got 'tanh'}}
  %0 = fused.matmul_bias_act %x, %w {act = "tanh"} : (tensor<8x16xf16>, tensor<16x32xf16>) -> tensor<8x32xf16>
  func.return
}

// -----

func.func @main(%x: tensor<8x16xf16>, %w: tensor<16x32xf16>) {
  // expected-error @+1 {{'fused.matmul_bias_act' op result type tensor<8x16xf16> does not match the inferred type tensor<8x32xf16>}}
  %0 = fused.matmul_bias_act %x, %w : (tensor<8x16xf16>, tensor<16x32xf16>) -> tensor<8x16xf16>
  func.return
}

// -----

func.func @main(%x: tensor<8x16xf16>, %w: tensor<16x32xf16>, %b: tensor<32xf16>) {
  // expected-error @+1 {{fused.matmul_bias_act: optional operands must be written in the order bias, residual}}
  %0 = fused.matmul_bias_act %x, %w residual %b bias %b : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<32xf16>, tensor<32xf16>) -> tensor<8x32xf16>
  func.return
}

// -----

func.func @main(%x: tensor<8x16xf16>) {
  // expected-error @+1 {{fused.matmul_bias_act takes 2 operands (lhs, rhs) before the optional ones, got 1}}
  %0 = fused.matmul_bias_act %x : (tensor<8x16xf16>) -> tensor<8x16xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x6x6xf16>, %k: tensor<8x4x3x3xf16>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'fused.conv2d_bias_act' op bias must have shape (8) or (8, 1, 1) or (1, 8, 1, 1), got tensor<4xf16>}}
  %0 = fused.conv2d_bias_act %x, %k bias %b : (tensor<1x4x6x6xf16>, tensor<8x4x3x3xf16>, tensor<4xf16>) -> tensor<1x8x4x4xf16>
  func.return
}

// -----

func.func @main(%x: tensor<1x4x6x6xf16>, %k: tensor<8x2x3x3xf16>) {
  // expected-error @+1 {{'fused.conv2d_bias_act' op weight expects 2 input channels (2 x 1 groups), input has 4}}
  %0 = fused.conv2d_bias_act %x, %k : (tensor<1x4x6x6xf16>, tensor<8x2x3x3xf16>) -> tensor<1x8x4x4xf16>
  func.return
}

// -----

func.func @main(%a: tensor<2x8x4xf16>, %b: tensor<2x4x8xf16>, %m: tensor<8x8xi32>) {
  // expected-error @+1 {{'fused.batch_matmul' op mask must be i1 or f16, got i32}}
  %0 = fused.batch_matmul %a, %b mask %m : (tensor<2x8x4xf16>, tensor<2x4x8xf16>, tensor<8x8xi32>) -> tensor<2x8x8xf16>
  func.return
}

// -----

func.func @main(%a: tensor<2x8x4xf16>, %b: tensor<2x4x8xf16>, %m: tensor<3x8x8xi1>) {
  // expected-error @+1 {{'fused.batch_matmul' op mask of shape 3x8x8 does not broadcast to 2x8x8}}
  %0 = fused.batch_matmul %a, %b mask %m : (tensor<2x8x4xf16>, tensor<2x4x8xf16>, tensor<3x8x8xi1>) -> tensor<2x8x8xf16>
  func.return
}

// -----

func.func @main(%x: tensor<8x16xf16>, %g: tensor<16x32xf16>, %u: tensor<16x16xf16>) {
  // expected-error @+1 {{'fused.gated_matmul' op gate and up products differ: tensor<8x32xf16> vs tensor<8x16xf16>}}
  %0 = fused.gated_matmul %x, %g, %u : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<16x16xf16>) -> tensor<8x32xf16>
  func.return
}

// -----

func.func @main(%x: tensor<8x16xf16>, %g: tensor<16x32xf16>) {
  // expected-error @+1 {{'fused.gated_matmul' op attribute 'act' must be one of relu, gelu, gelu_tanh, silu, sigmoid, relu6, hard_swish, got 'none'}}
  %0 = fused.gated_matmul %x, %g, %g {act = "none"} : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<16x32xf16>) -> tensor<8x32xf16>
  func.return
}

// -----

func.func @main(%x: tensor<8x16xf16>, %w: tensor<16x32xf16>, %r: tensor<8x32xf16>, %g: tensor<16xf16>) {
  // expected-error @+1 {{'fused.matmul_add_layer_norm' op gamma must have the normalized shape 32, got tensor<16xf16>}}
  %0, %1 = fused.matmul_add_layer_norm %x, %w, %r, %g, %g : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<8x32xf16>, tensor<16xf16>, tensor<16xf16>) -> (tensor<8x32xf16>, tensor<8x32xf16>)
  func.return
}

// -----

func.func @main(%x: tensor<8x16xf16>, %w: tensor<16x32xf16>, %r: tensor<8x32xf16>, %g: tensor<32xf16>) {
  // expected-error @+1 {{'fused.matmul_add_rms_norm' op epsilon must be positive, got 0.0}}
  %0, %1 = fused.matmul_add_rms_norm %x, %w, %r, %g {epsilon = 0.0} : (tensor<8x16xf16>, tensor<16x32xf16>, tensor<8x32xf16>, tensor<32xf16>) -> (tensor<8x32xf16>, tensor<8x32xf16>)
  func.return
}

// -----

func.func @main(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'fused.add_layer_norm' op beta must have the normalized shape 8, got tensor<4xf32>}}
  %0, %1 = fused.add_layer_norm %x, %r, %g, %b : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  func.return
}

// -----

func.func @main(%x: tensor<4x8xf32>, %r: tensor<4x8xf16>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'fused.add_rms_norm' op operand element types differ: f32 vs f16}}
  %0, %1 = fused.add_rms_norm %x, %r, %g : (tensor<4x8xf32>, tensor<4x8xf16>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  func.return
}

// -----

func.func @main(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{fused.add_rms_norm takes 2 results, got 1}}
  %0 = fused.add_rms_norm %x, %r, %g : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @main(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'fused.softmax' op dropout ratio must be in [0, 1), got 1.0}}
  %0 = fused.softmax %x {dropout = 1.0} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @main(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'fused.softmax' op axis 2 is out of range for rank 2}}
  %0 = fused.softmax %x {axis = 2} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @main(%g: tensor<4x8xi32>, %u: tensor<4x8xi32>) {
  // expected-error @+1 {{'fused.swiglu' op operand must have a float element type, got i32}}
  %0 = fused.swiglu %g, %u : (tensor<4x8xi32>, tensor<4x8xi32>) -> tensor<4x8xi32>
  func.return
}

// -----

func.func @main(%g: tensor<4x8xf32>, %u: tensor<4x3xf32>) {
  // expected-error @+1 {{'fused.swiglu' op operands are not broadcast-compatible: 4x8 vs 4x3}}
  %0 = fused.swiglu %g, %u : (tensor<4x8xf32>, tensor<4x3xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @main(%q: tensor<2x8x4xf16>, %k: tensor<3x6x4xf16>, %v: tensor<2x6x5xf16>) {
  // expected-error @+1 {{'fused.flash_attention' op batch dims differ: (2,), (3,), (2,)}}
  %0 = fused.flash_attention %q, %k, %v : (tensor<2x8x4xf16>, tensor<3x6x4xf16>, tensor<2x6x5xf16>) -> tensor<2x8x5xf16>
  func.return
}

// -----

func.func @main(%q: tensor<2x8x4xf16>, %k: tensor<2x6x3xf16>, %v: tensor<2x6x5xf16>) {
  // expected-error @+1 {{'fused.flash_attention' op query and key head dims differ: 4 vs 3}}
  %0 = fused.flash_attention %q, %k, %v : (tensor<2x8x4xf16>, tensor<2x6x3xf16>, tensor<2x6x5xf16>) -> tensor<2x8x5xf16>
  func.return
}

// -----

func.func @main(%q: tensor<2x8x4xf16>, %k: tensor<2x6x4xf16>, %v: tensor<2x7x5xf16>) {
  // expected-error @+1 {{'fused.flash_attention' op key and value sequence lengths differ: 6 vs 7}}
  %0 = fused.flash_attention %q, %k, %v : (tensor<2x8x4xf16>, tensor<2x6x4xf16>, tensor<2x7x5xf16>) -> tensor<2x8x5xf16>
  func.return
}

// -----

func.func @main(%q: tensor<8x12xf16>, %k: tensor<6x12xf16>, %v: tensor<6x6xf16>) {
  // expected-error @+1 {{'fused.flash_attention' op num_heads=5 must divide the query hidden dim 12}}
  %0 = fused.flash_attention %q, %k, %v {layout = "BSH", num_heads = 5} : (tensor<8x12xf16>, tensor<6x12xf16>, tensor<6x6xf16>) -> tensor<8x6xf16>
  func.return
}

// -----

func.func @main(%q: tensor<2x8x4xf16>, %k: tensor<2x6x4xf16>, %v: tensor<2x6x5xf16>) {
  // expected-error @+1 {{'fused.flash_attention' op num_heads applies to layout BSH only}}
  %0 = fused.flash_attention %q, %k, %v {num_heads = 2} : (tensor<2x8x4xf16>, tensor<2x6x4xf16>, tensor<2x6x5xf16>) -> tensor<2x8x5xf16>
  func.return
}

// -----

func.func @main(%q: tensor<2x8x4xf16>, %k: tensor<2x6x4xf16>, %v: tensor<2x6x5xf16>) {
  // expected-error @+1 {{'fused.flash_attention' op attribute 'layout' must be one of BNSD, BSH, got 'SBH'}}
  %0 = fused.flash_attention %q, %k, %v {layout = "SBH"} : (tensor<2x8x4xf16>, tensor<2x6x4xf16>, tensor<2x6x5xf16>) -> tensor<2x8x5xf16>
  func.return
}

// -----

func.func @main(%x: tensor<4x8xf16>) {
  // expected-error @+1 {{'fused.group' op fused.yield operand types must be the group's result types}}
  %0 = fused.group %x : (tensor<4x8xf16>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf16>):
    fused.yield %a : tensor<4x8xf16>
  }
  func.return
}

// -----

func.func @main(%x: tensor<4x8xf16>) {
  // expected-error @+1 {{'fused.group' op body arguments must have the types of the group's operands}}
  %0 = fused.group %x : (tensor<4x8xf16>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    fused.yield %a : tensor<4x8xf32>
  }
  func.return
}

// -----

func.func @main(%x: tensor<4x8xf16>, %w: tensor<8x8xf16>) {
  // expected-error @+1 {{'fused.group' op a group holds at most one cube op, found 2}}
  %0 = fused.group %x, %w : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16> {
  ^bb0(%a: tensor<4x8xf16>, %b: tensor<8x8xf16>):
    %1 = ge.matmul %a, %b : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16>
    %2 = ge.matmul %1, %b : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16>
    fused.yield %2 : tensor<4x8xf16>
  }
  func.return
}

// -----

func.func @main(%x: tensor<1x2x4x4xf16>) {
  // expected-error @+1 {{'fused.group' op 'ge.max_pool2d' cannot be part of a fused kernel}}
  %0 = fused.group %x : (tensor<1x2x4x4xf16>) -> tensor<1x2x2x2xf16> {
  ^bb0(%a: tensor<1x2x4x4xf16>):
    %1 = ge.max_pool2d %a {kernel = [2, 2], strides = [2, 2]} : (tensor<1x2x4x4xf16>) -> tensor<1x2x2x2xf16>
    fused.yield %1 : tensor<1x2x2x2xf16>
  }
  func.return
}

// -----

func.func @main(%x: tensor<4x8xf16>, %g: tensor<8xf16>) {
  // expected-error @+1 {{'fused.group' op body may hold ge ops only, found 'fused.swiglu'}}
  %0 = fused.group %x : (tensor<4x8xf16>) -> tensor<4x8xf16> {
  ^bb0(%a: tensor<4x8xf16>):
    %1 = fused.swiglu %a, %a : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
    fused.yield %1 : tensor<4x8xf16>
  }
  func.return
}

// -----

func.func @main(%x: tensor<4x8xf16>) {
  // expected-error @+1 {{'fused.group' op Operation using value defined out of its IsolatedFromAbove parent}}
  %0 = fused.group : () -> tensor<4x8xf16> {
    %1 = ge.relu %x : (tensor<4x8xf16>) -> tensor<4x8xf16>
    fused.yield %1 : tensor<4x8xf16>
  }
  func.return
}

// -----

func.func @main(%x: tensor<4x8xf16>) {
  // expected-error @+1 {{'fused.yield' op 'fused.yield' expects parent op 'fused.group'}}
  fused.yield %x : tensor<4x8xf16>
}

// -----

func.func @main(%x: tensor<8x48xf16>, %w: tensor<48x32xf16>) {
  // expected-error @+1 {{'fused.matmul_partials' op splits must be at least 2 and cut K = 48 into whole 16-element blocks, got 2}}
  %0 = fused.matmul_partials %x, %w {splits = 2} : (tensor<8x48xf16>, tensor<48x32xf16>) -> tensor<2x8x32xf32>
  func.return
}

// -----

func.func @main(%p: tensor<2x8x32xf16>, %r: tensor<8x32xf16>, %g: tensor<32xf16>) {
  // expected-error @+1 {{'fused.partials_add_rms_norm' op partials must be (splits, M, N) f32, got tensor<2x8x32xf16>}}
  %y, %s = fused.partials_add_rms_norm %p, %r, %g : (tensor<2x8x32xf16>, tensor<8x32xf16>, tensor<32xf16>) -> (tensor<8x32xf16>, tensor<8x32xf16>)
  func.return
}

// -----

func.func @main(%x: tensor<1x48x7x7xf32>, %w: tensor<32x48x1x1xf32>) {
  // expected-error @+1 {{'fused.conv2d_partials' op splits must be at least 2 and divide the 48 input channels, got 5}}
  %p = fused.conv2d_partials %x, %w {splits = 5} : (tensor<1x48x7x7xf32>, tensor<32x48x1x1xf32>) -> tensor<5x32x7x7xf32>
  func.return
}

// -----

func.func @main(%p: tensor<4x32x7x7xf16>) {
  // expected-error @+1 {{'fused.conv_partials_bias_act' op partials must be (splits x N, O, H, W) f32 of 2 or more splits for a result tensor<1x32x7x7xf32>, got tensor<4x32x7x7xf16>}}
  %y = fused.conv_partials_bias_act %p : (tensor<4x32x7x7xf16>) -> tensor<1x32x7x7xf32>
  func.return
}
