func.func @main(%x: tensor<2x3xf32> {ge.name = "x"}) -> tensor<2x3xf32> {
  %y = ge.tanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
