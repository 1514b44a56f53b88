// CRC32C (Castagnoli): the checksum of TFRecord framing (TensorBoard event
// files), and its 3-lane variant the Gloo backend sends alongside every
// payload message, so a corrupted byte on the wire becomes a Corruption
// error instead of a wrong result (docs/algorithms.md, "Wire integrity").
//
//   uint32_t c = wire_checksum(data, bytes);  // same value on every rank
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace zerotrain {

// Standard CRC32C (reflected, init and final xor 0xFFFFFFFF):
// crc32c("123456789") == 0xE3069283. SSE4.2 when the CPU has it.
uint32_t crc32c(const void* data, size_t bytes);

// The message checksum: the buffer is cut into three lanes (two of
// floor(bytes/24)*8 bytes, the third takes the rest), each gets its own
// CRC32C so the hardware unit runs three independent chains, and the three
// are mixed as c0 ^ rotl(c1, 11) ^ rotl(c2, 22). Any change confined to
// one lane (e.g. any single corrupted byte) always changes the result.
uint32_t wire_checksum(const void* data, size_t bytes);

// The same functions without SSE4.2, for tests of the fast path.
uint32_t crc32c_portable(const void* data, size_t bytes);
uint32_t wire_checksum_portable(const void* data, size_t bytes);

}  // namespace zerotrain
