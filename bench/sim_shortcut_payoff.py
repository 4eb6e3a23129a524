"""How much the two simulator shortcuts of issue 35 could save, measured on the
model set before either is built: which to build first.

    python bench/sim_shortcut_payoff.py --mlir compiled.npu.mlir ...   # npu-level modules (random inputs)
    python bench/sim_shortcut_payoff.py --models zoo.resnet50          # compiles the models named first
    python bench/sim_shortcut_payoff.py --mlir a.mlir --no-split       # without the cost split (one run)

The two shortcuts (issue 35): blocks that run the same instructions with the same
timing share it (one block simulated, the others' numerics vectorised), and a
loop whose iteration timing repeats exactly is advanced in closed form. Each is
worth at most the instructions it would not simulate one by one. One ordinary
simulation (`simulate`, default shortcuts, `ascend910`), observed through
hooks, gives per model, as shares of the instructions executed:

* "alike": instructions of blocks that another block of the same launch matches
  over a whole phase (between two `npu.sync_all`, or the whole block without
  one): same instruction count, same cycles from the phase's start to its
  drain, same busy cycles on every pipe. Per phase, one block of each group of
  such blocks would still be simulated; the column counts the others'. This is
  the timing the full simulation gave them, after the HBM / L2 arbitration
  between the blocks (`lockstep.py`): a necessary condition for sharing, not a
  proof that it may be shared.
* "order-free": the part of "alike" whose groups' GM transfers would each get
  their unloaded time whatever the order of the bookings (`order_free`: even
  with every other byte booked in its windows, HBM and L2 alike, put before it
  on the HBM). There the arbitration provably cannot tell the blocks apart, so
  their timing may be shared without simulating the order of their bookings
  (the L2's hit / miss split per block still depends on it).
* "differ": instructions of blocks whose phase has the instruction count of
  another block's but different timing (the arbitration or the data placement
  made them differ): what sharing cannot take.
* "in loops": instructions executed inside an `scf.for`; "same state": those of
  iterations whose timing state relative to the scalar unit (`state`) at their
  start and end, instruction count and busy cycles repeat the previous
  iteration's; "steady": those whose every time (scalar unit, each pipe's free
  and landed) moves by the same amounts as in the previous iteration, with the
  same busy cycles: a steady state in which the pipes fall behind the scalar
  unit (which issues into unbounded queues, so it is never the same state
  relative to the scalar unit), what a closed-form advance could skip at most;
  "steady free": those of steady iterations whose GM transfers are all
  order-free (as above), where the closed form would not need the order of
  the HBM bookings. A nested loop's instructions are counted once.
* cost split (unless `--no-split`): CPU seconds of the default simulation, with
  the race checker off (`check_races=False`) and with every instruction's
  numerics replaced by nothing (the cycles do not move: timing never reads
  data); "race" and "numerics" are the shares they took, the rest is timing and
  dispatch. A shortcut that shares timing but still runs numerics and race
  checks per block is bounded by the rest.

The hooks wrap functions of `simulator/npu` in this process only (`_hooks`); the
simulation they observe gives the same cycles as without them (checked).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections import Counter, defaultdict

import numpy as np

from gecomp.core.parsing import load_module
from gecomp.core.signature import input_specs, main_function, random_inputs
from gecomp.dialects import npu
from gecomp.dialects.context import make_context
from gecomp.simulator.npu import core as core_module
from gecomp.simulator.npu import instructions, l2, scalar, simulate

HW = "ascend910"


class Observer:
    """What the hooks record while one simulation runs (see the module docstring)."""

    def __init__(self):
        self.blocks: list[list[tuple]] = []  # per block of the current launch: its phases
        self.phases: dict[int, list[tuple]] = {}  # id(core) -> (count, drained, busy, release) per phase
        self.bookings: dict[int, list[tuple]] = {}  # id(core) -> (start, cycles, bytes, end) of its phase's GM transfers
        self.groups: list[tuple[int, list[list[tuple]]]] = []  # (count, the bookings of each member) per group
        self.block_shared = 0
        self.order_free = 0
        self.same_count = 0
        self.memory = None  # the simulation's GlobalMemory
        self.loop_repeats = 0
        self.loop_pipe_repeats = 0
        self.loop_free_repeats = 0
        self.loops: list[Iteration] = []  # the iterations of the outermost loops
        self.nested: dict[int, list] = {}  # id(core) -> the iterations running on it, outermost first
        self.loop_instructions = 0
        self.starts: dict[int, int] = {}  # id(core) -> the cycle its block started
        self.iterations: dict[int, dict] = {}  # id(core) -> per loop body, the previous iteration's signature

    # ---- blocks ----------------------------------------------------------------------

    def phase_end(self, core, drained: int) -> None:
        """A phase of `core`'s block drained at `drained`; the next starts at its
        release (`core.s_time` once released)."""
        marks = self.phases.setdefault(id(core), [])
        marks.append((core.count, drained, tuple(core.busy), core.s_time, self.bookings.pop(id(core), [])))

    def booked(self, core, start: int, cycles: int, nbytes: int, end: int) -> None:
        self.bookings.setdefault(id(core), []).append((start, cycles, nbytes, end))

    def block_end(self, core) -> None:
        marks = self.phases.pop(id(core), [])
        marks.append((core.count, core.end, tuple(core.busy), core.end, self.bookings.pop(id(core), [])))
        self.iterations.pop(id(core), None)
        self.nested.pop(id(core), None)
        previous = (0, None, (0,) * len(core.busy), self.starts.pop(id(core)))
        phases = []
        for mark in marks:
            count, drained, busy, _, bookings = mark
            timing = (count - previous[0], drained - previous[3], tuple(b - a for a, b in zip(previous[2], busy)))
            phases.append((timing, bookings))
            previous = mark
        self.blocks.append(phases)

    def launch_end(self) -> None:
        """Group the launch's blocks phase by phase."""
        by_phase: dict[int, list[tuple]] = defaultdict(list)
        for phases in self.blocks:
            for k, phase in enumerate(phases):
                by_phase[k].append(phase)
        for members in by_phase.values():
            counts = Counter(timing[0] for timing, _ in members)
            timings = Counter(timing for timing, _ in members)
            for (count, _, _), n in timings.items():
                self.block_shared += count * (n - 1)
                if n > 1:
                    self.groups.append((count, [b for t, b in members if t[0] == count and timings[t] == n]))
            for count, n in counts.items():
                if n > 1:
                    alike = sum(t - 1 for (c, _, _), t in timings.items() if c == count)
                    self.same_count += count * (n - 1 - alike)
        self.blocks = []

    def run_end(self) -> None:
        """Once every booking is made: the groups whose every booking would get its
        unloaded time in any order of the bookings (`order_free`)."""
        totals = Counter(self.memory.hbm.booked)
        if self.memory.l2 is not None:
            totals.update(self.memory.l2.bandwidth.booked)
        hbm = self.memory.hbm
        for count, members in self.groups:
            if all(order_free(hbm, totals, booking) for bookings in members for booking in bookings):
                self.order_free += count * (len(members) - 1)
        self.groups = []

        def free(node: Iteration) -> bool:
            return node.bookings is not None and all(order_free(hbm, totals, b) for b in node.bookings)

        for node in self.loops:
            self.loop_instructions += node.done
            self.loop_repeats += node.credit(lambda n: n.same)
            self.loop_pipe_repeats += node.credit(lambda n: n.steady)
            self.loop_free_repeats += node.credit(lambda n: n.steady, free)
        self.loops = []

    # ---- loops -----------------------------------------------------------------------

    def iteration(self, core, body, run) -> None:
        """Run one iteration of the loop `body` on `core` and note it (an
        `Iteration` under the iteration running around it, if any)."""
        before, times = state(core), moments(core)
        count, busy = core.count, tuple(core.busy)
        bookings = self.bookings.setdefault(id(core), [])
        booked = len(bookings)
        node = Iteration()
        around = self.nested.setdefault(id(core), [])
        (around[-1].inner if around else self.loops).append(node)
        around.append(node)
        run(core)
        around.pop()
        node.done = core.count - count
        spent = tuple(b - a for a, b in zip(busy, core.busy))
        signature = (before, state(core), node.done, spent)
        drift = (tuple(b - a for a, b in zip(times, moments(core))), before[2], node.done, spent)
        previous = self.iterations.setdefault(id(core), {})
        last = previous.get(body)
        previous[body] = (signature, drift)
        node.same = last is not None and last[0] == signature
        node.steady = last is not None and last[1] == drift
        # its GM transfers (none known if a phase ended inside it: then not order-free)
        node.bookings = bookings[booked:] if self.bookings.get(id(core)) is bookings else None


class Iteration:
    """One loop iteration as `Observer.iteration` saw it: its instructions (with
    its nested loops'), whether it repeated the previous iteration's state
    (`same`) or increments (`steady`), its GM transfers, its nested iterations."""

    def __init__(self):
        self.done = 0
        self.same = self.steady = False
        self.bookings: list | None = []
        self.inner: list[Iteration] = []

    def credit(self, repeats, free=None) -> int:
        """Its instructions that a closed form could skip: all of them if
        `repeats(self)` (and `free(self)`, when given), else its nested iterations'.
        An instruction counts once."""
        if repeats(self) and (free is None or free(self)):
            return self.done
        return sum(inner.credit(repeats, free) for inner in self.inner)


def order_free(hbm, totals: Counter, booking: tuple) -> bool:
    """Whether the GM transfer `booking` = (start, cycles, bytes, end) gets its
    unloaded end whatever the order of the bookings: even if every other byte
    booked (HBM and L2, as the hit / miss split depends on the order) in its
    windows were on the HBM before it. A booking's end only grows with what was
    booked before it (`hbm.py`), so the worst case bounds every order.""" 
    start, cycles, nbytes, end = booking
    if nbytes <= 0 or cycles <= 0:
        return True
    if end != start + cycles:
        return False
    w, rate = hbm.window, nbytes / cycles
    t = start
    while t < start + cycles:
        index = t // w
        window_end = min((index + 1) * w, start + cycles)
        own = rate * (window_end - t)
        others = totals.get(index, 0.0) - own
        if others + own > hbm.capacity + 1e-6:
            return False
        if window_end == start + cycles and index * w + (others + own) / hbm.bytes_per_cycle > end + 1e-9:
            return False
        t = window_end
    return True


def moments(core) -> tuple:
    """The scalar unit's cycle and every pipe's free and landed times."""
    return (core.s_time, *core.pipe_free, *core.landed)


def state(core) -> tuple:
    """The core's timing state relative to its scalar unit's cycle: pipe free and
    landed times, which pipes wait for a flag (and how much work queues behind), and
    the fired, unconsumed flags. While no pipe waits, a time before the scalar
    unit's counts as the scalar unit's: whatever is issued from now on starts no
    earlier, so the two behave alike (an idle pipe's old times would otherwise
    make every iteration look new)."""
    s = core.s_time
    waiting = any(q is not None for q in core.pending)

    def rel(t: int) -> int:
        return t - s if waiting or t > s else 0

    return (
        tuple(map(rel, core.pipe_free)),
        tuple(map(rel, core.landed)),
        tuple(-1 if q is None else len(q) for q in core.pending),
        tuple(sorted((flag, tuple(rel(t) for t, _ in fired)) for flag, fired in core.flags.items() if fired)),
    )


@contextlib.contextmanager
def _hooks(observer: Observer):
    """Wrap the simulator's phase release, block end, and loop bodies (the
    `run_steps` closure an `scf.for` calls per iteration) for `observer`."""
    release, finish, run_steps, core_init = instructions.release, core_module.Core.finish, scalar.ScalarDecoder.run_steps, core_module.Core.__init__
    gm_transfer, memory_init = instructions.InstructionDecoder._gm_transfer, l2.GlobalMemory.__init__

    def observed_release(core, read, drained, poll, name):
        release(core, read, drained, poll, name)
        observer.phase_end(core, drained)

    def observed_finish(self, kernel_op):
        end = finish(self, kernel_op)
        observer.block_end(self)
        return end

    def observed_init(self, start, *args, **kwargs):
        core_init(self, start, *args, **kwargs)
        observer.starts[id(self)] = start

    def observed_gm_transfer(self, gm, hazard_spec, slot):
        run = gm_transfer(self, gm, hazard_spec, slot)
        cycles, nbytes = gm.data_cycles, gm.moved_bytes

        def booked(core, start, offset):
            end = run(core, start, offset)
            if isinstance(core, core_module.Core):
                observer.booked(core, start, cycles, nbytes, end)
            return end

        return booked

    def observed_memory(self, hw):
        memory_init(self, hw)
        observer.memory = self

    def observed_run_steps(steps):
        run = run_steps(steps)
        if sys._getframe(1).f_code.co_name != "_for":  # only loop bodies
            return run
        body = object()

        def iteration(core) -> None:
            if isinstance(core, core_module.Core):
                observer.iteration(core, body, run)
            else:
                run(core)

        return iteration

    instructions.release = observed_release
    core_module.Core.finish = observed_finish
    core_module.Core.__init__ = observed_init
    scalar.ScalarDecoder.run_steps = staticmethod(observed_run_steps)
    instructions.InstructionDecoder._gm_transfer = observed_gm_transfer
    l2.GlobalMemory.__init__ = observed_memory
    try:
        yield
    finally:
        instructions.InstructionDecoder._gm_transfer = gm_transfer
        l2.GlobalMemory.__init__ = memory_init
        instructions.release = release
        core_module.Core.finish = finish
        core_module.Core.__init__ = core_init
        scalar.ScalarDecoder.run_steps = staticmethod(run_steps)


@contextlib.contextmanager
def _no_numerics():
    """Every compute and transfer instruction decoded from now on runs no numerics."""
    fixed = instructions.InstructionDecoder.fixed

    def without(self, op):
        found = fixed(self, op)
        if found.cost is None and isinstance(op, (npu.TransferOp, npu.MmadOp, npu.VectorOp)):
            found.cost, found.kernel = self._cost(op, found.a), lambda *views: None
        return found

    instructions.InstructionDecoder.fixed = without
    try:
        yield
    finally:
        instructions.InstructionDecoder.fixed = fixed


def _cpu(module, inputs, **options):
    start = time.process_time()
    result = simulate(module, inputs, hw=HW, **options)
    return result, time.process_time() - start


def measure(label: str, module, inputs, split: bool) -> str:
    observer = Observer()
    with _hooks(observer):
        observed = simulate(module, inputs, hw=HW, after_launch=lambda launch: observer.launch_end())
    observer.run_end()
    plain, cpu = _cpu(module, inputs)
    assert plain.report.total_cycles == observed.report.total_cycles, "the hooks moved the cycles"
    n = plain.report.instructions
    cells = [
        f"{label:<34}{n:>11}{cpu:>8.2f}",
        f"{100 * observer.block_shared / n:>8.1f}{100 * observer.order_free / n:>12.1f}{100 * observer.same_count / n:>9.1f}",
        f"{100 * observer.loop_instructions / n:>10.1f}{100 * observer.loop_repeats / n:>12.1f}"
        f"{100 * observer.loop_pipe_repeats / n:>8.1f}{100 * observer.loop_free_repeats / n:>13.1f}",
    ]
    if split:
        _, no_race = _cpu(module, inputs, check_races=False)
        with _no_numerics():
            bare, no_numerics = _cpu(module, inputs)
        assert bare.report.total_cycles == plain.report.total_cycles
        cells.append(f"{100 * (cpu - no_race) / cpu:>7.0f}{100 * (cpu - no_numerics) / cpu:>10.0f}")
    return "".join(cells)


HEADER = (
    f"{'model':<34}{'instr':>11}{'cpu s':>8}{'alike%':>8}{'order-free%':>12}{'differ%':>9}{'in loops%':>10}"
    f"{'same state%':>12}{'steady%':>8}{'steady free%':>13}{'race%':>7}{'numerics%':>10}"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mlir", nargs="+", metavar="FILE", default=[], help="npu-level modules (random inputs, seed 0)")
    parser.add_argument("--models", nargs="+", metavar="NAME", default=[], help="models of the set, compiled first")
    parser.add_argument("--no-split", action="store_true", help="skip the cost split (two more simulations)")
    args = parser.parse_args()
    print(HEADER)
    print("-" * len(HEADER))
    for path in args.mlir:
        module = load_module(make_context(), path)
        inputs = random_inputs(input_specs(main_function(module)), seed=0)
        print(measure(path.rsplit("/", 1)[-1], module, inputs, not args.no_split), flush=True)
    if args.models:
        from gecomp.bench import models
        from gecomp.bench.models import run

        for name in args.models:
            module = run.import_proto(models.load(name))
            run.compile_module(module, HW)
            inputs = [np.asarray(x) for x in models.inputs(name)]
            print(measure(name, module, inputs, not args.no_split), flush=True)


if __name__ == "__main__":
    main()
