"""Resize (opsets 10 to 19) and Upsample over scales or sizes known at import.

Resizing is separable: each resized axis is a linear map from its n input
positions to its m output positions, the same for every other coordinate. The
map's m x n matrix is ONNX's own reference interpolation (onnx.reference's
`_interpolate_1d_along_axis`: every coordinate transformation mode, nearest
mode, cubic coefficient, exclude_outside and antialias) applied to the identity,
so the numbers are the reference's by construction. Per axis then:

* nearest (one 1 per row): a `ge.gather` of the chosen input positions, exact for
  every element type;
* linear and cubic: the axis moved last, a `ge.matmul` by the transposed matrix,
  moved back; tf_crop_and_resize's extrapolated positions are rows of zeros plus a
  constant `extrapolation_value` added after.

Upsample (and Resize-10, which has its semantics) is asymmetric with floor for
nearest. Scales or sizes computed at run time are refused with the input named.
"""

from __future__ import annotations

import numpy as np

from ...dialects.ge import GatherOp, TransposeOp
from .. import ops
from ..builder import Tensor
from .context import NodeContext
from .registry import converts

_MODES = ("nearest", "linear", "cubic")
_COORDINATES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                "tf_crop_and_resize")
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@converts("Upsample", static=(1,))
def upsample(c: NodeContext):
    x = c.input(0, "X")
    scales = c.constant(1, "scales") if c.opset >= 9 else np.asarray(c.floats("scales"))
    mode = _mode(c, {"bilinear": "linear"})
    return _resize(c, x, _scaled_sizes(c, x, scales), mode, "asymmetric", "floor")


@converts("Resize", static=(1, 2, 3))
def resize(c: NodeContext):
    x = c.input(0, "X")
    if c.opset < 11:
        return _resize(c, x, _scaled_sizes(c, x, c.constant(1, "scales")), _mode(c), "asymmetric", "floor")
    roi, scales, sizes = c.constant(1, "roi"), c.constant(2, "scales"), c.constant(3, "sizes")
    axes = _axes(c, x.rank)
    coordinates = c.string("coordinate_transformation_mode", "half_pixel")
    if coordinates not in _COORDINATES or (coordinates == "half_pixel_symmetric" and c.opset < 19):
        raise c.fail(f"coordinate_transformation_mode '{coordinates}' is not one of {', '.join(_COORDINATES)}")
    nearest = c.string("nearest_mode", "round_prefer_floor")
    if nearest not in _NEAREST:
        raise c.fail(f"nearest_mode '{nearest}' is not one of {', '.join(_NEAREST)}")
    options = dict(
        cubic_coeff_a=c.float("cubic_coeff_a", -0.75),
        exclude_outside=bool(c.int("exclude_outside", 0)),
        extrapolation_value=c.float("extrapolation_value", 0.0),
        antialias=bool(c.int("antialias", 0)) if c.opset >= 18 else False,
    )
    if sizes is not None and sizes.size:
        targets = _sized(c, x, [int(s) for s in sizes.reshape(-1)], axes)
    elif scales is not None and scales.size:
        full = np.ones(x.rank)
        if len(scales.reshape(-1)) != len(axes):
            raise c.fail(f"scales has {scales.size} values for {len(axes)} axes")
        full[list(axes)] = scales.reshape(-1)
        targets = _scaled_sizes(c, x, full)
    else:
        raise c.fail("needs scales or sizes")
    window = None
    if coordinates == "tf_crop_and_resize":
        if roi is None or roi.size != 2 * len(axes):
            raise c.fail(f"tf_crop_and_resize needs roi with {2 * len(axes)} values")
        window = {axis: (float(roi.reshape(-1)[i]), float(roi.reshape(-1)[i + len(axes)])) for i, axis in enumerate(axes)}
    return _resize(c, x, targets, _mode(c), coordinates, nearest, window, **options)


def _mode(c: NodeContext, aliases: dict[str, str] | None = None) -> str:
    mode = c.string("mode", "nearest")
    mode = (aliases or {}).get(mode, mode)
    if mode not in _MODES:
        raise c.fail(f"mode '{mode}' is not one of {', '.join(_MODES)}")
    return mode


def _axes(c: NodeContext, rank: int) -> tuple[int, ...]:
    axes = c.ints("axes", None) if c.opset >= 18 else None
    if axes is None:
        return tuple(range(rank))
    normalized = tuple(a % rank for a in axes if -rank <= a < rank)
    if len(normalized) != len(axes) or len(set(normalized)) != len(axes):
        raise c.fail(f"axes {list(axes)} are out of range or repeated for rank {rank}")
    return normalized


def _scaled_sizes(c: NodeContext, x: Tensor, scales) -> list[tuple[float, int]]:
    """(scale, output size) per dim: the size is floor(input * scale)."""
    scales = np.asarray(scales, dtype=np.float64).reshape(-1)
    if scales.size != x.rank or np.any(scales <= 0):
        raise c.fail(f"scales must hold {x.rank} positive values, got {scales.tolist()}")
    return [(float(s), int(float(s) * d)) for s, d in zip(scales.astype(np.float32), x.shape)]


def _sized(c: NodeContext, x: Tensor, sizes: list[int], axes) -> list[tuple[float, int]]:
    """(scale, output size) per dim from `sizes` and keep_aspect_ratio_policy."""
    if len(sizes) != len(axes) or any(s <= 0 for s in sizes):
        raise c.fail(f"sizes must hold {len(axes)} positive values, got {sizes}")
    policy = c.string("keep_aspect_ratio_policy", "stretch") if c.opset >= 18 else "stretch"
    targets = [(1.0, d) for d in x.shape]
    if policy == "stretch":
        for axis, size in zip(axes, sizes):
            targets[axis] = (size / x.shape[axis], size)
        return targets
    if policy not in ("not_larger", "not_smaller"):
        raise c.fail(f"keep_aspect_ratio_policy '{policy}' is not one of stretch, not_larger, not_smaller")
    ratios = [size / x.shape[axis] for axis, size in zip(axes, sizes)]
    scale = min(ratios) if policy == "not_larger" else max(ratios)
    for axis in axes:
        targets[axis] = (scale, int(scale * x.shape[axis] + 0.5))
    return targets


def _resize(c: NodeContext, x: Tensor, targets, mode: str, coordinates: str, nearest: str,
            window: dict[int, tuple[float, float]] | None = None, cubic_coeff_a: float = -0.75,
            exclude_outside: bool = False, extrapolation_value: float = 0.0, antialias: bool = False) -> Tensor:
    if antialias and mode == "nearest":
        raise c.fail("antialias applies to linear and cubic modes only")
    if mode != "nearest" and str(x.dtype) not in ("f16", "f32"):
        raise c.unsupported(f"{mode} resizing of {x.dtype} is not supported (f16, f32)")
    op_resize = _reference()
    coefficients = _coefficients(op_resize, mode, nearest, cubic_coeff_a, antialias)
    y = x
    for axis, (scale, size) in enumerate(targets):
        roi = (window or {}).get(axis)
        if size == y.shape[axis] and scale == 1.0 and roi in (None, (0.0, 1.0)):
            continue
        if size <= 0:
            raise c.fail(f"dim {axis} would have size {size}")
        identity = np.eye(y.shape[axis])
        options = dict(roi=None if roi is None else list(roi), extrapolation_value=extrapolation_value,
                       coordinate_transformation_mode=coordinates, exclude_outside=exclude_outside)
        matrix = _along_axis(op_resize, identity, scale, size, coefficients, options)
        bias = _along_axis(op_resize, np.zeros_like(identity), scale, size, coefficients, options)
        y = _apply(c, y, axis, matrix - bias, bias[:, 0], mode == "nearest")
    return ops.identity(x) if y is x else y


def _reference():
    """ONNX's reference Resize module (the onnx package; .onnxtxt users may lack it)."""
    from ..onnx_proto import require_onnx

    require_onnx()
    from onnx.reference.ops import op_resize

    return op_resize


def _along_axis(op_resize, data: np.ndarray, scale: float, size: int, coefficients, options) -> np.ndarray:
    """The reference's resize of `data`'s axis 0 to `size`: its vectorised form
    (onnx 1.18+), or its per-position form in older onnx releases."""
    if hasattr(op_resize, "_interpolate_1d_along_axis"):
        return op_resize._interpolate_1d_along_axis(data, 0, scale, size, coefficients, **options)
    return np.array([
        [op_resize._interpolate_1d_with_x(data[:, j], scale, size, x, coefficients, **options)
         for j in range(data.shape[1])]
        for x in range(size)
    ])


def _coefficients(op_resize, mode: str, nearest: str, a: float, antialias: bool):
    """The reference's coefficient function of a mode, as `Resize._run` picks it."""
    if mode == "nearest":
        return lambda ratio, scale: op_resize._nearest_coeffs(ratio, mode=nearest)
    if mode == "cubic":
        cubic = op_resize._cubic_coeffs_antialias if antialias else op_resize._cubic_coeffs
        return lambda ratio, scale: cubic(ratio, scale, A=a)
    return op_resize._linear_coeffs_antialias if antialias else op_resize._linear_coeffs


def _apply(c: NodeContext, x: Tensor, axis: int, matrix: np.ndarray, bias: np.ndarray, nearest: bool) -> Tensor:
    """`matrix` (m, n) applied along `axis`, then `bias` (m,) added there."""
    picks = matrix.argmax(axis=1)
    if nearest and np.array_equal(matrix, np.eye(matrix.shape[1])[picks]) and not bias.any():
        return c.g.op(GatherOp, x, c.g.const(picks.astype(np.int64)), axis=axis)
    last = x.rank - 1
    perm = [*(i for i in range(x.rank) if i != axis), axis]
    moved = x if axis == last else c.g.op(TransposeOp, x, perm=perm)
    rows = ops.reshape(moved, [int(np.prod(moved.shape[:-1])), moved.shape[-1]])
    dtype = np.float16 if str(x.dtype) == "f16" else np.float32
    product = ops.matmul(rows, c.g.const(matrix.T.astype(dtype), dtype=x.dtype))
    if bias.any():
        product = product + c.g.const(bias.astype(dtype), dtype=x.dtype)
    y = ops.reshape(product, [*moved.shape[:-1], matrix.shape[0]])
    if axis == last:
        return y
    return c.g.op(TransposeOp, y, perm=[perm.index(i) for i in range(x.rank)])
