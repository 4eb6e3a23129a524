"""The three dialects: `ge` (graph), `fused` (fused ops), `npu` (hardware instructions)."""
