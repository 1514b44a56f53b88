// Test helpers for tests/train: a fresh temporary directory per test and raw
// file byte access for corruption tests.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

namespace zerotrain::train::testing {

// Losses of the "[zerotrain] step N/M | loss X" lines of a trainer log, in order.
inline std::vector<double> logged_losses(const std::string& out) {
  std::vector<double> losses;
  static const std::regex kLine(R"(\[zerotrain\] step \d+/\d+ \| loss ([0-9.]+))");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), kLine); it != std::sregex_iterator();
       ++it)
    losses.push_back(std::stod((*it)[1]));
  return losses;
}

// A new empty directory under the gtest temp dir, removed at destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "zt_train_XXXXXX";
    char* made = ::mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

}  // namespace zerotrain::train::testing
