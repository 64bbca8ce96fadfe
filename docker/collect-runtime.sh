#!/bin/sh
# collect-runtime.sh MODE ROOT PROGRAM...: copies each program and the shared libraries it loads (ldd's
# closure) into the image root ROOT, stripped of debug info, for a final stage to COPY whole.
#   MODE=system     every library, glibc and the loader included, at the paths ldd reports: for a base
#                   with no libraries at all (scratch). The programs go to ROOT/usr/local/bin.
#   MODE=/opt/DIR   a relocatable tree for a base that has glibc and libstdc++ (a PyTorch image): the programs
#                   go to ROOT/opt/DIR/bin, the other libraries to ROOT/opt/DIR/lib, found through RUNPATH
#                   $ORIGIN/../lib. Python extension modules given as PROGRAM go to ROOT/opt/DIR/python/...
#                   (see PYTHON_PACKAGE_DIR below).
# Fails (exit 1, naming it) when a library cannot be found: an image that cannot start is not written.
set -eu
mode="$1" root="$2"
shift 2
# Supplied by every glibc-based image; never copied into a relocatable tree.
base_libs='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|libstdc\+\+\.so|libgcc_s\.so)'

copy_lib() {  # copy_lib PATH DESTDIR: the real file under its soname, as ldd names it
  mkdir -p "$2"
  cp -L "$1" "$2/$(basename "$1")"
  chmod 0755 "$2/$(basename "$1")"
  strip --strip-debug "$2/$(basename "$1")" 2>/dev/null || true
}

for program in "$@"; do
  [ -f "$program" ] || { echo "collect-runtime: $program does not exist" >&2; exit 1; }
  if ldd "$program" | grep -q "not found"; then
    echo "collect-runtime: $program has unresolved libraries:" >&2
    ldd "$program" | grep "not found" >&2
    exit 1
  fi
  case "$mode" in
    system)
      dest="$root/usr/local/bin"
      mkdir -p "$dest"
      cp "$program" "$dest/"
      strip --strip-debug "$dest/$(basename "$program")"
      patchelf --remove-rpath "$dest/$(basename "$program")"
      ldd "$program" | awk '/=> \//{print $3} /^\t\//{print $1}' | while read -r lib; do
        copy_lib "$lib" "$root$(dirname "$lib")"
      done
      ;;
    /opt/*)
      case "$program" in
        *.so) dest="$root$mode/python/${PYTHON_PACKAGE_DIR:?set PYTHON_PACKAGE_DIR for a Python module}"
              rpath='$ORIGIN/../../lib' ;;
        *)    dest="$root$mode/bin"; rpath='$ORIGIN/../lib' ;;
      esac
      mkdir -p "$dest"
      cp "$program" "$dest/"
      strip --strip-debug "$dest/$(basename "$program")"
      patchelf --set-rpath "$rpath" "$dest/$(basename "$program")"
      ldd "$program" | awk '/=> \//{print $1, $3}' | while read -r name lib; do
        if echo "$name" | grep -Eq "$base_libs"; then continue; fi
        copy_lib "$lib" "$root$mode/lib"
        patchelf --set-rpath '$ORIGIN' "$root$mode/lib/$(basename "$lib")"
      done
      ;;
    *) echo "collect-runtime: MODE must be 'system' or /opt/<dir>, not '$mode'" >&2; exit 1 ;;
  esac
  echo "collect-runtime: $(basename "$program") and its libraries -> $root"
done
