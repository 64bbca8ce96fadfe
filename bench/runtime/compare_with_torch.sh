#!/usr/bin/env bash
# Runs ringmaster-perf and torch.distributed (Gloo) on the same machine in one go, for 2 and 4 ranks:
# allreduce busbw at 1 MiB, 64 MiB, 256 MiB, and 1,000 x 4 KiB tensors fused vs unfused (torch: one
# allreduce per tensor). Ours runs in place, like torch. Needs a Python with torch: PYTHON=/path/to/venv/bin/python.
#   bench/runtime/compare_with_torch.sh [build-dir]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build}"
perf="$build/bin/ringmaster-perf"
python="${PYTHON:-python3}"
for np in 2 4; do
  echo "=== $np ranks ==="
  for size in 1M 64M 256M; do
    "$perf" allreduce --np "$np" --backend gloo --min-bytes "$size" --max-bytes "$size" --in-place --check | grep -v '^# all'
  done
  "$perf" fusion --np "$np" --backend gloo --tensors 1000 --tensor-bytes 4K --iters 3 --check
  "$python" "$here/torch_gloo_bench.py" --np "$np" --sizes 1M,64M,256M --tensors 1000 --tensor-bytes 4K
done
