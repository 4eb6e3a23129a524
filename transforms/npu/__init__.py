"""transforms/npu"""
