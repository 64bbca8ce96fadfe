# Certificates and keys for the local control plane (sourced by cluster.sh). Plain openssl, no CSR API.
# make_pki DIR: a CA; the apiserver's serving certificate; client certificates for the admin
# (O=system:masters), controller-manager, scheduler, KWOK and the apiserver's calls to kubelets; the
# service-account signing key pair.

_openssl() { openssl "$@" >/dev/null 2>&1 || die "openssl $1 failed while creating the cluster certificates" "check that openssl works (make deps installs it)"; }

# _client_cert DIR NAME CN [O]
_client_cert() {
  local dir="$1" name="$2" cn="$3" org="${4:-}" subj="/CN=$3"
  [[ -n "$org" ]] && subj="/O=$org/CN=$cn"
  _openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$dir/$name.key" \
    -subj "$subj" -out "$dir/$name.csr"
  printf 'keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >"$dir/$name.ext"
  _openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 365 -sha256 -extfile "$dir/$name.ext" -out "$dir/$name.crt"
  rm -f "$dir/$name.csr" "$dir/$name.ext"
}

make_pki() {
  local dir="$1"
  mkdir -p "$dir"
  _openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 365 \
    -subj "/CN=ringmaster-local-ca" -keyout "$dir/ca.key" -out "$dir/ca.crt"
  _openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$dir/apiserver.key" \
    -subj "/CN=kube-apiserver" -out "$dir/apiserver.csr"
  cat >"$dir/apiserver.ext" <<EXT
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
EXT
  _openssl x509 -req -in "$dir/apiserver.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 365 -sha256 -extfile "$dir/apiserver.ext" -out "$dir/apiserver.crt"
  rm -f "$dir/apiserver.csr" "$dir/apiserver.ext"
  _client_cert "$dir" admin ringmaster-admin system:masters
  _client_cert "$dir" controller-manager system:kube-controller-manager
  _client_cert "$dir" scheduler system:kube-scheduler
  _client_cert "$dir" kwok kwok-controller system:masters
  _client_cert "$dir" apiserver-kubelet-client kube-apiserver-kubelet-client system:masters  # logs, exec on real nodes
  _openssl genrsa -out "$dir/sa.key" 2048
  _openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub"
  chmod 600 "$dir"/*.key
}

# write_kubeconfig FILE SERVER CA CERT KEY: a kubeconfig with embedded credentials.
write_kubeconfig() {
  local file="$1" server="$2" ca="$3" cert="$4" key="$5"
  cat >"$file" <<KCFG
apiVersion: v1
kind: Config
clusters:
- name: ringmaster-local
  cluster:
    server: $server
    certificate-authority-data: $(base64 -w0 <"$ca")
users:
- name: $(basename "$cert" .crt)
  user:
    client-certificate-data: $(base64 -w0 <"$cert")
    client-key-data: $(base64 -w0 <"$key")
contexts:
- name: ringmaster-local
  context:
    cluster: ringmaster-local
    user: $(basename "$cert" .crt)
    namespace: default
current-context: ringmaster-local
KCFG
  chmod 600 "$file"
}
