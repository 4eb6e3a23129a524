// A ResNet basic block on 1x64x56x56 fp16: conv3x3-bn-relu, conv3x3-bn,
// residual add, relu. Batch norms are inference ones with constant statistics,
// which ge-graph-opt folds into the convolutions.
func.func @main(%x: tensor<1x64x56x56xf16> {ge.name = "x"}) -> (tensor<1x64x56x56xf16> {ge.name = "y"}) {
  %conv1_w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.06> : tensor<64x64x3x3xf16>
  %conv1 = ge.conv2d %x, %conv1_w {pads = [1, 1, 1, 1]} : (tensor<1x64x56x56xf16>, tensor<64x64x3x3xf16>) -> tensor<1x64x56x56xf16>
  %bn1_scale = ge.const #ge.random<uniform, seed = 2, low = 0.8, high = 1.2> : tensor<64xf16>
  %bn1_bias = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.1> : tensor<64xf16>
  %bn1_mean = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.1> : tensor<64xf16>
  %bn1_var = ge.const #ge.random<uniform, seed = 5, low = 0.5, high = 1.5> : tensor<64xf16>
  %bn1 = ge.batch_norm %conv1, %bn1_scale, %bn1_bias, %bn1_mean, %bn1_var : (tensor<1x64x56x56xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>) -> tensor<1x64x56x56xf16>
  %relu1 = ge.relu %bn1 : (tensor<1x64x56x56xf16>) -> tensor<1x64x56x56xf16>
  %conv2_w = ge.const #ge.random<normal, seed = 6, mean = 0.0, std = 0.06> : tensor<64x64x3x3xf16>
  %conv2 = ge.conv2d %relu1, %conv2_w {pads = [1, 1, 1, 1]} : (tensor<1x64x56x56xf16>, tensor<64x64x3x3xf16>) -> tensor<1x64x56x56xf16>
  %bn2_scale = ge.const #ge.random<uniform, seed = 7, low = 0.8, high = 1.2> : tensor<64xf16>
  %bn2_bias = ge.const #ge.random<normal, seed = 8, mean = 0.0, std = 0.1> : tensor<64xf16>
  %bn2_mean = ge.const #ge.random<normal, seed = 9, mean = 0.0, std = 0.1> : tensor<64xf16>
  %bn2_var = ge.const #ge.random<uniform, seed = 10, low = 0.5, high = 1.5> : tensor<64xf16>
  %bn2 = ge.batch_norm %conv2, %bn2_scale, %bn2_bias, %bn2_mean, %bn2_var : (tensor<1x64x56x56xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>, tensor<64xf16>) -> tensor<1x64x56x56xf16>
  %residual = ge.add %bn2, %x : (tensor<1x64x56x56xf16>, tensor<1x64x56x56xf16>) -> tensor<1x64x56x56xf16>
  %out = ge.relu %residual : (tensor<1x64x56x56xf16>) -> tensor<1x64x56x56xf16>
  func.return %out : tensor<1x64x56x56xf16>
}
