#include "kube/packed_json.h"

#include <cstring>

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
};

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

void KeyTable::EncodeLocked(const json& value, std::vector<std::uint8_t>& out) {
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
      out.push_back(kString);
      PutBytes(s.data(), s.size(), out);
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
      for (const auto& e : value) EncodeLocked(e, out);
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
        EncodeLocked(it.value(), out);
      }
      return;
  }
}

std::vector<std::uint8_t> KeyTable::Encode(const json& value) {
  std::vector<std::uint8_t> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    EncodeLocked(value, out);
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
        *slot = std::move(s);
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
