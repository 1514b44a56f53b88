#include "text/utf8.h"

#include <unordered_map>

namespace zerotrain::text {

size_t utf8_sequence_length(std::string_view s, size_t pos) {
  const auto b = [&](size_t i) { return static_cast<uint8_t>(s[pos + i]); };
  const size_t left = s.size() - pos;
  const uint8_t c = b(0);
  if (c < 0x80) return 1;
  const auto cont = [&](size_t i) { return i < left && (b(i) & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

namespace {

// Bytes of the maximal ill-formed subpart at s[pos] (Unicode §3.9 D93b): the
// lead byte plus the continuation bytes that were still acceptable.
size_t ill_formed_length(std::string_view s, size_t pos) {
  const auto c = static_cast<uint8_t>(s[pos]);
  size_t need = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 1;
  }
  size_t n = 1;
  for (size_t k = 0; k < need && pos + n < s.size(); ++k, ++n) {
    const auto b = static_cast<uint8_t>(s[pos + n]);
    if (b < (k == 0 ? lo : 0x80) || b > (k == 0 ? hi : 0xBF)) break;
  }
  return n;
}

struct ByteLevelTables {
  std::array<std::string, 256> chars;
  std::unordered_map<uint32_t, uint8_t> bytes;  // code point -> byte
  ByteLevelTables() {
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const uint32_t cp = printable ? static_cast<uint32_t>(b) : next++;
      append_utf8(chars[b], cp);
      bytes[cp] = static_cast<uint8_t>(b);
    }
  }
};

const ByteLevelTables& tables() {
  static const ByteLevelTables t;
  return t;
}

uint32_t decode_code_point(std::string_view s) {
  const auto c = static_cast<uint8_t>(s[0]);
  if (s.size() == 1) return c;
  uint32_t cp = c & (s.size() == 2 ? 0x1F : s.size() == 3 ? 0x0F : 0x07);
  for (size_t i = 1; i < s.size(); ++i) cp = (cp << 6) | (static_cast<uint8_t>(s[i]) & 0x3F);
  return cp;
}

}  // namespace

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence_length(s, i);
    if (n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += ill_formed_length(s, i);
    }
  }
  return out;
}

size_t complete_utf8_prefix(std::string_view s) {
  // Look back at most 3 bytes for a lead byte whose sequence is unfinished.
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    const auto c = static_cast<uint8_t>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation: keep looking
    const size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return want > back && ill_formed_length(s, s.size() - back) == back ? s.size() - back
                                                                        : s.size();
  }
  return s.size();
}

const std::string& byte_level_char(uint8_t byte) { return tables().chars[byte]; }

std::optional<uint8_t> byte_level_byte(std::string_view ch) {
  if (ch.empty() || ch.size() > 4) return std::nullopt;
  const auto& m = tables().bytes;
  const auto it = m.find(decode_code_point(ch));
  if (it == m.end()) return std::nullopt;
  return it->second;
}

std::string to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += byte_level_char(static_cast<uint8_t>(c));
  return out;
}

}  // namespace zerotrain::text
