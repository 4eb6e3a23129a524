"""Building ge graphs in Python, in the spirit of GE's EagerStyle API.

    g = GraphBuilder("mlp", dtype="f16")
    x = g.input([128, 512], name="x")
    w = g.random([512, 256], std=0.02)
    y = ops.relu(ops.bias_add(x @ w, g.random([256])))
    g.output(y, name="y")
    module = g.build()

Every op is created at once with `Op.new`, which runs the op's shape rule (its
verifier): a shape or dtype mistake raises `BuildError` at the line that made it,
with the op's own message, not later when the module is verified. Ops remember
that line as their location, so later diagnostics lead back to the script.

`Tensor` overloads `+ - * / ** @`, unary `-` and `abs()`, and numpy-style
indexing (`x[:, 0:4]`). Python scalars and numpy arrays mixed into an expression
become constants of the tensor's element type. The op functions (`ops.relu`,
`ops.softmax`...) are in `ops.py`; `GraphBuilder.op` builds any op class.

The ONNX importer builds through this class too (with the ONNX node's location
in place of the Python line), so both frontends make ops the same way.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FileLineColLoc,
    IntAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from ..core import dtypes
from ..core.diagnostics import CompileError, SourceLocation
from ..core.parsing import verify_module
from ..dialects.ge import (
    AbsOp,
    AddOp,
    BatchMatmulOp,
    ConstOp,
    DivOp,
    GEOp,
    MatmulOp,
    MulOp,
    NegOp,
    PowOp,
    RandomAttr,
    ReshapeOp,
    SliceOp,
    SubOp,
)
from ..core.signature import NAME_ATTR


class BuildError(CompileError):
    """A graph that cannot be built as written (shape, dtype or usage), raised where
    the offending call is."""


_NOT_OVERRIDDEN = object()


class GraphBuilder:
    """Builds one `func.func @main` (inside a module named `name`)."""

    def __init__(self, name: str = "main", dtype: str | Attribute | np.dtype = "f32"):
        self.name = name
        self.dtype = element_type(dtype)
        self._block = Block()
        self._input_names: list[str | None] = []
        self._outputs: list[tuple[Tensor, str | None]] = []
        self._seeds = itertools.count(1)
        self._location = _NOT_OVERRIDDEN
        self._built = False

    # ---- values entering the graph ---------------------------------------------------------

    def input(self, shape: Sequence[int], dtype=None, name: str | None = None) -> Tensor:
        """A graph input (an argument of @main) named `name` (`ge.name`)."""
        self._check_open()
        t = TensorType(self._dtype(dtype), [int(d) for d in shape])
        arg = self._block.insert_arg(t, len(self._block.args))
        if name:
            arg.name_hint = value_name(name)
        self._input_names.append(name)
        return Tensor(self, arg)

    def const(self, value, dtype=None, name: str | None = None) -> Tensor:
        """A dense constant from a numpy array or a Python scalar (rank 0), stored as
        `dtype` (default: the array's own type, the graph's for Python floats)."""
        array = np.asarray(value)
        if dtype is None and not isinstance(value, np.ndarray | np.generic):
            dtype = self.dtype if array.dtype.kind == "f" else None
        try:
            t = TensorType(self._dtype(dtype) if dtype is not None else dtypes.from_numpy_dtype(array.dtype),
                           list(array.shape))
        except ValueError as e:
            raise BuildError(str(e), self.current_location()) from None
        return self._add(ConstOp.from_array(array, t), name)[0]

    def random(self, shape: Sequence[int], dtype=None, std: float = 0.02, mean: float = 0.0,
               seed: int | None = None, name: str | None = None) -> Tensor:
        """A normally distributed constant `#ge.random<normal, ...>`: one line in the IR
        however large. Seeds count up from 1 per graph unless given."""
        attr = RandomAttr.normal(self._seed(seed), mean, std)
        return self._random(attr, shape, dtype, name)

    def uniform(self, shape: Sequence[int], low: float = 0.0, high: float = 1.0, dtype=None,
                seed: int | None = None, name: str | None = None) -> Tensor:
        """A uniformly distributed constant in [low, high) (`#ge.random<uniform, ...>`)."""
        attr = RandomAttr.uniform(self._seed(seed), low, high)
        return self._random(attr, shape, dtype, name)

    def _random(self, attr: RandomAttr, shape, dtype, name) -> Tensor:
        t = TensorType(self._dtype(dtype), [int(d) for d in shape])
        return self._add(ConstOp.from_value(attr, t), name)[0]

    def _seed(self, seed: int | None) -> int:
        return next(self._seeds) if seed is None else int(seed)

    # ---- ops -------------------------------------------------------------------------------

    def op(self, op_class: type[GEOp], *operands, result_type: TensorType | Sequence[TensorType] | None = None,
           **attrs: Any) -> Tensor | list[Tensor]:
        """Builds `op_class` on `operands` (Tensors; scalars and arrays become constants
        of the first tensor's element type); one Tensor per result, a list if the op
        may have several."""
        self._check_open()
        like = next((o for o in operands if isinstance(o, Tensor)), None)
        values = [self._operand(o, like) for o in operands]
        try:
            op = op_class.new(*values, result_type=result_type, **attrs)
        except VerifyException as e:
            raise BuildError(f"'{op_class.name}' op {_first_line(e)}", self.current_location()) from None
        results = self._add(op)
        definition = op_class.get_irdl_definition()
        single = len(definition.results) == 1 and not _is_variadic(definition.results[0][1])
        return results[0] if single else results

    def _operand(self, o, like: Tensor | None) -> SSAValue:
        if isinstance(o, Tensor):
            if o.graph is not self:
                raise BuildError("operand belongs to another graph", self.current_location())
            return o.value
        dtype = like.type.element_type if like is not None else None
        return self.const(o, dtype).value

    def _add(self, op: Operation, name: str | None = None) -> list[Tensor]:
        where = self.current_location()
        if where is not None:
            op.location = FileLineColLoc(StringAttr(where.file), IntAttr(where.line), IntAttr(where.col))
        self._block.add_op(op)
        tensors = [Tensor(self, r) for r in op.results]
        if name is not None and tensors:
            tensors[0].name = name
        return tensors

    # ---- values leaving the graph ------------------------------------------------------------

    def output(self, tensor: Tensor, name: str | None = None) -> None:
        """Makes `tensor` a result of @main, named `name` (`ge.name`)."""
        self._check_open()
        if not isinstance(tensor, Tensor) or tensor.graph is not self:
            raise BuildError("output() takes a Tensor of this graph", self.current_location())
        self._outputs.append((tensor, name))

    def build(self) -> ModuleOp:
        """The verified module holding `func.func @main`. A builder builds once."""
        self._check_open()
        if not self._outputs:
            raise BuildError(f"graph '{self.name}' has no outputs (call output())", self.current_location())
        self._built = True
        results = [t.value for t, _ in self._outputs]
        self._block.add_op(func.ReturnOp(*results))
        main = func.FuncOp(
            "main",
            ([a.type for a in self._block.args], [r.type for r in results]),
            Region(self._block),
            arg_attrs=_name_attrs(self._input_names),
            res_attrs=_name_attrs([n for _, n in self._outputs]),
        )
        module = ModuleOp([main], sym_name=StringAttr(self.name) if self.name else None)
        verify_module(module)
        return module

    # ---- locations -------------------------------------------------------------------------

    @contextmanager
    def located(self, location: SourceLocation | None) -> Iterator[None]:
        """Ops built inside get `location` (or none) instead of the Python call site:
        how an importer points ops at the file they came from."""
        saved, self._location = self._location, location
        try:
            yield
        finally:
            self._location = saved

    def current_location(self) -> SourceLocation | None:
        """Where the op being built comes from: the `located` one, else the user's line."""
        if self._location is not _NOT_OVERRIDDEN:
            return self._location
        return _call_site()

    # ---- helpers -----------------------------------------------------------------------------

    def _dtype(self, dtype) -> Attribute:
        if dtype is None:
            return self.dtype
        try:
            return element_type(dtype)
        except ValueError as e:
            raise BuildError(str(e), self.current_location()) from None

    def _check_open(self) -> None:
        if self._built:
            raise BuildError(f"graph '{self.name}' is already built", self.current_location())


class Tensor:
    """A value of a graph being built: its type, and Python operators that add ops."""

    __slots__ = ("graph", "value")

    def __init__(self, graph: GraphBuilder, value: SSAValue):
        self.graph = graph
        self.value = value

    @property
    def type(self) -> TensorType:
        return self.value.type

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.type.get_shape())

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def dtype(self) -> Attribute:
        return self.type.element_type

    @property
    def name(self) -> str | None:
        return self.value.name_hint

    @name.setter
    def name(self, name: str) -> None:
        """Names the value in the printed IR (`%name`); invalid characters become `_`."""
        self.value.name_hint = value_name(name)

    def __repr__(self) -> str:
        return f"Tensor(%{self.name or '?'}: {self.type})"

    # arithmetic
    def __add__(self, other):
        return self.graph.op(AddOp, self, other)

    def __radd__(self, other):
        return self.graph.op(AddOp, other, self)

    def __sub__(self, other):
        return self.graph.op(SubOp, self, other)

    def __rsub__(self, other):
        return self.graph.op(SubOp, other, self)

    def __mul__(self, other):
        return self.graph.op(MulOp, self, other)

    def __rmul__(self, other):
        return self.graph.op(MulOp, other, self)

    def __truediv__(self, other):
        return self.graph.op(DivOp, self, other)

    def __rtruediv__(self, other):
        return self.graph.op(DivOp, other, self)

    def __pow__(self, other):
        return self.graph.op(PowOp, self, other)

    def __rpow__(self, other):
        return self.graph.op(PowOp, other, self)

    def __neg__(self):
        return self.graph.op(NegOp, self)

    def __abs__(self):
        return self.graph.op(AbsOp, self)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def __getitem__(self, index):
        return getitem(self, index)

    # shape
    def reshape(self, shape: Sequence[int]) -> Tensor:
        return reshape(self, shape)

    def transpose(self, perm: Sequence[int] | None = None) -> Tensor:
        from ..dialects.ge import TransposeOp

        perm = tuple(reversed(range(self.rank))) if perm is None else tuple(perm)
        return self.graph.op(TransposeOp, self, perm=perm)


# ---- ops whose Python form differs from the op's own --------------------------------------


def matmul(a, b, transpose_a: bool = False, transpose_b: bool = False) -> Tensor:
    """`a @ b`: `ge.matmul` for two matrices, `ge.batch_matmul` (batch dims
    broadcast) when either has rank > 2."""
    g = graph_of(a, b)
    a, b = (x if isinstance(x, Tensor) else g.const(x) for x in (a, b))
    if a.rank < 2 or b.rank < 2:
        raise BuildError(
            f"matmul needs operands of rank >= 2, got {a.type} and {b.type} (reshape vectors first)",
            g.current_location(),
        )
    op_class = MatmulOp if a.rank == 2 and b.rank == 2 else BatchMatmulOp
    return g.op(op_class, a, b, transpose_a=transpose_a, transpose_b=transpose_b)


def reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    """Same elements in a new shape; one dim may be -1 (inferred)."""
    shape = [int(d) for d in shape]
    if shape.count(-1) == 1:
        known = int(np.prod([d for d in shape if d != -1]))
        size = int(np.prod(x.shape))
        if known == 0 or size % known:
            raise BuildError(f"cannot reshape {x.type} into {shape}", x.graph.current_location())
        shape[shape.index(-1)] = size // known
    return x.graph.op(ReshapeOp, x, result_type=TensorType(x.dtype, shape))


def slice_bounds(size: int, start: int, end: int, step: int) -> tuple[int, int, int]:
    """numpy's `x[start:end:step]` on a dim of `size` in `ge.slice`'s normalised form
    (out-of-range bounds clamp; an empty result is `0:0:1`)."""
    if step == 0:
        raise ValueError("slice step cannot be zero")
    start, end, step = slice(start, end, step).indices(size)
    if len(range(start, end, step)) == 0:
        return 0, 0, 1
    return start, end, step


def slice_(x: Tensor, starts: Sequence[int], ends: Sequence[int], axes: Sequence[int] | None = None,
           steps: Sequence[int] | None = None) -> Tensor:
    """numpy-style slicing of the given axes (ONNX Slice semantics)."""
    rank = x.rank
    axes = list(range(len(starts))) if axes is None else [a + rank if a < 0 else a for a in axes]
    steps = [1] * len(starts) if steps is None else list(steps)
    bounds = [(0, d, 1) for d in x.shape]
    for axis, start, end, step in zip(axes, starts, ends, steps):
        if not 0 <= axis < rank:
            raise BuildError(f"slice axis {axis} is out of range for rank {rank}", x.graph.current_location())
        try:
            bounds[axis] = slice_bounds(x.shape[axis], int(start), int(end), int(step))
        except ValueError as e:
            raise BuildError(str(e), x.graph.current_location()) from None
    return x.graph.op(SliceOp, x, starts=[b[0] for b in bounds], ends=[b[1] for b in bounds],
                      steps=[b[2] for b in bounds])


def getitem(x: Tensor, index) -> Tensor:
    """`x[...]` with integers and slices (no ellipsis, no arrays): integer indices
    drop their dim."""
    index = index if isinstance(index, tuple) else (index,)
    if len(index) > x.rank or any(not isinstance(i, int | slice) for i in index):
        raise BuildError(
            f"index {index!r} is not supported for {x.type} (use integers and slices)", x.graph.current_location()
        )
    starts, ends, steps, kept = [], [], [], []
    for axis, i in enumerate(index):
        if isinstance(i, int):
            if not -x.shape[axis] <= i < x.shape[axis]:
                raise BuildError(f"index {i} is out of range for dim {axis} of {x.type}", x.graph.current_location())
            i = i % x.shape[axis]
            starts.append(i), ends.append(i + 1), steps.append(1)
        else:
            starts.append(i.start if i.start is not None else (0 if (i.step or 1) > 0 else x.shape[axis] - 1))
            ends.append(i.stop if i.stop is not None else (sys.maxsize if (i.step or 1) > 0 else -sys.maxsize))
            steps.append(i.step or 1)
            kept.append(axis)
    kept += list(range(len(index), x.rank))
    sliced = slice_(x, starts, ends, steps=steps)
    if len(kept) == x.rank:
        return sliced
    return reshape(sliced, [sliced.shape[a] for a in kept])


# ---- helpers -----------------------------------------------------------------------------


def element_type(dtype) -> Attribute:
    """An element type from a name (`"f16"`, `"float16"`), a numpy dtype or an xDSL type."""
    if isinstance(dtype, Attribute):
        if not dtypes.is_supported(dtype):
            raise ValueError(f"unsupported element type {dtype}")
        return dtype
    if isinstance(dtype, str):
        try:
            return dtypes.element_type_by_name(dtype)
        except ValueError:
            pass
    try:
        return dtypes.from_numpy_dtype(np.dtype(dtype))
    except TypeError:
        raise ValueError(f"unknown element type {dtype!r}") from None


def value_name(name: str) -> str:
    """`name` made a valid SSA value name (`onnx::MatMul_3` -> `onnx__MatMul_3`)."""
    cleaned = "".join(c if c.isalnum() or c in "_$.-" else "_" for c in name) or "v"
    return cleaned if not cleaned[0].isdigit() else "v" + cleaned


def graph_of(*operands) -> GraphBuilder:
    for o in operands:
        if isinstance(o, Tensor):
            return o.graph
    raise TypeError("at least one operand must be a Tensor")


def _name_attrs(names: Sequence[str | None]) -> ArrayAttr | None:
    if not any(names):
        return None
    return ArrayAttr([DictionaryAttr({NAME_ATTR: StringAttr(n)} if n else {}) for n in names])


def _is_variadic(definition) -> bool:
    from xdsl.irdl.operations import VariadicDef

    return isinstance(definition, VariadicDef)


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


_FRONTEND = __name__.rsplit(".", 1)[0] + "."


def _call_site() -> SourceLocation | None:
    """The first frame outside gecomp's frontend: where the user called the builder."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(_FRONTEND):
        frame = frame.f_back
    if frame is None:
        return None
    code = frame.f_code
    col = 1
    if frame.f_lasti >= 0:
        position = next(itertools.islice(code.co_positions(), frame.f_lasti // 2, None), None)
        if position is not None and position[2] is not None:
            col = position[2] + 1
    return SourceLocation(code.co_filename, frame.f_lineno, col)
