"""Lists the ge ops that lack a round-trip test or a verifier test under a lit tree.

A round-trip test is a .mlir file whose RUN lines use `--print-op-generic`; a
verifier test one whose RUN lines use `--verify-diagnostics`. An op counts as
covered by a file when the file writes it (custom or generic form) outside a
comment. Exit code 1 when some op is missing, so a new op cannot land untested.
"""

import re
import sys
from pathlib import Path

from gecomp.dialects.ge import GE_OPS

_OP_USE = re.compile(r"=\s*\"?(ge\.\w+)\b")


def ops_written(text: str) -> set[str]:
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    return set(_OP_USE.findall(code))


def main(root: Path) -> int:
    roundtrip: set[str] = set()
    verifier: set[str] = set()
    for path in sorted(root.rglob("*.mlir")):
        if "Output" in path.parts:
            continue
        text = path.read_text()
        run_lines = " ".join(line for line in text.splitlines() if "RUN:" in line)
        if "--print-op-generic" in run_lines:
            roundtrip |= ops_written(text)
        if "--verify-diagnostics" in run_lines:
            verifier |= ops_written(text)
    missing = 0
    for op in GE_OPS:
        for kind, covered in (("round-trip", roundtrip), ("verifier", verifier)):
            if op.name not in covered:
                print(f"missing {kind} test: {op.name}")
                missing += 1
    print(f"{len(GE_OPS)} ge ops, {missing} missing tests")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
