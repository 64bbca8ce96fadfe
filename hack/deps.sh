#!/usr/bin/env bash
# make deps: installs everything the build and the tests need, non-interactively and idempotently.
#   deps.sh [all|apt|cuda|tools]      (default: all)
# A second run on a machine that has it all only checks, and finishes in seconds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../tests/harness/lib.sh"

APT_PACKAGES=(
  # toolchain
  cmake ninja-build g++ make pkg-config git ccache
  # libraries the code links
  libcpprest-dev nlohmann-json3-dev libyaml-cpp-dev libssl-dev libgloo-dev libcli11-dev prometheus-cpp-dev
  # tests, fuzzing (libFuzzer ships in clang's runtime), sanitizers
  libgtest-dev libgmock-dev googletest clang-14 libclang-rt-14-dev
  # the local control plane harness; a real Prometheus that scrapes what we export
  openssl curl ca-certificates procps iproute2 unzip prometheus
  # the Python package: the pinned interpreter's headers and venv
  python3.11 python3.11-dev python3.11-venv
  # make crd and its check (hack/crd/gen_crd.py reads YAML with the system python3)
  python3-yaml
  # make images: a Debian base bootstrapped from packages, the Dockerfiles built without a daemon, OCI archives
  mmdebstrap buildah skopeo
  # real nodes (tests/harness/cluster/real_nodes.sh): the container runtime, pod networks, an image registry,
  # and busybox for the node images (built with umoci)
  containerd runc containernetworking-plugins docker-registry busybox-static iptables umoci
)

install_apt() {
  local missing=() pkg
  for pkg in "${APT_PACKAGES[@]}"; do
    [[ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" == "install ok installed" ]] || missing+=("$pkg")
  done
  if ((${#missing[@]} == 0)); then
    log "apt: all ${#APT_PACKAGES[@]} Debian packages present"
    return
  fi
  local sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null || die "apt: need root to install ${missing[*]}" "run make deps as root or install sudo"
    sudo=(sudo)
  fi
  log "apt: installing ${missing[*]}"
  # RUNLEVEL=1: install services (prometheus) without starting them; tests run their own instances.
  local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get)
  "${apt[@]}" update -q >/dev/null || die "apt-get update failed" "check that Debian's package mirror is reachable"
  "${apt[@]}" install -y -q --no-install-recommends "${missing[@]}" \
    || die "apt-get install failed for: ${missing[*]}" "see apt's message above"
}

# NCCL + CUDA runtime headers and libraries from NVIDIA's PyPI wheels, unpacked into a cache directory
# keyed by version and linked at build/deps/cuda (the prefix CMake looks in); and the old NCCL the
# fallback tests load, in its own cache directory linked at build/deps/nccl-old (not in the prefix, so the
# worker image's build stage, which copies the prefix, does not carry it).
install_cuda() {
  local key dir link="$RINGMASTER_ROOT/build/deps/cuda"
  key="${NCCL_WHEEL//==/-}_${CUDA_RUNTIME_WHEEL//==/-}_${CUDA_CRT_WHEEL//==/-}_${CUDA_CCCL_WHEEL//==/-}"
  dir="$RINGMASTER_CACHE/cuda/$key"
  if [[ ! -f "$dir/.complete" ]]; then
    local tmp; tmp="$(cuda_scratch "$dir")"
    log "cuda: downloading $NCCL_WHEEL, $CUDA_RUNTIME_WHEEL, $CUDA_CRT_WHEEL, $CUDA_CCCL_WHEEL from PyPI (~250 MB, cached by pip)"
    fetch_wheels "$tmp" "$NCCL_WHEEL" "$CUDA_RUNTIME_WHEEL" "$CUDA_CRT_WHEEL" "$CUDA_CCCL_WHEEL"
    log "cuda: unpacking headers and libraries"
    mkdir -p "$tmp/prefix/include" "$tmp/prefix/lib"
    # Each wheel keeps its files under nvidia/<component>/{include,lib} (cu12: nvidia/nccl, nvidia/cuda_runtime,
    # nvidia/cuda_nvcc, nvidia/cuda_cccl) or, from CUDA 13, under one shared nvidia/cu13/{include,lib}; NCCL's
    # stay under nvidia/nccl. So the pieces are picked by what they hold, not by where.
    local inc
    for inc in "$tmp"/x/*/nvidia/*/include; do
      if [[ -f "$inc/nccl.h" || -f "$inc/cuda_runtime_api.h" ]]; then   # NCCL's, the runtime's: headers and .so
        cp -a "$inc/." "$tmp/prefix/include/"
        cp -a "$(dirname "$inc")"/lib/lib*.so* "$tmp/prefix/lib/"
      elif [[ -d "$inc/crt" ]]; then                                      # the nvcc (cu12) or crt (cu13) wheel
        cp -a "$inc/crt" "$tmp/prefix/include/"
      elif [[ -d "$inc/nv" ]]; then                                       # the cccl wheel: only nv/
        cp -a "$inc/nv" "$tmp/prefix/include/"
      fi
    done
    local f
    for f in include/nccl.h include/cuda_runtime_api.h include/crt/host_defines.h include/nv/target lib/libnccl.so.2; do
      [[ -e "$tmp/prefix/$f" ]] || die "the wheels did not contain $f" "check the wheel names in tests/harness/versions.env"
    done
    local cudart=("$tmp"/prefix/lib/libcudart.so.*)
    [[ -f "${cudart[0]}" ]] || die "the wheels did not contain libcudart.so.*" "check CUDA_RUNTIME_WHEEL in tests/harness/versions.env"
    ln -sf libnccl.so.2 "$tmp/prefix/lib/libnccl.so"
    ln -sf "$(basename "${cudart[0]}")" "$tmp/prefix/lib/libcudart.so"
    touch "$tmp/prefix/.complete"
    mv "$tmp/prefix" "$dir"
    rm -rf "$tmp"
  fi
  mkdir -p "$(dirname "$link")"
  ln -sfn "$dir" "$link"
  log "cuda: NCCL $(sed -n 's/^#define NCCL_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\).*/\2/p' "$dir/include/nccl.h" | paste -sd.)," \
      "CUDA runtime $(sed -n 's/^#define CUDART_VERSION *\([0-9]*\).*/\1/p' "$dir/include/cuda_runtime_api.h") at $link"

  local old="$RINGMASTER_CACHE/cuda/old-${NCCL_OLD_WHEEL//==/-}" old_link="$RINGMASTER_ROOT/build/deps/nccl-old"
  if [[ ! -f "$old/.complete" ]]; then
    local tmp; tmp="$(cuda_scratch "$old")"
    log "cuda: downloading $NCCL_OLD_WHEEL (an NCCL without Shrink/Revoke, for the fallback tests; ~190 MB)"
    fetch_wheels "$tmp" "$NCCL_OLD_WHEEL"
    mkdir -p "$tmp/old"
    cp -a "$tmp"/x/*/nvidia/nccl/lib/libnccl.so.2 "$tmp/old/" \
      || die "$NCCL_OLD_WHEEL did not contain nvidia/nccl/lib/libnccl.so.2" "check NCCL_OLD_WHEEL in tests/harness/versions.env"
    touch "$tmp/old/.complete"
    mv "$tmp/old" "$old"
    rm -rf "$tmp"
  fi
  ln -sfn "$old" "$old_link"
  log "cuda: old NCCL ($NCCL_OLD_WHEEL) at $old_link/libnccl.so.2"
}

# cuda_scratch DIR: removes DIR and any half-unpacked scratch (a half-unpacked prefix is never reused), and
# prints a fresh scratch directory beside it.
cuda_scratch() {
  mkdir -p "$RINGMASTER_CACHE/cuda"
  rm -rf "$1" "$RINGMASTER_CACHE"/cuda/.tmp.*
  mktemp -d "$RINGMASTER_CACHE/cuda/.tmp.XXXXXX"
}

# fetch_wheels TMP WHEEL...: downloads the wheels (no dependencies) into TMP/wheels and unpacks each one's
# nvidia/ tree into its own TMP/x/<wheel>/.
fetch_wheels() {
  local tmp="$1"; shift
  local python; python="$(command -v python3 || true)"
  [[ -n "$python" ]] || die "python3 not found; it is needed to fetch the NCCL wheels with pip" "install python3 with pip"
  "$python" -m pip --version >/dev/null 2>&1 || die "pip is not available for $python" "install pip (python3 -m ensurepip)"
  "$python" -m pip download --no-deps --disable-pip-version-check --progress-bar off -q -d "$tmp/wheels" "$@" \
    || die "pip could not download $*" "check that PyPI is reachable and the versions in tests/harness/versions.env exist"
  local whl
  mkdir -p "$tmp/x"
  for whl in "$tmp"/wheels/*.whl; do
    unzip -q -o "$whl" 'nvidia/*' -d "$tmp/x/$(basename "$whl" .whl)" || die "unpacking $whl failed" "rerun make deps"
  done
}

# The project's virtual environment at build/venv, owned by the pinned interpreter (the native module is
# built against it), with the pinned packages of worker-runtime/python/requirements-dev.txt. pip's cache
# wheels live outside the tree, so a fresh clone reinstalls from them without downloading torch again.
install_python() {
  local venv="$RINGMASTER_ROOT/build/venv" req="$RINGMASTER_ROOT/worker-runtime/python/requirements-dev.txt"
  [[ -x "$PYTHON_INTERPRETER" ]] || die "$PYTHON_INTERPRETER not found" "run make deps as root (apt installs python3.11)"
  local stamp="$venv/.ringmaster-requirements" want
  want="$("$PYTHON_INTERPRETER" --version 2>&1) $(sha256sum "$req" | cut -d' ' -f1)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    log "python: build/venv up to date ($("$venv/bin/python" --version 2>&1), torch $(sed -n 's/^torch==//p' "$req"))"
    return
  fi
  # Remade when it is not the pinned interpreter's, or half-made (an interrupted run left it without pip).
  if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import sys; sys.exit(sys.base_prefix != "/usr")' 2>/dev/null \
     || ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    rm -rf "$venv"
    "$PYTHON_INTERPRETER" -m venv "$venv" || die "creating the venv at $venv failed" "apt install python3.11-venv"
  fi
  # The wheels are kept in the cache (pip's own HTTP cache is not reliable here), then installed from it.
  local wheels="$RINGMASTER_CACHE/wheels"
  mkdir -p "$wheels"
  log "python: fetching $(grep -c '==' "$req") pinned packages into $wheels (torch's wheels are about 3 GB on the first" \
      "run; $(du -sh "$wheels" 2>/dev/null | cut -f1) cached now)"
  run_with_heartbeat "python: pip download" "$venv.pip.log" \
    "$venv/bin/python" -m pip download --disable-pip-version-check --progress-bar off -d "$wheels" -r "$req" \
    || die "pip could not download the Python packages (log: $venv.pip.log)" "check that PyPI is reachable"
  log "python: installing into build/venv from $wheels"
  run_with_heartbeat "python: pip install" "$venv.pip.log" \
    "$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar off --no-index --find-links "$wheels" \
    -r "$req" || die "pip could not install the Python packages (log: $venv.pip.log)" "see the log; rerun make deps"
  rm -f "$venv.pip.log"
  echo "$want" >"$stamp"
  log "python: build/venv ready ($("$venv/bin/python" -c 'import torch; print("torch", torch.__version__)'))"
}

check_go() {
  need_cmd go "install Go >= $GO_MIN_VERSION (Kubernetes $KUBERNETES_VERSION needs it)"
  local have; have="$(go env GOVERSION)"; have="${have#go}"
  if [[ "$(printf '%s\n%s\n' "$GO_MIN_VERSION" "$have" | sort -V | head -n1)" != "$GO_MIN_VERSION" ]]; then
    die "Go $have is too old" "install Go >= $GO_MIN_VERSION"
  fi
}

# build_tool NAME LOGNAME CMD...: runs CMD with $OUT set to a scratch directory, then publishes it as the
# tool's cache directory. The directory appears whole or not at all, so a half-built cache cannot be used.
build_tool() {
  local name="$1"; shift
  local dir; dir="$(tool_dir "$name")"
  if [[ -f "$dir/.complete" ]]; then
    log "tools: $name present ($dir)"
    return
  fi
  mkdir -p "$RINGMASTER_CACHE/tools"
  rm -rf "$dir" "$dir".tmp.*
  OUT="$(mktemp -d "$dir.tmp.XXXXXX")"
  export OUT
  run_with_heartbeat "tools: building $name" "$OUT.log" "$@" || die "building $name failed (log: $OUT.log)" \
    "if a module could not be downloaded, check that the Go module proxy is reachable and rerun make deps"
  touch "$OUT/.complete"
  mv "$OUT" "$dir"
  rm -f "$OUT.log"
}

build_kubernetes() {
  local v="$KUBERNETES_VERSION" minor
  minor="$(cut -d. -f2 <<<"$v")"
  local ldflags="-s -w"
  local pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  cd "$HACK_DIR/gomod/kubernetes"
  echo "downloading modules for k8s.io/kubernetes $v"
  go mod download -x 2>&1 | grep -E '^# get .*\.zip$' || true
  echo "compiling kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet"
  go build -v -trimpath -ldflags "$ldflags" -o "$OUT/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl k8s.io/kubernetes/cmd/kubelet
}

build_etcd() {
  cd "$HACK_DIR/gomod/etcd"
  go build -v -trimpath -ldflags "-s -w" -o "$OUT/etcd" go.etcd.io/etcd/server/v3
}

build_kwok() {
  GOBIN="$OUT" go install -v -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} -X sigs.k8s.io/kwok/pkg/consts.PreRelease=GA" \
    "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
}

# crictl, which the real nodes' teardown uses to stop their pods through the CRI (tests/harness/cluster).
build_crictl() {
  GOBIN="$OUT" go install -v -trimpath -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$CRI_TOOLS_VERSION" \
    "sigs.k8s.io/cri-tools/cmd/crictl@$CRI_TOOLS_VERSION"
}

# The images every real node holds before it pulls anything (docker archives that `ctr images import` takes):
# the pod sandbox, a static pause of our own (hack/node-images/pause.c), and busybox from Debian's
# busybox-static, for tests that need a shell in a pod. Their names are in sandbox-image and busybox-image.
build_node_images() {
  need_cmd umoci "apt install umoci (make deps does)"; need_cmd skopeo "apt install skopeo (make deps does)"
  [[ -x /bin/busybox ]] || die "/bin/busybox is missing" "apt install busybox-static (make deps does)"
  local work="$OUT/work"
  mkdir -p "$work"
  gcc -O2 -static -o "$work/pause" "$HACK_DIR/node-images/pause.c"
  node_image "$work" pause "$NODE_SANDBOX_IMAGE" /pause "$work/pause:/pause"
  node_image "$work" busybox "$NODE_BUSYBOX_IMAGE" /bin/sh /bin/busybox:/bin/busybox
  echo "$NODE_SANDBOX_IMAGE" >"$OUT/sandbox-image"
  echo "$NODE_BUSYBOX_IMAGE" >"$OUT/busybox-image"
  rm -rf "$work"
}

# node_image WORK NAME REF ENTRYPOINT SRC:DST...: a one-layer image holding the files SRC at DST (busybox also
# gets its applets as links), written as WORK/../NAME.tar with the tag REF.
node_image() {
  local work="$1" name="$2" ref="$3" entrypoint="$4"; shift 4
  local layout="$work/$name-layout" bundle="$work/$name-bundle" pair
  umoci init --layout "$layout"
  umoci new --image "$layout:latest"
  umoci unpack --rootless --image "$layout:latest" "$bundle" >/dev/null
  for pair in "$@"; do
    mkdir -p "$bundle/rootfs$(dirname "${pair#*:}")"
    cp "${pair%%:*}" "$bundle/rootfs${pair#*:}"
  done
  if [[ "$name" == busybox ]]; then
    mkdir -p "$bundle/rootfs/bin" "$bundle/rootfs/tmp"
    chmod 1777 "$bundle/rootfs/tmp"
    local applet
    for applet in $("$bundle/rootfs/bin/busybox" --list); do
      [[ -e "$bundle/rootfs/bin/$applet" ]] || ln -s busybox "$bundle/rootfs/bin/$applet"
    done
  fi
  umoci repack --image "$layout:latest" "$bundle"
  umoci config --image "$layout:latest" --config.entrypoint "$entrypoint" --config.user 65534:65534
  skopeo copy --quiet "oci:$layout:latest" "docker-archive:$OUT/$name.tar:$ref"
}

# The real nodes' emulated GPU device plugin (tests/harness/device_plugin): nvidia.com/gpu on a real kubelet.
build_device_plugin() {
  cd "$RINGMASTER_ROOT/tests/harness/device_plugin"
  go build -v -trimpath -ldflags "-s -w" -o "$OUT/ringmaster-emulated-device-plugin" .
}

build_helm() {
  GOBIN="$OUT" go install -v -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
}

# Kueue (cluster.sh up --kueue: tests/harness/cluster/kueue.sh): its manager binary, and beside it the CRDs and
# the webhook configurations that ship in the same module (config/components/crd/bases, .../webhook/manifests.yaml),
# which kueue.sh rewrites to reach the binary on 127.0.0.1.
build_kueue() {
  GOBIN="$OUT" go install -v -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION -X sigs.k8s.io/kueue/pkg/version.GitCommit=none" \
    "sigs.k8s.io/kueue/cmd/kueue@$KUEUE_VERSION" || return 1
  local mod
  mod="$(go mod download -json "sigs.k8s.io/kueue@$KUEUE_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  [[ -d "$mod/config/components/crd/bases" && -f "$mod/config/components/webhook/manifests.yaml" ]] \
    || die "no config/components/{crd/bases,webhook/manifests.yaml} in the kueue module ($mod)" "check the layout of Kueue $KUEUE_VERSION"
  mkdir -p "$OUT/crds"
  cp "$mod"/config/components/crd/bases/*.yaml "$OUT/crds/" && cp "$mod/config/components/webhook/manifests.yaml" "$OUT/" \
    && chmod u+w "$OUT"/crds/*.yaml "$OUT/manifests.yaml"
}

# Debian's prometheus is built without Kubernetes service discovery, which the monitoring tests use: the
# server from its Go module, with only that discovery (build tags), into the tool cache. Debian's package
# stays for promtool.
build_prometheus() {
  cd "$HACK_DIR/gomod/prometheus"
  # Only Kubernetes service discovery: a copy of the module whose plugins.go is ours (plugins.go.overlay says
  # why; Go refuses -overlay for files in the module cache), put in place by a replace in a temporary modfile.
  go mod download github.com/prometheus/prometheus
  local mod src="$OUT/src"
  mod="$(go list -m -f '{{.Dir}}' github.com/prometheus/prometheus)"
  [[ -f "$mod/plugins/plugins.go" ]] || die "no plugins/plugins.go in $mod" "check hack/gomod/prometheus/plugins.go.overlay against the new release"
  cp -r "$mod" "$src" && chmod -R u+w "$src" && cp plugins.go.overlay "$src/plugins/plugins.go" || return 1
  cp go.mod "$OUT/build.mod" && cp go.sum "$OUT/build.sum" || return 1
  echo "replace github.com/prometheus/prometheus => $src" >>"$OUT/build.mod"
  go build -v -trimpath -modfile "$OUT/build.mod" \
    -ldflags "-s -w -X github.com/prometheus/common/version.Version=${PROMETHEUS_VERSION#v}" \
    -o "$OUT/prometheus" github.com/prometheus/prometheus/cmd/prometheus || return 1
  rm -rf "$src" "$OUT/build.mod" "$OUT/build.sum"
}

# Gang scheduling (cluster.sh up --gang: tests/harness/cluster/coscheduling.sh): the scheduler of
# kubernetes-sigs/scheduler-plugins (cmd/scheduler: kube-scheduler with its plugins, Coscheduling among them) from our
# wrapper module (its go.mod says why the module and which Kubernetes it builds on), and beside it the PodGroup CRD
# from the same module. Not its controller (cmd/controller): it only writes PodGroup status, which the plugin does not
# read. Built like kube-scheduler (build_kubernetes: -trimpath, the version in component-base), so the packages the
# two share compile once.
build_scheduler_plugins() {
  cd "$HACK_DIR/gomod/scheduler-plugins"
  local k8s minor ldflags="-s -w" pkg
  k8s="$(go list -m -f '{{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}' k8s.io/kubernetes)" || return 1
  minor="$(cut -d. -f2 <<<"$k8s")"
  # The Kubernetes release it is built on, with ours as build metadata: kube-scheduler derives its binary and
  # emulation version from this; a bare v0.34.7 (scheduler-plugins' own version) reads as Kubernetes 0.34,
  # and the scheduler refuses to start ("emulation version 0.34 is not between [1.31, 0.34.0]").
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$k8s+scheduler-plugins.$SCHEDULER_PLUGINS_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean"
  done
  echo "downloading modules for sigs.k8s.io/scheduler-plugins $SCHEDULER_PLUGINS_VERSION (Kubernetes $k8s)"
  go mod download -x 2>&1 | grep -E '^# get .*\.zip$' || true
  echo "compiling the scheduler (sigs.k8s.io/scheduler-plugins/cmd/scheduler)"
  go build -v -trimpath -ldflags "$ldflags" -o "$OUT/scheduler-plugins" sigs.k8s.io/scheduler-plugins/cmd/scheduler \
    || return 1
  local mod; mod="$(go list -m -f '{{.Dir}}' sigs.k8s.io/scheduler-plugins)" || return 1
  [[ -f "$mod/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml" ]] \
    || die "no config/crd/bases/scheduling.x-k8s.io_podgroups.yaml in $mod" "check the layout of scheduler-plugins $SCHEDULER_PLUGINS_VERSION"
  mkdir -p "$OUT/crds"
  cp "$mod/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml" "$OUT/crds/" && chmod u+w "$OUT"/crds/*.yaml
}

# Kubeflow's training-operator (v1), the peer ringmaster-operator's bench runs beside it on the same
# cluster: the binary from its Go module, and its CRDs, which ship in the module (manifests/base/crds).
build_kubeflow() {
  cd "$HACK_DIR/gomod/kubeflow"
  go build -v -trimpath -ldflags "-s -w" -o "$OUT/training-operator" \
    github.com/kubeflow/training-operator/cmd/training-operator.v1
  local mod; mod="$(go list -m -f '{{.Dir}}' github.com/kubeflow/training-operator)"
  mkdir -p "$OUT/crds"
  cp "$mod"/manifests/base/crds/kubeflow.org_*.yaml "$OUT/crds/"
}

install_tools() {
  check_go
  local start=$SECONDS
  build_tool kubernetes build_kubernetes
  build_tool etcd build_etcd
  build_tool kwok build_kwok
  build_tool crictl build_crictl
  build_tool node-images build_node_images
  build_tool device-plugin build_device_plugin
  build_tool helm build_helm
  build_tool kueue build_kueue
  local sp_k8s
  sp_k8s="$(sed -n 's|^[[:space:]]*k8s.io/kubernetes => k8s.io/kubernetes \(v[^ ]*\)$|\1|p' "$HACK_DIR/gomod/scheduler-plugins/go.mod")"
  if [[ "$sp_k8s" != "$KUBERNETES_VERSION" ]]; then
    log "tools: note: hack/gomod/scheduler-plugins builds on Kubernetes ${sp_k8s:-?}, KUBERNETES_VERSION is $KUBERNETES_VERSION" \
        "(bump its replace block with it: see its go.mod)"
  fi
  build_tool scheduler-plugins build_scheduler_plugins
  build_tool prometheus build_prometheus
  log "tools: ready in $((SECONDS - start))s (cache: $RINGMASTER_CACHE/tools)"
}

# What only `make bench` needs (not make test): the operator bench's peer. Built on first use, then cached.
install_bench_tools() {
  check_go
  local start=$SECONDS
  build_tool kubeflow build_kubeflow
  log "bench tools: ready in $((SECONDS - start))s (cache: $RINGMASTER_CACHE/tools)"
}

# Everything. The Go tools compile (CPU-bound, the longest part on a fresh machine) while the CUDA and Python wheels
# download (network-bound, ~3 GB): the two overlap instead of adding up. The tools' lines are prefixed "[tools]".
install_all() {
  install_apt
  ( install_tools ) > >(sed -u 's/^/[tools] /') 2>&1 &
  local tools_pid=$!
  # shellcheck disable=SC2064  # the pid is meant to be expanded now
  trap "kill $tools_pid 2>/dev/null || true" EXIT  # a failure below stops the build too
  install_cuda
  install_python
  wait "$tools_pid" || die "building the tools failed" "see the [tools] lines above; rerun make deps"
  trap - EXIT
}

main() {
  local what="${1:-all}" start=$SECONDS
  case "$what" in
    all) install_all ;;
    apt) install_apt ;;
    cuda) install_cuda ;;
    tools) install_tools ;;
    bench-tools) install_bench_tools ;;
    python) install_python ;;
    *) die "unknown deps target '$what'" "use one of: all apt cuda python tools bench-tools" ;;
  esac
  log "deps ($what): done in $((SECONDS - start))s"
}

main "$@"
