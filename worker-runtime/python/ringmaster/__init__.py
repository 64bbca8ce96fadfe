"""Ringmaster's worker runtime for Python.

`ringmaster.torch` is the Horovod-style API (`import ringmaster.torch as hvd`), `ringmaster.torch.elastic`
its elastic training loop, and `ringmaster.distributed` the `"ringmaster"` backend of torch.distributed.
The native core is `ringmaster._native` (a nanobind module; tensors cross by DLPack).
"""

from pkgutil import extend_path

# In a development build the native module lives in the build tree (build/python/ringmaster/) while this
# file stays in the source tree; both directories are on the venv's path and form one package.
__path__ = extend_path(__path__, __name__)

__version__ = "0.1.0"
