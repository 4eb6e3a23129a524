"""`ge-merge-matmuls`: matrix products of one lhs by weights of one shape become
one `fused.multi_matmul_bias_act`.

A transformer layer multiplies its hidden state by the Q, K and V weights: three
kernels, and with few rows (BERT's 128 on 32 cores) every core of every kernel
stages the whole hidden state again. One kernel computing the three products on
each staged lhs tile (`GemmShape.products`: an L0C accumulator per product)
reads it a third as often, and launches once: horizontal fusion of cube ops
(`ge-auto-fuse{horizontal}` does it for vector groups).

What merges: `fused.matmul_bias_act` ops without a residual and plain 2-D
`ge.matmul` ops of one block that share the lhs value, the transpose flags, the
activation, the weight type, the result type and the bias type (or have no
bias), at most `MAX_PRODUCTS` at a time (each product holds an accumulator in
L0C and fp32 tiles in UB). The merged op takes the place of the first; the
later ones' weights and biases must be defined before it, or be constants, which
move up (they have no operands). It runs after automatic fusion, so a product
that fused with its epilogue into a group stays there.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from ...core.passes import record_statistic
from ...dialects import fused, ge

MAX_PRODUCTS = 3
"""Products per merged kernel: Q, K and V. More shrink the tiles (an L0C
accumulator and two fp32 UB tiles each) for little further gain."""

MAX_ROTARY_PRODUCTS = 5
"""Products per merged `fused.rotary_matmul`: a LLaMA layer's rotated Q and K
(two products each) and its V."""


@dataclass(frozen=True)
class _Product:
    op: Operation
    rhs: SSAValue
    bias: SSAValue | None
    act: str
    transpose_a: bool
    transpose_b: bool


def _product(op: Operation) -> tuple[tuple, _Product] | None:
    """(what must agree for a merge, the product) of a mergeable op, else None."""
    if isinstance(op, fused.MatmulBiasActOp):
        if op.residual is not None:
            return None
        bias, act = op.bias, op.attr_value("act")
    elif isinstance(op, ge.MatmulOp):
        if len(op.lhs.type.get_shape()) != 2 or len(op.rhs.type.get_shape()) != 2:
            return None
        bias, act = None, "none"
    else:
        return None
    p = _Product(op, op.rhs, bias, act, op.attr_value("transpose_a"), op.attr_value("transpose_b"))
    key = (op.lhs, p.act, p.transpose_a, p.transpose_b, op.rhs.type, op.results[0].type, bias.type if bias else None)
    return key, p


def _later_constant(value: SSAValue, first: Operation, block: Block) -> bool:
    """Whether `value` is a constant of `block` defined after `first` (it moves up)."""
    owner = value.owner
    return isinstance(owner, ge.ConstOp) and owner.parent is block and block.get_operation_index(owner) > block.get_operation_index(first)


def _available_at(value: SSAValue, first: Operation, block: Block) -> bool:
    """Whether `value` can be used at `first`: a block argument, defined before it,
    or a constant that can move there."""
    owner = value.owner
    if isinstance(owner, Block) or _later_constant(value, first, block):
        return True
    return owner.parent is block and block.get_operation_index(owner) < block.get_operation_index(first)


def _merge(products: list[_Product], block: Block) -> fused.MultiMatmulBiasActOp:
    first, p = products[0].op, products[0]
    operands = [q.rhs for q in products] + [q.bias for q in products if q.bias is not None]
    for value in operands:
        if _later_constant(value, first, block):
            value.owner.detach()
            block.insert_op_before(value.owner, first)
    merged = fused.MultiMatmulBiasActOp.new(
        first.lhs,
        *operands,
        act=p.act,
        biased=p.bias is not None,
        transpose_a=p.transpose_a,
        transpose_b=p.transpose_b,
        result_type=[q.op.results[0].type for q in products],
    )
    merged.location = first.location
    block.insert_op_before(merged, first)
    for product, result in zip(products, merged.results):
        product.op.results[0].replace_all_uses_with(result)
        block.erase_op(product.op)
    return merged


def _rotary_key(op: fused.RotaryMatmulOp) -> tuple:
    """What a product must share with a rotary op to join it: lhs, flags, result
    type and whether biased (cos and sin are the rotary ops' own concern)."""
    a = op.attr_values()
    return (op.operands[0], a.transpose_a, a.transpose_b, op.results[0].type, a.biased)


def _rotary_parts(op: Operation) -> tuple[tuple, list[SSAValue], list[SSAValue], tuple[int, ...]] | None:
    """((cos, sin) or (), weights, biases, rotated) of a rotary op or a plain
    product (act none, no residual), in `fused.rotary_matmul`'s operand order."""
    if isinstance(op, fused.RotaryMatmulOp):
        a = op.attr_values()
        weights = sum((w for w, _ in op.outputs_of(list(op.operands), a)), [])
        biases = sum((b for _, b in op.outputs_of(list(op.operands), a)), [])
        return (op.operands[1], op.operands[2]), weights, biases, tuple(a.rotated)
    found = _product(op)
    if found is None or found[1].act != "none":
        return None
    p = found[1]
    return (), [p.rhs], [p.bias] if p.bias is not None else [], (0,)


def _plain_key(op: Operation) -> tuple | None:
    found = _product(op)
    if found is None or found[1].act != "none":
        return None
    p = found[1]
    return (op.lhs, p.transpose_a, p.transpose_b, op.results[0].type, p.bias is not None)


def _merge_rotary(ops: list[Operation], block: Block) -> fused.RotaryMatmulOp:
    first = ops[0]
    parts = [_rotary_parts(op) for op in ops]
    cos, sin = next(factors for factors, *_ in parts if factors)
    weights = [w for _, ws, _, _ in parts for w in ws]
    biases = [b for _, _, bs, _ in parts for b in bs]
    for value in weights + biases:
        if _later_constant(value, first, block):
            value.owner.detach()
            block.insert_op_before(value.owner, first)
    key = _rotary_key(first) if isinstance(first, fused.RotaryMatmulOp) else _plain_key(first)
    merged = fused.RotaryMatmulOp.new(
        key[0], cos, sin, *weights, *biases,
        rotated=tuple(r for *_, rs in parts for r in rs),
        biased=key[4],
        transpose_a=key[1],
        transpose_b=key[2],
        result_type=[r.type for op in ops for r in op.results],
    )
    merged.location = first.location
    block.insert_op_before(merged, first)
    results = iter(merged.results)
    for op in ops:
        for old in op.results:
            old.replace_all_uses_with(next(results))
        block.erase_op(op)
    return merged


def merge_rotary(block: Block) -> int:
    """Merge each `fused.rotary_matmul` with the other rotary ops (same cos and
    sin) and plain products of its lhs (same flags, result type, biased or not),
    up to `MAX_ROTARY_PRODUCTS` products: one kernel for a layer's rotated Q and K
    and its V. How many merged ops it made."""
    rotary = [op for op in block.ops if isinstance(op, fused.RotaryMatmulOp)]
    plain: dict[tuple, list[Operation]] = defaultdict(list)
    for op in block.ops:
        key = _plain_key(op)
        if key is not None:
            plain[key].append(op)
    made, taken = 0, set()
    for op in rotary:
        if op in taken:
            continue
        key, factors = _rotary_key(op), (op.operands[1], op.operands[2])
        chunk, products = [op], len(_rotary_parts(op)[1])
        others = [r for r in rotary if r is not op and r not in taken and _rotary_key(r) == key
                  and (r.operands[1], r.operands[2]) == factors] + [p for p in plain[key] if p not in taken]
        for other in others:
            count = len(_rotary_parts(other)[1])
            values = [v for part in _rotary_parts(other)[1:3] for v in part]
            if products + count <= MAX_ROTARY_PRODUCTS and all(_available_at(v, op, block) for v in values):
                chunk.append(other)
                products += count
        if len(chunk) > 1:
            taken.update(chunk)
            _merge_rotary(chunk, block)
            made += 1
    return made


def merge_matmuls(block: Block) -> int:
    """Merge the block's products of a shared lhs (see the module docstring); how many
    merged ops it made."""
    made = merge_rotary(block)
    groups: dict[tuple, list[_Product]] = defaultdict(list)
    for op in block.ops:
        found = _product(op)
        if found is not None:
            groups[found[0]].append(found[1])
    for products in groups.values():
        for start in range(0, len(products) - 1, MAX_PRODUCTS):
            chunk = products[start : start + MAX_PRODUCTS]
            first = chunk[0].op
            if len(chunk) < 2 or not all(
                _available_at(v, first, block) for p in chunk[1:] for v in (p.rhs, p.bias) if v is not None
            ):
                continue
            _merge(chunk, block)
            made += 1
    return made


@dataclass(frozen=True)
class MergeMatmulsPass(ModulePass):
    """Merge matmuls sharing an lhs (same weight shape) into one fused.multi_matmul_bias_act."""

    name = "ge-merge-matmuls"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in op.walk():
            if isinstance(function, func.FuncOp) and function.body.blocks:
                made = merge_matmuls(function.body.block)
                if made:
                    record_statistic(self.name, "kernels merged", made)
