"""Arrays from the .npy / .npz files a command line names (`ge-sim --inputs`,
`ge-translate --bind` / `--bind-npz`).

An .npz archive is read whole here, member by member, because numpy reads
members lazily and a corrupt archive (truncated, a bad CRC, a member that is
no .npy array) otherwise fails halfway through the caller with a zipfile or
zlib traceback, or hands back raw bytes where an array was expected. Every
such failure becomes one `CorruptArchive` whose text the caller puts in its
one-line error.
"""

from __future__ import annotations

import zipfile
import zlib

import numpy as np


class CorruptArchive(ValueError):
    """An .npz archive that cannot be read whole; the text says why."""


def load_array_file(path: str) -> np.ndarray | dict[str, np.ndarray]:
    """The array of an .npy file, or {name: array} of an .npz archive.

    Raises OSError if the file cannot be opened, CorruptArchive for a damaged
    archive, and ValueError for a file that is neither (numpy's reason)."""
    try:
        loaded = np.load(path, allow_pickle=False)
    except (zipfile.BadZipFile, EOFError) as e:
        raise CorruptArchive(_first_line(e)) from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        return loaded
    arrays: dict[str, np.ndarray] = {}
    with loaded:
        for name in loaded.files:
            arrays[name] = _member(loaded, name)
    return arrays


def _member(archive: np.lib.npyio.NpzFile, name: str) -> np.ndarray:
    try:
        value = archive[name]
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as e:
        raise CorruptArchive(f"member '{name}': {_first_line(e)}") from None
    if not isinstance(value, np.ndarray):  # numpy returns a member without the .npy magic as bytes
        raise CorruptArchive(f"member '{name}' is not an .npy array")
    return value


def _first_line(e: BaseException) -> str:
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[0] if lines else type(e).__name__


__all__ = ["CorruptArchive", "load_array_file"]
