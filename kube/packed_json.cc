#include "kube/packed_json.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <ctime>

namespace ringmaster::kube {

using nlohmann::json;

namespace {

enum Tag : std::uint8_t {
  kNull = 0,
  kFalse = 1,
  kTrue = 2,
  kUnsigned = 3,
  kSigned = 4,
  kDouble = 5,
  kString = 6,
  kBinary = 7,
  kArray = 8,
  kObject = 9,
  // Strings in a shorter form: a lowercase UUID (16 bytes), an RFC 3339 time in whole UTC seconds
  // (a varint of the seconds since 1970), a dotted-quad IPv4 address (4 bytes). Used only where the string
  // renders back from that form byte for byte; any other string stays kString.
  kUuid = 10,
  kTime = 11,
  kIPv4 = 12,
  // The n-th (varint) string of kMinRepeatedString bytes or more written as kString earlier in this value.
  kRepeat = 13,
  // A string the KeyTable holds: its id (varint).
  kInterned = 14,
};

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // uppercase too: it would not render back the same
}

constexpr int kUuidLength = 36;  // 8-4-4-4-12
bool IsUuidDash(size_t i) { return i == 8 || i == 13 || i == 18 || i == 23; }

// The 16 bytes of a lowercase UUID; false for any other string.
bool ParseUuid(const std::string& s, std::uint8_t out[16]) {
  if (s.size() != kUuidLength) return false;
  int n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (IsUuidDash(i)) {
      if (s[i] != '-') return false;
      continue;
    }
    const int d = HexDigit(s[i]);
    if (d < 0) return false;
    if (n % 2 == 0) {
      out[n / 2] = static_cast<std::uint8_t>(d << 4);
    } else {
      out[n / 2] |= static_cast<std::uint8_t>(d);
    }
    ++n;
  }
  return n == 32;
}

std::string RenderUuid(const std::uint8_t in[16]) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(kUuidLength);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s.push_back('-');
    s.push_back(kHex[in[i] >> 4]);
    s.push_back(kHex[in[i] & 15]);
  }
  return s;
}

// "YYYY-MM-DDTHH:MM:SSZ" of `seconds` since 1970 (UTC).
std::string RenderTime(std::uint64_t seconds) {
  const auto t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return {};
  char buf[32];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(buf, n);
}

// The seconds of an RFC 3339 UTC time in whole seconds (the apiserver's metav1.Time), when it renders back
// exactly; false otherwise.
bool ParseTime(const std::string& s, std::uint64_t* seconds) {
  if (s.size() != 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != 'Z')
    return false;
  std::tm tm{};
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec) != 6)
    return false;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const std::time_t t = timegm(&tm);
  if (t < 0) return false;
  *seconds = static_cast<std::uint64_t>(t);
  return RenderTime(*seconds) == s;
}

bool ParseIPv4(const std::string& s, std::uint8_t out[4]) {
  if (s.size() < 7 || s.size() > 15) return false;
  in_addr addr{};
  if (inet_pton(AF_INET, s.c_str(), &addr) != 1) return false;
  std::memcpy(out, &addr, 4);
  char back[INET_ADDRSTRLEN];
  return inet_ntop(AF_INET, &addr, back, sizeof back) != nullptr && s == back;
}

std::string RenderIPv4(const std::uint8_t in[4]) {
  in_addr addr{};
  std::memcpy(&addr, in, 4);
  char buf[INET_ADDRSTRLEN];
  return inet_ntop(AF_INET, &addr, buf, sizeof buf) ? std::string(buf) : std::string();
}

void PutVarint(std::uint64_t v, std::vector<std::uint8_t>& out) {
  while (v >= 0x80) {
    out.push_back(static_cast<std::uint8_t>(v) | 0x80);
    v >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(v));
}

void PutBytes(const void* data, size_t size, std::vector<std::uint8_t>& out) {
  PutVarint(size, out);
  const auto* p = static_cast<const std::uint8_t*>(data);
  out.insert(out.end(), p, p + size);
}

// A bounds-checked reader over bytes Encode wrote; every Get fails (returns false) past the end.
struct Reader {
  const std::uint8_t* p;
  const std::uint8_t* end;

  bool Byte(std::uint8_t* b) {
    if (p == end) return false;
    *b = *p++;
    return true;
  }
  bool Varint(std::uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      std::uint8_t b = 0;
      if (!Byte(&b)) return false;
      *v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  bool Bytes(std::string* s) {
    std::uint64_t n = 0;
    if (!Varint(&n) || n > static_cast<std::uint64_t>(end - p)) return false;
    s->assign(reinterpret_cast<const char*>(p), n);
    p += n;
    return true;
  }
};

}  // namespace

KeyTable::KeyTable(size_t max_keys, size_t max_key_length) : max_keys_(max_keys), max_key_length_(max_key_length) {}

size_t KeyTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return keys_.size();
}

int64_t KeyTable::IdLocked(const std::string& key) {
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  if (keys_.size() >= max_keys_ || key.size() > max_key_length_) return -1;
  keys_.push_back(key);
  const auto id = static_cast<uint32_t>(keys_.size() - 1);
  ids_.emplace(keys_.back(), id);
  return id;
}

int64_t KeyTable::ValueIdLocked(const std::string& value, int64_t key_id) {
  auto it = ids_.find(value);
  const int64_t held = it == ids_.end() ? int64_t{-1} : int64_t{it->second};
  if (key_id < 0) return held;
  if (member_values_.size() <= static_cast<size_t>(key_id)) member_values_.resize(static_cast<size_t>(key_id) + 1);
  MemberValues& member = member_values_[static_cast<size_t>(key_id)];
  if (member.closed) return held;
  const int64_t id = held >= 0 ? held : IdLocked(value);
  if (id < 0) return -1;  // the table is full, or the string too long for it
  if (std::find(member.ids.begin(), member.ids.end(), id) != member.ids.end()) return id;
  member.ids.push_back(static_cast<uint32_t>(id));
  if (member.ids.size() >= kMaxValuesPerKey) member = MemberValues{{}, true};  // many values: a name, a uid
  return id;
}

void KeyTable::EncodeLocked(const json& value, int64_t key_id, std::vector<std::uint8_t>& out,
                            WrittenStrings& written) {
  switch (value.type()) {
    case json::value_t::null:
    case json::value_t::discarded: out.push_back(kNull); return;
    case json::value_t::boolean: out.push_back(value.get<bool>() ? kTrue : kFalse); return;
    case json::value_t::number_unsigned:
      out.push_back(kUnsigned);
      PutVarint(value.get<std::uint64_t>(), out);
      return;
    case json::value_t::number_integer: {
      const auto v = value.get<std::int64_t>();
      out.push_back(kSigned);
      PutVarint((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63), out);  // zigzag
      return;
    }
    case json::value_t::number_float: {
      const double d = value.get<double>();
      std::uint64_t bits = 0;
      std::memcpy(&bits, &d, sizeof bits);
      out.push_back(kDouble);
      for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(bits >> (8 * i)));
      return;
    }
    case json::value_t::string: {
      const auto& s = value.get_ref<const std::string&>();
      std::uint8_t raw[16];
      std::uint64_t seconds = 0;
      if (ParseUuid(s, raw)) {
        out.push_back(kUuid);
        out.insert(out.end(), raw, raw + 16);
      } else if (ParseTime(s, &seconds)) {
        out.push_back(kTime);
        PutVarint(seconds, out);
      } else if (ParseIPv4(s, raw)) {
        out.push_back(kIPv4);
        out.insert(out.end(), raw, raw + 4);
      } else if (const int64_t id = ValueIdLocked(s, key_id); id >= 0) {
        out.push_back(kInterned);
        PutVarint(static_cast<std::uint64_t>(id), out);
      } else if (s.size() < kMinRepeatedString) {
        out.push_back(kString);
        PutBytes(s.data(), s.size(), out);
      } else if (auto [it, first] = written.try_emplace(s, static_cast<uint32_t>(written.size())); !first) {
        out.push_back(kRepeat);
        PutVarint(it->second, out);
      } else {
        out.push_back(kString);
        PutBytes(s.data(), s.size(), out);
      }
      return;
    }
    case json::value_t::binary: {
      const auto& b = value.get_binary();
      out.push_back(kBinary);
      PutBytes(b.data(), b.size(), out);
      return;
    }
    case json::value_t::array:
      out.push_back(kArray);
      PutVarint(value.size(), out);
      for (const auto& e : value) EncodeLocked(e, key_id, out, written);
      return;
    case json::value_t::object:
      out.push_back(kObject);
      PutVarint(value.size(), out);
      for (auto it = value.begin(); it != value.end(); ++it) {
        const int64_t id = IdLocked(it.key());
        if (id >= 0) {
          PutVarint(static_cast<std::uint64_t>(id) + 1, out);
        } else {
          out.push_back(0);
          PutBytes(it.key().data(), it.key().size(), out);
        }
        EncodeLocked(it.value(), id, out, written);
      }
      return;
  }
}

std::vector<std::uint8_t> KeyTable::Encode(const json& value) {
  std::vector<std::uint8_t> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    WrittenStrings written;  // views into `value`, which outlives them
    EncodeLocked(value, /*key_id=*/-1, out, written);
  }
  out.shrink_to_fit();
  return out;
}

std::optional<json> KeyTable::Decode(const std::uint8_t* data, size_t size) const {
  Reader r{data, data + size};
  std::lock_guard<std::mutex> lock(mu_);
  // Iterative over an explicit stack of containers, so a deep (or hostile) value cannot overflow the
  // thread's stack: each frame is a container being filled and how many members it still expects.
  struct Frame {
    json* container;
    std::uint64_t left;
  };
  json root;
  std::vector<Frame> stack;
  // The long strings decoded so far, in order, for kRepeat (copies: an array's elements move as it grows).
  std::vector<std::string> long_strings;
  json* slot = &root;  // where the next decoded value goes
  while (true) {
    std::uint8_t tag = 0;
    if (!r.Byte(&tag)) return std::nullopt;
    std::uint64_t n = 0;
    switch (tag) {
      case kNull: *slot = nullptr; break;
      case kFalse:
      case kTrue: *slot = tag == kTrue; break;
      case kUnsigned:
        if (!r.Varint(&n)) return std::nullopt;
        *slot = n;
        break;
      case kSigned:
        if (!r.Varint(&n)) return std::nullopt;
        *slot = static_cast<std::int64_t>((n >> 1) ^ (~(n & 1) + 1));
        break;
      case kDouble: {
        if (r.end - r.p < 8) return std::nullopt;
        std::uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits |= static_cast<std::uint64_t>(r.p[i]) << (8 * i);
        r.p += 8;
        double d = 0;
        std::memcpy(&d, &bits, sizeof d);
        *slot = d;
        break;
      }
      case kString: {
        std::string s;
        if (!r.Bytes(&s)) return std::nullopt;
        if (s.size() >= kMinRepeatedString) long_strings.push_back(s);
        *slot = std::move(s);
        break;
      }
      case kRepeat:
        if (!r.Varint(&n) || n >= long_strings.size()) return std::nullopt;
        *slot = long_strings[n];
        break;
      case kInterned:
        if (!r.Varint(&n) || n >= keys_.size()) return std::nullopt;
        *slot = keys_[n];
        break;
      case kUuid:
      case kIPv4: {
        const long width = tag == kUuid ? 16 : 4;
        if (r.end - r.p < width) return std::nullopt;
        *slot = tag == kUuid ? RenderUuid(r.p) : RenderIPv4(r.p);
        r.p += width;
        break;
      }
      case kTime: {
        if (!r.Varint(&n)) return std::nullopt;
        std::string t = RenderTime(n);
        if (t.empty()) return std::nullopt;
        *slot = std::move(t);
        break;
      }
      case kBinary: {
        std::string s;
        if (!r.Bytes(&s)) return std::nullopt;
        *slot = json::binary(std::vector<std::uint8_t>(s.begin(), s.end()));
        break;
      }
      case kArray:
      case kObject:
        if (!r.Varint(&n) || n > static_cast<std::uint64_t>(r.end - r.p)) return std::nullopt;
        *slot = tag == kArray ? json::array() : json::object();
        stack.push_back({slot, n});
        break;
      default: return std::nullopt;
    }
    // The next slot: in the innermost container that still expects members; done when none does.
    while (!stack.empty() && stack.back().left == 0) stack.pop_back();
    if (stack.empty()) break;
    Frame& top = stack.back();
    --top.left;
    if (top.container->is_array()) {
      top.container->push_back(nullptr);
      slot = &top.container->back();
    } else {
      std::uint64_t ref = 0;
      if (!r.Varint(&ref)) return std::nullopt;
      std::string key;
      if (ref == 0) {
        if (!r.Bytes(&key)) return std::nullopt;
      } else if (ref - 1 < keys_.size()) {
        key = keys_[ref - 1];
      } else {
        return std::nullopt;
      }
      slot = &(*top.container)[key];
    }
  }
  if (r.p != r.end) return std::nullopt;
  return root;
}

}  // namespace ringmaster::kube
