// Test support: a plain HTTP/1.1 GET to 127.0.0.1:port that returns the raw
// response (status line, headers, body), or "connect failed". For tests of the
// /metrics, /healthz and /readyz endpoints; never for production code.
#pragma once

#include <string>

namespace ringmaster::metrics {

std::string LoopbackHttpGet(int port, const std::string& path);

}  // namespace ringmaster::metrics
