// Test support: a plain HTTP/1.1 GET to 127.0.0.1:port that returns the raw response (status line,
// headers, body), "connect failed", or "timed out" when no complete answer came within `timeout`. For
// tests of the /metrics, /healthz and /readyz endpoints; never for production code.
#pragma once

#include <chrono>
#include <string>

namespace ringmaster::metrics {

std::string LoopbackHttpGet(int port, const std::string& path, std::chrono::seconds timeout = std::chrono::seconds(30));

// Opens a connection to 127.0.0.1:port and sends nothing: a stuck client. Returns the socket (close it
// to let go), or -1 when it cannot connect.
int OpenSilentConnection(int port);

}  // namespace ringmaster::metrics
