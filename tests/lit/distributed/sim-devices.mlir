// ge-sim --devices: a two-matmul block partitioned for 2 devices (tensor
// parallel) and simulated on the tiny preset's chips and links: a report row per
// device, the all_reduce on the full mesh, a trace with a process per device.
// RUN: ge-sim %s --hw tiny --devices 2 --pipeline 'ge-partition{devices=2 strategy=tp}' --report --trace %t.json | filecheck %s
// RUN: filecheck %s --check-prefix=TRACE --input-file %t.json
// RUN: ge-sim %s --hw tiny --devices 2 --pipeline 'ge-partition{devices=2 strategy=tp}' --report --collectives ring | filecheck %s --check-prefix=RING
// RUN: not ge-sim %s --collectives ring 2>&1 | filecheck %s --check-prefix=NODEVICES
// RUN: not ge-sim %s --devices 4 --pipeline 'ge-partition{devices=2 strategy=tp}' 2>&1 | filecheck %s --check-prefix=COUNT

// CHECK: device 0: result0: tensor<64x128xf16>
// CHECK: device 1: result0: tensor<64x128xf16>
// CHECK: multi-device simulation on tiny: 2 devices, {{[0-9.]+}} us
// CHECK-NEXT: device time_us compute_us comm_us exposed_us
// CHECK-NEXT: 0
// CHECK-NEXT: 1
// CHECK: all_reduce 0 16384 mesh 2
// CHECK: compute run device ops start_us time_us
// CHECK-NEXT: matmul+gelu 0 3 0.000
// CHECK: link bytes: 0->1 16384, 1->0 16384
// TRACE: "name": "device 0"
// TRACE: "name": "communication stream"
// TRACE: "name": "device 1"
// RING: all_reduce 0 16384 ring 2
// NODEVICES: error: --collectives applies to a multi-device run: give --devices N
// COUNT: error: --devices 4: the module is partitioned for 2 devices

func.func @main(%x: tensor<64x128xf16>) -> tensor<64x128xf16> {
  %w1 = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.05> : tensor<128x128xf16>
  %h = ge.matmul %x, %w1 : (tensor<64x128xf16>, tensor<128x128xf16>) -> tensor<64x128xf16>
  %a = ge.gelu %h : (tensor<64x128xf16>) -> tensor<64x128xf16>
  %w2 = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.05> : tensor<128x128xf16>
  %y = ge.matmul %a, %w2 : (tensor<64x128xf16>, tensor<128x128xf16>) -> tensor<64x128xf16>
  func.return %y : tensor<64x128xf16>
}
