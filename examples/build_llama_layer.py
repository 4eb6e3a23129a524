"""The LLaMA-style decoder layer of examples/llama_layer.mlir at any sequence
length, written as the ge dialect: the layer's hidden size (1024), heads (16 of
64), SwiGLU MLP (2816) and seeded random weights stay; the sequence and its
causal mask (an SxS i1 constant) change. `--seq 256` writes the example itself
(byte for byte, tested), so the example and the other sizes are one layer.

    python examples/build_llama_layer.py                       # examples/llama_layer.mlir
    python examples/build_llama_layer.py --seq 1024 -o /tmp/llama_1024.mlir
    python bench/multi_device.py --model /tmp/llama_1024.mlir --devices 2,4,8

Longer sequences weigh compute against the all_reduces (their bytes grow with
the sequence, the per-step link latency does not; attention grows with its
square): how tensor parallelism scales beyond the example's 256 tokens.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

TEMPLATE = """\
// A LLaMA-style decoder layer: sequence {S}, hidden 1024, 16 heads of 64,
// pre-RMSNorm, causal self-attention (the mask is a {S}x{S} i1 constant), SwiGLU
// MLP with intermediate size 2816, fp16. No rotary embedding.
func.func @main(%hidden: tensor<{S}x1024xf16> {{ge.name = "hidden"}}) -> (tensor<{S}x1024xf16> {{ge.name = "out"}}) {{
  %attn_norm_w = ge.const #ge.random<uniform, seed = 1, low = 0.9, high = 1.1> : tensor<1024xf16>
  %attn_norm = ge.rms_norm %hidden, %attn_norm_w {{epsilon = 1.0e-06}} : (tensor<{S}x1024xf16>, tensor<1024xf16>) -> tensor<{S}x1024xf16>
  %wq = ge.const #ge.random<normal, seed = 2, mean = 0.0, std = 0.02> : tensor<1024x1024xf16>
  %q = ge.matmul %attn_norm, %wq : (tensor<{S}x1024xf16>, tensor<1024x1024xf16>) -> tensor<{S}x1024xf16>
  %q_heads = ge.reshape %q : (tensor<{S}x1024xf16>) -> tensor<{S}x16x64xf16>
  %q_t = ge.transpose %q_heads {{perm = [1, 0, 2]}} : (tensor<{S}x16x64xf16>) -> tensor<16x{S}x64xf16>
  %wk = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.02> : tensor<1024x1024xf16>
  %k = ge.matmul %attn_norm, %wk : (tensor<{S}x1024xf16>, tensor<1024x1024xf16>) -> tensor<{S}x1024xf16>
  %k_heads = ge.reshape %k : (tensor<{S}x1024xf16>) -> tensor<{S}x16x64xf16>
  %k_t = ge.transpose %k_heads {{perm = [1, 0, 2]}} : (tensor<{S}x16x64xf16>) -> tensor<16x{S}x64xf16>
  %wv = ge.const #ge.random<normal, seed = 4, mean = 0.0, std = 0.02> : tensor<1024x1024xf16>
  %v = ge.matmul %attn_norm, %wv : (tensor<{S}x1024xf16>, tensor<1024x1024xf16>) -> tensor<{S}x1024xf16>
  %v_heads = ge.reshape %v : (tensor<{S}x1024xf16>) -> tensor<{S}x16x64xf16>
  %v_t = ge.transpose %v_heads {{perm = [1, 0, 2]}} : (tensor<{S}x16x64xf16>) -> tensor<16x{S}x64xf16>
  %scores = ge.batch_matmul %q_t, %k_t {{transpose_b = true}} : (tensor<16x{S}x64xf16>, tensor<16x{S}x64xf16>) -> tensor<16x{S}x{S}xf16>
  %scale = ge.const dense<1.250000e-01> : tensor<f16>
  %scaled = ge.mul %scores, %scale : (tensor<16x{S}x{S}xf16>, tensor<f16>) -> tensor<16x{S}x{S}xf16>
  %causal_mask = ge.const dense<"0x{mask}"> : tensor<{S}x{S}xi1>
  %masked = ge.const dense<-1.000000e+04> : tensor<f16>
  %masked_scores = ge.where %causal_mask, %scaled, %masked : (tensor<{S}x{S}xi1>, tensor<16x{S}x{S}xf16>, tensor<f16>) -> tensor<16x{S}x{S}xf16>
  %probs = ge.softmax %masked_scores : (tensor<16x{S}x{S}xf16>) -> tensor<16x{S}x{S}xf16>
  %context = ge.batch_matmul %probs, %v_t : (tensor<16x{S}x{S}xf16>, tensor<16x{S}x64xf16>) -> tensor<16x{S}x64xf16>
  %context_t = ge.transpose %context {{perm = [1, 0, 2]}} : (tensor<16x{S}x64xf16>) -> tensor<{S}x16x64xf16>
  %context_2d = ge.reshape %context_t : (tensor<{S}x16x64xf16>) -> tensor<{S}x1024xf16>
  %wo = ge.const #ge.random<normal, seed = 5, mean = 0.0, std = 0.02> : tensor<1024x1024xf16>
  %attn_out = ge.matmul %context_2d, %wo : (tensor<{S}x1024xf16>, tensor<1024x1024xf16>) -> tensor<{S}x1024xf16>
  %attn_residual = ge.add %hidden, %attn_out : (tensor<{S}x1024xf16>, tensor<{S}x1024xf16>) -> tensor<{S}x1024xf16>
  %mlp_norm_w = ge.const #ge.random<uniform, seed = 6, low = 0.9, high = 1.1> : tensor<1024xf16>
  %mlp_norm = ge.rms_norm %attn_residual, %mlp_norm_w {{epsilon = 1.0e-06}} : (tensor<{S}x1024xf16>, tensor<1024xf16>) -> tensor<{S}x1024xf16>
  %w_gate = ge.const #ge.random<normal, seed = 7, mean = 0.0, std = 0.02> : tensor<1024x2816xf16>
  %gate = ge.matmul %mlp_norm, %w_gate : (tensor<{S}x1024xf16>, tensor<1024x2816xf16>) -> tensor<{S}x2816xf16>
  %w_up = ge.const #ge.random<normal, seed = 8, mean = 0.0, std = 0.02> : tensor<1024x2816xf16>
  %up = ge.matmul %mlp_norm, %w_up : (tensor<{S}x1024xf16>, tensor<1024x2816xf16>) -> tensor<{S}x2816xf16>
  %gate_act = ge.silu %gate : (tensor<{S}x2816xf16>) -> tensor<{S}x2816xf16>
  %swiglu = ge.mul %gate_act, %up : (tensor<{S}x2816xf16>, tensor<{S}x2816xf16>) -> tensor<{S}x2816xf16>
  %w_down = ge.const #ge.random<normal, seed = 9, mean = 0.0, std = 0.02> : tensor<2816x1024xf16>
  %down = ge.matmul %swiglu, %w_down : (tensor<{S}x2816xf16>, tensor<2816x1024xf16>) -> tensor<{S}x1024xf16>
  %mlp_residual = ge.add %attn_residual, %down : (tensor<{S}x1024xf16>, tensor<{S}x1024xf16>) -> tensor<{S}x1024xf16>
  func.return %mlp_residual : tensor<{S}x1024xf16>
}}
"""


def causal_mask_hex(seq: int) -> str:
    """The SxS lower-triangular mask as MLIR's dense hex of i1 (one byte each)."""
    return np.tril(np.full((seq, seq), 0xFF, np.uint8)).tobytes().hex().upper()


def llama_layer(seq: int) -> str:
    return TEMPLATE.format(S=seq, mask=causal_mask_hex(seq))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seq", type=int, default=256, help="sequence length (default 256, the example)")
    p.add_argument("-o", "--output", help="where to write (default examples/llama_layer.mlir for 256, else stdout)")
    args = p.parse_args(argv)
    if args.seq < 1:
        print(f"--seq must be 1 or more, not {args.seq}", file=sys.stderr)
        return 1
    text = llama_layer(args.seq)
    output = args.output or (os.path.join(os.path.dirname(__file__), "llama_layer.mlir") if args.seq == 256 else None)
    if output is None:
        sys.stdout.write(text)
    else:
        with open(output, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
