"""The interface of a module: `@main`'s inputs and outputs, their names, and the
arrays that feed them (npz files or seeded random data).

Names follow DESIGN.md: the `ge.name` argument/result attribute where the IR
records one, else `arg0..` and `result0..`. At the npu level @main is a host
plan over GM memrefs with no results: arguments marked `npu.output` are the
outputs, named the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, MemRefType, ModuleOp, StringAttr, TensorType

from . import dtypes
from .array_files import CorruptArchive, load_array_file
from .diagnostics import CompileError

NAME_ATTR = "ge.name"
OUTPUT_ATTR = "npu.output"


@dataclass(frozen=True)
class TensorSpec:
    name: str
    type: TensorType

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.type.get_shape())

    @property
    def dtype(self) -> np.dtype:
        return dtypes.to_numpy_dtype(self.type.element_type)


def main_function(module: ModuleOp) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            return op
    raise CompileError("the module has no func.func @main", module)


def _names(attrs: Sequence[DictionaryAttr] | None, count: int, prefix: str) -> list[str]:
    names = []
    for i in range(count):
        name = None
        if attrs is not None and i < len(attrs):
            value = attrs[i].data.get(NAME_ATTR)
            if isinstance(value, StringAttr):
                name = value.data
        names.append(name or f"{prefix}{i}")
    return names


def _specs(names: list[str], types, what: str, where) -> list[TensorSpec]:
    """Inputs and outputs are found by name (npz keys), so a name given twice is an error."""
    specs = []
    repeated = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if repeated is not None:
        raise CompileError(f"@main has two {what}s named '{repeated}' (ge.name must be unique)", where)
    for name, t in zip(names, types):
        if (
            not isinstance(t, TensorType)
            or not dtypes.is_supported(t.element_type)
            or any(d < 0 for d in t.get_shape())
        ):
            raise CompileError(f"@main {what} '{name}' has unsupported type {t}", where)
        specs.append(TensorSpec(name, t))
    return specs


def is_npu_host(main: func.FuncOp) -> bool:
    """Whether @main is an npu-level host plan: GM memref arguments, no results."""
    return any(isinstance(t, MemRefType) for t in main.function_type.inputs.data)


def npu_argument_roles(main: func.FuncOp) -> list[tuple[str, str]]:
    """(role, name) of each argument of an npu host plan: an argument with the unit
    attribute `npu.output` is an output (destination-passing), the others inputs.
    Names as at the graph level: `ge.name`, else arg0.. counting inputs and
    result0.. counting outputs."""
    arg_attrs = main.arg_attrs.data if main.arg_attrs is not None else [None] * len(main.function_type.inputs)
    roles, counts = [], {"input": 0, "output": 0}
    for attrs in arg_attrs:
        data = attrs.data if attrs is not None else {}
        role = "output" if OUTPUT_ATTR in data else "input"
        name = data.get(NAME_ATTR)
        prefix = "result" if role == "output" else "arg"
        roles.append((role, name.data if isinstance(name, StringAttr) else f"{prefix}{counts[role]}"))
        counts[role] += 1
    return roles


def _npu_specs(main: func.FuncOp, role: str) -> list[TensorSpec]:
    specs = []
    for t, (arg_role, name) in zip(main.function_type.inputs.data, npu_argument_roles(main)):
        if arg_role != role:
            continue
        if not isinstance(t, MemRefType) or not dtypes.is_supported(t.element_type):
            raise CompileError(f"@main {role} '{name}' has unsupported type {t}", main)
        specs.append(TensorSpec(name, TensorType(t.element_type, t.get_shape())))
    return specs


def input_specs(main: func.FuncOp) -> list[TensorSpec]:
    return _interface_specs(main, "input")


def output_specs(main: func.FuncOp) -> list[TensorSpec]:
    return _interface_specs(main, "output")


def _interface_specs(main: func.FuncOp, direction: str) -> list[TensorSpec]:
    """@main's inputs or outputs: from the host function's buffers on an npu
    module, else from the function type and its argument / result attributes."""
    if is_npu_host(main):
        return _npu_specs(main, direction)
    if direction == "input":
        types, attrs, default = main.function_type.inputs.data, main.arg_attrs, "arg"
    else:
        types, attrs, default = main.function_type.outputs.data, main.res_attrs, "result"
    attr_list = attrs.data if attrs is not None else None
    return _specs(_names(attr_list, len(types), default), types, direction, main)


def random_inputs(specs: Sequence[TensorSpec], seed: int) -> list[np.ndarray]:
    """Standard normal floats (their magnitude for unsigned formats such as
    f8E8M0FNU), integers in [0, 4), fair booleans: one generator, in order."""
    rng = np.random.default_rng(seed)
    arrays = []
    for spec in specs:
        if dtypes.is_float_dtype(spec.dtype):
            values = rng.standard_normal(spec.shape, dtype=np.float32)
            if float(dtypes.float_info(spec.dtype).min) >= 0:
                values = np.abs(values)
        elif spec.dtype == np.bool_:
            values = rng.random(spec.shape) < 0.5
        else:
            values = rng.integers(0, 4, size=spec.shape)
        arrays.append(np.asarray(values).astype(spec.dtype))
    return arrays


def load_inputs(path: str, specs: Sequence[TensorSpec]) -> list[np.ndarray]:
    """Inputs from an npz file, by name, checked against the signature."""
    try:
        archive = load_array_file(path)
    except OSError as e:
        raise CompileError(f"cannot read inputs from '{path}': {e.strerror or e}") from None
    except CorruptArchive as e:
        raise CompileError(f"cannot read inputs from '{path}': a corrupt npz archive ({e})") from None
    except ValueError:
        raise CompileError(f"cannot read inputs from '{path}': not an npz archive") from None
    if not isinstance(archive, dict):
        raise CompileError(f"cannot read inputs from '{path}': not an npz archive (a single .npy array)")
    arrays = []
    for i, spec in enumerate(specs):
        key = spec.name if spec.name in archive else f"arg{i}"
        if key not in archive:
            raise CompileError(f"'{path}' has no array '{spec.name}' (it has: {', '.join(archive) or 'nothing'})")
        try:
            array = _typed(archive[key], spec.dtype)
            converted = array.astype(spec.dtype)
        except (ValueError, TypeError) as e:
            raise CompileError(f"input '{spec.name}' in '{path}' is not {spec.type}: {e}") from None
        if tuple(array.shape) != spec.shape:
            raise CompileError(
                f"input '{spec.name}' in '{path}' has shape {list(array.shape)}, @main expects {list(spec.shape)}"
            )
        arrays.append(converted)
    return arrays


def _typed(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """npz files keep ml_dtypes arrays (bf16, float8, int4...) as raw bytes (void
    dtype, `save_outputs` writes them so; numpy cannot read ml_dtypes' own
    descriptors back): read them as `dtype` when the item sizes agree."""
    if array.dtype.kind == "V" and array.dtype.itemsize == dtype.itemsize and not _numpy_native(dtype):
        return array.view(dtype)
    return array


def _numpy_native(dtype: np.dtype) -> bool:
    """Whether numpy reads `dtype` back from its descriptor (not ml_dtypes' types)."""
    try:
        return np.dtype(dtype.str) == dtype
    except TypeError:
        return False


def _raw_if_exotic(array: np.ndarray) -> np.ndarray:
    """ml_dtypes arrays as raw bytes of their item size (`array.view(ml_dtypes.bfloat16)`
    reads them back), numpy's own as they are."""
    array = np.asarray(array)
    return array if _numpy_native(array.dtype) else array.view(np.dtype(f"V{array.dtype.itemsize}"))


def save_outputs(path: str, specs: Sequence[TensorSpec], arrays: Sequence[np.ndarray]) -> None:
    try:
        np.savez(path, **{spec.name: _raw_if_exotic(array) for spec, array in zip(specs, arrays)})
    except OSError as e:
        raise CompileError(f"cannot write outputs to '{path}': {e.strerror or e}") from None


def summarize(spec: TensorSpec, array: np.ndarray) -> str:
    """`name: tensor<...> min=.. max=.. mean=..` for one output."""
    head = f"{spec.name}: {spec.type}"
    if array.size == 0:
        return head + " (empty)"
    values = array.astype(np.float64)
    nonfinite = int(np.count_nonzero(~np.isfinite(values)))
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return head + " all non-finite"
    text = f"{head} min={finite.min():.6g} max={finite.max():.6g} mean={finite.mean():.6g}"
    if nonfinite:
        text += f" non-finite={nonfinite}"
    return text
