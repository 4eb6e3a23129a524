// ge-precision (ATC's --precision_mode) on an attention-like f32 graph: which ops
// compute in f16 in each mode, where the casts go, and the constants converted
// at compile time.
// RUN: ge-opt %s -p 'ge-precision{mode=allow_mix_precision}' | filecheck %s --check-prefix=MIX
// RUN: ge-opt %s -p 'ge-precision{mode=allow_mix_precision keep-fp32=add}' | filecheck %s --check-prefix=KEEP
// RUN: ge-opt %s -p 'ge-precision{mode=allow_mix_precision allow-fp16=softmax}' | filecheck %s --check-prefix=ALLOW
// RUN: ge-opt %s -p 'ge-precision{mode=allow_fp32_to_fp16}' | filecheck %s --check-prefix=CUBE
// RUN: ge-opt %s -p 'ge-precision{mode=force_fp16}' | filecheck %s --check-prefix=FORCE
// RUN: ge-opt %s -p 'ge-precision{mode=must_keep_origin_dtype}' | filecheck %s --check-prefix=KEEPALL

func.func @main(%x: tensor<32x64xf32> {ge.name = "x"}) -> (tensor<32x64xf32> {ge.name = "y"}) {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.02> : tensor<64x64xf32>
  %b = ge.const dense<5.000000e-01> : tensor<64xf32>
  %h = ge.matmul %x, %w : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
  %hb = ge.add %h, %b : (tensor<32x64xf32>, tensor<64xf32>) -> tensor<32x64xf32>
  %hr = ge.reshape %hb : (tensor<32x64xf32>) -> tensor<32x64xf32>
  %p = ge.softmax %hr : (tensor<32x64xf32>) -> tensor<32x64xf32>
  %o = ge.matmul %p, %w : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
  %r = ge.add %o, %x : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
  %y = ge.layer_norm %r, %b, %b : (tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<32x64xf32>
  func.return %y : tensor<32x64xf32>
}

// Mixed: the cube ops (allow list) in f16, the bias add and the reshape after them
// follow (gray list), softmax and layer_norm (deny list) stay f32, and so does the
// residual add, one of whose inputs (%x) was not computed in f16. The weight is
// converted once at compile time, the input once by a cast.
// MIX: builtin.module attributes {ge.precision = "allow_mix_precision", ge.precision_lowered = {ge.add = 1 : i64, ge.matmul = 2 : i64, ge.reshape = 1 : i64}}
// MIX: %[[X16:.*]] = ge.cast %x : (tensor<32x64xf32>) -> tensor<32x64xf16>
// MIX: %[[W16:.*]] = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.02> : tensor<64x64xf16>
// MIX-NOT: ge.const {{.*}}tensor<64x64xf32>
// MIX: %[[B16:.*]] = ge.const dense<5.000000e-01> : tensor<64xf16>
// MIX: %[[H:.*]] = ge.matmul %[[X16]], %[[W16]] : (tensor<32x64xf16>, tensor<64x64xf16>) -> tensor<32x64xf16>
// MIX: %[[HB:.*]] = ge.add %[[H]], %[[B16]] : (tensor<32x64xf16>, tensor<64xf16>) -> tensor<32x64xf16>
// MIX: %[[HR:.*]] = ge.reshape %[[HB]] : (tensor<32x64xf16>) -> tensor<32x64xf16>
// MIX: %[[HR32:.*]] = ge.cast %[[HR]] : (tensor<32x64xf16>) -> tensor<32x64xf32>
// MIX: %[[P:.*]] = ge.softmax %[[HR32]] {{.*}}: (tensor<32x64xf32>) -> tensor<32x64xf32>
// MIX: %[[P16:.*]] = ge.cast %[[P]] : (tensor<32x64xf32>) -> tensor<32x64xf16>
// MIX: %[[O:.*]] = ge.matmul %[[P16]], %[[W16]] : (tensor<32x64xf16>, tensor<64x64xf16>) -> tensor<32x64xf16>
// MIX: %[[O32:.*]] = ge.cast %[[O]] : (tensor<32x64xf16>) -> tensor<32x64xf32>
// MIX: ge.add %[[O32]], %x : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
// MIX: ge.layer_norm {{.*}} : (tensor<32x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<32x64xf32>
// MIX: func.return {{.*}} : tensor<32x64xf32>

// keep-fp32=add: the bias add leaves the gray list for the deny list, and the
// reshape after it, following it, stays f32 too.
// KEEP: ge.precision_lowered = {ge.matmul = 2 : i64}
// KEEP: ge.add {{.*}} : (tensor<32x64xf32>, tensor<64xf32>) -> tensor<32x64xf32>
// KEEP: ge.reshape {{.*}} : (tensor<32x64xf32>) -> tensor<32x64xf32>

// allow-fp16=softmax: softmax on the allow list; the matmul after it reads its
// f16 result with no cast between.
// ALLOW: ge.precision_lowered = {ge.add = 1 : i64, ge.matmul = 2 : i64, ge.reshape = 1 : i64, ge.softmax = 1 : i64}
// ALLOW: %[[P:.*]] = ge.softmax {{.*}}: (tensor<32x64xf16>) -> tensor<32x64xf16>
// ALLOW-NEXT: ge.matmul %[[P]],

// allow_fp32_to_fp16: only the cube ops; the reshape follows its f32 input.
// CUBE: ge.precision_lowered = {ge.matmul = 2 : i64}
// CUBE: ge.add {{.*}} -> tensor<32x64xf32>
// CUBE: ge.reshape {{.*}} -> tensor<32x64xf32>

// force_fp16: every op; one cast in, one cast out.
// FORCE: ge.precision_lowered = {ge.add = 2 : i64, ge.layer_norm = 1 : i64, ge.matmul = 2 : i64, ge.reshape = 1 : i64, ge.softmax = 1 : i64}
// FORCE: ge.cast %x : (tensor<32x64xf32>) -> tensor<32x64xf16>
// FORCE-NOT: ge.cast
// FORCE: ge.layer_norm {{.*}} -> tensor<32x64xf16>
// FORCE-NEXT: ge.cast {{.*}} -> tensor<32x64xf32>
// FORCE-NEXT: func.return

// must_keep_origin_dtype: nothing changes, nothing is recorded.
// KEEPALL-NOT: ge.precision
// KEEPALL-NOT: f16
