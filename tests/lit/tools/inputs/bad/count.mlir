func.func @main() -> tensor<4xf32> {
  %c = ge.const dense<[1.0, 2.0, 3.0]> : tensor<4xf32>
  func.return %c : tensor<4xf32>
}
