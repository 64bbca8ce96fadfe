#!/usr/bin/env bash
# Runs libFuzzer targets on their seed corpora and prints, per target, executions, corpus growth and
# crashes, then a table. Used by `make fuzz-smoke` (seconds each, a scratch corpus) and `make fuzz`
# (minutes each, a corpus kept in BUILD_DIR/corpus/<target> that grows from run to run).
#   fuzz.sh [--keep-corpus] BUILD_DIR SECONDS TARGET:SEED_DIR...
# A crash, leak, hang (-timeout) or out-of-memory leaves its input in BUILD_DIR/artifacts/<target>/;
# reproduce with `BUILD_DIR/bin/<target> <that file>`. Exit status 1 when any target failed.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

keep_corpus=0
if [[ "${1:-}" == "--keep-corpus" ]]; then keep_corpus=1; shift; fi
(($# >= 3)) || die "usage: fuzz.sh [--keep-corpus] BUILD_DIR SECONDS TARGET:SEED_DIR..."
build_dir="$1" seconds="$2"
shift 2

rows=()
failed=0
for pair in "$@"; do
  target="${pair%%:*}" seeds="$RINGMASTER_ROOT/${pair#*:}"
  binary="$build_dir/bin/$target"
  [[ -x "$binary" ]] || die "$binary is missing" "build it: make fuzz-smoke builds every fuzz target"
  [[ -d "$seeds" ]] || die "seed corpus $seeds is missing"
  artifacts="$build_dir/artifacts/$target"
  mkdir -p "$artifacts"
  if ((keep_corpus)); then
    corpus="$build_dir/corpus/$target"
    mkdir -p "$corpus"
  else
    corpus="$(mktemp -d)"
  fi
  log="$build_dir/artifacts/$target.log"
  before=$(find "$artifacts" -type f | wc -l)
  echo "fuzz: $target for $seconds s (seeds: ${pair#*:})"
  # New inputs go to the first directory; the committed seeds are only read.
  LSAN_OPTIONS="suppressions=$RINGMASTER_ROOT/tests/harness/lsan-suppressions.txt${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
  "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" "$seeds" >"$log" 2>&1
  status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  added=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -1)
  crashes=$(($(find "$artifacts" -type f | wc -l) - before))
  if ((status != 0 && crashes == 0)); then crashes=1; fi  # died without leaving an input (e.g. a signal)
  result=ok
  if ((status != 0)); then
    result="FAILED (exit $status)"
    failed=1
    grep -E "^==[0-9]+==ERROR|^SUMMARY|runtime error|Test unit written to" "$log" | head -5
    echo "  full log: $log"
  fi
  ((keep_corpus)) || rm -rf "$corpus"
  echo "  executions: ${execs:-?}  exec/s: ${rate:-?}  new inputs: ${added:-?}  crashes: $crashes  $result"
  rows+=("$(printf '%-26s %12s %8s %10s %8s  %s' "$target" "${execs:-?}" "${rate:-?}" "${added:-?}" "$crashes" "$result")")
done

echo
printf '%-26s %12s %8s %10s %8s  %s\n' target executions exec/s new-inputs crashes result
for row in "${rows[@]}"; do echo "$row"; done
if ((failed)); then
  echo "ringmaster: error: a fuzz target failed; its input is in $build_dir/artifacts/<target>/"
  exit 1
fi
