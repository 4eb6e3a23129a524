func.func @main(%x: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  func.return %x : tensor<4xcomplex<f32>>
}
