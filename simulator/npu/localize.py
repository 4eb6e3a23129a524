"""Accuracy localisation (`ge-sim --pipeline P --compare-each`): the first kernel
whose numbers go wrong, and the ops it came from.

The reference interpreter runs the module as given and keeps every value by name;
the simulator runs the compiled module and, after each launch, snapshots the GM
buffers the launch wrote. A buffer is named after the graph value it holds (the
lowering carries names down: `relu1`, or `relu1_5hd` once the layout pass put it
in NC1HWC0), so each snapshot is turned back into its logical tensor with the
format its value had before lowering (`formats.from_physical`) and compared with
the reference value of the same name (the name itself, or the name it was
derived from: `relu1_5hd` -> `relu1`), at the tolerance of the less precise of
the two element types. Values the passes made up (a fused op's partial sums, a
converted copy with no counterpart) have no reference and are listed as such.

With GM reuse (`reuse=true`, the default) a launch may write two values into one
place (a merged kernel's phases): such a buffer is reported as overwritten, not
compared; `ge-compile{reuse=false}` compares every one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp, TensorType

from ...core.diagnostics import SourceLocation, location_of
from ...dialects.ge.formats import format_of, from_physical
from ..compare import Mismatch, least_precise, worst_mismatch
from ...dialects.evaluation import evaluate_values
from ...core.signature import main_function, output_specs
from . import simulate

OK, MISMATCH, NO_REFERENCE, OVERWRITTEN = "ok", "mismatch", "no reference", "overwritten"


@dataclass
class KernelOutput:
    """One value one launch wrote, and how it compares with the reference."""

    launch: int
    kernel: str
    sources: list[str]
    location: SourceLocation | None
    value: str
    status: str
    mismatch: Mismatch | None = None
    compared_with: str = ""
    actual: np.ndarray | None = None

    def describe(self) -> str:
        where = f" at {self.location}" if self.location is not None else ""
        sources = self.sources if len(self.sources) <= 2 else [f"{len(self.sources)} phases"]
        made_of = f" ({', '.join(sources)}{where})" if sources else where
        return f"launch #{self.launch} @{self.kernel}{made_of}, output '{self.value}'"


def named_types(module: ModuleOp) -> dict[str, TensorType]:
    """Name -> tensor type (format encoding included) of the values of a ge or
    fused module: what a GM buffer of that name holds, logically."""
    found: dict[str, TensorType] = {}
    main = main_function(module)
    for spec in output_specs(main):  # @main's outputs leave in ND
        found[spec.name] = TensorType(spec.type.element_type, spec.type.get_shape())
    for op in module.walk():
        for value in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)):
            if value.name_hint and isinstance(value.type, TensorType):
                found.setdefault(value.name_hint, value.type)
    return found


def reference_by_name(module: ModuleOp, inputs: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """Every value of `@main` computed by the reference interpreter, by name; a
    name given to several values is left out (it would be ambiguous)."""
    main = main_function(module)
    env = evaluate_values(main.body.block, list(inputs))
    returned = main.body.block.last_op.operands
    # The outputs also go by their names in the signature (`ge.name`), as the
    # buffers of @main's output arguments do.
    named = [(value.name_hint, array) for value, array in env.items()]
    named += [(spec.name, env[value]) for spec, value in zip(output_specs(main), returned)]
    by_name: dict[str, np.ndarray] = {}
    repeated: set[str] = set()
    for name, array in named:
        if not name:
            continue
        if name in by_name and by_name[name] is not array:
            repeated.add(name)
        by_name[name] = array
    return {n: a for n, a in by_name.items() if n not in repeated}


def _counterpart(name: str, reference: dict[str, np.ndarray]) -> str | None:
    """The reference value `name` stands for: itself, or the name it was derived
    from by the passes' suffixes (`x_5hd`, `h_nz`, `y_f16`)."""
    parts = name.split("_")
    for cut in range(len(parts), 0, -1):
        candidate = "_".join(parts[:cut])
        if candidate in reference:
            return candidate
    return None


def compare_each(
    compiled: ModuleOp,
    types: dict[str, TensorType],
    reference: dict[str, np.ndarray],
    inputs: Sequence[np.ndarray],
    hw=None,
    floor: np.dtype | None = None,
) -> list[KernelOutput]:
    """Simulate `compiled`, comparing what each launch wrote with `reference`, at
    the tolerance of the buffer's type or of `floor` if looser (`compiled_floor`:
    f16 when a precision mode computed ops in f16 whose buffers stay f32)."""
    kernels = {op.sym_name.data: op for op in compiled.walk() if op.name == "npu.kernel"}
    found: list[KernelOutput] = []

    def after_launch(launch) -> None:
        kernel = kernels.get(launch.program.name)
        sources = kernel.sources() if kernel is not None else []
        location = location_of(kernel) if kernel is not None else None
        written = [b for b in dict.fromkeys(launch.args) if launch.modes(b)[1]]
        holds = {launch.args[i]: name for i, name in launch.op.written_values().items() if i < len(launch.args)}
        for buffer in written:
            name = holds.get(buffer) or buffer.value.name_hint or buffer.label
            entry = KernelOutput(launch.index, launch.program.name, sources, location, name, NO_REFERENCE)
            found.append(entry)
            if any(other is not buffer and buffer.overlaps(other) for other in written):
                entry.status = OVERWRITTEN
                continue
            logical = _logical(buffer, types.get(name))
            counterpart = _counterpart(name, reference)
            if logical is None or counterpart is None or reference[counterpart].shape != logical.shape:
                continue
            entry.actual, entry.compared_with = logical, counterpart
            expected = reference[counterpart]
            own = logical.dtype if np.issubdtype(logical.dtype, np.floating) else None
            looser = least_precise(own, floor) if own is not None else None
            entry.mismatch = worst_mismatch(counterpart, expected, logical.astype(expected.dtype), looser)
            entry.status = MISMATCH if entry.mismatch is not None and entry.mismatch.ratio > 1.0 else OK

    simulate(compiled, inputs, hw=hw, after_launch=after_launch)
    return found


def _logical(buffer, value_type: TensorType | None) -> np.ndarray | None:
    """The logical tensor a GM buffer holds, if its value's type is known."""
    if value_type is None:
        return None
    image = buffer.array[: buffer.numel].reshape(buffer.shape).copy()
    try:
        return from_physical(image, format_of(value_type), value_type.get_shape())
    except ValueError:
        return None


def first_mismatch(outputs: Sequence[KernelOutput]) -> KernelOutput | None:
    return next((o for o in outputs if o.status == MISMATCH), None)


def summary(outputs: Sequence[KernelOutput]) -> str:
    """A line per output written, in launch order; the verdict last."""
    lines = []
    for o in outputs:
        detail = {
            OK: f"ok vs '{o.compared_with}'" + (f" (worst {o.mismatch.ratio:.3g}x the tolerance)" if o.mismatch else ""),
            MISMATCH: f"MISMATCH vs '{o.compared_with}': {o.mismatch}",
            NO_REFERENCE: "no reference value of that name",
            OVERWRITTEN: "overwritten within its launch (compile with reuse=false to compare it)",
        }[o.status]
        lines.append(f"{o.describe()}: {detail}")
    first = first_mismatch(outputs)
    compared = sum(o.status in (OK, MISMATCH) for o in outputs)
    lines.append(
        f"compare-each: {compared} of {len(outputs)} kernel outputs compared; "
        + (f"first beyond tolerance: {first.describe()}" if first else "all within tolerance")
    )
    return "\n".join(lines)
