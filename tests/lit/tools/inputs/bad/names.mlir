func.func @main(%x: tensor<4xf32> {ge.name = "a"}, %y: tensor<4xf32> {ge.name = "a"}) -> tensor<4xf32> {
  %z = ge.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %z : tensor<4xf32>
}
