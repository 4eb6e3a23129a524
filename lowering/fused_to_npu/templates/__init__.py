"""Kernel templates, one module per family; importing this package registers them all."""

from . import data_movement, elementwise  # noqa: F401
