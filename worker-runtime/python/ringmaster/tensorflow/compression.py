"""Gradient compression for allreduce (Horovod's `Compression.none` and `Compression.fp16`), as TF ops."""

import tensorflow as tf

from ringmaster._compression import Compressor, NoneCompressor


class FP16Compressor(Compressor):
    """Floating-point tensors travel as float16 and come back in their own dtype; others travel unchanged."""

    @staticmethod
    def compress(tensor):
        dtype = tensor.dtype
        if dtype.is_floating and dtype != tf.float16:
            return tf.cast(tensor, tf.float16), dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tf.cast(tensor, ctx) if ctx is not None else tensor


class Compression:
    """The compression algorithms `compression=` takes."""

    none = NoneCompressor
    fp16 = FP16Compressor
