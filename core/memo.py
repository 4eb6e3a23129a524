"""Memos of pure compile-time functions (kernels, tilings, estimates), and the
switch that turns them all off.

A model of identical layers asks the same questions again and again (does this
fused op have a kernel, which tiling does this product take, what does this form
cost); each answer depends only on a hashable key, so it is computed once per
process. `GECOMP_KERNEL_CACHE=0` (read at every use) computes every answer
afresh: the compiled module must come out the same text either way, which
tests/unit/test_kernel_cache.py checks.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Hashable

from xdsl.ir import Operation, SSAValue

ENV = "GECOMP_KERNEL_CACHE"
"""Environment variable: `0` turns off every compile-time memo and the kernel cache."""


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0"


class Memo:
    """A bounded memo (least recently used out first) of a pure function's results:
    `get` returns `Memo.MISSING` when the key is absent; `hits` and `misses` count."""

    MISSING = object()

    def __init__(self, size: int = 4096) -> None:
        self._items: OrderedDict = OrderedDict()
        self._size = size
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable):
        try:
            value = self._items[key]
        except KeyError:
            self.misses += 1
            return Memo.MISSING
        self._items.move_to_end(key)
        self.hits += 1
        return value

    def put(self, key: Hashable, value) -> None:
        self._items[key] = value
        if len(self._items) > self._size:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()


_STAND_INS: dict[int, tuple[object, str]] = {}


def stand_in(obj: object) -> str:
    """A hashable key for an immutable but unhashable object (a hardware preset, whose
    fields are dicts): its repr, computed once per object. The object is kept alive
    so that its id is never reused by another."""
    found = _STAND_INS.get(id(obj))
    if found is None:
        found = _STAND_INS[id(obj)] = (obj, repr(obj))
    return found[1]


def structure_key(op: Operation, names: bool = False, ignore: tuple[str, ...] = ()) -> tuple | None:
    """A hashable key equal for ops of the same structure: name, result types,
    attributes and properties (but those named in `ignore`), and regions op by op,
    each value named by its place in `op` (and, with `names`, its name hint, which
    the printed text shows). `op`'s own operands are left to the caller; None if
    an op inside reads a value defined outside `op`."""
    return _structure(op, {}, names, ignore, top=True)


def _structure(op: Operation, numbering: dict[SSAValue, int], names: bool, ignore, top: bool = False) -> tuple | None:
    # Read as directly as xDSL allows (`_operands`, `_next_op`): kernels of
    # thousands of ops are keyed by every per-kernel pass (distinct_kernels.py).
    operands = ()
    if not top:
        operands = tuple(map(numbering.get, op._operands))
        if None in operands:
            return None
    regions = []
    for region in op.regions:
        blocks = []
        for block in region.blocks:
            for arg in block.args:
                numbering[arg] = len(numbering)
            args = tuple((a.type, a.name_hint if names else None) for a in block.args)
            body = []
            inner = block.first_op
            while inner is not None:
                inner_key = _structure(inner, numbering, names, ())
                if inner_key is None:
                    return None
                body.append(inner_key)
                for r in inner.results:
                    numbering[r] = len(numbering)
                inner = inner._next_op
            blocks.append((args, tuple(body)))
        regions.append(tuple(blocks))
    attributes, properties = op.attributes.items(), op.properties.items()
    if ignore:
        attributes = (item for item in attributes if item[0] not in ignore)
        properties = (item for item in properties if item[0] not in ignore)
    return (
        op.name,
        operands,
        tuple((r.type, r.name_hint if names else None) for r in op.results),
        tuple(sorted(attributes)),
        tuple(sorted(properties)),
        tuple(regions),
    )
