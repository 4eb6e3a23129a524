"""The race checker's segments (`simulator/npu/segments.py`): the blocks of a launch
put their accesses off to the end of each segment (between barriers of every
pipe), and a segment matching one already checked is not checked again. The
errors are those of checking every access when it is made (`shortcuts=False`,
`ge-sim --exact`), and so are cycles, reports and outputs."""

from __future__ import annotations

import pytest

from gecomp.core.diagnostics import CompileError
from gecomp.simulator.npu import segments
from npu_testing import gm, kernel_module, local, run

BLOCKS = 4
N = 1024
MTE2_TO_V = '  npu.set_flag {src = "MTE2", dst = "V", event = 0}\n  npu.wait_flag {src = "MTE2", dst = "V", event = 0}'
V_TO_MTE3 = '  npu.set_flag {src = "V", dst = "MTE3", event = 0}\n  npu.wait_flag {src = "V", dst = "MTE3", event = 0}'
HEAD = f"""  %n = arith.constant {N} : index
  %c3 = arith.constant {BLOCKS - 1} : index
  %b = npu.block_idx : index
  %o = arith.muli %b, %n : index
  %last = arith.cmpi eq, %b, %c3 : index
  %u = npu.alloc {{offset = 0}} : {local(N, 'ub')}
  %v = npu.alloc {{offset = 4096}} : {local(N, 'ub')}"""


def kernel(*lines: str, launch: str = "", outputs=None) -> str:
    return kernel_module(
        "\n".join((HEAD, *lines)), {"x": gm(N * BLOCKS)}, outputs or {"y": gm(N * BLOCKS)}, block_dim=BLOCKS,
        launch=launch,
    )


def counted(monkeypatch) -> list:
    """The VerifiedSegments made while the test runs."""
    made = []
    init = segments.VerifiedSegments.__init__

    def record(self):
        init(self)
        made.append(self)

    monkeypatch.setattr(segments.VerifiedSegments, "__init__", record)
    return made


def outcome(text: str, shortcuts: bool):
    try:
        result = run(text, shortcuts=shortcuts)
    except CompileError as e:
        return e.format()
    return result.report.json_text(), [o.tobytes() for o in result.outputs]


CLEAN = kernel(
    "  npu.copy %x[%o], %u[%c0] {cols = 1024}",
    MTE2_TO_V,
    "  npu.vexp %u[%c0], %u[%c0] {cols = 1024}",
    V_TO_MTE3,
    "  npu.copy %u[%c0], %y[%o] {cols = 1024}",
)


def test_blocks_doing_the_same_at_other_gm_offsets_are_checked_once(monkeypatch):
    made = counted(monkeypatch)
    fast = outcome(CLEAN, True)
    assert fast == outcome(CLEAN, False)
    assert isinstance(fast, tuple)
    (verified,) = [v for v in made if v.checked]
    assert verified.checked == 1 and verified.matched == BLOCKS - 1


def test_a_race_in_one_block_only_is_found_with_the_same_error():
    """Block 3 skips the wait: its segment differs from the others' and is checked.
    Its flags are unbalanced too, an error found at the block's end before the
    segment is checked: the race, made earlier, is still the error reported."""
    text = kernel(
        "  npu.copy %x[%o], %u[%c0] {cols = 1024}",
        '  npu.set_flag {src = "MTE2", dst = "V", event = 0}',
        "  scf.if %last {\n  } else {",
        '    npu.wait_flag {src = "MTE2", dst = "V", event = 0}',
        "  }",
        "  npu.vexp %u[%c0], %u[%c0] {cols = 1024}",
        V_TO_MTE3,
        "  npu.copy %u[%c0], %y[%o] {cols = 1024}",
    )
    fast = outcome(text, True)
    assert isinstance(fast, str) and "race: 'npu.vexp' on pipe V reads ub" in fast
    assert fast == outcome(text, False)


@pytest.mark.parametrize("racing", [True, False])
def test_gm_buffers_sharing_bytes_are_compared_by_place(racing):
    """y is passed twice (as y and z). Each block stores to y at its offset and then
    reads z, unordered, at the next block's offset; the last block reads its own
    (racing) or the first block's. Counted from each slot's first access, every
    block's segment reads alike, but only the racing last block's read meets its
    store: a segment's description lists the accesses to slots sharing bytes that
    meet (with their distance), so that block's segment is checked and the race
    is found."""
    text = kernel(
        "  %o1 = arith.addi %o, %n : index",
        f"  %o2 = arith.select %last, {'%o' if racing else '%c0'}, %o1 : index",
        "  npu.copy %x[%o], %u[%c0] {cols = 1024}",
        MTE2_TO_V,
        "  npu.vexp %u[%c0], %u[%c0] {cols = 1024}",
        V_TO_MTE3,
        "  npu.copy %u[%c0], %y[%o] {cols = 1024}",
        "  npu.copy %z[%o2], %v[%c0] {cols = 1024}",
        launch="npu.launch @k(%x, %y, %y)",
        outputs={"y": gm(N * BLOCKS), "z": gm(N * BLOCKS)},
    )
    fast = outcome(text, True)
    assert fast == outcome(text, False)
    assert isinstance(fast, str) == racing
    if racing:
        assert "race: 'npu.copy' on pipe MTE2 reads gm" in fast


def test_blocks_meeting_alike_in_slots_sharing_bytes_are_checked_once(monkeypatch):
    """y is passed three times (as y, z and w, twice as long as the blocks' share):
    each block reads z at its own offset and writes y there (ordered by flags: they
    meet), and first reads w at one place all blocks share, beyond what anyone
    writes. Counted from the first access of their group, the blocks' accesses lie
    at distances that move with the block (each block's segment was checked); they
    meet alike, so one check serves all (test_gm_buffers_sharing_bytes_are_compared_
    by_place: a meeting that differs is still checked)."""
    text = kernel(
        f"  %far = arith.constant {N * BLOCKS} : index",
        "  npu.copy %w[%far], %v[%c0] {cols = 1024}",
        "  npu.copy %z[%o], %u[%c0] {cols = 1024}",
        MTE2_TO_V,
        "  npu.vexp %u[%c0], %u[%c0] {cols = 1024}",
        V_TO_MTE3,
        "  npu.copy %u[%c0], %y[%o] {cols = 1024}",
        launch="npu.launch @k(%x, %y, %y, %y)",
        outputs={"y": gm(2 * N * BLOCKS), "z": gm(2 * N * BLOCKS), "w": gm(2 * N * BLOCKS)},
    )
    made = counted(monkeypatch)
    fast = outcome(text, True)
    assert isinstance(fast, tuple) and fast == outcome(text, False)
    (verified,) = [v for v in made if v.checked]
    assert verified.checked == 1 and verified.matched == BLOCKS - 1
