# Kueue (sigs.k8s.io/kueue, KUEUE_VERSION) on the local control plane: sourced by cluster.sh, which runs
# kueue_up for `cluster.sh up --kueue` once the apiserver answers. Faithfully: Kueue's own binary (built by
# `make deps`), its CRDs and its admission and conversion webhooks, served by the binary and called by the apiserver.
#
# Nothing here routes Services, so the apiserver reaches the webhooks at https://127.0.0.1:$KUEUE_WEBHOOK_PORT:
#   - the CRDs (config/components/crd/bases) are applied with the conversion webhook Kueue's kustomization enables
#     (localqueues, clusterqueues, workloads, cohorts, multikueueclusters), by url instead of by service;
#   - of config/components/webhook/manifests.yaml, kueue-{mutating,validating}-webhook-configuration keep only the
#     webhooks for kueue.x-k8s.io and batch/v1 jobs (nothing else in a shared cluster is intercepted), by url too;
#   - the serving certificate comes from here, not from Kueue's internal cert management (the cert-controller
#     rotator), which would sign one for kueue-webhook-service.kueue-system.svc only. The rotator keeps the certs of
#     its Secret (kueue-webhook-server-cert) while they verify: the CA against the name kueue-ca, the server
#     certificate against kueue-webhook-service.kueue-system.svc, both valid beyond its 90-day lookahead. So this CA
#     (RSA, PKCS#1 key: what the rotator parses) signs a certificate for that name and IP:127.0.0.1; the rotator
#     finds them valid, keeps them and injects the same CA into the webhook configurations and CRDs by name. No
#     kubelet mounts the Secret, so the files go into the webhook's certDir here (the rotator only checks they exist).
# The health probe, metrics and webhook listen on 127.0.0.1 at ports chosen free; the visibility server (a fixed
# port, and an APIService that nothing could route) is off. cluster.env records KUEUE=1 and the KUEUE_* below.

KUEUE_NAMESPACE=kueue-system
KUEUE_SECRET=kueue-webhook-server-cert
KUEUE_SERVICE=kueue-webhook-service   # no such Service: it names the certificate's DNS name and the webhook configurations
KUEUE_CONVERSION_CRDS=(localqueues clusterqueues workloads cohorts multikueueclusters)
# The ringmaster.io kind Kueue may find as the owner of a workload (integrations.externalFrameworks): Kind.version.group
# of the served version in crds/ringmaster.io_trainingjobs.yaml.
KUEUE_EXTERNAL_FRAMEWORKS=(TrainingJob.v1alpha1.ringmaster.io)

# The ports of a Kueue in DIR: what kueue_up chose, or what cluster.env recorded.
KUEUE_WEBHOOK_PORT="" KUEUE_HEALTH_PORT="" KUEUE_METRICS_PORT=""

kueue_env() {
  if ((KUEUE == 0)); then echo "KUEUE=0"; return; fi
  cat <<ENV
KUEUE=1
KUEUE_VERSION=$KUEUE_VERSION
KUEUE_NAMESPACE=$KUEUE_NAMESPACE
KUEUE_WEBHOOK_URL=https://127.0.0.1:$KUEUE_WEBHOOK_PORT
KUEUE_WEBHOOK_PORT=$KUEUE_WEBHOOK_PORT
KUEUE_HEALTH_URL=http://127.0.0.1:$KUEUE_HEALTH_PORT
KUEUE_HEALTH_PORT=$KUEUE_HEALTH_PORT
KUEUE_METRICS_PORT=$KUEUE_METRICS_PORT
KUEUE_CONFIG=$DIR/kueue/config.yaml
KUEUE_LOG=$DIR/logs/kueue.log
ENV
}

# kueue_load_env: the ports from cluster.env (status, restart).
kueue_load_env() {
  KUEUE_WEBHOOK_PORT="$(sed -n 's|^KUEUE_WEBHOOK_PORT=||p' "$DIR/cluster.env" 2>/dev/null)" || true
  KUEUE_HEALTH_PORT="$(sed -n 's|^KUEUE_HEALTH_PORT=||p' "$DIR/cluster.env" 2>/dev/null)" || true
  KUEUE_METRICS_PORT="$(sed -n 's|^KUEUE_METRICS_PORT=||p' "$DIR/cluster.env" 2>/dev/null)" || true
}

kctl() { "$KUBECTL" --kubeconfig "$DIR/kubeconfig" "$@"; }

# kueue_pki DIR: the CA (kueue-ca, 10 years) and the webhook's serving certificate (3 years), both RSA with PKCS#1
# keys, as the rotator makes them; ca.crt ca.key tls.crt tls.key in DIR.
kueue_pki() {
  local dir="$1" dns="$KUEUE_SERVICE.$KUEUE_NAMESPACE.svc"
  mkdir -p "$dir"
  _openssl genrsa -traditional -out "$dir/ca.key" 2048
  _openssl req -x509 -new -key "$dir/ca.key" -days 3650 -sha256 -subj "/O=kueue/CN=kueue-ca" \
    -addext "subjectAltName=DNS:kueue-ca" -addext "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign" \
    -out "$dir/ca.crt"
  _openssl genrsa -traditional -out "$dir/tls.key" 2048
  _openssl req -new -key "$dir/tls.key" -subj "/CN=$dns" -out "$dir/tls.csr"
  cat >"$dir/tls.ext" <<EXT
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:$dns,IP:127.0.0.1
EXT
  _openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 1095 -sha256 -extfile "$dir/tls.ext" -out "$dir/tls.crt"
  rm -f "$dir/tls.csr" "$dir/tls.ext" "$dir/ca.srl"
  chmod 600 "$dir"/*.key
  # What the rotator checks before it keeps them (pkg/rotator ValidCert): the names, and its 90-day lookahead.
  openssl verify -CAfile "$dir/ca.crt" -verify_hostname kueue-ca "$dir/ca.crt" >/dev/null 2>&1 \
    && openssl verify -CAfile "$dir/ca.crt" -verify_hostname "$dns" -purpose sslserver "$dir/tls.crt" >/dev/null 2>&1 \
    && openssl verify -CAfile "$dir/ca.crt" -verify_ip 127.0.0.1 "$dir/tls.crt" >/dev/null 2>&1 \
    && openssl x509 -checkend $((91 * 86400)) -noout -in "$dir/tls.crt" >/dev/null \
    || fail_up "the Kueue webhook certificates in $dir do not verify" "check openssl (make deps installs it)"
}

# kueue_manifests TOOL_DIR OUT_JSON: Kueue's CRDs and webhook configurations as one JSON List, rewritten as the header
# says for the webhook at 127.0.0.1:$KUEUE_WEBHOOK_PORT with the CA in $DIR/kueue/certs; OUT_JSON.crds lists the CRDs. kubectl turns the YAML into
# JSON (client side); python3's json module does the rest.
kueue_manifests() {
  local tool="$1" out="$2" f files=()
  for f in "$tool"/crds/*.yaml "$tool/manifests.yaml"; do files+=(-f "$f"); done
  kctl create --dry-run=client --validate=false -o json "${files[@]}" >"$out.upstream" \
    || fail_up "kubectl could not read Kueue's manifests in $tool" "rebuild them: rm -rf $tool; make deps"
  python3 - "$out.upstream" "$KUEUE_WEBHOOK_PORT" "$(base64 -w0 <"$DIR/kueue/certs/ca.crt")" "$KUEUE_SERVICE" \
    "${KUEUE_CONVERSION_CRDS[*]}" >"$out" <<'PY' || fail_up "could not rewrite Kueue's manifests" "see the message above"
import json, sys, time

upstream, port, ca_bundle, service, conversion = sys.argv[1:5] + [set(sys.argv[5].split())]
base = service[: -len("-webhook-service")]  # the rotator's names: <base>-{mutating,validating}-webhook-configuration
with open(upstream) as f:
    text = f.read()
items, pos, decoder = [], 0, json.JSONDecoder()  # kubectl prints one JSON object after another (or a List)
while text[pos:].strip():
    doc, end = decoder.raw_decode(text, pos + len(text[pos:]) - len(text[pos:].lstrip()))
    items += doc["items"] if doc.get("kind") == "List" else [doc]
    pos = end
url = lambda path: f"https://127.0.0.1:{port}{path}"


def ours(hook):  # only Kueue's own API and batch/v1 Jobs: nothing else in a shared cluster is intercepted
    for rule in hook.get("rules", []):
        groups, resources = set(rule.get("apiGroups", [])), set(rule.get("resources", []))
        if groups == {"kueue.x-k8s.io"}:
            continue
        if groups == {"batch"} and rule.get("apiVersions") == ["v1"] and resources <= {"jobs", "jobs/status"}:
            continue
        return False
    return bool(hook.get("rules"))


out, crds, kept = [], 0, {}
for item in items:
    kind, name = item["kind"], item["metadata"]["name"]
    if kind == "CustomResourceDefinition":
        crds += 1
        if name.split(".", 1)[0] in conversion and name.endswith(".kueue.x-k8s.io"):
            item["spec"]["conversion"] = {
                "strategy": "Webhook",
                "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": {"url": url("/convert"), "caBundle": ca_bundle},
                },
            }
            conversion.discard(name.split(".", 1)[0])
    elif kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        kind_word = "mutating" if kind.startswith("Mutating") else "validating"
        item["metadata"] = {"name": f"{base}-{kind_word}-webhook-configuration"}
        hooks = [h for h in item.get("webhooks", []) if ours(h)]
        for h in hooks:
            path = h["clientConfig"]["service"]["path"]
            h["clientConfig"] = {"url": url(path), "caBundle": ca_bundle}
        item["webhooks"] = hooks
        kept[kind_word] = sorted(h["name"] for h in hooks)
    else:
        sys.exit(f"unexpected {kind} {name} in Kueue's manifests")
    out.append(item)
if conversion or crds < 10 or not kept.get("mutating") or not kept.get("validating"):
    sys.exit(f"Kueue's manifests lack what kueue.sh expects: CRDs {crds}, conversion left {conversion}, webhooks {kept}")
json.dump({"apiVersion": "v1", "kind": "List", "items": out}, sys.stdout)
with open(upstream[: -len(".upstream")] + ".crds", "w") as f:  # for kubectl wait
    f.writelines(f"crd/{i['metadata']['name']}\n" for i in out if i["kind"] == "CustomResourceDefinition")
hooks = ", ".join(kept["mutating"] + kept["validating"])
print(f"[{time.strftime('%H:%M:%S')}]   {crds} CRDs (conversion by webhook: {sys.argv[5]}); webhooks: {hooks}", file=sys.stderr)
PY
  rm -f "$out.upstream"
}

kueue_config() {
  local frameworks
  frameworks="$(printf '"%s", ' "${KUEUE_EXTERNAL_FRAMEWORKS[@]}")"
  cat >"$DIR/kueue/config.yaml" <<CFG
# Written by tests/harness/cluster/kueue.sh (cluster.sh up --kueue).
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: $KUEUE_NAMESPACE
health:
  healthProbeBindAddress: 127.0.0.1:$KUEUE_HEALTH_PORT
metrics:
  bindAddress: 127.0.0.1:$KUEUE_METRICS_PORT
webhook:
  host: 127.0.0.1
  port: $KUEUE_WEBHOOK_PORT
  certDir: $DIR/kueue/certs
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: true
  webhookServiceName: $KUEUE_SERVICE
  webhookSecretName: $KUEUE_SECRET
clientConnection:
  qps: 50
  burst: 100
manageJobsWithoutQueueName: false
integrations:
  frameworks: ["batch/job"]
  externalFrameworks: [${frameworks%, }]
featureGates:
  VisibilityOnDemand: false   # its API server would listen on a fixed port behind an APIService nothing routes
CFG
}

# A dry-run create of a ResourceFlavor: the apiserver calls Kueue's mutating and validating webhooks for it, so this
# passes only when the whole apiserver -> webhook path works.
KUEUE_PROBE_FLAVOR='{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "ringmaster-kueue-probe"}}'

kueue_ready() {
  curl -sf --max-time 5 "http://127.0.0.1:$KUEUE_HEALTH_PORT/readyz" >/dev/null \
    && kctl create --dry-run=server -o name -f - <<<"$KUEUE_PROBE_FLAVOR" >/dev/null 2>&1
}

# kueue_up: runs Kueue against the control plane in DIR (after start_components). Ports are chosen free; if one is
# taken before Kueue binds it, new ones are chosen (three attempts). Fails the whole `up` otherwise.
kueue_up() {
  local tool; tool="$(tool_dir kueue)"
  tool_bin kueue kueue >/dev/null
  need_cmd python3 "apt install python3 (make deps installs python3.11)"
  local start_time=$SECONDS attempt rc crds=()
  ln -sf "$tool/kueue" "$DIR/bin/kueue"
  rm -rf "$DIR/kueue"
  mkdir -p "$DIR/kueue/certs"
  log "starting Kueue $KUEUE_VERSION"
  kueue_pki "$DIR/kueue/certs"
  kctl create namespace "$KUEUE_NAMESPACE" -o name >/dev/null 2>&1 || kctl get namespace "$KUEUE_NAMESPACE" >/dev/null \
    || fail_up "could not create the namespace $KUEUE_NAMESPACE" "see the kubectl message above"
  kctl -n "$KUEUE_NAMESPACE" create secret generic "$KUEUE_SECRET" --dry-run=client -o json \
      --from-file="$DIR/kueue/certs/ca.crt" --from-file="$DIR/kueue/certs/ca.key" \
      --from-file="$DIR/kueue/certs/tls.crt" --from-file="$DIR/kueue/certs/tls.key" \
    | kctl apply --server-side --field-manager=ringmaster-cluster -f - >/dev/null \
    || fail_up "could not create the Secret $KUEUE_NAMESPACE/$KUEUE_SECRET" "see the kubectl message above"
  for attempt in 1 2 3; do
    read -r KUEUE_WEBHOOK_PORT KUEUE_HEALTH_PORT KUEUE_METRICS_PORT <<<"$(pick_ports 3)"
    kueue_manifests "$tool" "$DIR/kueue/manifests.json"
    # Server-side: the workloads CRD alone is 1.4 MB, past what client-side apply can annotate.
    kctl apply --server-side --force-conflicts --field-manager=ringmaster-cluster -f "$DIR/kueue/manifests.json" >/dev/null \
      || fail_up "could not apply Kueue's CRDs and webhook configurations" "see the kubectl message above"
    mapfile -t crds <"$DIR/kueue/manifests.json.crds"
    kctl wait --for=condition=Established --timeout="${STARTUP_TIMEOUT}s" "${crds[@]}" >/dev/null \
      || fail_up "Kueue's CRDs were not established" "see $DIR/logs/kube-apiserver.log"
    kueue_config
    if [[ -f "$DIR/logs/kueue.log" ]]; then mv "$DIR/logs/kueue.log" "$DIR/logs/kueue.attempt-$((attempt - 1)).log"; fi
    start kueue "$DIR/bin/kueue" --config="$DIR/kueue/config.yaml" --kubeconfig="$DIR/kubeconfig" --zap-log-level=info
    rc=0
    wait_healthy kueue kueue_ready || rc=$?
    ((rc == 0)) && break
    stop_named kueue
    ((attempt < 3)) || fail_up "three attempts of Kueue lost their ports to other processes" "free some ports and retry"
    log "  retrying Kueue with new ports (attempt $((attempt + 1)) of 3)"
  done
  log "  Kueue ready in $((SECONDS - start_time))s (webhook https://127.0.0.1:$KUEUE_WEBHOOK_PORT, log $DIR/logs/kueue.log)"
}

