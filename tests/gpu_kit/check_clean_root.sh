#!/usr/bin/env bash
# Checks that the GPU kit is self-contained: builds it from BUILD_DIR (make_kit.sh) into a clean root file
# system -- Debian bookworm minbase: no Python, no compiler, none of our build dependencies, and not even
# GCC's libstdc++ (removed: the kit must bring its own) -- and runs its run.sh there under chroot, in mount
# and PID namespaces of its own (nothing leaks: its mounts and any process a test left behind end with it).
# Then it checks the report against ctest: every emulated test of the label gpu-emulated ran and passed,
# every real test of the label gpu is "no-gpu" (the root has no GPU device), the tests the kit cannot
# carry are named, NCCL's lookup says "no python3", and run.sh exited 0.
#
#   tests/gpu_kit/check_clean_root.sh BUILD_DIR       (ctest gpu-emulated.GpuKit.RunsInACleanRoot, make test)
#
# The root is bootstrapped once with mmdebstrap (make deps installs it; Debian's mirror must be reachable)
# into ${RINGMASTER_CACHE:-~/.cache/ringmaster}/gpu-kit-root/; later runs only unpack it (seconds).
# Needs root (chroot, mounts). The last report stays in $RINGMASTER_CACHE/gpu-kit-root/last-report/.
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../harness/lib.sh"
[[ -d "$1" ]] || die "no build directory $1" "run make build"
build="$(cd "$1" && pwd)"

[[ "$(id -u)" -eq 0 ]] || die "the clean-root check needs root (chroot and mounts)" "run it as root, as make test does"
need_cmd mmdebstrap "run make deps (it installs mmdebstrap)"
for cmd in unshare chroot mount tar python3; do need_cmd "$cmd" "run make deps"; done

suite=bookworm
cache="$RINGMASTER_CACHE/gpu-kit-root"
root_tar="$cache/$suite-minbase.tar"
mkdir -p "$cache"
if [[ ! -f "$root_tar" ]]; then
  log "gpu-kit check: bootstrapping a clean Debian $suite root (minbase) with mmdebstrap, once: $root_tar"
  partial="$cache/partial.$$.tar"  # mmdebstrap picks the format from the name: it must end in .tar
  run_with_heartbeat "gpu-kit check: mmdebstrap" "$cache/mmdebstrap.log" \
    mmdebstrap --variant=minbase --aptopt='Acquire::Retries "3"' \
      --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
      "$suite" "$partial" "deb http://deb.debian.org/debian $suite main" \
    || { rm -f "$partial"; die "mmdebstrap could not bootstrap the clean root (log: $cache/mmdebstrap.log)" "check that Debian's mirror is reachable"; }
  mv "$partial" "$root_tar"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/ringmaster-gpu-kit-check.XXXXXX")"
root="$work/root"
# The mounts live in the namespace below and end with it; should one outlive it (a bug), unmount it before
# deleting anything, so no removal ever reaches through a mount.
cleanup() {
  local m
  for m in $(awk -v w="$work/" 'index($2, w) == 1 {print $2}' /proc/mounts | sort -r); do umount -l "$m" 2>/dev/null || true; done
  if awk -v w="$work/" 'index($2, w) == 1 {found = 1} END {exit !found}' /proc/mounts; then
    log "gpu-kit check: mounts remain under $work: left in place"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

log "gpu-kit check: unpacking the clean root into $root"
mkdir -p "$root"
tar -xf "$root_tar" -C "$root"
# apt needs GCC's runtime, the kit must not: without it here, the kit's own copies are what runs.
rm -f "$root"/usr/lib/x86_64-linux-gnu/libstdc++.so.6* "$root"/usr/lib/x86_64-linux-gnu/libgcc_s.so.1
for absent in usr/bin/python3 usr/bin/cmake usr/bin/ctest usr/bin/gcc usr/bin/g++ usr/bin/nvidia-smi \
              usr/lib/x86_64-linux-gnu/libstdc++.so.6 usr/lib/x86_64-linux-gnu/libgcc_s.so.1; do
  [[ ! -e "$root/$absent" ]] || die "the clean root holds /$absent" "remove $root_tar to bootstrap it again"
done

log "gpu-kit check: building the kit into the clean root"
"$here/make_kit.sh" "$build" "$root/kit"
shared="$(for l in "$root"/kit/lib/*.so*; do n="$(basename "$l")"; [[ -e "$root/usr/lib/x86_64-linux-gnu/$n" ]] && printf '%s ' "$n"; done || true)"
log "gpu-kit check: of the kit's libraries, the clean root also has: ${shared:-none} (the kit's come first)"

# What ctest would run: each gtest test of the labels, and ringmaster-perf's 4 checks run.sh adds to each phase.
gtests() { ctest --test-dir "$build" -N -V -L "^$1\$" | grep -c '"--gtest_filter=' || true; }
expected_emulated=$(($(gtests gpu-emulated) + 4)) expected_real=$(($(gtests gpu) + 4))
expected_absent="$(grep -c '^absent	' "$root/kit/suite.tsv" || true)"

log "gpu-kit check: chroot $root /kit/run.sh (no GPU device, no python3)"
set +e
# A PID namespace: when run.sh ends, the kernel ends whatever its tests left running.
unshare --mount --pid --fork --propagation private bash -euc '
  root="$1"
  mount -t proc proc "$root/proc"
  mount -t tmpfs -o size=2g tmpfs "$root/tmp"
  mount -t tmpfs tmpfs "$root/dev/shm"
  exec chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root OUT=/report /kit/run.sh
' _ "$root"
code=$?
set -e
report="$root/report"
[[ -f "$report/report.md" && -f "$report/report.json" ]] || die "run.sh wrote no report.md/report.json (exit $code)" "see its output above"
rm -rf "$cache/last-report" && cp -r "$report" "$cache/last-report"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$report/report.json" \
  || die "report.json is not valid JSON" "see $cache/last-report/report.json"

# The verdict, from the kit's rows (results/*.tsv: phase, test, result, seconds, note).
count() { cat "$report"/results/*.tsv | awk -F'\t' -v p="$1" -v r="$2" '$1 == p && $3 == r {n++} END {print n + 0}'; }
total() { cat "$report"/results/*.tsv | awk -F'\t' -v p="$1" '$1 == p {n++} END {print n + 0}'; }
emulated_passed="$(count emulated passed)" emulated_total="$(total emulated)"
real_no_gpu="$(count real no-gpu)" real_total="$(total real)"
absent="$(($(count emulated not-in-kit) + $(count real not-in-kit)))"
log "gpu-kit check: emulated: $emulated_passed passed (expected: $expected_emulated, ctest's and the perf checks);" \
    "real: $real_no_gpu no GPU (expected: $expected_real); $absent not in the kit (expected: $expected_absent); run.sh exited $code"
fail() { cat "$report/report.md" >&2; die "$1" "the report is above; logs in $cache/last-report/logs"; }
((emulated_passed == expected_emulated && emulated_total == expected_emulated + $(count emulated not-in-kit))) \
  || fail "in the clean root $emulated_passed emulated tests passed, of $expected_emulated that ctest's gpu-emulated label and run.sh's perf checks make"
((real_no_gpu == expected_real && real_total == expected_real + $(count real not-in-kit))) \
  || fail "the real GPU tests were not all reported as no GPU ($real_no_gpu of $expected_real)"
((absent == expected_absent)) || fail "$absent tests are reported 'not-in-kit', suite.tsv names $expected_absent"
grep -q '^- NCCL lookup: no python3' "$report/report.md" || fail "the report does not say that NCCL's lookup found no python3"
((code == 0)) || fail "run.sh exited $code with every test as expected"
log "gpu-kit check: the kit is self-contained (report: $cache/last-report/report.md)"
