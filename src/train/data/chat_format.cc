#include "train/data/chat_format.h"

#include <cctype>

namespace zerotrain::train {

using Json = nlohmann::json;

namespace {

std::string trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

bool has(const text::Tokenizer& tok, const char* token) {
  return tok.token_to_id(token).has_value();
}

}  // namespace

const char* chat_format_name(ChatFormat f) {
  switch (f) {
    case ChatFormat::kChatml:
      return "chatml";
    case ChatFormat::kLlama3:
      return "llama3";
    case ChatFormat::kLlama2:
      return "llama2";
    case ChatFormat::kPlain:
      return "plain";
  }
  return "?";
}

StatusOr<ChatFormat> chat_format_for(const text::Tokenizer& tok, const std::string& name) {
  const bool chatml = has(tok, "<|im_start|>") && has(tok, "<|im_end|>");
  const bool llama3 = has(tok, "<|start_header_id|>") && has(tok, "<|end_header_id|>") &&
                      has(tok, "<|eot_id|>") && has(tok, "<|begin_of_text|>");
  const bool llama2 = has(tok, "<s>") && has(tok, "</s>");
  if (name == "auto") {
    return chatml   ? ChatFormat::kChatml
           : llama3 ? ChatFormat::kLlama3
           : llama2 ? ChatFormat::kLlama2
                    : ChatFormat::kPlain;
  }
  const auto need = [&](bool ok, ChatFormat f, const char* tokens) -> StatusOr<ChatFormat> {
    if (ok) return f;
    return invalid_argument(std::string("chat format ") + chat_format_name(f) + " needs " + tokens +
                            ", which tokenizer " + tok.source() + " does not have");
  };
  if (name == "chatml") return need(chatml, ChatFormat::kChatml, "<|im_start|> and <|im_end|>");
  if (name == "llama3") {
    return need(llama3, ChatFormat::kLlama3,
                "<|begin_of_text|>, <|start_header_id|>, <|end_header_id|> and <|eot_id|>");
  }
  if (name == "llama2") return need(llama2, ChatFormat::kLlama2, "<s> and </s>");
  if (name == "plain") return ChatFormat::kPlain;
  return invalid_argument("chat format \"" + name +
                          "\" is not one of auto, chatml, llama3, llama2, plain");
}

StatusOr<std::vector<TextPart>> render_chat(ChatFormat f, const Json& messages,
                                            const std::string& bos, const std::string& eos) {
  if (!messages.is_array() || messages.empty()) {
    return invalid_argument("\"messages\" must be a non-empty array of {\"role\", \"content\"}");
  }
  struct Message {
    std::string role, content;
  };
  std::vector<Message> ms;
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string()) {
      return invalid_argument(at + " must be {\"role\": ..., \"content\": \"...\"}");
    }
    const std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant") {
      return invalid_argument(at + ".role \"" + role + "\" is not system, user or assistant");
    }
    ms.push_back({role, m["content"].get<std::string>()});
  }
  std::vector<TextPart> parts;
  const auto add = [&](std::string text, bool trained) {
    if (text.empty()) return;
    if (!parts.empty() && parts.back().trained == trained) {
      parts.back().text += text;
    } else {
      parts.push_back({std::move(text), trained});
    }
  };
  switch (f) {
    case ChatFormat::kChatml:
      for (const Message& m : ms) {
        const bool a = m.role == "assistant";
        add("<|im_start|>" + m.role + "\n", false);
        add(m.content + "<|im_end|>", a);
        add("\n", false);
      }
      break;
    case ChatFormat::kLlama3:
      add("<|begin_of_text|>", false);
      for (const Message& m : ms) {
        add("<|start_header_id|>" + m.role + "<|end_header_id|>\n\n", false);
        add(trimmed(m.content) + "<|eot_id|>", m.role == "assistant");
      }
      break;
    case ChatFormat::kLlama2: {
      std::string system;
      size_t i = 0;
      if (ms[0].role == "system") system = ms[i++].content;
      bool first = true;
      for (; i < ms.size(); ++i) {
        if (ms[i].role == "user") {
          std::string head = bos + "[INST] ";
          if (first && !system.empty()) head += "<<SYS>>\n" + trimmed(system) + "\n<</SYS>>\n\n";
          add(head + trimmed(ms[i].content) + " [/INST]", false);
          first = false;
        } else if (ms[i].role == "assistant") {
          add(" " + trimmed(ms[i].content) + " " + eos, true);
        } else {
          return invalid_argument("messages[" + std::to_string(i) +
                                  "]: llama2 takes a system message only first");
        }
      }
      break;
    }
    case ChatFormat::kPlain:
      for (const Message& m : ms) {
        if (m.role == "assistant") {
          add("Assistant:", false);  // the space goes with the reply, as GPT-2 words carry it
          add(" " + m.content + eos, true);
          add("\n", false);
        } else {
          add(std::string(m.role == "user" ? "User: " : "System: ") + m.content + "\n", false);
        }
      }
      break;
  }
  return parts;
}

std::string eos_text(const text::Tokenizer& tok) {
  return tok.eos_id() ? tok.id_to_token(*tok.eos_id()) : "";
}

std::string bos_text(const text::Tokenizer& tok) {
  return tok.bos_id() ? tok.id_to_token(*tok.bos_id()) : "";
}

StatusOr<std::string> render_generation_prompt(ChatFormat f, const Json& messages,
                                               const text::Tokenizer& tok) {
  ZT_ASSIGN_OR_RETURN(std::vector<TextPart> parts,
                      render_chat(f, messages, bos_text(tok), eos_text(tok)));
  std::string text;
  for (const TextPart& p : parts) text += p.text;
  switch (f) {
    case ChatFormat::kChatml:
      return text + "<|im_start|>assistant\n";
    case ChatFormat::kLlama3:
      return text + "<|start_header_id|>assistant<|end_header_id|>\n\n";
    case ChatFormat::kLlama2:
      return text;
    case ChatFormat::kPlain:
      return text + "Assistant:";
  }
  return text;
}

std::optional<uint32_t> end_of_turn(ChatFormat f, const text::Tokenizer& tok) {
  if (f == ChatFormat::kChatml) return tok.token_to_id("<|im_end|>");
  if (f == ChatFormat::kLlama3) return tok.token_to_id("<|eot_id|>");
  return tok.eos_id();
}

}  // namespace zerotrain::train
