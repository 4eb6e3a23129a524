// ge-partition on a two-matmul block (matmul, bias, gelu, matmul): tensor
// parallelism splits the first weight by columns and the second by rows, one
// all_reduce before the second bias; data parallelism slices the batch and
// gathers the output; pipeline parallelism with 2 micro-batches sends each
// half of the batch from stage 0 to stage 1, which concatenates the outputs; chunks=2
// runs the row-parallel matmul and what follows in two chunks of rows (the shortest
// row-independent tail whose collectives read their chunk's own product), chunk 1's
// matmul between chunk 0's all_reduce and its bias, the outputs concatenated; token-split=always
// reduce-scatters the partial sums by rows, adds the bias to this device's rows and
// gathers the outputs (by default the estimate calls that a tie here: all_reduce). Weights are small dense constants, sliced at compile time.
// RUN: ge-opt %s -p 'ge-partition{devices=2 strategy=tp}' | filecheck %s --check-prefix=TP
// RUN: ge-opt %s -p 'ge-partition{devices=2 strategy=dp}' | filecheck %s --check-prefix=DP
// RUN: ge-opt %s -p 'ge-partition{devices=2 strategy=pp micro-batches=2}' | filecheck %s --check-prefix=PP
// RUN: ge-sim %s --devices 2 --pipeline 'ge-partition{devices=2 strategy=tp}' --check | filecheck %s --check-prefix=SIM
// RUN: ge-opt %s -p 'ge-partition{devices=2 strategy=tp chunks=2}' | filecheck %s --check-prefix=CHUNKS
// RUN: ge-opt %s -p 'ge-partition{devices=2 strategy=tp token-split=always}' | filecheck %s --check-prefix=TOKENS
// RUN: ge-sim %s --devices 2 --pipeline 'ge-partition{devices=2 strategy=tp token-split=always}' --check | filecheck %s --check-prefix=SIM
// RUN: ge-sim %s --devices 2 --pipeline 'ge-partition{devices=2 strategy=tp chunks=2}' --check | filecheck %s --check-prefix=SIM

// TP: builtin.module attributes {ge.devices = 2 : i64} {
// TP-LABEL: func.func @device0(%x: tensor<4x4xf32>) -> tensor<4x2xf32> attributes {ge.device = 0 : i64} {
// TP-NEXT:    %w1 = ge.const dense<{{\[\[}}1.000000e+00, 2.000000e+00], [5.000000e+00, 6.000000e+00], [9.000000e+00, 1.000000e+01], [1.300000e+01, 1.400000e+01]]> : tensor<4x2xf32>
// TP-NEXT:    %h = ge.matmul %x, %w1 : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
// TP-NEXT:    %b1 = ge.const dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// TP-NEXT:    %hb = ge.bias_add %h, %b1 : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
// TP-NEXT:    %a = ge.gelu %hb : (tensor<4x2xf32>) -> tensor<4x2xf32>
// TP-NEXT:    %w2 = ge.const dense<{{\[\[}}1.000000e+00, -1.000000e+00], [2.000000e+00, -2.000000e+00]]> : tensor<2x2xf32>
// TP-NEXT:    %y = ge.matmul %a, %w2 : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
// TP-NEXT:    %y_1 = ge.all_reduce %y {devices = 2} : (tensor<4x2xf32>) -> tensor<4x2xf32>
// TP-NEXT:    %b2 = ge.const dense<[5.000000e-01, -5.000000e-01]> : tensor<2xf32>
// TP-NEXT:    %yb = ge.bias_add %y_1, %b2 : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
// TP-NEXT:    func.return %yb : tensor<4x2xf32>
// TP-LABEL: func.func @device1(
// TP:         %w1 = ge.const dense<{{\[\[}}3.000000e+00, 4.000000e+00], [7.000000e+00, 8.000000e+00], [1.100000e+01, 1.200000e+01], [1.500000e+01, 1.600000e+01]]> : tensor<4x2xf32>
// TP:         %w2 = ge.const dense<{{\[\[}}3.000000e+00, -3.000000e+00], [4.000000e+00, -4.000000e+00]]> : tensor<2x2xf32>
// TP:         ge.all_reduce %y {devices = 2}

// DP-LABEL: func.func @device1(%x: tensor<4x4xf32>) -> tensor<4x2xf32> attributes {ge.device = 1 : i64} {
// DP-NEXT:    %x_1 = ge.slice %x {starts = [2, 0], ends = [4, 4], steps = [1, 1]} : (tensor<4x4xf32>) -> tensor<2x4xf32>
// DP:         %h = ge.matmul %x_1, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
// DP:         %yb_1 = ge.all_gather %yb {devices = 2} : (tensor<2x2xf32>) -> tensor<4x2xf32>
// DP-NEXT:    func.return %yb_1 : tensor<4x2xf32>

// PP-LABEL: func.func @device0(%x: tensor<4x4xf32>) attributes {ge.device = 0 : i64} {
// PP:         %x_1 = ge.slice %x {starts = [0, 0], ends = [2, 4], steps = [1, 1]}
// PP:         %hb = ge.bias_add %h, %b1 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// PP-NEXT:    ge.send %hb {peer = 1} : (tensor<2x4xf32>) -> ()
// PP:         ge.send %hb_1 {peer = 1, tag = 1} : (tensor<2x4xf32>) -> ()
// PP-NEXT:    func.return
// PP-LABEL: func.func @device1(%x: tensor<4x4xf32>) -> tensor<4x2xf32> attributes {ge.device = 1 : i64} {
// PP-NEXT:    %hb = ge.recv {peer = 0} : () -> tensor<2x4xf32>
// PP-NEXT:    %a = ge.gelu %hb : (tensor<2x4xf32>) -> tensor<2x4xf32>
// PP:         %hb_1 = ge.recv {peer = 0, tag = 1} : () -> tensor<2x4xf32>
// PP:         %0 = ge.concat %yb, %yb_1 {axis = 0} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
// PP-NEXT:    func.return %0 : tensor<4x2xf32>

// SIM-LABEL: device 0: result0: tensor<4x2xf32>
// SIM-NEXT: device 1: result0: tensor<4x2xf32>
// SIM-NEXT: device 0: check: ok
// SIM-NEXT: device 1: check: ok

func.func @main(%x: tensor<4x4xf32>) -> tensor<4x2xf32> {
  %w1 = ge.const dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0]]> : tensor<4x4xf32>
  %h = ge.matmul %x, %w1 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %b1 = ge.const dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %hb = ge.bias_add %h, %b1 : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  %a = ge.gelu %hb : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %w2 = ge.const dense<[[1.0, -1.0], [2.0, -2.0], [3.0, -3.0], [4.0, -4.0]]> : tensor<4x2xf32>
  %y = ge.matmul %a, %w2 : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %b2 = ge.const dense<[0.5, -0.5]> : tensor<2xf32>
  %yb = ge.bias_add %y, %b2 : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  func.return %yb : tensor<4x2xf32>
}

// CHUNKS-LABEL: func.func @device1(
// CHUNKS:         %a = ge.gelu %hb : (tensor<4x2xf32>) -> tensor<4x2xf32>
// CHUNKS:         %a_1 = ge.slice %a {starts = [0, 0], ends = [2, 2], steps = [1, 1]} : (tensor<4x2xf32>) -> tensor<2x2xf32>
// CHUNKS-NEXT:    %y = ge.matmul %a_1, %w2 : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
// CHUNKS-NEXT:    %y_1 = ge.all_reduce %y {devices = 2} : (tensor<2x2xf32>) -> tensor<2x2xf32>
// CHUNKS-NEXT:    %a_2 = ge.slice %a {starts = [2, 0], ends = [4, 2], steps = [1, 1]}
// CHUNKS-NEXT:    %y_2 = ge.matmul %a_2, %w2
// CHUNKS-NEXT:    %y_3 = ge.all_reduce %y_2 {devices = 2}
// CHUNKS-NEXT:    %yb = ge.bias_add %y_1, %b2
// CHUNKS-NEXT:    %yb_1 = ge.bias_add %y_3, %b2
// CHUNKS-NEXT:    %yb_2 = ge.concat %yb, %yb_1 {axis = 0} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
// CHUNKS-NEXT:    func.return %yb_2 : tensor<4x2xf32>

// TOKENS-LABEL: func.func @device1(
// TOKENS:         %y = ge.matmul %a, %w2 : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
// TOKENS-NEXT:    %y_1 = ge.reduce_scatter %y {devices = 2} : (tensor<4x2xf32>) -> tensor<2x2xf32>
// TOKENS-NEXT:    %b2 = ge.const dense<[5.000000e-01, -5.000000e-01]> : tensor<2xf32>
// TOKENS-NEXT:    %yb = ge.bias_add %y_1, %b2 : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
// TOKENS-NEXT:    %yb_1 = ge.all_gather %yb {devices = 2} : (tensor<2x2xf32>) -> tensor<4x2xf32>
// TOKENS-NEXT:    func.return %yb_1 : tensor<4x2xf32>
