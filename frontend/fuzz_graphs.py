"""Random valid ONNX graphs for differential fuzzing (`bench/fuzz.py`), NNSmith-style.

A graph grows node by node from a pool of live tensors: each step picks an op
of the importer's table (`CONVERTERS`) that applies to some tensor of the pool,
draws its attributes so that the node is valid (shape rules, axes in range,
windows that fit), and adds its outputs to the pool. Shapes take awkward sizes
(1, 3, 17, 33, 100); element types are f32 and f16.

Values stay meaningful in f16: every tensor carries an estimate of its largest
magnitude (`Tensor.bound`), an op whose result would leave the range squashes
its operand first (Tanh), and operands that ops need in a domain are guarded
with nodes of their own (Log, Sqrt, Reciprocal and a tensor exponent of Pow
read |x| + c; a divisor is |x| + c; a negative integer power reads -(|x| + c)
half the time, so negative bases are exercised where the result is defined).
Weights are scaled by 1/sqrt(fan-in).

Everything is drawn from one `numpy.random.Generator`: a (seed, index) pair
names one graph and its inputs, on any machine.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .converters import CONVERTERS

OPSET = 23
"""RMSNormalization is in opset 23; onnxruntime runs every op of the table at it."""

SIZES = (1, 3, 17, 33, 100, 2, 4, 8, 16)
"""Dimension sizes: the awkward ones first, and a few round ones."""

MAX_ELEMENTS = 4096
"""No tensor grows beyond this (the simulator runs every element)."""

_BOUND = 8.0
"""Magnitudes beyond this are squashed before an op that grows them."""

DTYPES = {"f32": np.float32, "f16": np.float16}


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...]
    dtype: str  # "f32" | "f16"
    bound: float  # an estimate of the largest magnitude


@dataclass
class FuzzGraph:
    """One generated graph: the model and the data of its inputs."""

    model: object  # onnx.ModelProto
    inputs: dict[str, np.ndarray]
    seed: int
    index: int

    @property
    def name(self) -> str:
        return f"s{self.seed}-g{self.index}"


@dataclass
class _Builder:
    rng: np.random.Generator
    nodes: list = field(default_factory=list)
    initializers: list = field(default_factory=list)
    inputs: list = field(default_factory=list)  # (Tensor, data)
    pool: list[Tensor] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    counter: int = 0

    # ---- names, constants, nodes ----------------------------------------------------------

    def fresh(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, array: np.ndarray, prefix: str = "c") -> str:
        from onnx import numpy_helper

        name = self.fresh(prefix)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op_type: str, inputs: list[str], outputs: int = 1, **attrs) -> list[str]:
        from onnx import helper

        names = [self.fresh() for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names, name=self.fresh(op_type.lower()), **attrs))
        self.used.update(i for i in inputs if i)
        return names

    def add(self, name: str, shape, dtype: str, bound: float) -> Tensor:
        t = Tensor(name, tuple(int(d) for d in shape), dtype, float(min(bound, 1e4)))
        self.pool.append(t)
        return t

    def new_input(self, shape, dtype: str) -> Tensor:
        name = self.fresh("x")
        data = self.rng.uniform(-2.0, 2.0, size=shape).astype(DTYPES[dtype])
        t = Tensor(name, tuple(shape), dtype, 2.0)
        self.inputs.append((t, data))
        self.pool.append(t)
        return t

    def values(self, shape, dtype: str, scale: float = 1.0) -> str:
        return self.const((self.rng.uniform(-1.0, 1.0, size=shape) * scale).astype(DTYPES[dtype]))

    # ---- picking ---------------------------------------------------------------------------

    def pick(self, want: Callable[[Tensor], bool] = lambda t: True) -> Tensor | None:
        """A pool tensor satisfying `want`, the recent ones (and unused ones) favoured."""
        found = [t for t in self.pool if t.shape and want(t)]  # rank 0 feeds nothing
        if not found:
            return None
        weights = np.array([(i + 1) * (3 if t.name not in self.used else 1) for i, t in enumerate(found)], float)
        return found[self.rng.choice(len(found), p=weights / weights.sum())]

    def choice(self, options):
        return options[self.rng.integers(len(options))]

    def shape(self, rank: int | None = None) -> tuple[int, ...]:
        rank = int(self.rng.integers(1, 5)) if rank is None else rank
        while True:
            shape = tuple(int(self.choice(SIZES)) for _ in range(rank))
            if math.prod(shape) <= MAX_ELEMENTS // 4:
                return shape

    # ---- guards ----------------------------------------------------------------------------

    def tame(self, t: Tensor, limit: float = _BOUND) -> Tensor:
        """`t` itself if its magnitude stays within `limit`, else Tanh(t) * limit / 2."""
        if t.bound <= limit:
            return t
        (squashed,) = self.node("Tanh", [t.name])
        (scaled,) = self.node("Mul", [squashed, self.const(np.array(limit / 2, DTYPES[t.dtype]))])
        return self.add(scaled, t.shape, t.dtype, limit / 2)

    def positive(self, t: Tensor, negate: bool = False) -> tuple[Tensor, float]:
        """|t| + c (or -(|t| + c)), and c: a value at least c away from 0."""
        c = float(self.choice((0.25, 0.5, 1.0)))
        (a,) = self.node("Abs", [t.name])
        (p,) = self.node("Add", [a, self.const(np.array(c, DTYPES[t.dtype]))])
        if negate:
            (p,) = self.node("Neg", [p])
        return self.add(p, t.shape, t.dtype, t.bound + c), c


# ---- shapes ---------------------------------------------------------------------------


def _broadcast_partner_shape(b: _Builder, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with `shape`: a suffix with some dims set to 1, and a
    fifth of the time one that broadcasts both ways (larger where `shape` has a 1, or
    with a leading dim more), so that the result is larger than either operand."""
    keep = int(b.rng.integers(0, len(shape) + 1))
    suffix = list(shape[len(shape) - keep :])
    for i in range(len(suffix)):
        if b.rng.random() < 0.3:
            suffix[i] = 1
    if b.rng.random() < 0.2:
        offset = len(shape) - len(suffix)
        widened = [int(b.choice((3, 17))) if shape[offset + i] == 1 else d for i, d in enumerate(suffix)]
        if widened == suffix and len(shape) < 4:
            widened = [int(b.choice((2, 3))), *shape]
        if _numel(np.broadcast_shapes(shape, tuple(widened))) <= MAX_ELEMENTS:
            suffix = widened
    return tuple(suffix)


def _numel(shape) -> int:
    return math.prod(shape)


def _factor_shape(b: _Builder, n: int) -> tuple[int, ...]:
    """A random shape with `n` elements (rank 1 to 4)."""
    dims = []
    rest = n
    for _ in range(int(b.rng.integers(0, 3))):
        divisors = [d for d in range(2, rest + 1) if rest % d == 0 and d <= 100]
        if not divisors:
            break
        d = int(b.choice(divisors))
        dims.append(d)
        rest //= d
    dims.append(rest)
    b.rng.shuffle(dims)
    return tuple(dims)


# ---- the ops ----------------------------------------------------------------------------
# Each returns False when it found no operand it applies to (another op is drawn).

_SQUASHING = {"Tanh": 1.0, "Sigmoid": 1.0, "Erf": 1.0, "Softsign": 1.0, "HardSigmoid": 1.0, "Atan": 1.6,
              "Sin": 1.0, "Cos": 1.0}
_KEEPING = ("Abs", "Neg", "Relu", "Identity", "Dropout", "Elu", "Celu", "Selu", "HardSwish", "Mish", "Softplus",
            "ThresholdedRelu", "Shrink")


def _unary(b: _Builder, op: str) -> bool:
    x = b.pick(lambda t: op != "Celu" or t.dtype == "f32")  # Celu takes float only
    if x is None:
        return False
    if op in _SQUASHING:
        (y,) = b.node(op, [x.name])
        b.add(y, x.shape, x.dtype, _SQUASHING[op])
    elif op in _KEEPING:
        (y,) = b.node(op, [x.name])
        b.add(y, x.shape, x.dtype, x.bound * (1.1 if op == "Selu" else 1.0) + 1)
    elif op == "Clip":
        low, high = sorted(float(v) for v in b.rng.uniform(-1.5, 1.5, size=2))
        given = (low, high)[: int(b.rng.integers(1, 3))]
        (y,) = b.node(op, [x.name, *(b.const(np.array(v, DTYPES[x.dtype])) for v in given)])
        b.add(y, x.shape, x.dtype, x.bound)
    elif op == "Exp":
        x = b.tame(x, 3.0)
        (y,) = b.node(op, [x.name])
        b.add(y, x.shape, x.dtype, math.exp(x.bound))
    elif op in ("Log", "Sqrt", "Reciprocal"):
        p, c = b.positive(b.tame(x))
        (y,) = b.node(op, [p.name])
        bound = {"Log": max(abs(math.log(c)), math.log(p.bound)), "Sqrt": math.sqrt(p.bound), "Reciprocal": 1 / c}[op]
        b.add(y, x.shape, x.dtype, bound)
    elif op == "LeakyRelu":
        alpha = float(b.choice((0.01, 0.1, 0.5, 2.0)))
        (y,) = b.node(op, [x.name], alpha=alpha)
        b.add(y, x.shape, x.dtype, x.bound * max(1.0, alpha))
    elif op == "Gelu":
        (y,) = b.node(op, [x.name], approximate=str(b.choice(("none", "tanh"))))
        b.add(y, x.shape, x.dtype, x.bound)
    else:
        return False
    return True


def _partner(b: _Builder, x: Tensor, scale: float = 1.0) -> Tensor:
    """A second operand for x of x's type that broadcasts with it: a pool tensor of
    a compatible shape, a new graph input, or a constant."""
    shape = _broadcast_partner_shape(b, x.shape)
    roll = b.rng.random()
    if roll < 0.35:
        other = b.pick(lambda t: t is not x and t.dtype == x.dtype and t.shape == x.shape)
        if other is not None:
            return other
    if roll < 0.5:
        return b.new_input(shape, x.dtype)
    return Tensor(b.values(shape, x.dtype, scale), shape, x.dtype, scale)


def _binary(b: _Builder, op: str) -> bool:
    x = b.pick()
    if x is None:
        return False
    y = _partner(b, x)
    if op != "PRelu" and b.rng.random() < 0.5:  # the broadcast operand first, too
        x, y = y, x
    if op == "PRelu" and np.broadcast_shapes(x.shape, y.shape) != x.shape:
        return False  # the slope broadcasts to X, not the other way round
    if op in ("Mul", "PRelu"):
        x, y = b.tame(x), b.tame(y)
    if op == "Div":
        y, c = b.positive(b.tame(y))
        x = b.tame(x)
        bound = x.bound / c
    else:
        bound = {"Add": x.bound + y.bound, "Sub": x.bound + y.bound, "Mul": x.bound * y.bound,
                 "Sum": x.bound + y.bound, "PRelu": x.bound * y.bound}.get(op, max(x.bound, y.bound))
    operands = [x, y]
    if op in ("Max", "Min", "Sum", "Mean") and b.rng.random() < 0.3:
        z = _partner(b, _result(x, y))
        operands.append(z)
        bound = bound + z.bound if op == "Sum" else max(bound, z.bound)
    (out,) = b.node(op, [t.name for t in operands])
    b.add(out, np.broadcast_shapes(*(t.shape for t in operands)), x.dtype, bound)
    return True


def _result(x: Tensor, y: Tensor) -> Tensor:
    """A stand-in of the broadcast of x and y (what a third operand must broadcast with)."""
    return Tensor("", tuple(np.broadcast_shapes(x.shape, y.shape)), x.dtype, max(x.bound, y.bound))


_CONSTANT_EXPONENTS = (0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 0.5, -0.5, 1.5, 2.5)


def _pow(b: _Builder) -> bool:
    x = b.pick()
    if x is None:
        return False
    x = b.tame(x, 3.0)
    if b.rng.random() < 0.6:
        e = float(b.choice(_CONSTANT_EXPONENTS))
        if e < 0:  # away from zero; a negative base half the time (integer exponents)
            x, c = b.positive(x, negate=e.is_integer() and bool(b.rng.random() < 0.5))
            bound = (1 / c) ** abs(e)
        elif not e.is_integer():
            x, c = b.positive(x)
            bound = x.bound**e
        else:
            bound = x.bound**e
        shape = () if b.rng.random() < 0.7 else (1,) * int(b.rng.integers(1, len(x.shape) + 1))
        exponent = b.const(np.full(shape, e, DTYPES[x.dtype]))
    else:
        x, c = b.positive(x)
        y = _partner(b, x)
        y = b.tame(y, 2.0)
        exponent = y.name
        bound = max(x.bound, 1 / c) ** 2
        shape = np.broadcast_shapes(x.shape, y.shape)
        (out,) = b.node("Pow", [x.name, exponent])
        b.add(out, shape, x.dtype, bound)
        return True
    (out,) = b.node("Pow", [x.name, exponent])
    b.add(out, np.broadcast_shapes(x.shape, shape), x.dtype, bound)
    return True


def _matmul(b: _Builder, op: str) -> bool:
    rank_ok = (lambda t: len(t.shape) == 2) if op == "Gemm" else (lambda t: len(t.shape) >= 1)
    x = b.pick(rank_ok)
    if x is None:
        return False
    x = b.tame(x, 4.0)
    if op == "MatMul":  # a chain of two or three products a quarter of the time
        links = 1 if b.rng.random() < 0.75 else int(b.rng.integers(2, 4))
        for link in range(links):
            y = _matmul_link(b, b.tame(x, 64.0) if link else x)
            if y is None:
                return link > 0
            x = y
        return True
    k = x.shape[-1]
    n = int(b.choice(SIZES))
    scale = 1 / math.sqrt(k)
    trans_a, trans_b = int(b.rng.integers(2)), int(b.rng.integers(2))
    m = x.shape[0]
    if trans_a:  # x is read as its transpose: (k, m) -> this node multiplies x^T
        m, k = x.shape[1], x.shape[0]
        scale = 1 / math.sqrt(k)
    w = b.values((n, k) if trans_b else (k, n), x.dtype, scale)
    attrs = {"transA": trans_a, "transB": trans_b}
    inputs = [x.name, w]
    if b.rng.random() < 0.7:
        inputs.append(b.values(b.choice(((n,), (1, n), (m, n), ())), x.dtype))
        attrs["beta"] = float(b.choice((1.0, 0.5)))
    attrs["alpha"] = float(b.choice((1.0, 0.5, 2.0)))
    (out,) = b.node("Gemm", inputs, **attrs)
    b.add(out, (m, n), x.dtype, x.bound * 2 * attrs["alpha"] + 1)
    return True


def _matmul_link(b: _Builder, x: Tensor) -> Tensor | None:
    """x @ w for a w of one of ONNX MatMul's forms: (k, n), a vector (k,) (the last dim
    drops), batched (..., k, n) with x's batch dims or a batch dim of its own;
    a constant scaled by 1/sqrt(k), or a graph input a quarter of the time."""
    k = x.shape[-1]
    n = int(b.choice(SIZES))
    form = b.rng.random()
    if form < 0.1 and len(x.shape) >= 2:
        w_shape: tuple[int, ...] = (k,)
    elif form < 0.35 and len(x.shape) >= 3:
        w_shape = (*x.shape[:-2], k, n)
    elif form < 0.45 and len(x.shape) <= 2:
        w_shape = (int(b.choice((2, 3))), k, n)
    else:
        w_shape = (k, n)
    if len(w_shape) == 1:
        shape = x.shape[:-1]
    elif len(x.shape) == 1:
        shape = (*w_shape[:-2], n)
    else:
        shape = (*np.broadcast_shapes(x.shape[:-2], w_shape[:-2]), x.shape[-2], n)
    if _numel(shape) > MAX_ELEMENTS:
        return None
    if b.rng.random() < 0.25:
        (out,) = b.node("MatMul", [x.name, b.new_input(w_shape, x.dtype).name])
        return b.add(out, shape, x.dtype, x.bound * 2 * math.sqrt(k))
    (out,) = b.node("MatMul", [x.name, b.values(w_shape, x.dtype, 1 / math.sqrt(k))])
    return b.add(out, shape, x.dtype, x.bound * 2)


def _image(b: _Builder) -> Tensor | None:
    """A rank-4 pool tensor, or a reshape of one into (N, C, H, W)."""
    x = b.pick(lambda t: len(t.shape) == 4)
    if x is not None:
        return x
    x = b.pick(lambda t: _numel(t.shape) >= 4)
    if x is None:
        return None
    n = _numel(x.shape)
    shape = (1, *_factor_shape_rank(b, n, 3))
    (out,) = b.node("Reshape", [x.name, b.const(np.array(shape, np.int64))])
    return b.add(out, shape, x.dtype, x.bound)


def _factor_shape_rank(b: _Builder, n: int, rank: int) -> tuple[int, ...]:
    dims = [1] * rank
    rest = n
    for i in range(rank - 1):
        divisors = [d for d in range(1, min(rest, 100) + 1) if rest % d == 0]
        dims[i] = int(b.choice(divisors))
        rest //= dims[i]
    dims[-1] = rest
    return tuple(dims)


def _window(b: _Builder, spatial: tuple[int, ...], pads_ok: bool = True):
    """kernel, strides, pads, dilations for these spatial dims (an output of >= 1)."""
    for _ in range(10):
        kernel = [int(b.rng.integers(1, min(d, 3) + 1)) for d in spatial]
        strides = [int(b.choice((1, 1, 2, 3))) for _ in spatial]
        dilations = [int(b.choice((1, 1, 2))) for _ in spatial]
        pads = [int(b.rng.integers(0, k)) if pads_ok else 0 for k in kernel] + [
            int(b.rng.integers(0, k)) if pads_ok else 0 for k in kernel
        ]
        out = [
            (d + pads[i] + pads[i + len(spatial)] - dilations[i] * (k - 1) - 1) // s + 1
            for i, (d, k, s) in enumerate(zip(spatial, kernel, strides))
        ]
        if all(o >= 1 for o in out):
            return kernel, strides, pads, dilations, tuple(out)
    return None


def _conv(b: _Builder) -> bool:
    x = _image(b)
    if x is None:
        return False
    x = b.tame(x, 4.0)
    n, c, h, w = x.shape
    window = _window(b, (h, w))
    if window is None:
        return False
    kernel, strides, pads, dilations, out = window
    divisors = [g for g in range(2, c) if c % g == 0]
    grouped = [int(b.choice(divisors))] if divisors else []
    groups = int(b.choice([1, c, *grouped, *grouped]))  # dense, depthwise, or groups of several channels
    m = int(b.choice((1, 3, 8, 16))) * groups if groups == c else int(b.choice((1, 3, 8, 16)))
    if m % groups:
        m = groups * int(b.choice((1, 2)))
    if n * m * math.prod(out) > MAX_ELEMENTS:
        return False
    fan_in = c // groups * math.prod(kernel)
    inputs = [x.name, b.values((m, c // groups, *kernel), x.dtype, 1 / math.sqrt(fan_in))]
    if b.rng.random() < 0.6:
        inputs.append(b.values((m,), x.dtype))
    (y,) = b.node("Conv", inputs, kernel_shape=kernel, strides=strides, pads=pads, dilations=dilations, group=groups)
    b.add(y, (n, m, *out), x.dtype, x.bound * 2 + 1)
    return True


def _pool(b: _Builder, op: str) -> bool:
    x = _image(b)
    if x is None:
        return False
    if op in ("GlobalAveragePool", "GlobalMaxPool"):
        (y,) = b.node(op, [x.name])
        b.add(y, (*x.shape[:2], 1, 1), x.dtype, x.bound)
        return True
    window = _window(b, x.shape[2:])
    if window is None:
        return False
    kernel, strides, pads, dilations, out = window
    attrs = {"kernel_shape": kernel, "strides": strides, "pads": pads}
    if op == "MaxPool":
        attrs["dilations"] = dilations
        out = [
            (d + pads[i] + pads[i + 2] - dilations[i] * (k - 1) - 1) // s + 1
            for i, (d, k, s) in enumerate(zip(x.shape[2:], kernel, strides))
        ]
    else:
        out = [(d + pads[i] + pads[i + 2] - k) // s + 1 for i, (d, k, s) in enumerate(zip(x.shape[2:], kernel, strides))]
        attrs["count_include_pad"] = int(b.rng.integers(2))
    if any(o < 1 for o in out):
        return False
    (y,) = b.node(op, [x.name], **attrs)
    b.add(y, (*x.shape[:2], *out), x.dtype, x.bound)
    return True


def _batch_norm(b: _Builder) -> bool:
    x = b.pick(lambda t: len(t.shape) >= 2)
    if x is None:
        return False
    c = x.shape[1]
    dt = DTYPES[x.dtype]
    scale, bias = b.values((c,), x.dtype), b.values((c,), x.dtype)
    mean = b.values((c,), x.dtype)
    var = b.const(b.rng.uniform(0.5, 2.0, size=(c,)).astype(dt))
    (y,) = b.node("BatchNormalization", [x.name, scale, bias, mean, var], epsilon=1e-5)
    b.add(y, x.shape, x.dtype, (x.bound + 1) * 1.5 + 1)
    return True


def _instance_norm(b: _Builder) -> bool:
    x = b.pick(lambda t: len(t.shape) >= 3)
    if x is None:
        return False
    c = x.shape[1]
    (y,) = b.node("InstanceNormalization", [x.name, b.values((c,), x.dtype), b.values((c,), x.dtype)], epsilon=1e-5)
    b.add(y, x.shape, x.dtype, 2 * math.sqrt(_numel(x.shape[2:])) + 1)
    return True


def _tile(b: _Builder) -> bool:
    x = b.pick()
    if x is None:
        return False
    repeats = [int(b.choice((1, 1, 2, 3))) for _ in x.shape]
    shape = tuple(d * r for d, r in zip(x.shape, repeats))
    if _numel(shape) > MAX_ELEMENTS or shape == x.shape:
        return False
    (y,) = b.node("Tile", [x.name, b.const(np.array(repeats, np.int64))])
    b.add(y, shape, x.dtype, x.bound)
    return True


def _norm(b: _Builder, op: str) -> bool:
    x = b.pick()
    if x is None:
        return False
    rank = len(x.shape)
    axis = int(b.rng.integers(-rank, rank))
    normalized = x.shape[axis:]
    inputs = [x.name, b.values(normalized, x.dtype)]
    if op == "LayerNormalization" and b.rng.random() < 0.7:
        inputs.append(b.values(normalized if b.rng.random() < 0.8 else normalized[-1:], x.dtype))
    (y,) = b.node(op, inputs, axis=axis, epsilon=float(b.choice((1e-5, 1e-3))))
    b.add(y, x.shape, x.dtype, 2 * math.sqrt(_numel(normalized)) + 1)
    return True


def _softmax(b: _Builder, op: str) -> bool:
    x = b.pick()
    if x is None:
        return False
    x = b.tame(x)
    axis = int(b.rng.integers(-len(x.shape), len(x.shape)))
    (y,) = b.node(op, [x.name], axis=axis)
    b.add(y, x.shape, x.dtype, 1.0 if op == "Softmax" else 2 * x.bound + math.log(x.shape[axis]) + 1)
    return True


def _reduce(b: _Builder, op: str) -> bool:
    x = b.pick()
    if x is None:
        return False
    if op in ("ReduceSumSquare", "ReduceLogSumExp"):
        x = b.tame(x, 4.0)
    rank = len(x.shape)
    count = int(b.rng.integers(1, rank + 1))
    axes = sorted(int(a) for a in b.rng.choice(rank, size=count, replace=False))
    keepdims = int(b.rng.integers(2))
    signed = [a - rank if b.rng.random() < 0.3 else a for a in axes]
    if b.rng.random() < 0.1:  # no axes input: every axis
        axes = list(range(rank))
        (y,) = b.node(op, [x.name], keepdims=keepdims)
    else:
        (y,) = b.node(op, [x.name, b.const(np.array(signed, np.int64))], keepdims=keepdims)
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keepdims else tuple(
        d for i, d in enumerate(x.shape) if i not in axes
    )
    reduced = _numel([x.shape[a] for a in axes])
    growth = {"ReduceSum": reduced, "ReduceL1": reduced, "ReduceL2": math.sqrt(reduced),
              "ReduceSumSquare": reduced * x.bound, "ReduceLogSumExp": 1 + math.log(reduced) / max(x.bound, 1)}
    b.add(y, shape, x.dtype, x.bound * growth.get(op, 1) + 1)
    return True


def _reshape(b: _Builder, op: str) -> bool:
    x = b.pick()
    if x is None:
        return False
    rank = len(x.shape)
    if op == "Reshape":
        shape = _factor_shape(b, _numel(x.shape))
        spelled = list(shape)
        if b.rng.random() < 0.3:
            spelled[int(b.rng.integers(len(spelled)))] = -1
        (y,) = b.node(op, [x.name, b.const(np.array(spelled, np.int64))])
    elif op == "Flatten":
        axis = int(b.rng.integers(0, rank + 1))
        shape = (_numel(x.shape[:axis]), _numel(x.shape[axis:]))
        (y,) = b.node(op, [x.name], axis=axis)
    elif op == "Transpose":
        perm = [int(p) for p in b.rng.permutation(rank)]
        shape = tuple(x.shape[p] for p in perm)
        (y,) = b.node(op, [x.name], perm=perm)
    elif op == "Squeeze":
        ones = [i for i, d in enumerate(x.shape) if d == 1]
        if not ones or rank == 1:
            return False
        axes = [i for i in ones if b.rng.random() < 0.7] or ones[:1]
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        (y,) = b.node(op, [x.name, b.const(np.array(axes, np.int64))])
    elif op == "Unsqueeze":
        if rank >= 4:
            return False
        axis = int(b.rng.integers(0, rank + 1))
        shape = (*x.shape[:axis], 1, *x.shape[axis:])
        (y,) = b.node(op, [x.name, b.const(np.array([axis], np.int64))])
    else:
        return False
    b.add(y, shape, x.dtype, x.bound)
    return True


def _concat(b: _Builder) -> bool:
    x = b.pick()
    if x is None:
        return False
    axis = int(b.rng.integers(len(x.shape)))
    others = [t for t in b.pool if t is not x and t.dtype == x.dtype and len(t.shape) == len(x.shape)
              and all(d == e for i, (d, e) in enumerate(zip(t.shape, x.shape)) if i != axis)]
    parts = [x, (b.choice(others) if others and b.rng.random() < 0.6 else x)]
    size = sum(t.shape[axis] for t in parts)
    shape = (*x.shape[:axis], size, *x.shape[axis + 1 :])
    if _numel(shape) > MAX_ELEMENTS:
        return False
    (y,) = b.node("Concat", [t.name for t in parts], axis=axis)
    b.add(y, shape, x.dtype, max(t.bound for t in parts))
    return True


def _split(b: _Builder) -> bool:
    x = b.pick(lambda t: any(d >= 2 for d in t.shape))
    if x is None:
        return False
    axis = int(b.choice([i for i, d in enumerate(x.shape) if d >= 2]))
    dim = x.shape[axis]
    first = int(b.rng.integers(1, dim))
    sizes = [first, dim - first]
    outs = b.node("Split", [x.name, b.const(np.array(sizes, np.int64))], outputs=2, axis=axis)
    for name, size in zip(outs, sizes):
        b.add(name, (*x.shape[:axis], size, *x.shape[axis + 1 :]), x.dtype, x.bound)
    return True


def _slice(b: _Builder) -> bool:
    x = b.pick()
    if x is None:
        return False
    axis = int(b.rng.integers(len(x.shape)))
    dim = x.shape[axis]
    step = int(b.choice((1, 1, 2, 3, -1)))
    if step > 0:
        start = int(b.rng.integers(0, dim))
        end = int(b.rng.integers(start + 1, dim + 1))
        size = len(range(start, end, step))
        spelled_end = end if b.rng.random() < 0.8 else np.iinfo(np.int64).max if end == dim else end
    else:
        start = int(b.rng.integers(0, dim))
        end = int(b.rng.integers(-1, start))
        size = len(range(start, end, step))
        spelled_end = end if end >= 0 else -dim - 1
    inputs = [x.name, b.const(np.array([start], np.int64)), b.const(np.array([spelled_end], np.int64)),
              b.const(np.array([axis], np.int64)), b.const(np.array([step], np.int64))]
    (y,) = b.node("Slice", inputs)
    b.add(y, (*x.shape[:axis], size, *x.shape[axis + 1 :]), x.dtype, x.bound)
    return True


def _expand(b: _Builder) -> bool:
    x = b.pick(lambda t: 1 in t.shape or len(t.shape) < 4)
    if x is None:
        return False
    shape = [int(b.choice((2, 3, 17))) if d == 1 and b.rng.random() < 0.6 else d for d in x.shape]
    if len(shape) < 4 and b.rng.random() < 0.5:
        shape = [int(b.choice((2, 3))), *shape]
    if _numel(shape) > MAX_ELEMENTS or tuple(shape) == x.shape:
        return False
    (y,) = b.node("Expand", [x.name, b.const(np.array(shape, np.int64))])
    b.add(y, shape, x.dtype, x.bound)
    return True


def _gather(b: _Builder) -> bool:
    x = b.pick()
    if x is None:
        return False
    axis = int(b.rng.integers(len(x.shape)))
    dim = x.shape[axis]
    count = int(b.choice((1, 2, 3, 5)))
    scalar = b.rng.random() < 0.2
    indices = b.rng.integers(-dim, dim, size=() if scalar else (count,)).astype(np.int64)
    (y,) = b.node("Gather", [x.name, b.const(indices)], axis=axis)
    shape = (*x.shape[:axis], *indices.shape, *x.shape[axis + 1 :])
    b.add(y, shape, x.dtype, x.bound)
    return True


def _pad(b: _Builder) -> bool:
    x = b.pick()
    if x is None:
        return False
    rank = len(x.shape)
    mode = str(b.choice(("constant", "constant", "reflect", "edge")))
    limit = [max(0, d - 1) if mode == "reflect" else 3 for d in x.shape]
    pads = [int(b.rng.integers(0, min(lim, 3) + 1)) for lim in limit] * 2
    pads = pads[:rank] + [int(b.rng.integers(0, min(lim, 3) + 1)) for lim in limit]
    shape = tuple(d + pads[i] + pads[i + rank] for i, d in enumerate(x.shape))
    if _numel(shape) > MAX_ELEMENTS or shape == x.shape:
        return False
    inputs = [x.name, b.const(np.array(pads, np.int64))]
    if mode == "constant" and b.rng.random() < 0.5:
        inputs.append(b.const(np.array(0.5, DTYPES[x.dtype])))
    (y,) = b.node("Pad", inputs, mode=mode)
    b.add(y, shape, x.dtype, max(x.bound, 0.5))
    return True


def _where(b: _Builder) -> bool:
    x = b.pick()
    if x is None:
        return False
    y = _partner(b, x)
    cond_shape = _broadcast_partner_shape(b, _result(x, y).shape)
    cond = b.const(b.rng.random(size=cond_shape) < 0.5)
    (out,) = b.node("Where", [cond, x.name, y.name])
    b.add(out, np.broadcast_shapes(cond_shape, x.shape, y.shape), x.dtype, max(x.bound, y.bound))
    return True


def _cast(b: _Builder, op: str) -> bool:
    from onnx import TensorProto

    x = b.pick()
    if x is None:
        return False
    target = "f32" if x.dtype == "f16" else "f16"
    if target == "f16":
        x = b.tame(x, 1000.0)
    if op == "Cast":
        (y,) = b.node("Cast", [x.name], to=TensorProto.FLOAT if target == "f32" else TensorProto.FLOAT16)
    else:
        like = b.pick(lambda t: t.dtype == target)
        like_name = like.name if like is not None else b.const(np.zeros((1,), DTYPES[target]))
        (y,) = b.node("CastLike", [x.name, like_name])
    b.add(y, x.shape, target, x.bound)
    return True


GENERATORS: dict[str, Callable[[_Builder], bool]] = {
    **{op: (lambda b, op=op: _unary(b, op)) for op in (
        "Abs", "Neg", "Relu", "Identity", "Dropout", "Exp", "Log", "Sqrt", "Reciprocal",
        "Tanh", "Sigmoid", "Erf", "LeakyRelu", "Gelu", "Clip", *_SQUASHING, *_KEEPING)},
    **{op: (lambda b, op=op: _binary(b, op)) for op in ("Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean", "PRelu")},
    "Pow": _pow,
    "MatMul": lambda b: _matmul(b, "MatMul"),
    "Gemm": lambda b: _matmul(b, "Gemm"),
    "Conv": _conv,
    **{op: (lambda b, op=op: _pool(b, op)) for op in ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool")},
    "InstanceNormalization": _instance_norm,
    "Tile": _tile,
    "BatchNormalization": _batch_norm,
    **{op: (lambda b, op=op: _norm(b, op)) for op in ("LayerNormalization", "RMSNormalization")},
    **{op: (lambda b, op=op: _softmax(b, op)) for op in ("Softmax", "LogSoftmax")},
    **{op: (lambda b, op=op: _reduce(b, op)) for op in (
        "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp")},
    **{op: (lambda b, op=op: _reshape(b, op)) for op in ("Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze")},
    "Concat": _concat,
    "Split": _split,
    "Slice": _slice,
    "Expand": _expand,
    "Gather": _gather,
    "Pad": _pad,
    "Where": _where,
    **{op: (lambda b, op=op: _cast(b, op)) for op in ("Cast", "CastLike")},
}
"""The ops the fuzzer draws, each only if the importer supports it (`op_types`).
Not drawn: Constant (initializers play its part) and Shape (an int64 result with
nothing to feed but shape operands, which must be import-time constants)."""


def op_types() -> list[str]:
    """The ops drawn: those of GENERATORS the importer's table has."""
    return sorted(op for op in GENERATORS if op in CONVERTERS)


def generate(seed: int, index: int, min_nodes: int = 3, max_nodes: int = 20,
             ops: list[str] | None = None) -> FuzzGraph:
    """Graph number `index` of `seed`: `min_nodes` to `max_nodes` drawn ops (guards
    and squashing nodes come on top), one to three graph inputs, every tensor
    nothing reads a graph output (at most four, the last one always)."""

    rng = np.random.default_rng([seed, index])
    b = _Builder(rng)
    dtype = str(b.choice(("f32", "f16")))
    b.new_input(b.shape(), dtype)
    if rng.random() < 0.3:
        b.new_input(b.shape(), dtype)
    ops = ops or op_types()
    wanted = int(rng.integers(min_nodes, max_nodes + 1))
    drawn = attempts = 0
    while drawn < wanted and attempts < wanted * 20:
        attempts += 1
        if GENERATORS[str(b.choice(ops))](b):
            drawn += 1
    return FuzzGraph(_model(b), {t.name: data for t, data in b.inputs}, seed, index)


def _model(b: _Builder):
    from onnx import helper

    produced = {t.name: t for t in b.pool}
    inputs = {t.name for t, _ in b.inputs}
    leaves = [t for t in b.pool if t.name not in b.used and t.name not in inputs]
    outputs = leaves[-4:] if leaves else [b.pool[-1]]
    if b.pool[-1] not in outputs and b.pool[-1].name not in inputs:
        outputs = [*outputs[1:], b.pool[-1]]
    del produced
    graph = helper.make_graph(
        b.nodes,
        "fuzz",
        [_value_info(t) for t, _ in b.inputs],
        [_value_info(t) for t in outputs],
        b.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10
    return model


def _value_info(t: Tensor):
    from onnx import TensorProto, helper

    elem = TensorProto.FLOAT if t.dtype == "f32" else TensorProto.FLOAT16
    return helper.make_tensor_value_info(t.name, elem, list(t.shape))


__all__ = ["FuzzGraph", "GENERATORS", "OPSET", "generate", "op_types"]
