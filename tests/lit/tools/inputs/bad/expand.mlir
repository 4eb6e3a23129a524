func.func @main(%x: tensor<1xf32>) -> tensor<100000000000xf32> {
  %y = ge.expand %x : (tensor<1xf32>) -> tensor<100000000000xf32>
  func.return %y : tensor<100000000000xf32>
}
