"""transforms/graph"""
