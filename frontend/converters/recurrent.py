"""LSTM, GRU and RNN over a static sequence, unrolled into ge ops.

Per direction (forward, reverse, or both), the input projection of every time
step is one `ge.matmul` (X as (seq * batch, input) times W transposed, both
biases added where the equations allow); each step then adds H_{t-1} R^T (a
`ge.matmul`), splits the gates (LSTM: one `ge.split`, Rb added to the
recurrence, the form of PyTorch's cell, so an LSTM's export and its capture
reach one graph; the others: slices) and applies the gate activations of
the `activations` attribute (with activation_alpha / activation_beta, `clip` on
their inputs) as ge ops. Gate orders are ONNX's: LSTM i, o, f, c (peepholes P
i, o, f; `input_forget` couples f = 1 - i), GRU z, r, h (`linear_before_reset`
either way), RNN one. Y stacks the steps' H (a concat), Y_h is the last step's H
and LSTM's Y_c the last cell state; layout 1 (batch first) is a transpose at
each end. `sequence_lens` must be absent or every sequence full length: shorter
ones are refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...dialects.ge import (
    AbsOp,
    BiasAddOp,
    ConcatOp,
    ExpOp,
    LeakyReluOp,
    LogOp,
    MatmulOp,
    MaximumOp,
    MinimumOp,
    ReluOp,
    SigmoidOp,
    SplitOp,
    TanhOp,
    TransposeOp,
)
from .. import ops
from ..builder import Tensor, slice_
from .context import NodeContext
from .registry import converts

# ---- activations ----------------------------------------------------------------------------

Activation = Callable[[Tensor], Tensor]


def _affine(x, a, b):
    return x * a + b


def _hard_sigmoid(x, a, b):
    return x.graph.op(MinimumOp, x.graph.op(MaximumOp, x * a + b, 0.0), 1.0)


def _elu(x, a, b):
    negative = x.graph.op(MinimumOp, x, 0.0)
    return x.graph.op(ReluOp, x) + (x.graph.op(ExpOp, negative) - 1.0) * a


# name -> (uses alpha, uses beta, default alpha, default beta, function)
_ACTIVATIONS: dict[str, tuple[bool, bool, float, float, Callable]] = {
    "sigmoid": (False, False, 0.0, 0.0, lambda x, a, b: x.graph.op(SigmoidOp, x)),
    "tanh": (False, False, 0.0, 0.0, lambda x, a, b: x.graph.op(TanhOp, x)),
    "relu": (False, False, 0.0, 0.0, lambda x, a, b: x.graph.op(ReluOp, x)),
    "affine": (True, True, 1.0, 0.0, _affine),
    "leakyrelu": (True, False, 0.01, 0.0, lambda x, a, b: x.graph.op(LeakyReluOp, x, alpha=a)),
    "scaledtanh": (True, True, 1.0, 1.0, lambda x, a, b: x.graph.op(TanhOp, x * b) * a),
    "hardsigmoid": (True, True, 0.2, 0.5, _hard_sigmoid),
    "elu": (True, False, 1.0, 0.0, _elu),
    "softsign": (False, False, 0.0, 0.0, lambda x, a, b: x / (x.graph.op(AbsOp, x) + 1.0)),
    "softplus": (False, False, 0.0, 0.0, lambda x, a, b: x.graph.op(LogOp, x.graph.op(ExpOp, x) + 1.0)),
}


def _activations(c: NodeContext, defaults: tuple[str, ...], directions: int) -> list[list[Activation]]:
    """The gate activations of each direction; alphas and betas are consumed in
    order by the activations that take them."""
    names = list(c.strings("activations", None) or defaults * directions)
    if len(names) != len(defaults) * directions:
        raise c.fail(f"activations must list {len(defaults) * directions} functions, got {len(names)}")
    alphas = list(c.floats("activation_alpha", None) or ())
    betas = list(c.floats("activation_beta", None) or ())
    functions = []
    for name in names:
        entry = _ACTIVATIONS.get(str(name).lower())
        if entry is None:
            raise c.unsupported(f"activation '{name}' is not supported ({', '.join(_ACTIVATIONS)})")
        uses_alpha, uses_beta, alpha, beta, function = entry
        if uses_alpha and alphas:
            alpha = alphas.pop(0)
        if uses_beta and betas:
            beta = betas.pop(0)
        functions.append(lambda x, f=function, a=alpha, b=beta: f(x, a, b))
    per = len(defaults)
    return [functions[d * per : (d + 1) * per] for d in range(directions)]


# ---- the shared frame -----------------------------------------------------------------------


@dataclass
class _Frame:
    """What every recurrent op reads the same way."""

    x: Tensor  # (seq, batch, input)
    hidden: int
    directions: list[str]  # "forward" / "reverse" per direction index
    batch_first: bool
    clip: float | None

    @property
    def steps(self) -> int:
        return self.x.shape[0]

    @property
    def batch(self) -> int:
        return self.x.shape[1]


def _frame(c: NodeContext, gates: int) -> _Frame:
    x = c.input(0, "X")
    if x.rank != 3:
        raise c.fail(f"X must be 3-D, got {x.type}")
    layout = c.int("layout", 0) if c.opset >= 14 else 0
    if layout not in (0, 1):
        raise c.fail(f"layout must be 0 or 1, got {layout}")
    if layout:
        x = c.g.op(TransposeOp, x, perm=(1, 0, 2))
    direction = c.string("direction", "forward")
    directions = {"forward": ["forward"], "reverse": ["reverse"], "bidirectional": ["forward", "reverse"]}
    if direction not in directions:
        raise c.fail(f"direction '{direction}' is not one of forward, reverse, bidirectional")
    w = c.input(1, "W")
    hidden = c.int("hidden_size", None)
    if hidden is None:
        hidden = w.shape[1] // gates
    if w.rank != 3 or w.shape != (len(directions[direction]), gates * hidden, x.shape[2]):
        raise c.fail(f"W must be [{len(directions[direction])}, {gates * hidden}, {x.shape[2]}], got {w.type}")
    lengths = c.constant(4, "sequence_lens")
    if lengths is not None and np.any(lengths != x.shape[0]):
        raise c.unsupported(
            f"sequence_lens {lengths.tolist()} shorter than the sequence ({x.shape[0]}) are not supported"
        )
    clip = c.float("clip", None)
    return _Frame(x, hidden, directions[direction], bool(layout), clip)


def _direction(t: Tensor, d: int) -> Tensor:
    """Entry d of a per-direction tensor, without its leading dim."""
    return ops.reshape(slice_(t, [d], [d + 1], [0]), list(t.shape[1:]))


def _initial(c: NodeContext, i: int, frame: _Frame, d: int, what: str) -> Tensor | None:
    t = c.optional_input(i)
    if t is None:
        return None
    if frame.batch_first:
        t = c.g.op(TransposeOp, t, perm=(1, 0, 2))
    expected = (len(frame.directions), frame.batch, frame.hidden)
    if t.shape != expected:
        raise c.fail(f"{what} must be {list(expected)}, got {t.type}")
    return _direction(t, d)


def _projections(c: NodeContext, frame: _Frame, w: Tensor, bias: Tensor | None) -> list[Tensor]:
    """X_t W^T + bias for every step t: one matmul for the whole sequence."""
    seq, batch, width = frame.x.shape
    rows = ops.reshape(frame.x, [seq * batch, width])
    projected = c.g.op(MatmulOp, rows, w, transpose_b=True)
    if bias is not None:
        projected = projected + bias
    projected = ops.reshape(projected, [seq, batch, w.shape[0]])
    return [ops.reshape(slice_(projected, [t], [t + 1], [0]), [batch, w.shape[0]]) for t in range(seq)]


def _gate(t: Tensor, index: int, hidden: int) -> Tensor:
    return slice_(t, [index * hidden], [(index + 1) * hidden], [1])


def _clipped(frame: _Frame, t: Tensor) -> Tensor:
    if frame.clip is None:
        return t
    return t.graph.op(MinimumOp, t.graph.op(MaximumOp, t, -frame.clip), frame.clip)


def _biases(c: NodeContext, frame: _Frame, gates: int, d: int) -> tuple[Tensor, Tensor] | None:
    """(Wb, Rb) of direction d, or None."""
    b = c.optional_input(3)
    if b is None:
        return None
    if b.shape != (len(frame.directions), 2 * gates * frame.hidden):
        raise c.fail(f"B must be [{len(frame.directions)}, {2 * gates * frame.hidden}], got {b.type}")
    both = _direction(b, d)
    size = gates * frame.hidden
    return slice_(both, [0], [size]), slice_(both, [size], [2 * size])


def _run(c: NodeContext, frame: _Frame, gates: int, step) -> list[Tensor]:
    """Runs `step(d, t, x_t, state) -> state` over each direction; returns Y, Y_h
    and, if the state has a cell, Y_c, in the node's layout."""
    w_all, r_all = c.input(1, "W"), c.input(2, "R")
    expected_r = (len(frame.directions), gates * frame.hidden, frame.hidden)
    if r_all.shape != expected_r:
        raise c.fail(f"R must be {list(expected_r)}, got {r_all.type}")
    outputs, finals = [], []
    for d, direction in enumerate(frame.directions):
        xs = step.projections(d, _direction(w_all, d))
        state = step.initial(d)
        order = range(frame.steps) if direction == "forward" else reversed(range(frame.steps))
        hs: dict[int, Tensor] = {}
        for t in order:
            state = step(d, _direction(r_all, d), xs[t], state)
            hs[t] = state[0]
        outputs.append([hs[t] for t in range(frame.steps)])
        finals.append(state)
    shape = [1, 1, frame.batch, frame.hidden]
    y = c.g.op(ConcatOp, *(
        c.g.op(ConcatOp, *(ops.reshape(h, shape) for h in per_direction), axis=0) for per_direction in outputs
    ), axis=1) if frame.steps else None
    results = [y]
    for k in range(len(finals[0])):
        last = [ops.reshape(state[k], [1, frame.batch, frame.hidden]) for state in finals]
        results.append(last[0] if len(last) == 1 else c.g.op(ConcatOp, *last, axis=0))
    if frame.batch_first:
        results = [c.g.op(TransposeOp, results[0], perm=(2, 0, 1, 3)),
                   *(c.g.op(TransposeOp, r, perm=(1, 0, 2)) for r in results[1:])]
    return results


# ---- the three cells ----------------------------------------------------------------------


class _Step:
    """One cell: the projections of the inputs, the initial state, one time step."""

    gates = 1
    defaults: tuple[str, ...] = ()

    def __init__(self, c: NodeContext):
        self.c = c
        self.frame = _frame(c, self.gates)
        self.hidden = self.frame.hidden
        self.f = _activations(c, self.defaults, len(self.frame.directions))

    def projections(self, d: int, w: Tensor) -> list[Tensor]:
        biases = _biases(self.c, self.frame, self.gates, d)
        return _projections(self.c, self.frame, w, None if biases is None else biases[0] + biases[1])

    def initial(self, d: int) -> tuple:
        return (_initial(self.c, 5, self.frame, d, "initial_h"),)

    def recurrence(self, h: Tensor | None, r: Tensor) -> Tensor | None:
        return None if h is None else self.c.g.op(MatmulOp, h, r, transpose_b=True)


class _RNN(_Step):
    gates = 1
    defaults = ("Tanh",)

    def __call__(self, d, r, x_t, state):
        (h,) = state
        rec = self.recurrence(h, r)
        pre = x_t if rec is None else x_t + rec
        return (self.f[d][0](_clipped(self.frame, pre)),)


class _GRU(_Step):
    gates = 3
    defaults = ("Sigmoid", "Tanh")

    def __init__(self, c: NodeContext):
        super().__init__(c)
        self.linear_before_reset = bool(c.int("linear_before_reset", 0))

    def projections(self, d, w):
        """z and r take both biases here; h only Wb_h (Rb_h joins its recurrence)."""
        biases = _biases(self.c, self.frame, self.gates, d)
        self.rb_h = None
        if biases is None:
            return _projections(self.c, self.frame, w, None)
        wb, rb = biases
        h2, h3 = 2 * self.hidden, 3 * self.hidden
        self.rb_h = slice_(rb, [h2], [h3])
        zr = slice_(wb, [0], [h2]) + slice_(rb, [0], [h2])
        return _projections(self.c, self.frame, w, self.c.g.op(ConcatOp, zr, slice_(wb, [h2], [h3]), axis=0))

    def __call__(self, d, r, x_t, state):
        (h,) = state
        hid, frame, f = self.hidden, self.frame, self.f[d]
        r_zr, r_h = slice_(r, [0], [2 * hid]), slice_(r, [2 * hid], [3 * hid])
        rec = self.recurrence(h, r_zr)
        pre_z, pre_r = (_gate(x_t, k, hid) if rec is None else _gate(x_t, k, hid) + _gate(rec, k, hid) for k in (0, 1))
        z = f[0](_clipped(frame, pre_z))
        reset = f[0](_clipped(frame, pre_r))
        if self.linear_before_reset:  # r * (H R_h^T + Rb_h)
            inner = [t for t in (self.recurrence(h, r_h), self.rb_h) if t is not None]
            recurrent = None if not inner else reset * (inner[0] if len(inner) == 1 else inner[0] + inner[1])
        else:  # (r * H) R_h^T + Rb_h
            terms = [t for t in (None if h is None else self.recurrence(reset * h, r_h), self.rb_h) if t is not None]
            recurrent = None if not terms else (terms[0] if len(terms) == 1 else terms[0] + terms[1])
        pre_h = _gate(x_t, 2, hid) if recurrent is None else _gate(x_t, 2, hid) + recurrent
        candidate = f[1](_clipped(frame, pre_h))
        new = candidate - z * candidate if h is None else candidate + z * (h - candidate)
        return (new,)


class _LSTM(_Step):
    """The step in PyTorch's form (torch._decomp's `lstm_cell`: `linear(H, R, Rb)
    + X_t W^T + Wb`, the gates one split of that sum), so that an LSTM's ONNX
    export and its `torch.compile` capture reach the same graph."""

    gates = 4
    defaults = ("Sigmoid", "Tanh", "Tanh")

    def __init__(self, c: NodeContext):
        super().__init__(c)
        self.input_forget = bool(c.int("input_forget", 0))
        self.rb: Tensor | None = None

    def projections(self, d, w):
        """X_t W^T + Wb; Rb joins the recurrence."""
        biases = _biases(self.c, self.frame, self.gates, d)
        self.rb = None if biases is None else biases[1]
        return _projections(self.c, self.frame, w, None if biases is None else biases[0])

    def initial(self, d):
        return (_initial(self.c, 5, self.frame, d, "initial_h"), _initial(self.c, 6, self.frame, d, "initial_c"))

    def peepholes(self, d) -> list[Tensor | None]:
        p = self.c.optional_input(7)
        if p is None:
            return [None, None, None]
        if p.shape != (len(self.frame.directions), 3 * self.hidden):
            raise self.c.fail(f"P must be [{len(self.frame.directions)}, {3 * self.hidden}], got {p.type}")
        p_d = _direction(p, d)
        return [_gate(ops.reshape(p_d, [1, 3 * self.hidden]), k, self.hidden) for k in range(3)]

    def __call__(self, d, r, x_t, state):
        h, cell = state
        hid, frame, f = self.hidden, self.frame, self.f[d]
        p_i, p_o, p_f = self.peepholes(d)
        rec = self.recurrence(h, r)
        if self.rb is not None:
            rec = self.rb if rec is None else self.c.g.op(BiasAddOp, rec, self.rb, axis=-1)
        pre = x_t if rec is None else rec + x_t
        pre_i, pre_o, pre_f, pre_c = self.c.g.op(SplitOp, pre, axis=1, sizes=[hid] * 4)
        if cell is not None and p_i is not None:
            pre_i = pre_i + p_i * cell
            pre_f = pre_f + p_f * cell
        i = f[0](_clipped(frame, pre_i))
        forget = (1.0 - i) if self.input_forget else f[0](_clipped(frame, pre_f))
        candidate = f[1](_clipped(frame, pre_c))
        new_cell = i * candidate if cell is None else forget * cell + i * candidate
        if p_o is not None:
            pre_o = pre_o + p_o * new_cell
        o = f[0](_clipped(frame, pre_o))
        return (o * f[2](new_cell), new_cell)


def _convert(c: NodeContext, cell: type[_Step]):
    step = cell(c)
    results = _run(c, step.frame, step.gates, step)
    if c.output_used(0) and results[0] is None:
        raise c.fail("Y of an empty sequence")
    return results


@converts("RNN", static=(4,))
def rnn(c: NodeContext):
    return _convert(c, _RNN)


@converts("GRU", static=(4,))
def gru(c: NodeContext):
    return _convert(c, _GRU)


@converts("LSTM", static=(4,))
def lstm(c: NodeContext):
    return _convert(c, _LSTM)
