// ge-layout: the cube's formats, transdata only where formats change, and
// format-agnostic ops running in the physical format.
// RUN: ge-opt %s -p ge-layout | filecheck %s
// RUN: ge-opt %s -p 'ge-layout{propagate=false}' | filecheck %s --check-prefix=NOPROP

// matmul -> bias -> gelu -> matmul stays in FRACTAL_NZ: one conversion in, one out.
// CHECK-LABEL: func.func @mlp
// CHECK-NEXT:    %x_nz = ge.transdata %x {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<20x33xf16>) -> tensor<20x33xf16, #ge.format<FRACTAL_NZ>>
// CHECK-NEXT:    %w1_nz = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.1> : tensor<33x40xf16, #ge.format<FRACTAL_NZ>>
// CHECK-NEXT:    %h_nz = ge.matmul %x_nz, %w1_nz : {{.*}} -> tensor<20x40xf16, #ge.format<FRACTAL_NZ>>
// CHECK-NEXT:    %b = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.1> : tensor<40xf16>
// CHECK-NEXT:    %hb_nz = ge.add %h_nz, %b : (tensor<20x40xf16, #ge.format<FRACTAL_NZ>>, tensor<40xf16>) -> tensor<20x40xf16, #ge.format<FRACTAL_NZ>>
// CHECK-NEXT:    %g_nz = ge.gelu %hb_nz : {{.*}} -> tensor<20x40xf16, #ge.format<FRACTAL_NZ>>
// CHECK-NEXT:    %w2_nz = ge.const
// CHECK-NEXT:    %y_nz = ge.matmul %g_nz, %w2_nz
// CHECK-NEXT:    %y = ge.transdata %y_nz {src_format = "FRACTAL_NZ", dst_format = "ND"}
// CHECK-NEXT:    func.return %y
// NOPROP-LABEL: func.func @mlp
// NOPROP-COUNT-4: ge.transdata
// NOPROP-NOT:   ge.transdata
// NOPROP:       func.return
func.func @mlp(%x: tensor<20x33xf16>) -> tensor<20x17xf16> {
  %w1 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.1> : tensor<33x40xf16>
  %h = ge.matmul %x, %w1 : (tensor<20x33xf16>, tensor<33x40xf16>) -> tensor<20x40xf16>
  %b = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.1> : tensor<40xf16>
  %hb = ge.add %h, %b : (tensor<20x40xf16>, tensor<40xf16>) -> tensor<20x40xf16>
  %g = ge.gelu %hb : (tensor<20x40xf16>) -> tensor<20x40xf16>
  %w2 = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.1> : tensor<40x17xf16>
  %y = ge.matmul %g, %w2 : (tensor<20x40xf16>, tensor<40x17xf16>) -> tensor<20x17xf16>
  func.return %y : tensor<20x17xf16>
}

// conv: NC1HWC0 activations, FRACTAL_Z weights; bias_add over channels, relu,
// pooling and the residual add run in NC1HWC0 (x is converted once for both uses).
// CHECK-LABEL: func.func @conv_block
// CHECK-NEXT:    %x_5hd = ge.transdata %x {src_format = "ND", dst_format = "NC1HWC0"}
// CHECK-NEXT:    %w_fz = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.1> : tensor<20x20x3x3xf32, #ge.format<FRACTAL_Z>>
// CHECK-NEXT:    %c_5hd = ge.conv2d %x_5hd, %w_fz {pads = [1, 1, 1, 1]} : (tensor<1x20x6x6xf32, #ge.format<NC1HWC0>>, tensor<20x20x3x3xf32, #ge.format<FRACTAL_Z>>) -> tensor<1x20x6x6xf32, #ge.format<NC1HWC0>>
// CHECK-NEXT:    %b = ge.const
// CHECK-NEXT:    %cb_5hd = ge.bias_add %c_5hd, %b {axis = 1}
// CHECK-NEXT:    %r_5hd = ge.relu %cb_5hd
// CHECK-NEXT:    %s_5hd = ge.add %r_5hd, %x_5hd
// CHECK-NEXT:    %p_5hd = ge.max_pool2d %s_5hd {kernel = [2, 2], strides = [2, 2]} : (tensor<1x20x6x6xf32, #ge.format<NC1HWC0>>) -> tensor<1x20x3x3xf32, #ge.format<NC1HWC0>>
// CHECK-NEXT:    %p = ge.transdata %p_5hd {src_format = "NC1HWC0", dst_format = "ND"}
// CHECK-NEXT:    func.return %p
func.func @conv_block(%x: tensor<1x20x6x6xf32>) -> tensor<1x20x3x3xf32> {
  %w = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.1> : tensor<20x20x3x3xf32>
  %c = ge.conv2d %x, %w {pads = [1, 1, 1, 1]} : (tensor<1x20x6x6xf32>, tensor<20x20x3x3xf32>) -> tensor<1x20x6x6xf32>
  %b = ge.const #ge.random<normal, seed = 5, mean = 0.0, std = 0.1> : tensor<20xf32>
  %cb = ge.bias_add %c, %b {axis = 1} : (tensor<1x20x6x6xf32>, tensor<20xf32>) -> tensor<1x20x6x6xf32>
  %r = ge.relu %cb : (tensor<1x20x6x6xf32>) -> tensor<1x20x6x6xf32>
  %s = ge.add %r, %x : (tensor<1x20x6x6xf32>, tensor<1x20x6x6xf32>) -> tensor<1x20x6x6xf32>
  %p = ge.max_pool2d %s {kernel = [2, 2], strides = [2, 2]} : (tensor<1x20x6x6xf32>) -> tensor<1x20x3x3xf32>
  func.return %p : tensor<1x20x3x3xf32>
}

// softmax reduces over a padded axis: it gets ND data, between two conversions.
// CHECK-LABEL: func.func @attention_probs
// CHECK:         %s_nz = ge.batch_matmul
// CHECK:         %m_nz = ge.mul %s_nz, %scale
// CHECK-NEXT:    %m = ge.transdata %m_nz {src_format = "FRACTAL_NZ", dst_format = "ND"}
// CHECK-NEXT:    %p = ge.softmax %m : (tensor<2x8x8xf16>) -> tensor<2x8x8xf16>
// CHECK-NEXT:    %p_nz = ge.transdata %p {src_format = "ND", dst_format = "FRACTAL_NZ"}
// CHECK:         ge.batch_matmul %p_nz
func.func @attention_probs(%q: tensor<2x8x4xf16>, %k: tensor<2x8x4xf16>, %v: tensor<2x8x4xf16>) -> tensor<2x8x4xf16> {
  %s = ge.batch_matmul %q, %k {transpose_b = true} : (tensor<2x8x4xf16>, tensor<2x8x4xf16>) -> tensor<2x8x8xf16>
  %scale = ge.const dense<0.5> : tensor<f16>
  %m = ge.mul %s, %scale : (tensor<2x8x8xf16>, tensor<f16>) -> tensor<2x8x8xf16>
  %p = ge.softmax %m : (tensor<2x8x8xf16>) -> tensor<2x8x8xf16>
  %c = ge.batch_matmul %p, %v : (tensor<2x8x8xf16>, tensor<2x8x4xf16>) -> tensor<2x8x4xf16>
  func.return %c : tensor<2x8x4xf16>
}

// Moving the add into FRACTAL_NZ would convert y in and the sum back out: two
// conversions instead of one, so the add stays in ND.
// CHECK-LABEL: func.func @residual_not_worth_moving
// CHECK:         %m = ge.transdata %m_nz {src_format = "FRACTAL_NZ", dst_format = "ND"}
// CHECK-NEXT:    %s = ge.add %m, %y : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    func.return %s
func.func @residual_not_worth_moving(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %m = ge.matmul %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = ge.add %m, %y : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %s : tensor<4x4xf32>
}

// A bias along the rows (a column vector) does not line up with NZ fractals, and
// a cast f32 -> f16 changes C0 of NC1HWC0 (8 -> 16): both stay in ND, although
// converting the smaller f16 result would be cheaper.
// CHECK-LABEL: func.func @not_format_agnostic
// CHECK:         %m = ge.transdata %m_nz
// CHECK-NEXT:    %r = ge.add %m, %col : (tensor<4x8xf16>, tensor<4x1xf16>) -> tensor<4x8xf16>
// CHECK:         %c = ge.transdata %c_5hd
// CHECK-NEXT:    %f = ge.cast %c : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf16>
func.func @not_format_agnostic(%x: tensor<4x8xf16>, %w: tensor<8x8xf16>, %col: tensor<4x1xf16>, %i: tensor<1x4x3x3xf32>, %k: tensor<4x4x1x1xf32>) -> (tensor<4x8xf16>, tensor<1x4x3x3xf16>) {
  %m = ge.matmul %x, %w : (tensor<4x8xf16>, tensor<8x8xf16>) -> tensor<4x8xf16>
  %r = ge.add %m, %col : (tensor<4x8xf16>, tensor<4x1xf16>) -> tensor<4x8xf16>
  %c = ge.conv2d %i, %k : (tensor<1x4x3x3xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x3x3xf32>
  %f = ge.cast %c : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf16>
  func.return %r, %f : tensor<4x8xf16>, tensor<1x4x3x3xf16>
}

// The same cast after a matmul moves: FRACTAL_NZ has 16 x 16 fractals for both.
// CHECK-LABEL: func.func @cast_in_fractal_nz
// CHECK:         %f_nz = ge.cast %m_nz : (tensor<4x8xf32, #ge.format<FRACTAL_NZ>>) -> tensor<4x8xf16, #ge.format<FRACTAL_NZ>>
// CHECK-NEXT:    %f = ge.transdata %f_nz
func.func @cast_in_fractal_nz(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf16> {
  %m = ge.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %f = ge.cast %m : (tensor<4x8xf32>) -> tensor<4x8xf16>
  func.return %f : tensor<4x8xf16>
}

// Integer matmuls are not given cube formats.
// CHECK-LABEL: func.func @integer_matmul
// CHECK-NOT:     ge.transdata
// CHECK:         func.return
func.func @integer_matmul(%x: tensor<4x8xi32>, %w: tensor<8x8xi32>) -> tensor<4x8xi32> {
  %m = ge.matmul %x, %w : (tensor<4x8xi32>, tensor<8x8xi32>) -> tensor<4x8xi32>
  func.return %m : tensor<4x8xi32>
}
