// Key line numbers (see locate.h).
#include "config/locate.h"

#include <vector>

namespace zerotrain::config {
namespace {

struct Frame {
  bool object;
  std::string path;
  bool expect_key = true;
  std::string key;
};

std::string join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  std::map<std::string, int> run() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '\n') ++line_;
      if (c == '/' && pos_ + 1 < text_.size() &&
          (text_[pos_ + 1] == '/' || text_[pos_ + 1] == '*')) {
        skip_comment();
        continue;
      }
      if (c == '"') {
        string_token();
        continue;
      }
      structural(c);
      ++pos_;
    }
    return lines_;
  }

 private:
  void skip_comment() {
    bool block = text_[pos_ + 1] == '*';
    pos_ += 2;
    while (pos_ < text_.size()) {
      if (!block && text_[pos_] == '\n') return;  // the newline is counted by run()
      if (text_[pos_] == '\n') ++line_;
      if (block && text_[pos_] == '*' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
        pos_ += 2;
        return;
      }
      ++pos_;
    }
  }

  void string_token() {
    const int start_line = line_;
    std::string value;
    for (++pos_; pos_ < text_.size() && text_[pos_] != '"'; ++pos_) {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;  // keys are plain ASCII
      if (text_[pos_] == '\n') ++line_;
      value += text_[pos_];
    }
    ++pos_;
    if (stack_.empty() || !stack_.back().object || !stack_.back().expect_key) return;
    Frame& f = stack_.back();
    f.key = value;
    f.expect_key = false;
    lines_[join(f.path, value)] = start_line;
  }

  void structural(char c) {
    std::string child = stack_.empty()         ? std::string()
                        : stack_.back().object ? join(stack_.back().path, stack_.back().key)
                                               : stack_.back().path + "[]";
    if (c == '{') stack_.push_back({true, child});
    if (c == '[') stack_.push_back({false, child});
    if ((c == '}' || c == ']') && !stack_.empty()) stack_.pop_back();
    if (c == ',' && !stack_.empty() && stack_.back().object) stack_.back().expect_key = true;
  }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Frame> stack_;
  std::map<std::string, int> lines_;
};

}  // namespace

std::map<std::string, int> key_lines(std::string_view text) { return Scanner(text).run(); }

}  // namespace zerotrain::config
