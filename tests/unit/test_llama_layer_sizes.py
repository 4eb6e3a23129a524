"""examples/build_llama_layer.py: the LLaMA-style layer at any sequence length is
the example's layer (256 reproduces examples/llama_layer.mlir byte for byte), and
its generated causal mask keeps a token from reading later ones."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from gecomp.core.parsing import parse_module
from gecomp.dialects.context import make_context
from gecomp.simulator.reference import run_reference

ROOT = Path(__file__).resolve().parents[2]


def builder():
    spec = importlib.util.spec_from_file_location("build_llama_layer", ROOT / "examples" / "build_llama_layer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sequence_256_is_the_example():
    assert builder().llama_layer(256) == (ROOT / "examples" / "llama_layer.mlir").read_text()


def test_a_token_reads_no_later_token():
    seq = 8
    module = parse_module(make_context(), builder().llama_layer(seq), "<llama>")
    rng = np.random.default_rng(0)
    hidden = rng.standard_normal((seq, 1024)).astype(np.float16)
    changed = hidden.copy()
    changed[5:] = rng.standard_normal((seq - 5, 1024)).astype(np.float16)
    (before,) = run_reference(module, [hidden])
    (after,) = run_reference(module, [changed])
    assert np.array_equal(before[:5], after[:5])
    assert not np.array_equal(before[5:], after[5:])
