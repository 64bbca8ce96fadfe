#!/usr/bin/env bash
# Pushes the images `make images` wrote (build/images/ringmaster-operator.tar, ringmaster-worker.tar,
# ringmaster-worker-tensorflow.tar: OCI
# archives tagged with the chart's appVersion) to a registry with skopeo: no Docker daemon needed.
#
#   REGISTRY=registry.example.com/team docker/push-images.sh       (make push REGISTRY=...)
#
# Each image lands as $REGISTRY/<name>:<version>. SKOPEO_ARGS passes options to `skopeo copy` (for example
# --dest-creds user:token, or --dest-tls-verify=false for a registry without TLS); skopeo also reads the
# credentials `skopeo login` / `podman login` stored. PUSH_TRANSPORT (default docker://) is skopeo's
# destination transport: oci: writes an OCI layout directory instead (what the test of this script uses).
# PUSH_IMAGES (default: all three) names the images to push.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
images_dir="${IMAGES_DIR:-$root/build/images}"
transport="${PUSH_TRANSPORT:-docker://}"

die() { echo "ringmaster: error: $1" >&2; exit 1; }
[[ -n "${REGISTRY:-}" ]] || die "REGISTRY is not set: make push REGISTRY=<registry host>/<path> (for example ghcr.io/my-team)"
command -v skopeo >/dev/null || die "skopeo is not installed: run make deps"
version="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$root/helm/ringmaster/Chart.yaml")"
[[ -n "$version" ]] || die "no appVersion in helm/ringmaster/Chart.yaml"

read -r -a extra <<<"${SKOPEO_ARGS:-}"
for name in ${PUSH_IMAGES:-ringmaster-operator ringmaster-worker ringmaster-worker-tensorflow}; do
  archive="$images_dir/$name.tar"
  [[ -f "$archive" ]] || die "$archive does not exist: run make images first"
  dest="${transport}${REGISTRY%/}/$name:$version"
  echo "push: $name:$version ($(du -h "$archive" | cut -f1)) -> $dest"
  skopeo copy --quiet "${extra[@]}" "oci-archive:$archive:$version" "$dest" \
    || die "skopeo could not push $name to $dest (see above); for credentials pass SKOPEO_ARGS='--dest-creds USER:TOKEN' or run skopeo login"
done
echo "push: done. Install the operator from it: helm install ringmaster helm/ringmaster --set image.repository=${REGISTRY%/}/ringmaster-operator;"
echo "      and name ${REGISTRY%/}/ringmaster-worker:$version (PyTorch) or ringmaster-worker-tensorflow:$version as your"
echo "      TrainingJob template's image."
