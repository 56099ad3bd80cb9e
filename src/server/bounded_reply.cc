#include "server/bounded_reply.h"

#include <algorithm>
#include <cstddef>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "server/llama_request.h"
#include "server/sse_writer.h"

namespace ember::server {

size_t MaxReplyBytes(const ServeOptions& options) { return 4 * std::max<size_t>(options.max_body_bytes, 1 << 20); }

ApiError ReplyTooLarge(const std::string& what, size_t limit, const std::string& instead) {
  return TooLarge(what + " would exceed the reply limit of " + std::to_string(limit) +
                  " bytes (4 x --max-body-bytes); " + instead);
}

ApiResult<std::string> TokenizeReply(const std::vector<int32_t>& ids, bool with_pieces,
                                     const std::function<std::string(int32_t)>& piece_of, size_t limit) {
  std::string out = "{\"tokens\":[";
  std::unordered_map<int32_t, std::string> rendered;  // id -> its {"id","piece"} text
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ',';
    if (!with_pieces) {
      out += std::to_string(ids[i]);
    } else {
      auto [it, fresh] = rendered.try_emplace(ids[i]);
      if (fresh) it->second = "{\"id\":" + std::to_string(ids[i]) + ",\"piece\":" + DumpJson(PieceJson(piece_of(ids[i]))) + "}";
      out += it->second;
    }
    if (out.size() > limit) {
      return ReplyTooLarge("the " + std::to_string(ids.size()) + " tokens" + (with_pieces ? " with their pieces" : ""),
                           limit, with_pieces ? "send less text, or ask without with_pieces" : "send less text");
    }
  }
  out += "]}";
  return out;
}

ApiResult<std::string> DetokenizeWithin(const InferenceBackend& backend, const std::vector<int32_t>& ids, size_t limit) {
  const std::string instead = "send fewer tokens at once";
  // Slices bound the text before it is built; the whole is then built once, as one call renders it
  // (a slice boundary may split a character or drop a leading space).
  constexpr size_t kSlice = 1 << 16;
  size_t bound = 0;
  if (ids.size() > kSlice) {
    for (size_t at = 0; at < ids.size(); at += kSlice) {
      const std::vector<int32_t> slice(ids.begin() + static_cast<std::ptrdiff_t>(at),
                                       ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), at + kSlice)));
      StatusOr<std::string> text = backend.Detokenize(slice);
      if (!text.ok()) return FromStatus(text.status());
      bound += text->size();
      if (bound > limit) return ReplyTooLarge("the text of " + std::to_string(ids.size()) + " tokens", limit, instead);
    }
  }
  StatusOr<std::string> text = backend.Detokenize(ids);
  if (!text.ok()) return FromStatus(text.status());
  std::string out = DumpJson(nlohmann::json{{"content", *text}});
  if (out.size() > limit) return ReplyTooLarge("the text of " + std::to_string(ids.size()) + " tokens", limit, instead);
  return out;
}

}  // namespace ember::server
