"""Precision modes (CANN ATC's `--precision_mode`) and what a compiled module
records about the precision it was compiled at.

The modes are ATC's; `transforms/graph/precision.py` applies them. A module the
pass lowered carries two attributes on its `builtin.module`, so every later
consumer (`ge-sim --check`'s tolerance, its report) knows what was compiled
without re-deriving it from types:

    ge.precision = "allow_mix_precision"
    ge.precision_lowered = {"ge.matmul" = 6 : i64, "ge.add" = 4 : i64}   # ops computed in f16
"""

from __future__ import annotations

from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, StringAttr

FORCE_FP16 = "force_fp16"
ALLOW_FP32_TO_FP16 = "allow_fp32_to_fp16"
MUST_KEEP_ORIGIN_DTYPE = "must_keep_origin_dtype"
ALLOW_MIX_PRECISION = "allow_mix_precision"

MODES = (FORCE_FP16, ALLOW_FP32_TO_FP16, MUST_KEEP_ORIGIN_DTYPE, ALLOW_MIX_PRECISION)

DEFAULT_MODE = MUST_KEEP_ORIGIN_DTYPE
"""ge-compile's default. ATC's own default for the Ascend 910 (inference,
`atc --soc_version=Ascend910`) is force_fp16; see docs/compiling.md for why
this compiler keeps the model's types unless asked."""

MODE_ATTR = "ge.precision"
LOWERED_ATTR = "ge.precision_lowered"


def record(module: ModuleOp, mode: str, lowered: dict[str, int]) -> None:
    """Note on `module` the mode it was compiled with and how many ops of each
    name were computed in f16."""
    module.attributes[MODE_ATTR] = StringAttr(mode)
    module.attributes[LOWERED_ATTR] = DictionaryAttr(
        {name: IntegerAttr(count, 64) for name, count in sorted(lowered.items())}
    )


def recorded_mode(module: ModuleOp) -> str | None:
    attr = module.attributes.get(MODE_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


def recorded_lowered(module: ModuleOp) -> dict[str, int]:
    """Op name -> count of ops the precision pass computed in f16 (empty if none)."""
    attr = module.attributes.get(LOWERED_ATTR)
    if not isinstance(attr, DictionaryAttr):
        return {}
    return {name: value.value.data for name, value in attr.data.items() if isinstance(value, IntegerAttr)}


def summary(module: ModuleOp) -> str | None:
    """One line for reports: the mode and the ops computed in f16, or None when the
    module records no precision mode."""
    mode = recorded_mode(module)
    if mode is None:
        return None
    lowered = recorded_lowered(module)
    if not lowered:
        return f"precision: {mode} (no op lowered: every op in its original type)"
    listed = ", ".join(f"{name.removeprefix('ge.')} x{count}" for name, count in lowered.items())
    return f"precision: {mode}; computed in f16: {listed}"
