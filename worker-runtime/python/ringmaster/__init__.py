"""Ringmaster's worker runtime for Python.

`ringmaster.torch` is the Horovod-style API for PyTorch (`import ringmaster.torch as hvd`), with
`ringmaster.torch.elastic` its elastic training loop and `ringmaster.distributed` the `"ringmaster"` backend
of torch.distributed; `ringmaster.tensorflow` and `ringmaster.keras` are Horovod's TensorFlow and Keras API.
The native core is `ringmaster._native` (a nanobind module; tensors cross by DLPack).
"""

import os
import sys
from pkgutil import extend_path

# In a development build the native module lives in the build tree (build/python/ringmaster/) while this
# file stays in the source tree; both directories are on the venv's path and form one package.
__path__ = extend_path(__path__, __name__)

__version__ = "0.1.0"


def _load_native():
    """Imports the native module with RTLD_DEEPBIND: its libraries (cpprestsdk and the OpenSSL it talks TLS to
    the Kubernetes API with) bind to each other before anything the process loaded earlier. TensorFlow's
    libtensorflow_framework.so.2 exports BoringSSL under OpenSSL's names (SSL_CTX_new, SSL_connect, ...);
    loaded first, it would take those calls, and a worker in a pod crashed at its first HTTPS request."""
    flags = sys.getdlopenflags()
    sys.setdlopenflags(flags | os.RTLD_DEEPBIND)
    try:
        from . import _native  # noqa: F401
    except ImportError:
        pass  # not built (a source checkout before `make build`): the modules that need it say so
    finally:
        sys.setdlopenflags(flags)


_load_native()
