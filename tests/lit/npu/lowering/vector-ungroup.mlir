// fused-ungroup keeps the groups a kernel can run and puts back into the graph
// the ops of those it cannot (here a gather inside a group).
// RUN: ge-opt %s -p 'fused-ungroup{hw=tiny debug=true}' 2>&1 | filecheck %s

func.func @main(%t: tensor<10x16xf16>, %i: tensor<8xi32>, %x: tensor<8x16xf16>) -> (tensor<8x16xf16>, tensor<8x16xf16>) {
  %a = fused.group %t, %i : (tensor<10x16xf16>, tensor<8xi32>) -> tensor<8x16xf16> {
  ^bb0(%0: tensor<10x16xf16>, %1: tensor<8xi32>):
    %2 = ge.gather %0, %1 : (tensor<10x16xf16>, tensor<8xi32>) -> tensor<8x16xf16>
    %3 = ge.relu %2 : (tensor<8x16xf16>) -> tensor<8x16xf16>
    fused.yield %3 : tensor<8x16xf16>
  }
  %b = fused.group %a, %x : (tensor<8x16xf16>, tensor<8x16xf16>) -> tensor<8x16xf16> {
  ^bb0(%4: tensor<8x16xf16>, %5: tensor<8x16xf16>):
    %6 = ge.add %4, %5 : (tensor<8x16xf16>, tensor<8x16xf16>) -> tensor<8x16xf16>
    %7 = ge.exp %6 : (tensor<8x16xf16>) -> tensor<8x16xf16>
    fused.yield %7 : tensor<8x16xf16>
  }
  func.return %a, %b : tensor<8x16xf16>, tensor<8x16xf16>
}

// CHECK:      [fused-ungroup] splitting the group at {{.*}}: {{.*}}'ge.gather' inside the group
// CHECK:      func.func @main(%t: tensor<10x16xf16>, %i: tensor<8xi32>, %x: tensor<8x16xf16>)
// CHECK-NEXT:   %[[G:.*]] = ge.gather %t, %i
// CHECK-NEXT:   %[[R:.*]] = ge.relu %[[G]]
// CHECK-NEXT:   %[[B:.*]] = fused.group %[[R]], %x
// CHECK:          ge.add
// CHECK-NEXT:     ge.exp
// CHECK:        func.return %[[R]], %[[B]]
