#!/usr/bin/env bash
# The GPU kit's one command (tests/gpu_kit/README.md; `make gpu-kit` builds the folder it runs in):
#
#   ./run.sh [--require-gpu]
#
# on a machine with an NVIDIA driver >= 580 and a Python whose torch brought NCCL (no build tree, no
# network). Every gtest test runs in a process of its own, as ctest runs it, under `timeout`:
#
# 1. Emulated: the programs of the ctest label gpu-emulated against the kit's CPU emulation of NCCL and
#    CUDA (RINGMASTER_EMULATED_GPUS=4), and ringmaster-perf's collective checks on it. Evidence that the
#    kit runs on this machine, none about NCCL.
# 2. Real: the programs of the ctest label gpu on this machine's GPUs, with the NCCL and CUDA runtime of
#    torch's wheels (found through python3; RINGMASTER_NCCL_LIBRARY / RINGMASTER_CUDART_LIBRARY, set
#    before, win; else the CUDA toolkit's libcudart), and ringmaster-perf's checks with two ranks. Without
#    a GPU (no /dev/nvidia0, nvidia-smi fails, no libcuda.so.1) every real test is reported "no-gpu" with
#    the reason: neither passed nor failed. --require-gpu (or RINGMASTER_KIT_REQUIRE_GPU=1) makes that a
#    failure, for a machine that is meant to have one.
#
# Writes report.md, report.json and logs/ to $OUT when it is set (the device machine collects $OUT), else
# to report/ next to this script; prints progress as it goes. Exit status: 0 when every test that ran
# passed, 1 when one failed or skipped (a skip is not a pass), 2 when the kit cannot run here at all.
#
# Knobs: RINGMASTER_KIT_DEADLINE_S (540: the whole run, under the GPU machine's 10 minutes a command; a
# test that cannot start in time fails as "not started"), RINGMASTER_KIT_TEST_TIMEOUT_S (150: one test),
# RINGMASTER_KIT_JOBS (emulated tests at a time: the cores, 4 to 8), RINGMASTER_KIT_REAL_JOBS (2: tests
# sharing the GPUs at a time; 1 rules contention out), RINGMASTER_KIT_PYTHON (python3).

# Not -e: tests fail here by design, and each step records its own outcome.
set -uo pipefail

kit="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
require_gpu="${RINGMASTER_KIT_REQUIRE_GPU:-0}"
for arg in "$@"; do
  case "$arg" in
    --require-gpu) require_gpu=1 ;;
    -h|--help) sed -n '2,/^# Not -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument '$arg' (run.sh --help)" >&2; exit 2 ;;
  esac
done

out="${OUT:-$kit/report}"
cores="$(nproc 2>/dev/null || echo 2)"
deadline_s="${RINGMASTER_KIT_DEADLINE_S:-540}"
test_timeout_s="${RINGMASTER_KIT_TEST_TIMEOUT_S:-150}"
# Emulated tests mostly wait (a timeout, a late rank), so more run at once than there are cores.
emulated_jobs="${RINGMASTER_KIT_JOBS:-$((cores < 4 ? 4 : cores > 8 ? 8 : cores))}"
real_jobs="${RINGMASTER_KIT_REAL_JOBS:-2}"
python="${RINGMASTER_KIT_PYTHON:-python3}"
emulated_gpus=4  # as the ctest label gpu-emulated runs them (EMULATED_GPUS 4 in worker-runtime/CMakeLists.txt)
for knob in deadline_s test_timeout_s emulated_jobs real_jobs; do
  [[ "${!knob}" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: $knob must be a positive number, not '${!knob}'" >&2; exit 2; }
done

mkdir -p "$out" || { echo "run.sh: cannot create $out (set OUT to a folder you can write)" >&2; exit 2; }
out="$(cd "$out" && pwd)"
rm -rf "$out/logs" "$out/results" "$out/report.md" "$out/report.json"
mkdir -p "$out/logs" "$out/results"
work="$(mktemp -d "${TMPDIR:-/tmp}/ringmaster-gpu-kit.XXXXXX")" || { echo "run.sh: cannot make a scratch folder in ${TMPDIR:-/tmp}" >&2; exit 2; }
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 2

start=$SECONDS
say() { printf '[gpu-kit %4ds] %s\n' "$((SECONDS - start))" "$*"; }

# What the report says about the machine; filled in as the run learns it.
glibc="-" toolchain="-" gpu_name="none" driver="-" driver_cuda="-" why_no_gpu="" gpu_broken=0
lookup="-" nccl_path="" nccl_how="-" nccl_version="-" nccl_code="" cudart_path="" cudart_how="-" cudart_version="-"

# --- Results -----------------------------------------------------------------------------------------
# One file per row, named by its order, so rows written by tests running side by side land in order:
# "phase<TAB>test<TAB>result<TAB>seconds<TAB>note"; result: passed, failed, skipped, no-gpu, not-in-kit.
seq=0
next_seq() { seq=$((seq + 1)); }
record() {  # SEQ PHASE TEST RESULT SECONDS NOTE
  local note="${6:-}"
  note="$(printf '%s' "$note" | tr '\t\n\r' '   ' | tr -cd '[:print:]' | cut -c1-300)"
  printf '%s\t%s\t%s\t%s\t%s\n' "$2" "$3" "$4" "$5" "$note" >"$out/results/$(printf '%05d' "$1").tsv"
}
rows() { cat "$out"/results/*.tsv 2>/dev/null; }
count() { rows | awk -F'\t' -v p="$1" -v r="$2" '$1 == p && $3 == r {n++} END {print n + 0}'; }

version_ge() { [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" == "$2" ]]; }  # A >= B
nccl_text() { printf '%d.%d.%d' "$(($1 / 10000))" "$(($1 % 10000 / 100))" "$(($1 % 100))"; }  # 22809 -> 2.28.9
md() { printf '%s' "$1" | sed 's/|/\\|/g'; }
json() {  # a JSON string
  local s="$1"
  s="${s//\\/\\\\}"; s="${s//\"/\\\"}"; s="${s//$'\t'/\\t}"; s="${s//$'\n'/\\n}"; s="${s//$'\r'/}"
  printf '"%s"' "$s"
}
# The "# gpu libraries:" line ringmaster-perf printed in a phase: the NCCL and CUDA runtime its ranks loaded.
loaded_libraries() {
  local line
  line="$(cat "$out/logs/$1/ringmaster-perf/"*.log 2>/dev/null | grep -m1 '^# gpu libraries:' | sed 's/^# gpu libraries: //')"
  printf '%s' "${line:--}"
}
# Which of the NCCL features the code gates on (kit.env, from worker-runtime/nccl/nccl_version.h) a version code has.
gates_text() {
  local code="$1" g text=""
  for g in ${KIT_NCCL_GATES:-}; do
    if [[ -z "$code" ]]; then text+="${g%%:*} >= $(nccl_text "${g#*:}"), "
    elif ((code >= ${g#*:})); then text+="${g%%:*} >= $(nccl_text "${g#*:}"): yes, "
    else text+="${g%%:*} >= $(nccl_text "${g#*:}"): NO, "
    fi
  done
  printf '%s' "${text%, }"
}

write_report() {
  local phase r verdict failed summary="" elapsed=$((SECONDS - start))
  failed=$(($(count preflight failed) + $(count emulated failed) + $(count emulated skipped) + $(count real failed) + $(count real skipped)))
  for phase in emulated real; do
    local parts=""
    for r in passed failed skipped no-gpu not-in-kit; do
      local n; n="$(count "$phase" "$r")"
      ((n > 0)) && parts+="$n $r, "
    done
    summary+="$phase: ${parts:-nothing ran, }"
    summary="${summary%, }; "
  done
  summary="${summary%; }"
  if ((failed > 0)); then verdict="FAILED ($failed failed or skipped)"; else verdict="PASSED (every test that ran passed)"; fi
  local os; os="$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-}")"
  local used_emulated used_real gates
  used_emulated="$(loaded_libraries emulated)" used_real="$(loaded_libraries real)"
  local real_code="$nccl_code"
  if [[ -z "$real_code" && "$used_real" =~ NCCL\ ([0-9]+)\.([0-9]+)\.([0-9]+) ]]; then
    real_code=$((BASH_REMATCH[1] * 10000 + BASH_REMATCH[2] * 100 + BASH_REMATCH[3]))
  fi
  gates="$(gates_text "$real_code")"
  {
    echo "# Ringmaster GPU kit report"
    echo
    echo "**$verdict** -- $summary"
    echo
    echo "- when: $(date -u +%Y-%m-%dT%H:%M:%SZ), $elapsed s"
    echo "- machine: $(uname -n), $cores cores, ${os:-unknown OS}, glibc $glibc; libstdc++: $toolchain"
    echo "- kit: commit ${KIT_COMMIT:-unknown}, built ${KIT_BUILT:-?}; needs GLIBC_${KIT_GLIBC_FLOOR:-?} and GLIBCXX_${KIT_GLIBCXX:-?}"
    echo "- GPU: $(md "${gpu_name}")${why_no_gpu:+ -- no GPU: $(md "$why_no_gpu")}"
    if [[ "$driver" == - ]]; then echo "- driver: not read (no usable GPU)"; else echo "- driver: $driver (nvidia-smi; CUDA $driver_cuda)"; fi
    echo "- NCCL lookup: $(md "$lookup")"
    echo "- NCCL for the real tests: ${nccl_path:-none} (version $nccl_version; $(md "$nccl_how"))"
    echo "- CUDA runtime for the real tests: ${cudart_path:-none} (version $cudart_version; $(md "$cudart_how"))"
    echo "- NCCL the programs loaded (ringmaster-perf): emulated phase: $(md "$used_emulated"); real phase: $(md "$used_real")"
    echo "- NCCL features the code gates on (compiled against ${KIT_NCCL_COMPILED:-?}): ${gates:--}"
    echo "- run: emulated $emulated_jobs tests at a time, real $real_jobs; $test_timeout_s s a test; $deadline_s s in all"
    echo
    echo "| phase | test | result | seconds | note |"
    echo "|---|---|---|---|---|"
    rows | sed 's/|/\\|/g' | awk -F'\t' '{printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5}'
  } >"$out/report.md"
  {
    printf '{"result": %s, "summary": %s, "seconds": %d,\n' "$(json "$( ((failed > 0)) && echo failed || echo passed)")" "$(json "$summary")" "$elapsed"
    printf ' "machine": {"host": %s, "cores": %d, "os": %s, "glibc": %s, "libstdcxx": %s},\n' \
      "$(json "$(uname -n)")" "$cores" "$(json "$os")" "$(json "$glibc")" "$(json "$toolchain")"
    printf ' "kit": {"commit": %s, "built": %s, "glibc_floor": %s, "glibcxx": %s, "nccl_compiled": %s},\n' \
      "$(json "${KIT_COMMIT:-}")" "$(json "${KIT_BUILT:-}")" "$(json "GLIBC_${KIT_GLIBC_FLOOR:-}")" \
      "$(json "GLIBCXX_${KIT_GLIBCXX:-}")" "$(json "${KIT_NCCL_COMPILED:-}")"
    printf ' "gpu": {"name": %s, "driver": %s, "driver_cuda": %s, "no_gpu_reason": %s},\n' \
      "$(json "$gpu_name")" "$(json "$driver")" "$(json "$driver_cuda")" "$(json "$why_no_gpu")"
    printf ' "nccl": {"lookup": %s, "path": %s, "version": %s, "how": %s, "gates": %s},\n' \
      "$(json "$lookup")" "$(json "$nccl_path")" "$(json "$nccl_version")" "$(json "$nccl_how")" "$(json "$gates")"
    printf ' "cudart": {"path": %s, "version": %s, "how": %s},\n' "$(json "$cudart_path")" "$(json "$cudart_version")" "$(json "$cudart_how")"
    printf ' "loaded": {"emulated": %s, "real": %s},\n' "$(json "$used_emulated")" "$(json "$used_real")"
    printf ' "tests": [\n'
    rows | awk -F'\t' '
      function j(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return "\"" s "\"" }
      { printf "%s  {\"phase\": %s, \"test\": %s, \"result\": %s, \"seconds\": %s, \"note\": %s}", (NR > 1 ? ",\n" : ""),
               j($1), j($2), j($3), ($4 ~ /^[0-9.]+$/ ? $4 : "null"), j($5) }
      END { print "" }'
    printf ' ]}\n'
  } >"$out/report.json"
  say "$verdict -- $summary"
  say "report: $out/report.md (and report.json, logs/)"
  ((failed == 0))
}

# The kit cannot run here: one failed row says why, the report is written, exit 2.
fatal() {
  next_seq
  record "$seq" preflight kit failed - "$1"
  say "error: $1"
  write_report >/dev/null
  say "report: $out/report.md"
  exit 2
}

# --- Preflight: can the kit's programs start here? ------------------------------------------------------
[[ -f "$kit/kit.env" && -f "$kit/suite.tsv" ]] || fatal "$kit holds no kit.env or suite.tsv: build the kit with make gpu-kit"
# shellcheck source=/dev/null
source "$kit/kit.env"
glibc="$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')"
[[ -n "$glibc" ]] || fatal "getconf GNU_LIBC_VERSION names no glibc: the kit's programs need glibc (GLIBC_$KIT_GLIBC_FLOOR)"
version_ge "$glibc" "$KIT_GLIBC_FLOOR" \
  || fatal "this machine's glibc $glibc is older than GLIBC_$KIT_GLIBC_FLOOR, which the kit's programs need: build the kit on a distribution as old as this one"
# GCC's libstdc++ of the kit needs the glibc it was built with (KIT_TOOLCHAIN_GLIBC); an older system uses
# its own, which must be as new as the programs' GLIBCXX.
kit_ld="$kit/lib"
if version_ge "$glibc" "$KIT_TOOLCHAIN_GLIBC"; then
  kit_ld="$kit/lib:$kit/lib/toolchain"
  toolchain="the kit's (glibc $glibc >= $KIT_TOOLCHAIN_GLIBC)"
else
  system_stdcxx="$( (ldconfig -p || /sbin/ldconfig -p) 2>/dev/null | awk '$1 == "libstdc++.so.6" {print $NF; exit}')"
  [[ -n "$system_stdcxx" ]] && grep -aq "GLIBCXX_$KIT_GLIBCXX" "$system_stdcxx" \
    || fatal "glibc $glibc is older than the kit's libstdc++ needs ($KIT_TOOLCHAIN_GLIBC) and the system's libstdc++ (${system_stdcxx:-none}) lacks GLIBCXX_$KIT_GLIBCXX: install GCC 12's libstdc++6 or newer"
  toolchain="the system's $system_stdcxx (glibc $glibc < $KIT_TOOLCHAIN_GLIBC, which the kit's needs)"
fi
kit_ld="$kit_ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"  # only the kit's programs get it (not python3, nvidia-smi)
for program in "$kit"/bin/*; do
  LD_LIBRARY_PATH="$kit_ld" timeout 30 "$program" --help >/dev/null 2>"$out/logs/loader.log"
  (($? != 127)) || fatal "$(basename "$program") cannot start: $(grep -m1 . "$out/logs/loader.log")"
done
say "kit $kit (commit $KIT_COMMIT); glibc $glibc; libstdc++: $toolchain; report to $out"

# --- The jobs -------------------------------------------------------------------------------------------
# phase_env: the environment of the phase's programs (env(1) arguments), set before each phase.
phase_env=()

run_case() {  # SEQ PHASE PROGRAM TEST LIMIT: one gtest test, in its own process as ctest runs it
  local seq="$1" phase="$2" program="$3" name="$4" limit="$5" t0=$SECONDS
  local log="$out/logs/$phase/$program/${name//\//_}.log"
  mkdir -p "${log%/*}"
  env "${phase_env[@]}" timeout -k 10 "$limit" "$kit/bin/$program" --gtest_filter="$name" \
    --gtest_also_run_disabled_tests --gtest_color=no >"$log" 2>&1
  local code=$? verdict ms secs result note=""
  # "[       OK ] Suite.Name (12 ms)", "[  FAILED  ] Suite.Name, where GetParam() = 1 (12 ms)", "[  SKIPPED ] ..."
  read -r verdict ms < <(awk -v n="$name" '(index($0, "] " n " (") || index($0, "] " n ", where ")) &&
                                             /^\[ +(OK|FAILED|SKIPPED) +\] .* ms\)$/ {
                                             ms = $(NF - 1); sub(/\(/, "", ms); v = $2 } END {print v, ms}' "$log")
  secs="$(awk -v ms="${ms:-0}" 'BEGIN {printf "%.1f", ms / 1000}')"
  case "$verdict" in
    OK) if ((code == 0)); then result=passed; else result=failed note="passed, then $program exited $code"; fi ;;
    FAILED) result=failed note="$(awk '/: Failure$/ {n = split($1, p, "/"); loc = p[n]; getline; print loc " " $0; exit}' "$log")" ;;
    SKIPPED) result=skipped note="skipped (a skip is not a pass): $(awk '/: Skipped$/ {getline; print; exit}' "$log")" ;;
    *) result=failed secs=$((SECONDS - t0))
       if ((code == 124 || code == 137)); then note="timed out after $limit s"; else note="no verdict: $program exited $code"; fi ;;
  esac
  [[ "$result" == passed ]] || note="${note:-failed} (logs/${log#"$out/logs/"})"
  record "$seq" "$phase" "$program: $name" "$result" "$secs" "$note"
  say "$phase: $result ${secs}s $program: $name${note:+ -- $note}"
  return 0
}

run_perf() {  # SEQ PHASE COLLECTIVE NP LIMIT: ringmaster-perf's check of one collective on NCCL
  local seq="$1" phase="$2" collective="$3" np="$4" limit="$5" t0=$SECONDS
  local name="ringmaster-perf $collective --np $np --backend nccl --check" log="$out/logs/$phase/ringmaster-perf/$collective-np$np.log"
  local args=(--np "$np" --backend nccl --check --iters 2)
  # As ctest runs them (worker-runtime/tools/perf/CMakeLists.txt); on a GPU the allreduce reaches 64M.
  if [[ "$collective" == allreduce ]]; then
    args+=(--min-bytes 1K --max-bytes "$([[ "$phase" == real ]] && echo 64M || echo 1M)")
  else
    args+=(--min-bytes 4K --max-bytes 64K --step-factor 4 --dtype bfloat16)
  fi
  mkdir -p "${log%/*}"
  env "${phase_env[@]}" timeout -k 10 "$limit" "$kit/bin/ringmaster-perf" "$collective" "${args[@]}" >"$log" 2>&1
  local code=$? result=passed note=""
  if ((code != 0)); then
    result=failed
    note="$( ((code == 124 || code == 137)) && echo "timed out after $limit s" || grep -m1 'ringmaster-perf:\|rank [0-9]*:' "$log")"
    note="${note:-exit $code} (logs/${log#"$out/logs/"})"
  elif ! grep -q '^# all results correct' "$log"; then
    result=failed note="exit 0 without '# all results correct' (logs/${log#"$out/logs/"})"
  fi
  record "$seq" "$phase" "$name" "$result" "$((SECONDS - t0))" "$note"
  say "$phase: $result $((SECONDS - t0))s $name${note:+ -- $note}"
  return 0
}

# The phase's jobs, "SEQ|case|PROGRAM|TEST" or "SEQ|perf|COLLECTIVE|NP", in `queue`. A program that
# cannot list its tests is a failed row, not a silence.
queue=()
build_queue() {  # PHASE LABEL NP: the gtest programs of the ctest label, then the perf checks with NP ranks
  local phase="$1" label="$2" np="$3" program names name c
  queue=()
  for program in $(awk -F'\t' -v l="$label" '$1 == "gtest" && $2 == l {print $3}' "$kit/suite.tsv"); do
    mkdir -p "$out/logs/$phase/$program"
    names="$(env "${phase_env[@]}" timeout -k 5 60 "$kit/bin/$program" --gtest_list_tests 2>"$out/logs/$phase/$program/list.err" |
             awk '/^[^ ]/ {s = $1} /^  [^ ]/ {print s $1}')"
    if [[ -z "$names" ]]; then
      next_seq
      record "$seq" "$phase" "$program" failed - "cannot list its tests: $(grep -m1 . "$out/logs/$phase/$program/list.err" || echo 'no test listed')"
      say "$phase: failed $program: cannot list its tests (logs/$phase/$program/list.err)"
      continue
    fi
    while read -r name; do next_seq; queue+=("$seq|case|$program|$name"); done <<<"$names"
  done
  for c in allreduce allgather broadcast reduce-scatter; do next_seq; queue+=("$seq|perf|$c|$np"); done
}

run_queue() {  # PHASE JOBS: runs `queue`, JOBS at a time, each bounded by the time left
  local phase="$1" max="$2" running=0 job s kind a b left limit name
  for job in "${queue[@]}"; do
    IFS='|' read -r s kind a b <<<"$job"
    if ((running >= max)); then wait -n; running=$((running - 1)); fi
    left=$((deadline_s - (SECONDS - start) - 15))  # 15 s to write the report
    if ((left < 20)); then
      name="$([[ "$kind" == case ]] && echo "$a: $b" || echo "ringmaster-perf $a --np $b --backend nccl --check")"
      record "$s" "$phase" "$name" failed - "not started: the run's $deadline_s s (RINGMASTER_KIT_DEADLINE_S) ran out"
      say "$phase: failed $name -- not started: the run's $deadline_s s ran out"
      continue
    fi
    limit=$((left < test_timeout_s ? left : test_timeout_s))
    if [[ "$kind" == case ]]; then run_case "$s" "$phase" "$a" "$b" "$limit" & else run_perf "$s" "$phase" "$a" "$b" "$limit" & fi
    running=$((running + 1))
  done
  wait
}

# No GPU: the real jobs, each reported as such.
record_no_gpu() {
  local job s kind a b
  for job in "${queue[@]}"; do
    IFS='|' read -r s kind a b <<<"$job"
    record "$s" real "$([[ "$kind" == case ]] && echo "$a: $b" || echo "ringmaster-perf $a --np $b --backend nccl --check")" no-gpu - "$why_no_gpu"
  done
}

record_absent() {  # PHASE LABEL: the label's ctest tests the kit cannot carry (suite.tsv says why)
  local phase="$1" label="$2" name why
  while IFS=$'\t' read -r name why; do
    next_seq
    record "$seq" "$phase" "$name" not-in-kit - "not in the kit: $why"
  done < <(awk -F'\t' -v l="$label" '$1 == "absent" && $2 == l {print $3 "\t" $4}' "$kit/suite.tsv")
}

# --- 1. Emulated ----------------------------------------------------------------------------------------
phase_env=(-u RINGMASTER_NCCL_LIBRARY -u RINGMASTER_CUDART_LIBRARY "LD_LIBRARY_PATH=$kit_ld" "RINGMASTER_BIN_DIR=$kit/bin"
           "RINGMASTER_EMULATED_GPUS=$emulated_gpus" "RINGMASTER_GPU_EMULATION_LIBRARY=$kit/lib/libringmaster_emulated_gpu.so")
build_queue emulated gpu-emulated 4
say "emulated: ${#queue[@]} tests on the CPU emulation of NCCL and CUDA (RINGMASTER_EMULATED_GPUS=$emulated_gpus), $emulated_jobs at a time"
run_queue emulated "$emulated_jobs"
record_absent emulated gpu-emulated
say "emulated: $(count emulated passed) passed, $(count emulated failed) failed, $(count emulated skipped) skipped"

# --- 2. Real --------------------------------------------------------------------------------------------
# The library the loader would find for a SONAME: ldconfig's cache, then LD_LIBRARY_PATH and the usual places.
find_lib() {
  local name="$1" dir found
  found="$( (ldconfig -p || /sbin/ldconfig -p) 2>/dev/null | awk -v n="$name" '$1 == n {print $NF; exit}')"
  [[ -n "$found" ]] && { echo "$found"; return; }
  local dirs=()
  IFS=: read -ra dirs <<<"${LD_LIBRARY_PATH:-}"
  for dir in "${dirs[@]}" /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/nvidia/lib64 /usr/lib/wsl/lib; do
    [[ -n "$dir" && -e "$dir/$name" ]] && { echo "$dir/$name"; return; }
  done
}

nodes="$(ls /dev/nvidia[0-9]* 2>/dev/null | head -1)"
if [[ -z "$nodes" ]]; then
  why_no_gpu="no /dev/nvidia0: this machine has no NVIDIA GPU device"
else
  if ! command -v nvidia-smi >/dev/null; then
    why_no_gpu="nvidia-smi is not installed (it comes with the driver)"
  elif ! timeout 60 nvidia-smi -L >"$out/logs/nvidia-smi.log" 2>&1; then
    why_no_gpu="nvidia-smi -L failed: $(grep -m1 . "$out/logs/nvidia-smi.log")"
  elif ! grep -q '^GPU [0-9]' "$out/logs/nvidia-smi.log"; then
    why_no_gpu="nvidia-smi lists no GPU"
  elif [[ -z "$(find_lib libcuda.so.1)" ]]; then
    why_no_gpu="the driver's libcuda.so.1 is nowhere the loader looks (ldconfig -p, LD_LIBRARY_PATH)"
  fi
  [[ -n "$why_no_gpu" ]] && gpu_broken=1  # device nodes, yet no usable GPU: a broken GPU machine
fi
if [[ -z "$why_no_gpu" ]]; then
  gpu_name="$(timeout 30 nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | awk '{n = $1; $1 = ""; printf "%s%s x %d", sep, substr($0, 2), n; sep = ", "}')"
  driver="$(timeout 30 nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
  driver_cuda="$(timeout 30 nvidia-smi | grep -o 'CUDA Version: *[0-9.]*' | head -1 | awk '{print $NF}')"
fi

# NCCL and the CUDA runtime for the real tests (as a PyTorch job on this machine would load them). The test
# programs do not load torch, so run.sh finds torch's copies and names them (gpu_libraries.h's search, step 3: a configured path).
nccl_path="${RINGMASTER_NCCL_LIBRARY:-}" cudart_path="${RINGMASTER_CUDART_LIBRARY:-}"
[[ -n "$nccl_path" ]] && nccl_how="RINGMASTER_NCCL_LIBRARY, set before run.sh"
[[ -n "$cudart_path" ]] && cudart_how="RINGMASTER_CUDART_LIBRARY, set before run.sh"
if command -v "$python" >/dev/null; then
  found="$(timeout 60 "$python" - 2>"$out/logs/python-lookup.log" <<'PY'
import glob, os, site, sys
print("python\t%s %s" % (sys.executable, sys.version.split()[0]))
try:
    from importlib import metadata
    print("torch\t" + metadata.version("torch"))
except Exception as e:
    print("torch\tnot installed (%s)" % type(e).__name__)
roots = []
for get in (site.getsitepackages, lambda: [site.getusersitepackages()]):
    try:
        roots += get()
    except Exception:
        pass
roots += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
roots = [r for i, r in enumerate(roots) if r and r not in roots[:i]]
def first(patterns):
    for root in roots:
        for pattern in patterns:
            hits = sorted(glob.glob(os.path.join(root, pattern)))
            if hits:
                return hits[0]
    return ""
print("nccl\t" + first(["nvidia/nccl/lib/libnccl.so.2"]))
print("cudart\t" + first(["nvidia/cu13/lib/libcudart.so.13", "nvidia/cuda_runtime/lib/libcudart.so.13",
                          "nvidia/cuda_runtime/lib/libcudart.so.12"]))
print("roots\t" + " ".join(roots))
PY
)"
  field() { awk -F'\t' -v k="$1" '$1 == k {print $2; exit}' <<<"$found"; }
  if [[ -n "$(field python)" ]]; then
    lookup="$(field python), torch $(field torch); site-packages searched: $(field roots)"
    [[ -z "$nccl_path" && -n "$(field nccl)" ]] && nccl_path="$(field nccl)" nccl_how="torch's wheel, found by $python"
    [[ -z "$cudart_path" && -n "$(field cudart)" ]] && cudart_path="$(field cudart)" cudart_how="torch's wheel, found by $python"
    [[ -z "$nccl_path" ]] && nccl_how="not in $python's site-packages"
  else
    lookup="$python failed (logs/python-lookup.log): $(grep -m1 . "$out/logs/python-lookup.log")"
  fi
else
  lookup="no python3: torch's NCCL and CUDA runtime cannot be looked up"
  nccl_how="no python3 to find torch's"
fi
if [[ -z "$cudart_path" ]]; then
  cudart_path="$(ls /usr/local/cuda/lib64/libcudart.so.13* /usr/local/cuda-13*/lib64/libcudart.so.13* 2>/dev/null | head -1)"
  [[ -n "$cudart_path" ]] && cudart_how="the CUDA toolkit's" || cudart_how="not found: the programs try the loader's search for libcudart.so.13"
fi
[[ -z "$nccl_path" ]] && nccl_how="$nccl_how; the programs try the loader's search for libnccl.so.2"
# Their versions, by asking them (ncclGetVersion, cudaRuntimeGetVersion): neither needs a GPU.
if command -v "$python" >/dev/null && [[ -n "$nccl_path$cudart_path" ]]; then
  versions="$(timeout 60 "$python" - "$nccl_path" "$cudart_path" 2>>"$out/logs/python-lookup.log" <<'PY'
import ctypes, sys
def ask(path, call):
    if not path:
        return ""
    try:
        value = ctypes.c_int(0)
        return str(value.value) if getattr(ctypes.CDLL(path), call)(ctypes.byref(value)) == 0 else ""
    except Exception:
        return ""
print("%s\t%s" % (ask(sys.argv[1], "ncclGetVersion"), ask(sys.argv[2], "cudaRuntimeGetVersion")))
PY
)"
  IFS=$'\t' read -r nccl_code cudart_code <<<"$versions"
  [[ -n "$nccl_code" ]] && nccl_version="$(nccl_text "$nccl_code")"
  [[ -n "${cudart_code:-}" ]] && cudart_version="$((cudart_code / 1000)).$((cudart_code % 1000 / 10))"
elif [[ -n "$cudart_path" ]]; then
  cudart_version="$(readlink -f "$cudart_path" | sed -n 's/.*libcudart\.so\.\([0-9.]*\)$/\1/p') (its file name)"
fi
say "NCCL lookup: $lookup"
say "NCCL: ${nccl_path:-none} (version $nccl_version; $nccl_how); CUDA runtime: ${cudart_path:-none} (version $cudart_version; $cudart_how)"

phase_env=(-u RINGMASTER_EMULATED_GPUS -u RINGMASTER_GPU_EMULATION_LIBRARY "LD_LIBRARY_PATH=$kit_ld" "RINGMASTER_BIN_DIR=$kit/bin"
           NCCL_MULTI_RANK_GPU_ENABLE=1)  # one GPU serves several ranks (NCCL >= 2.30; the tests set it too)
[[ -n "$nccl_path" ]] && phase_env+=("RINGMASTER_NCCL_LIBRARY=$nccl_path")
[[ -n "$cudart_path" ]] && phase_env+=("RINGMASTER_CUDART_LIBRARY=$cudart_path")
build_queue real gpu 2
if [[ -z "$why_no_gpu" ]]; then
  say "real: ${#queue[@]} tests on $gpu_name (driver $driver), $real_jobs at a time"
  run_queue real "$real_jobs"
else
  say "real: $why_no_gpu -- each of the ${#queue[@]} real tests is reported as no GPU"
  record_no_gpu
  if ((gpu_broken)); then
    next_seq; record "$seq" real "the GPU" failed - "this machine has $nodes, yet $why_no_gpu"
  elif ((require_gpu)); then
    next_seq; record "$seq" real "the GPU" failed - "--require-gpu: $why_no_gpu"
  fi
fi
record_absent real gpu
write_report
