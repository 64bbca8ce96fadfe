#!/usr/bin/env bash
# The real nodes of the local cluster, end to end (ctest: integration.RealNodes.PodsRunPullLogExecAndGpus):
#
#   real_nodes_test.sh WORK_DIR IMAGES_DIR CHART_DIR OPERATOR_BIN
#
# IMAGES_DIR holds `make images`' archives (the operator's is pushed to the cluster's registry); CHART_DIR is the
# Helm chart (helm/ringmaster); OPERATOR_BIN is this tree's ringmaster-operator, which runs on this machine for
# the TrainingJob step (so that step tests this build, not the image).
#
# Starts a cluster in WORK_DIR with two real nodes, and checks what a cluster user relies on:
#   - both nodes register, go Ready and report containerd as their runtime, tainted for opt-in;
#   - an image pushed to the cluster's registry is pulled by a kubelet; a pod on each node runs it;
#   - a pod on one node reaches a pod on the other by its pod IP (each node's bridge, routed by this machine);
#   - `kubectl logs`, `kubectl logs --previous` (a container the kubelet restarted) and `kubectl exec` work (the
#     apiserver calls the kubelet);
#   - a pod reaches the apiserver at the `kubernetes` Service's address, as in-cluster clients do;
#   - the chart installs the operator from the registry onto a real node: two replicas Ready, one holds the lease
#     (prints the time from `helm install` to Ready);
#   - a container's termination message comes back in its status ("completed at step 7");
#   - each node lists 4 emulated nvidia.com/gpu (the device-plugin API), and a pod limited to 2 gets two device
#     ids in NVIDIA_VISIBLE_DEVICES and RINGMASTER_EMULATED_GPUS=2;
#   - a container over its memory limit is killed by the kernel and reported OOMKilled, and a TrainingJob's worker
#     killed so is a failure with reason OOMKilled in the job's status.recentFailures;
#   - a tag the registry lacks shows up as the pod's ErrImagePull or ImagePullBackOff, and a TrainingJob whose
#     worker image cannot be pulled says so in its Running condition (reason WorkerCannotStart) within a minute,
#     then fails at its spec.scheduling.scheduleTimeoutSeconds (reason ScheduleTimeout) and its pod, with the GPU
#     it held on its node, is deleted;
#   - `cluster.sh down` leaves no process, mount, bridge, cgroup, CNI lease or iptables rule behind.
# Needs root (as containerd does). Prints each step; exit 1 names the step that failed.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../lib.sh"

[[ $# == 4 ]] || die "usage: $0 WORK_DIR IMAGES_DIR CHART_DIR OPERATOR_BIN" ""
WORK="$1" IMAGES_DIR="$2" CHART="$3" OPERATOR_BIN="$4"
[[ -x "$OPERATOR_BIN" ]] || die "$OPERATOR_BIN is missing" "build it (make build)"
OPERATOR_ARCHIVE="$IMAGES_DIR/ringmaster-operator.tar"
[[ -f "$OPERATOR_ARCHIVE" ]] || die "$OPERATOR_ARCHIVE is missing" "run make images (make test does it first)"
TAG="$(chart_version "$CHART")" || exit 1
DIR="$WORK/cluster"
CLUSTER="$HERE/cluster.sh"
rm -rf "$WORK"
mkdir -p "$WORK"

step() { log "real nodes: $*"; }
fail() {
  log "FAILED: $1"
  [[ -n "${2:-}" ]] && printf '%s\n' "$2" >&2
  if [[ -n "${OPERATOR_PID:-}" ]]; then kill "$OPERATOR_PID" 2>/dev/null || true; fi
  "$CLUSTER" down --dir "$DIR" >/dev/null 2>&1 || true
  exit 1
}

step "cluster up with 2 real nodes"
"$CLUSTER" up --dir "$DIR" --nodes 1 --real-nodes 2 --fresh || fail "cluster up"
KUBECTL="$DIR/bin/kubectl"
k() { "$KUBECTL" --kubeconfig "$DIR/kubeconfig" "$@"; }

step "nodes: Ready, containerd, tainted"
for n in ringmaster-node-0 ringmaster-node-1; do
  runtime="$(k get node "$n" -o jsonpath='{.status.nodeInfo.containerRuntimeVersion}')"
  [[ "$runtime" == containerd://* ]] || fail "$n reports runtime '$runtime', not containerd://..."
  ready="$(k get node "$n" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')"
  [[ "$ready" == True ]] || fail "$n is not Ready ($ready)"
  taint="$(k get node "$n" -o jsonpath='{.spec.taints[?(@.key=="ringmaster.io/real-node")].effect}')"
  [[ "$taint" == NoSchedule ]] || fail "$n lacks the ringmaster.io/real-node:NoSchedule taint ('$taint')"
  echo "  $n: $runtime, Ready, tainted"
done

REGISTRY="$(cat "$DIR/registry")"
IMAGES="$(tool_dir node-images)"
step "push busybox to the registry at $REGISTRY"
skopeo copy --quiet --dest-tls-verify=false "docker-archive:$IMAGES/busybox.tar" "docker://$REGISTRY/busybox:test" \
  || fail "skopeo could not push to $REGISTRY"

# pod NAME NODE IMAGE COMMAND [LIMITS]: a pod pinned to NODE that tolerates the real-node taint; LIMITS is a
# YAML map of its container's resource limits (e.g. "{memory: 32Mi}").
pod() {
  local limits="{}"
  if (($# >= 5)); then limits="$5"; fi
  k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  nodeSelector: {kubernetes.io/hostname: $2}
  tolerations: [{key: ringmaster.io/real-node, operator: Exists}]
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: $3
    command: ["/bin/sh", "-c", "$4"]
    resources: {limits: $limits}
EOF
}

# job NAME IMAGE COMMAND [LIMITS [SPEC]]: a one-worker TrainingJob whose worker runs on a real node; SPEC is one
# more line of its spec (e.g. "scheduling: {scheduleTimeoutSeconds: 20}").
job() {
  local limits="{}" spec=""
  if (($# >= 4)); then limits="$4"; fi
  if (($# >= 5)); then spec="$5"; fi
  k apply -f - >/dev/null <<EOF
apiVersion: ringmaster.io/v1alpha1
kind: TrainingJob
metadata: {name: $1}
spec:
  replicas: {min: 1, max: 1, desired: 1}
  $spec
  template:
    spec:
      restartPolicy: Never
      tolerations: [{key: ringmaster.io/real-node, operator: Exists}]
      nodeSelector: {ringmaster.io/real-node: "true"}
      containers:
      - name: trainer
        image: $2
        command: ["/bin/sh", "-c", "$3"]
        resources: {limits: $limits}
EOF
}

# wait_phase POD PHASE SECONDS
wait_phase() {
  local deadline=$((SECONDS + $3)) phase=""
  while ((SECONDS < deadline)); do
    phase="$(k get pod "$1" -o jsonpath='{.status.phase}' 2>/dev/null || true)"
    [[ "$phase" == "$2" ]] && return 0
    [[ "$phase" == Failed || "$phase" == Succeeded ]] && break  # ended otherwise
    sleep 0.5
  done
  fail "pod $1 is '$phase', not $2" "$(k describe pod "$1" | tail -12; echo "its log:"; k logs "$1" 2>&1 | tail -5)"
}

step "a server pod on node 0, a client pod on node 1 (pulled from the registry)"
pod server ringmaster-node-0 "$REGISTRY/busybox:test" "echo serving; while true; do echo pong | nc -l -p 8080; done"
wait_phase server Running 60
server_ip="$(k get pod server -o jsonpath='{.status.podIP}')"
pod client ringmaster-node-1 "$REGISTRY/busybox:test" \
  "reply=\$(nc -w 5 $server_ip 8080) && echo \$reply && echo completed at step 7 > /dev/termination-log"
wait_phase client Succeeded 60
echo "  server $server_ip on node 0; client on $(k get pod client -o jsonpath='{.status.podIP}') on node 1"

step "kubectl logs"
[[ "$(k logs client)" == pong ]] || fail "the client's log is not 'pong' (pod-to-pod across nodes)" "$(k logs client 2>&1)"
[[ "$(k logs server | head -1)" == serving ]] || fail "the server's log does not start with 'serving'"
echo "  client said: pong"

step "kubectl exec"
out="$(k exec server -- /bin/sh -c 'echo exec in $(hostname)')" || fail "kubectl exec failed" "$out"
[[ "$out" == "exec in server" ]] || fail "kubectl exec printed '$out'"
echo "  $out"

step "termination message"
message="$(k get pod client -o jsonpath='{.status.containerStatuses[0].state.terminated.message}')"
[[ "$message" == "completed at step 7"* ]] || fail "the termination message is '$message'"
echo "  $message"

step "kubectl logs --previous: a container the kubelet restarted"
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: restarter}
spec:
  nodeSelector: {kubernetes.io/hostname: ringmaster-node-1}
  tolerations: [{key: ringmaster.io/real-node, operator: Exists}]
  restartPolicy: OnFailure
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: "$REGISTRY/busybox:test", command: ["/bin/sh", "-c", "echo run of \$(hostname); exit 3"]}
EOF
deadline=$((SECONDS + 60)) restarts=0
while ((SECONDS < deadline)); do  # the kubelet's first back-off is 10 s
  restarts="$(k get pod restarter -o jsonpath='{.status.containerStatuses[0].restartCount}' 2>/dev/null || true)"
  [[ "${restarts:-0}" -ge 1 ]] && break
  sleep 0.5
done
[[ "${restarts:-0}" -ge 1 ]] || fail "the kubelet did not restart the failing container within 60 s" "$(k describe pod restarter | tail -12)"
# (while the kubelet swaps containers, the previous one's log is briefly unavailable: asked again for 20 s)
deadline=$((SECONDS + 20)) previous=""
while ((SECONDS < deadline)); do
  previous="$(k logs --previous restarter 2>&1 || true)"
  [[ "$previous" == "run of restarter" ]] && break
  sleep 0.5
done
[[ "$previous" == "run of restarter" ]] || fail "kubectl logs --previous printed '$previous'"
last_exit="$(k get pod restarter -o jsonpath='{.status.containerStatuses[0].lastState.terminated.exitCode}')"
[[ "$last_exit" == 3 ]] || fail "the previous run's exit code is '$last_exit', not 3"
echo "  restart $restarts; the previous run printed '$previous' and exited $last_exit"
k delete pod restarter --wait=false >/dev/null

step "a pod reaches the apiserver as in-cluster clients do"
pod incluster ringmaster-node-0 "$REGISTRY/busybox:test" \
  "wget -q -O - --no-check-certificate https://\$KUBERNETES_SERVICE_HOST:\$KUBERNETES_SERVICE_PORT/version"
wait_phase incluster Succeeded 60
version="$(k logs incluster | sed -n 's/.*"gitVersion": *"\([^"]*\)".*/\1/p')"
[[ "$version" == "$(sed -n 's/^KUBERNETES_VERSION=//p' "$DIR/cluster.env")" ]] \
  || fail "the pod read no apiserver version at the kubernetes Service" "$(k logs incluster 2>&1 | tail -5)"
echo "  https://\$KUBERNETES_SERVICE_HOST/version from a pod: $version"

step "helm install the operator from the registry onto a real node"
# The user's way: make push's script, to the cluster's registry.
IMAGES_DIR="$IMAGES_DIR" REGISTRY="$REGISTRY" SKOPEO_ARGS=--dest-tls-verify=false PUSH_IMAGES=ringmaster-operator \
  "$HERE/../../../docker/push-images.sh" || fail "docker/push-images.sh could not push the operator image to $REGISTRY"
start_install=$SECONDS
"$DIR/bin/helm" --kubeconfig "$DIR/kubeconfig" install rm "$CHART" -n ringmaster-system --create-namespace --wait \
  --timeout 180s --set image.repository="$REGISTRY/ringmaster-operator" --set image.tag="$TAG" \
  --set 'tolerations[0].key=ringmaster.io/real-node' --set 'tolerations[0].operator=Exists' \
  --set-string 'nodeSelector.ringmaster\.io/real-node=true' >/dev/null || fail "helm install" \
  "$(k -n ringmaster-system describe pods | tail -20)"
ready="$(k -n ringmaster-system get deploy rm-ringmaster-operator -o jsonpath='{.status.readyReplicas}')"
[[ "$ready" == 2 ]] || fail "the operator has '$ready' ready replicas, not 2"
holder="$(k -n ringmaster-system get lease rm-ringmaster-operator -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true)"
[[ "$holder" == rm-ringmaster-operator-* ]] || fail "no operator replica holds the lease ('$holder')"
nodes="$(k -n ringmaster-system get pods -o jsonpath='{.items[*].spec.nodeName}')"
echo "  helm install -> 2 replicas Ready on [$nodes] in $((SECONDS - start_install)) s; leader $holder"

step "emulated GPUs through the device-plugin API"
for n in ringmaster-node-0 ringmaster-node-1; do
  gpus="$(k get node "$n" -o jsonpath='{.status.allocatable.nvidia\.com/gpu}')"
  [[ "$gpus" == 4 ]] || fail "$n has '$gpus' allocatable nvidia.com/gpu, not 4"
done
pod gpus ringmaster-node-1 "$REGISTRY/busybox:test" "echo \$RINGMASTER_EMULATED_GPUS \$NVIDIA_VISIBLE_DEVICES" \
  "{nvidia.com/gpu: 2}"
wait_phase gpus Succeeded 60
read -r count ids <<<"$(k logs gpus)"
[[ "$count" == 2 ]] || fail "the GPU pod saw RINGMASTER_EMULATED_GPUS='$count', not 2"
[[ "$ids" =~ ^GPU-emulated-ringmaster-node-1-[0-3],GPU-emulated-ringmaster-node-1-[0-3]$ ]] \
  || fail "the GPU pod saw NVIDIA_VISIBLE_DEVICES='$ids'"
echo "  4 nvidia.com/gpu per node; a pod limited to 2 got RINGMASTER_EMULATED_GPUS=$count NVIDIA_VISIBLE_DEVICES=$ids"

step "a container over its memory limit is OOMKilled by the kernel"
pod hog ringmaster-node-0 "$REGISTRY/busybox:test" "head -c 500000000 /dev/zero | tail -n 1 > /dev/null" \
  "{memory: 32Mi}"
wait_phase hog Failed 60
reason="$(k get pod hog -o jsonpath='{.status.containerStatuses[0].state.terminated.reason}')"
code="$(k get pod hog -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')"
[[ "$reason" == OOMKilled ]] || fail "the memory hog ended with reason '$reason' (exit $code), not OOMKilled"
echo "  $reason (exit $code) under a 32Mi limit"

step "a tag the registry lacks"
pod missing ringmaster-node-0 "$REGISTRY/busybox:no-such-tag" "true"
deadline=$((SECONDS + 60)) reason=""
while ((SECONDS < deadline)); do
  reason="$(k get pod missing -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}' 2>/dev/null || true)"
  [[ "$reason" == ErrImagePull || "$reason" == ImagePullBackOff ]] && break
  sleep 0.5
done
[[ "$reason" == ErrImagePull || "$reason" == ImagePullBackOff ]] || fail "the pod waits with '$reason', not a pull error"
echo "  $reason"

step "a TrainingJob whose worker image cannot be pulled says so, and frees its GPU at its schedule timeout (this build's operator, on this machine)"
"$DIR/bin/helm" --kubeconfig "$DIR/kubeconfig" uninstall rm -n ringmaster-system --wait >/dev/null \
  || fail "helm uninstall"
"$OPERATOR_BIN" --kubeconfig "$DIR/kubeconfig" --metrics-bind-address 0 --health-probe-bind-address 0 \
  >"$WORK/operator.log" 2>&1 &
OPERATOR_PID=$!
job bad-image "$REGISTRY/busybox:no-such-tag" "sleep 600" "{nvidia.com/gpu: 1}" \
  "scheduling: {scheduleTimeoutSeconds: 20}"
start_job=$SECONDS condition=""
while ((SECONDS - start_job < 60)); do
  condition="$(k get tj bad-image -o jsonpath='{.status.conditions[?(@.type=="Running")].reason}: {.status.conditions[?(@.type=="Running")].message}' 2>/dev/null || true)"
  [[ "$condition" == WorkerCannotStart:* ]] && break
  sleep 1
done
[[ "$condition" == WorkerCannotStart:*ImagePull* || "$condition" == WorkerCannotStart:*ErrImagePull* ]] \
  || fail "the job's Running condition does not name the pull error after 60 s: '$condition'" \
    "$(tail -20 "$WORK/operator.log")"
echo "  after $((SECONDS - start_job)) s: $condition" | cut -c1-220
gpu_pod="$(k get pods -l ringmaster.io/job-name=bad-image -o jsonpath='{.items[0].spec.nodeName} {.items[0].spec.containers[0].resources.limits.nvidia\.com/gpu}')"
[[ "$gpu_pod" == ringmaster-node-?" 1" ]] || fail "the worker pod does not hold a GPU on a real node: '$gpu_pod'"
# Past scheduleTimeoutSeconds (20 s) the job fails, naming why, and its pod (with the GPU) is deleted.
phase=""
while ((SECONDS - start_job < 60)); do
  phase="$(k get tj bad-image -o jsonpath='{.status.phase} {.status.conditions[?(@.type=="Failed")].reason}')"
  [[ "$phase" == Failed* ]] && break
  sleep 1
done
[[ "$phase" == "Failed ScheduleTimeout" ]] || fail "the job is '$phase' 60 s after it was applied, not Failed by ScheduleTimeout" \
  "$(tail -20 "$WORK/operator.log")"
failed_after=$((SECONDS - start_job))
left=1
while ((SECONDS - start_job < 90)); do
  left="$(k get pods -l ringmaster.io/job-name=bad-image -o name | wc -l)"
  ((left == 0)) && break
  sleep 1
done
((left == 0)) || fail "the failed job's worker pod still exists 90 s after the job was applied" "$(k get pods -o wide)"
echo "  Failed (ScheduleTimeout) after $failed_after s; its pod and GPU released after $((SECONDS - start_job)) s:"
k get tj bad-image -o jsonpath='  {.status.conditions[?(@.type=="Failed")].message}{"\n"}' | cut -c1-220
k delete tj bad-image --wait=false >/dev/null

step "a worker the kernel OOM-kills is a failure with reason OOMKilled in the job's recentFailures"
job hog "$REGISTRY/busybox:test" "head -c 500000000 /dev/zero | tail -n 1 > /dev/null" "{memory: 32Mi}"
start_job=$SECONDS failure=""
while ((SECONDS - start_job < 60)); do
  failure="$(k get tj hog -o jsonpath='{.status.recentFailures[0].pod} {.status.recentFailures[0].reason} {.status.recentFailures[0].exitCode}' 2>/dev/null || true)"
  [[ "$failure" == *OOMKilled* ]] && break
  sleep 1
done
[[ "$failure" == "hog-worker-0 OOMKilled 137" ]] \
  || fail "the job's first recent failure is '$failure', not hog-worker-0 OOMKilled 137" "$(tail -20 "$WORK/operator.log")"
echo "  after $((SECONDS - start_job)) s: recentFailures[0] = $failure"
k delete tj hog --wait=false >/dev/null
kill "$OPERATOR_PID" 2>/dev/null || true
wait "$OPERATOR_PID" 2>/dev/null || true
OPERATOR_PID=""

step "cluster down leaves nothing"
id="$(printf '%04x' $(($(sed -n 's|^APISERVER_URL=https://127.0.0.1:||p' "$DIR/cluster.env") % 65536)))"
"$CLUSTER" down --dir "$DIR" || fail "cluster down"
left="$(ps -eo pid=,args= | grep -F "$DIR/" | grep -v grep || true)"
[[ -z "$left" ]] || fail "processes left" "$left"
left="$(awk -v d="$DIR/" 'index($2, d) == 1' /proc/mounts)"
[[ -z "$left" ]] || fail "mounts left" "$left"
left="$(ip -br link | awk -v p="rm${id}n" 'index($1, p) == 1' || true)"
[[ -z "$left" ]] || fail "bridges left" "$left"
left="$(ls -d /sys/fs/cgroup/*/ringmaster-"$id"-* 2>/dev/null || true)"
[[ -z "$left" ]] || fail "cgroups left" "$left"
left="$(ls -d /var/lib/cni/networks/rm"$id"n* 2>/dev/null || true)"
[[ -z "$left" ]] || fail "CNI leases left" "$left"
left="$(iptables -t nat -S PREROUTING | grep -F "rm${id}n+" || true)"
[[ -z "$left" ]] || fail "iptables rules left" "$left"
rm -rf "$WORK"
step "passed"
