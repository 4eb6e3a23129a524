// A small matmul on the tiny preset: one cube kernel, two items of 32 x 48 (one
// per core, the second the 8-row tail), K = 40 in one L1 chunk walked in L0 steps
// of 32 and 8 (the chunk staged a step's K range at a time, each piece's copies in
// its step: B's, its L0 move, then A's, so the cube starts once the first lands),
// fp32 accumulation in L0C, the fixpipe's cast to fp16 into UB and
// MTE3 to GM in 16-row chunks. No synchronisation and no buffer offsets yet.
// RUN: ge-opt %s -p 'ge-to-npu{hw=tiny debug=true}' 2>&1 | filecheck %s
// RUN: ge-sim %s --pipeline 'ge-lower-to-npu{hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=SIM

func.func @main(%a: tensor<40x40xf16> {ge.name = "a"}, %b: tensor<40x33xf16> {ge.name = "b"}) -> (tensor<40x33xf16> {ge.name = "c"}) {
  %c = ge.matmul %a, %b : (tensor<40x40xf16>, tensor<40x33xf16>) -> tensor<40x33xf16>
  func.return %c : tensor<40x33xf16>
}

// CHECK:      [ge-to-npu] @k0_c: cube 1 x (40 x 40) @ (40 x 33): items of 32 x 48 (1 x 2 x 1 = 2 items, 1 per core on 2 cores), K in L1 chunks of 64, L0 steps of 32
// CHECK:      npu.kernel @k0_c({{.*}}) attributes {block_dim = 2, npu.sources = ["ge.matmul"]} {
// CHECK:        %block = npu.block_idx : index
// CHECK-DAG:    %[[ACC:.*]] = npu.alloc : memref<1536xf32, #npu.space<l0c>>
// CHECK-DAG:    %[[A1:.*]] = npu.alloc : memref<2048xf16, #npu.space<l1>>
// CHECK-DAG:    %[[B1:.*]] = npu.alloc : memref<3072xf16, #npu.space<l1>>
// CHECK-DAG:    %[[A0:.*]] = npu.alloc : memref<1024xf16, #npu.space<l0a>>
// CHECK-DAG:    %[[B0:.*]] = npu.alloc : memref<1536xf16, #npu.space<l0b>>
// CHECK-DAG:    %[[OUT:.*]] = npu.alloc : memref<768xf16, #npu.space<ub>>
// CHECK:        scf.if
// CHECK:          npu.copy %1[%c0], %[[B1]][%c0] {rows = 32, cols = 33, strides = [33, 48]}
// CHECK-NEXT:     npu.load_l0 %[[B1]][%c0], %[[B0]][%c0] {rows = 32, cols = 33, strides = [48, 48]}
// CHECK:          npu.copy %0[%{{.*}}], %[[A1]][%c0] {rows = 32, cols = 32, strides = [40, 64]}
// CHECK-NEXT:     npu.load_l0 %[[A1]][%c0], %[[A0]][%c0] {rows = 32, cols = 32, strides = [64, 32]}
// CHECK-NEXT:     npu.mmad %[[A0]][%c0], %[[B0]][%c0], %[[ACC]][%c0] {m = 32, n = 33, k = 32, strides = [32, 48, 48]}
// CHECK-NEXT:     npu.copy %1[%c1056], %[[B1]][%c1536] {rows = 8, cols = 33, strides = [33, 48]}
// CHECK-NEXT:     npu.load_l0 %[[B1]][%c1536], %[[B0_1:.*]][%c0] {rows = 8, cols = 33, strides = [48, 48]}
// CHECK:          npu.copy %0[%{{.*}}], %[[A1]][%c32] {rows = 32, cols = 8, strides = [40, 64]}
// CHECK-NEXT:     npu.load_l0 %[[A1]][%c32], %[[A0_1:.*]][%c0] {rows = 32, cols = 8, strides = [64, 32]}
// CHECK-NEXT:     npu.mmad %[[A0_1]][%c0], %[[B0_1]][%c0], %[[ACC]][%c0] {m = 32, n = 33, k = 8, accumulate = true, strides = [32, 48, 48]}
// CHECK-NEXT:     npu.fixpipe %[[ACC]][%c0], %[[OUT]][%c0] {rows = 16, cols = 33, strides = [48, 48]}
// CHECK:          npu.copy %[[OUT]][%c0], %2[%{{.*}}] {rows = 16, cols = 33, strides = [48, 33]}
// CHECK:          npu.fixpipe %[[ACC]][%c768], %{{.*}}[%c0] {rows = 16, cols = 33, strides = [48, 48]}
// CHECK:        scf.if
// CHECK:          npu.copy %0[%{{.*}}], %[[A1]][%c0] {rows = 8, cols = 32, strides = [40, 64]}
// CHECK:          npu.mmad %[[A0]][%c0], %[[B0]][%c0], %[[ACC]][%c0] {m = 8, n = 33, k = 32, strides = [32, 48, 48]}
// CHECK:        npu.launch @k0_c(%a, %b, %c) {block_dim = 2, npu.writes = {"2" = "c"}}

// SIM: check: ok
