"""Executing modules: the reference interpreter for the value-semantic levels and
the cycle-approximate NPU simulator for the `npu` level."""
