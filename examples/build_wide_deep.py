"""Wide & Deep (Cheng et al., 2016) built with the Python graph builder, written to
examples/wide_deep.mlir.

The wide part is a linear model over sparse cross features (given dense here);
the deep part embeds categorical ids (a gather from an embedding table), joins
them with dense features and runs an MLP. The two parts are independent
branches, summed into one logit and a sigmoid. fp16, seeded random weights.

    python examples/build_wide_deep.py       # writes examples/wide_deep.mlir
    ge-sim examples/wide_deep.mlir --report
"""

from __future__ import annotations

from build_mmoe import dense, write_example

from gecomp.frontend import ops
from gecomp.frontend.builder import GraphBuilder

BATCH, WIDE, FIELDS, VOCAB, EMBED, DENSE = 256, 1024, 8, 1000, 32, 16
DEEP_LAYERS = (512, 256, 128)


def build():
    g = GraphBuilder("wide_deep", dtype="f16")
    crosses = g.input([BATCH, WIDE], name="cross_features")
    ids = g.input([BATCH, FIELDS], "i32", name="category_ids")
    numeric = g.input([BATCH, DENSE], name="dense_features")

    wide = dense(g, crosses, 1, activation=None)

    table = g.random([VOCAB, EMBED], std=0.05)
    embedded = ops.gather(table, ids, axis=0).reshape([BATCH, FIELDS * EMBED])
    deep = ops.concat([embedded, numeric], axis=1)
    for units in DEEP_LAYERS:
        deep = dense(g, deep, units)
    deep = dense(g, deep, 1, activation=None)

    g.output(ops.sigmoid(wide + deep), name="click_probability")
    return g.build()


if __name__ == "__main__":
    write_example(build, "wide_deep.mlir", __file__)
