// The execution plan of a small branchy host plan (a -> b and a -> c -> d,
// joined by z = b + d), pinned: streams from the path cover, one event per
// cross-stream dependency with the event id reused, GM offsets under the
// concurrent schedule, and in-place reuse where a buffer dies at a kernel that
// allows it. With one stream the branches are ordered, so more bytes are shared.
// Automatic streams weigh the plan by its estimated time: without launch merging
// (merge=false, as in eager mode) the two streams hide one chain's dispatches behind
// the other's; with merging (the default), one stream pays one dispatch and four
// barriers, and is kept.
// RUN: ge-opt %s -p 'npu-assign-streams{hw=tiny merge=false},npu-plan-gm{hw=tiny}' | filecheck %s --check-prefix=AUTO
// RUN: ge-opt %s -p 'npu-assign-streams{hw=tiny},npu-plan-gm{hw=tiny}' | filecheck %s --check-prefix=ONE
// RUN: ge-opt %s -p 'npu-assign-streams{hw=tiny}' --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=WEIGHED
// RUN: ge-opt %s -p 'npu-assign-streams{hw=tiny debug=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=DEBUG
// RUN: ge-opt %s -p 'npu-assign-streams{streams=1},npu-plan-gm{hw=tiny}' | filecheck %s --check-prefix=ONE
// RUN: ge-opt %s -p 'npu-assign-streams{streams=1},npu-plan-gm{hw=tiny reuse=false}' | filecheck %s --check-prefix=NONE
// RUN: ge-opt %s -p 'npu-assign-streams{hw=tiny merge=false},npu-plan-gm{hw=tiny}' --pass-statistics 2>&1 >/dev/null | filecheck %s --check-prefix=STATS
// RUN: ge-opt %s -p 'npu-assign-streams{hw=tiny merge=false},npu-plan-gm{hw=tiny}' -o %t.mlir
// RUN: ge-sim %t.mlir --hw tiny --seed 3 --report --outputs %t.npz --json %t.json | filecheck %s --check-prefix=SIM
// RUN: python %S/../npu/inputs/expect.py %s %t.npz --seed 3 | filecheck %s --check-prefix=NUMERICS
// RUN: filecheck %s --check-prefix=JSON < %t.json
// EXPECT: z = 2 * x

// Automatic: a -> b -> z on stream 0, c -> d on stream 1; c waits for a, z for d;
// the second event reuses id 0. %a, %b and %c are all live at once (%a is read
// on both streams, %b waits for the join), %d runs in place over %c.
// AUTO:       module attributes {npu.gm_arena_bytes = 6144 : i64, npu.gm_arena_lower_bound_bytes = 6144 : i64, npu.gm_arena_no_reuse_bytes = 8192 : i64}
// AUTO-LABEL: func.func @main
// AUTO-NEXT:    %a = npu.gm_buffer {offset = 0}
// AUTO-NEXT:    %b = npu.gm_buffer {offset = 2048}
// AUTO-NEXT:    %c = npu.gm_buffer {offset = 4096}
// AUTO-NEXT:    %d = npu.gm_view %c
// AUTO-NEXT:    npu.launch @copy(%x, %a)
// AUTO-NEXT:    npu.record_event {event = 0}
// AUTO-NEXT:    npu.launch @copy(%a, %b)
// AUTO-NEXT:    npu.wait_event {stream = 1, event = 0}
// AUTO-NEXT:    npu.launch @copy(%a, %c) {stream = 1}
// AUTO-NEXT:    npu.launch @copy(%c, %d) {stream = 1}
// AUTO-NEXT:    npu.record_event {stream = 1, event = 0}
// AUTO-NEXT:    npu.wait_event {event = 0}
// AUTO-NEXT:    npu.launch @add(%b, %d, %z)
// AUTO-NEXT:    func.return

// One stream: host order kept, no event; %c runs in place over %a (its last
// use), %d over %c, so only %b needs bytes of its own.
// ONE:       module attributes {npu.gm_arena_bytes = 4096 : i64, npu.gm_arena_lower_bound_bytes = 4096 : i64, npu.gm_arena_no_reuse_bytes = 8192 : i64}
// ONE-LABEL: func.func @main
// ONE-NEXT:    %a = npu.gm_buffer {offset = 0}
// ONE-NEXT:    %b = npu.gm_buffer {offset = 2048}
// ONE-NEXT:    %c = npu.gm_view %a
// ONE-NEXT:    %d = npu.gm_view %c
// ONE-NEXT:    npu.launch @copy(%x, %a)
// ONE-NEXT:    npu.launch @copy(%a, %b)
// ONE-NEXT:    npu.launch @copy(%a, %c)
// ONE-NEXT:    npu.launch @copy(%c, %d)
// ONE-NEXT:    npu.launch @add(%b, %d, %z)
// ONE-NEXT:    func.return

// No reuse (eager mode): every buffer its own bytes.
// NONE:       module attributes {npu.gm_arena_bytes = 8192 : i64
// NONE-LABEL: func.func @main
// NONE-NEXT:    %a = npu.gm_buffer {offset = 0}
// NONE-NEXT:    %b = npu.gm_buffer {offset = 2048}
// NONE-NEXT:    %c = npu.gm_buffer {offset = 4096}
// NONE-NEXT:    %d = npu.gm_buffer {offset = 6144}

// STATS: npu-assign-streams: 2 stream counts weighed, 2 streams, 2 cross-stream dependencies, 2 events, 2 waits, 1 event ids
// STATS: npu-plan-gm: 3 buffers placed, 1 in-place reuses, 6144 arena bytes, 10240 peak_gm_bytes, 10240 gm_lower_bound_bytes, 12288 gm_no_reuse_bytes

// DEBUG: [npu-assign-streams] estimated cycles by stream count: 2: {{[0-9]+}}, 1: {{[0-9]+}} -> 1
// WEIGHED: npu-assign-streams: 2 stream counts weighed, 1 streams, 0 cross-stream dependencies, 0 events

// SIM:      gm: read {{[0-9]+}} B, written {{[0-9]+}} B, peak 10240 B (arena 6144 B)
// SIM-NEXT: gm plan: peak 10240 B, lower bound 10240 B, no reuse 12288 B (arena 6144 B, lower bound 6144 B, no reuse 8192 B)
// SIM:      @copy {{ +}}0
// SIM-NEXT: @copy {{ +}}0
// SIM-NEXT: @copy {{ +}}1
// SIM-NEXT: @copy {{ +}}1
// SIM-NEXT: @add {{ +}}0
// NUMERICS: ok: z matches 2 * x
// JSON: "peak_gm_bytes": 10240
// JSON: "gm_lower_bound_bytes": 10240
// JSON: "gm_no_reuse_bytes": 12288

builtin.module {
  npu.kernel @copy(%x: memref<1024xf16, #npu.space<gm>>, %y: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
    %c0 = arith.constant 0 : index
    %u = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<ub>>
    npu.copy %x[%c0], %u[%c0] {cols = 1024}
    npu.set_flag {src = "MTE2", dst = "MTE3", event = 0}
    npu.wait_flag {src = "MTE2", dst = "MTE3", event = 0}
    npu.copy %u[%c0], %y[%c0] {cols = 1024}
  }
  npu.kernel @add(%a: memref<1024xf16, #npu.space<gm>>, %b: memref<1024xf16, #npu.space<gm>>,
                  %z: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
    %c0 = arith.constant 0 : index
    %ua = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<ub>>
    %ub = npu.alloc {offset = 2048} : memref<1024xf16, #npu.space<ub>>
    npu.copy %a[%c0], %ua[%c0] {cols = 1024}
    npu.copy %b[%c0], %ub[%c0] {cols = 1024}
    npu.set_flag {src = "MTE2", dst = "V", event = 0}
    npu.wait_flag {src = "MTE2", dst = "V", event = 0}
    npu.vadd %ua[%c0], %ub[%c0], %ua[%c0] {cols = 1024}
    npu.set_flag {src = "V", dst = "MTE3", event = 0}
    npu.wait_flag {src = "V", dst = "MTE3", event = 0}
    npu.copy %ua[%c0], %z[%c0] {cols = 1024}
  }
  func.func @main(%x: memref<1024xf16, #npu.space<gm>> {ge.name = "x"},
                  %z: memref<1024xf16, #npu.space<gm>> {ge.name = "z", npu.output}) {
    %a = npu.gm_buffer : memref<1024xf16, #npu.space<gm>>
    npu.launch @copy(%x, %a)
    %b = npu.gm_buffer : memref<1024xf16, #npu.space<gm>>
    npu.launch @copy(%a, %b)
    %c = npu.gm_buffer : memref<1024xf16, #npu.space<gm>>
    npu.launch @copy(%a, %c)
    %d = npu.gm_buffer : memref<1024xf16, #npu.space<gm>>
    npu.launch @copy(%c, %d)
    npu.launch @add(%b, %d, %z)
    func.return
  }
}
