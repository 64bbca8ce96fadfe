#!/usr/bin/env bash
# Checks that the GPU kit is self-contained: builds it from BUILD_DIR, puts it in a clean root file system
# (Debian bookworm minbase: no Python, no compiler, none of our build dependencies; bootstrapped with
# mmdebstrap once and cached), runs its run.sh there under chroot in a mount namespace of its own, and
# checks the report: every emulated test ran and passed, every real GPU test is "no GPU" (there is none),
# nothing failed. The ctest `gpu-emulated.GpuKit.RunsInACleanRoot` runs it (make test).
#
#   tests/gpu_kit/check_clean_root.sh BUILD_DIR
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../harness/lib.sh"
build="$(cd "$1" && pwd)"

[[ "$(id -u)" -eq 0 ]] || die "needs root (chroot and mounts)" "run it as root, as make test does"
need_cmd mmdebstrap "run make deps (it installs mmdebstrap)"
need_cmd unshare "install util-linux"

suite=bookworm
cache="$RINGMASTER_CACHE/gpu-kit-root"
root_tar="$cache/$suite-minbase.tar"
mkdir -p "$cache"
if [[ ! -f "$root_tar" ]]; then
  log "gpu-kit check: bootstrapping a clean Debian $suite root (minbase) with mmdebstrap, once ($root_tar)"
  run_with_heartbeat "gpu-kit check: mmdebstrap" "$cache/mmdebstrap.log" \
    mmdebstrap --variant=minbase --aptopt='Acquire::Retries "3"' \
      --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
      "$suite" "$cache/partial.tar" "deb http://deb.debian.org/debian $suite main" \
    || die "mmdebstrap could not bootstrap the clean root (log: $cache/mmdebstrap.log)" "check that Debian's mirror is reachable"
  mv "$cache/partial.tar" "$root_tar"  # mmdebstrap picks the format from the name: it must end in .tar
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/ringmaster-gpu-kit-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT  # the mounts live in the namespace below and are gone with it
root="$work/root"
mkdir -p "$root"
tar -xf "$root_tar" -C "$root"
for absent in usr/bin/python3 usr/bin/cmake usr/bin/gcc; do
  [[ ! -e "$root/$absent" ]] || die "the clean root holds /$absent" "remove $root_tar to bootstrap it again"
done
"$here/make_kit.sh" "$build" "$root/kit"

log "gpu-kit check: running /kit/run.sh in the clean root"
set +e
unshare --mount --propagation private --fork bash -euc '
  root="$1"
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount -t tmpfs tmpfs "$root/tmp"
  exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root OUT=/report /kit/run.sh
' _ "$root"
code=$?
set -e
report="$root/report"
[[ -f "$report/report.md" && -f "$report/report.json" ]] || die "run.sh wrote no report (exit $code)" "see its output above"

# The verdict, from the kit's own results.
count() { awk -F'\t' -v p="$1" -v r="$2" '$1 == p && $3 == r' "$report/results.tsv" | wc -l; }
emulated_passed="$(count emulated passed)" emulated_failed="$(count emulated failed)"
real_total="$(awk -F'\t' '$1 == "real"' "$report/results.tsv" | wc -l)" real_no_gpu="$(count real no-gpu)"
log "gpu-kit check: emulated $emulated_passed passed, $emulated_failed failed; real $real_no_gpu of $real_total no GPU; run.sh exit $code"
((emulated_failed == 0)) || { cat "$report/report.md"; die "emulated tests failed in the clean root" "see the report above and $report/logs"; }
((emulated_passed >= 40)) || die "only $emulated_passed emulated tests passed: the kit did not reach the suite" "see $report/logs"
((real_total > 0 && real_no_gpu == real_total)) || die "the real GPU tests were not all reported as no GPU" "see $report/report.md"
((code == 0)) || die "run.sh exited $code with nothing failed" "see its output above"
log "gpu-kit check: the kit is self-contained"
