// A CLIP-style feed-forward input: a matmul then QuickGELU (x * sigmoid(1.702 x)),
// which examples/patterns/quick_gelu.py fuses into one kernel.
func.func @main(%x: tensor<128x256xf16> {ge.name = "x"}) -> (tensor<128x512xf16> {ge.name = "y"}) {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.05> : tensor<256x512xf16>
  %h = ge.matmul %x, %w : (tensor<128x256xf16>, tensor<256x512xf16>) -> tensor<128x512xf16>
  %k = ge.const dense<1.702> : tensor<f16>
  %s = ge.mul %h, %k : (tensor<128x512xf16>, tensor<f16>) -> tensor<128x512xf16>
  %g = ge.sigmoid %s : (tensor<128x512xf16>) -> tensor<128x512xf16>
  %y = ge.mul %h, %g : (tensor<128x512xf16>, tensor<128x512xf16>) -> tensor<128x512xf16>
  func.return %y : tensor<128x512xf16>
}
