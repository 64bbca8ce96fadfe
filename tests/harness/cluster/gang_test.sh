#!/usr/bin/env bash
# Gang scheduling on the local cluster (`cluster.sh up --gang`), end to end (ctest: integration.Gang.CoschedulingGatesPodGroups):
#
#   gang_test.sh CLUSTER_DIR
#
# Starts a cluster with the scheduler-plugins scheduler in CLUSTER_DIR (one KWOK node with 4 nvidia.com/gpu; no root
# needed), and checks that its Coscheduling plugin gates binding by PodGroup (pods with schedulerName
# scheduler-plugins-scheduler and the label scheduling.x-k8s.io/pod-group):
#   - cluster.env records GANG=1 and the scheduler's port; `status` reports it ready;
#   - A: a PodGroup of minMember 3 and 3 pods of 1 GPU each: all 3 bound by that scheduler (its Scheduled events), the
#     first ones after waiting at Permit for the rest (its log), and Running on the KWOK node;
#   - B: a PodGroup of minMember 3 (scheduleTimeoutSeconds 5) whose 3 pods of 1 GPU each cannot all fit (1 GPU left);
#   - C: a PodGroup of minMember 2 with only 1 pod (no GPU: it fits anywhere);
#   - D: a PodGroup of minMember 3 (scheduleTimeoutSeconds 5) with 3 pods, one of them for another scheduler (so
#     never placed by this one, but counted as a member): the other two fit, reach Permit and wait there;
#     for longer than the timeout (until D's pods have been released by it, at least twice 5 s), no pod of B, C or D
#     is bound (spec.nodeName stays empty) and all stay Pending; D's are refused by the Permit timeout, C's at
#     PreFilter (too few pods);
#   - the gates lift: A's pods deleted, B's 3 pods are bound together; a second pod for C, both bound; D's odd pod
#     replaced by one for this scheduler, all 3 bound;
#   - `cluster.sh restart scheduler-plugins` brings it back on its port; `cluster.sh down` leaves no process.
# Prints each step; exit 1 names the step that failed. About 45 s.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../lib.sh"

[[ $# == 1 ]] || die "usage: $0 CLUSTER_DIR" ""
mkdir -p "$1"
DIR="$(cd "$1" && pwd)"
CLUSTER="$HERE/cluster.sh"
NS=gang-test
TIMEOUT=5            # the PodGroups' scheduleTimeoutSeconds
START=$SECONDS
LOG="$DIR/logs/scheduler-plugins.log"

step() { log "gang: $*"; }
fail() {
  log "FAILED: $1"
  [[ -n "${2:-}" ]] && printf '%s\n' "$2" >&2
  if [[ -x "$DIR/bin/kubectl" ]]; then
    k -n "$NS" get pods -o wide >&2 2>/dev/null || true
  fi
  if [[ -f "$LOG" ]]; then
    log "last lines of $LOG:"
    tail -n 15 "$LOG" >&2
  fi
  "$CLUSTER" down --dir "$DIR" >/dev/null 2>&1 || true
  exit 1
}
k() { "$DIR/bin/kubectl" --kubeconfig "$DIR/kubeconfig" "$@"; }

step "cluster up --gang in $DIR"
t0=$SECONDS
"$CLUSTER" up --dir "$DIR" --nodes 1 --gpus-per-node 4 --fresh --gang || fail "cluster up --gang"
echo "  cluster with the gang scheduler up in $((SECONDS - t0))s"

step "cluster.env and status"
grep -qx 'GANG=1' "$DIR/cluster.env" || fail "cluster.env lacks GANG=1" "$(cat "$DIR/cluster.env")"
PORT="$(sed -n 's/^GANG_SCHEDULER_PORT=//p' "$DIR/cluster.env")"
SCHEDULER="$(sed -n 's/^GANG_SCHEDULER_NAME=//p' "$DIR/cluster.env")"
LABEL="$(sed -n 's/^GANG_POD_GROUP_LABEL=//p' "$DIR/cluster.env")"
[[ "$PORT" =~ ^[0-9]+$ ]] || fail "cluster.env lacks GANG_SCHEDULER_PORT" "$(cat "$DIR/cluster.env")"
[[ "$SCHEDULER" == scheduler-plugins-scheduler && "$LABEL" == scheduling.x-k8s.io/pod-group ]] \
  || fail "cluster.env names scheduler '$SCHEDULER', label '$LABEL'" "$(cat "$DIR/cluster.env")"
status="$("$CLUSTER" status --dir "$DIR")" || fail "cluster.sh status"
grep -q '^scheduler-plugins  *running' <<<"$status" && grep -q '^scheduler-plugins ready' <<<"$status" \
  || fail "status does not report the gang scheduler ready" "$status"
curl -skf --max-time 5 "https://127.0.0.1:$PORT/healthz" >/dev/null || fail "no /healthz on 127.0.0.1:$PORT"
echo "  GANG=1, $SCHEDULER on 127.0.0.1:$PORT; status: running and ready"

k create namespace "$NS" >/dev/null || fail "create namespace $NS"

# pod_group NAME MIN_MEMBER: a PodGroup with scheduleTimeoutSeconds $TIMEOUT.
pod_group() {
  printf '%s\n' 'apiVersion: scheduling.x-k8s.io/v1alpha1' 'kind: PodGroup' "metadata: {name: $1, namespace: $NS}" \
    "spec: {minMember: $2, scheduleTimeoutSeconds: $TIMEOUT}" '---'
}
# pod NAME GROUP GPUS [SCHEDULER]: a pod of GROUP asking for GPUS nvidia.com/gpu (none when 0), for the gang scheduler
# unless SCHEDULER names another.
pod() {
  local limits=""
  (($3 > 0)) && limits="limits: {nvidia.com/gpu: \"$3\"}"
  cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: $NS
  labels: {$LABEL: $2}
spec:
  schedulerName: ${4:-$SCHEDULER}
  terminationGracePeriodSeconds: 0
  containers:
  - name: train
    image: ringmaster.local/busybox:1.35
    command: [sleep, "3600"]
    resources:
      requests: {cpu: 100m, memory: 64Mi}
      $limits
---
YAML
}
# node_of POD: its spec.nodeName (empty while unbound).
node_of() { k -n "$NS" get pod "$1" -o jsonpath='{.spec.nodeName}'; }
# bound PODS...: every one of PODS is bound.
bound() {
  local p
  for p in "$@"; do [[ -n "$(node_of "$p")" ]] || return 1; done
}
# unbound_pending PODS...: none of PODS is bound, and each is Pending; prints the first that is not.
unbound_pending() {
  local p out
  for p in "$@"; do
    out="$(k -n "$NS" get pod "$p" -o jsonpath='{.spec.nodeName}/{.status.phase}')"
    [[ "$out" == /Pending ]] || { echo "$p: nodeName/phase '$out'"; return 1; }
  done
}
# scheduled_message POD: the message of its PodScheduled condition.
scheduled_message() { k -n "$NS" get pod "$1" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}'; }

step "A: PodGroup group-a (minMember 3), 3 pods of 1 GPU on a node with 4: all 3 bound"
{ pod_group group-a 3; for i in 0 1 2; do pod "a-$i" group-a 1; done; } | k apply -f - >/dev/null || fail "create group A"
wait_until 30 "group A's 3 pods bound" bound a-0 a-1 a-2
a_running() {
  [[ "$(k -n "$NS" get pods -l "$LABEL=group-a" -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -cx Running)" == 3 ]]
}
wait_until 30 "group A's pods Running on the KWOK node" a_running
by="$(k -n "$NS" get events --field-selector reason=Scheduled \
  -o jsonpath='{range .items[*]}{.involvedObject.name}={.reportingComponent}{"\n"}{end}' | sort)"
[[ "$(grep -c "^a-[012]=$SCHEDULER\$" <<<"$by")" == 3 ]] || fail "group A was not bound by $SCHEDULER" "$by"
waited="$(grep -c 'Pod is waiting to be scheduled to node.*pod="gang-test/a-' "$LOG" || true)"
((waited >= 1)) || fail "the scheduler's log shows no pod of group A waiting at Permit" "$(grep -i permit "$LOG" | tail -5)"
echo "  a-0..a-2 bound to $(node_of a-0) by $SCHEDULER and Running; $waited of them waited at Permit first"

step "B: group-b (minMember 3, 1 GPU left for 3 pods), C: group-c (minMember 2, 1 pod), D: group-d (minMember 3, one pod for another scheduler)"
t_gated=$SECONDS
{ pod_group group-b 3; for i in 0 1 2; do pod "b-$i" group-b 1; done
  pod_group group-c 2; pod c-0 group-c 0
  # d-2 first: the scheduler hears only of its own pods' arrivals, so d-2 arriving last would not wake d-0 and d-1,
  # refused at PreFilter while they were 1 and 2 of 3 (they would sit until the queue's 5-minute flush).
  pod_group group-d 3; pod d-2 group-d 0 no-such-scheduler; pod d-0 group-d 0; pod d-1 group-d 0
} | k apply -f - >/dev/null || fail "create groups B, C and D"
GATED=(b-0 b-1 b-2 c-0 d-0 d-1)
# Until D's pods have been refused by the Permit timeout and at least twice the timeout has passed, every 0.5 s:
# none bound, all Pending.
d_timed_out() { [[ "$(scheduled_message d-0)$(scheduled_message d-1)" == *timeout* ]]; }
until ((SECONDS - t_gated >= 2 * TIMEOUT)) && d_timed_out; do
  why="$(unbound_pending "${GATED[@]}")" || fail "a gated pod was bound after $((SECONDS - t_gated))s" "$why"
  ((SECONDS - t_gated < 40)) || fail "D's pods were not refused by the Permit timeout within 40s" \
    "d-0: $(scheduled_message d-0)"$'\n'"d-1: $(scheduled_message d-1)"
  sleep 0.5
done
why="$(unbound_pending "${GATED[@]}" d-2)" || fail "a gated pod was bound" "$why"
waited_d="$(grep -c 'Pod is waiting to be scheduled to node.*pod="gang-test/d-' "$LOG" || true)"
((waited_d >= 2)) || fail "the log shows no pods of group D waiting at Permit" "$(grep 'gang-test/d-' "$LOG" | tail -5)"
[[ "$(scheduled_message c-0)" == *"cannot find enough sibling pods"* ]] || fail "c-0 was not refused at PreFilter" \
  "$(scheduled_message c-0)"
echo "  for $((SECONDS - t_gated))s none of ${GATED[*]} bound, all Pending:"
for p in b-0 c-0 d-0; do echo "    $p: $(scheduled_message "$p")"; done
echo "    ($waited_d Permit waits of D's pods in the log)"

step "the gates lift: A deleted -> B bound; a second pod for C -> C bound; D's odd pod for this scheduler -> D bound"
t1=$SECONDS
k -n "$NS" delete pod a-0 a-1 a-2 d-2 --wait=true --timeout=30s >/dev/null || fail "delete A's pods and d-2"
{ pod c-1 group-c 0; pod d-2 group-d 0; } | k apply -f - >/dev/null || fail "create c-1 and the new d-2"
wait_until 40 "group B's 3 pods bound once A's GPUs are free" bound b-0 b-1 b-2
wait_until 40 "group C's 2 pods bound" bound c-0 c-1
wait_until 40 "group D's 3 pods bound" bound d-0 d-1 d-2
echo "  B (3 GPUs on $(node_of b-0)), C and D all bound $((SECONDS - t1))s after"

step "restart scheduler-plugins"
"$CLUSTER" restart --dir "$DIR" scheduler-plugins || fail "cluster.sh restart scheduler-plugins"
curl -skf --max-time 5 "https://127.0.0.1:$PORT/healthz" >/dev/null || fail "no /healthz on 127.0.0.1:$PORT after the restart"
echo "  back on 127.0.0.1:$PORT"

step "down"
"$CLUSTER" down --dir "$DIR" || fail "cluster.sh down"
if pgrep -f "$DIR/bin/scheduler-plugins" >/dev/null; then
  fail "a scheduler-plugins process survived down" "$(pgrep -af "$DIR/bin/scheduler-plugins")"
fi
log "gang: all checks passed in $((SECONDS - START))s"
