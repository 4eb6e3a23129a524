"""What the named `fused` ops share: the `ge` op contract plus optional operands,
and the pieces of semantics several fused ops are built from (activations, masks,
scales), each delegating to the `ge` op that defines it.

Named fused ops subclass `GEOp`, so they have the same textual form, typed
attributes, `infer` shape rule and verifier, and `compute` reference semantics
as the `ge` ops. What they add is **optional operands**, with one convention
used by every fused op:

* In IRDL an optional operand is an `opt_operand_def`; the op carries
  `AttrSizedOperandSegments` as a property (never printed: it follows from the
  text).
* In the text, the required operands come first, comma-separated; then each
  optional operand that is present is written as `keyword %value`, in
  declaration order::

      %y = fused.matmul_bias_act %x, %w bias %b residual %r {act = "gelu"} : (...) -> ...

  The function type lists the operand types in the written order.
* In `infer` and `compute` (which receive flat lists, as for every `ge` op) the
  attribute namespace `a` carries `a.operands`, the names of the operands that
  are present, and `by_name(values, a)` gives a namespace with `None` for the
  absent ones.
* Builders take optional operands as keywords:
  `MatmulBiasActOp.new(x, w, bias=b, act="relu")`.

The semantics of a fused op are written by composing the `compute` of the `ge`
ops it replaces (`ge_compute(MatmulOp, ...)`), so a fused op cannot drift from
the unfused graph it stands for. Fused ops keep intermediates in the compute
dtype (fp32 for fp16 data) and round once at the end, as their kernels do.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import OptionalDef, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure

from ...core import dtypes
from ..ge import AddOp, DropoutOp, GeluOp, GEOp, MaximumOp, MinimumOp, MulOp, ReluOp, SigmoidOp, SiluOp, SoftmaxOp, WhereOp
from ..ge.base import _with_declared_encodings, as_type_list, fail, shape_of, to_attribute

# ---- optional operands ------------------------------------------------------------------


class FusedOp(GEOp):
    """Base class of the named fused ops: a `GEOp` whose optional operands follow
    the convention in this module's docstring. Every named fused op is pure: it
    stands for a subgraph of pure `ge` ops."""

    traits = traits_def(Pure())

    DROPPABLE_RESULTS: ClassVar[tuple[str, ...]] = ()
    """Results whose kernel may leave them unwritten when nothing reads them: a
    norm's residual sum, which a post-norm model (BERT) never reads again."""

    def unread_droppable_results(self) -> list[SSAValue]:
        """The droppable results nothing uses: no GM buffer, no store."""
        names = [name for name, _ in self.get_irdl_definition().results]
        return [r for name, r in zip(names, self.results) if name in self.DROPPABLE_RESULTS and not r.uses]

    @classmethod
    def operand_names(cls) -> tuple[str, ...]:
        return tuple(name for name, _ in cls.get_irdl_definition().operands)

    @classmethod
    def optional_operand_names(cls) -> tuple[str, ...]:
        return tuple(n for n, d in cls.get_irdl_definition().operands if isinstance(d, OptionalDef))

    @classmethod
    def required_operand_names(cls) -> tuple[str, ...]:
        optional = set(cls.optional_operand_names())
        return tuple(n for n in cls.operand_names() if n not in optional)

    def present_operand_names(self) -> tuple[str, ...]:
        return tuple(n for n in self.operand_names() if getattr(self, n) is not None)

    def attr_values(self) -> SimpleNamespace:
        values = super().attr_values()
        values.operands = self.present_operand_names()
        return values

    @classmethod
    def new(
        cls,
        *operands: SSAValue | Operation,
        result_type: TensorType | Sequence[TensorType] | None = None,
        attributes: dict[str, Attribute] | None = None,
        **kwargs: Any,
    ):
        """`Op.new(required..., optional_name=value, attr=value)`: infers the result
        types; `result_type` (e.g. the types of the values the op replaces, with
        their encodings) is kept where its shape agrees."""
        optional = {n: kwargs.pop(n) for n in cls.optional_operand_names() if n in kwargs}
        required = cls.required_operand_names()
        if len(operands) != len(required):
            raise TypeError(f"{cls.name} takes {len(required)} required operands, got {len(operands)}")
        given = dict(zip(required, (SSAValue.get(o) for o in operands)))
        given.update({n: SSAValue.get(v) for n, v in optional.items() if v is not None})
        present = tuple(n for n in cls.operand_names() if n in given)
        values = cls._complete_attrs(kwargs)
        cls._check_choices(values)
        namespace = SimpleNamespace(**values, operands=present)
        declared = None if result_type is None else as_type_list(result_type)
        inferred = as_type_list(cls.infer([given[n].type for n in present], namespace, declared))
        if declared is not None:
            inferred = _with_declared_encodings(inferred, declared)
        return cls.build(
            operands=cls._grouped(given),
            result_types=inferred,
            properties={n: to_attribute(cls.attr_fields()[n].kind, v) for n, v in values.items()},
            attributes=attributes,
        )

    @classmethod
    def _grouped(cls, given: dict[str, Any]) -> list[Any]:
        """Operands in IRDL's shape: a value per required operand, a list of zero or
        one value per optional one."""
        optional = cls.optional_operand_names()
        return [([given[n]] if n in given else []) if n in optional else given[n] for n in cls.operand_names()]

    # ---- textual form -------------------------------------------------------------

    @classmethod
    def parse(cls, parser: Parser):
        start = parser.pos
        required = [parser.parse_unresolved_operand()] if cls.required_operand_names() else []
        while required and parser.parse_optional_punctuation(",") is not None:
            required.append(parser.parse_unresolved_operand())
        if len(required) != len(cls.required_operand_names()):
            parser.raise_error(
                f"{cls.name} takes {len(cls.required_operand_names())} operands "
                f"({', '.join(cls.required_operand_names())}) before the optional ones, got {len(required)}",
                start,
                parser.pos,
            )
        optional = cls._parse_optional_operands(parser)
        unresolved = required + [u for _, u in optional]
        attr_pos = parser.pos
        written = parser.parse_optional_attr_dict()
        inputs, outputs, type_pos = cls._parse_function_type(parser, len(unresolved))
        results = len(cls.get_irdl_definition().results)
        if len(outputs) != results:
            parser.raise_error(
                f"{cls.name} takes {results} result{'s' if results > 1 else ''}, got {len(outputs)}",
                type_pos,
                parser.pos,
            )
        values = parser.resolve_operands(unresolved, inputs, parser.pos)
        by_name = dict(zip(cls.required_operand_names(), values))
        by_name.update((name, v) for (name, _), v in zip(optional, values[len(required):]))
        properties, attributes = cls._split_written_attrs(parser, written, attr_pos)
        return cls.build(
            operands=cls._grouped(by_name),
            result_types=list(outputs),
            properties=properties,
            attributes=attributes,
        )

    @classmethod
    def _parse_optional_operands(cls, parser: Parser) -> list[tuple[str, Any]]:
        names = cls.optional_operand_names()
        found: list[tuple[str, Any]] = []
        position = 0
        while True:
            pos = parser.pos
            keyword = next((n for n in names if parser.parse_optional_keyword(n) is not None), None)
            if keyword is None:
                return found
            index = names.index(keyword)
            if index < position:
                parser.raise_error(
                    f"{cls.name}: optional operands must be written in the order {', '.join(names)}",
                    pos,
                    parser.pos,
                )
            position = index + 1
            found.append((keyword, parser.parse_unresolved_operand()))

    def print(self, printer: Printer) -> None:
        required = [getattr(self, n) for n in self.required_operand_names()]
        if required:
            printer.print_string(" ")
            printer.print_list(required, printer.print_operand)
        for name in self.optional_operand_names():
            value = getattr(self, name)
            if value is not None:
                printer.print_string(f" {name} ")
                printer.print_operand(value)
        self._print_attr_dict(printer)
        printer.print_string(" : ")
        printer.print_function_type(self.operand_types, self.result_types)


def by_name(values: Sequence[Any], a: SimpleNamespace) -> SimpleNamespace:
    """Operand types (in `infer`) or arrays (in `compute`) by operand name; `None`
    for an optional operand that is absent."""
    return SimpleNamespace(**dict(zip(a.operands, values, strict=True)))


def operand(named: SimpleNamespace, name: str) -> Any:
    return getattr(named, name, None)


# ---- pieces of semantics, delegated to the ge ops ----------------------------------------


def ge_compute(
    op: type[GEOp], inputs: Sequence[np.ndarray], result_types: Sequence[TensorType] = (), **attrs: Any
) -> np.ndarray:
    """The `compute` of a `ge` op on compute-dtype arrays (no rounding in between).
    `result_types` only for the ops whose semantics read them (conv2d, reshape)."""
    return op.compute(list(inputs), SimpleNamespace(**attrs), list(result_types))


INPUT = "input"
"""In an activation step, the second operand that is the activation's own input."""

ActivationStep = tuple[type[GEOp], dict[str, Any], float | str | None]
"""`t = op(t[, second])`: a ge op applied to the running value, with its
attributes and its second operand (a constant, `INPUT`, or None for a unary op)."""

ACTIVATIONS: dict[str, tuple[ActivationStep, ...]] = {
    "none": (),
    "relu": ((ReluOp, {}, None),),
    "gelu": ((GeluOp, {"approximate": "none"}, None),),
    "gelu_tanh": ((GeluOp, {"approximate": "tanh"}, None),),
    "silu": ((SiluOp, {}, None),),
    "sigmoid": ((SigmoidOp, {}, None),),
    # ReLU6 = Clip(x, 0, 6) as ONNX exporters write it.
    "relu6": ((MaximumOp, {}, 0.0), (MinimumOp, {}, 6.0)),
    # HardSwish = x * HardSigmoid(x, 1/6, 0.5), in the order the importer writes it.
    "hard_swish": (
        (MulOp, {}, 1.0 / 6.0),
        (AddOp, {}, 0.5),
        (MinimumOp, {}, 1.0),
        (MaximumOp, {}, 0.0),
        (MulOp, {}, INPUT),
    ),
}
"""Activation names of the fused ops -> the chain of `ge` ops they mean: one
definition that the reference semantics (`activate`) and the kernels
(`templates/cube.activate`) both run step by step."""

ACTIVATION_NAMES = tuple(ACTIVATIONS)
GATED_ACTIVATION_NAMES = tuple(n for n in ACTIVATIONS if n != "none")


def activate(name: str, x: np.ndarray) -> np.ndarray:
    y = x
    for op, attrs, second in ACTIVATIONS[name]:
        if second is None:
            y = ge_compute(op, [y], **attrs)
        else:
            y = ge_compute(op, [y, x if second == INPUT else np.asarray(second, dtype=x.dtype)], **attrs)
    return y


def scale_by(x: np.ndarray, scale: float) -> np.ndarray:
    """`x * scale` as `ge.mul` computes it (the identity for scale 1)."""
    return x if scale == 1.0 else ge_compute(MulOp, [x, np.asarray(scale, dtype=x.dtype)])


def apply_mask(scores: np.ndarray, mask: np.ndarray | None, mask_value: float) -> np.ndarray:
    """A boolean mask keeps `scores` where true and puts `mask_value` elsewhere
    (`ge.where`); a float mask is added (`ge.add`)."""
    if mask is None:
        return scores
    if mask.dtype == np.bool_:
        return ge_compute(WhereOp, [mask, scores, np.asarray(mask_value, dtype=scores.dtype)])
    return ge_compute(AddOp, [scores, mask])


def masked_softmax(scores: np.ndarray, mask: np.ndarray | None, a: SimpleNamespace, axis: int) -> np.ndarray:
    """`dropout(softmax(mask(scores * scale)))` along `axis`, with the op's `scale`,
    `mask_value` and `dropout` attributes: `fused.softmax`'s semantics, which is
    also the middle of `fused.flash_attention`, so the two cannot drift apart."""
    scores = apply_mask(scale_by(scores, a.scale), mask, a.mask_value)
    return ge_compute(DropoutOp, [ge_compute(SoftmaxOp, [scores], axis=axis)], ratio=a.dropout)


def add_all(x: np.ndarray, *terms: np.ndarray | None) -> np.ndarray:
    """`x + t1 + t2 ...` with `ge.add`, skipping absent terms."""
    for term in terms:
        if term is not None:
            x = ge_compute(AddOp, [x, term])
    return x


# ---- pieces of shape rules ----------------------------------------------------------------


def require_broadcasts_to(t: TensorType | None, shape: Sequence[int], what: str) -> None:
    """`t` must broadcast to `shape` without growing it (bias, residual, mask)."""
    if t is None:
        return
    try:
        fits = tuple(np.broadcast_shapes(shape_of(t), tuple(shape))) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise fail(
            f"{what} of shape {dtypes.format_shape(shape_of(t))} does not broadcast to {dtypes.format_shape(shape)}"
        )


def require_bias(t: TensorType | None, shapes: tuple[tuple[int, ...], ...], element_type) -> None:
    """A per-column (matmul) or per-channel (conv) bias: one of `shapes`, the
    first of which is the plain vector."""
    if t is None:
        return
    if shape_of(t) not in shapes:
        allowed = " or ".join("(" + ", ".join(map(str, s)) + ")" for s in shapes)
        raise fail(f"bias must have shape {allowed}, got {t}")
    require_same_element_type(t, element_type, "bias")


def require_same_element_type(t: TensorType | None, element_type: Attribute, what: str) -> None:
    if t is not None and t.element_type != element_type:
        raise fail(f"{what} element type {t.element_type} differs from {element_type}")


def require_mask(mask: TensorType | None, scores_shape: Sequence[int], element_type: Attribute) -> None:
    """A mask is i1 (select) or of the scores' element type (additive), and
    broadcasts to the scores."""
    if mask is None:
        return
    if not dtypes.is_bool(mask.element_type) and mask.element_type != element_type:
        raise fail(f"mask must be i1 or {element_type}, got {mask.element_type}")
    require_broadcasts_to(mask, scores_shape, "mask")


def require_dropout_ratio(ratio: float) -> None:
    if not 0.0 <= ratio < 1.0:
        raise fail(f"dropout ratio must be in [0, 1), got {ratio}")
