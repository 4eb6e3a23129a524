"""One BLAS thread for the simulator's numerics.

The cube's `mmad` computes with `numpy.matmul`, thousands of small products
(at most 256 x 256 x 256) per kernel. A multi-threaded BLAS wakes its threads for
each of them: on a machine with few cores shared by other processes that costs
far more than the product itself (measured: 40 ms instead of 0.2 ms for a
128 x 64 x 256 product on 2 busy cores). So the simulator asks the BLAS numpy
uses for one thread: through `threadpoolctl` when it is installed, else through
OpenBLAS's own entry point in the library numpy ships. Nothing is changed if
neither is found.
"""

from __future__ import annotations

import ctypes
import glob
import os
from functools import lru_cache

_SET_THREADS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads_64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)


@lru_cache(maxsize=1)
def single_threaded_blas() -> bool:
    """Limit numpy's BLAS to one thread (once per process); whether it could."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return _openblas_one_thread()
    threadpool_limits(1, user_api="blas")
    return True


def _openblas_one_thread() -> bool:
    import numpy

    root = os.path.dirname(numpy.__file__)
    for path in glob.glob(os.path.join(root, "..", "numpy.libs", "*openblas*")) + glob.glob(
        os.path.join(root, ".dylibs", "*openblas*")
    ):
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _SET_THREADS:
            setter = getattr(library, name, None)
            if setter is not None:
                setter(1)
                return True
    return False
