func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = ge.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  %z = ge.add %y, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %z : tensor<4xf32>
}
