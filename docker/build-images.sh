#!/usr/bin/env bash
# make images: builds the shipped Dockerfiles without a Docker daemon or a registry, and writes them as OCI
# archives under build/images/ (ringmaster-operator.tar, ringmaster-worker.tar and its TensorFlow variant
# ringmaster-worker-tensorflow.tar), each tagged with the
# chart's appVersion. Steps:
#   1. Two Debian bases bootstrapped from Debian's packages with mmdebstrap (cached by their package lists):
#      the build stage's (docker/build-packages.txt) and a runtime base with CPython 3.11.
#   2. docker/operator/Dockerfile and docker/worker/Dockerfile with buildah (--isolation chroot), their
#      build stage compiling with the machine's ccache and NCCL/CUDA prefix mounted in; the worker's final
#      stage on the runtime base, pip reading the pinned torch from the project's wheel cache (the
#      TensorFlow variant: the Dockerfile's `tensorflow` stage, the pinned tensorflow-cpu).
#   3. buildah push to oci-archive:, only when the image changed; the sizes are printed.
# Images and their layer cache live in $RINGMASTER_CACHE/containers (overlay storage where the kernel
# allows it, else vfs), so a fresh clone rebuilds only what changed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../tests/harness/lib.sh"

OUT="${IMAGES_DIR:-$RINGMASTER_ROOT/build/images}"
STORE="$RINGMASTER_CACHE/containers"
SUITE=bookworm
MIRRORS=("deb http://deb.debian.org/debian $SUITE main" "deb http://deb.debian.org/debian $SUITE-updates main"
         "deb http://deb.debian.org/debian-security $SUITE-security main")
VERSION="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$RINGMASTER_ROOT/helm/ringmaster/Chart.yaml")"
[[ -n "$VERSION" ]] || die "no appVersion in helm/ringmaster/Chart.yaml" "the images are tagged with it"
for cmd in mmdebstrap buildah; do need_cmd "$cmd" "run make deps (it installs mmdebstrap and buildah)"; done

# overlay keeps one copy of each layer; vfs (a full copy per layer) works everywhere.
storage_driver() {
  local probe; probe="$(mktemp -d)"
  mkdir -p "$probe"/{l,u,w,m}
  if mount -t overlay overlay -o "lowerdir=$probe/l,upperdir=$probe/u,workdir=$probe/w" "$probe/m" 2>/dev/null; then
    umount "$probe/m"; rm -rf "$probe"; echo overlay
  else
    rm -rf "$probe"; echo vfs
  fi
}
mkdir -p "$STORE" "$OUT"
DRIVER_FILE="$STORE/driver"  # storage cannot change driver once it holds images
[[ -f "$DRIVER_FILE" ]] || storage_driver >"$DRIVER_FILE"
BUILDAH=(buildah --root "$STORE/storage" --runroot "$STORE/run" --storage-driver "$(cat "$DRIVER_FILE")")

has_image() { "${BUILDAH[@]}" inspect --type image "$1" >/dev/null 2>&1; }
image_id() { "${BUILDAH[@]}" inspect --type image --format '{{.FromImageID}}' "$1"; }

# bootstrap_base NAME VARIANT PACKAGES...: localhost/ringmaster-NAME-base:<hash of what goes in>.
bootstrap_base() {
  local name="$1" variant="$2"; shift 2
  local key; key="$(printf '%s\n' "$SUITE" "$variant" "$@" "${MIRRORS[@]}" | sha256sum | cut -c1-12)"
  local ref="localhost/ringmaster-$name-base:$key"
  if has_image "$ref"; then
    log "images: base $name present ($ref)" >&2
    echo "$ref"
    return
  fi
  local tar="$STORE/$name-base-$key.tar"
  log "images: bootstrapping base $name from Debian $SUITE ($variant, $# extra packages) with mmdebstrap" >&2
  run_with_heartbeat "images: mmdebstrap $name" "$STORE/$name-base.log" \
    mmdebstrap --variant="$variant" --include="$(IFS=,; echo "$*")" --aptopt='Acquire::Retries "3"' \
      --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
      "$SUITE" "$tar" "${MIRRORS[@]}" >&2 \
    || die "mmdebstrap could not bootstrap the $name base (log: $STORE/$name-base.log)" "check that Debian's mirror is reachable"
  local ctr; ctr="$("${BUILDAH[@]}" from --name "ringmaster-$name-base-$key" scratch)"
  "${BUILDAH[@]}" add "$ctr" "$tar" / >/dev/null
  "${BUILDAH[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd /bin/bash \
    --label "org.opencontainers.image.description=Debian $SUITE ($variant) + $*" "$ctr"
  "${BUILDAH[@]}" commit --rm -q "$ctr" "$ref" >/dev/null
  rm -f "$tar" "$STORE/$name-base.log"
  echo "$ref"
}

# build NAME DOCKERFILE BUILD-ARGS...: buildah bud into localhost/NAME:VERSION, its layers cached.
build() {
  local name="$1" dockerfile="$2"; shift 2
  local start=$SECONDS
  log "images: building $name from $dockerfile"
  run_with_heartbeat "images: buildah bud $name" "$STORE/$name.build.log" \
    "${BUILDAH[@]}" bud --layers --isolation chroot --format oci -f "$RINGMASTER_ROOT/$dockerfile" \
      -t "localhost/$name:$VERSION" --build-arg "VERSION=$VERSION" \
      --build-arg "REVISION=$(git -C "$RINGMASTER_ROOT" rev-parse HEAD 2>/dev/null || echo unknown)" "$@" \
      "$RINGMASTER_ROOT" \
    || die "building $name failed (log: $STORE/$name.build.log)" "see the log's tail above"
  grep -E '^(STEP|COMMIT|build packages|collect-runtime|--> Using cache)' "$STORE/$name.build.log" | sed 's/^/    /' >&2 || true
  log "images: $name built in $((SECONDS - start))s"
}

# export NAME: build/images/NAME.tar (an OCI archive tagged VERSION), rewritten only when the image changed.
export_archive() {
  local name="$1" id archive="$OUT/$1.tar"
  id="$(image_id "localhost/$name:$VERSION")"
  if [[ -f "$archive" && "$(cat "$archive.id" 2>/dev/null)" == "$id" ]]; then
    log "images: $archive is up to date"
  else
    local start=$SECONDS
    rm -f "$archive" "$archive.id" "$archive.tmp"
    run_with_heartbeat "images: writing $archive" "$STORE/$name.push.log" \
      "${BUILDAH[@]}" push -q "localhost/$name:$VERSION" "oci-archive:$archive.tmp:$VERSION" \
      || die "writing $archive failed (log: $STORE/$name.push.log)" "check the free disk space"
    mv "$archive.tmp" "$archive"
    echo "$id" >"$archive.id"
    log "images: wrote $archive in $((SECONDS - start))s"
  fi
}

# make_room WHEN: every source change leaves the previous images' layers behind as the layer cache. Past the
# store's limit, or when the disk runs short of room for a build (a worker image needs ~7 GB of layers and
# ~4 GB of archive), the store's untagged layers go (the next build recompiles, from ccache).
make_room() {
  local used_gb free_gb min_free="${RINGMASTER_IMAGE_MIN_FREE_GB:-20}" max_store="${RINGMASTER_IMAGE_STORE_MAX_GB:-40}"
  used_gb="$(du -s --block-size=1G "$STORE" | cut -f1)"
  free_gb="$(df --output=avail --block-size=1G "$STORE" | tail -1 | tr -dc 0-9)"
  if ((used_gb > max_store || free_gb < min_free)); then
    log "images ($1 building): $STORE holds ${used_gb} GB (limit $max_store), ${free_gb} GB free on its disk" \
        "(want $min_free); removing untagged layers"
    "${BUILDAH[@]}" rmi --prune >/dev/null || log "images: pruning failed; remove $STORE by hand if space runs short"
    log "images: $(df --output=avail --block-size=1G "$STORE" | tail -1 | tr -dc 0-9) GB free now"
  fi
}

start=$SECONDS
make_room before
build_base="$(bootstrap_base build minbase $(sed 's/#.*//' "$RINGMASTER_ROOT/docker/build-packages.txt"))"
runtime_base="$(bootstrap_base python minbase python3.11 python3.11-venv ca-certificates)"

# The build stage compiles with this machine's ccache (paths relative to /src, as ours are to the checkout)
# and reads NCCL/CUDA and the pinned wheels from the caches make deps filled.
[[ -d "$RINGMASTER_CACHE/wheels" && -d "$RINGMASTER_CACHE/cuda" ]] || die "the wheel and CUDA caches are missing" "run make deps"
CCACHE_HOST_DIR="$(ccache -k cache_dir 2>/dev/null || echo "$HOME/.cache/ccache")"
mkdir -p "$CCACHE_HOST_DIR"
build_stage=(--build-arg "BUILD_IMAGE=$build_base"
             -v "$CCACHE_HOST_DIR:/var/cache/ccache" --build-arg CCACHE_DIR=/var/cache/ccache
             --build-arg CCACHE_BASEDIR=/src --build-arg CCACHE_NOHASHDIR=1
             --build-arg "CCACHE_MAXSIZE=$(ccache -k max_size 2>/dev/null || echo 10G)")
wheels=(-v "$RINGMASTER_CACHE/wheels:/var/cache/ringmaster/wheels:ro" -v "$RINGMASTER_CACHE/cuda:/var/cache/ringmaster/cuda:ro"
        --build-arg RINGMASTER_CACHE=/var/cache/ringmaster
        --build-arg PIP_FIND_LINKS=/var/cache/ringmaster/wheels --build-arg PIP_NO_INDEX=1)

build ringmaster-operator docker/operator/Dockerfile "${build_stage[@]}"
build ringmaster-worker docker/worker/Dockerfile "${build_stage[@]}" "${wheels[@]}" --build-arg "PYTHON_IMAGE=$runtime_base"
build ringmaster-worker-tensorflow docker/worker/Dockerfile "${build_stage[@]}" "${wheels[@]}" \
  --build-arg "PYTHON_IMAGE=$runtime_base" --target tensorflow

export_archive ringmaster-operator
export_archive ringmaster-worker
export_archive ringmaster-worker-tensorflow

make_room after
log "images: done in $((SECONDS - start))s (storage: $(du -sh "$STORE" 2>/dev/null | cut -f1) in $STORE)"
for name in ringmaster-operator ringmaster-worker ringmaster-worker-tensorflow; do
  size="$("${BUILDAH[@]}" images --format '{{.Size}}' "localhost/$name:$VERSION" | head -n1)"
  printf '  %-22s %s:%s  unpacked %-9s  archive %s\n' "$name" "$name" "$VERSION" "$size" \
    "$(du -h "$OUT/$name.tar" | cut -f1) ($OUT/$name.tar)"
done
