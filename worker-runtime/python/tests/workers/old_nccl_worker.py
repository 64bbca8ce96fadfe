"""A rank whose process loaded an old NCCL (argv[1]: a libnccl.so.2 without ncclCommShrink/ncclCommRevoke)
before ringmaster: the native module must import, see that NCCL, and still run a CPU job. No torch: the
NCCL loaded here is the only one. Prints one line per rank; exits 1 with the first thing that is wrong."""

import ctypes
import os
import sys

ctypes.CDLL(sys.argv[1], mode=os.RTLD_GLOBAL)  # this process's libnccl.so.2, loaded before ringmaster

import numpy as np  # noqa: E402

from ringmaster import _native  # noqa: E402


def main():
    info = _native.nccl_info()
    if info.get("version") != "2.21.5" or info["shrink"] or info["revoke"]:
        sys.exit(f"the NCCL the runtime sees is not the old one loaded first: {info}")
    session = _native.Session()
    session.start()
    rank, size = session.topology()["rank"], session.topology()["size"]
    x = np.full(1000, rank + 1, dtype=np.float32)
    out = np.empty_like(x)
    session.allreduce("x", x, out, _native.SUM, 0, 0).wait()
    want = size * (size + 1) / 2
    if not np.all(out == want):
        sys.exit(f"rank {rank}: allreduce gave {out[:3]}, want {want}")
    print(
        f"rank {rank}: NCCL {info['version']} without Shrink/Revoke, backend {session.backend()}, allreduce correct",
        flush=True,
    )
    session.finish()


if __name__ == "__main__":
    main()
