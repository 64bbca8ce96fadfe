#include "tests/pod_runner/tar_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace ringmaster::testing {

namespace {

constexpr size_t kBlock = 512;

std::string Trimmed(std::string name) {
  while (name.rfind("./", 0) == 0) name = name.substr(2);
  while (!name.empty() && name.back() == '/') name.pop_back();
  return name;
}

std::string Field(const char* block, size_t offset, size_t size) {
  const char* p = block + offset;
  return std::string(p, strnlen(p, size));
}

// An octal number field (or GNU base-256 for sizes of 8 GiB and more).
bool Number(const char* block, size_t offset, size_t size, uint64_t* out) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(block + offset);
  uint64_t v = 0;
  if (p[0] & 0x80) {
    for (size_t i = 1; i < size; ++i) v = (v << 8) | p[i];
    *out = v;
    return true;
  }
  size_t i = 0;
  while (i < size && (p[i] == ' ' || p[i] == 0)) ++i;
  for (; i < size && p[i] >= '0' && p[i] <= '7'; ++i) v = v * 8 + (p[i] - '0');
  *out = v;
  return true;
}

bool ReadFull(int fd, char* buf, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, buf + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// The "path" record of a pax header block's content, or "".
std::string PaxPath(const std::string& records) {
  size_t at = 0;
  while (at < records.size()) {
    size_t space = records.find(' ', at);
    if (space == std::string::npos) break;
    size_t length = std::strtoul(records.substr(at, space - at).c_str(), nullptr, 10);
    if (length == 0 || at + length > records.size()) break;
    std::string kv = records.substr(space + 1, length - (space - at) - 2);  // without the trailing newline
    if (kv.rfind("path=", 0) == 0) return kv.substr(5);
    at += length;
  }
  return "";
}

}  // namespace

StatusOr<std::string> ReadTarMember(const std::string& archive, const std::string& member, size_t max_bytes) {
  int fd = ::open(archive.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFoundError("cannot open " + archive + ": " + std::strerror(errno));
  const std::string want = Trimmed(member);
  std::string long_name;  // from a preceding 'L' or 'x' header
  char block[kBlock];
  Status result = NotFoundError(archive + " has no member " + member);
  std::string content;
  while (true) {
    if (!ReadFull(fd, block, kBlock)) {
      result = DataLossError(archive + " ends without the tar end marker");
      break;
    }
    if (block[0] == 0) break;  // the end marker
    uint64_t size = 0;
    Number(block, 124, 12, &size);
    const char type = block[156];
    const uint64_t padded = (size + kBlock - 1) / kBlock * kBlock;
    std::string name = Field(block, 0, 100);
    if (Field(block, 257, 6).rfind("ustar", 0) == 0) {
      std::string prefix = Field(block, 345, 155);
      if (!prefix.empty()) name = prefix + "/" + name;
    }
    if (!long_name.empty()) name = std::exchange(long_name, "");
    if (type == 'L' || type == 'x') {
      if (size > (1 << 20)) {
        result = DataLossError(archive + ": an oversized long-name header");
        break;
      }
      std::string data(padded, '\0');
      if (!ReadFull(fd, data.data(), padded)) {
        result = DataLossError(archive + " is truncated");
        break;
      }
      data.resize(size);
      long_name = type == 'L' ? std::string(data.c_str()) : PaxPath(data);
      continue;
    }
    if ((type == '0' || type == 0) && Trimmed(name) == want) {
      if (size > max_bytes) {
        result = ResourceExhaustedError(archive + ": " + member + " has " + std::to_string(size) +
                                        " bytes, more than " + std::to_string(max_bytes));
        break;
      }
      content.resize(size);
      if (!ReadFull(fd, content.data(), size)) {
        result = DataLossError(archive + " is truncated in " + member);
        break;
      }
      result = Status::Ok();
      break;
    }
    if (::lseek(fd, static_cast<off_t>(padded), SEEK_CUR) < 0) {
      result = DataLossError(archive + ": cannot skip a member: " + std::strerror(errno));
      break;
    }
  }
  ::close(fd);
  if (!result.ok()) return result;
  return content;
}

}  // namespace ringmaster::testing
