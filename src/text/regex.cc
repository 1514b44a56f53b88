#include "text/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "text/utf8.h"

namespace zerotrain::text {

struct Regex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

StatusOr<Regex> Regex::compile(const std::string& pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  // NO_UTF_CHECK on matches: subjects are validated UTF-8 before matching.
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (code == nullptr) {
    return invalid_argument("regex \"" + pattern + "\" does not compile at offset " +
                            std::to_string(offset) + ": " + pcre2_message(error));
  }
  auto owned = std::make_shared<Code>();
  owned->code = code;
  owned->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  Regex re;
  re.code_ = std::move(owned);
  re.pattern_ = pattern;
  return re;
}

Status Regex::for_each_match(std::string_view subject,
                             const std::function<void(size_t, size_t)>& fn) const {
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create_from_pattern(code_->code, nullptr), &pcre2_match_data_free);
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  size_t pos = 0;
  while (pos <= subject.size()) {
    const int rc = code_->jit ? pcre2_jit_match(code_->code, s, subject.size(), pos,
                                                PCRE2_NO_UTF_CHECK, data.get(), nullptr)
                              : pcre2_match(code_->code, s, subject.size(), pos, PCRE2_NO_UTF_CHECK,
                                            data.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      return Status(StatusCode::kInternal,
                    "regex \"" + pattern_ + "\" failed: " + pcre2_message(rc));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.get());
    const size_t begin = ov[0], end = ov[1];
    if (end > begin) {
      fn(begin, end);
      pos = end;
    } else {  // empty match: step over one code point
      if (begin >= subject.size()) break;
      const size_t n = utf8_sequence_length(subject, begin);
      pos = begin + (n == 0 ? 1 : n);
    }
  }
  return ok_status();
}

}  // namespace zerotrain::text
