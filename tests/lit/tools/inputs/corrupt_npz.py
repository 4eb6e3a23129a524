"""Writes intact.npz (x: 2x3 f32) and three corrupt copies into the directory
argv[1]: truncated.npz (its second half cut), crc.npz (one data byte flipped:
a bad CRC) and member.npz (a member x.npy without the .npy magic)."""

import sys
import zipfile
from pathlib import Path

import numpy as np

out = Path(sys.argv[1])
np.savez(out / "intact.npz", x=np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))
data = (out / "intact.npz").read_bytes()
(out / "truncated.npz").write_bytes(data[: len(data) // 2])
flipped = bytearray(data)
flipped[data.index(b"\x93NUMPY") + 100] ^= 0xFF  # inside x's values (a stored, uncompressed member)
(out / "crc.npz").write_bytes(bytes(flipped))
with zipfile.ZipFile(out / "member.npz", "w") as z:
    z.writestr("x.npy", b"not an npy array")
