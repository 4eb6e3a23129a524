"""Command-line entry points (thin: argument parsing, then library calls)."""
