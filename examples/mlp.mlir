// A two-layer perceptron: (matmul + bias + gelu) twice, fp16, batch 128.
// Run it:    ge-sim examples/mlp.mlir
// Optimise:  ge-opt examples/mlp.mlir -p canonicalize,cse
func.func @main(%x: tensor<128x512xf16> {ge.name = "x"}) -> (tensor<128x512xf16> {ge.name = "y"}) {
  %w1 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.02> : tensor<512x2048xf16>
  %h = ge.matmul %x, %w1 : (tensor<128x512xf16>, tensor<512x2048xf16>) -> tensor<128x2048xf16>
  %b1 = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.02> : tensor<2048xf16>
  %h_bias = ge.bias_add %h, %b1 : (tensor<128x2048xf16>, tensor<2048xf16>) -> tensor<128x2048xf16>
  %h_act = ge.gelu %h_bias : (tensor<128x2048xf16>) -> tensor<128x2048xf16>
  %w2 = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.02> : tensor<2048x512xf16>
  %y = ge.matmul %h_act, %w2 : (tensor<128x2048xf16>, tensor<2048x512xf16>) -> tensor<128x512xf16>
  %b2 = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.02> : tensor<512xf16>
  %y_bias = ge.bias_add %y, %b2 : (tensor<128x512xf16>, tensor<512xf16>) -> tensor<128x512xf16>
  %y_act = ge.gelu %y_bias : (tensor<128x512xf16>) -> tensor<128x512xf16>
  func.return %y_act : tensor<128x512xf16>
}
