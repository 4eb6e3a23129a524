"""Passes on the `npu` level: synchronisation, double buffering, local and GM
memory planning."""
