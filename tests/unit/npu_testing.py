"""Helpers for the npu dialect and simulator tests: small modules from text, running
them, and presets with a few numbers changed."""

from __future__ import annotations

import re
import tomllib
import zlib
from pathlib import Path

from gecomp.dialects.context import make_context
from gecomp.core.parsing import parse_module, verify_module
from gecomp.core.passes import parse_pass_pipeline, run_pipeline
from gecomp.simulator.hardware import PRESET_DIR
from gecomp.simulator.npu import simulate
from gecomp.simulator.npu.hazards import PIPE_INDEX
from gecomp.core.signature import input_specs, main_function, random_inputs


def gm(n: int | str, dtype: str = "f16") -> str:
    return f"memref<{n}x{dtype}, #npu.space<gm>>"


def local(n: int | str, space: str, dtype: str = "f16") -> str:
    return f"memref<{n}x{dtype}, #npu.space<{space}>>"


def kernel_module(
    body: str,
    inputs: dict[str, str],
    outputs: dict[str, str],
    block_dim: int = 1,
    launch: str = "",
    arena: int | None = None,
) -> str:
    """A module with one kernel @k over the GM arguments `inputs` then `outputs`
    (name -> type), `body` as its body (with %c0 defined), and @main launching it."""
    args = {**inputs, **outputs}
    params = ", ".join(f"%{n}: {t}" for n, t in args.items())
    main_params = ", ".join(
        f'%{n}: {t} {{ge.name = "{n}"{", npu.output" if n in outputs else ""}}}' for n, t in args.items()
    )
    names = ", ".join(f"%{n}" for n in args)
    attrs = f" attributes {{npu.gm_arena_bytes = {arena} : i64}}" if arena is not None else ""
    return f"""builtin.module{attrs} {{
npu.kernel @k({params}) attributes {{block_dim = {block_dim}}} {{
  %c0 = arith.constant 0 : index
{body}
}}
func.func @main({main_params}) {{
  {launch or f"npu.launch @k({names})"}
  func.return
}}
}}"""


def parse(text: str):
    module = parse_module(make_context(), text, "test.mlir")
    verify_module(module)
    return module


def run(text: str, inputs=None, hw="tiny", seed: int = 0, **options):
    """Simulate `text` (inputs: a list of arrays, or random from `seed`)."""
    module = parse(text)
    if inputs is None:
        inputs = random_inputs(input_specs(main_function(module)), seed)
    return simulate(module, inputs, hw=hw, **options)


def busy(report, pipe: str) -> int:
    return report.busy[PIPE_INDEX[pipe]]


def preset_file(tmp_path: Path, base: str = "tiny", **changes) -> str:
    """A copy of preset `base` with `changes` applied; keys are dotted TOML paths
    ("paths.gm_to_ub.bytes_per_cycle" = 64). Returns the file's path."""
    text = (Path(PRESET_DIR) / f"{base}.toml").read_text()
    for dotted, value in changes.items():
        *tables, key = dotted.split(".")
        text = _replace(text, tables, key, value)
    path = tmp_path / f"{base}-{zlib.crc32(repr(sorted(changes.items())).encode()):08x}.toml"
    path.write_text(text)
    tomllib.loads(text)
    return str(path)


def _toml(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)


def _replace(text: str, tables: list[str], key: str, value) -> str:
    if len(tables) == 2 and tables[0] == "paths":
        # paths.<name> = { bytes_per_cycle = .., latency = .. } on one line
        pattern = re.compile(rf"^({tables[1]} = \{{.*?\b{key} = )([^,}}]+)", re.M)
    else:
        section = re.search(rf"^\[{tables[0]}\]$", text, re.M)
        assert section, tables
        head, tail = text[: section.end()], text[section.end() :]
        pattern = re.compile(rf"^({key}\s*=\s*)(\[[^\]]*\]|[^#\n]+?)(\s*(#.*)?)$", re.M)
        new_tail, count = pattern.subn(lambda m: m.group(1) + _toml(value) + m.group(3), tail, count=1)
        assert count == 1, (tables, key)
        return head + new_tail
    new, count = pattern.subn(lambda m: m.group(1) + _toml(value), text, count=1)
    assert count == 1, (tables, key)
    return new



MATMUL_THEN_NORM = """
func.func @main(%x: tensor<64x256xf16>) -> tensor<64x128xf16> {
  %w = ge.const #ge.random<normal, seed = 1, mean = 0.0, std = 0.05> : tensor<256x128xf16>
  %y = ge.matmul %x, %w : (tensor<64x256xf16>, tensor<256x128xf16>) -> tensor<64x128xf16>
  %g = ge.const #ge.random<uniform, seed = 2, low = 0.9, high = 1.1> : tensor<128xf16>
  %b = ge.const #ge.random<normal, seed = 3, mean = 0.0, std = 0.02> : tensor<128xf16>
  %n = ge.layer_norm %y, %g, %b {epsilon = 1.0e-5} : (tensor<64x128xf16>, tensor<128xf16>, tensor<128xf16>) -> tensor<64x128xf16>
  func.return %n : tensor<64x128xf16>
}
"""
"""A graph that `ge-compile` turns into two kernels merged into one: a cube phase,
then a vector phase after a barrier."""


def compiled_graph(text: str, pipeline: str = "ge-compile"):
    """(the module compiled by `pipeline`, random inputs for it)."""
    ctx = make_context()
    module = parse_module(ctx, text, "model.mlir")
    inputs = random_inputs(input_specs(main_function(module)), 0)
    run_pipeline(parse_pass_pipeline(pipeline), ctx, module)
    return module, inputs
