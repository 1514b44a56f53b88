// How a conversation ({"messages": [{"role", "content"}, ...]}) or a
// prompt/completion pair becomes text for a tokenizer, as parts that are
// trained on or not: the assistant's replies (with their end-of-turn
// token) and completions are; system and user turns, role headers and
// prompts are not. The formats are the model families' own chat templates,
// written out (zerotrain does not run tokenizer_config.json's Jinja):
//   chatml  (Qwen2):   <|im_start|>ROLE\nCONTENT<|im_end|>\n
//   llama3:            <|begin_of_text|> then
//   <|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|> llama2  (Mistral): <s>[INST]
//   <<SYS>>\nSYSTEM\n<</SYS>>\n\nUSER [/INST] ANSWER </s> plain   (GPT-2):   "User: ...\n",
//   "Assistant:" + " ANSWER" + end-of-text + "\n"
//
//   ZT_ASSIGN_OR_RETURN(ChatFormat f, chat_format_for(tokenizer, "auto"));
//   ZT_ASSIGN_OR_RETURN(std::vector<TextPart> parts, render_chat(f, messages, eos_text));
//
// Thread-safety: stateless.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "text/tokenizer.h"

namespace zerotrain::train {

enum class ChatFormat { kChatml, kLlama3, kLlama2, kPlain };

struct TextPart {
  std::string text;
  bool trained = false;
};

// "auto" picks by the tokenizer's special tokens (<|im_start|> -> chatml,
// <|start_header_id|> -> llama3, [INST]-style <s>/</s> -> llama2, else
// plain); a name forces one, InvalidArgument when the tokenizer lacks its
// tokens or the name is unknown (lists the names).
StatusOr<ChatFormat> chat_format_for(const text::Tokenizer& tok, const std::string& name);
const char* chat_format_name(ChatFormat f);

// `messages` must be an array of {"role": system|user|assistant, "content":
// string}; InvalidArgument naming the message index otherwise. `eos` is
// the end-of-text token's text (plain and llama2 use it).
StatusOr<std::vector<TextPart>> render_chat(ChatFormat f, const nlohmann::json& messages,
                                            const std::string& bos, const std::string& eos);

// The tokenizer's bos and eos tokens as text ("" when it has none).
std::string bos_text(const text::Tokenizer& tok);
std::string eos_text(const text::Tokenizer& tok);

// A conversation as a generation prompt, as Hugging Face's
// apply_chat_template(messages, add_generation_prompt=True) renders it:
// the messages, then the assistant's header (chatml
// "<|im_start|>assistant\n", llama3's header, plain "Assistant:"; llama2
// ends at " [/INST]"). Encode it without the tokenizer's own specials.
StatusOr<std::string> render_generation_prompt(ChatFormat f, const nlohmann::json& messages,
                                               const text::Tokenizer& tok);

// The token a reply of the format ends with: <|im_end|>, <|eot_id|>, else
// the tokenizer's eos (none: nullopt).
std::optional<uint32_t> end_of_turn(ChatFormat f, const text::Tokenizer& tok);

}  // namespace zerotrain::train
