"""Issue 29's transformer rows: BERT, GPT-2 and a LLaMA-style model at 4 layers
(hidden 256, 4 heads, sequence 128; BERT's FFN 1024, LLaMA's 688 with 2 key /
value heads), built with the model set's own builders (`bench/models/export.py`:
the same Hugging Face configs and wrapping, only larger), exported with the
TorchScript exporter, compiled with `ge-compile` and simulated against
onnxruntime, as `bench/models.py` does for the committed set.

    python bench/transformer_rows.py                 # all three, ascend910
    python bench/transformer_rows.py --only llama    # one
    python bench/transformer_rows.py --phases        # also each phase's cycles (bench/phase_anatomy.py's split)
                                                     # and its own roofline (cube, vector or HBM bound over all cores)

Columns: cycles, the module's roofline (`roofline_cycles` of the simulation
report: its kernels' work at the precision compiled), roofline / cycles, the
phase with the largest share of the cycles, and the check against onnxruntime
(worst error over the tolerance; <= 1 passes). Exports are made once per run in
a temporary directory (random weights, seed 0: nothing is downloaded).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "models"))

import export  # noqa: E402  (bench/models is not a package of the install)
import stored  # noqa: E402

SEQUENCE = 128
SMALL = dict(vocab_size=export.VOCAB, max_position_embeddings=2 * SEQUENCE)
MASKED = dict(use_cache=False, full_mask=True)

ROWS = {
    "bert": ("BertModel", "BertConfig", dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                             intermediate_size=1024, **SMALL)),
    "gpt2": ("GPT2Model", "GPT2Config", dict(n_embd=256, n_layer=4, n_head=4, n_positions=2 * SEQUENCE,
                                             vocab_size=export.VOCAB, **MASKED, **export.TOKEN_IDS)),
    "llama": ("LlamaModel", "LlamaConfig", dict(hidden_size=256, intermediate_size=688, num_hidden_layers=4,
                                                num_attention_heads=4, num_key_value_heads=2, **MASKED, **SMALL)),
}


def spec(name: str) -> export.Spec:
    model_class, config_class, config = ROWS[name]
    return export.Spec(name, export._hf(model_class, config_class, **config), export.TOKENS, ("input_ids",))


def measure(name: str, folder: str, phases: bool) -> dict:
    """Export, import, compile, simulate one row; the row's columns."""
    import onnx

    from gecomp.bench.models import run
    from gecomp.simulator.npu import simulate
    from gecomp.simulator.npu.anatomy import phase_anatomy
    from gecomp.simulator.npu.plots import task_bounds

    path = os.path.join(folder, f"{name}.onnx")
    export.SEQ = SEQUENCE
    export.export(spec(name), "torchscript", path)
    stripped = onnx.load(path)
    proto, inputs = stored.restore(stripped), stored.inputs(stripped, 0)
    module = run.import_proto(proto)
    want = run.onnxruntime_outputs(proto, inputs)
    start = time.perf_counter()
    run.compile_module(module)
    compile_s = time.perf_counter() - start
    report = simulate(module, inputs, hw="ascend910", trace=True, check_races=False).report
    anatomy = phase_anatomy(report)
    sim = run.simulate(module, inputs, want)
    largest = max(anatomy, key=lambda p: p.cycles, default=None)
    row = dict(model=name, cycles=sim.cycles, roofline=sim.roofline_cycles, check=sim.worst_ratio,
               compile_s=compile_s, largest=f"{largest.name} {largest.cycles / sim.cycles:.1%}" if largest else "")
    if phases:
        bounds = {task: bound for task, bound, _ in task_bounds(report)}
        for p in anatomy:
            bound = bounds.get(p.name, 0.0)
            print(f"  {name} {p.cycles:>7} {p.cycles / sim.cycles:6.1%}  bound {bound:>6.0f} ({bound / max(p.cycles, 1):4.0%})"
                  f"  fill {p.fill:>5} work {p.work:>5}  {p.name}")
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", action="append", choices=sorted(ROWS), help="only this model (repeatable)")
    p.add_argument("--phases", action="store_true", help="print each phase's cycles")
    args = p.parse_args(argv)
    print(f"{'model':<7}{'cycles':>10}{'roofline':>10}{'ratio':>8}{'check':>8}{'compile s':>11}  largest phase")
    with tempfile.TemporaryDirectory() as folder:
        for name in args.only or ROWS:
            r = measure(name, folder, args.phases)
            print(f"{r['model']:<7}{r['cycles']:>10,}{r['roofline']:>10,.0f}{r['roofline'] / r['cycles']:>8.1%}"
                  f"{r['check']:>8.3f}{r['compile_s']:>11.0f}  {r['largest']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
