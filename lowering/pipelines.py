"""The compilation pipelines: `ge-lower-to-npu` (fused graph -> runnable npu module)
and `ge-compile` (graph -> runnable npu module, every level)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.passes import ModulePass

from ..core.passes import PipelinePass
from ..core.precision import DEFAULT_MODE, MUST_KEEP_ORIGIN_DTYPE
from ..transforms.graph.precision import PrecisionPass, check_mode, op_names
from .fused_to_npu.tune_convs import TuneConvsPass
from .fused_to_npu.tune_tilings import TuneTilingsPass
from .stages import form_stages, kernel_stages


@dataclass(frozen=True)
class LowerToNpuPipeline(PipelinePass):
    """Kernels and host plan, then synchronisation and memory planning (ge/fused -> npu);
    `merge` joins consecutive launches of a stream into one kernel (npu-merge-launches)
    whose phases load their constants before their barriers (npu-prefetch-constants);
    `tune=N` simulates each convolution's N best estimated implementations
    (fused-tune-convs), then each cube kernel's N best estimated tilings
    (fused-tune-tilings), and keeps the fastest (0, the default, takes the
    estimates' choices)."""

    name = "ge-lower-to-npu"

    hw: str = "ascend910"
    debug: bool = False
    reuse: bool = True
    streams: int = 0
    double_buffer: bool = True
    merge: bool = True
    tune: int = 0

    def stages(self) -> list[ModulePass]:
        tuning = TuneTilingsPass(
            hw=self.hw,
            top=self.tune,
            debug=self.debug,
            reuse=self.reuse,
            streams=self.streams,
            double_buffer=self.double_buffer,
            merge=self.merge,
        )
        return [
            *form_stages(self.hw, self.debug, self.merge),
            *([self._conv_tuning(), tuning] if self.tune else []),
            *self.kernel_stages(),
        ]

    def _conv_tuning(self) -> ModulePass:
        return TuneConvsPass(
            hw=self.hw, top=self.tune, debug=self.debug, reuse=self.reuse, streams=self.streams,
            double_buffer=self.double_buffer, merge=self.merge,
        )

    def kernel_stages(self) -> list[ModulePass]:
        """From the fused graph to the finished npu module: what fused-tune-tilings
        compiles each candidate with."""
        return kernel_stages(self.hw, self.debug, self.reuse, self.streams, self.double_buffer, self.merge)


@dataclass(frozen=True)
class CompilePipeline(PipelinePass):
    """The whole compiler: graph optimisation, fusion, lowering to NPU instructions.
    Eager mode (`fuse=false`) keeps one launch per op: it merges no launches.
    `tune=N` picks each cube kernel's tiling by simulation (see ge-lower-to-npu).
    `precision=MODE` is ATC's --precision_mode (ge-precision, after graph
    optimisation and before fusion); `precision-keep-fp32=op,op` and
    `precision-allow-fp16=op,op` adjust its lists."""

    name = "ge-compile"

    fuse: bool = True
    hw: str = "ascend910"
    debug: bool = False
    reuse: bool = True
    streams: int = 0
    double_buffer: bool = True
    merge: bool = True
    tune: int = 0
    precision: str = DEFAULT_MODE
    precision_keep_fp32: tuple[str, ...] = ()
    precision_allow_fp16: tuple[str, ...] = ()

    def __post_init__(self):
        # A bad mode or op name is an error when the pipeline is parsed.
        check_mode(self.precision, f"{self.name} precision")
        op_names(self.precision_keep_fp32, f"{self.name} precision-keep-fp32")
        op_names(self.precision_allow_fp16, f"{self.name} precision-allow-fp16")

    def precision_stage(self) -> PrecisionPass:
        return PrecisionPass(
            mode=self.precision,
            keep_fp32=self.precision_keep_fp32,
            allow_fp16=self.precision_allow_fp16,
            debug=self.debug,
        )

    def stages(self) -> list[ModulePass]:
        from ..core.passes import available_passes

        passes = available_passes()
        graph_opt_pass = passes["ge-graph-opt"]()

        def graph_opt(**options) -> ModulePass:
            # Single-pixel 1x1 convolutions become vector products only where
            # fusion joins them to their epilogues (transforms/graph/single_pixel_conv.py).
            return graph_opt_pass(single_pixel_conv=self.fuse, **options)

        stages: list[ModulePass] = [graph_opt()]
        if self.precision != MUST_KEEP_ORIGIN_DTYPE:
            # Physical formats depend on the element type (C0 = 32 bytes / element):
            # choose them once the precision is known.
            stages = [graph_opt(layout=False), self.precision_stage(), graph_opt()]
        if self.fuse:
            # Expert MLPs as batched products before layout gives them formats,
            # the gates' mixes of their outputs as weighted sums (vector unit).
            stages[:0] = [passes["ge-group-matmuls"]()(), passes["ge-vector-mix"]()()]
            stages.append(passes["ge-fuse"]()(hw=self.hw))
        stages.append(
            LowerToNpuPipeline(
                hw=self.hw,
                debug=self.debug,
                reuse=self.reuse,
                streams=self.streams,
                double_buffer=self.double_buffer,
                merge=self.merge and self.fuse,
                tune=self.tune,
            )
        )
        return stages
