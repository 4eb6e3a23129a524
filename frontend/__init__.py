"""Ways into the compiler: ONNX models (binary and textual) and Python.

* `importer.py`: an ONNX graph -> a ge module (`ge-translate`), one converter per
  op in `converters/`;
* `onnx_model.py`: the ONNX model as plain data, which both readers produce:
  `onnx_proto.py` (binary `.onnx`, through the onnx package) and `onnxtxt.py` +
  `onnxtxt.lark` (the ONNX textual syntax, through lark);
* `builder.py` + `ops.py`: building ge graphs in Python (`GraphBuilder`);
* `conformance.py`: ONNX's node test cases through the importer and a backend.
"""
