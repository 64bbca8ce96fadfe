"""TensorFlow's libtensorflow_framework.so.2 exports BoringSSL under OpenSSL's names. Imported before the native
module, it used to take cpprestsdk's TLS calls (SSL_CTX_new, SSL_connect, ...): a Keras worker in a pod, whose
membership comes from the Kubernetes API over HTTPS, crashed (SIGSEGV) at its first request. ringmaster loads
_native with RTLD_DEEPBIND (ringmaster/__init__.py); this checks, with the dynamic linker's own trace, that
every TLS symbol cpprestsdk and the module use binds to the system OpenSSL when TensorFlow came first."""

import os
import re
import subprocess
import sys

TLS = re.compile(r"symbol `((SSL|BIO|X509|EVP|ERR|TLS|CRYPTO|OPENSSL)_[A-Za-z0-9_]*)'")
BINDING = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]")


def test_tls_calls_of_the_native_module_bind_to_openssl_after_tensorflow(tmp_path):
    trace = tmp_path / "bindings"
    env = dict(os.environ, LD_DEBUG="bindings", LD_DEBUG_OUTPUT=str(trace), TF_CPP_MIN_LOG_LEVEL="3")
    subprocess.run(
        [sys.executable, "-c", "import tensorflow, ringmaster._native"], env=env, check=True, capture_output=True
    )
    ours = {}  # symbol -> the library it bound to, for calls made by cpprestsdk or the module
    for path in tmp_path.glob("bindings.*"):
        for line in path.read_text(errors="replace").splitlines():
            b, s = BINDING.search(line), TLS.search(line)
            if b and s and ("libcpprest" in b.group(1) or "_native" in b.group(1)):
                ours[s.group(1)] = b.group(2)
    assert "SSL_connect" in ours and "SSL_CTX_new" in ours, f"the trace shows no TLS binding at all: {ours}"
    wrong = {sym: lib for sym, lib in ours.items() if "tensorflow" in lib}
    assert not wrong, f"TLS calls bound to TensorFlow's BoringSSL instead of OpenSSL: {wrong}"
    assert all("libssl" in lib or "libcrypto" in lib for lib in ours.values()), ours
