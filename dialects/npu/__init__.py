"""The `npu` dialect: the instructions of a Da Vinci-like AI core, and the host
plan that launches kernels. The lowering generates it; the simulator
(`simulator/npu`) runs it, computing the numbers and the cycles.

A complete module (8 cores each compute z = relu(x + y) on 2048 elements in two
tiles of 1024, synchronising the pipes with flags)::

    builtin.module {
      npu.kernel @add_relu(%x: memref<16384xf16, #npu.space<gm>>, %y: memref<16384xf16, #npu.space<gm>>,
                           %z: memref<16384xf16, #npu.space<gm>>) attributes {block_dim = 8} {
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %c2 = arith.constant 2 : index
        %c1024 = arith.constant 1024 : index
        %c2048 = arith.constant 2048 : index
        %b = npu.block_idx : index
        %base = arith.muli %b, %c2048 : index
        %xa = npu.alloc {offset = 0} : memref<1024xf16, #npu.space<ub>>
        %ya = npu.alloc {offset = 2048} : memref<1024xf16, #npu.space<ub>>
        scf.for %i = %c0 to %c2 step %c1 {
          %t = arith.muli %i, %c1024 : index
          %o = arith.addi %base, %t : index
          npu.copy %x[%o], %xa[%c0] {cols = 1024}                 // MTE2: gm -> ub
          npu.copy %y[%o], %ya[%c0] {cols = 1024}
          npu.set_flag {src = "MTE2", dst = "V", event = 0}      // data in UB ...
          npu.wait_flag {src = "MTE2", dst = "V", event = 0}     // ... before V reads it
          npu.vadd %xa[%c0], %ya[%c0], %xa[%c0] {cols = 1024}    // V
          npu.vrelu %xa[%c0], %xa[%c0] {cols = 1024}
          npu.set_flag {src = "V", dst = "MTE3", event = 0}
          npu.wait_flag {src = "V", dst = "MTE3", event = 0}
          npu.copy %xa[%c0], %z[%o] {cols = 1024}                 // MTE3: ub -> gm
          npu.set_flag {src = "MTE3", dst = "MTE2", event = 0}   // xa may be overwritten
          npu.wait_flag {src = "MTE3", dst = "MTE2", event = 0}
        }
      }
      func.func @main(%x: memref<16384xf16, #npu.space<gm>> {ge.name = "x"},
                      %y: memref<16384xf16, #npu.space<gm>> {ge.name = "y"},
                      %z: memref<16384xf16, #npu.space<gm>> {ge.name = "z", npu.output}) {
        npu.launch @add_relu(%x, %y, %z) {block_dim = 8, stream = 0}
        func.return
      }
    }

The textual form is one for every instruction (`base.py`): operands, then an
attribute dictionary, then a result type if there is one; a buffer operand is
`%memref[%flat_element_offset]`. The ops, by file:

* `memory.py`: `npu.copy` (gm->l1/ub MTE2, l1->ub MTE1, ub->gm/l1 MTE3),
  `npu.load_l0` (l1 -> l0a/l0b, nd or nz, optional transpose; MTE1),
  `npu.fixpipe` (l0c -> gm on FIX, l0c -> ub on V; cast, relu, nd or nz),
  `npu.read_scalar`;
* `cube.py`: `npu.mmad` (M pipe);
* `vector.py`: the V pipe's 2-D ops on UB (`npu.vadd`, `npu.vexp`, `npu.vreduce_max`, ...);
* `sync.py`: `npu.set_flag`, `npu.wait_flag`, `npu.pipe_barrier` (within a core),
  `npu.sync_all` and its halves `npu.sync_all_arrive` / `npu.sync_all_wait` (between the blocks),
  `npu.cross_set_flag` / `npu.cross_wait_flag` (between chosen blocks);
* `structure.py`: `npu.kernel`, `npu.alloc`, `npu.block_idx`, `npu.block_dim`;
* `host.py`: `npu.gm_buffer`, `npu.gm_constant`, `npu.gm_view`, `npu.launch`,
  `npu.record_event`, `npu.wait_event`.

Addressing is always a flat element offset into the buffer plus, per operand, a
2-D pattern from the op's attributes (`access.py`): `rows`, `cols`, one row
stride per buffer operand (`strides`), and for vector sources a column stride
of 0 (broadcast) or 1 (`col_strides`). Each instruction declares its pipe, its
accesses and its numerics (`instruction.py`), which is all the simulator needs.
"""

from xdsl.ir import Dialect

from .access import Fractal, Strided
from .base import ALL_PIPES, PIPES, NpuOp, Space, SpaceAttr, buffer_bytes, memref, space_of
from .cube import CUBE_OPS, MmadOp
from .host import (
    ARENA_ATTR,
    HOST_OPS,
    OUTPUT_ATTR,
    WRITES_ATTR,
    GmBufferOp,
    GmConstantOp,
    GmViewOp,
    LaunchOp,
    RecordEventOp,
    WaitEventOp,
)
from .instruction import Access, InstructionOp
from .memory import COPY_PIPES, MEMORY_OPS, CopyOp, FixpipeOp, LoadL0Op, ReadScalarOp, TransferOp
from .structure import PHASES_ATTR, PIPELINED_ATTR, SOURCES_ATTR, STRUCTURE_OPS, AllocOp, BlockDimOp, BlockIdxOp, KernelOp, ReturnOp
from .sync import SYNC_OPS, CrossSetFlagOp, CrossWaitFlagOp, KernelBarrierOp, PipeBarrierOp, SetFlagOp, SyncAllArriveOp, SyncAllOp, SyncAllWaitOp, WaitFlagOp
from .vector import *  # noqa: F403
from .vector import VECTOR_OPS, VectorOp

NPU_OPS = (*STRUCTURE_OPS, *MEMORY_OPS, *CUBE_OPS, *VECTOR_OPS, *SYNC_OPS, *HOST_OPS)

NPU = Dialect("npu", list(NPU_OPS), [SpaceAttr])

__all__ = [
    "NPU",
    "NPU_OPS",
    "ALL_PIPES",
    "ARENA_ATTR",
    "COPY_PIPES",
    "OUTPUT_ATTR",
    "PHASES_ATTR",
    "PIPELINED_ATTR",
    "SOURCES_ATTR",
    "WRITES_ATTR",
    "PIPES",
    "Access",
    "Fractal",
    "InstructionOp",
    "KernelBarrierOp",
    "NpuOp",
    "Space",
    "SpaceAttr",
    "Strided",
    "TransferOp",
    "VectorOp",
    "buffer_bytes",
    "memref",
    "space_of",
    *(op.__name__ for op in NPU_OPS),
]
