"""The `ge` graph dialect: value-semantic tensor ops, each with its verifier,
shape rule and numpy reference semantics (see `base.py` for the contract).

`func.func @main` holds the graph; argument and result attributes `ge.name`
record the names inputs and outputs go by (npz keys, ONNX names).
"""

from xdsl.ir import Dialect

from .base import EvaluationError, GEOp, Kind, attr
from .collective import *  # noqa: F403
from .collective import COLLECTIVE_OPS, CollectiveOp, PointToPointOp
from .const import ConstOp, RandomAttr, constant_value, dense_from_numpy, dense_to_numpy
from .elementwise import *  # noqa: F403
from .elementwise import ELEMENTWISE_OPS, BinaryOp, FloatUnaryOp, UnaryOp
from .formats import FORMAT_ATTRS, FORMAT_OPS, Format, FormatAttr, TransDataOp
from .nn import *  # noqa: F403
from .nn import NN_OPS
from .normalization import *  # noqa: F403
from .normalization import NORMALIZATION_OPS
from .reduction import *  # noqa: F403
from .reduction import REDUCTION_OPS, ReduceOp
from .shape import *  # noqa: F403
from .shape import SHAPE_OPS

GE_OPS = (
    ConstOp, *ELEMENTWISE_OPS, *NN_OPS, *NORMALIZATION_OPS, *REDUCTION_OPS, *SHAPE_OPS, *FORMAT_OPS
)
"""The single-device ops (what random graphs, the builder and the op-coverage checks
range over). The collectives join them in the dialect: they run on a device group."""

GE = Dialect("ge", [*GE_OPS, *COLLECTIVE_OPS], [RandomAttr, *FORMAT_ATTRS])

__all__ = [
    "GE",
    "GE_OPS",
    "GEOp",
    "BinaryOp",
    "UnaryOp",
    "FloatUnaryOp",
    "ReduceOp",
    "ConstOp",
    "RandomAttr",
    "Format",
    "FormatAttr",
    "EvaluationError",
    "Kind",
    "attr",
    "constant_value",
    "dense_from_numpy",
    "dense_to_numpy",
    *(op.__name__ for op in GE_OPS if op is not ConstOp),
    *(op.__name__ for op in COLLECTIVE_OPS),
    "COLLECTIVE_OPS",
    "CollectiveOp",
    "PointToPointOp",
]
