"""The lark reader of the ONNX textual syntax against onnx.parser: every .onnxtxt
file of the tests and examples, and the syntax's corners, read into the same
graph; errors located at line:column; no onnx package needed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gecomp.core.diagnostics import CompileError
from gecomp.frontend.onnxtxt import parse_onnxtxt

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(
    [*ROOT.glob("tests/**/*.onnxtxt"), *ROOT.glob("examples/*.onnxtxt")],
    key=lambda p: str(p),
)
FILES = [p for p in FILES if "Output" not in p.parts]


def onnx_reading(text: str):
    """The model as onnx.parser reads it, in our form (None if onnx.parser rejects it)."""
    onnx_parser = pytest.importorskip("onnx.parser")
    from gecomp.frontend.onnx_proto import model_as_read

    try:
        proto = onnx_parser.parse_model(text)
    except Exception:  # noqa: BLE001 - onnx.parser raises a bare parse error
        return None
    return model_as_read(proto)


def assert_same_as_onnx(text: str) -> None:
    expected = onnx_reading(text)
    if expected is None:
        with pytest.raises(CompileError):
            parse_onnxtxt(text, "t.onnxtxt")
        return
    assert parse_onnxtxt(text, "t.onnxtxt") == expected


def test_there_are_files():
    assert len(FILES) >= 10
    assert any(p.parent.name == "examples" for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_file_reads_as_onnx_parser_reads_it(path: Path):
    assert_same_as_onnx(path.read_text())


HEADER = '<ir_version: 8, opset_import: ["" : 17, "com.example" : 1]>\n'

CORNERS = {
    "names and lists": 'g (float[2] X) => (float[2] Y) { Y, = Identity(X,) }',
    "empty entries": 'g (float[2] X) => (float[2] Y) { Y = Clip(X, , ) }',
    "leading empty": 'g (float[2] X) => (float[2] Y) { , Y = Op(, X) }',
    "no outputs, no inputs": 'g (float[2] X) => (float[2] X) { = Op() }',
    "quoted names": 'g (float[2] "a b") => (float[2] "c\\"d") { "c\\"d" = Relu("a b") }',
    "labels and domains": 'g (float[2] X) => (float[2] Y) { [n1] T = com.example.Op(X) [] Y = ai.onnx.Relu(T) }',
    "attributes after inputs": 'g (float[2, 3] X) => (float[3, 2] Y) { Y = Transpose(X) <perm = [1, 0]> }',
    "attribute kinds": (
        'g (float[2] X) => (float[2] Y) { Y = Op <i = -3, f = 2.5, e = 1e-5, s = "x\\ny", '
        'ints = [1, -2], floats = [0.5, 1], strs = ["a", "b"], annotated: float = 2, '
        'empty: ints = [], t = float[2] {1.5, -2}, named = int64[1] nm = {7}, tp = float[3], '
        'scalar_type = int64, nan = nan, neg = -inf, big = INF, ref: int = @outer> (X) }'
    ),
    "graph attribute": 'g (bool c, float[2] X) => (float[2] Y) { Y = If(c) <then_branch = t () => (float[2] X) { }, else_branch = e () => (float[2] X) { }> }',
    "types": (
        'g (float s, float[] u, float[?, N, "M", 3] d, double dd, seq(float[2]) q, '
        'optional(int64[2]) o, map(int64, float) m, sparse_tensor(float[2]) sp, bfloat16[2] bf) '
        '=> (Y) { Y = Relu(s) }'
    ),
    "initializers": (
        'g (float[2] X, float[2] W = {1, 2.5}) => (float[2] Y) '
        '<float[2, 2] A = {1, 2, 3, 4}, int64[3] I = {-1, 0, 9223372036854775807}, '
        'float16[2] H = {15360, 48128}, bool[3] B = {1, 0, 5}, double[1] D = {1e-300}, '
        'int8[2] C = {-128, 127}, uint64[1] U = {18446744073709551615}, float[2] vi, '
        'float[2] F = {inf, -nan}, float Z = {3}, int32[0] E = {}> '
        '{ Y = Add(X, W) }'
    ),
    "comments": 'g (float[2] X) # the input\n => (float[2] Y) # the output\n { # nodes\n Y = Relu(X) # relu\n }',
    "functions": (
        'g (float[2] X) => (float[2] Y) { Y = com.example.Square(X) }\n'
        '<domain: "com.example", opset_import: ["" : 17]> Square <alpha, beta = 2> (x) => (y) '
        '{ y = Mul(x, x) }'
    ),
}


@pytest.mark.parametrize("text", list(CORNERS.values()), ids=list(CORNERS))
def test_corner_reads_as_onnx_parser_reads_it(text: str):
    assert_same_as_onnx(HEADER + text)


def test_model_properties():
    text = '<ir_version: 9, opset_import: ["" : 18], producer_name: "me", model_version: 3, doc_string: "d", metadata_props: ["k" : "v"]>\ng (float X) => (float X) { }'
    model = parse_onnxtxt(text)
    assert model.ir_version == 9 and model.opset("") == 18 and model.opset("ai.onnx") == 18
    assert_same_as_onnx(text)


def test_values_and_locations():
    model = parse_onnxtxt(HEADER + CORNERS["initializers"], "m.onnxtxt")
    values = {t.name: t.array for t in model.graph.initializers}
    assert values["H"].tolist() == [1.0, -1.0]  # float16 literals are bit patterns
    assert values["B"].tolist() == [True, False, True]
    assert values["I"][2] == 2**63 - 1
    assert values["A"].shape == (2, 2) and values["Z"].shape == ()
    node = model.graph.nodes[0]
    assert (node.location.file, node.location.line) == ("m.onnxtxt", 2)
    assert model.graph.inputs[1].location.col == 16


SYNTAX_ERRORS = [
    ("g (float[2] X) => (float[2] Y) {\n  Y = Relu(X\n}", "3:1", "expected one of ')', ','"),
    ("g (float[2] X) => (float[2] Y) {\n  Y = Relu(X) <axis 1>\n}", "2:21", "expected one of ':', '=', got '1'"),
    ("g (float[2] X) => (float[2] Y) {\n  Y = Relu(X)", "2:14", "unexpected end of file"),
    ("g (float[2] X) => (float[2] Y) {\n  Y = Relu(X) $\n}", "2:15", "unexpected character '$'"),
    ("g (floot[2] X) => (float[2] Y) { Y = Relu(X) }", "1:4", "unknown element type 'floot'"),
    ("g (float[3] X = {1, 2}) => (float[3] Y) { Y = Relu(X) }", "1:4", "needs 3 values, got 2"),
    ("g (int32[2] X = {1, 2.5}) => (int32[2] Y) { Y = Relu(X) }", "1:4", "values are written as integers"),
    ("g (float[2] X) => (float[2] Y) { Y = Op <e = []> (X) }", "1:42", "an empty list needs a type annotation"),
    ("g (float[2] X) => (float[2] Y) { Y = Op <e: float = \"s\"> (X) }", "1:42", "attribute 'e': expected a float value, got a string"),
    ("g (float[2] X) => (float[2] Y) { Y = Op <e = [1, 0.5]> (X) }", "1:42", "expected an int value, got a float"),
    ("g (float[2] X) => (float[2] Y) { Y = Op <e = -foo> (X) }", "1:47", "expected a number after '-'"),
    ('<ir_version: "x">\ng (float X) => (float X) { }', "1:2", "'ir_version' must be an integer"),
    ('<colour: 1>\ng (float X) => (float X) { }', "1:2", "unknown model property 'colour'"),
]


@pytest.mark.parametrize("text, where, message", SYNTAX_ERRORS, ids=[m for _, _, m in SYNTAX_ERRORS])
def test_errors_are_located(text: str, where: str, message: str):
    with pytest.raises(CompileError) as info:
        parse_onnxtxt(text, "bad.onnxtxt")
    assert str(info.value).startswith(f"bad.onnxtxt:{where}: error: ")
    assert message in info.value.message


def test_works_without_the_onnx_package(tmp_path):
    """The textual path never imports onnx (made unimportable here); a binary .onnx
    says how to get it."""
    code = (
        "import sys; sys.modules['onnx'] = None\n"
        "from gecomp.frontend.importer import translate_file\n"
        "from gecomp.core.diagnostics import CompileError\n"
        "translate_file(sys.argv[1], {'N': 2})\n"
        "try:\n"
        "    translate_file(sys.argv[2])\n"
        "except CompileError as e:\n"
        "    print(e.message)\n"
    )
    binary = tmp_path / "model.onnx"
    binary.write_bytes(b"not read")
    done = subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "examples" / "classifier.onnxtxt"), str(binary)],
        capture_output=True, text=True, check=True,
    )
    assert "reading binary .onnx files needs the onnx package" in done.stdout
