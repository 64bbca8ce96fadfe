#!/usr/bin/env bash
# make demo: the operator keeping an elastic GPU job's membership on a local control plane.
# Starts (or reuses) the local cluster in build/demo-cluster, runs ringmaster-operator, applies an
# elastic TrainingJob, then fails a worker, loses a node and scales the job, printing each new
# membership generation. Those workers are KWOK pods (no process runs in them). Then the other half:
# real CPU workers (ringmaster-run + ringmaster-train-example over Gloo) losing a worker, having one
# frozen, and gaining two, each time rebuilding their communicators in place and resuming from the
# newest commit. Last, both together (as root): the operator's pods run on the cluster's real node (a
# kubelet on containerd) from a small image of ringmaster-train-example pushed to the cluster's registry,
# one container is killed, and the job still finishes with every worker holding the same weights.
# RINGMASTER_BUILD_DIR (default build) picks the build whose binaries run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD="${RINGMASTER_BUILD_DIR:-$RINGMASTER_ROOT/build}"
DIR="$BUILD/demo-cluster"
BIN="$BUILD/bin"
CLUSTER="$HARNESS_DIR/cluster/cluster.sh"
[[ -x "$BIN/ringmaster-operator" ]] || die "$BIN/ringmaster-operator is missing" "run make build"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
k() { "$DIR/bin/kubectl" --kubeconfig "$DIR/kubeconfig" "$@"; }
generation() { k get tj demo -o jsonpath='{.status.membership.generation}' 2>/dev/null || echo 0; }
LAST_SHOWN=""
# Prints the job's membership, once per generation.
membership() {
  local g; g="$(generation)"
  [[ "$g" == "$LAST_SHOWN" ]] && return 0
  LAST_SHOWN="$g"
  k get tj demo -o jsonpath='  generation {.status.membership.generation}: world {.status.membership.worldSize}, reason {.status.membership.reason}, coordinator {.status.membership.coordinator}{"\n"}  ranks: {range .status.membership.members[*]}{.rank}={.pod}@{.node} {end}{"\n"}'
}
# wait_for DESCRIPTION JSONPATH VALUE: polls the job until the field has the value (60 s at most).
wait_for() {
  local i
  for ((i = 0; i < 240; i++)); do
    [[ "$(k get tj demo -o jsonpath="$2" 2>/dev/null)" == "$3" ]] && { membership; return 0; }
    sleep 0.25
  done
  die "timed out waiting for $1" "see $DIR/operator.log"
}
# wait_past DESCRIPTION GENERATION: waits for a newer generation and prints it.
wait_past() {
  local i
  for ((i = 0; i < 240; i++)); do
    (($(generation) > $2)) && { membership; return 0; }
    sleep 0.1
  done
  die "timed out waiting for $1" "see $DIR/operator.log"
}

# demo_image: a one-layer image of ringmaster-train-example and every library it loads (ldd), pushed to the
# demo cluster's registry; prints its reference. Seconds, where `make images`' worker image takes minutes.
demo_image() {
  local work="$DIR/demo-image" registry tag lib
  registry="$(cat "$DIR/registry")" tag="$(date +%s)"
  rm -rf "$work"
  umoci init --layout "$work/layout" && umoci new --image "$work/layout:latest" &&
    umoci unpack --rootless --image "$work/layout:latest" "$work/bundle" >/dev/null || die "umoci failed" "run make deps"
  local root="$work/bundle/rootfs"
  install -D "$BIN/ringmaster-train-example" "$root/usr/local/bin/ringmaster-train-example"
  for lib in $(ldd "$BIN/ringmaster-train-example" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
    install -D "$lib" "$root$lib"
  done
  mkdir -p "$root/tmp" && chmod 1777 "$root/tmp"
  umoci repack --image "$work/layout:latest" "$work/bundle" &&
    umoci config --image "$work/layout:latest" --config.user 65534:65534 \
      --config.entrypoint /usr/local/bin/ringmaster-train-example &&
    skopeo copy --quiet --dest-tls-verify=false "oci:$work/layout:latest" "docker://$registry/ringmaster-demo:$tag" ||
    die "could not build or push the demo image" "see the message above"
  rm -rf "$work"
  echo "$registry/ringmaster-demo:$tag"
}

step "1. A local control plane with 4 fake GPU nodes (8 nvidia.com/gpu each) and, as root, one real node"
REAL_NODES=0
((EUID == 0)) && REAL_NODES=1  # the last act's real node (a kubelet on containerd) needs root
"$CLUSTER" up --dir "$DIR" --real-nodes "$REAL_NODES" --real-node-gpus 4 2>&1 | grep -v '^$' | sed 's/^/  /' | head -n 16
k apply --server-side --force-conflicts -f "$RINGMASTER_ROOT/crds/ringmaster.io_trainingjobs.yaml" >/dev/null  # > 256 KiB
for ((i = 0; i < 120; i++)); do  # polled: `kubectl wait` fails on a CRD just created (its status has no conditions yet)
  [[ "$(k get crd trainingjobs.ringmaster.io -o jsonpath='{range .status.conditions[*]}{.type}={.status} {end}')" == *"Established=True "* ]] && break
  sleep 0.25
done
((i < 120)) || die "the TrainingJob CRD was not Established within 30 s" "see $DIR/logs/kube-apiserver.log"
k delete tj demo --ignore-not-found --wait=true >/dev/null

step "2. ringmaster-operator (log: $DIR/operator.log)"
"$BIN/ringmaster-operator" --kubeconfig "$DIR/kubeconfig" --namespace default \
  --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 >"$DIR/operator.log" 2>&1 &
OPERATOR=$!
trap 'kill $OPERATOR 2>/dev/null || true' EXIT
sleep 1

step "3. kubectl apply: an elastic job of 2..6 workers, 1 GPU each"
k apply -f - <<'JOB'
apiVersion: ringmaster.io/v1alpha1
kind: TrainingJob
metadata: {name: demo}
spec:
  replicas: {min: 2, max: 6, desired: 4}
  elasticPolicy: {joinBatchWindowSeconds: 2, nodeUnresponsiveSeconds: 5}
  template:
    spec:
      containers:
      - name: trainer
        image: example/trainer:latest
        resources: {limits: {nvidia.com/gpu: 1}}
JOB
wait_for "the first membership" '{.status.membership.worldSize}' 4
k get tj demo

step "4. A worker fails (KWOK's chaos stage): survivors keep their order, a replacement joins"
victim="$(k get tj demo -o jsonpath='{.status.membership.members[1].pod}')"
g="$(generation)"
k label pod "$victim" pod-container-running-failed.stage.kwok.x-k8s.io=true >/dev/null
wait_past "the failure" "$g"
wait_for "the replacement" '{.status.membership.worldSize}' 4

step "5. A node goes NotReady: its workers leave within the 5 s window, their pods are deleted"
node="$(k get tj demo -o jsonpath='{.status.membership.members[0].node}')"
g="$(generation)"
k label node "$node" node-not-ready.stage.kwok.x-k8s.io=true >/dev/null
wait_past "the node loss" "$g"
wait_for "the replacement" '{.status.membership.worldSize}' 4
k label node "$node" node-not-ready.stage.kwok.x-k8s.io- >/dev/null

step "6. kubectl scale tj/demo --replicas=6: the world grows"
k scale tj/demo --replicas=6 >/dev/null
wait_for "the scale-up" '{.status.membership.worldSize}' 6

step "7. What a person sees"
k get tj demo -o wide
k get events --field-selector "involvedObject.uid=$(k get tj demo -o jsonpath='{.metadata.uid}')" --sort-by=.lastTimestamp -o custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message | tail -n 12

step "8. Real CPU workers rebuild in place (ringmaster-run: kill one, freeze rank 0, add two)"
[[ -x "$BIN/ringmaster-run" && -x "$BIN/ringmaster-train-example" ]] || die "ringmaster-run is missing" "run make build"
RUN_DIR="$DIR/elastic-run"
rm -rf "$RUN_DIR"
"$BIN/ringmaster-run" --np 4 --min 2 --max 6 --chaos kill@20,stop@45,add@70:2 --out "$RUN_DIR" \
  --heartbeat-timeout-ms 2000 --startup-timeout-s 60 --deadline-s 300 -- \
  "$BIN/ringmaster-train-example" --steps 150 --step-delay-ms 20 --seed 7 --dtype float64 --checkpoint-dir "$RUN_DIR/ckpt" --out "$RUN_DIR" 2>&1 |
  grep -E "ringmaster-run|generation [0-9]+ ready|restored step" | sed 's/^/  /'
echo "  final weights: $RUN_DIR/weights.txt; every committed sample once per epoch: $RUN_DIR/samples.log"

step "9. Real workers as the operator's pods on a real node (a kubelet on containerd): one is killed, the job finishes"
if ((EUID != 0)); then
  echo "  skipped: a real node needs root (containerd, mounts, cgroups); run make demo as root to see this act"
else
  [[ -s "$DIR/registry" ]] || die "the demo cluster in $DIR has no real node (it was started before they came)" \
    "stop it ($CLUSTER down --dir $DIR) and run make demo again"
  k delete tj demo --cascade=foreground --wait=true >/dev/null  # its KWOK-only pods go first
  LAST_SHOWN=""
  PODS_DIR="$DIR/pods"
  rm -rf "$PODS_DIR"
  mkdir -p "$PODS_DIR/out"
  chmod 1777 "$PODS_DIR/out"  # the image's user (65534) writes its weights there
  IMAGE="$(demo_image)"
  echo "  $IMAGE: ringmaster-train-example and the libraries it loads, pushed to the cluster's registry"
  k apply -f - <<JOB
apiVersion: ringmaster.io/v1alpha1
kind: TrainingJob
metadata: {name: demo}
spec:
  replicas: {min: 2, max: 4, desired: 3}
  elasticPolicy: {joinBatchWindowSeconds: 1}
  template:
    spec:
      nodeSelector: {ringmaster.io/real-node: "true"}
      tolerations: [{key: ringmaster.io/real-node, operator: Exists, effect: NoSchedule}]
      volumes: [{name: out, hostPath: {path: "$PODS_DIR/out", type: Directory}}]
      containers:
      - name: trainer
        image: $IMAGE
        args: [--steps, "150", --step-delay-ms, "40", --seed, "7", --out, /out]
        env: [{name: RINGMASTER_BACKEND, value: gloo}]
        volumeMounts: [{name: out, mountPath: /out}]
        resources: {limits: {nvidia.com/gpu: 1}}
JOB
  wait_for "the first membership" '{.status.membership.worldSize}' 3
  for ((i = 0; i < 300; i++)); do
    k logs "$(k get tj demo -o jsonpath='{.status.membership.members[0].pod}')" 2>/dev/null | grep -q "generation 1 ready" && break
    sleep 0.2
  done
  sleep 1
  victim="$(k get tj demo -o jsonpath='{.status.membership.members[1].pod}')"
  container="$(k get pod "$victim" -o jsonpath='{.status.containerStatuses[0].containerID}')"
  node="$(k get pod "$victim" -o jsonpath='{.spec.nodeName}')"
  [[ "$container" == containerd://* ]] || die "$victim has no running container" "kubectl describe pod $victim"
  g="$(generation)"
  echo "  SIGKILL $victim's container on $node (through its containerd): the kubelet reports it Failed (exit 137)"
  ctr -a "$DIR/nodes/$node/containerd.sock" -n k8s.io task kill -s SIGKILL "${container#containerd://}" >/dev/null
  wait_past "the failure" "$g"
  for ((i = 0; i < 1200; i++)); do
    [[ "$(k get tj demo -o jsonpath='{.status.phase}')" =~ ^(Succeeded|Failed)$ ]] && break
    membership
    sleep 0.1
  done
  membership
  k get tj demo
  k get pods -l ringmaster.io/job-name=demo -o wide | sed 's/^/  /'
  weights=("$PODS_DIR"/out/weights.*.txt)
  same=yes
  for w in "${weights[@]}"; do cmp -s "$w" "${weights[0]}" || same=no; done
  echo "  ${#weights[@]} workers finished; identical final weights: $same (their logs: kubectl logs)"
  [[ "$(k get tj demo -o jsonpath='{.status.phase}')" == Succeeded && "$same" == yes ]] ||
    die "the job did not finish cleanly" "see kubectl describe tj demo; $PODS_DIR/out"
fi

step "Done. The cluster keeps running: KUBECONFIG=$DIR/kubeconfig; stop it with: $CLUSTER down --dir $DIR"
k delete tj demo --wait=false >/dev/null
