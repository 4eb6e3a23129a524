"""Passes that cut a graph over many devices (ge-partition) and their layout rules."""
