"""Collective ops: reference semantics over a device dimension against numpy, and
the multi-device interpreter (matching, point to point, deadlock, mismatch)."""

from __future__ import annotations

import numpy as np
import pytest

from gecomp.dialects.context import make_context
from gecomp.core.diagnostics import CompileError
from gecomp.core.parsing import parse_module
from gecomp.dialects.ge import (
    AllGatherOp,
    AllReduceOp,
    AllToAllOp,
    BroadcastOp,
    RecvOp,
    ReduceScatterOp,
    SendOp,
)
from gecomp.simulator.devices import run_devices
from gecomp.simulator.reference import run_reference


def ns(**values):
    from types import SimpleNamespace

    return SimpleNamespace(**values)


def per_device(n, shape=(4, 6), seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]


@pytest.mark.parametrize("n", [1, 2, 4])
def test_all_reduce_sum_and_max(n):
    xs = per_device(n)
    for out in AllReduceOp.exchange(xs, ns(devices=n, group=(), reduction="sum")):
        np.testing.assert_allclose(out, np.sum(xs, axis=0), rtol=1e-6)
    for out in AllReduceOp.exchange(xs, ns(devices=n, group=(), reduction="max")):
        np.testing.assert_array_equal(out, np.max(xs, axis=0))


def test_all_gather_concatenates_in_rank_order():
    xs = per_device(3)
    for out in AllGatherOp.exchange(xs, ns(devices=3, group=(), axis=1)):
        np.testing.assert_array_equal(out, np.concatenate(xs, axis=1))


def test_reduce_scatter_gives_rank_r_part_r():
    xs = per_device(2, shape=(4, 6))
    outs = ReduceScatterOp.exchange(xs, ns(devices=2, group=(), axis=0, reduction="sum"))
    np.testing.assert_allclose(outs[0], (xs[0] + xs[1])[:2], rtol=1e-6)
    np.testing.assert_allclose(outs[1], (xs[0] + xs[1])[2:], rtol=1e-6)


def test_all_to_all_is_a_transpose_of_parts():
    xs = per_device(3, shape=(6, 2))
    outs = AllToAllOp.exchange(xs, ns(devices=3, group=(), split_axis=0, concat_axis=1))
    for dst in range(3):
        np.testing.assert_array_equal(outs[dst], np.concatenate([x[2 * dst : 2 * dst + 2] for x in xs], axis=1))


def test_broadcast_takes_the_root():
    xs = per_device(4)
    for out in BroadcastOp.exchange(xs, ns(devices=4, group=(), root=2)):
        np.testing.assert_array_equal(out, xs[2])


def parse(text):
    return parse_module(make_context(), text, "<test>")


def two_device_module(body0: str, body1: str, t: str = "tensor<4x6xf32>") -> str:
    return f"""builtin.module attributes {{ge.devices = 2 : i64}} {{
  func.func @device0(%x: {t}) -> {t} attributes {{ge.device = 0 : i64}} {{
{body0}
  }}
  func.func @device1(%x: {t}) -> {t} attributes {{ge.device = 1 : i64}} {{
{body1}
  }}
}}"""


def test_interpreter_exchanges_and_sends():
    t = "tensor<4x6xf32>"
    module = parse(two_device_module(
        f"""    %y = ge.all_reduce %x {{devices = 2}} : ({t}) -> {t}
    ge.send %y {{peer = 1, tag = 3}} : ({t}) -> ()
    func.return %y : {t}""",
        f"""    %n = ge.neg %x : ({t}) -> {t}
    %d = ge.add %n, %n : ({t}, {t}) -> {t}
    %y = ge.all_reduce %d {{devices = 2, reduction = "max"}} : ({t}) -> {t}
    %r = ge.recv {{peer = 0, tag = 3}} : () -> {t}
    %s = ge.add %r, %y : ({t}, {t}) -> {t}
    func.return %s : {t}""",
    ).replace('{devices = 2}', '{devices = 2, reduction = "max"}', 1))
    (x,) = per_device(1)
    (out0,), (out1,) = run_devices(module, [x])
    expected = np.maximum(x, -2 * x)
    np.testing.assert_array_equal(out0, expected)
    np.testing.assert_array_equal(out1, 2 * expected)


def test_interpreter_reports_mismatched_collectives():
    t = "tensor<4x6xf32>"
    module = parse(two_device_module(
        f"    %y = ge.all_reduce %x {{devices = 2}} : ({t}) -> {t}\n    func.return %y : {t}",
        f"    %y = ge.broadcast %x {{devices = 2}} : ({t}) -> {t}\n    func.return %y : {t}",
    ))
    with pytest.raises(CompileError, match="device 1 runs ge.broadcast while device 0 runs ge.all_reduce"):
        run_devices(module, per_device(1))


def test_interpreter_reports_a_deadlock():
    t = "tensor<4x6xf32>"
    body = "    %r = ge.recv {{peer = {p}}} : () -> {t}\n    func.return %r : {t}"
    module = parse(two_device_module(body.format(p=1, t=t), body.format(p=0, t=t)))
    with pytest.raises(CompileError, match="deadlock: device 0 waits in ge.recv .*device 1 waits in ge.recv"):
        run_devices(module, per_device(1))


def test_single_device_run_refuses_a_partitioned_module_and_a_real_collective():
    t = "tensor<4x6xf32>"
    module = parse(two_device_module(f"    func.return %x : {t}", f"    func.return %x : {t}"))
    with pytest.raises(CompileError, match="partitioned for 2 devices"):
        run_reference(module, per_device(1))
    single = parse(f"""func.func @main(%x: {t}) -> {t} {{
  %y = ge.all_reduce %x {{devices = 2}} : ({t}) -> {t}
  func.return %y : {t}
}}""")
    with pytest.raises(CompileError, match="exchanges values between 2 devices"):
        run_reference(single, per_device(1))
    one = parse(f"""func.func @main(%x: {t}) -> tensor<4x6xf32> {{
  %y = ge.all_gather %x {{devices = 1, axis = 1}} : ({t}) -> {t}
  func.return %y : {t}
}}""")
    (x,) = per_device(1)
    np.testing.assert_array_equal(run_reference(one, [x])[0], x)


def test_point_to_point_ops_need_a_peer():
    assert SendOp.name == "ge.send" and RecvOp.name == "ge.recv"
    with pytest.raises(Exception, match="peer must be a device id"):
        RecvOp.infer([], ns(peer=-1, tag=0), None)
    with pytest.raises(Exception, match="ge.recv needs its result type"):
        RecvOp.infer([], ns(peer=0, tag=0), None)
