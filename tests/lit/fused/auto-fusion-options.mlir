// Each constraint of ge-auto-fuse is an option; switching one off (or
// tightening it) changes the groups that form.
// RUN: ge-opt %s -p 'ge-auto-fuse{horizontal=false}' | filecheck %s --check-prefix=NOHORIZ
// RUN: ge-opt %s -p 'ge-auto-fuse{fuse-reduce=false}' | filecheck %s --check-prefix=NOREDUCE
// RUN: ge-opt %s -p 'ge-auto-fuse{cube-epilogue=false}' | filecheck %s --check-prefix=NOCUBE
// RUN: ge-opt %s -p 'ge-auto-fuse{max-size=2 max-inputs=2}' | filecheck %s --check-prefix=LIMITS
// RUN: ge-opt %s -p 'ge-auto-fuse{hw=tiny debug=true}' 2>&1 | filecheck %s --check-prefix=TINY
// RUN: ge-opt %s -p 'ge-auto-fuse{hw=tiny fit-buffers=false}' | filecheck %s --check-prefix=NOFIT
// RUN: ge-opt %s -p 'ge-auto-fuse{keep-peak-memory=false}' | filecheck %s --check-prefix=PEAK

// NOHORIZ-LABEL: func.func @siblings(
// NOHORIZ-NEXT:    ge.exp %x
// NOHORIZ-NEXT:    ge.neg %x
// LIMITS-LABEL:  func.func @siblings(
// LIMITS-NEXT:     fused.group %x
func.func @siblings(%x: tensor<16x32xf16>) -> (tensor<16x32xf16>, tensor<16x32xf16>) {
  %0 = ge.exp %x : (tensor<16x32xf16>) -> tensor<16x32xf16>
  %1 = ge.neg %x : (tensor<16x32xf16>) -> tensor<16x32xf16>
  func.return %0, %1 : tensor<16x32xf16>, tensor<16x32xf16>
}

// NOREDUCE-LABEL: func.func @reduce(
// NOREDUCE-NEXT:    ge.exp
// NOREDUCE-NEXT:    ge.softmax
func.func @reduce(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = ge.exp %x : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %1 = ge.softmax %0 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %1 : tensor<4x16xf32>
}

// Without cube epilogues the matmul stays alone and its epilogue is a vector group.
// NOCUBE-LABEL: func.func @cube(
// NOCUBE-NEXT:    %[[M:.*]] = ge.matmul
// NOCUBE-NEXT:    fused.group %[[M]], %b
// NOCUBE-NEXT:    ^bb0
// NOCUBE-NEXT:      ge.add
// NOCUBE-NEXT:      ge.sigmoid
func.func @cube(%x: tensor<16x32xf16>, %w: tensor<32x32xf16>, %b: tensor<32xf16>) -> tensor<16x32xf16> {
  %0 = ge.matmul %x, %w : (tensor<16x32xf16>, tensor<32x32xf16>) -> tensor<16x32xf16>
  %1 = ge.add %0, %b : (tensor<16x32xf16>, tensor<32xf16>) -> tensor<16x32xf16>
  %2 = ge.sigmoid %1 : (tensor<16x32xf16>) -> tensor<16x32xf16>
  func.return %2 : tensor<16x32xf16>
}

// max-size=2: a chain of five makes pairs and a single op (without the limit
// it is one group).
// LIMITS-LABEL: func.func @chain(
// LIMITS-NEXT:    %[[A:.*]] = fused.group %x : (tensor<8x8xf16>) -> tensor<8x8xf16>
// LIMITS-NEXT:    ^bb0
// LIMITS-NEXT:      ge.exp
// LIMITS-NEXT:      ge.neg
// LIMITS:         %[[B:.*]] = fused.group %[[A]], %y
// LIMITS-NEXT:    ^bb0
// LIMITS-NEXT:      ge.abs
// LIMITS-NEXT:      ge.add
// LIMITS:         ge.add %[[B]], %z
func.func @chain(%x: tensor<8x8xf16>, %y: tensor<8x8xf16>, %z: tensor<8x8xf16>) -> tensor<8x8xf16> {
  %0 = ge.exp %x : (tensor<8x8xf16>) -> tensor<8x8xf16>
  %1 = ge.neg %0 : (tensor<8x8xf16>) -> tensor<8x8xf16>
  %2 = ge.abs %1 : (tensor<8x8xf16>) -> tensor<8x8xf16>
  %3 = ge.add %2, %y : (tensor<8x8xf16>, tensor<8x8xf16>) -> tensor<8x8xf16>
  %4 = ge.add %3, %z : (tensor<8x8xf16>, tensor<8x8xf16>) -> tensor<8x8xf16>
  func.return %4 : tensor<8x8xf16>
}

// On the tiny preset (32 KiB of UB) one row of 8192 f32 with its intermediate
// does not fit; without the cost model's buffer check the lowering still builds
// no kernel for the group (a softmax needs its whole row), so it is not formed.
// (The debug lines of @fan_in below come first: stderr precedes the IR.)
// TINY: reject vertical {ge.exp@{{[0-9]+}}} + {ge.softmax@{{[0-9]+}}}: a tile of one row needs 163840 B of UB, which has 32768 B
// TINY: skip vertical {ge.add@{{[0-9]+}}} + {ge.add@{{[0-9]+}}, ge.relu@{{[0-9]+}}}: benefit -{{[0-9]+}} cycles = gm 32768 (4194304 B) + launch 3000 - tiling {{[0-9]+}}
// TINY: fuse vertical {ge.add@{{[0-9]+}}} + {ge.add@{{[0-9]+}}}: benefit 2232 cycles = gm 32768 (4194304 B) + launch 3000 - tiling 33536
// TINY-LABEL: func.func @wide_rows(
// TINY-NEXT:    ge.exp
// TINY-NEXT:    ge.softmax
// NOFIT-LABEL: func.func @wide_rows(
// NOFIT-NEXT:    ge.exp
// NOFIT-NEXT:    ge.softmax
func.func @wide_rows(%x: tensor<2x8192xf32>) -> tensor<2x8192xf32> {
  %0 = ge.exp %x : (tensor<2x8192xf32>) -> tensor<2x8192xf32>
  %1 = ge.softmax %0 : (tensor<2x8192xf32>) -> tensor<2x8192xf32>
  func.return %1 : tensor<2x8192xf32>
}

// On the tiny preset a sum of 1024x1024 tensors pays more in extra tiles than
// it saves: fusion stops at non-positive benefit, leaving pairs.
// TINY-LABEL: func.func @fan_in(
// TINY-NEXT:    %[[S:.*]] = fused.group %a, %b, %c
// TINY:         fused.group %[[S]], %d
func.func @fan_in(%a: tensor<1024x1024xf16>, %b: tensor<1024x1024xf16>, %c: tensor<1024x1024xf16>, %d: tensor<1024x1024xf16>) -> tensor<1024x1024xf16> {
  %0 = ge.add %a, %b : (tensor<1024x1024xf16>, tensor<1024x1024xf16>) -> tensor<1024x1024xf16>
  %1 = ge.add %0, %c : (tensor<1024x1024xf16>, tensor<1024x1024xf16>) -> tensor<1024x1024xf16>
  %2 = ge.add %1, %d : (tensor<1024x1024xf16>, tensor<1024x1024xf16>) -> tensor<1024x1024xf16>
  %3 = ge.relu %2 : (tensor<1024x1024xf16>) -> tensor<1024x1024xf16>
  func.return %3 : tensor<1024x1024xf16>
}

// Without the peak-memory check, still no group: none of them has a kernel.
// PEAK-LABEL: func.func @peak_memory(
// PEAK-NEXT:    ge.exp
// PEAK-NEXT:    ge.expand
func.func @peak_memory(%x: tensor<1x4x32x32xf32>) -> (tensor<1x4x32x32xf32>, tensor<1x4x32x32xf32>) {
  %a = ge.exp %x : (tensor<1x4x32x32xf32>) -> tensor<1x4x32x32xf32>
  %e = ge.expand %a : (tensor<1x4x32x32xf32>) -> tensor<8x4x32x32xf32>
  %m = ge.reduce_mean %e {axes = [0]} : (tensor<8x4x32x32xf32>) -> tensor<1x4x32x32xf32>
  %b = ge.expand %x : (tensor<1x4x32x32xf32>) -> tensor<8x4x32x32xf32>
  %n = ge.reduce_max %b {axes = [0]} : (tensor<8x4x32x32xf32>) -> tensor<1x4x32x32xf32>
  func.return %m, %n : tensor<1x4x32x32xf32>, tensor<1x4x32x32xf32>
}
