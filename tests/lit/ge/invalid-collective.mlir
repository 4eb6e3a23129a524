// Every verifier error of the collective ops, one per chunk.
// RUN: ge-opt %s --split-input-file --verify-diagnostics

func.func @main(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'ge.all_reduce' op group [0, 1] must list 4 devices}}
  %0 = ge.all_reduce %x {devices = 4, group = [0, 1]} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  func.return
}

// -----

func.func @main(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'ge.all_reduce' op attribute 'reduction' must be one of sum, max, got 'min'}}
  %0 = ge.all_reduce %x {devices = 2, reduction = "min"} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  func.return
}

// -----

func.func @main(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'ge.all_gather' op result type tensor<4x6xf32> does not match the inferred type tensor<8x6xf32>}}
  %0 = ge.all_gather %x {devices = 2} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  func.return
}

// -----

func.func @main(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'ge.reduce_scatter' op ge.reduce_scatter: dim 1 of size 6 does not split over 4 devices}}
  %0 = ge.reduce_scatter %x {devices = 4, axis = 1} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  func.return
}

// -----

func.func @main(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'ge.all_to_all' op ge.all_to_all: dim 0 of size 4 does not split over 3 devices}}
  %0 = ge.all_to_all %x {devices = 3} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  func.return
}

// -----

func.func @main(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'ge.broadcast' op root 2 is not a rank of a group of 2}}
  %0 = ge.broadcast %x {devices = 2, root = 2} : (tensor<4x6xf32>) -> tensor<4x6xf32>
  func.return
}

// -----

func.func @main(%x: tensor<4x6xi1>) {
  // expected-error @+1 {{'ge.send' op operand must be numeric, got i1}}
  ge.send %x {peer = 1} : (tensor<4x6xi1>) -> ()
  func.return
}

// -----

func.func @main() {
  // expected-error @+1 {{'ge.recv' op peer must be a device id 0 or more, got -1}}
  %0 = ge.recv {peer = -1} : () -> tensor<4x6xf32>
  func.return
}
