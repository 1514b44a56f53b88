// UTF-8 as tokenizers need it: one code point at a time, the byte-level
// alphabet of GPT-2 style BPE, and HF's lossy decode of arbitrary bytes.
//
//   size_t n = utf8_length(s[i]);                 // 1-4, or 1 for a stray byte
//   std::string u = byte_level_char(0x20);        // "Ġ"
//   std::string text = utf8_lossy(bytes);         // invalid runs -> U+FFFD
//
// Thread-safety: stateless (the byte-level tables are built once, const).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace zerotrain::text {

// Length of the well-formed UTF-8 sequence starting at s[pos], or 0 when the
// bytes there are not one (stray continuation, overlong, surrogate, truncated).
size_t utf8_sequence_length(std::string_view s, size_t pos);
bool is_valid_utf8(std::string_view s);
void append_utf8(std::string& out, uint32_t code_point);
// Bytes as text: every maximal ill-formed subpart becomes U+FFFD (the
// WHATWG / Rust from_utf8_lossy rule HF's decoders use).
std::string utf8_lossy(std::string_view bytes);
// The length of the longest prefix of `s` that ends on a whole code point:
// what a streaming decoder may print before more bytes arrive.
size_t complete_utf8_prefix(std::string_view s);

// GPT-2's byte-level alphabet (bytes_to_unicode): printable Latin-1 bytes map
// to themselves, the other 68 to U+0100 + n in byte order.
const std::string& byte_level_char(uint8_t byte);
// The byte a byte-level character stands for, if `ch` (one UTF-8 code point)
// is one.
std::optional<uint8_t> byte_level_byte(std::string_view ch);
// `bytes` spelled in the byte-level alphabet.
std::string to_byte_level(std::string_view bytes);

}  // namespace zerotrain::text
