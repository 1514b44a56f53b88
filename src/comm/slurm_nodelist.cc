// Slurm host lists and task counts (see slurm_nodelist.h).
#include "comm/slurm_nodelist.h"

#include <charconv>
#include <cstdio>

namespace zerotrain::comm {
namespace {

Status malformed(std::string_view what, std::string_view text, std::string_view why) {
  return invalid_argument("malformed Slurm " + std::string(what) + " '" + std::string(text) +
                          "': " + std::string(why));
}

// Splits on commas outside brackets.
std::vector<std::string_view> split_top(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '[') ++depth;
    if (s[i] == ']') --depth;
    if (s[i] == ',' && depth == 0) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(s.substr(start));
  return out;
}

bool parse_uint(std::string_view s, long long* v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && *v >= 0;
}

// "01-03,07" -> {"01","02","03","07"}.
StatusOr<std::vector<std::string>> expand_group(std::string_view group, std::string_view list) {
  std::vector<std::string> out;
  for (std::string_view part : split_top(group)) {
    const size_t dash = part.find('-');
    const std::string_view lo_s = part.substr(0, dash);
    const std::string_view hi_s = dash == std::string_view::npos ? lo_s : part.substr(dash + 1);
    long long lo = 0, hi = 0;
    if (!parse_uint(lo_s, &lo) || !parse_uint(hi_s, &hi) || hi < lo || hi - lo > 1000000)
      return malformed("node list", list, "bad range '" + std::string(part) + "'");
    const int width = static_cast<int>(lo_s.size());
    for (long long v = lo; v <= hi; ++v) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%0*lld", width, v);
      out.emplace_back(buf);
    }
  }
  return out;
}

}  // namespace

StatusOr<std::vector<std::string>> expand_nodelist(std::string_view list) {
  std::vector<std::string> hosts;
  if (list.empty()) return malformed("node list", list, "empty");
  for (std::string_view item : split_top(list)) {
    if (item.empty()) return malformed("node list", list, "empty host name");
    // The Cartesian product of literal pieces and bracket groups, the
    // leftmost group varying slowest.
    std::vector<std::string> names = {""};
    size_t i = 0;
    bool after_group = false;
    while (i < item.size()) {
      if (item[i] == ']') return malformed("node list", list, "']' without '['");
      if (item[i] != '[') {
        const size_t next = item.find_first_of("[]", i);
        // As scontrol: text after a range only as a prefix of another range.
        if (after_group && next == std::string_view::npos)
          return malformed("node list", list, "text after the last range");
        const std::string_view lit = item.substr(i, next - i);
        for (std::string& n : names) n += lit;
        i = next == std::string_view::npos ? item.size() : next;
        continue;
      }
      const size_t close = item.find(']', i);
      if (close == std::string_view::npos) return malformed("node list", list, "unclosed '['");
      ZT_ASSIGN_OR_RETURN(std::vector<std::string> values,
                          expand_group(item.substr(i + 1, close - i - 1), list));
      std::vector<std::string> product;
      for (const std::string& n : names)
        for (const std::string& v : values) product.push_back(n + v);
      names = std::move(product);
      i = close + 1;
      after_group = true;
    }
    hosts.insert(hosts.end(), names.begin(), names.end());
  }
  return hosts;
}

StatusOr<std::vector<int>> expand_tasks_per_node(std::string_view counts) {
  std::vector<int> out;
  for (std::string_view part : split_top(counts)) {
    long long n = 0, times = 1;
    const size_t paren = part.find("(x");
    if (paren != std::string_view::npos) {
      if (part.back() != ')' ||
          !parse_uint(part.substr(paren + 2, part.size() - paren - 3), &times) || times < 1)
        return malformed("task counts", counts, "bad repeat in '" + std::string(part) + "'");
      part = part.substr(0, paren);
    }
    if (!parse_uint(part, &n) || n < 1 || times > 1000000)
      return malformed("task counts", counts, "bad count '" + std::string(part) + "'");
    out.insert(out.end(), static_cast<size_t>(times), static_cast<int>(n));
  }
  return out;
}

}  // namespace zerotrain::comm
