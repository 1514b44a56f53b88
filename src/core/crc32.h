// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320, initial and final
// XOR 0xFFFFFFFF) — the checksum zlib, PNG and gzip use, so a shard's CRC can
// be checked with any standard tool. crc32("123456789") == 0xCBF43926.
//
//   uint32_t c = crc32(header, 36);
//   c = crc32_update(c, payload, n);  // incremental: same as one call over both
//
// Thread-safety: pure functions (the tables are built once, thread-safely).
#pragma once

#include <cstddef>
#include <cstdint>

namespace zerotrain {

// CRC of `size` bytes at `data`.
uint32_t crc32(const void* data, size_t size);
// Continues a CRC: crc32_update(crc32(a), b) == crc32(a + b).
uint32_t crc32_update(uint32_t crc, const void* data, size_t size);

}  // namespace zerotrain
