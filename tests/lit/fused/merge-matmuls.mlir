// ge-merge-matmuls (horizontal fusion of cube ops): the Q, K and V projections of one input (matmul + bias, as
// exporters write them, each weight defined after the previous product) become
// one fused.multi_matmul_bias_act; the weights move up to it. One kernel after
// lowering, with the same numbers.
// RUN: ge-opt %s -p 'ge-fuse{auto=false}' | filecheck %s
// RUN: ge-sim %s --pipeline 'ge-compile{hw=tiny}' --check --report | filecheck %s --check-prefix=SIM
// RUN: ge-opt %s -p 'ge-fuse{auto=false merge-matmuls=false}' | filecheck %s --check-prefix=OFF

// CHECK-LABEL: func.func @main(
// CHECK-DAG:     %wq = ge.const
// CHECK-DAG:     %wk = ge.const
// CHECK-DAG:     %wv = ge.const
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}} = fused.multi_matmul_bias_act %x, %wq, %wk, %wv, %bq, %bk, %bv {biased = true} : (tensor<16x32xf16>, tensor<32x32xf16>, tensor<32x32xf16>, tensor<32x32xf16>, tensor<32xf16>, tensor<32xf16>, tensor<32xf16>) -> (tensor<16x32xf16>, tensor<16x32xf16>, tensor<16x32xf16>)
// CHECK-NOT:     fused.matmul_bias_act
// SIM:      instructions: {{[0-9]+}} in 1 launches
// SIM:      check: ok
// OFF-COUNT-3: fused.matmul_bias_act
// OFF-NOT:     fused.multi_matmul_bias_act
func.func @main(%x: tensor<16x32xf16> {ge.name = "x"}) -> (tensor<16x32xf16> {ge.name = "q"}, tensor<16x32xf16> {ge.name = "k"}, tensor<16x32xf16> {ge.name = "v"}) {
  %wq = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.1> : tensor<32x32xf16>
  %mq = ge.matmul %x, %wq : (tensor<16x32xf16>, tensor<32x32xf16>) -> tensor<16x32xf16>
  %bq = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.1> : tensor<32xf16>
  %q = ge.add %mq, %bq : (tensor<16x32xf16>, tensor<32xf16>) -> tensor<16x32xf16>
  %wk = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.1> : tensor<32x32xf16>
  %mk = ge.matmul %x, %wk : (tensor<16x32xf16>, tensor<32x32xf16>) -> tensor<16x32xf16>
  %bk = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.1> : tensor<32xf16>
  %k = ge.add %mk, %bk : (tensor<16x32xf16>, tensor<32xf16>) -> tensor<16x32xf16>
  %wv = ge.const #ge.random<normal, seed = 5, mean = 0.0, std = 0.1> : tensor<32x32xf16>
  %mv = ge.matmul %x, %wv : (tensor<16x32xf16>, tensor<32x32xf16>) -> tensor<16x32xf16>
  %bv = ge.const #ge.random<normal, seed = 6, mean = 0.0, std = 0.1> : tensor<32xf16>
  %v = ge.add %mv, %bv : (tensor<16x32xf16>, tensor<32xf16>) -> tensor<16x32xf16>
  func.return %q, %k, %v : tensor<16x32xf16>, tensor<16x32xf16>, tensor<16x32xf16>
}
