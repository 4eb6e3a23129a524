// ge-merge-matmuls: the rotated Q and K projections of one input (each a
// fused.rotary_matmul, sharing cos and sin) and its plain V projection become one
// fused.rotary_matmul with three outputs: five products on each staged x tile,
// one kernel, the same numbers. Without merging, three kernels.
// RUN: ge-opt %s -p 'ge-fuse{auto=false}' | filecheck %s
// RUN: ge-sim %s --pipeline 'ge-compile{hw=tiny}' --check --report | filecheck %s --check-prefix=SIM
// RUN: ge-opt %s -p 'ge-fuse{auto=false merge-matmuls=false}' | filecheck %s --check-prefix=OFF

// CHECK-LABEL: func.func @main(
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}} = fused.rotary_matmul %x, %cos, %sin, %wq, %wqr, %wk, %wkr, %wv {rotated = [1, 1, 0]} : (tensor<32x64xf16>, tensor<32x64xf16>, tensor<32x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf16>) -> (tensor<32x64xf16>, tensor<32x64xf16>, tensor<32x64xf16>)
// CHECK-NOT:     ge.matmul
// SIM:      instructions: {{[0-9]+}} in 1 launches
// SIM:      check: ok
// OFF-COUNT-2:   fused.rotary_matmul
func.func @main(%x: tensor<32x64xf16> {ge.name = "x"}) -> (tensor<32x64xf16> {ge.name = "q"}, tensor<32x64xf16> {ge.name = "k"}, tensor<32x64xf16> {ge.name = "v"}) {
  %wq = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.1> : tensor<64x64xf16>
  %wqr = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.1> : tensor<64x64xf16>
  %wk = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.1> : tensor<64x64xf16>
  %wkr = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.1> : tensor<64x64xf16>
  %wv = ge.const #ge.random<normal, seed = 5, mean = 0.0, std = 0.1> : tensor<64x64xf16>
  %cos = ge.const #ge.random<uniform, seed = 6, low = -1.0, high = 1.0> : tensor<32x64xf16>
  %sin = ge.const #ge.random<uniform, seed = 7, low = -1.0, high = 1.0> : tensor<32x64xf16>
  %yq = ge.matmul %x, %wq : (tensor<32x64xf16>, tensor<64x64xf16>) -> tensor<32x64xf16>
  %yqr = ge.matmul %x, %wqr : (tensor<32x64xf16>, tensor<64x64xf16>) -> tensor<32x64xf16>
  %aq = ge.mul %yq, %cos : (tensor<32x64xf16>, tensor<32x64xf16>) -> tensor<32x64xf16>
  %bq = ge.mul %yqr, %sin : (tensor<32x64xf16>, tensor<32x64xf16>) -> tensor<32x64xf16>
  %q = ge.add %aq, %bq : (tensor<32x64xf16>, tensor<32x64xf16>) -> tensor<32x64xf16>
  %yk = ge.matmul %x, %wk : (tensor<32x64xf16>, tensor<64x64xf16>) -> tensor<32x64xf16>
  %ykr = ge.matmul %x, %wkr : (tensor<32x64xf16>, tensor<64x64xf16>) -> tensor<32x64xf16>
  %ak = ge.mul %yk, %cos : (tensor<32x64xf16>, tensor<32x64xf16>) -> tensor<32x64xf16>
  %bk = ge.mul %ykr, %sin : (tensor<32x64xf16>, tensor<32x64xf16>) -> tensor<32x64xf16>
  %k = ge.add %ak, %bk : (tensor<32x64xf16>, tensor<32x64xf16>) -> tensor<32x64xf16>
  %v = ge.matmul %x, %wv : (tensor<32x64xf16>, tensor<64x64xf16>) -> tensor<32x64xf16>
  func.return %q, %k, %v : tensor<32x64xf16>, tensor<32x64xf16>, tensor<32x64xf16>
}
