"""Infrastructure shared by every level: element types, diagnostics, parsing with
source locations, the pass registry and the pass runner."""
