// fused-share-cores: two independent products next to each other (two task
// towers, each on its own input) are tiled for half the cores each, to run side
// by side in one phase, when the slower of the two so tiled beats both on all the
// cores plus a barrier; the second moves up next to the first, past a product it
// does not read (with the constant it reads). A product reading the first's result
// is never its partner.
// RUN: ge-opt %s --split-input-file --pass-pipeline 'fused-share-cores{hw=ascend910}' | filecheck %s
// RUN: ge-opt %s --split-input-file --pass-pipeline 'fused-share-cores{hw=ascend910 merge=false}' | filecheck %s --check-prefix=OFF
// RUN: ge-opt %s --split-input-file --pass-pipeline 'fused-share-cores{hw=ascend910 debug=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=DEBUG

// CHECK-LABEL: func.func @towers(
// CHECK: %h0 = fused.matmul_bias_act %x0, %w0 bias %b {act = "relu", npu.cores = 16 : i64, npu.shared_phase = "with_next"}
// CHECK-NEXT: %w1 = ge.const
// CHECK-NEXT: %h1 = fused.matmul_bias_act %x1, %w1 bias %b {act = "relu", npu.cores = 16 : i64, npu.shared_phase = "with_previous"}
// CHECK-NEXT: %y0 = fused.matmul_bias_act %h0, %v0 {act = "sigmoid"}
// OFF-NOT: npu.cores
// DEBUG: [fused-share-cores] fused.matmul_bias_act at {{.*}} with fused.matmul_bias_act at {{.*}}: {{[0-9]+}} cycles in two phases, {{[0-9]+}} side by side on 16 cores each
func.func @towers(%x0: tensor<256x256xf16>, %x1: tensor<256x256xf16>, %b: tensor<128xf16>) -> (tensor<256x16xf16>, tensor<256x128xf16, #ge.format<FRACTAL_NZ>>) {
  %w0 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.06> : tensor<256x128xf16, #ge.format<FRACTAL_NZ>>
  %v0 = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.06> : tensor<128x16xf16, #ge.format<FRACTAL_NZ>>
  %h0 = fused.matmul_bias_act %x0, %w0 bias %b {act = "relu"} : (tensor<256x256xf16>, tensor<256x128xf16, #ge.format<FRACTAL_NZ>>, tensor<128xf16>) -> tensor<256x128xf16, #ge.format<FRACTAL_NZ>>
  %y0 = fused.matmul_bias_act %h0, %v0 {act = "sigmoid"} : (tensor<256x128xf16, #ge.format<FRACTAL_NZ>>, tensor<128x16xf16, #ge.format<FRACTAL_NZ>>) -> tensor<256x16xf16>
  %w1 = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.06> : tensor<256x128xf16, #ge.format<FRACTAL_NZ>>
  %h1 = fused.matmul_bias_act %x1, %w1 bias %b {act = "relu"} : (tensor<256x256xf16>, tensor<256x128xf16, #ge.format<FRACTAL_NZ>>, tensor<128xf16>) -> tensor<256x128xf16, #ge.format<FRACTAL_NZ>>
  func.return %y0, %h1 : tensor<256x16xf16>, tensor<256x128xf16, #ge.format<FRACTAL_NZ>>
}

// -----

// CHECK-LABEL: func.func @chain(
// CHECK-NOT: npu.cores
func.func @chain(%x: tensor<256x256xf16>) -> tensor<256x256xf16> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.06> : tensor<256x256xf16, #ge.format<FRACTAL_NZ>>
  %h = fused.matmul_bias_act %x, %w {act = "relu"} : (tensor<256x256xf16>, tensor<256x256xf16, #ge.format<FRACTAL_NZ>>) -> tensor<256x256xf16>
  %y = fused.matmul_bias_act %h, %w {act = "relu"} : (tensor<256x256xf16>, tensor<256x256xf16, #ge.format<FRACTAL_NZ>>) -> tensor<256x256xf16>
  func.return %y : tensor<256x256xf16>
}
