// Config fuzz: 1,000 seeded mutations of the shipped examples/*.json
// (deleted and misspelt keys, wrong types, extreme numbers, deep nesting,
// duplicate keys, truncation, random bytes). Every input must give either a
// valid Config or an InvalidArgument whose message lists one located,
// non-empty problem per line: never a crash, a hang or another code.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "config/config.h"
#include "config/test_util.h"

namespace zerotrain::config {
namespace {

using Json = nlohmann::ordered_json;
using Rng = std::mt19937_64;

constexpr uint64_t kSeed = 20261202;
constexpr int kMutations = 1000;
// Marker replaced in the dumped text by a token JSON values cannot hold.
constexpr const char* kRaw = "__zt_raw__";

struct Example {
  std::string name, text;
  Json doc;
  TrainerArgs args;
};

std::vector<Example> load_examples() {
  std::vector<Example> out;
  for (const auto& e : std::filesystem::directory_iterator(ZT_EXAMPLES_DIR)) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    Example ex;
    ex.name = e.path().filename().string();
    ex.text = ss.str();
    ex.doc = Json::parse(ex.text, nullptr, true, true);
    // The arguments the example is meant for (as tests/config does).
    ex.args = testing::full_args();
    if (ex.name.find("zero0") != std::string::npos) ex.args = TrainerArgs{};
    if (ex.name.find("fp16") != std::string::npos) ex.args.bf16 = false, ex.args.fp16 = true;
    out.push_back(std::move(ex));
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}

size_t pick(Rng& rng, size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); }

// Every value's JSON pointer, the root excluded.
void collect(const Json& j, const Json::json_pointer& at, std::vector<Json::json_pointer>& out) {
  if (j.is_object()) {
    for (auto& [k, v] : j.items()) {
      out.push_back(at / k);
      collect(v, at / k, out);
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      out.push_back(at / i);
      collect(j[i], at / i, out);
    }
  }
}

// Object members only (keys that can be deleted or renamed).
std::vector<Json::json_pointer> member_paths(const Json& doc) {
  std::vector<Json::json_pointer> all, members;
  collect(doc, Json::json_pointer(), all);
  for (auto& p : all)
    if (doc.at(p.parent_pointer()).is_object()) members.push_back(p);
  return members;
}

std::string typo(std::string key, Rng& rng) {
  if (key.empty()) return "x";
  size_t i = pick(rng, key.size());
  switch (pick(rng, 3)) {
    case 0:  // swap two letters
      if (key.size() > 1)
        std::swap(key[i], key[i + 1 < key.size() ? i + 1 : i - 1]);
      else
        key += "_";
      return key;
    case 1:  // drop one
      return key.size() > 1 ? key.erase(i, 1) : key + "x";
    default:  // insert one
      return key.insert(i, 1, static_cast<char>('a' + pick(rng, 26)));
  }
}

Json other_type(const Json& v, Rng& rng) {
  static const Json kinds[] = {Json(7),
                               Json(-2.5),
                               Json("text"),
                               Json(true),
                               Json(nullptr),
                               Json::array({1, "a"}),
                               Json::object({{"k", 1}}),
                               Json("auto")};
  for (;;) {
    const Json& k = kinds[pick(rng, std::size(kinds))];
    if (k.type() != v.type()) return k;
  }
}

std::string nested(size_t depth, bool arrays) {
  std::string open;
  for (size_t i = 0; i < depth; ++i) open += arrays ? "[" : "{\"a\":";
  return open + "1" + std::string(depth, arrays ? ']' : '}');
}

struct Mutation {
  std::string text;
  std::string kind;
  std::string path;  // the JSON path (dotted) touched, when there is one
};

std::string dotted(const Json::json_pointer& p) {
  std::string s = p.to_string(), out;
  for (size_t i = 1; i < s.size(); ++i) out += s[i] == '/' ? '.' : s[i];
  return out;
}

Mutation mutate(const Example& ex, int kind, Rng& rng) {
  Json doc = ex.doc;
  std::vector<Json::json_pointer> members = member_paths(doc);
  std::vector<Json::json_pointer> all;
  collect(doc, Json::json_pointer(), all);
  const Json::json_pointer& m = members[pick(rng, members.size())];
  const Json::json_pointer& v = all[pick(rng, all.size())];
  std::string raw;
  Mutation out;
  switch (kind) {
    case 0:
      doc.at(m.parent_pointer()).erase(m.back());
      out = {"", "delete", dotted(m)};
      break;
    case 1: {
      Json& parent = doc.at(m.parent_pointer());
      Json value = parent[m.back()];
      parent.erase(m.back());
      parent[typo(m.back(), rng)] = value;
      out = {"", "typo", dotted(m)};
      break;
    }
    case 2:
      doc[v] = other_type(doc[v], rng);
      out = {"", "type", dotted(v)};
      break;
    case 3: {
      static const char* kExtreme[] = {"-1",
                                       "0",
                                       "-0",
                                       "1e400",
                                       "-1e400",
                                       "1e-400",
                                       "9223372036854775808",
                                       "18446744073709551616",
                                       "123456789012345678901234567890",
                                       "2147483648",
                                       "\"NaN\"",
                                       "\"inf\"",
                                       "\"-Infinity\"",
                                       "\"1e400\"",
                                       "1.7976931348623157e308",
                                       "-9223372036854775809"};
      raw = kExtreme[pick(rng, std::size(kExtreme))];
      doc[v] = kRaw;
      out = {"", "extreme " + raw, dotted(v)};
      break;
    }
    case 4: {
      static const size_t kDepth[] = {8, 600, 20000};
      raw = nested(kDepth[pick(rng, 3)], pick(rng, 2) == 0);
      doc[v] = kRaw;
      out = {"", "nesting", dotted(v)};
      break;
    }
    default:
      break;
  }
  if (kind <= 4) {
    out.text = doc.dump(2);
    if (!raw.empty())
      out.text.replace(out.text.find(std::string("\"") + kRaw + "\""), std::string(kRaw).size() + 2,
                       raw);
    return out;
  }
  std::string text = ex.text;
  switch (kind) {
    case 5: {  // duplicate a "key": line
      std::vector<size_t> lines;
      for (size_t i = text.find("\n  \""); i != std::string::npos; i = text.find("\n  \"", i + 1))
        lines.push_back(i + 1);
      size_t at = lines[pick(rng, lines.size())];
      std::string line = text.substr(at, text.find('\n', at) - at);
      if (line.back() != ',' && line.back() != '{' && line.back() != '[') line += ",";
      if (line.back() == '{' || line.back() == '[') line = line.substr(0, line.find(':')) + ": 1,";
      text.insert(at, line + "\n");
      return {text, "duplicate", ""};
    }
    case 6:
      return {text.substr(0, pick(rng, text.size())), "truncate", ""};
    case 7: {
      size_t n = 1 + pick(rng, 8);
      for (size_t i = 0; i < n; ++i)
        text[pick(rng, text.size())] = static_cast<char>(pick(rng, 256));
      return {text, "bytes", ""};
    }
    default: {  // pure noise
      std::string s(pick(rng, 64), '\0');
      for (char& c : s) c = static_cast<char>(pick(rng, 256));
      return {s, "noise", ""};
    }
  }
}

constexpr int kKinds = 9;

// The contract every outcome must meet; returns what broke it, or "".
std::string violation(const ParseResult& r) {
  Status st = r.status();
  if (r.config) return r.errors.empty() && st.ok() ? "" : "config together with errors";
  if (r.errors.empty()) return "neither a config nor an error";
  if (st.code() != StatusCode::kInvalidArgument) return "code " + st.to_string();
  std::istringstream lines(st.message());
  std::string line;
  std::getline(lines, line);  // "invalid DeepSpeed config (N problems):"
  size_t count = 0;
  while (std::getline(lines, line)) {
    ++count;
    if (line.find_first_not_of(' ') == std::string::npos) return "empty problem line";
  }
  if (count != r.errors.size()) return "problems span lines: " + st.message();
  for (const ConfigError& e : r.errors) {
    if (e.message.empty()) return "empty message at '" + e.path + "'";
    if (e.path.empty() && e.message.size() < 12) return "unlocated, terse: " + e.message;
  }
  return "";
}

TEST(ConfigFuzz, ThousandSeededMutationsGiveAConfigOrLocatedErrors) {
  std::vector<Example> examples = load_examples();
  ASSERT_GE(examples.size(), 4u);
  Rng rng(kSeed);
  std::map<std::string, int> valid, invalid;
  auto slowest = std::chrono::duration<double>::zero();
  for (int i = 0; i < kMutations; ++i) {
    const Example& ex = examples[pick(rng, examples.size())];
    const int kind = i % kKinds;
    Mutation m = mutate(ex, kind, rng);
    auto t0 = std::chrono::steady_clock::now();
    ParseResult r = parse_config_detailed(m.text, ex.args);
    slowest =
        std::max(slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0));
    std::string bad = violation(r);
    ASSERT_EQ(bad, "") << "mutation " << i << " (" << m.kind << " " << m.path << ") of " << ex.name;
    std::string key = m.kind.substr(0, m.kind.find(' '));
    (r.config ? valid : invalid)[key]++;
    // A wrong type at a schema path must be reported at or around that path.
    if (!r.config && kind == 2 && !m.path.empty()) {
      bool located = false;
      for (const ConfigError& e : r.errors)
        located |= e.path.rfind(m.path, 0) == 0 || m.path.rfind(e.path, 0) == 0 ||
                   e.message.find(m.path) != std::string::npos;
      EXPECT_TRUE(located) << "mutation " << i << " type at " << m.path << ": "
                           << r.status().to_string();
    }
  }
  EXPECT_LT(slowest.count(), 2.0) << "one parse took " << slowest.count() << " s";
  // Each kind broke at least one config (the fuzz is not vacuous), and
  // structural damage never parsed.
  for (const char* k :
       {"delete", "typo", "type", "extreme", "nesting", "duplicate", "truncate", "bytes", "noise"})
    EXPECT_GT(invalid[k], 0) << k;
  EXPECT_EQ(valid["duplicate"], 0);
  EXPECT_EQ(valid["noise"], 0);
  std::string summary;
  for (auto& [k, n] : invalid)
    summary += k + "=" + std::to_string(n) + "/" + std::to_string(n + valid[k]) + " ";
  std::printf("invalid per kind: %s; slowest parse %.3f s\n", summary.c_str(), slowest.count());
}

// Findings of this fuzz, pinned: nlohmann's out_of_range for 1e400 used to
// escape parse_config_detailed as an exception, and 20,000 levels of
// nesting took seconds (paths copied per level).
TEST(ConfigFuzz, NumberOverflowIsAnErrorAtItsPath) {
  ParseResult r = parse_config_detailed(R"({"zero_optimization": {"stage": 1e400}})", {});
  ASSERT_EQ(r.errors.size(), 1u) << r.status().to_string();
  EXPECT_EQ(r.errors[0].path, "zero_optimization.stage");
  EXPECT_NE(r.errors[0].message.find("number overflow parsing '1e400'"), std::string::npos)
      << r.errors[0].message;
}

TEST(ConfigFuzz, DeepNestingIsRefusedAtItsPath) {
  std::string text = "{\"optimizer\": " + nested(20000, true) + "}";
  auto t0 = std::chrono::steady_clock::now();
  ParseResult r = parse_config_detailed(text, {});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5);
  ASSERT_EQ(r.errors.size(), 1u) << r.status().to_string();
  std::string path = "optimizer";  // the root object and 63 arrays are open
  for (int i = 0; i < 62; ++i) path += "[]";
  EXPECT_EQ(r.errors[0].path, path);
  EXPECT_EQ(r.errors[0].message, "JSON nested deeper than 64 levels");
}

}  // namespace
}  // namespace zerotrain::config
