"""`ge-to-npu`: the graph (ge and fused ops in `@main`) becomes a host plan of kernel
launches over GM buffers, with one `npu.kernel` per op.

* `@main` keeps its inputs' names and shapes; its results become output GM
  arguments (`npu.output`, destination-passing). A result produced by an op is
  written by that op's kernel straight into the output argument.
* Constants become `npu.gm_constant`s, uploaded in their physical format.
* Ops that move no data get no kernel: `ge.identity` and `ge.dropout` reuse their
  input's buffer, a `ge.reshape` of an ND tensor is an `npu.gm_view` of it.
* Every other op is lowered by the kernel template registered for it
  (`templates/registry.kernel_for`), which writes a kernel whose parameters are the op's
  input buffers then its output buffers; the host launches it once. A result
  the op lets go unwritten (`FusedOp.DROPPABLE_RESULTS`) that nothing reads
  gets no buffer: the kernel's outputs are the written results, in order.

Identical ops get identical kernels: each distinct kernel is built once per
`ge-to-npu` and cloned for the others (`kernel_cache.py` says what the key holds;
`GECOMP_KERNEL_CACHE=0` builds every one afresh).

Intermediates are `npu.gm_buffer`s without offsets; `npu-plan-gm` places them.
Kernels come out without synchronisation and with unplaced local buffers:
`npu-insert-sync` and `npu-plan-local-memory` finish them.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType, UnitAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from ...core import memo
from ...core.diagnostics import op_error
from ...core.passes import record_statistic
from ...core.progress import progress
from ...dialects import fused, ge, npu
from ...dialects.ge.formats import Format, format_of, physical_shape, with_format
from ...simulator.hardware import load_preset
from ...core.signature import NAME_ATTR, input_specs, main_function, output_specs
from ...transforms.npu.prefetch_constants import hbm_room, port_room
from .context import GmTensor, KernelContext, print_notes
from .templates import template_for
from .kernel_builder import KernelBuilder
from .kernel_cache import KernelCache, kernel_key
from .prefetch_room import tiling_port_room, tiling_room
from .launches import ALIASING_OPS as _ALIASING_OPS, is_view, moves_nothing as _moves_nothing
from ..plan.launches import SHARED_PHASE_ATTR
from .share_cores import tiling_cores
from .split_k import FORM, SplitKPass
from .split_norm import SplitMatmulNormPass

FORM_PASSES = (SplitMatmulNormPass, SplitKPass)
"""The passes that choose an op's form, honouring an `npu.form` that pins it."""

def _through_reshapes(value: SSAValue) -> SSAValue:
    """The value `value` is an ND reshape (or identity, or a conversion that moves
    nothing) of, through any chain of them."""
    while (
        isinstance(value.owner, (ge.ReshapeOp, *_ALIASING_OPS))
        and all(_is_nd(v.type) for v in (value.owner.operands[0], value))
    ) or _moves_nothing(value.owner):
        value = value.owner.operands[0]
    return value


def _physical(t: TensorType) -> tuple[int, ...]:
    return physical_shape(t.get_shape(), format_of(t), t.element_type)


def gm_memref(t: TensorType):
    """The GM memref holding a tensor's physical image."""
    return npu.memref(_physical(t), t.element_type, "gm")


@dataclass(frozen=True)
class ToNpuPass(ModulePass):
    """Lower the graph to kernels and a host plan (one kernel per op; see lowering/fused_to_npu).
    `merge`: the launches will be merged (npu-merge-launches, then npu-prefetch-constants,
    which loads a phase's first chunk of weights during the phase before it); each
    kernel after the first chooses its tiling knowing that."""

    name = "ge-to-npu"

    hw: str = "ascend910"
    debug: bool = False
    merge: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        main = main_function(op)
        builder = _HostPlanBuilder(op, main, load_preset(self.hw), self.debug, self.merge)
        builder.lower_all()
        record_statistic(self.name, "kernels", builder.kernel_count)
        record_statistic(self.name, "kernels reused", builder.cache.hits)


def tiling_choices(module: ModuleOp, hw, merge: bool = False) -> list[tuple[int, int]]:
    """(position in `@main`'s body, count) of every op whose kernel chooses its
    tiling among several (`npu.tiling_rank` picks one): found by lowering a copy."""
    copy = module.clone()
    main = main_function(copy)
    positions = {op: i for i, op in enumerate(main.body.block.ops)}
    builder = _HostPlanBuilder(copy, main, hw, False, merge)
    builder.lower_all()
    return [(positions[op], count) for op, count in builder.tiling_choices]


class _HostPlanBuilder:
    def __init__(self, module: ModuleOp, main: func.FuncOp, hw, debug: bool, merge: bool = False):
        self.module = module
        self.main = main
        self.hw = hw
        self.debug = debug
        self.merge = merge
        self.kernel_count = 0
        self.room = 0.0  # the HBM room the kernel launched last leaves (`Prefetched`)
        self.port_room = 0.0  # and the MTE2 room per core (`Prefetched.port`)
        self.tilings: dict = {}  # a cached kernel's `KernelContext.tiling`
        self.cache = KernelCache()
        self.tiling_choices: list[tuple[Operation, int]] = []  # (graph op, tilings its kernel chose among)
        self.buffers: dict[SSAValue, SSAValue] = {}  # graph value -> host GM memref
        self.inputs = input_specs(main)
        self.outputs = output_specs(main)
        # Results leave in ND (`copy_to_output` converts a formatted one).
        arg_types = [gm_memref(s.type) for s in self.inputs] + [gm_memref(_nd(s.type)) for s in self.outputs]
        self.block = Block(arg_types=arg_types)
        for arg, spec in zip(self.block.args, [*self.inputs, *self.outputs]):
            arg.name_hint = _hint(spec.name)
        for graph_arg, host_arg in zip(main.body.block.args, self.block.args):
            self.buffers[graph_arg] = host_arg
        self.output_args = list(self.block.args[len(self.inputs) :])
        self.returned = main.body.block.last_op
        self.destinations = self._direct_destinations()

    # ---- driving ----------------------------------------------------------------------

    def lower_all(self) -> None:
        for op in progress(list(self.main.body.block.ops), "ge-to-npu"):
            if op is self.returned:
                self._write_outputs()
            else:
                self._lower(op)
        self.block.add_op(func.ReturnOp())
        host = func.FuncOp(
            "main",
            ([a.type for a in self.block.args], []),
            Region(self.block),
            arg_attrs=ArrayAttr(
                [_arg_attrs(s.name, False) for s in self.inputs] + [_arg_attrs(s.name, True) for s in self.outputs]
            ),
        )
        host.location = self.main.location
        self.module.body.block.insert_op_after(host, self.main)
        self.main.detach()
        self.main.erase()

    def _direct_destinations(self) -> dict[SSAValue, SSAValue]:
        """Returned values whose producing op can write the output argument itself:
        computed by an op (not an argument or constant), returned once, in ND. A
        value returned through ND reshapes (a model's last norm, reshaped to the
        batch's shape) is written by its producer into a view of the output
        argument, instead of into a buffer of its own copied out by one more kernel
        (`self.routed` holds the returned values so served)."""
        destinations: dict[SSAValue, SSAValue] = {}
        self.routed: set[SSAValue] = set()
        returned = list(self.returned.operands)
        for value, out in zip(returned, self.output_args):
            if returned.count(value) != 1 or format_of(value.type) != Format.ND:
                continue
            source = _through_reshapes(value)
            owner = source.owner
            if not isinstance(owner, Operation) or isinstance(owner, ge.ConstOp) or source in returned and source is not value:
                continue
            if source is value:
                destinations[value] = out
            elif source not in destinations:
                destinations[source] = self._host(npu.GmViewOp.of(out, _physical(source.type))).result
                self.routed.add(value)
        return destinations

    # ---- one op -------------------------------------------------------------------------

    def _lower(self, op: Operation) -> None:
        if isinstance(op, ge.ConstOp):
            const = self._host(npu.GmConstantOp.of(op.value, op.result.type))
            self._bind(op.result, const.result)
        elif isinstance(op, _ALIASING_OPS):
            self.buffers[op.results[0]] = self.buffers[op.operands[0]]
        elif is_view(op):
            view = self._host(npu.GmViewOp.of(self.buffers[op.operands[0]], _physical(op.results[0].type)))
            self._bind(op.results[0], view.result)
        else:
            self._launch_kernel(op)

    def _launch_kernel(self, op: Operation) -> None:
        check_form_applied(op)
        template = template_for(op)
        if template is None:
            raise op_error(op, "has no NPU kernel")
        if any(_is_empty(v.type) for v in (*op.operands, *op.results)):
            raise op_error(op, "has a tensor with no elements: fold it first (ge-constant-fold, part of ge-graph-opt, folds them)")
        unread = set(op.unread_droppable_results()) if isinstance(op, fused.FusedOp) else set()
        written = [r for r in op.results if r not in unread]
        for result in written:
            if result in self.destinations:
                self.buffers[result] = self.destinations[result]
            else:
                buffer = self._host(npu.GmBufferOp.new(result_type=gm_memref(result.type)))
                self._bind(result, buffer.result)
        self._launch(
            self._kernel_name(op),
            lambda k: template(op, k),
            op,
            [(self.buffers[v], v.type, v) for v in op.operands],
            [(self.buffers[r], r.type, r) for r in written],
            cache_as=lambda hw, param_types, after_a_barrier: kernel_key(
                op, hw, param_types, [r not in unread for r in op.results], after_a_barrier
            ),
        )

    def _write_outputs(self) -> None:
        """Results not written in place by their producer get a copy kernel (which
        also converts a formatted tensor back to ND)."""
        from .templates.data_movement import copy_to_output

        for value, out, spec in zip(self.returned.operands, self.output_args, self.outputs):
            if self.destinations.get(value) is out or value in self.routed or _is_empty(value.type):
                continue
            self._launch(
                f"k{self.kernel_count}_output_{_hint(spec.name)}",
                copy_to_output,
                self.returned,
                [(self.buffers[value], value.type, value)],
                [(out, _nd(spec.type), value)],
            )

    def _launch(self, name: str, write, where: Operation, ins: list, outs: list, cache_as=None) -> None:
        """Build a kernel over (buffer, logical type, graph value) inputs and outputs
        with `write(k)`, and launch it. `cache_as(preset, param types, after a barrier)`: the
        kernel's `kernel_key` (a kernel built before under the same key is reused)."""
        args = [buffer for buffer, _, _ in ins + outs]
        param_types = [a.type for a in args]
        after_a_barrier = self.merge and self.kernel_count > 0
        room = (round(self.room), round(self.port_room)) if after_a_barrier else (0, 0)
        hw = tiling_cores(where, self.hw)  # fused-share-cores: fewer cores, side by side
        key = cache_as(hw, param_types, (after_a_barrier, room)) if cache_as is not None and memo.enabled() else None
        cached = self.cache.get(key) if key is not None else None
        if cached is not None:
            kernel, block_dim, notes, choices = cached.instance(name), cached.block_dim, cached.notes, cached.tiling_choices
            tiling = self.tilings[key]
        else:
            k = KernelContext(where, KernelBuilder(name, param_types), [], [], hw)
            k.after_a_barrier = after_a_barrier
            k.prefetch_room, k.prefetch_port_room = room
            tensors = [GmTensor(p, t, v) for p, (_, t, v) in zip(k.b.params, ins + outs)]
            k.inputs, k.outputs = tensors[: len(ins)], tensors[len(ins) :]
            write(k)
            kernel, block_dim, notes, choices = k.b.finish(k.block_dim), k.block_dim, k.notes, k.tiling_choices
            tiling = k.tiling
            if key is not None:
                self.cache.put(key, kernel, block_dim, notes, choices)
                self.tilings[key] = tiling
        if choices > 1:
            self.tiling_choices.append((where, choices))
        kernel.location = where.location
        kernel.attributes[npu.SOURCES_ATTR] = ArrayAttr([StringAttr(kernel_source(where))])
        self.module.body.block.insert_op_before(kernel, self.main)
        launch = self._host(npu.LaunchOp.calling(name, args, block_dim))
        if SHARED_PHASE_ATTR in where.attributes:
            launch.attributes[SHARED_PHASE_ATTR] = where.attributes[SHARED_PHASE_ATTR]
        launch.record_writes({len(ins) + j: v.name_hint for j, (_, _, v) in enumerate(outs) if v.name_hint})
        if self.debug:
            print_notes(name, notes)
        self.kernel_count += 1
        # What the next kernel, a later phase once merged, finds of the HBM left idle
        # at its barrier for its prefetched first B chunk (`tiling.Prefetched`): from
        # a cube kernel's tiling, as the form choices see it, else from the kernel's
        # instructions.
        if tiling is not None:
            self.room = tiling_room(tiling, self.hw)
            self.port_room = tiling_port_room(tiling, self.hw)
        else:
            self.room = hbm_room(kernel.entry.ops, self.hw, block_dim)
            # npu-prefetch-constants spreads a chunk over the barriers before
            # (`hoist_prefetches`): back across kernels with no cube tiling (no L1
            # buffers in the way), to the cube kernel before them.
            self.port_room += port_room(kernel.entry.ops, self.hw)

    # ---- helpers -------------------------------------------------------------------------

    def _host(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def _bind(self, value: SSAValue, buffer: SSAValue) -> None:
        if value.name_hint:
            buffer.name_hint = value.name_hint
        self.buffers[value] = buffer

    def _kernel_name(self, op: Operation) -> str:
        hint = op.results[0].name_hint if op.results and op.results[0].name_hint else op.name.split(".")[-1]
        return f"k{self.kernel_count}_{_hint(hint)}"


def kernel_source(op: Operation) -> str:
    """What a kernel computes, for profiles: the op's name, a group's ops in order
    (`fused.group<matmul,mul,sigmoid,mul>`, constants and format changes left out),
    `copy` for the copies into the outputs."""
    if isinstance(op, fused.GroupOp):
        body = [o.name.split(".", 1)[-1] for o in op.body_ops() if not isinstance(o, ge.ConstOp | ge.TransDataOp)]
        return f"fused.group<{','.join(body)}>"
    return op.name if not isinstance(op, func.ReturnOp) else "copy"


def check_form_applied(op: Operation) -> None:
    """An `npu.form` left on an op at this point was never honoured (no pass chooses
    the op's form, or the pass that does has not run): a located error rather than
    a kernel of another form than the one pinned."""
    attr = op.attributes.get(FORM)
    if attr is None:
        return
    # split_k_conv and depthwise_mean build scratch kernels (kernel_exists), which import this module.
    from .depthwise_mean import DepthwiseMeanPass
    from .split_k_conv import SplitKConvPass

    choosers = (*FORM_PASSES, SplitKConvPass, DepthwiseMeanPass)
    chooser = next((p for p in choosers if isinstance(op, p.target_ops)), None)
    if chooser is None:
        targets = "; ".join(f"{p.name}: {', '.join(t.name for t in p.target_ops)}" for p in choosers)
        raise op_error(op, f"'{FORM}' = {attr} pins a form, but no pass chooses the form of '{op.name}' ({targets})")
    if not isinstance(attr, StringAttr) or attr.data != chooser.whole:
        raise op_error(op, f"'{FORM}' = {attr} was not applied: run {chooser.name} before ge-to-npu (ge-lower-to-npu does)")


def _hint(name: str | None) -> str:
    if not name:
        return ""
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return cleaned if cleaned[:1].isalpha() or cleaned[:1] == "_" else f"v{cleaned}"


def _nd(t: TensorType) -> TensorType:
    return with_format(t, Format.ND)


def _is_empty(t) -> bool:
    return isinstance(t, TensorType) and 0 in t.get_shape()


def _is_nd(t) -> bool:
    return format_of(t) == Format.ND


def _arg_attrs(name: str, is_output: bool) -> DictionaryAttr:
    attrs = {NAME_ATTR: StringAttr(name)}
    if is_output:
        attrs[npu.OUTPUT_ATTR] = UnitAttr()
    return DictionaryAttr(attrs)


