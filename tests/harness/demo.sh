#!/usr/bin/env bash
# make demo: the operator keeping an elastic GPU job's membership on a local control plane.
# Starts (or reuses) the local cluster in build/demo-cluster, runs ringmaster-operator, applies an
# elastic TrainingJob, then fails a worker, loses a node and scales the job, printing each new
# membership generation. Those workers are KWOK pods (no process runs in them). Then the other half:
# real CPU workers (ringmaster-run + ringmaster-train-example over Gloo) losing a worker, having one
# frozen, and gaining two, each time rebuilding their communicators in place and resuming from the
# newest commit. Last, both together: ringmaster-pod-runner runs the operator's pods as real workers
# (each on its loopback pod IP, with the pod's environment and service-account token), one is killed,
# and the job still finishes with every worker holding the same weights.
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

step "1. A local control plane with 4 fake GPU nodes (8 nvidia.com/gpu each)"
"$CLUSTER" up --dir "$DIR" 2>&1 | grep -v '^$' | sed 's/^/  /' | head -n 12
k apply -f "$RINGMASTER_ROOT/crds/ringmaster.io_trainingjobs.yaml" >/dev/null
k wait --for=condition=Established crd/trainingjobs.ringmaster.io --timeout=30s >/dev/null
k delete tj demo --ignore-not-found --wait=true >/dev/null

step "2. ringmaster-operator (log: $DIR/operator.log)"
"$BIN/ringmaster-operator" --kubeconfig "$DIR/kubeconfig" --namespace default \
  --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 >"$DIR/operator.log" 2>&1 &
OPERATOR=$!
RUNNER=""
trap 'kill $OPERATOR $RUNNER 2>/dev/null || true' EXIT
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

step "9. Real workers as the operator's pods (ringmaster-pod-runner: each Running pod's container runs on its pod IP)"
[[ -x "$BIN/ringmaster-pod-runner" ]] || die "$BIN/ringmaster-pod-runner is missing" "run make build"
k delete tj demo --cascade=foreground --wait=true >/dev/null  # its KWOK-only pods go first
LAST_SHOWN=""
PODS_DIR="$DIR/pods"
rm -rf "$PODS_DIR"
mkdir -p "$PODS_DIR/out"
"$BIN/ringmaster-pod-runner" --kubeconfig "$DIR/kubeconfig" --namespace default --job demo --bin-dir "$BIN" \
  --work-dir "$PODS_DIR" --deadline-s 120 2>"$PODS_DIR/runner.log" &
RUNNER=$!
k apply -f - <<JOB
apiVersion: ringmaster.io/v1alpha1
kind: TrainingJob
metadata: {name: demo}
spec:
  replicas: {min: 2, max: 4, desired: 3}
  elasticPolicy: {joinBatchWindowSeconds: 1}
  template:
    spec:
      containers:
      - name: trainer
        image: example/trainer:latest
        command: [ringmaster-train-example]
        args: [--steps, "150", --step-delay-ms, "40", --seed, "7", --out, "$PODS_DIR/out"]
        resources: {limits: {nvidia.com/gpu: 1}}
JOB
wait_for "the first membership" '{.status.membership.worldSize}' 3
for ((i = 0; i < 200; i++)); do grep -q "generation 1 ready" "$PODS_DIR"/demo-worker-*.log 2>/dev/null && break; sleep 0.1; done
sleep 1
victim="$(k get tj demo -o jsonpath='{.status.membership.members[1].pod}')"
pid="$(sed -n "s/.*started $victim (uid [0-9a-f]*) .* as pid \([0-9]*\) .*/\1/p" "$PODS_DIR/runner.log" | tail -n 1)"
[[ -n "$pid" ]] || die "the pod runner did not start $victim" "see $PODS_DIR/runner.log"
g="$(generation)"
echo "  SIGKILL $victim's worker process (pid $pid): the pod runner reports its pod Failed (exit 137)"
kill -9 "$pid"
wait_past "the failure" "$g"
for ((i = 0; i < 600; i++)); do
  [[ "$(k get tj demo -o jsonpath='{.status.phase}')" =~ ^(Succeeded|Failed)$ ]] && break
  membership
  sleep 0.1
done
membership
k get tj demo
grep -E "started|exited|died|reported|killing" "$PODS_DIR/runner.log" | sed 's/ (service account [^)]*): .*//; s/^/  /'
weights=("$PODS_DIR"/out/weights.*.txt)
same=yes
for w in "${weights[@]}"; do cmp -s "$w" "${weights[0]}" || same=no; done
echo "  ${#weights[@]} workers finished; identical final weights: $same (worker logs: $PODS_DIR/*.log)"
[[ "$(k get tj demo -o jsonpath='{.status.phase}')" == Succeeded && "$same" == yes ]] || die "the job did not finish cleanly" "see $PODS_DIR"
kill "$RUNNER" 2>/dev/null || true

step "Done. The cluster keeps running: KUBECONFIG=$DIR/kubeconfig; stop it with: $CLUSTER down --dir $DIR"
k delete tj demo --wait=false >/dev/null
