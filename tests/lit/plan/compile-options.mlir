// ge-compile's plan options on a branchy graph (two branches from x, joined):
// eager mode `{fuse=false reuse=false streams=1}` and the default plan compute
// the same; the default runs the branches on two streams joined by one event,
// and reuses GM (each branch's second kernel runs in place).
// RUN: ge-opt %s -p 'ge-compile{fuse=false hw=tiny}' | filecheck %s
// RUN: ge-opt %s -p 'ge-compile{fuse=false reuse=false streams=1 hw=tiny}' | filecheck %s --check-prefix=EAGER
// RUN: ge-sim %s --pipeline 'ge-compile{fuse=false hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=OK
// RUN: ge-sim %s --pipeline 'ge-compile{fuse=false reuse=false streams=1 hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=OK
// RUN: ge-sim %s --pipeline 'ge-compile{fuse=false streams=2 hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=OK
// RUN: ge-sim %s --pipeline 'ge-compile{fuse=false reuse=false hw=tiny}' --hw tiny --check | filecheck %s --check-prefix=OK

// CHECK:       module attributes {npu.gm_arena_bytes = 8192 : i64, npu.gm_arena_lower_bound_bytes = 8192 : i64, npu.gm_arena_no_reuse_bytes = 16384 : i64}
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %a = npu.gm_buffer {offset = 0}
// CHECK-NEXT:    %c = npu.gm_buffer {offset = 4096}
// CHECK-NEXT:    %b = npu.gm_view %a
// CHECK-NEXT:    %d = npu.gm_view %c
// CHECK-NEXT:    npu.launch @k0_a(%x, %a) {block_dim = {{[0-9]+}}, npu.writes = {"1" = "a"}}
// CHECK-NEXT:    npu.launch @k2_c(%x, %c) {block_dim = {{[0-9]+}}, stream = 1, npu.writes = {"1" = "c"}}
// CHECK-NEXT:    npu.launch @k1_b(%a, %b) {block_dim = {{[0-9]+}}, npu.writes = {"1" = "b"}}
// CHECK-NEXT:    npu.launch @k3_d(%c, %d) {block_dim = {{[0-9]+}}, stream = 1, npu.writes = {"1" = "d"}}
// CHECK-NEXT:    npu.record_event {stream = 1, event = 0}
// CHECK-NEXT:    npu.wait_event {event = 0}
// CHECK-NEXT:    npu.launch @k4_y(%b, %d, %y) {block_dim = {{[0-9]+}}, npu.writes = {"2" = "y"}}
// CHECK-NEXT:    func.return

// EAGER:       module attributes {npu.gm_arena_bytes = 16384 : i64
// EAGER-LABEL: func.func @main
// EAGER-NEXT:    %a = npu.gm_buffer {offset = 0}
// EAGER-NEXT:    %b = npu.gm_buffer {offset = 4096}
// EAGER-NEXT:    %c = npu.gm_buffer {offset = 8192}
// EAGER-NEXT:    %d = npu.gm_buffer {offset = 12288}
// EAGER-NEXT:    npu.launch @k0_a(%x, %a) {block_dim = {{[0-9]+}}, npu.writes = {"1" = "a"}}
// EAGER-NEXT:    npu.launch @k1_b(%a, %b) {block_dim = {{[0-9]+}}, npu.writes = {"1" = "b"}}
// EAGER-NEXT:    npu.launch @k2_c(%x, %c) {block_dim = {{[0-9]+}}, npu.writes = {"1" = "c"}}
// EAGER-NEXT:    npu.launch @k3_d(%c, %d) {block_dim = {{[0-9]+}}, npu.writes = {"1" = "d"}}
// EAGER-NEXT:    npu.launch @k4_y(%b, %d, %y) {block_dim = {{[0-9]+}}, npu.writes = {"2" = "y"}}
// EAGER-NEXT:    func.return

// OK: check: ok

func.func @main(%x: tensor<32x64xf16> {ge.name = "x"}) -> (tensor<32x64xf16> {ge.name = "y"}) {
  %a = ge.exp %x : (tensor<32x64xf16>) -> tensor<32x64xf16>
  %b = ge.tanh %a : (tensor<32x64xf16>) -> tensor<32x64xf16>
  %c = ge.sigmoid %x : (tensor<32x64xf16>) -> tensor<32x64xf16>
  %d = ge.neg %c : (tensor<32x64xf16>) -> tensor<32x64xf16>
  %y = ge.mul %b, %d : (tensor<32x64xf16>, tensor<32x64xf16>) -> tensor<32x64xf16>
  func.return %y : tensor<32x64xf16>
}
