// CRC32C and the 3-lane wire checksum (see crc32c.h): a table-driven
// portable path and an SSE4.2 path that interleaves the three lanes.
#include "core/crc32c.h"

#include <array>
#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace zerotrain {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // Castagnoli, reflected

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (c & 1 ? kPoly : 0);
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kTable = make_table();

// Raw CRC update (no init/final inversion).
uint32_t update_portable(uint32_t c, const unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) c = (c >> 8) ^ kTable[(c ^ p[i]) & 0xFF];
  return c;
}

// Lane geometry shared by both paths: lanes 0 and 1 have `lane` bytes,
// lane 2 the rest.
size_t lane_bytes(size_t n) { return (n / 24) * 8; }

uint32_t mix(uint32_t c0, uint32_t c1, uint32_t c2) {
  return ~c0 ^ std::rotl(~c1, 11) ^ std::rotl(~c2, 22);
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t update_hw(uint32_t c, const unsigned char* p, size_t n) {
  uint64_t c64 = c;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c64 = _mm_crc32_u64(c64, v);
  }
  uint32_t c32 = static_cast<uint32_t>(c64);
  for (; n > 0; --n, ++p) c32 = _mm_crc32_u8(c32, *p);
  return c32;
}

// Three independent dependency chains keep the CRC unit busy (its latency
// is three times its throughput).
__attribute__((target("sse4.2"))) uint32_t wire_hw(const unsigned char* p, size_t n) {
  const size_t lane = lane_bytes(n);
  const unsigned char *a = p, *b = p + lane, *c = p + 2 * lane;
  uint64_t ca = 0xFFFFFFFFu, cb = 0xFFFFFFFFu, cc = 0xFFFFFFFFu;
  for (size_t i = 0; i < lane; i += 8) {
    uint64_t va, vb, vc;
    std::memcpy(&va, a + i, 8);
    std::memcpy(&vb, b + i, 8);
    std::memcpy(&vc, c + i, 8);
    ca = _mm_crc32_u64(ca, va);
    cb = _mm_crc32_u64(cb, vb);
    cc = _mm_crc32_u64(cc, vc);
  }
  uint32_t c2 = update_hw(static_cast<uint32_t>(cc), c + lane, n - 3 * lane);
  return mix(static_cast<uint32_t>(ca), static_cast<uint32_t>(cb), c2);
}

bool have_sse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t crc32c_portable(const void* data, size_t bytes) {
  return ~update_portable(0xFFFFFFFFu, static_cast<const unsigned char*>(data), bytes);
}

uint32_t wire_checksum_portable(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  const size_t lane = lane_bytes(bytes);
  uint32_t c0 = update_portable(0xFFFFFFFFu, p, lane);
  uint32_t c1 = update_portable(0xFFFFFFFFu, p + lane, lane);
  uint32_t c2 = update_portable(0xFFFFFFFFu, p + 2 * lane, bytes - 2 * lane);
  return mix(c0, c1, c2);
}

uint32_t crc32c(const void* data, size_t bytes) {
#if defined(__x86_64__)
  if (have_sse42()) return ~update_hw(0xFFFFFFFFu, static_cast<const unsigned char*>(data), bytes);
#endif
  return crc32c_portable(data, bytes);
}

uint32_t wire_checksum(const void* data, size_t bytes) {
#if defined(__x86_64__)
  if (have_sse42()) return wire_hw(static_cast<const unsigned char*>(data), bytes);
#endif
  return wire_checksum_portable(data, bytes);
}

}  // namespace zerotrain
