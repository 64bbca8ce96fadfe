// Structured logs for the operator binary: one line per message, as text or JSON, on stderr.
#pragma once

#include "base/log.h"
#include "operator/cmd/options.h"

namespace ringmaster::operator_cmd {

// text: "2026-11-21T19:05:51.123Z INFO  message"; json: {"ts":...,"level":"info","msg":...}.
// The returned function is thread-safe (one write(2) per line).
LogSink MakeLogger(LogFormat format);

}  // namespace ringmaster::operator_cmd
