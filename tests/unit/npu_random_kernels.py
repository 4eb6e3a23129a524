"""Random sync-free kernels for testing the npu passes.

A kernel is a random structured program over a few buffers: GM inputs x, w and
outputs z, t (t is also read back, so GM itself carries dependencies), UB
buffers (one, %s0, only filled with constants by vdup and read by the scalar
unit), and a cube path (L1 -> L0A/L0B -> mmad -> L0C -> fixpipe to UB or GM).
Instructions run on MTE1, MTE2, MTE3, M, V, FIX and S (`read_scalar`), inside
`scf.for` loops with constant or block-dependent trip counts (0 to 4
iterations, so zero-trip and single-trip loops occur) and `scf.if`s on the
parity of an induction variable, nested two deep. Some loops are tile loops over
buffers of their own that load, compute and store, as double buffering wants
them. A prologue gives every other local buffer defined contents. Offsets are constants or advance with the induction variables. Every block
works on its own half of GM, so blocks never touch the same bytes whatever order
they run in.
"""

from __future__ import annotations

import numpy as np

from npu_testing import gm, local

GM_ELEMENTS = 4096  # per block
UB = ["u0", "u1", "u2", "u3"]
UB_ELEMENTS = 512


class KernelGenerator:
    def __init__(self, rng: np.random.Generator, planned: bool, cube: bool = True):
        self.rng = rng
        self.planned = planned
        self.cube = cube
        self.lines: list[str] = []
        self.counter = 0
        self.ivs: list[str] = []
        self.depth = 0
        self.tile_buffers: list[str] = []

    # ---- helpers ----------------------------------------------------------------------

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def emit(self, line: str) -> None:
        self.lines.append("  " * (self.depth + 1) + line)

    def pick(self, options):
        return options[int(self.rng.integers(len(options)))]

    def offset(self, stride: int, limit: int) -> str:
        """An index: %c0 or a multiple of `stride` advancing with an induction
        variable, staying below `limit` for trip counts up to 3."""
        if not self.ivs or self.rng.random() < 0.4:
            return "%c0"
        iv = self.pick(self.ivs)
        if 3 * stride > limit:
            return "%c0"
        name = self.fresh("o")
        self.emit(f"{name} = arith.muli {iv}, %c{stride} : index")
        return name

    def gm_offset(self) -> str:
        """Block base plus an advancing part (tiles of 256 elements)."""
        inner = self.offset(256, 2048)
        name = self.fresh("g")
        self.emit(f"{name} = arith.addi %base, {inner} : index")
        return name

    # ---- instructions -------------------------------------------------------------------

    def instruction(self) -> None:
        kinds = ["load", "load", "vector", "vector", "store", "scalar"]
        if self.cube:
            kinds += ["l1", "l0", "mmad", "fixpipe"]
        getattr(self, "_" + self.pick(kinds))()

    def _load(self):
        cols = self.pick([64, 128])
        src = self.pick(["x", "w", "t", "z"])
        go, lo = self.gm_offset(), self.offset(128, UB_ELEMENTS - cols)
        self.emit(f"npu.copy %{src}[{go}], %{self.pick(UB)}[{lo}] {{cols = {cols}}}")

    def _vector(self):
        cols = self.pick([64, 128])
        a, b, c = (self.pick(UB) for _ in range(3))
        lo = self.offset(128, UB_ELEMENTS - cols)
        op = self.pick(["vadd", "vexp", "vmuls"])
        if op == "vadd":
            self.emit(f"npu.vadd %{a}[{lo}], %{b}[%c0], %{c}[{lo}] {{cols = {cols}}}")
        elif op == "vexp":
            self.emit(f"npu.vexp %{a}[%c0], %{c}[{lo}] {{cols = {cols}}}")
        else:
            self.emit(f"npu.vmuls %{a}[{lo}], %{c}[%c0] {{cols = {cols}, scalar = 0.5}}")

    def _store(self):
        cols = self.pick([64, 128])
        dst = self.pick(["z", "t"])
        lo, go = self.offset(128, UB_ELEMENTS - cols), self.gm_offset()
        self.emit(f"npu.copy %{self.pick(UB)}[{lo}], %{dst}[{go}] {{cols = {cols}}}")

    def _scalar(self):
        """The scalar unit reads %s0, which only vdup writes (a NaN index would not do)."""
        if self.rng.random() < 0.5:
            self.emit(f"npu.vdup %s0[%c0] {{cols = 16, value = {float(self.rng.integers(1, 4))}}}")
        else:
            self.emit(f"{self.fresh('s')} = npu.read_scalar %s0[%c0] : index")

    def _l1(self):
        go = self.gm_offset()
        self.emit(f"npu.copy %{self.pick(['x', 'w'])}[{go}], %{self.pick(['a1', 'b1'])}[%c0] {{rows = 16, cols = 16}}")

    def _l0(self):
        src, dst = self.pick([("a1", "a0"), ("b1", "b0"), ("a1", "b0"), ("b1", "a0")])
        self.emit(f"npu.load_l0 %{src}[%c0], %{dst}[%c0] {{rows = 16, cols = 16}}")

    def _mmad(self):
        acc = "true" if self.rng.random() < 0.5 else "false"
        self.emit(f"npu.mmad %a0[%c0], %b0[%c0], %c0c[%c0] {{m = 16, n = 16, k = 16, accumulate = {acc}}}")

    def _fixpipe(self):
        if self.rng.random() < 0.5:
            self.emit(f"npu.fixpipe %c0c[%c0], %{self.pick(UB)}[%c0] {{rows = 16, cols = 16}}")
        else:
            self.emit(f"npu.fixpipe %c0c[%c0], %t[{self.gm_offset()}] {{rows = 16, cols = 16}}")

    # ---- structure -------------------------------------------------------------------

    def body(self, items: int) -> None:
        for _ in range(items):
            roll = self.rng.random()
            if roll < 0.1 and self.depth < 2:
                self.tile_loop()
            elif roll < 0.25 and self.depth < 2:
                self.loop()
            elif roll < 0.28 and self.ivs:
                self.branch()
            else:
                self.instruction()

    def loop(self) -> None:
        bound, iv = self.bound(), self.fresh("i")
        self.emit(f"scf.for {iv} = %c0 to {bound} step %c1 {{")
        self.ivs.append(iv)
        self.depth += 1
        self.body(int(self.rng.integers(1, 6)))
        self.depth -= 1
        self.ivs.pop()
        self.emit("}")

    def bound(self) -> str:
        trips = int(self.rng.integers(0, 4))
        if self.rng.random() < 0.5:
            bound = self.fresh("n")
            self.emit(f"{bound} = arith.addi %blk, %c{trips} : index")  # trips or trips + 1
            return bound
        return f"%c{trips + int(self.rng.integers(0, 2))}"

    def tile_loop(self) -> None:
        """A load-compute-store loop over buffers of its own: every iteration loads
        the first, computes the second from it, stores it (double-buffering material),
        with some other random work mixed in."""
        first, second = self.fresh("tl"), self.fresh("tl")
        self.tile_buffers += [first, second]
        bound, iv = self.bound(), self.fresh("i")
        self.emit(f"scf.for {iv} = %c0 to {bound} step %c1 {{")
        self.ivs.append(iv)
        self.depth += 1
        self.emit(f"npu.copy %{self.pick(['x', 'w'])}[{self.gm_offset()}], {first}[%c0] {{cols = 256}}")
        compute = self.pick(["npu.vexp", "npu.vmuls"])
        scale = ", scalar = 0.5" if compute == "npu.vmuls" else ""
        self.emit(f"{compute} {first}[%c0], {second}[%c0] {{cols = 256{scale}}}")
        self.body(int(self.rng.integers(0, 3)))
        if self.rng.random() < 0.5:
            self.emit(f"npu.vadd {first}[%c0], {second}[%c0], {second}[%c0] {{cols = 256}}")
        self.emit(f"npu.copy {second}[%c0], %{self.pick(['z', 't'])}[{self.gm_offset()}] {{cols = 256}}")
        self.depth -= 1
        self.ivs.pop()
        self.emit("}")

    def branch(self) -> None:
        iv = self.pick(self.ivs)
        parity, cond = self.fresh("p"), self.fresh("q")
        self.emit(f"{parity} = arith.remui {iv}, %c2 : index")
        self.emit(f"{cond} = arith.cmpi eq, {parity}, %c0 : index")
        self.emit(f"scf.if {cond} {{")
        self.depth += 1
        self.body(int(self.rng.integers(1, 4)))
        self.depth -= 1
        self.emit("} else {")
        self.depth += 1
        self.body(int(self.rng.integers(0, 3)))
        self.depth -= 1
        self.emit("}")

    # ---- the module ------------------------------------------------------------------

    def allocs(self) -> list[str]:
        buffers = [(u, local(UB_ELEMENTS, "ub")) for u in UB] + [("s0", local(16, "ub"))]
        buffers += [
            ("a1", local(256, "l1")),
            ("b1", local(256, "l1")),
            ("a0", local(256, "l0a")),
            ("b0", local(256, "l0b")),
            ("c0c", local(256, "l0c", "f32")),
        ]
        buffers += [(name[1:], local(256, "ub")) for name in self.tile_buffers]
        lines, next_offset = [], {}
        for name, t in buffers:
            space = t.split("<")[-1].split(">")[0]
            offset = ""
            if self.planned:
                at = next_offset.get(space, 0)
                offset = f" {{offset = {at}}}"
                next_offset[space] = at + 1024
            lines.append(f"  %{name} = npu.alloc{offset} : {t}")
        return lines

    def prologue(self) -> list[str]:
        """Every local buffer starts with defined contents: a kernel reading bytes no
        instruction wrote would compute numbers that depend on the buffer layout."""
        lines = [f"  npu.vdup %{u}[%c0] {{cols = {UB_ELEMENTS}, value = {i + 1}.0}}" for i, u in enumerate(UB)]
        lines.append("  npu.vdup %s0[%c0] {cols = 16, value = 1.0}")
        if self.cube:
            lines += [
                "  npu.copy %x[%base], %a1[%c0] {rows = 16, cols = 16}",
                "  npu.copy %w[%base], %b1[%c0] {rows = 16, cols = 16}",
                "  npu.load_l0 %a1[%c0], %a0[%c0] {rows = 16, cols = 16}",
                "  npu.load_l0 %b1[%c0], %b0[%c0] {rows = 16, cols = 16}",
                "  npu.mmad %a0[%c0], %b0[%c0], %c0c[%c0] {m = 16, n = 16, k = 16}",
            ]
        return lines

    def module(self, items: int = 8) -> str:
        self.body(items)
        constants = [f"  %c{v} = arith.constant {v} : index" for v in (0, 1, 2, 3, 4, 64, 128, 256, 512, 1024)]
        head = [
            *constants,
            "  %blk = npu.block_idx : index",
            f"  %base = arith.muli %blk, %c{GM_ELEMENTS} : index",
            *self.allocs(),
            *self.prologue(),
        ]
        size = 2 * GM_ELEMENTS
        args = {"x": gm(size), "w": gm(size), "z": gm(size), "t": gm(size)}
        params = ", ".join(f"%{n}: {t}" for n, t in args.items())
        main_params = ", ".join(
            f'%{n}: {t} {{ge.name = "{n}"{", npu.output" if n in ("z", "t") else ""}}}' for n, t in args.items()
        )
        body = "\n".join(head + self.lines)
        return f"""builtin.module {{
npu.kernel @k({params}) attributes {{block_dim = 2}} {{
  %c{GM_ELEMENTS} = arith.constant {GM_ELEMENTS} : index
{body}
}}
func.func @main({main_params}) {{
  npu.launch @k(%x, %w, %z, %t)
  func.return
}}
}}"""


def random_kernel(seed: int, planned: bool, items: int = 8, cube: bool = True) -> str:
    return KernelGenerator(np.random.default_rng(seed), planned, cube).module(items)
