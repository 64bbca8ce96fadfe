#!/usr/bin/env bash
# make gpu-carry: the GPU kit for a machine that takes at most 64 MiB of files, with this build's NCCL:
#
#   make_carry.sh BUILD_DIR OUT_DIR [SM...]     (SM: the architectures to keep, default 90: H100, H200)
#
# OUT_DIR gets
#   kit.tar.gz       BUILD_DIR/gpu-kit (make gpu-kit), compressed: about 9.5 MB
#   libnccl.so.2.gz  BUILD_DIR/deps/cuda/lib/libnccl.so.2 (the NCCL the build compiled against, 2.30.7) with the
#                    device code of every other architecture zeroed (prune_nccl.py): about 47 MB
#   run.sh           run_carried.sh: unpacks both, runs the kit against that NCCL, packs the report
# Why: two ranks on one GPU need NCCL >= 2.30 (NCCL_MULTI_RANK_GPU_ENABLE=1), and a one-GPU machine's torch may
# bring an older one (torch 2.11's is 2.28.9), which fails every multi-rank test with "Duplicate GPU detected".
# Fails above 60 MiB (the machine's 64 MiB holds the checkout too).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[[ $# -ge 2 ]] || { echo "usage: $0 BUILD_DIR OUT_DIR [SM...]" >&2; exit 2; }
build="$1" out="$2"; shift 2
keep=()
for sm in "${@:-90}"; do keep+=(--keep "$sm"); done
nccl="$build/deps/cuda/lib/libnccl.so.2"
[[ -d "$build/gpu-kit" ]] || { echo "make_carry: $build/gpu-kit is missing: run make gpu-kit" >&2; exit 1; }
[[ -f "$nccl" ]] || { echo "make_carry: $nccl is missing: run make deps" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"
echo "gpu-carry: pruning $nccl to sm ${*:-90}"
python3 "$here/prune_nccl.py" "$nccl" "$out/libnccl.so.2" "${keep[@]}"
echo "gpu-carry: compressing NCCL and the kit"
gzip -6 "$out/libnccl.so.2"
tar czf "$out/kit.tar.gz" -C "$build" gpu-kit
install -m 755 "$here/run_carried.sh" "$out/run.sh"
mib=$(( $(du -sb "$out" | cut -f1) / 1024 / 1024 ))
((mib <= 60)) || { echo "make_carry: $out is $mib MiB, over 60" >&2; exit 1; }
echo "gpu-carry: $out: $mib MiB; on the GPU machine: bash $out/run.sh (the report lands in \$OUT)"
