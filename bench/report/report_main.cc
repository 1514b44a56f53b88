// zt_bench_report: turns one run's JSON files into bench/RESULTS.md.
//
//   zt_bench_report --dir build/bench-results --out bench/RESULTS.md
// Reads DIR/{meta,probe,kernels,adamw,comm}.json and DIR/train.json (JSON
// lines, one per zt_train_bench case); a missing or unparsable
// file leaves its section saying the step did not run (and is reported on
// stderr), so a partial run still produces a report.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report/report.h"

namespace {

nlohmann::json load(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "zt_bench_report: %s: missing\n", path.c_str());
    return nullptr;
  }
  std::stringstream text;
  text << in.rdbuf();
  // zt_comm_bench's file is one line; Google Benchmark's and zt_probe's are documents.
  nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    std::fprintf(stderr, "zt_bench_report: %s: not valid JSON\n", path.c_str());
    return nullptr;
  }
  return doc;
}

// One JSON object a line (zt_train_bench appends one per case); null when
// the file is missing or has no valid line. A bad line is reported and skipped.
nlohmann::json load_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "zt_bench_report: %s: missing\n", path.c_str());
    return nullptr;
  }
  nlohmann::json out = nlohmann::json::array();
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json doc = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (doc.is_object()) {
      out.push_back(std::move(doc));
    } else {
      std::fprintf(stderr, "zt_bench_report: %s:%d: not a JSON object\n", path.c_str(), n);
    }
  }
  return out.empty() ? nlohmann::json() : out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zt_bench_report: bench JSON -> RESULTS.md"};
  std::string dir, out;
  app.add_option("--dir", dir, "folder with meta/probe/kernels/adamw/comm/train .json")->required();
  app.add_option("--out", out, "markdown file to write")->required();
  CLI11_PARSE(app, argc, argv);
  zerotrain::bench::ReportInputs in{.meta = load(dir + "/meta.json"),
                                    .probe = load(dir + "/probe.json"),
                                    .kernels = load(dir + "/kernels.json"),
                                    .adamw = load(dir + "/adamw.json"),
                                    .comm = load(dir + "/comm.json"),
                                    .train = load_lines(dir + "/train.json")};
  std::ofstream file(out);
  file << zerotrain::bench::render_results_md(in);
  if (!file) {
    std::fprintf(stderr, "zt_bench_report: cannot write %s\n", out.c_str());
    return 1;
  }
  return 0;
}
