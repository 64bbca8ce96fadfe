#include "operator/controller/job_secret.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace ringmaster::controller {

StatusOr<std::string> NewJobSecret() {
  unsigned char bytes[kJobSecretBytes];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return InternalError(std::string("getrandom: ") + std::strerror(errno));
    }
    got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * sizeof(bytes));
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xf]);
  }
  return out;
}

}  // namespace ringmaster::controller
