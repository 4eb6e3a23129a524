"""Kernel templates, one module per family; importing this package registers them all."""

from . import data_movement, elementwise, gather, layout, pooling  # noqa: F401
from . import cube  # noqa: F401  (matmul family: cube_kernel.py, cube_operands.py, cube_epilogue.py)
from . import rotary  # noqa: F401  (fused.rotary_matmul: two products and the rotation in the epilogue)
from . import normalization  # noqa: F401  (vector compute: softmax and norms)
from . import partials  # noqa: F401  (vector compute: the second kernel of a split-K product)
from . import reduction  # noqa: F401  (vector compute: reductions)
from . import channel  # noqa: F401  (vector compute: bias_add, batch_norm)
from . import groups  # noqa: F401  (vector compute: fused.group)
from . import attention  # noqa: F401  (fused.flash_attention: the mix kernel)
from . import conv_select  # noqa: F401  (ge.conv2d, fused.conv2d_bias_act: implementations chosen by cost)
from . import depthwise_pointwise  # noqa: F401  (fused.depthwise_pointwise: a depthwise conv as a 1x1 product's A)
from . import expand_depthwise  # noqa: F401  (fused.pointwise_depthwise: a 1x1 conv with the depthwise conv in its store)
from . import expand_depthwise_project  # noqa: F401  (fused.expand_depthwise_project: a whole inverted-residual block)
from .registry import template_for  # noqa: F401  (answers for every family imported above)
