"""`ge-sim --devices N`: run a module partitioned for N devices (by `--pipeline
'ge-partition{...}'` or already partitioned): every device's outputs through
the multi-device reference interpreter, `--check` against the single-device
reference of the unpartitioned input, `--report` / `--json` / `--trace` through
the multi-device simulator (each device the NPU chip model, links from the
preset)."""

from __future__ import annotations

import argparse

from xdsl.dialects.builtin import ModuleOp

from ..core.diagnostics import CompileError
from ..simulator.compare import precision_floor
from ..simulator.devices import device_count, device_functions, run_devices
from ..simulator.reference import run_reference
from ..core.signature import (
    TensorSpec,
    input_specs,
    load_inputs,
    output_specs,
    random_inputs,
    save_outputs,
    summarize,
)


def run(args: argparse.Namespace, module: ModuleOp, source: ModuleOp | None, check, write) -> int:
    """`source` is the module before the pipeline (the single-device reference for
    --check); `check` and `write` are ge-sim's comparison of outputs and file writer."""
    count = device_count(module)
    if count is None:
        raise CompileError(
            f"--devices {args.devices}: the module is not partitioned; partition it first "
            f"(--pipeline 'ge-partition{{devices={args.devices} strategy=tp}}')"
        )
    if count != args.devices:
        raise CompileError(f"--devices {args.devices}: the module is partitioned for {count} devices")
    functions = device_functions(module)
    specs = input_specs(functions[0])
    inputs = load_inputs(args.inputs, specs) if args.inputs else random_inputs(specs, args.seed)
    results = run_devices(module, inputs)
    for device, (f, outputs) in enumerate(zip(functions, results)):
        for spec, array in zip(output_specs(f), outputs):
            print(f"device {device}: {summarize(spec, array)}")
    if args.outputs:
        # One archive, each output under its device: `device0/y`, `device1/y`...
        specs = [TensorSpec(f"device{d}/{s.name}", s.type) for d, f in enumerate(functions) for s in output_specs(f)]
        save_outputs(args.outputs, specs, [a for outputs in results for a in outputs])
    if args.report or args.json or args.trace:
        from ..lowering.compute_time import ComputeTimer
        from ..simulator.hardware import load_preset
        from ..lowering.plan.device_streams import simulate_devices

        report = simulate_devices(module, ComputeTimer(load_preset(args.hw)), hw=args.hw, algorithm=args.collectives)
        if args.report:
            print(report)
        if args.json:
            write(args.json, report.json_text())
        if args.trace:
            write(args.trace, report.trace_text())
    if args.check:
        if source is None or device_count(source) is not None:
            raise CompileError("--check with --devices needs a single-device input partitioned by --pipeline")
        expected = run_reference(source, inputs)
        status = 0
        for device, (f, outputs) in enumerate(zip(functions, results)):
            if outputs:
                print(f"device {device}: ", end="")
                status |= check(output_specs(f), expected, outputs, precision_floor(source))
        return status
    return 0
