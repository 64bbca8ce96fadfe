"""The framework-neutral part of gradient compression (Horovod's Compressor and NoneCompressor): each
framework's compression module adds its own FP16Compressor and the `Compression` namespace."""


class Compressor:
    """Turns a tensor into what travels (`compress`, which also returns what `decompress` needs) and back."""

    @staticmethod
    def compress(tensor):
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError


class NoneCompressor(Compressor):
    """Sends the tensor as it is (the default)."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor
