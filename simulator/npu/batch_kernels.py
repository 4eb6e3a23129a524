"""An instruction's numerics over a batch of blocks: operand views with a leading
block axis and the kernels that take it.

`batched.py` runs the blocks of a launch that execute the same instructions as
one batch. Each operand of an instruction is then viewed across the batch's
blocks at once: a view of the per-block shape and strides (`Operand.shape`,
`Operand.strides`, from the pattern's own viewer) with a leading axis whose
stride is the step from one block's operand to the next. That is a plain
strided view when the step is constant: a local buffer at the same offset in
every block (each block of a batch has its local memory in a row of its own,
so the step is the row), or at offsets affine in the block's position; a GM
operand at offsets affine in the block's position (one address for all is a
step of 0). Anything else is read by gathering (fancy indexing) and, if
written, computed block by block.

The kernels: every kernel of the npu dialect computes element by element of
its operands' views (with numpy broadcasting of the per-row and per-column
forms), except the ones whose operands change shape: `npu.load_l0` (fractal
reshape, transpose), `npu.fixpipe` (fractal reshape), the row reductions
(`axis=1`), `npu.vtranspose` and `npu.mmad` (a matrix product). `batch_kernel`
gives, for a kernel method proven to compute on a leading block axis what it
computes block by block, the batched form; any other kernel (one this module
does not know, a subclass overriding `kernel`) gets None, and its instructions
run block by block. tests/unit/test_sim_batched.py compares every batched form
bitwise with the per-block kernel on random data and patterns.

Why each batched form gives the per-block bits:
* elementwise kernels (numpy ufuncs, `np.copyto`, assignment, `np.where`,
  `core/conversion.convert`, `core/numeric`'s sigmoid and erf) compute each
  element from the elements at the same index: the leading axis only adds
  indices;
* `load_l0`, `fixpipe`, `vtranspose` move elements (reshapes, transposes): the
  same moves with the block axis left in front;
* the row reductions reduce the last axis (`axis=-1`, which is `axis=1` of a
  block): numpy reduces along one axis one row at a time, the row's elements
  in order (pairwise for sums, by the row's length only), whatever the other
  axes;
* `mmad` (its kernel as it is): `np.matmul` of stacked matrices calls, matrix by
  matrix, the product it calls for one (the operands are first converted to
  contiguous fp32 / int32 copies in both forms, so each product sees the same
  layout); `+=` and assignment are elementwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...dialects.npu import cube, memory, vector

def _load_l0(op, a, kernel):
    nz = a.layout == "nz"
    transpose = a.transpose

    def load(src: np.ndarray, dst: np.ndarray) -> None:
        tile = src
        if nz:
            g, blocks, rows, n0 = src.shape
            tile = src.transpose(0, 2, 1, 3).reshape(g, rows, blocks * n0)
        dst[...] = tile.transpose(0, 2, 1) if transpose else tile

    return load


def _fixpipe(op, a, kernel):
    relu = a.relu
    nz = a.layout == "nz"
    n0 = op.accesses(a)[1].pattern.n0 if nz else 0

    def fixpipe(src: np.ndarray, dst: np.ndarray) -> None:
        value = np.maximum(src, 0) if relu else src
        if nz:
            g, rows, cols = value.shape
            value = value.reshape(g, rows, cols // n0, n0).transpose(0, 2, 1, 3)
        np.copyto(dst, value, casting="unsafe")

    return fixpipe


def _reduce(op, a, kernel):
    fn = op.FN

    def run(x: np.ndarray, out: np.ndarray) -> None:
        np.copyto(out, fn(vector._widened(x), axis=-1, keepdims=True), casting="unsafe")

    return run


def _transpose(op, a, kernel):
    def run(x: np.ndarray, out: np.ndarray) -> None:
        out[...] = x.transpose(0, 2, 1)

    return run


def _as_is(op, a, kernel):
    """The per-block kernel, which computes on a leading block axis as it is."""
    return kernel


ELEMENTWISE_FNS = (vector.VBinaryOp, vector.VScalarOp, vector.VUnaryOp, vector.VSimpleUnaryOp)
"""Classes whose kernel applies the class's `FN`: elementwise if `FN` is."""

_ELEMENTWISE_HELPERS = {vector._rsqrt, vector._reciprocal, vector._relu, vector._copy}


def _elementwise_fn(fn) -> bool:
    """Whether `fn` (a vector op's FN) computes element by element."""
    from ...core import numeric

    return isinstance(fn, np.ufunc) or fn in _ELEMENTWISE_HELPERS or fn in (numeric.sigmoid, numeric.erf)


BATCHED = {
    memory.CopyOp.kernel: _as_is,
    vector.VBinaryOp.kernel: _as_is,
    vector.VScalarOp.kernel: _as_is,
    vector.VUnaryOp.kernel: _as_is,
    vector.VSimpleUnaryOp.kernel: _as_is,
    vector.VMlaOp.kernel: _as_is,
    vector.VNotOp.kernel: _as_is,
    vector.VCastOp.kernel: _as_is,
    vector.VDupOp.kernel: _as_is,
    vector.VCmpOp.kernel: _as_is,
    vector.VCmpsOp.kernel: _as_is,
    vector.VSelOp.kernel: _as_is,
    memory.LoadL0Op.kernel: _load_l0,
    memory.FixpipeOp.kernel: _fixpipe,
    vector.VReduceOp.kernel: _reduce,
    vector.VTransposeOp.kernel: _transpose,
    cube.MmadOp.kernel: _as_is,
}
"""Kernel method -> its batched form's maker (module docstring)."""


def batch_kernel(op, a, kernel):
    """The batched form of `op`'s kernel (`kernel`, made from attribute values `a`),
    or None if it is not known to batch."""
    method = type(op).kernel
    maker = BATCHED.get(method)
    if maker is None:
        return None
    fn = getattr(type(op), "FN", None)
    if isinstance(op, ELEMENTWISE_FNS) and not _elementwise_fn(fn):
        return None
    return maker(op, a, kernel)


_LAYOUTS: dict = {}
"""(viewer, dtype) -> the shape and strides of the views it makes (viewers are
shared by the instructions with the same attributes: `instructions.Fixed`)."""


@dataclass(eq=False)
class Operand:
    """One buffer operand of an instruction, as the batched numerics need it."""

    slot: int
    local: bool
    space: str
    local_offset: int  # bytes into the space (local buffers)
    dtype: np.dtype
    viewer: object  # the pattern's viewer: (flat typed array, offset) -> the per-block view
    writes: bool
    span: int  # elements from the offset to one past the last touched
    room: int  # elements the viewer slices (the span and the pattern's slack)
    shape: tuple = ()
    strides: tuple = ()
    _relative: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        key = (self.viewer, self.dtype)
        found = _LAYOUTS.get(key)
        if found is None:
            flat = np.empty(self.room, dtype=self.dtype)  # not touched: only viewed
            view = self.viewer(flat, 0)
            assert view.__array_interface__["data"][0] == flat.__array_interface__["data"][0]
            found = _LAYOUTS[key] = (view.shape, view.strides)
        self.shape, self.strides = found

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def relative(self) -> np.ndarray:
        """The flat element index of each element of the per-block view, from the offset."""
        if self._relative is None:
            self._relative = np.ascontiguousarray(self.viewer(np.arange(self.room, dtype=np.int64), 0))
        return self._relative


@dataclass(eq=False)
class Instruction:
    """A decoded instruction's numerics: the per-block kernel, its batched form (None:
    block by block), its operands, and which access is its GM side (None: no GM)."""

    kernel: object
    batched: object
    operands: tuple
    gm: int | None
    name: str
    copies: bool = False  # it only copies its source: not worth a stacked copy (`batched.Replay.view`)
