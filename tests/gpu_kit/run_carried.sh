#!/usr/bin/env bash
# The GPU kit from make gpu-carry's folder (make_carry.sh), on a GPU machine:
#
#   OUT=/where/the/report/goes bash run.sh
#
# Unpacks the kit and its pruned NCCL into a scratch folder, runs the kit's run.sh --require-gpu with
# RINGMASTER_NCCL_LIBRARY set to that NCCL, and leaves in $OUT (default: report/ beside this script) no more
# than five files: report.md, report.json, console.log, logs.tgz (the kit's logs/ and results/), and
# machine.txt (Python, torch and its NCCL, nvidia-smi). Exits with the kit's status.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${OUT:-$here/report}"
mkdir -p "$out" || exit 2
scratch="$(mktemp -d "${TMPDIR:-/tmp}/ringmaster-gpu-carry.XXXXXX")" || exit 2
trap 'rm -rf "$scratch"' EXIT
gzip -dc "$here/libnccl.so.2.gz" >"$scratch/libnccl.so.2" && tar xzf "$here/kit.tar.gz" -C "$scratch" \
  || { echo "run.sh: cannot unpack into $scratch" >&2; exit 2; }
{
  python3 -c 'import sys, torch; print("python", sys.version.split()[0]); print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' 2>&1
  nvidia-smi 2>&1
} >"$out/machine.txt"
RINGMASTER_NCCL_LIBRARY="$scratch/libnccl.so.2" OUT="$scratch/report" bash "$scratch/gpu-kit/run.sh" --require-gpu 2>&1 \
  | tee "$out/console.log"
status=${PIPESTATUS[0]}
cp "$scratch/report/report.md" "$scratch/report/report.json" "$out/" 2>/dev/null
tar czf "$out/logs.tgz" -C "$scratch/report" logs results 2>/dev/null
echo "run.sh: the report is in $out (report.md, report.json, console.log, logs.tgz, machine.txt)"
exit "$status"
