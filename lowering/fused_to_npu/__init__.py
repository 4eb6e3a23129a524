"""Lowering the graph to the NPU: one kernel per (fused) op, and the host plan.

* `convert.py`: the `ge-to-npu` pass (host plan, GM buffers, one launch per op);
* `context.py`: what a kernel template receives, and the template registry;
* `kernel_builder.py`: writing npu kernels from Python (loops, index math);
* `vector_emitter.py`: vector instructions on UB tiles, and how each ge
  elementwise op is computed by the vector unit;
* `row_kernel.py`: the row-tile kernel all row-by-row vector kernels share;
* `templates/`: the kernel templates, one module per family.
"""
