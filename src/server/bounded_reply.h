// Replies whose size grows with what the request asks for rather than with what it sends: /tokenize with
// pieces (one JSON object per token), /detokenize (a token id of 2 bytes can stand for a long piece) and
// /apply-template. Each is built as text under a byte limit, never as a JSON tree (a tree of a million
// tokens costs a few hundred bytes a token), and a reply that would pass the limit is refused with a 413
// that names it. So a request costs at most its body plus the limit, however many arrive at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/backend.h"
#include "server/serve_options.h"

namespace ember::server {

// The largest such reply: 4 × --max-body-bytes (32 MiB by default), enough for the ids, or the pieces,
// of any prompt that fits a large context many times over.
size_t MaxReplyBytes(const ServeOptions& options);

// A 413 naming what was asked, the limit, and how to ask for less.
ApiError ReplyTooLarge(const std::string& what, size_t limit, const std::string& instead);

// {"tokens":[...]}: ids, or {"id","piece"} objects whose piece is PieceJson(piece_of(id)). Each distinct
// id is rendered once (a vocabulary is small next to a long prompt).
ApiResult<std::string> TokenizeReply(const std::vector<int32_t>& ids, bool with_pieces,
                                     const std::function<std::string(int32_t)>& piece_of, size_t limit);

// The text of `ids`, refused before it is built when the pieces alone (counted in slices) pass `limit`.
ApiResult<std::string> DetokenizeWithin(const InferenceBackend& backend, const std::vector<int32_t>& ids, size_t limit);

}  // namespace ember::server
