"""Sweeps of presets x pass options x models x device counts on Dask; see
`gecomp/tools/sweep.py` (this script is its command line).

    python bench/sweep.py --models examples/mlp.mlir,examples/llama_layer.mlir \
        --hw ascend910 --options 'fuse=true;fuse=false' --devices 1,2,4 --csv sweep.csv --plot sweep.png
"""

import sys

from gecomp.tools.sweep import main

if __name__ == "__main__":
    sys.exit(main())
