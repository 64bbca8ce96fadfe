#include "worker-runtime/checkpoint/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace ringmaster::checkpoint {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : (c >> 1);
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = MakeTable();  // constant, computed at compile time

// Shifting a CRC over zeros, for combining independent streams: the CRC register after `len` zero bytes is
// a linear function of the register before (a 32x32 matrix over GF(2)); as four byte-indexed tables it is
// four lookups. Mark Adler's construction (crc32c.c, zlib's crc32_combine), evaluated at compile time.
using Matrix = std::array<uint32_t, 32>;

constexpr uint32_t MatrixTimes(const Matrix& mat, uint32_t vec) {
  uint32_t sum = 0;
  for (int i = 0; vec != 0; ++i, vec >>= 1) {
    if (vec & 1) sum ^= mat[i];
  }
  return sum;
}

constexpr Matrix MatrixSquare(const Matrix& mat) {
  Matrix square{};
  for (int n = 0; n < 32; ++n) square[n] = MatrixTimes(mat, mat[n]);
  return square;
}

// The operator that appends `len` zero bytes (len a power of two, >= 1).
constexpr Matrix ZerosOperator(size_t len) {
  Matrix op{};  // one zero bit
  op[0] = kPoly;
  for (int n = 1; n < 32; ++n) op[n] = uint32_t{1} << (n - 1);
  for (size_t bits = 1; bits < len * 8; bits <<= 1) op = MatrixSquare(op);
  return op;
}

using ShiftTable = std::array<std::array<uint32_t, 256>, 4>;

constexpr ShiftTable MakeShiftTable(size_t len) {
  const Matrix op = ZerosOperator(len);
  ShiftTable table{};
  for (uint32_t n = 0; n < 256; ++n) {
    for (int byte = 0; byte < 4; ++byte) table[byte][n] = MatrixTimes(op, n << (8 * byte));
  }
  return table;
}

constexpr uint32_t Shift(const ShiftTable& table, uint32_t crc) {
  return table[0][crc & 0xff] ^ table[1][(crc >> 8) & 0xff] ^ table[2][(crc >> 16) & 0xff] ^ table[3][crc >> 24];
}

// Three independent streams: the crc32 instruction has a latency of three cycles and a throughput of one,
// so one stream uses a third of it. Blocks of kLong (then kShort) bytes per stream.
constexpr size_t kLong = 8192, kShort = 256;
constexpr ShiftTable kShiftLong = MakeShiftTable(kLong);    // constant, computed at compile time
constexpr ShiftTable kShiftShort = MakeShiftTable(kShort);  // constant, computed at compile time

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) inline uint64_t Crc64(uint64_t crc, const unsigned char* p) {
  uint64_t word;
  std::memcpy(&word, p, 8);
  return _mm_crc32_u64(crc, word);
}

__attribute__((target("sse4.2"))) uint32_t ExtendSse42(uint32_t crc, const unsigned char* p, size_t n) {
  uint64_t c0 = ~crc;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c0 = _mm_crc32_u8(static_cast<uint32_t>(c0), *p++);
    --n;
  }
  for (size_t block : {kLong, kShort}) {
    const ShiftTable& shift = block == kLong ? kShiftLong : kShiftShort;
    while (n >= 3 * block) {
      uint64_t c1 = 0, c2 = 0;
      for (const unsigned char* end = p + block; p < end; p += 8) {
        c0 = Crc64(c0, p);
        c1 = Crc64(c1, p + block);
        c2 = Crc64(c2, p + 2 * block);
      }
      c0 = Shift(shift, static_cast<uint32_t>(c0)) ^ c1;
      c0 = Shift(shift, static_cast<uint32_t>(c0)) ^ c2;
      p += 2 * block;
      n -= 3 * block;
    }
  }
  while (n >= 8) {
    c0 = Crc64(c0, p);
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    c0 = _mm_crc32_u8(static_cast<uint32_t>(c0), *p++);
    --n;
  }
  return ~static_cast<uint32_t>(c0);
}

bool HaveSse42() {
  static const bool have = __builtin_cpu_supports("sse4.2");  // constant once initialized
  return have;
}
#endif

}  // namespace

uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  for (size_t i = 0; i < n; ++i) c = kTable[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return ~c;
}

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n) {
#if defined(__x86_64__)
  if (HaveSse42()) return ExtendSse42(crc, static_cast<const unsigned char*>(data), n);
#endif
  return Crc32cExtendPortable(crc, data, n);
}

}  // namespace ringmaster::checkpoint
