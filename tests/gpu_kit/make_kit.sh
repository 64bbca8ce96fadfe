#!/usr/bin/env bash
# make gpu-kit: everything the GPU suite (ctest label `gpu`, and its emulated twin `gpu-emulated`) needs, in
# one folder that runs it with one command on a GPU machine that has only an NVIDIA driver, a CUDA toolkit
# and a Python with torch (whose wheels bring NCCL and the CUDA runtime): no build tree, no network.
#
#   tests/gpu_kit/make_kit.sh BUILD_DIR OUT_DIR        (make gpu-kit: build/gpu-kit)
#
# OUT_DIR gets
#   bin/        the suite's gtest programs (read from ctest, so a new one is never forgotten) and the programs
#               they start (ringmaster-run, ringmaster-train-example; run.sh runs ringmaster-perf), stripped;
#   lib/        the CPU emulation of NCCL and CUDA, and every shared library the programs load apart from
#               glibc's and the GPU's (libcuda, libnvidia-ml, libnccl, libcudart come from the machine);
#               GCC's libstdc++ and libgcc_s in lib/toolchain/ (see below);
#   run.sh      the one command (tests/gpu_kit/run.sh), README.md;
#   suite.tsv   which program runs in which phase, and the ctest tests the kit cannot carry, with why;
#   kit.env     what run.sh checks before it starts (the glibc floor, libstdc++, the NCCL gates);
#   MANIFEST    every file with its size and sha256, the commit, the glibc floor, the NCCL versions the
#               code gates on.
# It fails when the folder exceeds 60 MiB, the most that travels with a command to the GPU machine.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 BUILD_DIR OUT_DIR" >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source_dir="$(cd "$here/../.." && pwd)"
max_mib=60

say() { printf 'gpu-kit: %s\n' "$*"; }
die() {
  printf 'gpu-kit: error: %s\n' "$1" >&2
  [[ -n "${2:-}" ]] && printf 'gpu-kit:   what to do: %s\n' "$2" >&2
  exit 1
}

[[ -d "$1" ]] || die "no build directory $1" "run make build first (or make gpu-kit, which builds)"
build="$(cd "$1" && pwd)"
out="$2"
for cmd in ctest ldd strip objdump sha256sum; do
  command -v "$cmd" >/dev/null || die "'$cmd' is not installed" "run make deps (cmake and binutils)"
done
# OUT_DIR is emptied: refuse anything that is not an earlier kit.
if [[ -e "$out" ]]; then
  [[ -d "$out" ]] || die "$out exists and is not a folder" "pick another OUT_DIR"
  if [[ -n "$(ls -A "$out")" && ! -f "$out/MANIFEST" ]]; then
    die "$out is not empty and holds no kit (no MANIFEST): refusing to delete it" "pick another OUT_DIR"
  fi
fi

# --- 1. The suite, as ctest registered it --------------------------------------------------------------
# `ctest -N -V` prints each test's command ("N: Test command: PROGRAM ARGS") before its name ("Test #N:
# NAME"). A gtest test has a --gtest_filter; the others are named below or the kit refuses to be built.
say "reading the suite from ctest in $build (labels gpu and gpu-emulated)"
suite_rows() {  # LABEL -> "label<TAB>ctest name<TAB>program<TAB>1 if gtest"
  ctest --test-dir "$build" -N -V -L "^$1\$" 2>/dev/null | awk -v label="$1" '
    /^[0-9]+: Test command: / { n = $1; sub(/:$/, "", n); program[n] = $4; gtest[n] = ($0 ~ /"--gtest_filter=/); next }
    /^ *Test +#[0-9]+: / {
      n = $2; sub(/^#/, "", n); sub(/:$/, "", n)
      name = $0; sub(/^ *Test +#[0-9]+: /, "", name); sub(/  # .*$/, "", name)
      print label "\t" name "\t" program[n] "\t" gtest[n] + 0
    }'
}
rows="$(suite_rows gpu; suite_rows gpu-emulated)"
[[ "$(grep -c "^gpu	" <<<"$rows")" -gt 0 ]] \
  || die "ctest lists no test labelled gpu in $build" "configure and build the worker runtime: make build"

native="$(find "$build/python" -maxdepth 2 -name '_native.cpython-*.so' 2>/dev/null | head -1 || true)"
native_tag="$(basename "${native:-unknown}" | sed -n 's/^_native\.cpython-\([0-9]*\)-.*/cp\1/p')"
[[ -n "$native_tag" ]] || native_tag="another CPython"
suite_tsv="$(mktemp)"
trap 'rm -f "$suite_tsv"' EXIT
gtest_programs=()
while IFS=$'\t' read -r label name program is_gtest; do
  if [[ "$is_gtest" == 1 ]]; then
    [[ "$program" == "$build/bin/"* ]] || die "$name runs $program, which is not in $build/bin" "teach tests/gpu_kit/make_kit.sh where it lives"
    printf 'gtest\t%s\t%s\n' "$label" "$(basename "$program")" >>"$suite_tsv"
    continue
  fi
  case "$name" in
    *.python.*)
      # pytest against the _native module of the build's CPython; the GPU machine's Python is another one.
      printf 'absent\t%s\t%s\t%s\n' "$label" "$name" \
        "_native is built for $native_tag (build/venv), not for the GPU machine's Python; run it from a build tree (make test-$label)" \
        >>"$suite_tsv" ;;
    gpu-emulated.RingmasterPerf.*) ;;     # run.sh runs the same ringmaster-perf checks, emulated and real
    gpu-emulated.GpuKit.*) ;;             # this kit's own check (check_clean_root.sh)
    *) die "ctest test '$name' (label $label) runs $program, neither a gtest program nor one the kit knows" \
           "add it to tests/gpu_kit/make_kit.sh (and run.sh) or tell the kit why it cannot carry it" ;;
  esac
done <<<"$rows"
sort -u -o "$suite_tsv" "$suite_tsv"
mapfile -t gtest_programs < <(awk -F'\t' '$1 == "gtest" {print $3}' "$suite_tsv" | sort -u)
# The programs the tests start (the elastic test runs ringmaster-run over the example trainer, from
# $RINGMASTER_BIN_DIR: worker-runtime/testing/chaos_harness.cc) and run.sh's ringmaster-perf checks.
helpers=(ringmaster-run ringmaster-train-example ringmaster-perf)
programs=("${gtest_programs[@]}" "${helpers[@]}")
emulation="$build/lib/libringmaster_emulated_gpu.so"
for p in "${programs[@]}"; do [[ -x "$build/bin/$p" ]] || die "$build/bin/$p is missing" "run make build"; done
[[ -f "$emulation" ]] || die "$emulation is missing" "run make build (target ringmaster_emulated_gpu)"
say "suite: ${#gtest_programs[@]} gtest programs (${gtest_programs[*]}); with ${helpers[*]}"

# --- 2. Programs and libraries ---------------------------------------------------------------------------
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib/toolchain"
say "copying ${#programs[@]} programs and the GPU emulation"
for p in "${programs[@]}"; do cp "$build/bin/$p" "$out/bin/"; done
cp "$emulation" "$out/lib/"

# What the machine brings itself: glibc (the loader, libc, libm, ...) and the GPU's own libraries, which
# must match its driver (libcuda, libnvidia-ml) or come from torch (libnccl, libcudart: one per process).
is_machine_lib() {
  case "$1" in
    linux-vdso.so.*|ld-linux*.so.*|libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libresolv.so.*) return 0 ;;
    libcuda.so.*|libnvidia-ml.so.*|libnccl.so.*|libcudart.so.*) return 0 ;;
  esac
  return 1
}
say "bundling the shared libraries they load (ldd), apart from glibc's and the GPU's"
for f in "$out"/bin/* "$out"/lib/*.so; do
  while read -r name arrow path _; do
    [[ "$arrow" == "=>" ]] || continue
    is_machine_lib "$name" && continue
    [[ "$path" == /* && -f "$path" ]] || die "$(basename "$f") needs $name, which ldd cannot resolve here" "run make deps"
    case "$name" in
      # GCC's runtime: the kit's copy needs the glibc it was built with (see kit.env), so run.sh chooses.
      libstdc++.so.*|libgcc_s.so.*) dest="$out/lib/toolchain/$name" ;;
      *) dest="$out/lib/$name" ;;
    esac
    [[ -f "$dest" ]] || cp -L "$path" "$dest"
  done < <(ldd "$f")
done
chmod -R u+w "$out"
say "stripping (strip --strip-unneeded)"
strip --strip-unneeded "$out"/bin/* "$out"/lib/*.so* "$out"/lib/toolchain/*

# The newest versioned symbol of a prefix (GLIBC_, GLIBCXX_) that files need: "2.34", "3.4.30".
# Empty for a file that is not ELF.
newest() {
  local prefix="$1" f; shift
  for f in "$@"; do objdump -T "$f" 2>/dev/null || true; done | { grep -o "${prefix}[0-9][0-9.]*[0-9]" || true; } |
    sed "s/^$prefix//" | sort -u -V | tail -1
}
kit_files=("$out"/bin/* "$out"/lib/*.so*)
glibc_floor="$(newest GLIBC_ "${kit_files[@]}")"
toolchain_glibc="$(newest GLIBC_ "$out"/lib/toolchain/*)"
glibcxx="$(newest GLIBCXX_ "${kit_files[@]}")"
[[ -n "$glibc_floor" && -n "$glibcxx" ]] || die "objdump found no GLIBC_/GLIBCXX_ symbol versions" "check binutils (make deps)"

# --- 3. What run.sh needs to know ------------------------------------------------------------------------
# The NCCL versions the code gates on, as the code says them (worker-runtime/nccl/nccl_version.h).
gates="$(sed -n 's/.*bool Has\([A-Za-z]*\)() const { return code >= \([0-9]*\); }.*/\1:\2/p' \
          "$source_dir/worker-runtime/nccl/nccl_version.h" | tr '\n' ' ')"
[[ -n "$gates" ]] || die "no NCCL version gate found in worker-runtime/nccl/nccl_version.h" "update the sed in tests/gpu_kit/make_kit.sh"
version_of_code() { printf '%d.%d.%d' "$(($1 / 10000))" "$(($1 % 10000 / 100))" "$(($1 % 100))"; }
nccl_header="$(sed -n 's/^RINGMASTER_NCCL_INCLUDE_DIR:PATH=//p' "$build/CMakeCache.txt" 2>/dev/null || true)/nccl.h"
nccl_compiled="$(awk '/#define NCCL_(MAJOR|MINOR|PATCH) / {v[$2] = $3} END {if (v["NCCL_MAJOR"] != "") printf "%s.%s.%s", v["NCCL_MAJOR"], v["NCCL_MINOR"], v["NCCL_PATCH"]}' "$nccl_header" 2>/dev/null || true)"
commit="$(git -C "$source_dir" rev-parse HEAD 2>/dev/null || echo unknown)"
# --no-optional-locks: reading the tree's state never rewrites git's index (another hand may be committing).
if [[ "$commit" != unknown ]] && ! git -C "$source_dir" --no-optional-locks diff --quiet HEAD -- 2>/dev/null; then
  commit="$commit (with uncommitted changes)"
fi
built_on="$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-unknown}"), glibc $(getconf GNU_LIBC_VERSION | awk '{print $2}')"

cp "$suite_tsv" "$out/suite.tsv"
{
  echo "# Read by run.sh (tests/gpu_kit/make_kit.sh wrote it)."
  printf 'KIT_COMMIT=%q\n' "$commit"
  printf 'KIT_BUILT=%q\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ) on $built_on"
  printf 'KIT_GLIBC_FLOOR=%q\n' "$glibc_floor"
  printf 'KIT_TOOLCHAIN_GLIBC=%q\n' "$toolchain_glibc"
  printf 'KIT_GLIBCXX=%q\n' "$glibcxx"
  printf 'KIT_NCCL_COMPILED=%q\n' "${nccl_compiled:-unknown}"
  printf 'KIT_NCCL_GATES=%q\n' "$gates"
} >"$out/kit.env"
cp "$here/run.sh" "$out/run.sh"
cp "$here/README.md" "$out/README.md"
chmod +x "$out/run.sh"

gate_text="$(for g in $gates; do printf '%s >= %s, ' "${g%%:*}" "$(version_of_code "${g#*:}")"; done)"
{
  echo "# Ringmaster GPU kit (tests/gpu_kit): on the GPU machine run ./run.sh; README.md says more."
  echo "commit: $commit"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $built_on"
  echo "glibc floor: GLIBC_$glibc_floor, the newest glibc symbol version the programs and bundled libraries need (each file's below)"
  echo "libstdc++: GLIBCXX_$glibcxx needed; the kit's own (lib/toolchain) needs GLIBC_$toolchain_glibc: run.sh uses it where"
  echo "  glibc is that new, else the machine's libstdc++ (which must have GLIBCXX_$glibcxx: GCC >= 12's)"
  echo "from the machine: glibc, an NVIDIA driver >= 580 (libcuda.so.1, libnvidia-ml.so.1, nvidia-smi), NCCL and the CUDA"
  echo "  runtime (torch's wheels in python3's site-packages, the CUDA toolkit's libcudart.so.13, or RINGMASTER_NCCL_LIBRARY /"
  echo "  RINGMASTER_CUDART_LIBRARY)"
  echo "nccl: compiled against nccl.h ${nccl_compiled:-unknown}; the code gates on the loaded NCCL's version (nccl_version.h):"
  echo "  ${gate_text%, }"
  echo "suite: $(awk -F'\t' '$1 == "gtest" {print $2 ": " $3}' "$suite_tsv" | paste -sd ';' | sed 's/;/; /g')"
  awk -F'\t' '$1 == "absent" {print "not in the kit: " $3 ": " $4}' "$suite_tsv"
  echo "files (sha256, bytes, newest GLIBC_ symbol, path):"
  (cd "$out" && find . -type f ! -name MANIFEST | sort | while read -r f; do
     need="$(newest GLIBC_ "$f")"
     printf '  %s %9d %-11s %s\n' "$(sha256sum "$f" | cut -d' ' -f1)" "$(stat -c %s "$f")" "${need:+GLIBC_$need}" "${f#./}"
   done)
} >"$out/MANIFEST"

# --- 4. Size ---------------------------------------------------------------------------------------------
bytes="$(du -sb "$out" | cut -f1)"
mib="$(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1048576}')"
echo "total: $(find "$out" -type f | wc -l) files, $bytes bytes ($mib MiB; at most $max_mib MiB travel)" >>"$out/MANIFEST"
say "$out: $mib MiB in $(find "$out" -type f | wc -l) files; glibc floor GLIBC_$glibc_floor (libstdc++: GLIBCXX_$glibcxx;" \
    "the kit's own where glibc >= $toolchain_glibc); NCCL compiled ${nccl_compiled:-unknown}"
((bytes <= max_mib * 1024 * 1024)) \
  || die "the kit is $mib MiB, over the $max_mib MiB that travel to the GPU machine" \
         "see the largest files in $out/MANIFEST; drop or shrink what is not the suite's"
