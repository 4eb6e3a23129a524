// Upstream cse and dce on ge ops: cse merges ops with equal operands, attributes
// and types (constants included) and nothing else; dce drops unused ge ops only.
// RUN: ge-opt %s -p cse | filecheck %s --check-prefix=CSE
// RUN: ge-opt %s -p dce | filecheck %s --check-prefix=DCE

// CSE-LABEL: func.func @merge
// CSE-NEXT:    %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 1.0> : tensor<4x4xf16>
// CSE-NEXT:    %a = ge.matmul %x, %w : (tensor<2x4xf16>, tensor<4x4xf16>) -> tensor<2x4xf16>
// CSE-NEXT:    %s = ge.add %a, %a
// CSE-NEXT:    func.return %s
func.func @merge(%x: tensor<2x4xf16>) -> tensor<2x4xf16> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 1.0> : tensor<4x4xf16>
  %a = ge.matmul %x, %w : (tensor<2x4xf16>, tensor<4x4xf16>) -> tensor<2x4xf16>
  %w2 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 1.0> : tensor<4x4xf16>
  %b = ge.matmul %x, %w2 : (tensor<2x4xf16>, tensor<4x4xf16>) -> tensor<2x4xf16>
  %s = ge.add %a, %b : (tensor<2x4xf16>, tensor<2x4xf16>) -> tensor<2x4xf16>
  func.return %s : tensor<2x4xf16>
}

// Different attributes, seeds, types or formats are different values.
// CSE-LABEL: func.func @keep
// CSE-COUNT-2: ge.const #ge.random
// CSE-COUNT-2: ge.matmul
// CSE:         ge.leaky_relu %x {alpha = 0.2
// CSE-NEXT:    ge.leaky_relu %x {alpha = 0.3
// CSE-NEXT:    ge.transdata %x {src_format = "ND", dst_format = "FRACTAL_NZ"}
// CSE-NEXT:    ge.transdata %x {src_format = "ND", dst_format = "FRACTAL_Z"}
func.func @keep(%x: tensor<4x4x1x1xf16>, %y: tensor<2x4xf16>) -> (tensor<2x4xf16>, tensor<4x2xf16>, tensor<4x4x1x1xf16>, tensor<4x4x1x1xf16>, tensor<4x4x1x1xf16, #ge.format<FRACTAL_NZ>>, tensor<4x4x1x1xf16, #ge.format<FRACTAL_Z>>) {
  %w1 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 1.0> : tensor<4x4xf16>
  %w2 = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 1.0> : tensor<4x4xf16>
  %a = ge.matmul %y, %w1 : (tensor<2x4xf16>, tensor<4x4xf16>) -> tensor<2x4xf16>
  %b = ge.matmul %w2, %y {transpose_b = true} : (tensor<4x4xf16>, tensor<2x4xf16>) -> tensor<4x2xf16>
  %c = ge.leaky_relu %x {alpha = 0.2} : (tensor<4x4x1x1xf16>) -> tensor<4x4x1x1xf16>
  %d = ge.leaky_relu %x {alpha = 0.3} : (tensor<4x4x1x1xf16>) -> tensor<4x4x1x1xf16>
  %e = ge.transdata %x {src_format = "ND", dst_format = "FRACTAL_NZ"} : (tensor<4x4x1x1xf16>) -> tensor<4x4x1x1xf16, #ge.format<FRACTAL_NZ>>
  %f = ge.transdata %x {src_format = "ND", dst_format = "FRACTAL_Z"} : (tensor<4x4x1x1xf16>) -> tensor<4x4x1x1xf16, #ge.format<FRACTAL_Z>>
  func.return %a, %b, %c, %d, %e, %f : tensor<2x4xf16>, tensor<4x2xf16>, tensor<4x4x1x1xf16>, tensor<4x4x1x1xf16>, tensor<4x4x1x1xf16, #ge.format<FRACTAL_NZ>>, tensor<4x4x1x1xf16, #ge.format<FRACTAL_Z>>
}

// DCE-LABEL: func.func @dead
// DCE-NEXT:    %used = ge.relu %x
// DCE-NEXT:    func.return %used
func.func @dead(%x: tensor<3xf32>) -> tensor<3xf32> {
  %c = ge.const dense<1.0> : tensor<3xf32>
  %unused = ge.add %x, %c : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %chain = ge.exp %unused : (tensor<3xf32>) -> tensor<3xf32>
  %used = ge.relu %x : (tensor<3xf32>) -> tensor<3xf32>
  %parts:2 = ge.split %x {axis = 0, sizes = [1, 2]} : (tensor<3xf32>) -> (tensor<1xf32>, tensor<2xf32>)
  func.return %used : tensor<3xf32>
}
