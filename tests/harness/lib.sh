# Shared helpers for the harness scripts: logging, failing with one clear line, the tool cache.
# Source it; it defines functions and a few read-only paths, and changes no shell options.

RINGMASTER_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HARNESS_DIR="$RINGMASTER_ROOT/tests/harness"
# The build's dependency installer (make deps: deps.sh) and the wrapper Go modules it builds tools from.
HACK_DIR="$RINGMASTER_ROOT/hack"
# Built tools live outside the repository, keyed by version, so a fresh clone rebuilds nothing.
RINGMASTER_CACHE="${RINGMASTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ringmaster}"

# shellcheck source=versions.env
source "$HARNESS_DIR/versions.env"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# die "what failed" "what to do": one line on stderr, exit 1.
die() {
  printf 'ringmaster: error: %s' "$1" >&2
  [[ -n "${2:-}" ]] && printf ' -- %s' "$2" >&2
  printf '\n' >&2
  exit 1
}

# chart_version [CHART_DIR]: the chart's appVersion (helm/ringmaster unless given), which tags the images; dies
# when the chart has none.
chart_version() {
  local chart="${1:-$RINGMASTER_ROOT/helm/ringmaster}" version
  version="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$chart/Chart.yaml")"
  [[ -n "$version" ]] || die "no appVersion in $chart/Chart.yaml" "check the chart"
  echo "$version"
}

# wait_until SECONDS WHAT CMD...: until CMD succeeds, polling every 0.5 s; after SECONDS calls the caller's
# `fail WHAT` (a harness test defines fail: report, clean up, exit 1).
wait_until() {
  local timeout="$1" what="$2" deadline=$((SECONDS + $1)); shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "$what (not within ${timeout}s)"
    sleep 0.5
  done
}

need_cmd() {
  command -v "$1" >/dev/null 2>&1 || die "required command '$1' not found" "${2:-run make deps}"
}

# run_with_heartbeat LABEL LOGFILE CMD...: runs CMD with output to LOGFILE and prints a progress line
# every 30 s (with the log's last line), so a long build never sits silent. On failure, prints the
# log's tail and returns CMD's status.
run_with_heartbeat() {
  local label="$1" logfile="$2"; shift 2
  local start=$SECONDS
  "$@" >"$logfile" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    local i
    for ((i = 0; i < 30; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 1
    done
    if kill -0 "$pid" 2>/dev/null; then
      local lines; lines=$(wc -l <"$logfile")
      log "$label: still running after $((SECONDS - start))s ($lines log lines; last: $(tail -n 1 "$logfile" | cut -c1-100))"
    fi
  done
  local rc=0
  wait "$pid" || rc=$?
  if ((rc != 0)); then
    log "$label failed after $((SECONDS - start))s; last lines of $logfile:"
    tail -n 25 "$logfile" >&2
    return "$rc"
  fi
  log "$label: done in $((SECONDS - start))s"
}

# tool_dir NAME: the cache directory holding the built binaries of tool NAME at its pinned version.
tool_dir() {
  local name="$1" key
  case "$name" in
    kubernetes) key="kubernetes-$KUBERNETES_VERSION-$(gomod_hash kubernetes)" ;;
    etcd) key="etcd-$ETCD_VERSION-$(gomod_hash etcd)" ;;
    kwok) key="kwok-$KWOK_VERSION" ;;
    crictl) key="crictl-$CRI_TOOLS_VERSION" ;;
    device-plugin) key="device-plugin-$(cat "$RINGMASTER_ROOT"/tests/harness/device_plugin/{main.go,go.mod,go.sum} | sha256sum | cut -c1-10)" ;;
    node-images) key="node-images-$(cat "$HACK_DIR/node-images/pause.c" "$HACK_DIR/deps.sh" <(echo "$NODE_SANDBOX_IMAGE $NODE_BUSYBOX_IMAGE") \
                   <(dpkg-query -W -f='${Version}' busybox-static 2>/dev/null) | sha256sum | cut -c1-10)" ;;
    helm) key="helm-$HELM_VERSION" ;;
    kueue) key="kueue-$KUEUE_VERSION" ;;
    scheduler-plugins) key="scheduler-plugins-$SCHEDULER_PLUGINS_VERSION-$(gomod_hash scheduler-plugins)" ;;
    prometheus) key="prometheus-$PROMETHEUS_VERSION-$(gomod_hash prometheus)" ;;
    kubeflow) key="kubeflow-training-operator-$KUBEFLOW_TRAINING_OPERATOR_VERSION-$(gomod_hash kubeflow)" ;;
    *) die "unknown tool '$name'" "this is a bug in tests/harness/lib.sh" ;;
  esac
  printf '%s/tools/%s\n' "$RINGMASTER_CACHE" "$key"
}

# A short hash of a wrapper module's go.mod, go.sum and build overlays (*.overlay), so editing them rebuilds the tool.
gomod_hash() {
  local overlays=("$HACK_DIR/gomod/$1"/*.overlay)
  [[ -e "${overlays[0]}" ]] || overlays=()
  cat "$HACK_DIR/gomod/$1/go.mod" "$HACK_DIR/gomod/$1/go.sum" "${overlays[@]}" | sha256sum | cut -c1-10
}

# tool_bin NAME BINARY: absolute path of an installed binary; dies with advice when it is missing.
tool_bin() {
  local dir; dir="$(tool_dir "$1")"
  [[ -f "$dir/.complete" && -x "$dir/$2" ]] || die "$2 is not built (expected in $dir)" "run make deps"
  printf '%s/%s\n' "$dir" "$2"
}
