"""The compile's overheads at model scale: the cycle collector paused while passes
run (core/collector.py) and symbol lookup without a scan per call (core/symbols.py)."""

from __future__ import annotations

import gc
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass
from xdsl.traits import SymbolTable

from gecomp.core.collector import cyclic_gc_paused
from gecomp.core.passes import PipelinePass, run_pipeline
from gecomp.core.symbols import lookup_symbol


@dataclass(frozen=True)
class _SeesCollector(ModulePass):
    name = "test-sees-collector"
    seen: list

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        self.seen.append(gc.isenabled())


@dataclass(frozen=True)
class _Pipeline(PipelinePass):
    name = "test-pipeline"
    seen: list

    def stages(self):
        return [_SeesCollector(self.seen)]


def test_passes_run_with_the_collector_paused_and_it_is_on_again_after():
    assert gc.isenabled()
    seen: list = []
    run_pipeline([_SeesCollector(seen), _SeesCollector(seen)], Context(), ModuleOp([]))
    _Pipeline(seen).apply(Context(), ModuleOp([]))  # a pipeline run by another driver
    assert seen == [False, False, False]
    assert gc.isenabled()


def test_a_pause_nests_and_keeps_a_collector_that_was_off_off():
    with cyclic_gc_paused():
        with cyclic_gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def _function(name: str) -> FuncOp:
    return FuncOp(name, ([], []))


def test_lookup_finds_what_xdsl_finds_and_follows_erasures_and_renames():
    fs = [_function(f"f{i}") for i in range(5)]
    module = ModuleOp(fs)
    anchor = fs[4]
    for i in range(5):
        assert lookup_symbol(anchor, f"f{i}") is SymbolTable.lookup_symbol(anchor, f"f{i}") is fs[i]
    assert lookup_symbol(anchor, "absent") is None
    # An op erased since the table was built is not returned stale.
    fs[2].detach()
    fs[2].erase()
    assert lookup_symbol(anchor, "f2") is None
    # Nor is one renamed: the new name finds it, the old one nothing.
    fs[3].properties["sym_name"] = fs[3].properties["sym_name"].__class__("g3")
    assert lookup_symbol(anchor, "f3") is None
    assert lookup_symbol(anchor, "g3") is fs[3]
    # An op added later is found.
    late = _function("late")
    module.body.block.add_op(late)
    assert lookup_symbol(anchor, SymbolRefAttr("late")) is late
