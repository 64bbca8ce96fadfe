#!/usr/bin/env bash
# The local control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler (one Kubernetes
# release, built by `make deps`), KWOK simulating GPU nodes, and on request real nodes, Kueue and a gang scheduler,
# all on this machine.
#
#   cluster.sh up     --dir DIR [--nodes N] [--gpus-per-node G] [--real-nodes R [--real-node-gpus E]] [--fresh]
#                     [--audit-log] [--kueue] [--gang]
#   cluster.sh down   --dir DIR
#   cluster.sh status --dir DIR
#   cluster.sh push --dir DIR [--images IMAGES_DIR]   (the images of `make images` into the registry of a cluster
#                                                       with real nodes; every real node pulls the worker image)
#   cluster.sh restart --dir DIR [--down-for SECONDS] COMPONENT   (e.g. kube-apiserver: same flags, ports and
#                                                                   data; stopped SECONDS before the start; or kueue,
#                                                                   scheduler-plugins)
#
# up: reuses a healthy cluster already running in DIR (or, with --fresh, replaces it); refuses a
#     half-running one with advice. Ports are chosen free, so clusters in different DIRs run side by side.
# DIR holds everything: kubeconfig (admin), cluster.env (addresses and files, KEY=VALUE), pki/, logs/,
#     pids/, bin/ (kubectl, helm, ...), etcd/.
# --audit-log: the apiserver also writes every request's metadata (user, user agent, verb, resource;
#     one JSON line per stage, RequestReceived omitted) to logs/audit.log;
#     benchmarks count each client's requests there.
# --real-nodes R (default 0): also R real nodes, ringmaster-node-<i> (a kubelet, containerd and a CNI bridge
#     each; real_nodes.sh), tainted ringmaster.io/real-node=true:NoSchedule, and an image registry whose
#     address is in DIR/registry; each advertises E (default 4) emulated nvidia.com/gpu through the kubelet's
#     device-plugin API. Needs root. A reused cluster keeps the real nodes it was started with.
# --kueue: also Kueue (KUEUE_VERSION, built by `make deps`; kueue.sh): its binary on 127.0.0.1, its CRDs, and its
#     admission webhooks for kueue.x-k8s.io and batch/v1 Jobs (only those) and conversion webhooks, called by the
#     apiserver at https://127.0.0.1:<port>. Config: integrations batch/job and the external framework
#     TrainingJob.v1alpha1.ringmaster.io, jobs without kueue.x-k8s.io/queue-name left alone. cluster.env then has
#     KUEUE=1 and KUEUE_WEBHOOK_PORT, KUEUE_HEALTH_PORT, KUEUE_METRICS_PORT; its log is logs/kueue.log. A reused
#     cluster keeps the Kueue it was started with; `up --kueue` refuses one started without it (use --fresh).
# --gang: also gang scheduling at the scheduler (coscheduling.sh): the scheduler of kubernetes-sigs/scheduler-plugins
#     (SCHEDULER_PLUGINS_VERSION, built by `make deps`) as a second scheduler beside kube-scheduler, schedulerName
#     scheduler-plugins-scheduler, with its Coscheduling plugin, and the PodGroup CRD (scheduling.x-k8s.io/v1alpha1).
#     A pod with schedulerName: scheduler-plugins-scheduler and the label scheduling.x-k8s.io/pod-group=<PodGroup> is
#     bound only together with spec.minMember pods of its group (they wait at Permit up to the PodGroup's
#     scheduleTimeoutSeconds, else 10 s, then all go back to the queue). Started after the control plane (and Kueue);
#     uses the admin kubeconfig; /healthz on 127.0.0.1:<port>. cluster.env then has GANG=1, GANG_SCHEDULER_NAME,
#     GANG_POD_GROUP_LABEL, GANG_SCHEDULER_PORT; its log is logs/scheduler-plugins.log. A reused cluster keeps the gang
#     scheduler it was started with; `up --gang` refuses one started without it (use --fresh).
# push: IMAGES_DIR (default build/images) holds ringmaster-operator.tar, ringmaster-worker.tar and
# ringmaster-worker-tensorflow.tar; they land in
#     the registry as <registry>/<name>:<chart appVersion> (make images does this when build/cluster has a registry).
set -euo pipefail
CLUSTER_SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$CLUSTER_SCRIPT_DIR/../lib.sh"
source "$CLUSTER_SCRIPT_DIR/pki.sh"
source "$CLUSTER_SCRIPT_DIR/real_nodes.sh"
source "$CLUSTER_SCRIPT_DIR/kueue.sh"
source "$CLUSTER_SCRIPT_DIR/coscheduling.sh"

COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
STARTUP_TIMEOUT=120

usage() { sed -n '2,/^set /{/^#/p}' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }   # the header above

# ---------------------------------------------------------------------------------------------------
# processes

pid_of() { local f="$DIR/pids/$1.pid"; [[ -f "$f" ]] && cat "$f"; }

# proc_alive PID: the process exists and is not a zombie. Our daemons outlive the script that started
# them, and the init process of a container may never reap them, so a dead one can linger as a zombie.
proc_alive() {
  local state
  state="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" || return 1
  [[ -n "$state" && "$state" != Z ]]
}

is_running() {
  local pid; pid="$(pid_of "$1")" || return 1
  [[ -n "$pid" ]] && proc_alive "$pid"
}

running_components() {
  local c out=()
  for c in "${COMPONENTS[@]}"; do is_running "$c" && out+=("$c"); done
  echo "${out[*]:-}"
}

# start NAME BINARY ARGS...: runs detached (own session, no terminal, output to logs/NAME.log). The
# command line is kept in cmdlines/NAME (NUL-separated) so `restart` can run it again unchanged.
start() {
  local name="$1" bin="$2"; shift 2
  mkdir -p "$DIR/logs" "$DIR/pids" "$DIR/cmdlines"
  printf '%s\0' "$bin" "$@" >"$DIR/cmdlines/$name"
  setsid "$bin" "$@" >>"$DIR/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$DIR/pids/$name.pid"
}

# wait_healthy NAME CHECK-COMMAND...: waits until the check passes; fails fast if the process died.
# Returns 2 when it died because its port was taken after we chose it (the caller picks new ports).
wait_healthy() {
  local name="$1"; shift
  local deadline=$((SECONDS + STARTUP_TIMEOUT))
  until "$@" >/dev/null 2>&1; do
    if ! is_running "$name"; then
      if grep -q "address already in use" "$DIR/logs/$name.log" 2>/dev/null; then
        log "  $name could not bind its port (taken since we chose it)"
        return 2
      fi
      log "$name exited during startup; last lines of $DIR/logs/$name.log:"
      tail -n 20 "$DIR/logs/$name.log" >&2
      fail_up "$name did not start" "see $DIR/logs/$name.log"
    fi
    ((SECONDS < deadline)) || fail_up "$name not healthy after ${STARTUP_TIMEOUT}s" "see $DIR/logs/$name.log"
    sleep 0.5
  done
  log "  $name is up (pid $(pid_of "$name"))"
}

# Stops everything this DIR started, then dies: `up` leaves a full cluster or nothing.
fail_up() {
  stop_all >/dev/null 2>&1 || true
  die "cluster up failed: $1" "$2"
}

# Every process of ours in DIR: the recorded pids, plus any orphan of our binaries whose command line
# names DIR (e.g. after a pid file was lost).
our_pids() {
  local c pid
  for c in "${COMPONENTS[@]}" kueue "$GANG_COMPONENT"; do   # theirs too when this run was not told about them
    pid="$(pid_of "$c" || true)"
    if [[ -n "$pid" ]] && proc_alive "$pid"; then echo "$pid"; fi
  done
  ps -eo pid=,stat=,comm=,args= | awk -v dir="$DIR/" '
    ($2 !~ /^Z/) && ($3 ~ /^(etcd|kube-apiserver|kube-controller|kube-scheduler|scheduler-plugi|kwok|kueue|kubelet|containerd|docker-registry|ringmaster-emul|sleep)$/) && index($0, dir) { print $1 }'
}

# stop_named NAME: stops one process this DIR started (pids/NAME.pid): SIGTERM, up to 15 s, then SIGKILL.
stop_named() {
  local pid i
  pid="$(pid_of "$1" || true)"
  [[ -n "$pid" ]] && proc_alive "$pid" || { rm -f "$DIR/pids/$1.pid"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 150; i++)); do proc_alive "$pid" || break; sleep 0.1; done
  if proc_alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; sleep 0.2; fi
  rm -f "$DIR/pids/$1.pid"
}

# alive PIDS...: prints those of PIDS that still exist.
alive() {
  local p
  for p in "$@"; do
    if proc_alive "$p"; then echo "$p"; fi
  done
}

# Stops every process of this cluster: the real nodes first (their pods, mounts and networks), then Kueue and the
# gang scheduler (while the apiserver still answers: a Kueue that lost it first spends its shutdown retrying
# events), then the rest: SIGTERM, up to 15 s for a clean exit, then SIGKILL. (In our_pids' process names,
# scheduler-plugi is the gang scheduler's binary, scheduler-plugins, cut to the kernel's 15 characters.)
stop_all() {
  real_nodes_down
  stop_named kueue
  stop_named "$GANG_COMPONENT"
  local pids=() i
  mapfile -t pids < <(our_pids | sort -u)
  if ((${#pids[@]} > 0)); then
    kill -TERM "${pids[@]}" 2>/dev/null || true
    for ((i = 0; i < 150; i++)); do
      mapfile -t pids < <(alive "${pids[@]}")
      ((${#pids[@]} == 0)) && break
      sleep 0.1
    done
    if ((${#pids[@]} > 0)); then
      log "  killing ${#pids[@]} processes that ignored SIGTERM: ${pids[*]}"
      kill -KILL "${pids[@]}" 2>/dev/null || true
      sleep 0.2
    fi
  fi
  rm -rf "$DIR/pids"
}

# ---------------------------------------------------------------------------------------------------
# ports: chosen among those no socket uses, below the kernel's ephemeral range (so an outgoing
# connection cannot take one between our choice and the bind); each cluster gets its own.

used_ports() { ss -Htan 2>/dev/null | awk '{n=split($4,a,":"); print a[n]}'; }

pick_ports() {
  local taken; taken=" $(used_ports | tr '\n' ' ') "
  local low=32768 first=10000
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  ((low - first >= 2000)) || { first=20000; low=50000; }  # odd ephemeral range: fall back to a wide one
  local ports=() p tries=0
  while ((${#ports[@]} < $1)); do
    ((tries++ < 1000)) || die "could not find $1 free TCP ports on 127.0.0.1" "free some ports and retry"
    p=$((first + RANDOM % (low - first)))
    [[ "$taken" == *" $p "* || " ${ports[*]} " == *" $p "* ]] && continue
    ports+=("$p")
  done
  echo "${ports[@]}"
}

# ---------------------------------------------------------------------------------------------------
# up

api_ready() {
  curl -sf --max-time 5 --cacert "$DIR/pki/ca.crt" --cert "$DIR/pki/admin.crt" --key "$DIR/pki/admin.key" \
    "https://127.0.0.1:$API_PORT/readyz"
}
https_healthz() { curl -skf --max-time 5 "https://127.0.0.1:$1/healthz"; }
http_health() { curl -sf --max-time 5 "http://127.0.0.1:$1/$2"; }

write_env() {
  cat >"$DIR/cluster.env" <<ENV
# Written by tests/harness/cluster/cluster.sh up; read by tests and by people.
KUBECONFIG=$DIR/kubeconfig
APISERVER_URL=https://127.0.0.1:$API_PORT
CA_FILE=$DIR/pki/ca.crt
ADMIN_CERT=$DIR/pki/admin.crt
ADMIN_KEY=$DIR/pki/admin.key
KUBECTL=$DIR/bin/kubectl
HELM=$DIR/bin/helm
PROMETHEUS=$DIR/bin/prometheus
KUBERNETES_VERSION=$KUBERNETES_VERSION
ETCD_URL=http://127.0.0.1:$ETCD_PORT
KWOK_SERVER=http://127.0.0.1:$KWOK_PORT
POD_CIDR=$POD_CIDR
POD_IP_PREFIX=$POD_IP_PREFIX
SERVICE_CIDR=10.96.0.0/16
DEFAULT_NODES=$NODES
DEFAULT_GPUS_PER_NODE=$GPUS
REAL_NODES=$REAL_NODES
ENV
  kueue_env >>"$DIR/cluster.env"
  coscheduling_env >>"$DIR/cluster.env"
}

load_env() {
  [[ -f "$DIR/cluster.env" ]] || return 1
  API_PORT="$(sed -n 's|^APISERVER_URL=https://127.0.0.1:||p' "$DIR/cluster.env")"
  local real; real="$(sed -n 's|^REAL_NODES=||p' "$DIR/cluster.env")"
  if [[ -n "$real" ]]; then REAL_NODES="$real"; fi
  kueue_load_env
  coscheduling_load_env
}

# kueue_recorded: the cluster in DIR was started with --kueue (cluster.env says so, or its Kueue has a pid file).
kueue_recorded() { grep -qx 'KUEUE=1' "$DIR/cluster.env" 2>/dev/null || [[ -f "$DIR/pids/kueue.pid" ]]; }

# coscheduling_recorded (the same for --gang) is in coscheduling.sh.

# add_gpu_nodes FIRST COUNT GPUS: fake nodes named ringmaster-gpu-<i>, managed by KWOK.
add_gpu_nodes() {
  local first="$1" count="$2" gpus="$3" i manifest=""
  for ((i = first; i < first + count; i++)); do
    manifest+="---
apiVersion: v1
kind: Node
metadata:
  name: ringmaster-gpu-$i
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: \"0\"
  labels:
    type: kwok
    kubernetes.io/hostname: ringmaster-gpu-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    nvidia.com/gpu.present: \"true\"
    ringmaster.io/default-node: \"true\"
status:
  allocatable: {cpu: \"64\", memory: 512Gi, pods: \"110\", nvidia.com/gpu: \"$gpus\"}
  capacity: {cpu: \"64\", memory: 512Gi, pods: \"110\", nvidia.com/gpu: \"$gpus\"}
"
  done
  "$KUBECTL" --kubeconfig "$DIR/kubeconfig" apply -f - <<<"$manifest" >/dev/null \
    || fail_up "could not create the fake GPU nodes" "see the kubectl message above"
}

NODE_READY='{.status.conditions[?(@.type=="Ready")].status}'

# wait_nodes SELECTOR JSONPATH VALUE COUNT: waits up to STARTUP_TIMEOUT until COUNT nodes matching the label
# SELECTOR show VALUE at JSONPATH (e.g. $NODE_READY True); prints how many do, and fails if fewer did in time.
wait_nodes() {
  local selector="$1" path="$2" value="$3" want="$4" have=0 deadline=$((SECONDS + STARTUP_TIMEOUT))
  while :; do
    have="$("$KUBECTL" --kubeconfig "$DIR/kubeconfig" get nodes -l "$selector" \
      -o "jsonpath={range .items[*]}$path{\"\\n\"}{end}" 2>/dev/null | grep -cx "$value" || true)"
    if ((have == want)); then echo "$have"; return 0; fi
    if ((SECONDS >= deadline)); then echo "$have"; return 1; fi
    sleep 0.5
  done
}

# Starts every component on freshly chosen ports. Returns 2 when a port was taken meanwhile (after
# stopping what it started), so the caller can try again; any other failure ends the script.
start_components() {
  read -r ETCD_PORT ETCD_PEER_PORT API_PORT KCM_PORT SCHED_PORT KWOK_PORT <<<"$(pick_ports 6)"
  # Pod IPs come from a /16 inside 127.0.0.0/8, distinct per cluster, so an e2e harness can run each
  # pod's process on its own loopback address.
  local octet=$((64 + API_PORT % 128))
  POD_CIDR="127.$octet.0.0/16"
  POD_IP_PREFIX="127.$octet."
  log "starting a local control plane in $DIR (Kubernetes $KUBERNETES_VERSION, apiserver on 127.0.0.1:$API_PORT)"

  log "  creating certificates"
  make_pki "$DIR/pki"
  local pki="$DIR/pki" server="https://127.0.0.1:$API_PORT"
  mkdir -p "$DIR/kubeconfigs"
  write_kubeconfig "$DIR/kubeconfig" "$server" "$pki/ca.crt" "$pki/admin.crt" "$pki/admin.key"
  local c
  for c in controller-manager scheduler kwok; do
    write_kubeconfig "$DIR/kubeconfigs/$c.kubeconfig" "$server" "$pki/ca.crt" "$pki/$c.crt" "$pki/$c.key"
  done

  start etcd "$etcd_bin" --name=default --data-dir="$DIR/etcd" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="default=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync --quota-backend-bytes=4294967296 \
    --log-level=warn
  wait_healthy etcd http_health "$ETCD_PORT" health || return $?

  local audit=()
  if [[ "$AUDIT" == 1 ]]; then
    printf '%s\n' 'apiVersion: audit.k8s.io/v1' 'kind: Policy' 'omitStages: [RequestReceived]' \
      'rules:' '- level: Metadata' >"$DIR/audit-policy.yaml"
    audit=(--audit-policy-file="$DIR/audit-policy.yaml" --audit-log-path="$DIR/logs/audit.log"
           --audit-log-format=json --audit-log-mode=batch --audit-log-maxsize=100000)  # MB: never rotated
  fi
  start kube-apiserver "$DIR/bin/kube-apiserver" "${audit[@]}" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" --client-ca-file="$pki/ca.crt" \
    --authorization-mode=Node,RBAC \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
    --api-audiences=https://kubernetes.default.svc.cluster.local \
    --kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" --kubelet-client-key="$pki/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types=InternalIP,Hostname \
    --service-cluster-ip-range=10.96.0.0/16 --endpoint-reconciler-type=none --allow-privileged=true \
    --profiling=false --event-ttl=1h --max-requests-inflight=800 --max-mutating-requests-inflight=400
  wait_healthy kube-apiserver api_ready || return $?

  local kc="$DIR/kubeconfigs"
  start kube-controller-manager "$DIR/bin/kube-controller-manager" \
    --kubeconfig="$kc/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$kc/controller-manager.kubeconfig" \
    --authorization-kubeconfig="$kc/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --leader-elect=false \
    --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
    --use-service-account-credentials=true \
    --cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key" \
    --kube-api-qps=200 --kube-api-burst=400 --profiling=false \
    --controllers='*,-endpoint,-endpointslice,-endpointslicemirroring'
  # (KWOK gives pods loopback IPs, which Endpoints/EndpointSlices refuse; nothing here routes Services.)
  start kube-scheduler "$DIR/bin/kube-scheduler" \
    --kubeconfig="$kc/scheduler.kubeconfig" \
    --authentication-kubeconfig="$kc/scheduler.kubeconfig" \
    --authorization-kubeconfig="$kc/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --leader-elect=false \
    --kube-api-qps=200 --kube-api-burst=400 --profiling=false
  start kwok "$kwok_bin" --kubeconfig="$kc/kwok.kubeconfig" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --cidr="$POD_CIDR" --node-ip=127.0.0.1 --node-lease-duration-seconds=40 \
    --server-address="127.0.0.1:$KWOK_PORT" --config="$CLUSTER_SCRIPT_DIR/kwok-stages.yaml"
  wait_healthy kube-controller-manager https_healthz "$KCM_PORT" || return $?
  wait_healthy kube-scheduler https_healthz "$SCHED_PORT" || return $?
  wait_healthy kwok http_health "$KWOK_PORT" healthz || return $?
}

cmd_up() {
  local running; running="$(running_components)"
  if [[ -n "$running" ]]; then
    if [[ "$FRESH" == 1 ]]; then
      log "replacing the cluster running in $DIR (--fresh)"
      stop_all
    else
      # A reused cluster keeps the Kueue it was started with (as it keeps its real nodes); asked for Kueue, one
      # started without it is refused.
      if ((KUEUE == 0)) && kueue_recorded; then
        KUEUE=1
        COMPONENTS+=(kueue)
        running="$(running_components)"
      fi
      if ((KUEUE)) && ! kueue_recorded; then
        die "the cluster running in $DIR was started without Kueue" \
          "add --fresh to replace it with one that runs Kueue (or run: $0 down --dir $DIR)"
      fi
      # The same for the gang scheduler.
      if ((GANG == 0)) && coscheduling_recorded; then
        GANG=1
        COMPONENTS+=("$GANG_COMPONENT")
        running="$(running_components)"
      fi
      if ((GANG)) && ! coscheduling_recorded; then
        die "the cluster running in $DIR was started without the gang scheduler" \
          "add --fresh to replace it with one that runs it (or run: $0 down --dir $DIR)"
      fi
      if [[ "$running" == "${COMPONENTS[*]}" ]] && load_env && api_ready >/dev/null 2>&1 \
         && { ((KUEUE == 0)) || kueue_ready; } && { ((GANG == 0)) || coscheduling_ready; }; then
        log "a healthy cluster is already running in $DIR; reusing it (make cluster-down stops it)"
        print_usage
        return 0
      fi
      die "a half-running cluster is in $DIR (running: $running)" "run: $0 down --dir $DIR, then up again"
    fi
  fi
  # Orphans of an earlier run (pid files lost) would hold etcd's data dir: stop them too.
  stop_all
  rm -rf "$DIR/etcd" "$DIR/pki" "$DIR/logs" "$DIR/kubeconfigs" "$DIR/bin" "$DIR/cluster.env" "$DIR/kubeconfig" "$DIR/kueue" \
    "$DIR/gang"
  mkdir -p "$DIR"

  local k8s etcd_bin kwok_bin
  k8s="$(tool_dir kubernetes)"; etcd_bin="$(tool_bin etcd etcd)"; kwok_bin="$(tool_bin kwok kwok)"
  tool_bin kubernetes kube-apiserver >/dev/null
  if ((KUEUE)); then tool_bin kueue kueue >/dev/null; fi
  if ((GANG)); then tool_bin scheduler-plugins "$GANG_COMPONENT" >/dev/null; fi
  need_cmd openssl; need_cmd curl; need_cmd ss "install iproute2 (make deps does)"
  mkdir -p "$DIR/bin"
  local b
  for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do ln -sf "$k8s/$b" "$DIR/bin/$b"; done
  ln -sf "$etcd_bin" "$DIR/bin/etcd"; ln -sf "$kwok_bin" "$DIR/bin/kwok"
  if ((REAL_NODES > 0)); then
    ln -sf "$(tool_bin kubernetes kubelet)" "$DIR/bin/kubelet"; ln -sf "$(tool_bin crictl crictl)" "$DIR/bin/crictl"
    ln -sf "$(tool_bin device-plugin ringmaster-emulated-device-plugin)" "$DIR/bin/ringmaster-emulated-device-plugin"
  fi
  if [[ -f "$(tool_dir helm)/.complete" ]]; then ln -sf "$(tool_dir helm)/helm" "$DIR/bin/helm"; fi
  if [[ -f "$(tool_dir prometheus)/.complete" ]]; then ln -sf "$(tool_dir prometheus)/prometheus" "$DIR/bin/prometheus"; fi
  KUBECTL="$DIR/bin/kubectl"

  local start_time=$SECONDS attempt
  for attempt in 1 2 3; do
    start_components && break
    ((attempt < 3)) || fail_up "three attempts lost their ports to other processes" "free some ports in $(head -c 40 /proc/sys/net/ipv4/ip_local_port_range | tr '\t' '-') and retry"
    log "  retrying with new ports (attempt $((attempt + 1)) of 3)"
    stop_all
    rm -rf "$DIR/etcd" "$DIR/logs"
  done
  if ((KUEUE)); then kueue_up; fi
  if ((GANG)); then coscheduling_up; fi

  write_env
  log "  creating $NODES fake GPU nodes with $GPUS nvidia.com/gpu each"
  add_gpu_nodes 0 "$NODES" "$GPUS"
  local ready
  ready="$(wait_nodes ringmaster.io/default-node=true "$NODE_READY" True "$NODES")" \
    || fail_up "only $ready of $NODES fake nodes became Ready" "see $DIR/logs/kwok.log"
  # Pods need their namespace's default ServiceAccount, which the controller-manager creates.
  deadline=$((SECONDS + STARTUP_TIMEOUT))
  until "$KUBECTL" --kubeconfig "$DIR/kubeconfig" get serviceaccount default -n default >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail_up "the default ServiceAccount never appeared" "see $DIR/logs/kube-controller-manager.log"
    sleep 0.5
  done
  real_nodes_up "$REAL_NODES" || fail_up "the real nodes did not start" "see $DIR/logs/"
  log "cluster ready in $((SECONDS - start_time))s"
  print_usage
}

print_usage() {
  cat >&2 <<USAGE

  Local control plane in $DIR (Kubernetes $KUBERNETES_VERSION; KWOK fakes with nvidia.com/gpu, and $REAL_NODES real
  nodes with $REAL_NODE_GPUS emulated nvidia.com/gpu each, tainted ringmaster.io/real-node=true:NoSchedule;
  registry: $(cat "$DIR/registry" 2>/dev/null || echo none)$( ((KUEUE)) && echo "; Kueue $KUEUE_VERSION, webhook on 127.0.0.1:$KUEUE_WEBHOOK_PORT")$( ((GANG)) \
  && echo "; gang scheduling: schedulerName $GANG_SCHEDULER_NAME, label $GANG_POD_GROUP_LABEL"))
    export KUBECONFIG=$DIR/kubeconfig PATH=$DIR/bin:\$PATH
    kubectl get nodes
    kubectl label node ringmaster-gpu-0 node-not-ready.stage.kwok.x-k8s.io=true     # make a node NotReady
    kubectl label pod NAME pod-container-running-failed.stage.kwok.x-k8s.io=true   # make a pod fail
  Logs: $DIR/logs/   Stop: make cluster-down (or $0 down --dir $DIR)

USAGE
}

# ---------------------------------------------------------------------------------------------------

cmd_down() {
  if [[ ! -d "$DIR" ]]; then
    log "no cluster in $DIR"
    return 0
  fi
  local before; before="$(our_pids | sort -u | wc -l)"
  stop_all
  local left; left="$(our_pids | sort -u | wc -l)"
  ((left == 0)) || die "$left cluster processes in $DIR survived SIGKILL" "check 'ps aux | grep $DIR'"
  rm -rf "$DIR/etcd"
  log "stopped $before cluster processes in $DIR"
}

# Stops one component, waits $DOWN_FOR seconds, and starts it again with the same command line (tests use
# it to prove that watches survive an apiserver restart and an etcd outage).
cmd_restart() {
  local name="$1"
  [[ " ${COMPONENTS[*]} " == *" $name "* ]] || die "unknown component '$name'" "use one of: ${COMPONENTS[*]}"
  [[ -f "$DIR/cmdlines/$name" ]] || die "no running cluster in $DIR to restart $name in" "start one with: $0 up --dir $DIR"
  load_env || die "no cluster.env in $DIR" "start the cluster with: $0 up --dir $DIR"
  local pid i
  pid="$(pid_of "$name" || true)"
  if [[ -n "$pid" ]] && proc_alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50 && $(proc_alive "$pid" && echo 1 || echo 0); i++)); do sleep 0.1; done
    proc_alive "$pid" && kill -KILL "$pid" 2>/dev/null
  fi
  local argv=()
  mapfile -d '' -t argv <"$DIR/cmdlines/$name"
  if ((DOWN_FOR > 0)); then
    log "$name stopped; starting it again in ${DOWN_FOR}s"
    sleep "$DOWN_FOR"
  fi
  log "restarting $name"
  start "$name" "${argv[@]}"
  case "$name" in
    kube-apiserver) wait_healthy "$name" api_ready ;;
    kueue) kueue_load_env; wait_restarted kueue kueue_ready ;;
    "$GANG_COMPONENT") coscheduling_load_env; wait_restarted "$GANG_COMPONENT" coscheduling_ready ;;
    *) sleep 1; is_running "$name" || die "$name did not restart" "see $DIR/logs/$name.log" ;;
  esac
}

# wait_restarted NAME CHECK-COMMAND...: after `restart NAME` (same command line, ports and certificates), waits until
# the check passes; dies, leaving the cluster running, if NAME exits or is not ready within STARTUP_TIMEOUT.
wait_restarted() {
  local name="$1"; shift
  local deadline=$((SECONDS + STARTUP_TIMEOUT))
  until "$@"; do
    if ! is_running "$name"; then
      tail -n 20 "$DIR/logs/$name.log" >&2
      die "$name exited after its restart" "see $DIR/logs/$name.log"
    fi
    ((SECONDS < deadline)) || die "$name not ready ${STARTUP_TIMEOUT}s after its restart" "see $DIR/logs/$name.log"
    sleep 0.5
  done
  log "  $name is up (pid $(pid_of "$name"))"
}

cmd_status() {
  local c any=0
  for c in "${COMPONENTS[@]}"; do
    if is_running "$c"; then printf '%-24s running (pid %s)\n' "$c" "$(pid_of "$c")"; any=1
    else printf '%-24s stopped\n' "$c"; fi
  done
  if ((any)) && load_env && api_ready >/dev/null 2>&1; then
    echo "apiserver https://127.0.0.1:$API_PORT ready; KUBECONFIG=$DIR/kubeconfig"
    if ((KUEUE)) && is_running kueue; then
      if kueue_ready; then echo "kueue ready; webhook https://127.0.0.1:$KUEUE_WEBHOOK_PORT"
      else echo "kueue NOT ready (its webhooks do not answer the apiserver; see $DIR/logs/kueue.log)"; fi
    fi
    if ((GANG)) && is_running "$GANG_COMPONENT"; then
      if coscheduling_ready; then echo "$GANG_COMPONENT ready; schedulerName $GANG_SCHEDULER_NAME, https://127.0.0.1:$GANG_PORT"
      else echo "$GANG_COMPONENT NOT ready (its /readyz does not answer; see $DIR/logs/$GANG_COMPONENT.log)"; fi
    fi
  fi
}

main() {
  local cmd="${1:-}"; shift || true
  DIR="" NODES=4 GPUS=8 REAL_NODES=0 REAL_NODE_GPUS=4 FRESH=0 DOWN_FOR=0 AUDIT=0 KUEUE=0 GANG=0
  IMAGES="$RINGMASTER_ROOT/build/images"
  local positional=()
  while (($#)); do
    case "$1" in
      --dir) DIR="${2:-}"; shift 2 ;;
      --nodes) NODES="${2:-}"; shift 2 ;;
      --gpus-per-node) GPUS="${2:-}"; shift 2 ;;
      --real-nodes) REAL_NODES="${2:-}"; shift 2 ;;
      --real-node-gpus) REAL_NODE_GPUS="${2:-}"; shift 2 ;;
      --fresh) FRESH=1; shift ;;
      --down-for) DOWN_FOR="${2:-}"; shift 2 ;;
      --audit-log) AUDIT=1; shift ;;
      --kueue) KUEUE=1; shift ;;
      --gang) GANG=1; shift ;;
      --images) IMAGES="${2:-}"; shift 2 ;;
      -h|--help) usage; exit 0 ;;
      -*) die "unknown option '$1'" "see $0 --help" ;;
      *) positional+=("$1"); shift ;;
    esac
  done
  [[ -n "$DIR" ]] || die "--dir is required" "e.g. $0 $cmd --dir build/cluster"
  [[ "$NODES" =~ ^[0-9]+$ && "$GPUS" =~ ^[0-9]+$ && "$DOWN_FOR" =~ ^[0-9]+$ && "$REAL_NODES" =~ ^[0-9]+$ \
        && "$REAL_NODE_GPUS" =~ ^[0-9]+$ ]] \
    || die "--nodes, --gpus-per-node, --real-nodes, --real-node-gpus and --down-for take whole numbers" ""
  mkdir -p "$DIR"
  DIR="$(cd "$DIR" && pwd)"
  # Kueue is one of the components when `up` is asked for it, or (other commands) when the cluster was started so.
  if [[ "$cmd" != up ]] && kueue_recorded; then KUEUE=1; fi
  if ((KUEUE)); then COMPONENTS+=(kueue); fi
  # The same for the gang scheduler (--gang).
  if [[ "$cmd" != up ]] && coscheduling_recorded; then GANG=1; fi
  if ((GANG)); then COMPONENTS+=("$GANG_COMPONENT"); fi
  KUBECTL="$DIR/bin/kubectl"
  case "$cmd" in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    push) load_env >/dev/null 2>&1 || die "no cluster is running in $DIR" "start one: make cluster-up"
          real_nodes_push "$IMAGES" ;;
    restart) [[ ${#positional[@]} == 1 ]] || die "restart takes one component" "e.g. $0 restart --dir $DIR kube-apiserver"
             cmd_restart "${positional[0]}" ;;
    *) usage; die "unknown command '$cmd'" "use up, down, status, push or restart" ;;
  esac
}

main "$@"
