"""The xDSL context every tool and test uses: builtin, func, arith, scf, memref and
our dialects, loaded lazily so a tool only imports what its input needs."""

from __future__ import annotations

from xdsl.context import Context


def _ge():
    from .ge import GE

    return GE


def _fused():
    from .fused import FUSED

    return FUSED


def _npu():
    from .npu import NPU

    return NPU


def _func():
    from xdsl.dialects.func import Func

    return Func


def _arith():
    from xdsl.dialects.arith import Arith

    return Arith


def _scf():
    from xdsl.dialects.scf import Scf

    return Scf


def _memref():
    from xdsl.dialects.memref import MemRef

    return MemRef


DIALECT_FACTORIES = {
    "func": _func,
    "arith": _arith,
    "scf": _scf,
    "memref": _memref,
    "ge": _ge,
    "fused": _fused,
    "npu": _npu,
}


def register_dialects(ctx: Context) -> None:
    for name, factory in DIALECT_FACTORIES.items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)


def make_context() -> Context:
    from xdsl.dialects.builtin import Builtin

    ctx = Context()
    ctx.load_dialect(Builtin)
    register_dialects(ctx)
    return ctx
