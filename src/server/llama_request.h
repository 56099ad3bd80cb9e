// llama-server's native request bodies: POST /completion (prompt as text, token ids or a mix, n_predict,
// its sampling names), /tokenize and /detokenize. Parsed at the edge into native types, like the OpenAI
// and Anthropic parsers; a wrong type anywhere is a 400 naming the field. docs/llama-server-compat.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "server/completion_request.h"

namespace ember::server {

// The /completion defaults the server was started with (llama-server's --n-predict, --temp, --seed).
struct LlamaDefaults {
  int32_t n_predict = -1;          // -1: until the context is full
  float temperature = 0.8f;
  std::optional<uint64_t> seed;    // absent: a fresh seed per request
  int32_t parallel = 1;            // id_slot must be below it
};

// One element of a `prompt` array: text (tokenized by the server) or one token id.
struct PromptPiece {
  bool is_text = false;
  std::string text;
  int32_t id = 0;
};

struct LlamaCompletion {
  CompletionRequest req;             // kind kCompletion; prompt filled by ResolvePrompt
  std::vector<PromptPiece> prompt;   // as sent
  int32_t n_predict = -1;            // -1: up to the context; 0: evaluate the prompt only
  int32_t id_slot = -1;              // accepted and checked; ember's lanes are not pinned (see the doc)
  bool cache_prompt = true;
  bool return_tokens = false;
  bool timings_per_token = false;
  int32_t n_probs = 0;
};

ApiResult<LlamaCompletion> ParseLlamaCompletion(const nlohmann::json& body, const LlamaDefaults& defaults);

struct LlamaTokenize {
  std::string content;
  bool add_special = false;   // llama-server's default: no BOS
  bool parse_special = true;
  bool with_pieces = false;
};
ApiResult<LlamaTokenize> ParseLlamaTokenize(const nlohmann::json& body);
ApiResult<std::vector<int32_t>> ParseLlamaDetokenize(const nlohmann::json& body);

// A token's piece as llama-server shows it: the string when it is valid UTF-8, else its bytes.
nlohmann::json PieceJson(const std::string& piece);
bool IsValidUtf8(const std::string& s);

}  // namespace ember::server
