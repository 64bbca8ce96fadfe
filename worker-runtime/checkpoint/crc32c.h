// CRC32C (Castagnoli), the checksum of checkpoint blobs.
//
// Why CRC32C and not SHA-256: the checksum guards against accidents -- torn or
// truncated writes, flipped bits, a copy cut short -- not against an attacker
// (whoever can write the checkpoint directory can rewrite the manifest too, so
// a cryptographic hash would buy nothing). CRC32C detects every burst error of
// up to 32 bits and random damage with probability 1 - 2^-32, and with the
// SSE4.2 instruction it runs at several GB/s on one core, well above disk
// bandwidth, while SHA-256 would be a visible share of save and restore time.
// The hardware path runs three independent crc32 streams (the instruction's
// latency is three times its throughput) and combines them with compile-time
// shift tables, about three times one stream's speed; the bench prints it.
// LevelDB, RocksDB and ext4 metadata use it for the same reason.
//
// Thread-safety: pure functions; call from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringmaster::checkpoint {

// Returns the CRC32C of data[0, n) appended to a stream whose CRC so far is
// `crc` (0 for the empty stream): Crc32cExtend(Crc32cExtend(0, a), b) equals
// the CRC of a followed by b.
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n);

inline uint32_t Crc32c(const void* data, size_t n) { return Crc32cExtend(0, data, n); }

// The portable table-driven version (the hardware one must agree with it).
uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t n);

}  // namespace ringmaster::checkpoint
