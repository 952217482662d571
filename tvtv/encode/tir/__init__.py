"""The TIR PrimFunc encoder: loops and SBlocks become lambda-built tensors and reductions."""
from tvtv.encode.tir.interpreter import PrimFuncEncoder, encode_prim_func, encode_prim_func_in_place

__all__ = ["PrimFuncEncoder", "encode_prim_func", "encode_prim_func_in_place"]
