#!/usr/bin/env bash
# Builds one sanitizer tree and runs a selection of the ctest tests in it (make test-sanitize runs it twice).
#   sanitize.sh address|thread BUILD_DIR TARGETS CTEST_SELECTION...
# address: ASan+UBSan (-fno-sanitize-recover=undefined); thread: TSan. TARGETS is a comma-separated list of
# build targets (tests-unit, tests-concurrency: see ringmaster_add_gtest); CTEST_SELECTION is passed to ctest
# as is (-L LABEL, -E REGEX).
# Every sanitized process, the test binaries and the programs they start (the operator, forked ranks, ...),
# writes its ASan/LSan/TSan reports to BUILD_DIR/sanitizer-reports/ (log_path) and stops at the first
# (halt_on_error). UBSan under GCC runs as a plug-in of ASan and ignores log_path: its reports go to the
# process's stderr (-fno-sanitize-recover kills the process), so the full output of every test (ctest's
# Testing/Temporary/LastTest.log) is searched for them too. A report in a child the test does not watch
# closely still fails the run: exit status 1 when any test failed, any report file exists or any test's
# output holds a report; each report's first lines are printed.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

(($# >= 4)) || die "usage: sanitize.sh address|thread BUILD_DIR TARGETS CTEST_SELECTION..."
sanitizer="$1" build_dir="$2" targets="$3"
shift 3
case "$sanitizer" in
  address | thread) ;;
  *) die "unknown sanitizer '$sanitizer'" "use address or thread" ;;
esac
need_cmd cmake
need_cmd ninja
need_cmd ctest

jobs="${JOBS:-2}"
lsan_suppressions="$HARNESS_DIR/lsan-suppressions.txt"
tsan_suppressions="$HARNESS_DIR/tsan-suppressions.txt"
[[ -f "$lsan_suppressions" && -f "$tsan_suppressions" ]] || die "suppression files missing under $HARNESS_DIR"

log "sanitize $sanitizer: configuring $build_dir"
mkdir -p "$build_dir"
cmake -S "$RINGMASTER_ROOT" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DRINGMASTER_SANITIZE="$sanitizer" -DRINGMASTER_PYTHON=OFF >"$build_dir/configure.log" 2>&1 || {
  tail -n 20 "$build_dir/configure.log" >&2
  die "configuring $build_dir failed (see above)" "run make deps first"
}
# shellcheck disable=SC2046
run_with_heartbeat "sanitize $sanitizer: building ${targets//,/ }" "$build_dir/build.log" \
  cmake --build "$build_dir" -j "$jobs" --target $(tr ',' ' ' <<<"$targets") || die "building $build_dir failed"

reports="$(cd "$build_dir" && pwd)/sanitizer-reports"
rm -rf "$reports"
mkdir -p "$reports"
# Any report stops the process with a non-zero status (the test fails) and leaves a file in $reports.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:log_path=$reports/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan"
export LSAN_OPTIONS="suppressions=$lsan_suppressions:print_suppressions=0"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$tsan_suppressions:log_path=$reports/tsan"

log "sanitize $sanitizer: ctest $* in $build_dir (reports: $reports)"
start=$SECONDS
ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -j "$jobs" "$@" 2>&1 | tee "$build_dir/ctest.log"
status=${PIPESTATUS[0]}
elapsed=$((SECONDS - start))

summary=$(grep -E "tests passed, [0-9]+ tests failed out of [0-9]+" "$build_dir/ctest.log" | tail -1)
mapfile -t found < <(find "$reports" -type f | sort)
for file in "${found[@]}"; do
  echo "---- $file"
  head -n 40 "$file"
done
pattern='runtime error: |ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)|WARNING: ThreadSanitizer'
in_output=$(grep -cE "$pattern" "$build_dir/Testing/Temporary/LastTest.log" 2>/dev/null)
if ((in_output > 0)); then
  echo "---- reports in the tests' output ($build_dir/Testing/Temporary/LastTest.log):"
  grep -E -A 12 "$pattern" "$build_dir/Testing/Temporary/LastTest.log" | head -n 80
fi
log "sanitize $sanitizer: ${summary:-no ctest summary}; ${elapsed}s; ${#found[@]} report file(s), ${in_output:-0} report(s) in test output"
if ((status != 0 || ${#found[@]} > 0 || in_output > 0)); then
  die "sanitize $sanitizer failed: ctest exit $status, ${#found[@]} report file(s) in $reports, ${in_output:-0} in test output"
fi
