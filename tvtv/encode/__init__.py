"""Relax and TIR encoders: tensors, reductions, the op registry, functions."""
