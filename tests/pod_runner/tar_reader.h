// Reading one member of an uncompressed tar archive (an OCI archive's index.json, manifest and config)
// without unpacking it: headers are read and members skipped with lseek, so a 5 GB image archive costs a
// few reads. Understands ustar (name + prefix), GNU long names ('L') and pax path records ('x').
// Thread-safe (no shared state).
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"

namespace ringmaster::testing {

// The content of the regular file `member` of the tar at `archive`; a leading "./" is ignored on both
// sides. NotFound when no such member exists or the archive cannot be opened; DataLoss for a truncated
// or malformed archive; ResourceExhausted when the member is larger than `max_bytes`.
StatusOr<std::string> ReadTarMember(const std::string& archive, const std::string& member, size_t max_bytes = 64 << 20);

}  // namespace ringmaster::testing
