"""The links between NPUs and what a collective costs on them.

The `[interconnect]` table of a hardware preset describes one server: devices
0..7 in groups of `mesh_size`, each group a full mesh of point-to-point links
(`link_gb_s` per direction, `link_latency_us` per step), the groups joined by a
slower bridge (`bridge_gb_s`, shared by a group's chips, `bridge_latency_us`).

A collective runs as steps; in a step every device sends to one or more peers at
once, each transfer on its own link, and the step lasts as long as its slowest
transfer plus the latency. Three algorithms, as HCCL has them:

* ring: 2 (N-1) steps of S/N bytes for an all_reduce (reduce-scatter then
  all-gather around the ring), one link out of each device busy per step:
  T = 2 (N-1) (a + S / (N B));
* halving-doubling (recursive halving reduce-scatter, recursive doubling
  all-gather; N a power of two): 2 log2 N steps, the k-th of S / 2^k bytes:
  T = 2 log2(N) a + 2 (N-1)/N S / B;
* mesh (a full mesh): each device sends S/N to every peer at once, every link
  busy: T = 2 (a + S / (N B)), HCCL's own cost of its Mesh AllReduce
  (ReduceScatter + AllGather: 2 a + 2 S b / N + (N-1)/N S g, HCCL user guide
  "Mesh") without the reduction term g (the sums are not timed). No algorithm
  moves fewer bytes per link: each device must receive (N-1)/N of S to reduce
  its part and as much again to gather the rest, over its N-1 links;
* hierarchical, for an all_reduce over g full meshes of m members each (HCCL's
  multi-level algorithms: one level inside a mesh, one between): reduce-scatter
  inside each mesh (a mesh step of S/m), all-reduce of each device's part with
  its counterparts in the other meshes over the bridge (for two meshes one
  exchange of S/m, the m crossing transfers sharing the bridge; a ring of them
  otherwise), all-gather inside each mesh: for g = 2,
  T = 2 (a + S / (m B)) + a_b + S / B_b. A reduce_scatter is its first half
  with each device sending its counterparts only the parts they keep
  (a + S / (m B) + a_b + S / (2 B_b) for g = 2), an all_gather the same
  backwards.

`algorithm = auto` takes mesh when the group lies in one full mesh; an
all_reduce, reduce_scatter or all_gather over equal parts of several meshes
takes hierarchical (a ring would cross the slow bridge on every one of its
steps); anything else, ring. `cost` returns the time and the bytes each
directed link carried, so the report can show link usage; the closed forms
above are what the tests check it against.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field

from ..core.diagnostics import CompileError
from .hardware import HardwarePreset

ALGORITHMS = ("auto", "ring", "halving_doubling", "mesh", "hierarchical")
HIERARCHICAL = ("all_reduce", "reduce_scatter", "all_gather")
"""The collectives modelled with a level inside each mesh and one between them."""


@dataclass(frozen=True)
class Interconnect:
    mesh_size: int
    link_gb_s: float
    link_latency_us: float
    bridge_gb_s: float
    bridge_latency_us: float
    algorithm: str = "auto"

    def same_mesh(self, a: int, b: int) -> bool:
        return a // self.mesh_size == b // self.mesh_size

    def link(self, a: int, b: int) -> tuple[float, float]:
        """(bytes per us, latency us) from device a to device b."""
        if self.same_mesh(a, b):
            return self.link_gb_s * 1e3, self.link_latency_us
        return self.bridge_gb_s * 1e3, self.bridge_latency_us

    def meshes(self, members: tuple[int, ...]) -> list[list[int]]:
        """The members grouped by the full mesh they sit in, in order of first appearance."""
        groups: dict[int, list[int]] = {}
        for m in members:
            groups.setdefault(m // self.mesh_size, []).append(m)
        return list(groups.values())

    def choose(self, members: tuple[int, ...], kind: str) -> str:
        algorithm = self.algorithm
        meshes = self.meshes(members)
        even = len({len(g) for g in meshes}) == 1
        if algorithm == "auto":
            if len(meshes) == 1:
                algorithm = "mesh"
            else:
                algorithm = "hierarchical" if kind in HIERARCHICAL and even else "ring"
        if algorithm == "halving_doubling" and len(members) & (len(members) - 1):
            raise CompileError(f"halving-doubling needs a power-of-two group, got {len(members)} devices")
        if algorithm == "hierarchical" and (kind not in HIERARCHICAL or not even):
            raise CompileError(
                f"the hierarchical algorithm is modelled for an all_reduce, reduce_scatter or all_gather over equal parts "
                f"of full meshes, not a {kind} over {list(members)}"
            )
        return algorithm


def load_interconnect(hw: HardwarePreset, algorithm: str | None = None) -> Interconnect:
    """The `[interconnect]` table of the preset's file (`algorithm` overrides its choice)."""
    with open(hw.source, "rb") as f:
        table = tomllib.load(f).get("interconnect")
    if table is None:
        raise CompileError(f"hardware preset '{hw.name}' has no [interconnect] table: it describes one device")
    try:
        link = Interconnect(
            mesh_size=int(table["mesh_size"]),
            link_gb_s=float(table["link_gb_s"]),
            link_latency_us=float(table["link_latency_us"]),
            bridge_gb_s=float(table["bridge_gb_s"]),
            bridge_latency_us=float(table["bridge_latency_us"]),
            algorithm=str(algorithm or table.get("algorithm", "auto")),
        )
    except KeyError as e:
        raise CompileError(f"{hw.source}: [interconnect] needs '{e.args[0]}'") from None
    if link.algorithm not in ALGORITHMS:
        raise CompileError(f"unknown collective algorithm '{link.algorithm}' (expected {', '.join(ALGORITHMS)})")
    if min(link.mesh_size, link.link_gb_s, link.bridge_gb_s) <= 0:
        raise CompileError(f"{hw.source}: [interconnect] sizes and bandwidths must be positive")
    return link


@dataclass
class Cost:
    """A collective's time and the bytes each directed link (src, dst) carried."""

    algorithm: str
    time_us: float = 0.0
    steps: int = 0
    link_bytes: dict[tuple[int, int], float] = field(default_factory=dict)

    def step(self, link: Interconnect, transfers: list[tuple[int, int, float]]) -> None:
        """One step: all `transfers` (src, dst, bytes) at once, each on its link; a
        bridge is shared by the transfers crossing it in one direction."""
        crossing: dict[tuple[int, int], int] = {}
        for src, dst, _ in transfers:
            if not link.same_mesh(src, dst):
                key = (src // link.mesh_size, dst // link.mesh_size)
                crossing[key] = crossing.get(key, 0) + 1
        longest = 0.0
        for src, dst, nbytes in transfers:
            bandwidth, latency = link.link(src, dst)
            if not link.same_mesh(src, dst):
                bandwidth /= crossing[(src // link.mesh_size, dst // link.mesh_size)]
            longest = max(longest, latency + nbytes / bandwidth)
            self.link_bytes[(src, dst)] = self.link_bytes.get((src, dst), 0.0) + nbytes
        self.time_us += longest
        self.steps += 1


def _ring_steps(cost: Cost, link: Interconnect, members, nbytes: float, count: int) -> None:
    n = len(members)
    for _ in range(count):
        cost.step(link, [(members[i], members[(i + 1) % n], nbytes) for i in range(n)])


def _halving_doubling_steps(cost: Cost, link: Interconnect, members, size: float, halving: bool) -> None:
    """Recursive halving (partner at distance N/2, N/4, ..., sending half of what is
    left) or doubling (distance 1, 2, ..., sending what was gathered)."""
    n = len(members)
    rounds = int(math.log2(n))
    for k in range(rounds):
        distance = n >> (k + 1) if halving else 1 << k
        nbytes = size / (2 ** (k + 1)) if halving else size * (1 << k) / n
        cost.step(link, [(members[i], members[i ^ distance], nbytes) for i in range(n)])


def _mesh_step(cost: Cost, link: Interconnect, members, nbytes: float) -> None:
    cost.step(link, [(a, b, nbytes) for a in members for b in members if a != b])


def _across_meshes(cost: Cost, link: Interconnect, meshes: list[list[int]], nbytes: float) -> None:
    """Rank i of every mesh sends `nbytes` in all to its counterparts (rank i of
    the other meshes): for two meshes one step each way (the m pairs share the
    bridge), for more a ring of g - 1 steps of `nbytes` / (g - 1)."""
    m, g = len(meshes[0]), len(meshes)
    counterparts = [[mesh[i] for mesh in meshes] for i in range(m)]
    if g == 2:
        cost.step(link, [(a, b, nbytes) for pair in counterparts for a, b in (pair, pair[::-1])])
        return
    for _ in range(g - 1):
        cost.step(link, [(ring[k], ring[(k + 1) % g], nbytes / (g - 1)) for ring in counterparts for k in range(g)])


def _hierarchical_reduce_scatter(cost: Cost, link: Interconnect, meshes: list[list[int]], nbytes: float) -> None:
    """Reduce-scatter inside each mesh (device i keeps the sums of its mesh for the
    parts of rank i of every mesh: nbytes / m), then across the meshes: each
    device sends its counterparts their parts of that (nbytes / (m g) each, (g-1)
    of them) and keeps its own, summed over every mesh. Two meshes:
    T = a + S / (m B) + a_b + S / (2 B_b) (the m pairs share the bridge)."""
    m, g = len(meshes[0]), len(meshes)
    cost.step(link, [(a, b, nbytes / m) for mesh in meshes for a in mesh for b in mesh if a != b])
    _across_meshes(cost, link, meshes, nbytes * (g - 1) / (m * g))


def _hierarchical_all_gather(cost: Cost, link: Interconnect, meshes: list[list[int]], part: float) -> None:
    """The reduce-scatter backwards: each device's part P to its counterparts in the
    other meshes, then the g parts it holds to every peer of its mesh. Two meshes:
    T = a_b + m P / B_b + a + 2 P / B."""
    g = len(meshes)
    _across_meshes(cost, link, meshes, part * (g - 1))
    cost.step(link, [(a, b, part * g) for mesh in meshes for a in mesh for b in mesh if a != b])


def _hierarchical_all_reduce(cost: Cost, link: Interconnect, meshes: list[list[int]], nbytes: float) -> None:
    """Reduce-scatter inside each mesh, all-reduce of each part across the meshes
    (rank i of every mesh together), all-gather inside each mesh."""
    m, g = len(meshes[0]), len(meshes)
    inside = [(a, b, nbytes / m) for mesh in meshes for a in mesh for b in mesh if a != b]
    cost.step(link, inside)
    counterparts = [[mesh[i] for mesh in meshes] for i in range(m)]
    if g == 2:
        cost.step(link, [(a, b, nbytes / m) for pair in counterparts for a, b in (pair, pair[::-1])])
    elif g > 2:
        for _ in range(2 * (g - 1)):
            cost.step(link, [(ring[k], ring[(k + 1) % g], nbytes / (m * g)) for ring in counterparts for k in range(g)])
    cost.step(link, inside)


def collective_cost(kind: str, members: tuple[int, ...], nbytes: float, link: Interconnect) -> Cost:
    """The cost of collective `kind` over `members` on operands of `nbytes` bytes per
    device (the input of all_reduce / reduce_scatter / all_to_all / broadcast, each
    device's part for all_gather)."""
    n = len(members)
    algorithm = link.choose(members, kind)
    cost = Cost(algorithm)
    if n == 1:
        return cost
    if kind == "broadcast":
        # Ring and halving-doubling broadcast as a binomial tree; mesh sends to all at once.
        if algorithm == "mesh":
            cost.step(link, [(members[0], m, nbytes) for m in members[1:]])
        else:
            have = 1
            while have < n:
                cost.step(link, [(members[i], members[i + have], nbytes) for i in range(have) if i + have < n])
                have *= 2
        return cost
    if algorithm == "hierarchical":
        meshes = link.meshes(members)
        if kind == "all_reduce":
            _hierarchical_all_reduce(cost, link, meshes, nbytes)
        elif kind == "reduce_scatter":
            _hierarchical_reduce_scatter(cost, link, meshes, nbytes)
        else:
            _hierarchical_all_gather(cost, link, meshes, nbytes)
        return cost
    part = nbytes / n if kind in ("all_reduce", "reduce_scatter", "all_to_all") else nbytes
    phases = {"all_reduce": ("scatter", "gather"), "reduce_scatter": ("scatter",), "all_gather": ("gather",)}
    if kind == "all_to_all":
        if algorithm == "mesh":
            _mesh_step(cost, link, members, part)
        else:
            # Pairwise exchange: in step k, device i sends its part for i + k.
            for k in range(1, n):
                cost.step(link, [(members[i], members[(i + k) % n], part) for i in range(n)])
        return cost
    for phase in phases[kind]:
        if algorithm == "ring":
            _ring_steps(cost, link, members, part, n - 1)
        elif algorithm == "mesh":
            _mesh_step(cost, link, members, part)
        else:
            whole = nbytes if kind != "all_gather" else nbytes * n
            _halving_doubling_steps(cost, link, members, whole, halving=phase == "scatter")
    return cost


def transfer_cost(src: int, dst: int, nbytes: float, link: Interconnect) -> Cost:
    """A point-to-point send of `nbytes` from src to dst."""
    cost = Cost("send")
    cost.step(link, [(src, dst, nbytes)])
    return cost
