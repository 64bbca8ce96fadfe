# Gang scheduling on the local control plane: the Coscheduling plugin of kubernetes-sigs/scheduler-plugins
# (SCHEDULER_PLUGINS_VERSION, built by `make deps` from hack/gomod/scheduler-plugins), run as a second scheduler
# beside the default kube-scheduler. Sourced by cluster.sh, which runs coscheduling_up for `cluster.sh up --gang`
# once the control plane (and Kueue, when asked for too) is up.
#
# What it runs, faithfully: upstream's scheduler binary (cmd/scheduler: kube-scheduler with scheduler-plugins'
# plugins registered) and upstream's PodGroup CRD (podgroups.scheduling.x-k8s.io, config/crd/bases of the same
# module). Its one profile, schedulerName scheduler-plugins-scheduler (the name of upstream's as-a-second-scheduler
# chart), enables Coscheduling as upstream's manifests/coscheduling/scheduler-config.yaml does for this release
# (multiPoint: QueueSort, PreFilter, PostFilter, Permit and Reserve/Unreserve, the points the plugin implements; it
# has no PreBind) and keeps the default plugins otherwise; the Coscheduling queue sort replaces PrioritySort. Pods
# name that scheduler and carry the label scheduling.x-k8s.io/pod-group=<PodGroup name>; a PodGroup
# (scheduling.x-k8s.io/v1alpha1) says spec.minMember, and optionally spec.scheduleTimeoutSeconds (how long pods of
# the group wait at Permit for the rest; else the plugin's permitWaitingTimeSeconds below) and spec.minResources.
# Pods of other schedulers are never touched.
#
# Upstream's defaults otherwise (podGroupBackoffSeconds 0), and they cost CPU while a group cannot fit: its pods cycle
# through Permit (one waits, holding the room a sibling then fails to get, which rejects it, and again), about a
# hundred times a second with KWOK, ~0.25 of a core in the scheduler and ~0.7 in the apiserver (status and event
# writes). A PodGroup backoff stops that but strands the group: refused at PreFilter, its pods wait for a pod or
# PodGroup to be added or updated, or for the queue's 5-minute flush, not for room to free up (measured: still
# unbound 60 s after the room was there, with or without the controller). Delete a group that will not fit.
#
# Not run: scheduler-plugins' controller (cmd/controller). It only writes PodGroup status (phase, scheduled,
# running...); the plugin reads a PodGroup's spec and counts the group's pods itself (pkg/coscheduling/core), so it
# gates without it. A PodGroup's status therefore stays empty here.
#
# The scheduler uses the admin kubeconfig: it reads podgroups.scheduling.x-k8s.io, which the default scheduler's
# identity (system:kube-scheduler) may not, and the admin identity needs no RBAC of ours. It serves /healthz and
# /readyz on 127.0.0.1 at a port chosen free; no leader election. cluster.env records GANG=1 and the GANG_* below;
# its log is logs/scheduler-plugins.log, its configuration gang/scheduler-config.yaml.

GANG_SCHEDULER_NAME=scheduler-plugins-scheduler
GANG_COMPONENT=scheduler-plugins          # its pid file, log and command line (pids/, logs/, cmdlines/), and its binary in bin/
GANG_POD_GROUP_LABEL=scheduling.x-k8s.io/pod-group
GANG_POD_GROUP_API=scheduling.x-k8s.io/v1alpha1
GANG_PERMIT_WAITING_SECONDS=10            # how long a group's pods wait at Permit when its PodGroup has no scheduleTimeoutSeconds
                                          # (upstream's example; the plugin's own default is 60)

# The secure port of the scheduler in DIR: what coscheduling_up chose, or what cluster.env recorded.
GANG_PORT=""

coscheduling_env() {
  if ((GANG == 0)); then echo "GANG=0"; return; fi
  cat <<ENV
GANG=1
SCHEDULER_PLUGINS_VERSION=$SCHEDULER_PLUGINS_VERSION
GANG_SCHEDULER_NAME=$GANG_SCHEDULER_NAME
GANG_POD_GROUP_LABEL=$GANG_POD_GROUP_LABEL
GANG_POD_GROUP_API=$GANG_POD_GROUP_API
GANG_SCHEDULER_PORT=$GANG_PORT
GANG_SCHEDULER_URL=https://127.0.0.1:$GANG_PORT
GANG_SCHEDULER_CONFIG=$DIR/gang/scheduler-config.yaml
GANG_SCHEDULER_LOG=$DIR/logs/$GANG_COMPONENT.log
ENV
}

# coscheduling_load_env: the port from cluster.env (status, restart, reuse).
coscheduling_load_env() {
  GANG_PORT="$(sed -n 's|^GANG_SCHEDULER_PORT=||p' "$DIR/cluster.env" 2>/dev/null)" || true
}

# coscheduling_recorded: the cluster in DIR was started with --gang (cluster.env says so, or its scheduler has a pid file).
coscheduling_recorded() { grep -qx 'GANG=1' "$DIR/cluster.env" 2>/dev/null || [[ -f "$DIR/pids/$GANG_COMPONENT.pid" ]]; }

# Ready: /readyz (served without authentication, like /healthz) passes only once the scheduler's informers have
# synced; the plugin's own PodGroup cache syncs before the scheduler serves at all (coscheduling.New).
coscheduling_ready() {
  [[ -n "$GANG_PORT" ]] && curl -skf --max-time 5 "https://127.0.0.1:$GANG_PORT/healthz" >/dev/null \
    && curl -skf --max-time 5 "https://127.0.0.1:$GANG_PORT/readyz" >/dev/null
}

coscheduling_config() {
  cat >"$DIR/gang/scheduler-config.yaml" <<CFG
# Written by tests/harness/cluster/coscheduling.sh (cluster.sh up --gang). With --config, the scheduler ignores
# --kubeconfig and --leader-elect: both are here.
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: $DIR/kubeconfig
  qps: 200
  burst: 400
profiles:
- schedulerName: $GANG_SCHEDULER_NAME
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: $GANG_PERMIT_WAITING_SECONDS
CFG
}

# coscheduling_up: the PodGroup CRD, then the scheduler against the control plane in DIR (after start_components
# and kueue_up). The port is chosen free; if it is taken before the scheduler binds it, a new one is chosen (three
# attempts). Fails the whole `up` otherwise.
coscheduling_up() {
  local tool start_time=$SECONDS attempt rc
  tool="$(tool_dir scheduler-plugins)"
  tool_bin scheduler-plugins "$GANG_COMPONENT" >/dev/null
  [[ -f "$tool/crds/scheduling.x-k8s.io_podgroups.yaml" ]] \
    || fail_up "no PodGroup CRD in $tool/crds" "rebuild it: rm -rf $tool; make deps"
  ln -sf "$tool/$GANG_COMPONENT" "$DIR/bin/$GANG_COMPONENT"
  rm -rf "$DIR/gang"
  mkdir -p "$DIR/gang"
  log "starting the scheduler-plugins scheduler $SCHEDULER_PLUGINS_VERSION ($GANG_SCHEDULER_NAME, Coscheduling)"
  "$KUBECTL" --kubeconfig "$DIR/kubeconfig" apply --server-side --force-conflicts --field-manager=ringmaster-cluster \
      -f "$tool/crds/scheduling.x-k8s.io_podgroups.yaml" >/dev/null \
    || fail_up "could not apply the PodGroup CRD" "see the kubectl message above"
  "$KUBECTL" --kubeconfig "$DIR/kubeconfig" wait --for=condition=Established --timeout="${STARTUP_TIMEOUT}s" crd/podgroups.scheduling.x-k8s.io >/dev/null \
    || fail_up "the PodGroup CRD was not established" "see $DIR/logs/kube-apiserver.log"
  coscheduling_config
  for attempt in 1 2 3; do
    read -r GANG_PORT <<<"$(pick_ports 1)"
    if [[ -f "$DIR/logs/$GANG_COMPONENT.log" ]]; then
      mv "$DIR/logs/$GANG_COMPONENT.log" "$DIR/logs/$GANG_COMPONENT.attempt-$((attempt - 1)).log"
    fi
    start "$GANG_COMPONENT" "$DIR/bin/$GANG_COMPONENT" --config="$DIR/gang/scheduler-config.yaml" \
      --authentication-kubeconfig="$DIR/kubeconfig" --authorization-kubeconfig="$DIR/kubeconfig" \
      --bind-address=127.0.0.1 --secure-port="$GANG_PORT" --profiling=false
    rc=0
    wait_healthy "$GANG_COMPONENT" coscheduling_ready || rc=$?
    ((rc == 0)) && break
    stop_named "$GANG_COMPONENT"
    ((attempt < 3)) || fail_up "three attempts of the scheduler-plugins scheduler lost their port to other processes" \
      "free some ports and retry"
    log "  retrying the scheduler-plugins scheduler with a new port (attempt $((attempt + 1)) of 3)"
  done
  log "  $GANG_SCHEDULER_NAME ready in $((SECONDS - start_time))s (https://127.0.0.1:$GANG_PORT, log $DIR/logs/$GANG_COMPONENT.log)"
}

