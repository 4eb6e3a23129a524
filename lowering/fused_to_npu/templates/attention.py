"""`fused.flash_attention`: the mix kernel, cube and vector taking turns on tiles
of one head, the (Sq x Sk) scores never leaving the core.

An item is `mq` query rows of one (batch, head); a core walks its range of items
(`lowering/tiling.py:choose_attention_tiling`). Per item:

    Q (mq x D)  GM -> L1 -> L0A once
    for each key / value block j of sk rows:            two L1 / L0 copies of K, V and P
        S  = Q K^T              (cube: K staged as K^T through load_l0's transpose)
        S  = mask(S * scale)    (UB, fp32: fixpipe, vmuls, vsel or vadd)
        m' = max(m, rowmax S);  a = exp(m - m');  P = exp(S - m');  l = l a + rowsum P
        O  = O a + P V          (P rounded to the input type, UB -> L1 -> L0A; the product through L0C)
        m  = m'
    out = O / l                 (in the output's type and format)

The first block starts the running values instead of updating them: m and l are
its row max and sum, O its product, and nothing is rescaled.

The blocks are software-pipelined, one block apart:

    S_0 = Q K_0^T, softmax_0
    for j = 1 ..:   S_j = Q K_j^T      (the cube, while the vector unit ends softmax_j-1)
                    P_j-1 V_j-1        (P to the cube as soon as it is rounded)
                    softmax_j          (the vector unit goes on without waiting for P V)
                    O = O a_j-1 + P_j-1 V_j-1
    P_last V_last, O = O a + P V

so the vector unit, which bounds the kernel, never waits for the round trip of P
through L1 and the cube: in program order a block's product comes after the next
block's softmax (a_j and the product's L0C tile have a copy per block parity).
Blocks after the second walk in an scf.for of pairs (one per L1 / L0 copy); the
last, short block is written out. V_j is staged with K_j+1, under one MTE2 flag:
a set_flag on MTE2 holds it until its transfers land, and V is not needed before
the product.

Items are pipelined the same way when every core has the same items (more than
one) of the same rows (`_ItemEnd`): what is left of an item after its last
softmax (1 / l, the last product and accumulation, the output) is written into
the next item around that item's first softmax, the last block's V staged with
the next item's Q and K; the blocks keep alternating copies from item to item
(with an odd number of blocks per item, the items walk in pairs). BERT's
attention (12 heads x 128 rows, 3 items of 16 rows per core on ascend910):
4391 -> 4202 cycles.

BNSD reads (*batch, S, D) matrices; BSH reads head h of (*batch, S, N*D) as the
columns h*D.. of each row (for FRACTAL_NZ, whole 16-column blocks: D must be a
multiple of 16). Inputs are fp16 or fp32 (the cube's fp32 rate). Scores and
probabilities are fp32 until P goes back to the cube in the input type; the
reference keeps them fp32 (within the fp16 tolerance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from types import SimpleNamespace

from xdsl.dialects.builtin import f32

from ....dialects import fused, npu
from ....dialects.ge.formats import Format
from ...tiling import FRACTAL, AttentionShape, AttentionTiling, causal_tile_order, choose_attention_tiling, round_up
from ..context import GmTensor, KernelContext
from .registry import kernel_for
from ..kernel_builder import Index
from ..vector_emitter import UB_ALIGN_BYTES, Operand, Tile, VectorEmitter, emit_elementwise
from .cube import require_cube_type
from .cube_epilogue import EpilogueInput, Role, ScratchTiles
from .cube_kernel import for_core_items
from .cube_operands import ND, NZ, BatchMap, MatrixView, batch_map, broadcast_view, nz_block_stride

NEG_INIT = -3.0e38
"""The running row max before any block: below any score, and exp(NEG_INIT - m) is 0."""

def head_view(t: GmTensor, layout: str, heads: int, transposed: bool = False) -> MatrixView:
    """The (S x D) matrix of each (batch, head) of q, k, v or the output, batches
    flattened in (*batch, head) order; logically (D x S) if `transposed`."""
    if layout == "BNSD":
        *batch, s, d = t.shape
        return _view(t, s, d, t.shape[:-2], transposed, 0)
    *batch, s, hidden = t.shape
    d = hidden // heads
    return _view(t, s, d, (*batch, heads), transposed, d)


def _view(t: GmTensor, s: int, d: int, batch_shape, transposed: bool, head_cols: int) -> MatrixView:
    """`head_cols` > 0: the last batch dim is heads, each `head_cols` columns to the right."""
    width = t.shape[-1]
    rows, cols = (d, s) if transposed else (s, d)
    outer = batch_shape[:-1] if head_cols else batch_shape
    if t.format == Format.ND:
        dims = list(batch_map(outer, outer, s * width).dims)
        stride = width
        if head_cols:
            dims.append((batch_shape[-1], head_cols))
        return MatrixView(t, rows, cols, ND, transposed, stride, BatchMap(tuple(dims)))
    if t.format == Format.FRACTAL_NZ:
        if head_cols % FRACTAL:
            raise ValueError(f"heads of {head_cols} columns in a FRACTAL_NZ tensor (a multiple of 16 is needed)")
        stride = nz_block_stride(s)
        dims = list(batch_map(outer, outer, stride * -(-width // FRACTAL)).dims)
        if head_cols:
            dims.append((batch_shape[-1], head_cols // FRACTAL * stride))
        return MatrixView(t, rows, cols, NZ, transposed, stride, BatchMap(tuple(dims)))
    raise ValueError(f"a {t.format.value} attention operand")


@kernel_for(fused.FlashAttentionOp)
def lower_flash_attention(op: fused.FlashAttentionOp, k: KernelContext) -> None:
    a = op.attr_values()
    names = op.present_operand_names()
    t = SimpleNamespace(**{"mask": None, **dict(zip(names, k.inputs))})
    out = k.outputs[0]
    require_cube_type(k, t.query, t.key, t.value, out)
    try:
        q = head_view(t.query, a.layout, a.num_heads)
        kt = head_view(t.key, a.layout, a.num_heads, transposed=True)
        v = head_view(t.value, a.layout, a.num_heads)
        o = head_view(out, a.layout, a.num_heads)
        scores = (*(o.batches.dims and [size for size, _ in o.batches.dims]), q.rows, kt.cols)
        mask = None if t.mask is None else _mask_input(t.mask, scores)
    except ValueError as e:
        raise k.unsupported(str(e)) from None
    batch = math.prod(size for size, _ in o.batches.dims)
    mask_bytes = 0 if mask is None or mask.role == Role.SCALAR else mask.view.itemsize
    causal = a.causal_offset if a.causal and mask is not None else None
    shape = AttentionShape(batch, q.rows, kt.cols, q.cols, v.cols, mask_bytes, t.query.itemsize, causal)
    try:
        tiling = choose_attention_tiling(k.hw, shape)
    except ValueError as e:
        raise k.unsupported(str(e)) from None
    k.explain(tiling.explain())
    k.block_dim = tiling.block_dim
    boolean = t.mask is not None and t.mask.element_type != t.query.element_type
    _AttentionKernel(k, tiling, q, kt, v, o, mask, boolean, a).emit()


def per_row(buffer) -> Tile:
    """A UB buffer of one value per query row (row max and sum, a_j, 1 / l, a mask column)."""
    return Tile(buffer, 0, 1, col_stride=0)


def _mask_input(mask: GmTensor, scores) -> EpilogueInput:
    splat = mask.splat()
    if splat is not None:
        return EpilogueInput(None, splat)
    return EpilogueInput(broadcast_view(mask, scores))


class _KvBlocks:
    """The key / value blocks of sk rows over `length` keys: every block full but a
    shorter last one. Block 0 and 1 are written out (the first starts the running
    values, the second accumulates the first's product); the blocks after them
    that are full walk in pairs (`looped_pairs`), the rest are written out.

    Under a causal mask `length` is the keys the item's last row sees (the blocks
    above the diagonal are not there at all) and `unmasked` the leading blocks
    that every row of the item sees whole: they are not masked, and only they
    walk in the loop, so whether a block is masked is known when it is written."""

    def __init__(self, length: int, sk: int, unmasked: int | None = None):
        self.length, self.sk = length, sk
        self.full = length // sk
        self.count = -(-length // sk)
        self.causal = unmasked is not None
        self.unmasked = min(unmasked, self.count) if self.causal else 0
        self.looped_pairs = max(0, (min(self.full, self.unmasked) if self.causal else self.full) - 2) // 2

    def size(self, j: int) -> int:
        return min(self.sk, self.length - j * self.sk)

    def masked(self, j: Index) -> bool:
        """Whether block j is masked (a looped block, j not a constant, is masked
        unless causal)."""
        return not self.causal or (isinstance(j, int) and j >= self.unmasked)

    @property
    def any_masked(self) -> bool:
        return not self.causal or self.unmasked < self.count

    def written_out(self, j: int) -> bool:
        """Whether block j is written out (not a block of the looped pairs)."""
        return j < 2 or j >= 2 + 2 * self.looped_pairs


class _AttentionKernel:
    def __init__(self, k: KernelContext, t: AttentionTiling, q, kt, v, o, mask: EpilogueInput | None, boolean: bool, attrs):
        self.k, self.b, self.t = k, k.b, t
        self.element_type = q.tensor.element_type
        self.q, self.kt, self.v, self.o, self.mask, self.a = q, kt, v, o, mask, attrs
        self.boolean_mask = boolean
        self.causal = t.shape.causal_offset  # None: every key block computed and masked
        s = t.shape
        self.d16, self.dv16, self.sk16 = round_up(s.d, FRACTAL), round_up(s.dv, FRACTAL), round_up(t.sk, FRACTAL)
        self.q_tiles = -(-s.sq // t.mq)
        self._alloc()

    def _alloc(self) -> None:
        b, t, s = self.b, self.t, self.t.shape
        et = self.element_type
        mq, sk = t.mq, t.sk
        self.q_l1 = b.alloc([self.q.l1_elements(mq, s.d)], et, "l1", "q_l1")
        self.q_l0 = b.alloc([mq * self.d16], et, "l0a", "q_l0")
        self.k_l1 = [b.alloc([self.kt.l1_elements(s.d, sk)], et, "l1", f"k_l1_{i}") for i in range(2)]
        self.v_l1 = [b.alloc([self.v.l1_elements(sk, s.dv)], et, "l1", f"v_l1_{i}") for i in range(2)]
        self.p_l1 = [b.alloc([mq * self.sk16], et, "l1", f"p_l1_{i}") for i in range(2)]
        self.p_l0 = [b.alloc([mq * self.sk16], et, "l0a", f"p_l0_{i}") for i in range(2)]
        self.k_l0 = [b.alloc([self.d16 * self.sk16], et, "l0b", f"k_l0_{i}") for i in range(2)]
        self.v_l0 = [b.alloc([self.sk16 * self.dv16], et, "l0b", f"v_l0_{i}") for i in range(2)]
        self.s_l0c = b.alloc([mq * self.sk16], f32, "l0c", "s_acc")
        self.pv_l0c = [b.alloc([mq * self.dv16], f32, "l0c", f"pv_acc_{i}") for i in range(2)]
        self.s_ub = b.alloc([mq * self.sk16], f32, "ub", "scores")
        self.p_ub = b.alloc([mq * self.sk16], et, "ub", "probs")
        self.acc = b.alloc([mq * self.dv16], f32, "ub", "acc")
        self.pv_ub = b.alloc([mq * self.dv16], f32, "ub", "pv")
        self.out_ub = b.alloc([round_up(mq, FRACTAL) * self.dv16], et, "ub", "out")
        self.stats = [b.alloc([round_up(mq, 8)], f32, "ub", name) for name in ("row_max", "row_sum")]
        self.alphas = [b.alloc([round_up(mq, 8)], f32, "ub", f"alpha_{i}") for i in range(2)]  # a_j, by block parity
        self.inverse = b.alloc([round_up(mq, 8)], f32, "ub", "inverse")  # 1 / l
        self.mask_home = None
        self.mask_whole = False  # the item's mask loaded once for all its blocks, if it has several and UB room
        if self.mask is not None and self.mask.view is not None:
            block, whole = self._mask_sizes()
            itemsize = self.mask.view.itemsize
            several = _KvBlocks(self.t.shape.sk, self.t.sk).count > 1
            aligned = self.t.sk * itemsize % UB_ALIGN_BYTES == 0  # each block's columns start a vector operand
            fits = self._ub_spare() >= (whole - block) * itemsize
            self.mask_whole = several and aligned and fits and self.mask.role != Role.SCALAR
            self.mask_home = b.alloc([whole if self.mask_whole else block], self.mask.element_type, "ub", "mask")
        self.scratch = ScratchTiles(b, mq, self.sk16, "att")

    def _mask_sizes(self) -> tuple[int, int]:
        """UB elements of the mask's buffer: for one key block, and for all the keys
        of an item (a column mask is the same for every block)."""
        mq, role = self.t.mq, self.mask.role
        keys16 = round_up(self.t.shape.sk, FRACTAL)
        return {
            Role.FULL: (mq * self.sk16, mq * keys16),
            Role.ROW: (self.sk16, keys16),
            Role.COL: (round_up(mq, 32), round_up(mq, 32)),
            Role.SCALAR: (32, 32),
        }[role]

    def _ub_spare(self) -> int:
        """UB bytes the tiling's buffers leave free (`tiling.attention_buffers`)."""
        return self.k.hw.capacity("ub") - dict(self.t.buffers).get("ub", 0)

    # ---- items ------------------------------------------------------------------------

    def emit(self) -> None:
        b, t = self.b, self.t
        if self.mask is not None and self.mask.role == Role.SCALAR and self.mask_home is not None:
            b.emit(npu.CopyOp, self.mask.view.value, self.mask.view.base, self.mask_home, 0, cols=1)
        if self._items_alike():
            self._pipelined_items()
        else:
            for_core_items(b, t.items, t.per_core, t.block_dim, self._item)

    def _items_alike(self) -> bool:
        """Whether every core has the same number of items (more than one) and every
        item the same rows: then an item's end can be written into the next one."""
        t = self.t
        return t.per_core > 1 and t.items == t.per_core * t.block_dim and self._uniform_ends() and self.causal is None

    def _pipelined_items(self) -> None:
        """The core's items, each one's end (`_ItemEnd`) written into the next
        after its first block's scores and around its first softmax, the last
        one's after the loop. A core's blocks alternate copies across its items
        too: with an odd number of blocks per item the items walk in pairs."""
        b, t = self.b, self.t
        start = b.mul(b.block_idx(), t.per_core) if t.block_dim > 1 else 0
        blocks = _KvBlocks(t.shape.sk, t.sk).count

        def item(u: Index, parity: int, previous: _ItemEnd | None, previous_u: Index) -> _ItemEnd:
            before = None if previous is None else previous.elsewhere(*self._rows_of(b.add(start, previous_u)))
            return self._rows(*self._rows_of(b.add(start, u)), self._uniform_mq(), self._uniform_ends(), parity, before)

        end = item(0, 0, None, 0)
        if blocks % 2 == 0:
            with b.loop(1, t.per_core, name="item") as u:
                item(u, 0, end, b.sub(u, 1))
        else:
            rest = t.per_core - 1
            with b.loop(0, rest // 2, name="items") as pair:
                u = b.add(b.mul(pair, 2), 1)
                odd = item(u, 1, end, b.sub(u, 1))
                item(b.add(u, 1), 0, odd, u)
            if rest % 2:
                end = item(t.per_core - 1, 1, end, t.per_core - 2)
        end.elsewhere(*self._rows_of(b.add(start, t.per_core - 1))).finish()

    def _rows_of(self, item: Index) -> tuple[Index, Index]:
        """(batch, first query row) of an item."""
        b = self.b
        return b.floordiv(item, self.q_tiles), b.mul(b.rem(item, self.q_tiles), self.t.mq)

    def _uniform_mq(self) -> int:
        return min(self.t.mq, self.t.shape.sq)

    def _uniform_ends(self) -> bool:
        """Whether no item is a tail: every item has `_uniform_mq` rows (and writes
        the padding rows of an NZ output after them, if any: `_write`)."""
        return self.q_tiles == 1 or self.t.shape.sq % self.t.mq == 0

    def _item(self, item: Index) -> None:
        """One item written out whole (its rows may be a tail: an scf.if per case)."""
        b, t, s = self.b, self.t, self.t.shape
        qi = b.rem(item, self.q_tiles)
        batch = b.floordiv(item, self.q_tiles)
        tail = s.sq - (self.q_tiles - 1) * t.mq

        def rows(q0: Index, mq: int, ends: bool) -> None:
            self._rows(batch, q0, mq, ends).finish()

        if self.causal is not None:
            self._causal_item(batch, qi, tail)
            return
        if self._uniform_ends():
            rows(b.mul(qi, t.mq), self._uniform_mq(), True)
            return
        if isinstance(qi, int):
            last = qi == self.q_tiles - 1
            rows(qi * t.mq, tail if last else t.mq, last)
            return
        with b.when(b.less_than(qi, self.q_tiles - 1)):
            rows(b.mul(qi, t.mq), t.mq, False)
        with b.when(b.equals(qi, self.q_tiles - 1)):
            rows((self.q_tiles - 1) * t.mq, tail, True)

    def _causal_item(self, batch: Index, position: Index, tail: int) -> None:
        """Under a causal mask an item's key blocks depend on its query rows: one
        body per query tile, each with its own blocks, chosen by an scf.if. The
        item at `position` of its (batch, head) takes tile `causal_tile_order`
        [position] (tiles paired short with long, so contiguous items balance)."""
        b, last = self.b, self.q_tiles - 1
        for at, qi in enumerate(causal_tile_order(self.q_tiles)):
            if isinstance(position, int) and position != at:
                continue

            def body(qi=qi) -> None:
                self._rows(batch, qi * self.t.mq, tail if qi == last else self.t.mq, qi == last).finish()

            if isinstance(position, int):
                body()
            else:
                with b.when(b.equals(position, at)):
                    body()

    def _blocks(self, q0: Index, mq: int) -> _KvBlocks:
        """The item's key blocks: under a causal mask those its last row sees, the
        leading ones its first row sees whole unmasked (q0 is then a constant)."""
        s, sk = self.t.shape, self.t.sk
        if self.causal is None:
            return _KvBlocks(s.sk, sk)
        length = s.visible_keys(q0, mq)
        whole = s.visible_keys(q0, 1)  # the first row's keys: every row sees them
        return _KvBlocks(length, sk, _KvBlocks(length, sk).count if whole == length else whole // sk)

    def _offsets(self, batch: Index) -> SimpleNamespace:
        b = self.b
        return SimpleNamespace(
            q=self.q.batches.offset(b, batch),
            k=self.kt.batches.offset(b, batch),
            v=self.v.batches.offset(b, batch),
            o=self.o.batches.offset(b, batch),
            mask=self.mask.view.batches.offset(b, batch) if self.mask_home is not None else None,
        )

    def _rows(
        self, batch: Index, q0: Index, mq: int, ends: bool, parity: int = 0,
        before: _ItemEnd | None = None,
    ) -> _ItemEnd:
        """One item, `mq` query rows from q0 of `batch` (`ends`: the last rows), its
        first block in copy `parity`, up to its last softmax; returns the rest.
        `before`: the previous item's end, written in around the first softmax."""
        b, s = self.b, self.t.shape
        offsets = self._offsets(batch)
        q_stride = self.q.l1_stride(self.t.mq, s.d)
        self.q.stage_to_l1(b, offsets.q, q0, mq, 0, s.d, self.q_l1, q_stride)

        def load_q() -> None:
            self.q.load_to_l0(b, self.q_l1, q_stride, 0, mq, 0, s.d, self.q_l0, self.d16)

        blocks = self._blocks(q0, mq)
        own_v = []
        if blocks.count == 1 and self._last_v_with_k(blocks):
            own_v.append(lambda: self._stage_v(offsets.v, 0, blocks.size(0), parity))
        mask = [lambda: self._load_item_mask(offsets, q0, mq, blocks)] if self.mask_whole and blocks.any_masked else []
        previous_v = [] if before is None else [before.stage_v]  # nothing if that item staged it
        self._head(offsets, mq, 0, blocks.size(0), parity, load_q, own_v, before_k=mask, with_k=previous_v)
        if before is not None:
            before.start(v_staged=True)
        self._softmax(offsets, q0, mq, 0, blocks.size(0), parity, first=True, masked=blocks.masked(0))
        if before is not None:
            before.finish(started=True)
        if blocks.count > 1:
            self._step(offsets, q0, mq, 1, blocks, parity=1 - parity)
        with b.loop(0, blocks.looped_pairs, name="kvpair", pipelined=True) as pair:
            j = b.add(b.mul(pair, 2), 2)
            self._step(offsets, q0, mq, j, blocks, parity=parity)
            self._step(offsets, q0, mq, b.add(j, 1), blocks, parity=1 - parity)
        for j in range(2 + 2 * blocks.looped_pairs, blocks.count):
            self._step(offsets, q0, mq, j, blocks, parity=(parity + j) % 2)
        last = blocks.count - 1
        return _ItemEnd(
            self, mq, ends, last * self.t.sk, blocks.size(last), (parity + last) % 2, last == 0, offsets, q0,
            v_staged=self._last_v_with_k(blocks),
        )

    def _last_v_with_k(self, blocks: _KvBlocks) -> bool:
        """Whether an item's last V is staged in its own last head, after that
        block's K (`_head`): when that block is written out, unless it is the
        item's only block and items are written into each other (its V then goes
        with the next item's first K, under that K's flag)."""
        last = blocks.count - 1
        return self._v_after_k() and blocks.written_out(last) and (last > 0 or not self._items_alike())

    def _v_after_k(self) -> bool:
        """Whether V goes to MTE2 after K has gone on to L0B (`_head`): unless a
        block's mask is loaded too. The mask's load comes after the head's
        transfers and its flag after their landing; with V behind K's flag, it
        would wait for one more landing and for the last block's V."""
        return self.mask_home is None or self.mask.role == Role.SCALAR or self.mask_whole

    # ---- one key / value block, in its three parts ------------------------------------------

    def _step(self, offsets, q0: Index, mq: int, j: Index, blocks: _KvBlocks, parity: int) -> None:
        """Block j's scores and softmax in copy `parity`, with block j - 1's product
        and accumulation around the softmax (see the module docstring); j >= 1."""
        b, sk = self.b, self.t.sk
        size = blocks.size(j) if isinstance(j, int) else sk
        k0 = b.mul(j, sk)
        # every block before the last is full
        stages = [lambda: self._stage_v(offsets.v, b.sub(k0, sk), sk, 1 - parity)]
        if isinstance(j, int) and j == blocks.count - 1 and self._last_v_with_k(blocks):
            stages.append(lambda: self._stage_v(offsets.v, k0, size, parity))  # the last block's V, with its K landed
        self._head(offsets, mq, k0, size, parity, v_stages=stages)
        self._product(mq, sk, 1 - parity)
        self._softmax(offsets, q0, mq, k0, size, parity, masked=blocks.masked(j))
        self._accumulate(mq, 1 - parity, first=isinstance(j, int) and j == 1)

    def _head(
        self, offsets, mq: int, k0: Index, size: int, parity: int, load_q=None, v_stages=(), before_k=(), with_k=()
    ) -> None:
        """K of the block into L1 / L0 copy `parity`, S = Q K^T into L0C. `load_q` (an
        item's first block) moves Q into L0A. V is not needed before a block's
        product, which comes after the next block's scores: `v_stages` stage the
        previous block's V (and the last block's own) after this block's K has
        gone on to L0B, so that the flag handing K to MTE1 is set before them and
        the scores, which head the vector unit's chain, do not wait for V to land
        (a set_flag on MTE2 holds it until the transfers before it have landed,
        200 cycles on ascend910; V lands under the next block's flag). With a
        mask loaded per block (`_v_after_k`) they go with K, under its flag.
        `before_k` stage just before K, under its flag (an item's mask, read by its
        first softmax soon after the scores: one landing for both, where a
        transfer after K would wait for K's landing and hold the next block's K
        for one more); `with_k` just after it, under the same flag (the previous
        item's V, when that item did not stage it)."""
        b, s = self.b, self.t.shape
        sk16 = self.sk16
        kt_stride = self.kt.l1_stride(s.d, self.t.sk)
        for stage in before_k:
            stage()
        self.kt.stage_to_l1(b, offsets.k, 0, s.d, k0, size, self.k_l1[parity], kt_stride)
        after_k = self._v_after_k()
        for stage in (*with_k, *(() if after_k else v_stages)):
            stage()
        if load_q is not None:
            load_q()
        self.kt.load_to_l0(b, self.k_l1[parity], kt_stride, 0, s.d, 0, size, self.k_l0[parity], sk16)
        for stage in v_stages if after_k else ():
            stage()
        b.emit(
            npu.MmadOp, self.q_l0, 0, self.k_l0[parity], 0, self.s_l0c, 0,
            m=mq, n=size, k=s.d, strides=[self.d16, sk16, sk16],
        )

    def _stage_v(self, v_offset: Index, k0: Index, size: int, parity: int) -> None:
        s = self.t.shape
        self.v.stage_to_l1(self.b, v_offset, k0, size, 0, s.dv, self.v_l1[parity], self._v_stride())

    def _v_stride(self) -> int:
        return self.v.l1_stride(self.t.sk, self.t.shape.dv)

    def _softmax(
        self, offsets, q0: Index, mq: int, k0: Index, size: int, parity: int, first: bool = False, masked: bool = True
    ) -> None:
        """The block's scores to UB, scaled and (if `masked`) masked, through the
        online softmax: P in UB, a_j in its copy `parity`."""
        b, sk16 = self.b, self.sk16
        b.emit(npu.FixpipeOp, self.s_l0c, 0, self.s_ub, 0, rows=mq, cols=size, strides=[sk16, sk16])
        self.scratch.reset()
        v = self.scratch.emitter(mq, size)
        scores = Tile(self.s_ub, 0, sk16)
        self._scale_and_mask(v, offsets, q0, mq, k0, size, scores, masked)
        alpha = None if first else per_row(self.alphas[parity])
        self._online_softmax(v, scores, Tile(self.p_ub, 0, sk16), alpha)

    def _product(self, mq: int, size: int, parity: int) -> None:
        """V into L0B, P back to the cube: P V into the block's L0C copy."""
        b, s, sk16 = self.b, self.t.shape, self.sk16
        self.v.load_to_l0(b, self.v_l1[parity], self._v_stride(), 0, size, 0, s.dv, self.v_l0[parity], self.dv16)
        b.emit(npu.CopyOp, self.p_ub, 0, self.p_l1[parity], 0, rows=mq, cols=size, strides=[sk16, sk16])
        b.emit(npu.LoadL0Op, self.p_l1[parity], 0, self.p_l0[parity], 0, rows=mq, cols=size, strides=[sk16, sk16])
        b.emit(
            npu.MmadOp, self.p_l0[parity], 0, self.v_l0[parity], 0, self.pv_l0c[parity], 0,
            m=mq, n=s.dv, k=size, strides=[sk16, self.dv16, self.dv16],
        )

    def _accumulate(self, mq: int, parity: int, first: bool) -> None:
        """O = P V for the first block, else O = O a + P V."""
        b, s, dv16 = self.b, self.t.shape, self.dv16
        if first:
            b.emit(npu.FixpipeOp, self.pv_l0c[parity], 0, self.acc, 0, rows=mq, cols=s.dv, strides=[dv16, dv16])
            return
        b.emit(npu.FixpipeOp, self.pv_l0c[parity], 0, self.pv_ub, 0, rows=mq, cols=s.dv, strides=[dv16, dv16])
        acc = VectorEmitter(b, mq, s.dv, self.scratch.temp, self.scratch.column)
        acc_tile = Tile(self.acc, 0, dv16)
        acc.instr(npu.VMulOp, acc_tile, per_row(self.alphas[parity]), acc_tile)
        acc.instr(npu.VAddOp, acc_tile, Tile(self.pv_ub, 0, dv16), acc_tile)

    def _scale_and_mask(self, v: VectorEmitter, offsets, q0, mq: int, k0, size: int, scores: Tile, masked: bool) -> None:
        a = self.a
        if a.scale != 1.0:
            v.instr(npu.VMulsOp, scores, scores, scalar=float(a.scale))
        if self.mask is None or not masked:
            return
        mask = self._load_mask(offsets, q0, mq, k0, size)
        if not self.boolean_mask:
            widened = v.widened(mask) if isinstance(mask, Tile) else mask
            emit_elementwise(v, "ge.add", SimpleNamespace(), [scores, widened], scores)
        elif isinstance(mask, Tile):
            emit_elementwise(v, "ge.where", SimpleNamespace(), [mask, scores, float(a.mask_value)], scores)
        elif not mask:  # a splat false mask: every score is mask_value
            v.fill(scores, float(a.mask_value))

    def _load_item_mask(self, offsets, q0, mq: int, blocks: _KvBlocks) -> None:
        """The item's mask for all its keys (`mask_whole`), read by every block. Its
        copies are written out: a constant mask (a causal one) then loads before
        the phase's barrier (npu-prefetch-constants; GPT-2's attention loaded its
        eight 16-column blocks between Q and the first K). Under a causal mask,
        only the columns of the masked blocks (`blocks`), where they are read."""
        m = self.mask
        stride = round_up(self.t.shape.sk, FRACTAL)  # as _load_mask reads it
        first = blocks.unmasked * blocks.sk
        keys = blocks.length - first
        if m.role == Role.FULL:
            m.view.load_to_ub(self.b, offsets.mask, q0, mq, first, keys, self.mask_home, stride, ub_base=first, written_out=True)
        elif m.role == Role.ROW:
            m.view.load_to_ub(self.b, offsets.mask, 0, 1, first, keys, self.mask_home, stride, ub_base=first)
        else:
            m.view.load_to_ub(self.b, offsets.mask, q0, mq, 0, 1, self.mask_home, 1)

    def _load_mask(self, offsets, q0, mq: int, k0, size: int) -> Operand:
        m = self.mask
        if m.immediate is not None:
            return m.immediate
        role, home = m.role, self.mask_home
        if self.mask_whole:
            stride = round_up(self.t.shape.sk, FRACTAL)
            return {Role.FULL: Tile(home, k0, stride), Role.ROW: Tile(home, k0, 0)}.get(role) or per_row(home)
        if role == Role.FULL:
            m.view.load_to_ub(self.b, offsets.mask, q0, mq, k0, size, home, self.sk16)
            return Tile(home, 0, self.sk16)
        if role == Role.ROW:
            m.view.load_to_ub(self.b, offsets.mask, 0, 1, k0, size, home, self.sk16)
            return Tile(home, 0, 0)
        if role == Role.COL:
            m.view.load_to_ub(self.b, offsets.mask, q0, mq, 0, 1, home, 1)
            return per_row(home)
        return Tile(home, 0, 0, col_stride=0)

    def _online_softmax(self, v: VectorEmitter, scores: Tile, probs: Tile, alpha: Tile | None) -> None:
        """P = exp(S - m'), l = l a + rowsum P, m = m' for the block, a into `alpha`;
        for the first block (`alpha` None), m = its max and l = its sum."""
        m, l = (per_row(buf) for buf in self.stats)
        exps = probs if probs.element_type == scores.element_type else scores  # P written by the exp itself when no cast
        if alpha is None:
            v.reduce_rows("max", scores, m)
            v.instr(npu.VSubOp, scores, m, scores)
            v.instr(npu.VExpOp, scores, exps)
            v.reduce_rows("sum", exps, l)
            v.cast(exps, probs)
            return
        rows = v.per_row()
        block_max = v.col_temp(f32)
        v.reduce_rows("max", scores, block_max)
        new_max = v.col_temp(f32)
        rows.instr(npu.VMaxOp, m, block_max, new_max)
        rows.instr(npu.VSubOp, m, new_max, alpha)
        rows.instr(npu.VExpOp, alpha, alpha)
        rows.instr(npu.VCopyOp, new_max, m)
        v.instr(npu.VSubOp, scores, new_max, scores)
        v.instr(npu.VExpOp, scores, exps)
        block_sum = v.col_temp(f32)
        v.reduce_rows("sum", exps, block_sum)
        rows.instr(npu.VMulOp, l, alpha, l)
        rows.instr(npu.VAddOp, l, block_sum, l)
        v.cast(exps, probs)

    def _inverse(self, mq: int) -> None:
        """1 / l per row, while l is the item's: before the next item's first softmax."""
        v = VectorEmitter(self.b, mq, self.t.shape.dv, self.scratch.temp, self.scratch.column)
        v.per_row().instr(npu.VRecOp, per_row(self.stats[1]), per_row(self.inverse))

    def _write(self, o_offset: Index, q0: Index, mq: int, ends: bool) -> None:
        """out = O / l, in the output's type and format, to GM."""
        b, s = self.b, self.t.shape
        self.scratch.reset()
        out = VectorEmitter(b, mq, s.dv, self.scratch.temp, self.scratch.column)
        acc = Tile(self.acc, 0, self.dv16)
        result = Tile(self.out_ub, 0, self.dv16)
        pad = round_up(s.sq, FRACTAL) - s.sq if ends and self.o.layout == NZ else 0
        if self.o.layout == NZ and s.dv % FRACTAL:
            b.emit(npu.VDupOp, self.out_ub, self.dv16 - FRACTAL, rows=mq, cols=FRACTAL, strides=[self.dv16], value=0.0)
        scaled = result if result.element_type == acc.element_type else acc  # no copy when the types agree
        out.instr(npu.VMulOp, acc, per_row(self.inverse), scaled)
        out.cast(scaled, result)
        if pad:
            b.emit(npu.VDupOp, self.out_ub, mq * self.dv16, rows=pad, cols=self.dv16, strides=[self.dv16], value=0.0)
        cols = self.dv16 if self.o.layout == NZ else s.dv
        self.o.store_from_ub(b, o_offset, q0, mq + pad, 0, cols, self.out_ub, self.dv16)


@dataclass(frozen=True)
class _ItemEnd:
    """What is left of an item once its last softmax is issued: 1 / l, its last
    block's product and accumulation, the output. With items alike (`_items_alike`)
    the next item writes it in around its own first softmax: 1 / l and the
    product before (the softmax then overwrites l and P), the accumulation and
    the output after, so the vector unit goes on to the next item's softmax
    while P goes round through the cube."""

    kernel: _AttentionKernel
    mq: int
    ends: bool
    k0: int  # the last block's first key
    size: int  # its keys
    parity: int  # its copy
    first: bool  # it is the item's only block
    offsets: SimpleNamespace  # the item's GM offsets (v and o), valid where they were computed
    q0: Index
    v_staged: bool = False  # its V was staged with its own K (`_step`)

    def elsewhere(self, batch: Index, q0: Index) -> _ItemEnd:
        """The same end with its offsets computed anew where it is written in (the
        next item's body, an scf.for iteration of its own)."""
        k = self.kernel
        offsets = SimpleNamespace(v=k.v.batches.offset(k.b, batch), o=k.o.batches.offset(k.b, batch))
        return replace(self, offsets=offsets, q0=q0)

    def stage_v(self) -> None:
        """The last block's V, unless staged with its own K: if its block is one
        of the looped pairs, staged with the next item's first K (`_head`) or here."""
        if not self.v_staged:
            self.kernel._stage_v(self.offsets.v, self.k0, self.size, self.parity)

    def start(self, v_staged: bool = False) -> None:
        if not v_staged:
            self.stage_v()
        self.kernel._inverse(self.mq)
        self.kernel._product(self.mq, self.size, self.parity)

    def finish(self, started: bool = False) -> None:
        if not started:
            self.start()
        self.kernel._accumulate(self.mq, self.parity, self.first)
        self.kernel._write(self.offsets.o, self.q0, self.mq, self.ends)
