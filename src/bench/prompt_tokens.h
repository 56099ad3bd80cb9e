// The benchmark prompt: one fixed English text, tokenized once per model by ember's tokenizer (which
// matches llama.cpp's), then stretched to exactly N ids so every stack is fed identical ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/status.h"

namespace ember::bench {

// The fixed prompt text.
const std::string& BenchPromptText();

// Exactly `n` ids: the first id (BOS where the tokenizer adds one) once, then the rest cycled.
// Empty when `ids` is empty or n <= 0.
std::vector<int32_t> StretchTokens(const std::vector<int32_t>& ids, int n);

// Runs `<ember> tokenize MODEL --file <prompt> --json` and stretches its ids to `n`.
StatusOr<std::vector<int32_t>> TokenizeWithEmber(const std::string& ember_binary, const std::string& model, int n);

// The same through the llama.cpp peer (`node runner.mjs tokenize MODEL --text-file F`): the fallback
// when this ember build cannot tokenize the model.
StatusOr<std::vector<int32_t>> TokenizeWithPeer(const std::string& node, const std::string& runner_mjs,
                                                const std::string& model, int n);

}  // namespace ember::bench
