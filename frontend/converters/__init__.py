"""ONNX op -> ge ops, one module per family of ops. Importing this package fills
`CONVERTERS` (see `registry.py`)."""

from . import activations, einsum, col2im, control_flow, determinant, dft, elementwise, gathering, grid_sample, import_time, indexing, optionals, linear, normalization, pooling, quantization, recurrent, reduction, resize, scans, selection, shape, unpooling, variadic  # noqa: F401  (registration)
from .context import Constant, Converter, NodeContext, UnsupportedError
from .registry import CONVERTERS

__all__ = ["CONVERTERS", "Constant", "Converter", "NodeContext", "UnsupportedError"]
