#!/usr/bin/env bash
# The GPU kit's one command (tests/gpu_kit; make gpu-kit builds the folder this script runs in):
#
#   ./run.sh            on a machine with an NVIDIA driver >= 580 and a Python whose torch brought NCCL
#
# 1. The emulated suite: every GPU test program against the kit's CPU emulation of NCCL and CUDA
#    (RINGMASTER_EMULATED_GPUS=4), the emulation's own tests, and ringmaster-perf's allreduce check on NCCL:
#    evidence that the programs run here, not about NCCL.
# 2. The real suite: the same programs against the machine's NCCL (torch's wheel: found through python3,
#    else RINGMASTER_NCCL_LIBRARY / RINGMASTER_CUDART_LIBRARY, else the CUDA toolkit's libcudart) on its GPUs.
#    Without a GPU every real test is reported "no GPU", neither passed nor failed.
#
# Writes report.md and report.json to $OUT when it is set (the device machine collects $OUT), else to
# ./report next to this script. Exits 1 when a test that ran failed, 0 otherwise. Progress goes to stdout.
set -uo pipefail
kit="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-$kit/report}"
mkdir -p "$out/logs"
start=$SECONDS
say() { printf '[gpu-kit %4ds] %s\n' "$((SECONDS - start))" "$*"; }

export LD_LIBRARY_PATH="$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export RINGMASTER_BIN_DIR="$kit/bin"  # the elastic test starts the kit's ringmaster-run and trainer
# GCC's libstdc++ of the kit, where glibc is new enough for it; an older system uses its own.
glibc="$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')"
needed="$(cat "$kit/lib/toolchain/GLIBC_NEEDED" 2>/dev/null || echo 0)"
if [[ -n "$glibc" && "$(printf '%s\n%s\n' "$needed" "$glibc" | sort -V | head -1)" == "$needed" ]]; then
  LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$kit/lib/toolchain"
  toolchain="the kit's libstdc++ (glibc $glibc)"
else
  toolchain="the system's libstdc++ (glibc ${glibc:-unknown} is older than $needed, which the kit's needs)"
fi

# Results: one line per test, "<phase>\t<name>\t<result>\t<seconds>\t<note>" (result: passed, failed, no-gpu).
results="$out/results.tsv"
: >"$results"
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5:-}" >>"$results"; }

# Runs one gtest program; its per-test outcomes go into the results. A program that dies without a
# verdict for a test (a crash, the timeout) fails the tests it left without one.
run_gtest() {
  local phase="$1" program="$2" log="$out/logs/$1.$2.log"
  shift 2
  local listed t0=$SECONDS
  listed="$(timeout 60 "$kit/bin/$program" --gtest_list_tests 2>/dev/null | awk '/^[^ ]/ {s=$1} /^  / {print s $1}')"
  env "$@" timeout 480 "$kit/bin/$program" --gtest_color=no >"$log" 2>&1
  local code=$?
  local name
  while read -r name; do
    [[ -z "$name" ]] && continue
    local line secs
    line="$(grep -E "^\[ +(OK|FAILED) +\] ${name//\//\\/} \([0-9]+ ms\)" "$log" | tail -1)"
    secs="$(sed -n 's/.*(\([0-9]*\) ms)$/\1/p' <<<"$line")"
    secs="$(awk -v ms="${secs:-0}" 'BEGIN {printf "%.1f", ms / 1000}')"
    if [[ "$line" == *"[       OK ]"* ]]; then
      record "$phase" "$program/$name" passed "$secs"
    elif [[ -n "$line" ]]; then
      record "$phase" "$program/$name" failed "$secs" "see logs/$phase.$program.log"
    else
      record "$phase" "$program/$name" failed "-" "no verdict: the program exited $code (logs/$phase.$program.log)"
    fi
  done <<<"$listed"
  say "$phase: $program done in $((SECONDS - t0))s (exit $code)"
}

# Runs a command as one test.
run_check() {
  local phase="$1" name="$2" log="$out/logs/$1.$2.log"
  shift 2
  local t0=$SECONDS
  if timeout 300 "$@" >"$log" 2>&1; then
    record "$phase" "$name" passed "$((SECONDS - t0))"
  else
    record "$phase" "$name" failed "$((SECONDS - t0))" "exit $? (logs/$phase.$name.log)"
  fi
  say "$phase: $name done in $((SECONDS - t0))s"
}

gpu_programs=(runtime_comm_conformance_nccl_test runtime_nccl_gpu_test runtime_host_beside_nccl_test
              runtime_elastic_gpu_test)
perf_check=(allreduce --backend nccl --min-bytes 1K --max-bytes 4M --check --iters 2)

say "kit: $kit; report: $out; $toolchain"

# 1. Emulated, the programs side by side.
say "emulated: ${#gpu_programs[@]} GPU test programs, the emulation's tests and ringmaster-perf on RINGMASTER_EMULATED_GPUS=4"
emulated=(RINGMASTER_EMULATED_GPUS=4 "RINGMASTER_GPU_EMULATION_LIBRARY=$kit/lib/libringmaster_emulated_gpu.so" NCCL_DEBUG=NONE)
for p in "${gpu_programs[@]}" gpu_emulation_test runtime_nccl_fault_injection_test; do
  run_gtest emulated "$p" "${emulated[@]}" &
done
run_check emulated ringmaster-perf-allreduce-np4 env "${emulated[@]}" "$kit/bin/ringmaster-perf" "${perf_check[@]}" --np 4 &
wait

# 2. Real.
why_no_gpu=""
if [[ ! -e /dev/nvidiactl && ! -e /dev/nvidia0 ]]; then
  why_no_gpu="no /dev/nvidia0 or /dev/nvidiactl on this machine"
elif ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >"$out/logs/nvidia-smi.log" 2>&1; then
  why_no_gpu="nvidia-smi cannot list a GPU (logs/nvidia-smi.log)"
fi
driver="-" gpu_name="-" nccl="-" cudart="-"
if [[ -z "$why_no_gpu" ]]; then
  driver="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
  gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) x $(nvidia-smi -L | wc -l)"
  # torch's NCCL and CUDA runtime, as a PyTorch job would load them.
  if [[ -z "${RINGMASTER_NCCL_LIBRARY:-}" || -z "${RINGMASTER_CUDART_LIBRARY:-}" ]] && command -v python3 >/dev/null; then
    eval "$(python3 - <<'PY' 2>"$out/logs/find-nccl.log"
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
def first(patterns):
    for root in roots:
        for p in patterns:
            hits = sorted(glob.glob(os.path.join(root, p)))
            if hits:
                return hits[-1]
    return ""
print("found_nccl=%r" % first(["nvidia/nccl/lib/libnccl.so.2"]))
print("found_cudart=%r" % first(["nvidia/cu13/lib/libcudart.so.13*", "nvidia/cuda_runtime/lib/libcudart.so.1*"]))
PY
)"
    export RINGMASTER_NCCL_LIBRARY="${RINGMASTER_NCCL_LIBRARY:-${found_nccl:-}}"
    export RINGMASTER_CUDART_LIBRARY="${RINGMASTER_CUDART_LIBRARY:-${found_cudart:-}}"
  fi
  if [[ -z "${RINGMASTER_CUDART_LIBRARY:-}" ]]; then
    toolkit="$(ls /usr/local/cuda/lib64/libcudart.so.13* 2>/dev/null | head -1)"
    [[ -n "$toolkit" ]] && export RINGMASTER_CUDART_LIBRARY="$toolkit"
  fi
  nccl="${RINGMASTER_NCCL_LIBRARY:-the linker's libnccl.so.2}"
  cudart="${RINGMASTER_CUDART_LIBRARY:-the linker's libcudart.so}"
  say "real: $gpu_name, driver $driver; NCCL $nccl; CUDA runtime $cudart"
  # One GPU serves several ranks (NCCL >= 2.30 allows it with this; the tests set it themselves too).
  for p in "${gpu_programs[@]}" runtime_gpu_telemetry_gpu_test; do
    run_gtest real "$p" NCCL_MULTI_RANK_GPU_ENABLE=1
  done
  run_check real ringmaster-perf-allreduce-np2 env NCCL_MULTI_RANK_GPU_ENABLE=1 "$kit/bin/ringmaster-perf" "${perf_check[@]}" --np 2
else
  say "real: $why_no_gpu: every real GPU test is reported as no GPU"
  for p in "${gpu_programs[@]}" runtime_gpu_telemetry_gpu_test; do
    timeout 60 "$kit/bin/$p" --gtest_list_tests 2>"$out/logs/list.$p.log" | awk '/^[^ ]/ {s=$1} /^  / {print s $1}' |
      while read -r name; do record real "$p/$name" no-gpu - "$why_no_gpu"; done
  done
  record real ringmaster-perf-allreduce-np2 no-gpu - "$why_no_gpu"
fi

# The report.
count() { awk -F'\t' -v p="$1" -v r="$2" '$1 == p && $3 == r' "$results" | wc -l; }
summary=""
for phase in emulated real; do
  summary+="$phase: $(count "$phase" passed) passed, $(count "$phase" failed) failed, $(count "$phase" no-gpu) no GPU. "
done
{
  echo "# Ringmaster GPU kit report"
  echo
  echo "- when: $(date -u +%Y-%m-%dT%H:%M:%SZ), $((SECONDS - start)) s; host $(hostname), $(nproc) cores, glibc ${glibc:-unknown}; $toolchain"
  echo "- GPU: $gpu_name; driver $driver${why_no_gpu:+ ($why_no_gpu)}"
  echo "- NCCL: $nccl; CUDA runtime: $cudart"
  echo "- kit: $(sed -n 's/^commit: //p' "$kit/MANIFEST" 2>/dev/null)"
  echo "- $summary"
  echo
  echo "| phase | test | result | seconds | note |"
  echo "|---|---|---|---|---|"
  awk -F'\t' '{printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5}' "$results"
} >"$out/report.md"
{
  printf '{"summary": "%s", "gpu": "%s", "driver": "%s", "nccl": "%s", "cudart": "%s", "tests": [' \
    "$summary" "$gpu_name" "$driver" "$nccl" "$cudart"
  awk -F'\t' 'BEGIN {sep=""} {gsub(/"/, "\\\"", $5); printf "%s{\"phase\": \"%s\", \"name\": \"%s\", \"result\": \"%s\", \"seconds\": \"%s\", \"note\": \"%s\"}", sep, $1, $2, $3, $4, $5; sep=", "}' "$results"
  echo ']}'
} >"$out/report.json"
say "$summary"
say "report: $out/report.md"
[[ "$(count emulated failed)" -eq 0 && "$(count real failed)" -eq 0 ]]
