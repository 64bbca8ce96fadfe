# Real nodes beside KWOK's fakes (sourced by cluster.sh): each a kubelet with its own containerd, CNI bridge,
# cgroup subtree and state under DIR/nodes/<node>/, and one image registry for the cluster.
#
#   real_nodes_up COUNT     registry, then COUNT nodes named ringmaster-node-<i>; each registers and goes Ready
#   real_nodes_down         stops pods, kubelets, containerds, the registry; unmounts and removes what they made
#
# What a node is made of, and why:
#   containerd  Debian's 1.6 with its CRI plugin; root, state and socket under the node's directory. Sandboxes
#               and containers may not lower their OOM score here (no CAP_SYS_RESOURCE), so the CRI plugin
#               caps it (restrict_oom_score_adj), as it does for rootless containerd.
#   network     a Linux bridge per node (rm<id>n<i>) holding the node's address 10.<o>.<i>.1/24, which is also
#               the kubelet's node IP; the CNI bridge plugin gives pods 10.<o>.<i>.x on it. Every address is
#               on this machine: nothing leaves it.
#   cgroups     the node's pods live under /<cgroup root> in every v1 hierarchy (cgroupfs driver), so two nodes
#               and two clusters never share a cgroup.
#   kubelet     `make deps` builds it from the pinned Kubernetes module; it serves on the node IP with a client
#               CA (the apiserver calls it with its kubelet-client certificate for logs and exec), and its
#               pod logs land in the node's directory.
#   images      the sandbox ("pause") image and a busybox image, built by `make deps` from Debian's
#               busybox-static and a pause written here (hack/node_images), are imported into each node; the
#               registry (Debian's docker-registry, the CNCF distribution) serves on 127.0.0.1 and every node
#               pulls from it over plain HTTP. Its address is written to DIR/registry.
#   GPUs        REAL_NODE_GPUS (cluster.sh --real-node-gpus) emulated nvidia.com/gpu per node, advertised through
#               the kubelet's device-plugin API by tests/harness/device_plugin (EMULATION: no GPU behind them);
#               an allocation hands the container NVIDIA_VISIBLE_DEVICES and RINGMASTER_EMULATED_GPUS.
#   apiserver   pods reach it as in-cluster clients do, at the `kubernetes` Service (10.96.0.1:443), by a DNAT
#               rule for this cluster's bridges to the apiserver on 127.0.0.1 (no kube-proxy: no other Service).
#   taint       ringmaster.io/real-node=true:NoSchedule: only pods that tolerate it run on a real node.
#   sysctls     a kubelet sets kernel.panic, kernel.panic_on_oops and vm.overcommit_memory as a node needs them;
#               `down` puts back the values this machine had before the first node started.
#
# Needs root (mounts, cgroups, bridges), as containerd does.

REAL_NODE_PREFIX=ringmaster-node
KUBELET_TUNABLES="kernel.panic kernel.panic_on_oops vm.overcommit_memory vm.panic_on_oom"
REAL_NODE_TAINT="ringmaster.io/real-node=true:NoSchedule"

# The second octet of the cluster's node subnets (10.<o>.<i>.0/24), and a short id for bridge and cgroup names.
# The id comes from the apiserver port; the octet is claimed at `up` (real_nodes_claim_octet) and kept in
# nodes/octet, since two ports can give the same one (a ctest run had its two clusters' bridges both on 10.108:
# pods on different nodes could not reach each other).
real_nodes_octet() { cat "$DIR/nodes/octet" 2>/dev/null || echo $((100 + API_PORT % 100)); }
real_nodes_id() { printf '%04x' $((API_PORT % 65536)); }

real_node_name() { echo "$REAL_NODE_PREFIX-$1"; }
real_node_dir() { echo "$DIR/nodes/$(real_node_name "$1")"; }
real_node_cgroup() { echo "ringmaster-$(real_nodes_id)-n$1"; }
real_node_bridge() { echo "rm$(real_nodes_id)n$1"; }
real_node_ip() { echo "10.$(real_nodes_octet).$1.1"; }

CGROUP_V1=/sys/fs/cgroup

# real_node_cgroups_create I: the node's subtree in every v1 hierarchy (cpuset needs its cpus and mems copied).
real_node_cgroups_create() {
  local name; name="$(real_node_cgroup "$1")"
  local h
  for h in "$CGROUP_V1"/*/; do
    h="${h%/}"
    [[ "$(basename "$h")" == unified ]] && continue
    mkdir -p "$h/$name" 2>/dev/null || continue
    if [[ -f "$h/cpuset.cpus" ]]; then
      cat "$h/cpuset.cpus" >"$h/$name/cpuset.cpus"
      cat "$h/cpuset.mems" >"$h/$name/cpuset.mems"
    fi
  done
}

# real_node_cgroups_remove I: kills whatever still runs in the node's subtree, then removes it bottom-up.
real_node_cgroups_remove() {
  local name; name="$(real_node_cgroup "$1")"
  local pids=() h
  if [[ -d "$CGROUP_V1/pids/$name" ]]; then
    mapfile -t pids < <(find "$CGROUP_V1/pids/$name" -name cgroup.procs -exec cat {} + 2>/dev/null || true)
  fi
  if ((${#pids[@]} > 0)); then kill -KILL "${pids[@]}" 2>/dev/null || true; fi
  local try left
  for ((try = 0; try < 50; try++)); do  # a killed process leaves its cgroup when it has exited
    left=0
    for h in "$CGROUP_V1"/*/"$name"; do
      [[ -d "$h" ]] || continue
      find "$h" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [[ -d "$h" ]] && left=1
    done
    ((left)) || return 0
    sleep 0.1
  done
  log "  warning: cgroup $name could not be removed (processes left in it)"
}

real_node_bridge_create() {
  local br ip; br="$(real_node_bridge "$1")"; ip="$(real_node_ip "$1")"
  ip link show "$br" >/dev/null 2>&1 || ip link add "$br" type bridge || return 1
  ip addr replace "$ip/24" dev "$br" && ip link set "$br" up || return 1
  # Pods reach the apiserver (127.0.0.1) through the `kubernetes` Service's address: DNAT to loopback needs
  # route_localnet on the interface the packets come in by (real_nodes_api_route).
  sysctl -q -w "net.ipv4.conf.$br.route_localnet=1"
}

# The rule that takes pods' connections to the `kubernetes` Service (10.96.0.1:443, what the kubelet puts in
# KUBERNETES_SERVICE_HOST/PORT) to the apiserver on 127.0.0.1, for packets from this cluster's bridges only,
# so clusters side by side keep their own. No kube-proxy runs here: other Services have no routes.
real_nodes_api_rule() {
  echo "PREROUTING -i rm$(real_nodes_id)n+ -d 10.96.0.1/32 -p tcp --dport 443 -j DNAT --to-destination 127.0.0.1:$API_PORT"
}

real_node_write_configs() {
  local i="$1" nd name ip
  nd="$(real_node_dir "$i")"; name="$(real_node_name "$i")"; ip="$(real_node_ip "$i")"
  mkdir -p "$nd"/{pki,cni,containerd,kubelet,pod-logs,serving}
  _client_cert_into "$nd/pki" kubelet "system:node:$name" system:nodes
  write_kubeconfig "$nd/kubelet.kubeconfig" "https://127.0.0.1:$API_PORT" "$DIR/pki/ca.crt" \
    "$nd/pki/kubelet.crt" "$nd/pki/kubelet.key"
  local registry; registry="$(cat "$DIR/registry")"
  cat >"$nd/containerd.toml" <<EOF
version = 2
root = "$nd/containerd/root"
state = "$nd/containerd/state"
[grpc]
  address = "$nd/containerd.sock"
[ttrpc]
  address = "$nd/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = true
  sandbox_image = "$REAL_NODE_SANDBOX_IMAGE"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN_DIR"
    conf_dir = "$nd/cni"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."$registry"]
    endpoint = ["http://$registry"]
EOF
  cat >"$nd/cni/10-ringmaster.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "$(real_node_bridge "$i")", "plugins": [
  {"type": "bridge", "bridge": "$(real_node_bridge "$i")", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.$(real_nodes_octet).$i.0/24", "gateway": "$ip"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
EOF
  # Ports: the kubelet's API and healthz, chosen free like the control plane's.
  local kubelet_port healthz_port
  read -r kubelet_port healthz_port <<<"$(pick_ports 2)"
  cat >"$nd/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $ip
port: $kubelet_port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $healthz_port
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $DIR/pki/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
cgroupRoot: /$(real_node_cgroup "$i")
containerRuntimeEndpoint: unix://$nd/containerd.sock
podLogsDir: $nd/pod-logs
failSwapOn: false
makeIPTablesUtilChains: false
# The machine is shared with the tests that run the workload: evict only when memory is really short. No
# disk signal at all (0% disables one): the node's disk is this machine's, filled by builds as much as by pods,
# and a kubelet under disk pressure deletes every image no container uses -- the sandbox image first, which no
# registry serves, so every pod after it fails "failed to pull ringmaster.local/pause".
evictionHard: {memory.available: "100Mi", nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%", imagefs.inodesFree: "0%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
nodeStatusReportFrequency: 10s
registerWithTaints: [{key: ringmaster.io/real-node, value: "true", effect: NoSchedule}]
EOF
  echo "$healthz_port" >"$nd/healthz-port"
}

# _client_cert_into DIR NAME CN O: a client certificate signed by the cluster's CA, written into DIR.
_client_cert_into() {
  local dir="$1" name="$2"
  cp "$DIR/pki/ca.crt" "$DIR/pki/ca.key" "$dir/"
  _client_cert "$dir" "$name" "$3" "$4"
  rm -f "$dir/ca.key" "$dir/ca.srl"
}

registry_up() {
  local port; read -r port <<<"$(pick_ports 1)"
  mkdir -p "$DIR/registry-data"
  cat >"$DIR/registry.yaml" <<EOF
version: 0.1
log: {level: warn}
storage: {filesystem: {rootdirectory: $DIR/registry-data}, delete: {enabled: true}}
http: {addr: 127.0.0.1:$port}
EOF
  echo "127.0.0.1:$port" >"$DIR/registry"
  start registry "$(command -v docker-registry)" serve "$DIR/registry.yaml"
  wait_healthy registry http_health "$port" v2/ || return $?
}

# A node's processes (containerd, its shims and containers, the kubelet, the device plugin) share one mount
# namespace of their own, held by a sleep: the kubelet's device-plugin socket and container log links live at
# fixed host paths (/var/lib/kubelet/device-plugins, /var/log/containers), which the namespace binds to the
# node's directory, and every mount the node makes (rootfs overlays, volumes, network namespaces) stays in it
# and goes when its last process does. Host mounts still propagate in (slave).
real_node_up() {
  local i="$1" nd name
  nd="$(real_node_dir "$i")"; name="$(real_node_name "$i")"
  real_node_cgroups_create "$i"
  real_node_bridge_create "$i" || fail_up "could not create the bridge of $name" "the harness needs root (ip link add)"
  real_node_write_configs "$i"
  mkdir -p "$nd/device-plugins" "$nd/container-logs" /var/lib/kubelet/device-plugins /var/log/containers
  # (exec -a: the holder's command line names the node's directory, so `down` finds it even without its pid file)
  start "node-$name" "$(command -v unshare)" --mount --propagation slave -- /bin/bash -c \
    "mount --bind '$nd/device-plugins' /var/lib/kubelet/device-plugins &&
     mount --bind '$nd/container-logs' /var/log/containers && exec -a 'sleep $nd/' sleep infinity"
  local holder deadline=$((SECONDS + 10))
  holder="$(pid_of "node-$name")"
  until [[ "$(readlink "/proc/$holder/exe" 2>/dev/null)" == */sleep ]]; do
    ((SECONDS < deadline)) && is_running "node-$name" || fail_up "the mount namespace of $name did not start" \
      "see $DIR/logs/node-$name.log"
    sleep 0.1
  done
  local in_node=("$(command -v nsenter)" "--mount=/proc/$holder/ns/mnt" --)
  start "containerd-$name" "${in_node[@]}" "$(command -v containerd)" --config "$nd/containerd.toml"
  wait_healthy "containerd-$name" "$CTR" -a "$nd/containerd.sock" version || return $?
  local image
  for image in "$NODE_IMAGES"/*.tar; do
    "$CTR" -a "$nd/containerd.sock" -n k8s.io images import --all-platforms "$image" >/dev/null \
      || fail_up "could not import $image into $name" "see $DIR/logs/containerd-$name.log"
  done
  start "kubelet-$name" "${in_node[@]}" "$DIR/bin/kubelet" --config "$nd/kubelet.yaml" \
    --kubeconfig "$nd/kubelet.kubeconfig" --root-dir "$nd/kubelet" --cert-dir "$nd/serving" --hostname-override "$name" \
    --node-ip "$(real_node_ip "$i")" --node-labels "ringmaster.io/real-node=true" --v=1
  wait_healthy "kubelet-$name" http_health "$(cat "$nd/healthz-port")" healthz || return $?
  if ((REAL_NODE_GPUS > 0)); then
    start "device-plugin-$name" "${in_node[@]}" "$DIR/bin/ringmaster-emulated-device-plugin" \
      --kubelet-dir /var/lib/kubelet/device-plugins --node "$name" --gpus "$REAL_NODE_GPUS"
  fi
}

real_nodes_up() {
  local count="$1" i
  ((count > 0)) || return 0
  ((EUID == 0)) || fail_up "real nodes need root (mounts, cgroups, bridges)" \
    "run as root, or without real nodes (--real-nodes 0; make cluster-up REAL_NODES=0)"
  CTR="$(command -v ctr)" CNI_BIN_DIR=/usr/lib/cni
  [[ -n "$CTR" && -x "$(command -v containerd)" && -x "$(command -v runc)" && -x "$CNI_BIN_DIR/bridge" ]] \
    || fail_up "containerd, runc or the CNI plugins are missing" "run make deps"
  [[ -x "$(command -v docker-registry)" ]] || fail_up "docker-registry is missing" "run make deps"
  NODE_IMAGES="$(tool_dir node-images)"
  [[ -f "$NODE_IMAGES/.complete" ]] || fail_up "the node images are not built" "run make deps"
  REAL_NODE_SANDBOX_IMAGE="$(cat "$NODE_IMAGES/sandbox-image")"
  # A kubelet sets the kernel tunables a node needs (kernel.panic, kernel.panic_on_oops, vm.overcommit_memory);
  # this machine gets its own values back at `down`.
  mkdir -p "$DIR/nodes"
  real_nodes_claim_octet || return $?
  [[ -f "$DIR/nodes/sysctl-before" ]] || sysctl -e $KUBELET_TUNABLES >"$DIR/nodes/sysctl-before" 2>/dev/null || true
  log "  starting an image registry and $count real nodes (kubelet + containerd + CNI bridge each)"
  registry_up || return $?
  need_cmd iptables "apt install iptables (make deps does)"
  # shellcheck disable=SC2046  # the rule's words
  iptables -t nat -A $(real_nodes_api_rule) || fail_up "could not add the apiserver's DNAT rule" "the harness needs root"
  for ((i = 0; i < count; i++)); do real_node_up "$i" || return $?; done
  local ready gpus
  ready="$(wait_nodes ringmaster.io/real-node=true "$NODE_READY" True "$count")" \
    || fail_up "only $ready of $count real nodes became Ready" "see $DIR/logs/kubelet-*.log"
  # The emulated GPUs count once every kubelet lists them in its allocatable resources.
  ((REAL_NODE_GPUS == 0)) || gpus="$(wait_nodes ringmaster.io/real-node=true '{.status.allocatable.nvidia\.com/gpu}' "$REAL_NODE_GPUS" "$count")" \
    || fail_up "only $gpus of $count real nodes list $REAL_NODE_GPUS nvidia.com/gpu" \
      "see $DIR/logs/device-plugin-*.log and kubelet-*.log"
  log "  $count real nodes Ready; registry at $(cat "$DIR/registry")"
}

# Claims are directories under /run (gone at reboot), made with mkdir (atomic: one cluster wins an octet), each
# holding the DIR of its cluster; `down` releases its own. A claim whose cluster no longer holds that octet
# (stopped without `down`) is taken over.
SUBNET_CLAIMS=/run/ringmaster/real-node-subnets
real_nodes_claim_octet() {
  mkdir -p "$SUBNET_CLAIMS" || fail_up "cannot write $SUBNET_CLAIMS" "the harness needs root"
  local start=$((API_PORT % 100)) k o claim owner
  for ((k = 0; k < 100; k++)); do
    o=$((100 + (start + k) % 100)) claim="$SUBNET_CLAIMS/10.$o"
    if ! mkdir "$claim" 2>/dev/null; then
      owner="$(cat "$claim/dir" 2>/dev/null || true)"
      [[ -z "$owner" ]] && continue  # being claimed right now
      [[ "$owner" != "$DIR" && "$(cat "$owner/nodes/octet" 2>/dev/null || true)" == "$o" ]] && continue
    fi
    echo "$DIR" >"$claim/dir" && echo "$o" >"$DIR/nodes/octet" && return 0
  done
  fail_up "every 10.100-199 subnet is claimed in $SUBNET_CLAIMS" "stop other clusters (cluster.sh down)"
}
real_nodes_release_octet() {
  local o claim
  o="$(cat "$DIR/nodes/octet" 2>/dev/null)" || return 0
  claim="$SUBNET_CLAIMS/10.$o"
  [[ "$(cat "$claim/dir" 2>/dev/null || true)" == "$DIR" ]] && rm -rf "$claim"
  return 0
}

# The nodes this DIR has started (from their directories, so that a half-started one is cleaned too).
real_node_indexes() {
  local nd
  for nd in "$DIR/nodes/$REAL_NODE_PREFIX"-*; do
    if [[ -d "$nd" ]]; then echo "${nd##*-}"; fi
  done
}

# real_node_down I: the pods first (the CRI stops them and tears their networks down), then the daemons,
# then whatever they left: processes in the node's cgroups, shims, mounts, network namespaces, the bridge.
real_node_down() {
  local i="$1" nd name sock
  nd="$(real_node_dir "$i")"; name="$(real_node_name "$i")"; sock="$nd/containerd.sock"
  stop_named "device-plugin-$name"
  stop_named "kubelet-$name"
  if [[ -S "$sock" ]] && [[ -x "$DIR/bin/crictl" ]]; then
    timeout 60 "$DIR/bin/crictl" --runtime-endpoint "unix://$sock" rmp --all --force >/dev/null 2>&1 || true
  fi
  stop_named "containerd-$name"
  pkill -KILL -f -- "-address $sock" 2>/dev/null || true  # runc shims of this containerd
  real_node_cgroups_remove "$i"
  stop_named "node-$name"  # the last process of the node's mount namespace: its mounts go with it
  # The CNI state of pods the CRI did not tear down: their network namespaces and address leases.
  local bridge results=() netns
  bridge="$(real_node_bridge "$i")"
  mapfile -t results < <(grep -l "\"$bridge\"" /var/lib/cni/results/* 2>/dev/null || true)
  if ((${#results[@]} > 0)); then
    for netns in $(sed -n 's/.*"netns":"\([^"]*\)".*/\1/p' "${results[@]}" 2>/dev/null || true); do
      umount "$netns" 2>/dev/null || true
      rm -f "$netns"
    done
    rm -f "${results[@]}"
  fi
  rm -rf "/var/lib/cni/networks/$bridge"
  local mounts=() m
  # (the node's own mounts went with its namespace; this catches any made on the host by mistake)
  mapfile -t mounts < <(awk -v d="$nd/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r)
  for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null || true; done
  ip link del "$bridge" 2>/dev/null || true
}

real_nodes_down() {
  [[ -d "$DIR/nodes" || -f "$DIR/registry" ]] || return 0
  load_env >/dev/null 2>&1 || true
  [[ -n "${API_PORT:-}" ]] || return 0
  local i
  for i in $(real_node_indexes || true); do real_node_down "$i"; done
  stop_named registry
  # shellcheck disable=SC2046
  while iptables -t nat -D $(real_nodes_api_rule) 2>/dev/null; do :; done
  if [[ -s "$DIR/nodes/sysctl-before" ]]; then sysctl -q -p "$DIR/nodes/sysctl-before" >/dev/null 2>&1 || true; fi
  real_nodes_release_octet
  rm -rf "$DIR/nodes" "$DIR/registry-data" "$DIR/registry" "$DIR/registry.yaml"
}

# real_nodes_push IMAGES_DIR: the images of `make images` (operator, worker, TensorFlow worker) into the
# cluster's registry with docker/push-images.sh, as a user pushes them, then both pulled by every real node
# through its CRI (what the kubelet does for a pod), all nodes at once: a TrainingJob's first pods then start
# as they would on nodes that already ran one. Prints each step's time.
real_nodes_push() {
  local images="$1" registry version start=$SECONDS
  [[ -s "$DIR/registry" ]] || die "the cluster in $DIR has no registry" \
    "start it with real nodes: make cluster-up (REAL_NODES=2), or cluster.sh up --real-nodes N"
  registry="$(cat "$DIR/registry")"
  version="$(chart_version)" || exit 1
  IMAGES_DIR="$images" REGISTRY="$registry" SKOPEO_ARGS=--dest-tls-verify=false \
    "$RINGMASTER_ROOT/docker/push-images.sh" || die "could not push the images to $registry" "see above"
  log "  pushed to $registry in $((SECONDS - start)) s; every real node pulls them"
  local i sock pids=() names=()
  start=$SECONDS
  for i in $(real_node_indexes || true); do
    sock="$(real_node_dir "$i")/containerd.sock"
    [[ -S "$sock" ]] || die "$(real_node_name "$i") has no containerd socket" "restart the cluster (make cluster-up)"
    (
      for image in ringmaster-operator ringmaster-worker ringmaster-worker-tensorflow; do
        "$DIR/bin/crictl" --runtime-endpoint "unix://$sock" --image-endpoint "unix://$sock" \
          pull --pull-timeout 15m "$registry/$image:$version" || exit 1
      done
    ) >"$DIR/logs/pull-$(real_node_name "$i").log" 2>&1 &
    pids+=("$!") names+=("$(real_node_name "$i")")
  done
  local k failed="" waited=0
  while [[ -n "$(jobs -r)" ]]; do  # a line every 30 s while the nodes pull
    sleep 1
    if ((++waited % 30 == 0)); then log "  still pulling after $waited s (logs: $DIR/logs/pull-*.log)"; fi
  done
  for k in "${!pids[@]}"; do
    wait "${pids[$k]}" || failed+=" ${names[$k]}"
  done
  [[ -z "$failed" ]] || die "the images could not be pulled on$failed" "see $DIR/logs/pull-*.log"
  # Every pod's sandbox comes from the image imported at `up` (no registry serves it): make sure the pulls left
  # it there, so that a node which lost it fails here, with the cause, and not as every test's pending pod.
  local sandbox; sandbox="$(cat "$(tool_dir node-images)/sandbox-image")"
  for i in $(real_node_indexes || true); do
    sock="$(real_node_dir "$i")/containerd.sock"
    "$DIR/bin/crictl" --image-endpoint "unix://$sock" inspecti "$sandbox" >/dev/null 2>&1 \
      || die "$(real_node_name "$i") no longer has the sandbox image $sandbox ($(df -h --output=avail "$DIR" | tail -1 | tr -d ' ') free on this disk)" \
        "a kubelet short of disk deletes unused images: free some room, then restart the cluster (see $DIR/logs/kubelet-$(real_node_name "$i").log)"
  done
  log "  ${#pids[@]} real nodes pulled ringmaster-operator, ringmaster-worker and ringmaster-worker-tensorflow:$version in $((SECONDS - start)) s"
}
