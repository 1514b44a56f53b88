// The layer order, enforced (docs/architecture.md): every #include under
// src/ points at the including file's own layer or one below it, in the
// order the build adds them (CMakeLists.txt's ZEROTRAIN_LAYERS, which the
// document must list the same way); a device backend (device/<name>/) is
// reached only from device/ itself and that device's own comm backend
// (comm/gloo/ for device/cpu/, comm/nccl/ for device/cuda/); a model family (model/<name>/) only
// from the registry and the family itself. The checker is tested on made-up includes first, so a
// violation it misses would fail here too.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace zerotrain::architecture {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

// The include of `included` (a path under src/) from `file` (also a path
// under src/), or "" when it is allowed.
std::string violation(const std::vector<std::string>& layers, const std::string& file,
                      const std::string& included) {
  const std::vector<std::string> from = split(file, '/'), to = split(included, '/');
  if (from.size() < 2 || to.size() < 2) return "";
  const auto rank = [&](const std::string& layer) {
    return std::find(layers.begin(), layers.end(), layer) - layers.begin();
  };
  if (rank(to[0]) == static_cast<long>(layers.size())) return "";  // not a layer (a system dir)
  if (rank(to[0]) > rank(from[0]))
    return file + " includes " + included + ": layer " + to[0] + " is above " + from[0];
  // A device backend: device/ itself, and the device's own comm backend.
  const auto own_comm_backend = [&] {
    if (from[0] != "comm" || from.size() < 3) return false;
    return (from[1] == "gloo" && to[1] == "cpu") || (from[1] == "nccl" && to[1] == "cuda");
  };
  if (to[0] == "device" && to.size() > 2 && from[0] != "device" && !own_comm_backend())
    return file + " includes " + included + ": a device backend is device/'s own";
  // A model family: the registry and the family itself.
  if (to[0] == "model" && to.size() > 2) {
    const bool same_family = from[0] == "model" && from.size() > 2 && from[1] == to[1];
    const bool registry = from[0] == "model" && from.size() == 2 && from[1] == "registry.cc";
    if (!same_family && !registry)
      return file + " includes " + included + ": a model family is reached through the registry";
  }
  return "";
}

const std::vector<std::string> kLayers = split(ZT_LAYERS, ',');

TEST(Layers, TheCheckerFlagsWhatItShould) {
  EXPECT_EQ(violation(kLayers, "zero/stage3_strategy.cc", "model/module.h"), "");
  EXPECT_EQ(violation(kLayers, "engine/engine.cc", "zero/factory.h"), "");
  EXPECT_NE(violation(kLayers, "zero/stage3_strategy.cc", "engine/engine.h"), "");
  EXPECT_NE(violation(kLayers, "core/tensor.h", "device/device.h"), "");
  EXPECT_NE(violation(kLayers, "zero/stage3_strategy.cc", "device/cpu/convert.h"), "");
  EXPECT_EQ(violation(kLayers, "comm/gloo/reduce.cc", "device/cpu/convert.h"), "");
  EXPECT_EQ(violation(kLayers, "comm/nccl/nccl_communicator.cc", "device/cuda/cuda_device.h"), "");
  EXPECT_NE(violation(kLayers, "comm/gloo/reduce.cc", "device/cuda/cuda_device.h"), "");
  EXPECT_NE(violation(kLayers, "comm/factory.cc", "device/cuda/cuda_device.h"), "");
  EXPECT_EQ(violation(kLayers, "device/device.cc", "device/cpu/cpu_device.h"), "");
  EXPECT_NE(violation(kLayers, "engine/engine.cc", "model/gpt2/gpt_model.h"), "");
  EXPECT_NE(violation(kLayers, "model/module.cc", "model/gpt2/layout.h"), "");
  EXPECT_EQ(violation(kLayers, "model/registry.cc", "model/gpt2/family.h"), "");
  EXPECT_EQ(violation(kLayers, "model/gpt2/family.cc", "model/gpt2/gpt_model.h"), "");
}

TEST(Layers, EveryIncludeUnderSrcFollowsTheOrder) {
  const fs::path src = fs::path(ZT_SOURCE_DIR) / "src";
  const std::regex include("^#include \"([^\"]+)\"");
  std::vector<std::string> bad;
  int64_t checked = 0;
  for (const auto& entry : fs::recursive_directory_iterator(src)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".h" && ext != ".cc" && ext != ".cu")) continue;
    const std::string file = fs::relative(entry.path(), src).string();
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, include)) continue;
      ++checked;
      const std::string v = violation(kLayers, file, m[1].str());
      if (!v.empty()) bad.push_back(v);
    }
  }
  EXPECT_GT(checked, 500) << "the scan found the sources";
  for (const std::string& v : bad) ADD_FAILURE() << v;
}

TEST(Layers, TheArchitectureDocumentListsTheBuildsOrder) {
  std::ifstream in(fs::path(ZT_SOURCE_DIR) / "docs" / "architecture.md");
  ASSERT_TRUE(in) << "docs/architecture.md";
  const std::string marker = "Layer order (lowest first):";
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find(marker);
    if (at == std::string::npos) continue;
    std::string rest = line.substr(at + marker.size());
    rest.erase(std::remove_if(rest.begin(), rest.end(),
                              [](char c) { return c == ' ' || c == '`' || c == '.'; }),
               rest.end());
    EXPECT_EQ(split(rest, ','), kLayers) << line;
    return;
  }
  FAIL() << "docs/architecture.md has no \"" << marker << "\" line";
}

}  // namespace
}  // namespace zerotrain::architecture
