// The host plan: two kernels on two streams overlap (the tiny preset has 2 cores),
// an event orders the third after both, intermediates live in the GM arena.
// RUN: ge-sim %s --hw tiny --seed 4 --report --outputs %t.npz --json %t.json --trace %t.trace.json | filecheck %s
// RUN: python %S/inputs/expect.py %s %t.npz --seed 4 | filecheck %s --check-prefix=NUMERICS
// RUN: filecheck %s --check-prefix=JSON < %t.json
// RUN: python -c "import json,sys; t=json.load(open(sys.argv[1])); print(sorted({e['ph'] for e in t['traceEvents']}), sorted({e['args']['name'] for e in t['traceEvents'] if e['ph'] == 'M'}))" %t.trace.json | filecheck %s --check-prefix=TRACE
// EXPECT: z = x * 2 + (x + 1)

// Both first launches start after one launch overhead (3 us = 3000 cycles);
// the third starts when both have finished plus its own launch overhead.
// CHECK:      z: tensor<1024xf16>
// CHECK:      gm: read 8192 B, written 6144 B, peak 8192 B (arena 4096 B)
// CHECK:      @scale {{ +}}0 {{ +}}1 {{ +}}3000
// CHECK-NEXT: @shift {{ +}}1 {{ +}}1 {{ +}}3000
// CHECK-NEXT: @add {{ +}}0 {{ +}}1
// NUMERICS: ok: z matches x * 2 + (x + 1)
// JSON: "total_cycles":
// JSON: "time_us":
// JSON: "freq_ghz": 1.0
// JSON: "hw": "tiny"
// JSON: "pipes": {
// JSON: "gm_bytes_read": 8192
// JSON: "gm_bytes_written": 6144
// JSON: "peak_gm_bytes": 8192
// JSON: "roofline_cycles":
// JSON: "kernels": [
// JSON: "name": "scale"
// JSON: "name": "shift"
// JSON: "name": "add"
// TRACE: ['C', 'M', 'X'] ['FIX', 'M', 'MTE1', 'MTE2', 'MTE3', 'S', 'V', 'core 0', 'core 1', 'memory', 'stream 0', 'stream 1', 'streams']

builtin.module attributes {npu.gm_arena_bytes = 4096 : i64} {
  // y = x * s (s = 2.0): one tile, one core.
  npu.kernel @scale(%x: memref<1024xf16, #npu.space<gm>>, %y: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
    %c0 = arith.constant 0 : index
    %u = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<ub>>
    npu.copy %x[%c0], %u[%c0] {cols = 1024}
    npu.set_flag {src = "MTE2", dst = "V", event = 0}
    npu.wait_flag {src = "MTE2", dst = "V", event = 0}
    npu.vmuls %u[%c0], %u[%c0] {cols = 1024, scalar = 2.0}
    npu.set_flag {src = "V", dst = "MTE3", event = 0}
    npu.wait_flag {src = "V", dst = "MTE3", event = 0}
    npu.copy %u[%c0], %y[%c0] {cols = 1024}
  }
  // y = x + 1
  npu.kernel @shift(%x: memref<1024xf16, #npu.space<gm>>, %y: memref<1024xf16, #npu.space<gm>>) attributes {block_dim = 1} {
    %c0 = arith.constant 0 : index
    %u = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<ub>>
    npu.copy %x[%c0], %u[%c0] {cols = 1024}
    npu.set_flag {src = "MTE2", dst = "V", event = 0}
    npu.wait_flag {src = "MTE2", dst = "V", event = 0}
    npu.vadds %u[%c0], %u[%c0] {cols = 1024, scalar = 1.0}
    npu.set_flag {src = "V", dst = "MTE3", event = 0}
    npu.wait_flag {src = "V", dst = "MTE3", event = 0}
    npu.copy %u[%c0], %y[%c0] {cols = 1024}
  }
  // z = a + b
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
    %t1 = npu.gm_buffer {offset = 0} : memref<1024xf16, #npu.space<gm>>
    %t2 = npu.gm_buffer {offset = 2048} : memref<1024xf16, #npu.space<gm>>
    npu.launch @scale(%x, %t1) {stream = 0}
    npu.launch @shift(%x, %t2) {stream = 1}
    npu.record_event {stream = 1, event = 0}
    npu.wait_event {stream = 0, event = 0}
    npu.launch @add(%t1, %t2, %z) {stream = 0}
    func.return
  }
}
