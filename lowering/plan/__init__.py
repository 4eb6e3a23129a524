"""The whole-graph execution plan: where GM buffers live, which stream runs what."""
