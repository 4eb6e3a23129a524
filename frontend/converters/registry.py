"""The table of ONNX ops the importer knows: op type -> `Converter`.

Each family module registers its converters with `@converts(...)`; the importer
and the conformance harness only read `CONVERTERS`.
"""

from __future__ import annotations

from collections.abc import Callable

from .context import Converter, NodeContext

CONVERTERS: dict[str, Converter] = {}


def converts(*op_types: str, static: tuple[int, ...] = (), reads_data: bool = True) -> Callable:
    """Registers the decorated function as the converter of `op_types` (default
    domain). `static` lists the inputs that must be import-time constants;
    `reads_data=False` marks ops that read only their inputs' shapes and types."""

    def register(function: Callable[[NodeContext], object]):
        for op_type in op_types:
            assert op_type not in CONVERTERS, f"{op_type} registered twice"
            CONVERTERS[op_type] = Converter(op_type, function, tuple(static), reads_data)
        return function

    return register


def has_converter(domain: str, op_type: str) -> bool:
    """Whether an op of the default domain has a converter (other domains have none)."""
    return domain in ("", "ai.onnx") and op_type in CONVERTERS
