#!/usr/bin/env bash
# Kueue on the local cluster (`cluster.sh up --kueue`), end to end (ctest: integration.Kueue.QuotaAdmissionAndWebhooks):
#
#   kueue_test.sh CLUSTER_DIR
#
# Starts a cluster with Kueue in CLUSTER_DIR (one KWOK node with 8 nvidia.com/gpu; no root needed), and checks:
#   - cluster.env records KUEUE=1 and the webhook's port; `status` reports Kueue ready;
#   - Kueue's validating webhook, called by the apiserver, refuses a ClusterQueue with a negative nominalQuota (which
#     the CRD's schema lets through) with Kueue's own message;
#   - a ResourceFlavor, a ClusterQueue with nominalQuota nvidia.com/gpu 4, and a LocalQueue; the ClusterQueue goes
#     Active, and reads back as kueue.x-k8s.io/v1beta1 (the apiserver converts through Kueue's conversion webhook);
#   - a batch/v1 Job labelled kueue.x-k8s.io/queue-name is suspended by Kueue's mutating webhook; one asking for 8
#     GPUs stays suspended, its Workload not admitted (QuotaReserved False); one asking for 2 is admitted (its
#     Workload Admitted True, the Job unsuspended) and its pod runs on the KWOK node;
#   - `cluster.sh restart kueue` brings it back (the same ports and certificates) with its webhooks answering;
#   - `cluster.sh down` leaves no Kueue process.
# Prints each step; exit 1 names the step that failed. About 30 s.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../lib.sh"

[[ $# == 1 ]] || die "usage: $0 CLUSTER_DIR" ""
mkdir -p "$1"
DIR="$(cd "$1" && pwd)"
CLUSTER="$HERE/cluster.sh"
NS=kueue-test
START=$SECONDS

step() { log "kueue: $*"; }
fail() {
  log "FAILED: $1"
  [[ -n "${2:-}" ]] && printf '%s\n' "$2" >&2
  if [[ -f "$DIR/logs/kueue.log" ]]; then
    log "last lines of $DIR/logs/kueue.log:"
    tail -n 15 "$DIR/logs/kueue.log" >&2
  fi
  "$CLUSTER" down --dir "$DIR" >/dev/null 2>&1 || true
  exit 1
}

step "cluster up --kueue in $DIR"
t0=$SECONDS
"$CLUSTER" up --dir "$DIR" --nodes 1 --gpus-per-node 8 --fresh --kueue || fail "cluster up --kueue"
echo "  cluster with Kueue up in $((SECONDS - t0))s"
k() { "$DIR/bin/kubectl" --kubeconfig "$DIR/kubeconfig" "$@"; }

step "cluster.env and status"
grep -qx 'KUEUE=1' "$DIR/cluster.env" || fail "cluster.env lacks KUEUE=1" "$(cat "$DIR/cluster.env")"
PORT="$(sed -n 's/^KUEUE_WEBHOOK_PORT=//p' "$DIR/cluster.env")"
[[ "$PORT" =~ ^[0-9]+$ ]] || fail "cluster.env lacks KUEUE_WEBHOOK_PORT" "$(cat "$DIR/cluster.env")"
status="$("$CLUSTER" status --dir "$DIR")" || fail "cluster.sh status"
grep -q '^kueue  *running' <<<"$status" && grep -q '^kueue ready' <<<"$status" || fail "status does not report Kueue ready" "$status"
echo "  KUEUE=1, webhook on 127.0.0.1:$PORT; status: kueue running and ready"

# cluster_queue NAME GPUS: a ClusterQueue over the flavor default-flavor with nominalQuota nvidia.com/gpu GPUS.
cluster_queue() {
  cat <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: $1}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: "16"}
      - {name: memory, nominalQuota: 64Gi}
      - {name: nvidia.com/gpu, nominalQuota: "$2"}
YAML
}

step "the validating webhook refuses a negative nominalQuota (the schema allows it)"
if out="$(cluster_queue bad-queue -1 | k create -f - 2>&1)"; then
  fail "a ClusterQueue with nominalQuota -1 was created" "$out"
fi
[[ "$out" == *'admission webhook "vclusterqueue.kb.io" denied the request'* \
   && "$out" == *'nominalQuota: Invalid value: "-1": must be greater than or equal to 0'* ]] \
  || fail "the refusal is not Kueue's webhook's" "$out"
echo "  $out"

step "ResourceFlavor, ClusterQueue (4 GPUs), LocalQueue"
k create namespace "$NS" >/dev/null || fail "create namespace $NS"
{ printf '%s\n' 'apiVersion: kueue.x-k8s.io/v1beta2' 'kind: ResourceFlavor' 'metadata: {name: default-flavor}' '---'
  cluster_queue gpu-queue 4
  printf '%s\n' '---' 'apiVersion: kueue.x-k8s.io/v1beta2' 'kind: LocalQueue' \
    "metadata: {name: team-queue, namespace: $NS}" 'spec: {clusterQueue: gpu-queue}'
} | k apply -f - >/dev/null || fail "creating the flavor and queues"
cq_active() { [[ "$(k get clusterqueue gpu-queue -o jsonpath='{.status.conditions[?(@.type=="Active")].status}')" == True ]]; }
wait_until 60 "ClusterQueue gpu-queue Active" cq_active
lq_active() { [[ "$(k -n "$NS" get localqueue team-queue -o jsonpath='{.status.conditions[?(@.type=="Active")].status}')" == True ]]; }
wait_until 60 "LocalQueue team-queue Active" lq_active
v1beta1="$(k get clusterqueues.v1beta1.kueue.x-k8s.io gpu-queue 2>"$DIR/v1beta1.err" \
  -o jsonpath='{.apiVersion} {.spec.resourceGroups[0].flavors[0].resources[2].nominalQuota}')" \
  || fail "reading the ClusterQueue as v1beta1 (conversion webhook)" "$(cat "$DIR/v1beta1.err")"
[[ "$v1beta1" == "kueue.x-k8s.io/v1beta1 4" ]] || fail "the v1beta1 view of gpu-queue is '$v1beta1'"
echo "  gpu-queue and team-queue Active; gpu-queue read as $v1beta1 GPUs through the conversion webhook"

# job NAME GPUS: a Job in the LocalQueue, one pod asking for GPUS GPUs, not suspended by us.
job() {
  cat <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
  namespace: $NS
  labels: {kueue.x-k8s.io/queue-name: team-queue}
spec:
  completions: 1
  parallelism: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: train
        image: ringmaster.local/busybox:1.35
        command: [sleep, "3600"]
        resources:
          requests: {cpu: "1", memory: 1Gi}
          limits: {nvidia.com/gpu: "$2"}
YAML
}

# workload_condition JOB TYPE: the status of the condition TYPE of JOB's Workload (empty while it has none).
workload_condition() {
  local uid; uid="$(k -n "$NS" get job "$1" -o jsonpath='{.metadata.uid}')"
  k -n "$NS" get workloads -l "kueue.x-k8s.io/job-uid=$uid" \
    -o jsonpath="{.items[0].status.conditions[?(@.type==\"$2\")].status}" 2>/dev/null
}
suspended() { k -n "$NS" get job "$1" -o jsonpath='{.spec.suspend}'; }

step "a Job asking for 8 GPUs (over the quota of 4) stays suspended, not admitted"
job big-job 8 | k create -f - >/dev/null || fail "create big-job"
[[ "$(suspended big-job)" == true ]] || fail "big-job was not suspended by Kueue's mutating webhook"
big_pending() { [[ "$(workload_condition big-job QuotaReserved)" == False ]]; }
wait_until 60 "big-job's Workload with QuotaReserved False" big_pending

step "a Job asking for 2 GPUs is admitted and runs"
job small-job 2 | k create -f - >/dev/null || fail "create small-job"
small_admitted() { [[ "$(workload_condition small-job Admitted)" == True && "$(suspended small-job)" == false ]]; }
wait_until 60 "small-job's Workload Admitted True and the Job unsuspended" small_admitted
small_running() {
  [[ "$(k -n "$NS" get pods -l job-name=small-job -o jsonpath='{.items[0].status.phase}')" == Running ]]
}
wait_until 60 "small-job's pod Running on the KWOK node" small_running
echo "  small-job admitted (Workload Admitted True, suspend false), its pod Running"
sleep 2   # big-job's Workload is looked at again once small-job holds quota
[[ "$(suspended big-job)" == true && "$(workload_condition big-job QuotaReserved)" == False \
   && "$(workload_condition big-job Admitted)" != True ]] || fail "big-job was admitted over the quota"
message="$(k -n "$NS" get workloads -l "kueue.x-k8s.io/job-uid=$(k -n "$NS" get job big-job -o jsonpath='{.metadata.uid}')" \
  -o jsonpath='{.items[0].status.conditions[?(@.type=="QuotaReserved")].message}')"
echo "  big-job still suspended, QuotaReserved False: $message"

step "restart kueue"
"$CLUSTER" restart --dir "$DIR" kueue || fail "cluster.sh restart kueue"
out="$(cluster_queue bad-queue -1 | k create -f - 2>&1)" && fail "after the restart, a bad ClusterQueue was created" "$out"
[[ "$out" == *'admission webhook "vclusterqueue.kb.io" denied the request'* ]] || fail "after the restart: $out"
echo "  Kueue back on 127.0.0.1:$PORT; its webhook refuses the bad ClusterQueue again"

step "down"
"$CLUSTER" down --dir "$DIR" || fail "cluster.sh down"
if pgrep -f "$DIR/bin/kueue" >/dev/null; then fail "a Kueue process survived down" "$(pgrep -af "$DIR/bin/kueue")"; fi
log "kueue: all checks passed in $((SECONDS - START))s"
