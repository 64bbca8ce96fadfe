#!/usr/bin/env bash
# make gpu-kit: everything the GPU suite (ctest label `gpu`) needs, in one folder that runs it with one
# command on a GPU machine that has only an NVIDIA driver, a CUDA 13 toolkit and a Python with torch (whose
# wheels bring NCCL and the CUDA runtime): no build tree, no network.
#
#   tests/gpu_kit/make_kit.sh BUILD_DIR OUT_DIR        (make gpu-kit: build/gpu-kit)
#
# OUT_DIR gets bin/ (the suite's test programs and the programs they start, stripped), lib/ (every shared
# library they load apart from glibc's and the GPU's own: libcuda, libnvidia-ml, libnccl, libcudart come
# from the machine; GCC's libstdc++ and libgcc_s in lib/toolchain/, which run.sh uses only where glibc is
# as new as they need -- an older system uses its own, as new as the programs' GLIBCXX), run.sh (the one command; tests/gpu_kit/run.sh) and MANIFEST (what is in it, sha256,
# the commit, the newest glibc symbol version it needs). It fails when the folder exceeds 60 MiB, the most
# that travels with a command to the GPU machine.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 BUILD_DIR OUT_DIR" >&2; exit 2; }
build="$(cd "$1" && pwd)"
out="$2"
here="$(cd "$(dirname "$0")" && pwd)"
max_mib=60

die() { echo "gpu-kit: error: $1" >&2; exit 1; }

# The `gpu` label's test programs, the programs they start (the elastic test runs ringmaster-run and the
# example trainer; the kit also runs ringmaster-perf's check), and the emulation's own tests.
programs=(runtime_comm_conformance_nccl_test runtime_nccl_gpu_test runtime_host_beside_nccl_test
          runtime_elastic_gpu_test runtime_gpu_telemetry_gpu_test gpu_emulation_test
          runtime_nccl_fault_injection_test ringmaster-run ringmaster-train-example ringmaster-perf)
emulation="$build/lib/libringmaster_emulated_gpu.so"

for p in "${programs[@]}"; do [[ -x "$build/bin/$p" ]] || die "$build/bin/$p is missing: run make build"; done
[[ -f "$emulation" ]] || die "$emulation is missing: run make build"
command -v strip >/dev/null || die "strip is not installed (binutils): run make deps"

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
echo "gpu-kit: copying ${#programs[@]} programs and the GPU emulation from $build"
for p in "${programs[@]}"; do cp "$build/bin/$p" "$out/bin/"; done
cp "$emulation" "$out/lib/"

# Shared libraries the machine must bring itself: glibc's (the loader, libc, libm...) and the GPU's.
is_system_lib() {
  case "$1" in
    linux-vdso.so.*|ld-linux*.so.*|libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libresolv.so.*) return 0 ;;
    libcuda.so.*|libnvidia-ml.so.*|libnccl.so.*|libcudart.so.*) return 0 ;;
  esac
  return 1
}

echo "gpu-kit: bundling the shared libraries they load (apart from glibc's and the GPU driver's)"
for f in "$out"/bin/* "$out"/lib/*.so; do
  while read -r name arrow path _; do
    [[ "$arrow" == "=>" ]] || continue
    is_system_lib "$name" && continue
    [[ "$path" == /* && -f "$path" ]] || die "$(basename "$f") needs $name, which this machine cannot resolve"
    [[ -f "$out/lib/$name" ]] || cp -L "$path" "$out/lib/$name"
  done < <(ldd "$f")
done
mkdir -p "$out/lib/toolchain"
mv "$out"/lib/libstdc++.so.* "$out"/lib/libgcc_s.so.* "$out/lib/toolchain/" 2>/dev/null || true
chmod -R u+w "$out"
strip --strip-unneeded "$out"/bin/* "$out"/lib/*.so* "$out"/lib/toolchain/*

# The newest versioned glibc symbol a set of files needs.
glibc_needed() { for f in "$@"; do objdump -T "$f" 2>/dev/null; done | grep -o 'GLIBC_2\.[0-9]*' | sort -u -V | tail -1; }
glibc_floor="$(glibc_needed "$out"/bin/* "$out"/lib/*.so*)"
toolchain_floor="$(glibc_needed "$out"/lib/toolchain/*)"
glibcxx_needed="$(for f in "$out"/bin/* "$out"/lib/*.so*; do objdump -T "$f" 2>/dev/null; done |
                  grep -o 'GLIBCXX_3\.4\.[0-9]*' | sort -u -V | tail -1)"
echo "${toolchain_floor#GLIBC_}" >"$out/lib/toolchain/GLIBC_NEEDED"

cp "$here/run.sh" "$out/run.sh"
chmod +x "$out/run.sh"

{
  echo "# Ringmaster GPU kit: run ./run.sh (a report lands in \$OUT, else next to it)."
  echo "commit: $(git -C "$here" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "needs: glibc with ${glibc_floor}; a libstdc++ with ${glibcxx_needed} (the kit's own, used where glibc has ${toolchain_floor});"
  echo "       an NVIDIA driver >= 580 and a torch whose wheels carry NCCL and libcudart.so.13 (or the CUDA 13 toolkit's)"
  echo "files:"
  (cd "$out" && find . -type f ! -name MANIFEST | sort | while read -r f; do
     printf '  %s %8d %s\n' "$(sha256sum "$f" | cut -c1-16)" "$(stat -c %s "$f")" "${f#./}"
   done)
} >"$out/MANIFEST"

size_kib="$(du -sk "$out" | cut -f1)"
echo "gpu-kit: $out: $((size_kib / 1024)) MiB ($size_kib KiB) in $(find "$out" -type f | wc -l) files; needs ${glibc_floor}" \
     "and ${glibcxx_needed} (its own libstdc++ where glibc has ${toolchain_floor})"
((size_kib <= max_mib * 1024)) || die "the kit is $((size_kib / 1024)) MiB, over the ${max_mib} MiB that travel to the GPU machine"
